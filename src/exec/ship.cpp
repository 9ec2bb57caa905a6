#include "mlw/exec/ship.hpp"

#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include "mlw/remote/tar.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/sha256.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

std::string object_name(const ManifestEntry& entry) {
  return entry.sha256 + (is_executable(entry.mode) ? ".x" : "");
}

/// Adds an object to a tar of objects: from this project's store, else the project's file.
void add_object(TarWriter& tar, const RunPlan& plan, const std::string& name,
                const ManifestEntry& entry) {
  fs::path source =
      object_path(plan.project.state_dir() / "objects", entry.sha256, is_executable(entry.mode));
  if (!fs::exists(source)) source = plan.project.root / entry.path;
  tar.add_file(name, source, entry.size, is_executable(entry.mode) ? 0555 : 0444);
}

/// The helper and the environment's build files, in the run folder's tree.
void add_helper_and_env(TarWriter& tar, const EnvironmentSpec& env, const std::string& objects) {
  tar.add_directory("helper");
  tar.add_directory("env");
  tar.add_directory("env/files");
  for (auto& [path, contents] : run_folder_files(env))
    tar.add_data(path, std::move(contents), 0644);
  std::set<std::string> dirs;
  for (const auto& entry : env.local_files) {
    const auto parts = split(entry.path, '/');
    std::string prefix = "env/files";
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      prefix += "/" + parts[i];
      if (dirs.insert(prefix).second) tar.add_directory(prefix);
    }
    tar.add_hard_link("env/files/" + entry.path, objects + "/" + object_name(entry));
  }
}

}  // namespace

std::function<void(std::uint64_t)> ship_progress(Context& ctx, std::uint64_t total,
                                                 std::size_t count) {
  if (!ctx.stderr_is_terminal || ctx.quiet) return {};
  auto last = std::make_shared<std::chrono::steady_clock::time_point>();
  return [&ctx, last, total, count](std::uint64_t sent) {
    const auto now = std::chrono::steady_clock::now();
    if (now - *last < std::chrono::milliseconds(100) && sent < total) return;
    *last = now;
    const int width = 30;
    const int filled = total ? static_cast<int>(width * sent / total) : width;
    *ctx.err << fmt::format("\rShipping {} new files: [{}{}] {:.1f}/{:.1f} MB\x1b[K", count,
                            std::string(static_cast<std::size_t>(filled), '#'),
                            std::string(static_cast<std::size_t>(width - filled), '.'),
                            static_cast<double>(sent) / 1e6, static_cast<double>(total) / 1e6)
             << std::flush;
  };
}

namespace {

/// The run folder's tree: the snapshot as hard links into the target's store, the helper and
/// the environment's build files.
void add_run_tree(TarWriter& tree, const RunPlan& plan, const EnvironmentSpec& env,
                  const std::string& objects) {
  std::set<std::string> dirs = {"snapshot", "snapshot/outputs"};
  tree.add_directory("snapshot");
  tree.add_directory("snapshot/outputs");
  for (const auto& entry : plan.manifest.entries) {
    const auto parts = split(entry.path, '/');
    std::string prefix = "snapshot";
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      prefix += "/" + parts[i];
      if (dirs.insert(prefix).second) tree.add_directory(prefix);
    }
    if (!entry.link_target.empty()) {
      tree.add_symlink("snapshot/" + entry.path, entry.link_target);
    } else {
      tree.add_hard_link("snapshot/" + entry.path, objects + "/" + object_name(entry));
    }
  }
  add_helper_and_env(tree, env, objects);
}

}  // namespace

namespace {

/// ship.sh after its arguments: the store, the nonce, the run folder and the runs folder, as
/// shell words (quoted paths, or "$HOME"-relative ones). Its first line names the step in -vv's
/// trace of each step.
std::string ship_script_words(const std::string& s, const std::string& nonce, const std::string& r,
                              const std::string& runs) {
  return "# mlw ship\nset -- " + s + " " + shell_quote(nonce) + " " + r + " " + runs + "\n" +
         std::string(embedded_script("src/exec/ship.sh"));
}

}  // namespace

std::string ship_script(const std::string& store, const std::string& nonce,
                        const std::string& run_dir) {
  return ship_script_words(shell_quote(store), nonce, shell_quote(run_dir),
                           shell_quote(fs::path(run_dir).parent_path().string()));
}

std::vector<std::string> object_names(const Manifest& manifest) {
  std::set<std::string> names;
  for (const auto& entry : manifest.entries) {
    if (entry.link_target.empty()) names.insert(object_name(entry));
  }
  return {names.begin(), names.end()};
}

