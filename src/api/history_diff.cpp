// `mlw history diff -r RUN1 -r RUN2`: what differs between two runs — their snapshots' files
// (a unified diff of text files), the conda file's packages, arguments and parameters, -e
// variables (names only), target, image and git commit (docs/reproduce.md).

#include <fmt/format.h>
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "data_run.hpp"
#include "mlw/api/history.hpp"
#include "mlw/config/keys.hpp"
#include "mlw/config/targets.hpp"
#include "mlw/history/store.hpp"
#include "mlw/snapshot/manifest.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/json_text.hpp"
#include "mlw/util/process.hpp"
#include "mlw/util/sha256.hpp"
#include "mlw/util/strings.hpp"
#include "run_start.hpp"

namespace mlw::api {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

/// One side of the diff.
struct Side {
  RunRecord record;
  fs::path dir;
  std::map<std::string, ManifestEntry> files;
};

Side load_side(const Project& project, const std::string& run_id) {
  StoredRun run = find_stored_run(project, run_id);
  Side side{std::move(run.record), std::move(run.dir), {}};
  if (auto manifest = read_run_manifest(side.dir)) {
    for (auto& entry : manifest->entries) side.files.emplace(entry.path, std::move(entry));
  }
  return side;
}

/// The file's content as the run had it: its store object, else its run folder's copy.
std::optional<fs::path> content_of(const Project& project, const Side& side,
                                   const ManifestEntry& entry) {
  const fs::path object =
      object_path(project.state_dir() / "objects", entry.sha256, is_executable(entry.mode));
  for (const fs::path& candidate : {object, side.dir / "snapshot" / entry.path}) {
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec) && fs::file_size(candidate, ec) == entry.size) {
      return candidate;
    }
  }
  return std::nullopt;
}

/// The most of one file `history diff` compares line by line (a bigger one is named, with its
/// size, not read: `diff -u` of two 500 MB files takes more than their size in memory).
constexpr std::uintmax_t k_diff_file_bound = 8u << 20;

/// As git decides: a NUL byte in the first 8000 bytes makes a file binary (only those are read).
bool looks_binary(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::string head(8000, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  return head.find('\0') != std::string::npos;
}

/// Text for a terminal: control characters (but tab and newline), DEL and the C1 controls shown
/// as \xNN, so that a file's name or lines cannot drive the terminal (escape sequences).
std::string terminal_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const bool c1 = byte == 0xc2 && i + 1 < text.size() &&
                    static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(text[i + 1]) <= 0x9f;
    if ((byte < 0x20 && byte != '\t' && byte != '\n') || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else if (c1) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(text[++i]));
    } else {
      out += text[i];
    }
  }
  return out;
}

/// `diff -u` of two files (an empty path: the file is absent on that side).
std::string unified_diff(Context& ctx, const std::string& path, const std::optional<fs::path>& a,
                         const std::optional<fs::path>& b) {
  for (const auto& file : {a, b}) {
    std::error_code ec;
    const std::uintmax_t size = file ? fs::file_size(*file, ec) : 0;
    if (!ec && size > k_diff_file_bound) {
      return fmt::format("(file {}: {:.1f} MB, more than history diff compares line by line)\n",
                         path, static_cast<double>(size) / 1e6);
    }
  }
  ProcessSpec spec{
      {"diff", "-u", "--label", a ? "a/" + path : "/dev/null", "--label",
       b ? "b/" + path : "/dev/null", a ? a->string() : "/dev/null", b ? b->string() : "/dev/null"},
      {{"LC_ALL", "C"}, {"PATH", "/usr/bin:/bin"}},
      {}};
  const auto result = ctx.processes->run(spec);
  if (!result || result->exit_code > 1) return "(diff could not compare " + path + ")\n";
  return result->output;
}

