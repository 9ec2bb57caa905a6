// `mlw experiment diagnostics -r RUN [--file FILE.zip]`: one zip of what a maintainer needs to
// help with a run — its record, logs, the .compute/.runconfig it used with secrets replaced by
// ***, doctor's rows for its target now, mlw's version — and a list of what was missing.

#include <sys/utsname.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <regex>

#include "mlw/api/computetarget.hpp"
#include "mlw/api/experiment.hpp"
#include "mlw/config/compute_file.hpp"
#include "mlw/config/secret_store.hpp"
#include "mlw/config/targets.hpp"
#include "mlw/history/store.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/json_text.hpp"
#include "mlw/util/strings.hpp"
#include "mlw/util/zip.hpp"
#include "run_start.hpp"

namespace mlw::api {

namespace fs = std::filesystem;

namespace {

/// The most of one log taken (its end: where a run failed).
constexpr std::size_t k_log_bound = 8u << 20;

/// Names of keys whose values are secrets (compute and run configuration files).
const std::regex& secret_key() {
  static const std::regex pattern("pass|secret|token|credential|apikey|api_key", std::regex::icase);
  return pattern;
}

/// A .compute or .runconfig file with every secret-looking value, and every value under
/// EnvironmentVariables, replaced by ***; keys, order and comments kept.
std::string mask_config(const std::string& text) {
  static const std::regex line_re(R"(^(\s*-?\s*)("?)([A-Za-z_][A-Za-z0-9_.-]*)("?\s*:\s*)(.*)$)");
  std::string out;
  std::size_t env_indent = std::string::npos;
  for (const std::string& line : split(text, '\n')) {
    const std::size_t indent = line.find_first_not_of(" \t");
    if (indent != std::string::npos && env_indent != std::string::npos && indent <= env_indent &&
        line[indent] != '#') {
      env_indent = std::string::npos;  // the EnvironmentVariables block ended
    }
    std::smatch m;
    if (std::regex_match(line, m, line_re)) {
      const std::string key = m[3];
      const bool under_env = env_indent != std::string::npos;
      if (key == "EnvironmentVariables") env_indent = indent;
      const std::string value = trim(m[5].str());
      const bool empty = value.empty() || value == "{}" || value == "\"\"" || value == "''";
      if (!empty && value[0] != '#' && (under_env || std::regex_search(key, secret_key()))) {
        out += m[1].str() + m[2].str() + key + m[4].str() + "***\n";
        continue;
      }
    }
    out += line + "\n";
  }
  return out;
}

/// The secrets this run could know of: its target's stored password and passphrase, its -e
/// values that look like one (named so, or 8 characters or more), and its run configuration's
/// EnvironmentVariables named like one.
std::vector<std::string> known_secrets(Context& ctx, const Project& project, const fs::path& dir,
                                       const RunRecord& record) {
  std::vector<std::string> secrets;
  for (const auto& [key, value] : load_run_env(dir)) {
    if (value.size() >= 8 || (!value.empty() && std::regex_search(key, secret_key()))) {
      secrets.push_back(value);
    }
  }
  // The run configuration's environment values named like secrets, as the run had them.
  try {
    const Project stored = run_files(project, dir);
    for (const auto& [key, value] :
         load_run_config(stored, record.run_config).environment_variables) {
      if (!value.empty() && std::regex_search(key, secret_key())) secrets.push_back(value);
    }
  } catch (const Error&) {
  }
  try {
    const ComputeConfig compute = load_compute(project, record.target);
    const SecretStore store(ctx.config_dir);
    for (const std::string& reference : {compute.password, compute.private_key_passphrase}) {
      if (!SecretStore::is_reference(reference)) continue;
      try {
        secrets.push_back(store.get(reference));
      } catch (const Error&) {
      }
    }
  } catch (const Error&) {
  }
  std::erase_if(secrets, [](const std::string& s) { return s.empty(); });
  return secrets;
}

std::string scrub(std::string text, const std::vector<std::string>& secrets) {
  for (const auto& secret : secrets) {
    for (auto at = text.find(secret); at != std::string::npos; at = text.find(secret, at + 3)) {
      text.replace(at, secret.size(), "***");
    }
  }
  return text;
}

/// The end of a file, at most k_log_bound bytes, said so where it was cut.
std::optional<std::string> bounded(const fs::path& file) {
  auto text = read_file_if_exists(file);
  if (text && text->size() > k_log_bound) {
    *text = fmt::format("(its first {} bytes left out)\n", text->size() - k_log_bound) +
            text->substr(text->size() - k_log_bound);
  }
  return text;
}

std::string version_text(std::int64_t now_ms) {
  struct utsname name {};
  ::uname(&name);
  return fmt::format("mlw {}\n{} {} {}\nmade {}\n", MLW_VERSION, name.sysname, name.release,
                     name.machine, now_ms / 1000);
}

}  // namespace

void diagnostics(Context& ctx, const std::string& run_id, const std::optional<std::string>& file) {
  const Project project = ctx.project();
  const StoredRun run = find_stored_run(project, run_id);
  const RunRecord& record = run.record;
  const fs::path& dir = run.dir;
  const fs::path out = file ? fs::path(*file) : fs::current_path() / (run_id + "-diagnostics.zip");
  const std::vector<std::string> secrets = known_secrets(ctx, project, dir, record);
  const std::int64_t now = ctx.clock->now_ms() / 1000;
  ZipWriter zip;
  std::vector<std::string> missing;
  const auto put = [&](const std::string& name, const std::string& text) {
    zip.add(run_id + "/" + name, scrub(text, secrets), now);
  };
  put("run.json", record.to_json().dump(2) + "\n");
  for (const char* name : {"driver_log.txt", "build.log", "supervisor.log", "metrics.jsonl",
                           "manifest.json", "stop_reason", "lease.log"}) {
    if (const auto text = bounded(dir / name)) {
      put(name, *text);
    } else if (std::string(name) == "driver_log.txt" || std::string(name) == "manifest.json") {
      missing.push_back(fmt::format("{}: not in {}", name, dir.string()));
    }
  }
  // The configuration files as the run used them (its snapshot's), secrets masked.
  for (const std::string& name : {record.run_config + ".runconfig", record.target + ".compute"}) {
    if (const auto text = read_file_if_exists(dir / "snapshot" / "aml_config" / name)) {
      put("aml_config/" + name, mask_config(*text));
    } else {
      missing.push_back(fmt::format("aml_config/{}: not in the run's snapshot folder", name));
    }
  }
  std::string env = "# the run's -e variables (names only)\n";
  for (const auto& [key, _] : load_run_env(dir)) env += key + "\n";
  put("env.txt", env);
  nlohmann::ordered_json doctor;
  try {
    doctor = doctor_rows(ctx, record.target);
  } catch (const Error& e) {
    doctor = {{"error", e.what()}};
  }
  make_json_safe(doctor);
  put("doctor.json", doctor.dump(2) + "\n");
  put("version.txt", version_text(ctx.clock->now_ms()));
  if (!missing.empty()) put("MISSING.txt", join(missing, "\n") + "\n");
  atomic_write_file(out, zip.finish(), 0600);
  for (const auto& line : missing) spdlog::warn("missing from the run: {}", line);
  if (ctx.output().structured()) {
    nlohmann::ordered_json said = {
        {"run_id", run_id}, {"file", out.string()}, {"missing", missing}};
    make_json_safe(said);
    ctx.output().print_object(said);
  } else {
    *ctx.out << out.string() << "\n";
  }
}

}  // namespace mlw::api