std::vector<std::pair<std::string, std::string>> run_folder_files(const EnvironmentSpec& env) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& file : embedded_files()) {
    if (!starts_with(file.path, "python/")) continue;
    files.emplace_back("helper/" + std::string(file.path.substr(7)), std::string(file.contents));
  }
  files.emplace_back("env/Dockerfile", env.dockerfile);
  files.emplace_back("env/install.sh", env.install_script);
  files.emplace_back("env/conda_dependencies.yml", env.conda_file);
  files.emplace_back("env/requirements.txt", env.requirements);
  return files;
}

namespace {

/// The exit code of a ship whose store still lacks objects (named, then ":missing").
constexpr int k_store_lacks = 3;

/// Where this project keeps the names of the objects a target's store (its login user's
/// ~/.mlw) was last seen to hold (a hint only: what it names is not sent ahead, and the target
/// still checks and says what it lacks).
fs::path shipped_record(const RunPlan& plan, const Shell& shell) {
  return plan.project.state_dir() / "cache" / "shipped" /
         sha256_hex(shell.host() + "\n" + plan.compute.username).substr(0, 32);
}

/// One ship's step: its input (`U\n`, the objects sent ahead, `N\n`, the names the run needs,
/// `T\n`, the run folder's tree) and the target's answer, bounded.
class ShipStep {
 public:
  ShipStep(Context& ctx, Shell& shell, const RunPlan& plan, const std::string& store,
           const EnvironmentSpec& env, bool make_run_folder)
      : m_ctx(ctx), m_shell(shell), m_plan(plan), m_store(store), m_env(env) {
    for (const auto& entry : plan.manifest.entries) {
      if (entry.link_target.empty()) m_wanted.emplace(object_name(entry), &entry);
    }
    std::string names;
    for (const auto& [name, entry] : m_wanted) names += name + "\n";
    m_list = std::to_string(names.size()) + "\n" + names;
    m_make_run_folder = make_run_folder;
  }

  /// The names the run needs.
  const std::map<std::string, const ManifestEntry*>& wanted() const { return m_wanted; }

  /// Runs the step, with `ahead` sent before the names; with `tree` false, the tree is not sent
  /// (the step only asks). Returns the target's result; its answer is in answer().
  ShellResult run(const std::string& script, const std::vector<std::string>& ahead, bool tree) {
    m_upload.emplace();
    m_upload_total = m_upload_sent = 0;
    for (const auto& name : ahead) add_upload(name);
    if (!ahead.empty()) {
      spdlog::debug("shipping {} objects ({} bytes) to {}", ahead.size(), m_upload_total,
                    m_shell.host());
      m_progress = ship_progress(m_ctx, m_upload_total, ahead.size());
    }
    m_head = std::to_string(ahead.empty() ? 0 : m_upload->size()) + "\n";
    m_send_tree = tree && m_make_run_folder;
    m_tree.emplace();  // each step reads its tree from the start
    if (m_send_tree) add_run_tree(*m_tree, m_plan, m_env, m_store + "/objects");
    m_middle = m_list + std::to_string(m_send_tree ? m_tree->size() : 0) + "\n";
    m_phase = 0;
    m_offset = 0;
    m_answer.clear();
    ShellStreams streams;
    streams.on_output = [this](std::string_view chunk) { on_output(chunk); };
    streams.read_input = [this](char* buffer, std::size_t size) { return read(buffer, size); };
    streams.input_known = [this]() -> std::size_t {
      return m_phase == 1 && m_head != "0\n" ? m_upload->size() - m_upload_sent : 0;
    };
    const ShellResult result = m_shell.run(script, streams);
    if (m_progress) *m_ctx.err << "\r\x1b[K" << std::flush;
    m_progress = {};
    return result;
  }

  /// What the target printed.
  const std::string& answer() const { return m_answer; }

  /// The objects the target said it lacks.
  std::vector<std::string> lacking() const {
    std::vector<std::string> names;
    for (const auto& line : split(m_answer, '\n')) {
      if (!line.empty() && line != ":missing") names.push_back(line);
    }
    return names;
  }

 private:
  /// Adds an object the target lacks; it must be one the run needs.
  void add_upload(const std::string& name) {
    const auto wanted = m_wanted.find(name);
    if (wanted == m_wanted.end()) {
      throw Error(fmt::format("{}: the target said its store lacks \"{}\", which is no file of "
                              "this snapshot; is a tool on its PATH (awk, ls) replaced?",
                              m_shell.host(), printable(name.substr(0, 80))),
                  exit_code::k_cannot_start);
    }
    const ManifestEntry& entry = *wanted->second;
    add_object(*m_upload, m_plan, name, entry);
    m_upload_total += entry.size;
  }