json file_changes(Context& ctx, const Project& project, const Side& a, const Side& b) {
  std::set<std::string> paths;
  for (const auto& [path, _] : a.files) paths.insert(path);
  for (const auto& [path, _] : b.files) paths.insert(path);
  json changes = json::array();
  for (const auto& path : paths) {
    const auto in_a = a.files.find(path);
    const auto in_b = b.files.find(path);
    const ManifestEntry* ea = in_a == a.files.end() ? nullptr : &in_a->second;
    const ManifestEntry* eb = in_b == b.files.end() ? nullptr : &in_b->second;
    if (ea && eb && ea->sha256 == eb->sha256 && ea->link_target == eb->link_target &&
        ea->mode == eb->mode) {
      continue;
    }
    json change = {{"path", path},
                   {"change", !ea   ? "added"
                              : !eb ? "removed"
                                    : "changed"},
                   {"binary", false}};
    if (ea && eb && ea->sha256 == eb->sha256 && ea->link_target == eb->link_target) {
      change["mode"] = {fmt::format("{:04o}", ea->mode), fmt::format("{:04o}", eb->mode)};
      changes.push_back(std::move(change));
      continue;
    }
    const auto file_a = ea && ea->link_target.empty() ? content_of(project, a, *ea) : std::nullopt;
    const auto file_b = eb && eb->link_target.empty() ? content_of(project, b, *eb) : std::nullopt;
    if ((ea && ea->link_target.empty() && !file_a) || (eb && eb->link_target.empty() && !file_b)) {
      change["diff"] = nullptr;
      change["note"] = "its stored content is gone";
    } else if ((file_a && looks_binary(*file_a)) || (file_b && looks_binary(*file_b))) {
      change["binary"] = true;
    } else if (file_a || file_b) {
      change["diff"] = unified_diff(ctx, path, file_a, file_b);
    } else {
      change["link"] = {ea ? ea->link_target : "", eb ? eb->link_target : ""};
    }
    changes.push_back(std::move(change));
  }
  return changes;
}

/// The conda file's packages as name -> spec ("numpy=1.26", "pip:torch==2.1").
std::map<std::string, std::string> packages(const Project& project, const Side& side) {
  std::map<std::string, std::string> out;
  const Project stored = run_files(project, side.dir);
  std::string file = "aml_config/conda_dependencies.yml";
  try {
    file = load_run_config(stored, side.record.run_config).conda_dependencies_file;
  } catch (const Error&) {
  }
  const auto entry = side.files.find(file);
  if (entry == side.files.end()) return out;
  const auto path = content_of(project, side, entry->second);
  YAML::Node root;
  try {
    root = load_bounded_yaml(path ? read_file_if_exists(*path).value_or("") : "", file);
  } catch (const Error&) {
    return out;
  }
  const auto name_of = [](const std::string& spec) {
    return spec.substr(0, spec.find_first_of("=<>!~ ["));
  };
  const YAML::Node deps = root.IsMap() ? root["dependencies"] : YAML::Node();
  if (!deps || !deps.IsSequence()) return out;
  for (const auto& item : deps) {
    if (item.IsScalar()) {
      out[name_of(item.Scalar())] = item.Scalar();
    } else if (item.IsMap() && item["pip"] && item["pip"].IsSequence()) {
      for (const auto& pip : item["pip"]) {
        if (pip.IsScalar()) out["pip:" + name_of(pip.Scalar())] = pip.Scalar();
      }
    }
  }
  return out;
}

json package_changes(const Project& project, const Side& a, const Side& b) {
  const auto pa = packages(project, a);
  const auto pb = packages(project, b);
  json out = {{"added", json::array()}, {"removed", json::array()}, {"changed", json::array()}};
  for (const auto& [name, spec] : pb) {
    const auto it = pa.find(name);
    if (it == pa.end()) {
      out["added"].push_back(spec);
    } else if (it->second != spec) {
      out["changed"].push_back({{"name", name}, {"from", it->second}, {"to", spec}});
    }
  }
  for (const auto& [name, spec] : pa) {
    if (!pb.contains(name)) out["removed"].push_back(spec);
  }
  return out;
}

/// The record's fields that differ, as [first, second].
json field_changes(const Side& a, const Side& b) {
  const auto env_names = [](const Side& side) {
    json names = json::object();
    for (const auto& [key, value] : load_run_env(side.dir)) names[key] = sha256_hex(value);
    return names;
  };
  const auto git = [](const RunRecord& r) {
    return r.git_commit.empty()
               ? json()
               : json(r.git_commit + (r.git_dirty.value_or(false) ? "+dirty" : ""));
  };
  json out = json::object();
  const auto field = [&out](const char* name, const json& first, const json& second) {
    if (first != second) out[name] = json::array({first, second});
  };
  field("script", a.record.script, b.record.script);
  field("arguments", json(a.record.arguments), json(b.record.arguments));
  field("params", a.record.params, b.record.params);
  field("status", a.record.status, b.record.status);
  field("exit_code", a.record.exit_code ? json(*a.record.exit_code) : json(),
        b.record.exit_code ? json(*b.record.exit_code) : json());
  field("metrics", a.record.metrics, b.record.metrics);
  field("run_config", a.record.run_config, b.record.run_config);
  field("target", a.record.target, b.record.target);
  field("target_type", a.record.target_type, b.record.target_type);
  field("image", a.record.image_tag, b.record.image_tag);
  field("git_commit", git(a.record), git(b.record));
  field("snapshot", a.record.snapshot_hash, b.record.snapshot_hash);
  // -e variables: their names, and which changed value (never the values: one may be secret).
  const json ea = env_names(a);
  const json eb = env_names(b);
  json env = json::object();
  for (const auto& [key, value] : ea.items()) {
    if (!eb.contains(key))
      env[key] = "removed";
    else if (eb[key] != value)
      env[key] = "changed";
  }
  for (const auto& [key, value] : eb.items()) {
    if (!ea.contains(key)) env[key] = "added";
  }
  if (!env.empty()) out["env"] = env;
  return out;
}