  void on_output(std::string_view chunk) {
    // The answer names only objects asked about (then a line or two): more is a target that
    // lies, and would otherwise grow without end.
    const std::size_t bound = 2 * m_list.size() + 65536;
    if (m_answer.size() + chunk.size() > bound) {
      throw Error(fmt::format("{}: the target answered the ship with more than {} bytes, which no "
                              "list of the {} files asked about can be; is a tool on its PATH "
                              "(awk, ls, head) replaced?",
                              m_shell.host(), bound, m_wanted.size()),
                  exit_code::k_cannot_start);
    }
    m_answer.append(chunk);
  }

  std::size_t copy_from(const std::string& text, char* buffer, std::size_t size) {
    const std::size_t n = read_held(text, m_offset, buffer, size);
    if (m_offset == text.size()) {
      ++m_phase;
      m_offset = 0;
    }
    return n;
  }

  /// The step's stdin: `U\n`, the objects, the names and `T\n`, the tree.
  std::size_t read(char* buffer, std::size_t size) {
    while (true) {
      switch (m_phase) {
        case 0:
          return copy_from(m_head, buffer, size);
        case 1:
          if (m_head != "0\n") {
            if (const std::size_t n = m_upload->read(buffer, size); n > 0) {
              m_upload_sent += n;
              if (m_progress) m_progress(std::min(m_upload_sent, m_upload_total));
              return n;
            }
          }
          ++m_phase;
          break;
        case 2:
          return copy_from(m_middle, buffer, size);
        case 3:
          if (m_send_tree) return m_tree->read(buffer, size);
          return 0;
        default:
          return 0;
      }
    }
  }

  Context& m_ctx;
  Shell& m_shell;
  const RunPlan& m_plan;
  std::map<std::string, const ManifestEntry*> m_wanted;
  const std::string& m_store;
  const EnvironmentSpec& m_env;
  std::string m_list;  // "N\n" and the names
  std::optional<TarWriter> m_tree;
  bool m_make_run_folder = false;
  bool m_send_tree = false;
  std::optional<TarWriter> m_upload;
  std::uint64_t m_upload_total = 0;
  std::uint64_t m_upload_sent = 0;
  std::function<void(std::uint64_t)> m_progress;
  std::string m_head;
  std::string m_middle;
  int m_phase = 0;
  std::size_t m_offset = 0;
  std::string m_answer;
};

/// The names of the record, or none (no record: the store is asked first).
std::optional<std::set<std::string>> read_record(const fs::path& record) {
  const auto text = read_file_if_exists(record);
  if (!text) return std::nullopt;
  std::set<std::string> names;
  for (const auto& line : split(*text, '\n')) {
    if (!line.empty()) names.insert(line);
  }
  return names;
}

void write_record(const fs::path& record, const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += name + "\n";
  try {
    make_directories(record.parent_path());
    atomic_write_file(record, text);
  } catch (const std::exception& e) {
    spdlog::debug("cannot keep the names of the shipped objects in {}: {}", record.string(),
                  e.what());
  }
}

/// Why the target found objects damaged (its "damaged: NAME" lines), as one line naming the
/// project's files: a file written to after the snapshot took its hash (what was sent is not
/// what was hashed: a training run writing into the project, an editor saving), else a copy
/// that did not arrive whole. Empty when the answer names no object of the snapshot.
std::string damaged_files(const RunPlan& plan, const std::string& answer, const std::string& host) {
  std::vector<std::string> changed, broken;
  for (const auto& line : split(answer, '\n')) {
    if (!starts_with(line, "damaged: ")) continue;
    const std::string name = line.substr(9);
    for (const auto& entry : plan.manifest.entries) {
      if (!entry.link_target.empty() || object_name(entry) != name) continue;
      const fs::path file = plan.project.root / entry.path;
      std::error_code ec;
      bool same = fs::file_size(file, ec) == entry.size && !ec;
      try {
        same = same && sha256_file(file) == entry.sha256;
      } catch (const Error&) {
        same = false;
      }
      (same ? broken : changed).push_back(entry.path);
      break;
    }
  }
  if (!changed.empty()) {
    return fmt::format("{} changed while the snapshot was taken; submit again",
                       join(changed, ", "));
  }
  if (broken.empty()) return "";
  return fmt::format(
      "{} did not arrive whole at {} (its SHA-256 there differs from this "
      "machine's); submit again",
      join(broken, ", "), host);
}

}  // namespace

void ship_snapshot(Context& ctx, Shell& shell, const RunPlan& plan, const std::string& store,
                   const EnvironmentSpec& env, const std::string& run_dir, bool make_run_folder,
                   const std::vector<std::string>* lacking) {
  ShipStep step(ctx, shell, plan, store, env, make_run_folder);
  const std::string nonce = plan.record.run_id + "-" + std::to_string(::getpid());
  const std::string script = ship_script(store, nonce, run_dir);
  const fs::path record = shipped_record(plan, shell);
  // What is sent ahead: what the probe found lacking; else what the record does not name; with
  // neither, the store is asked first (a new clone of a project the target already holds).
  std::vector<std::string> ahead;
  bool ask_first = false;
  if (lacking) {
    ahead = *lacking;
  } else if (const auto known = read_record(record)) {
    for (const auto& [name, entry] : step.wanted()) {
      if (!known->count(name)) ahead.push_back(name);
    }
  } else {
    ask_first = true;
  }
  // Until this ship succeeds, what the store holds is not known (a dropped upload leaves some
  // objects there): the next ship asks first.
  std::error_code ec;
  fs::remove(record, ec);
  auto lacks = [&](const ShellResult& result) {
    return result.exit_code == k_store_lacks && step.answer().ends_with(":missing\n");
  };
  ShellResult shipped;
  if (ask_first) {
    shipped = step.run(script, {}, false);  // the names alone: one round trip more
    if (lacks(shipped)) ahead = step.lacking();
  }
  // A store that lacked nothing already holds it all when no run folder is made.
  if (!ask_first || lacks(shipped) || (shipped.exit_code == 0 && make_run_folder)) {
    shipped = step.run(script, ahead, true);
    if (lacks(shipped)) {
      // The record was wrong (the target's store was cleaned): what it lacks, once more.
      ahead = step.lacking();
      shipped = step.run(script, ahead, true);
      if (lacks(shipped)) {
        throw Error(fmt::format("{}: shipping the snapshot to {} failed: its store still lacks {} "
                                "objects after they were sent",
                                shell.host(), run_dir, step.lacking().size()),
                    exit_code::k_cannot_start);
      }
    }
  }
  if (shipped.exit_code != 0) {
    const std::string damaged = damaged_files(plan, step.answer(), shell.host());
    throw Error(
        fmt::format("{}: shipping the snapshot to {} failed: {}", shell.host(), run_dir,
                    damaged.empty()
                        ? trim(trim(shipped.errors) + "\n" + trim(step.answer()))
                        : damaged + " (" + join(split(trim(step.answer()), '\n'), "; ") + ")"),
        exit_code::k_cannot_start);
  }
  write_record(record, object_names(plan.manifest));
}

ProbeShip ship_in_probe(const RunPlan& plan, const Shell& shell) {
  const std::vector<std::string> names = object_names(plan.manifest);
  const auto known = read_record(shipped_record(plan, shell));
  std::map<std::string, const ManifestEntry*> wanted;
  for (const auto& entry : plan.manifest.entries) {
    if (entry.link_target.empty()) wanted.emplace(object_name(entry), &entry);
  }
  // Ahead, read into memory: what the record does not name, unless that is over the bound
  // (then only the names go, and the ship step sends what the store says it lacks).
  constexpr std::uint64_t k_bound = 8ULL << 20;
  TarWriter upload;
  std::uint64_t bytes = 0;
  std::size_t count = 0;
  if (known) {
    for (const auto& [name, entry] : wanted) {
      if (known->count(name)) continue;
      bytes += entry->size;
      ++count;
      add_object(upload, plan, name, *entry);
    }
  }
  std::string input = "0\n";
  if (count > 0 && bytes <= k_bound) {
    spdlog::debug("shipping {} objects ({} bytes) to {} with the probe", count, bytes,
                  shell.host());
    input = std::to_string(upload.size()) + "\n";
    std::string tar(upload.size(), '\0');
    std::size_t filled = 0;
    while (const std::size_t n = upload.read(tar.data() + filled, tar.size() - filled)) filled += n;
    input += tar;
  }
  std::string list;
  for (const auto& name : names) list += name + "\n";
  input += std::to_string(list.size()) + "\n" + list + "0\n";
  const std::string nonce = plan.record.run_id + "-" + std::to_string(::getpid());
  return {ship_script_words("\"$HOME\"/.mlw", nonce, "\"$HOME\"/.mlw/runs/.prepare",
                            "\"$HOME\"/.mlw/runs"),
          std::move(input)};
}

std::string run_tree_tar(const RunPlan& plan, const EnvironmentSpec& env,
                         const std::string& store) {
  TarWriter tree;
  add_run_tree(tree, plan, env, store + "/objects");
  std::string tar(tree.size(), '\0');
  std::size_t filled = 0;
  while (const std::size_t n = tree.read(tar.data() + filled, tar.size() - filled)) filled += n;
  tar.resize(filled);
  return tar;
}

void remember_shipped(const RunPlan& plan, const Shell& shell) {
  write_record(shipped_record(plan, shell), object_names(plan.manifest));
}

}  // namespace mlw