/// A value as one short word or JSON.
std::string shown(const json& value) {
  if (value.is_null()) return "-";
  if (value.is_string()) return value.get<std::string>().empty() ? "-" : value.get<std::string>();
  return value.dump();
}

void print_fields(Context& ctx, const json& fields) {
  for (const auto& [name, values] : fields.items()) {
    if (name == "env") {
      for (const auto& [key, how] : values.items()) {
        *ctx.out << fmt::format("env {}: {}\n", key, how.get<std::string>());
      }
    } else if (name == "params" || name == "metrics") {
      // One line per parameter or metric (its last value) that differs.
      std::set<std::string> keys;
      for (const auto& side : values) {
        for (const auto& [key, _] : side.items()) keys.insert(key);
      }
      const char* what = name == "params" ? "param" : "metric";
      for (const auto& key : keys) {
        const json a = values[0].contains(key) ? values[0][key] : json();
        const json b = values[1].contains(key) ? values[1][key] : json();
        if (a != b) *ctx.out << fmt::format("{} {}: {} → {}\n", what, key, shown(a), shown(b));
      }
    } else {
      *ctx.out << fmt::format("{}: {} → {}\n", name, shown(values[0]), shown(values[1]));
    }
  }
}

void print_diff(Context& ctx, const json& out) {
  print_fields(ctx, out["fields"]);
  for (const auto& line : out["data"]) *ctx.out << line.get<std::string>() << "\n";
  const json& packages = out["packages"];
  for (const auto& spec : packages["added"]) *ctx.out << "package added: " << shown(spec) << "\n";
  for (const auto& spec : packages["removed"]) {
    *ctx.out << "package removed: " << shown(spec) << "\n";
  }
  for (const auto& change : packages["changed"]) {
    *ctx.out << fmt::format("package changed: {} → {}\n", shown(change["from"]),
                            shown(change["to"]));
  }
  for (const auto& change : out["files"]) {
    const std::string path = change["path"].get<std::string>();
    const std::string how = change["change"].get<std::string>();
    if (change.contains("mode")) {
      *ctx.out << fmt::format("file {}: mode {} → {}\n", path, shown(change["mode"][0]),
                              shown(change["mode"][1]));
    } else if (change["binary"].get<bool>()) {
      *ctx.out << fmt::format("Binary file {} {}\n", path, how);
    } else if (change.contains("note")) {
      *ctx.out << fmt::format("file {} {}: {}\n", path, how, shown(change["note"]));
    } else if (change.contains("diff")) {
      *ctx.out << shown(change["diff"]);
    } else {
      *ctx.out << fmt::format("file {} {} (a link)\n", path, how);
    }
  }
}

}  // namespace

void diff_runs(Context& ctx, const std::string& first, const std::string& second) {
  const Project project = ctx.project();
  const Side a = load_side(project, first);
  const Side b = load_side(project, second);
  json out = {{"runs", {first, second}},
              {"fields", field_changes(a, b)},
              {"data", data_diff_lines(project, a.record, b.record)},
              {"packages", package_changes(project, a, b)},
              {"files", file_changes(ctx, project, a, b)}};
  if (ctx.output().structured()) {
    make_json_safe(out);  // file names and diff lines that are not UTF-8
    return ctx.output().print_object(out);
  }
  // Names and lines as a terminal should show them: escape sequences made visible.
  std::ostringstream text;
  std::ostream* const kept = ctx.out;
  ctx.out = &text;
  print_diff(ctx, out);
  ctx.out = kept;
  *ctx.out << terminal_text(text.str());
}

}  // namespace mlw::api
