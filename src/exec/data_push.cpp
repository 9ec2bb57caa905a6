#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <optional>
#include <random>
#include <set>

#include "data_plan.hpp"
#include "mlw/exec/data_store.hpp"
#include "mlw/exec/ship.hpp"
#include "mlw/remote/tar.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"
#include "step_input.hpp"

namespace mlw {

namespace {

/// The exit code of ship.sh whose store lacks objects (named, then ":missing").
constexpr int k_store_lacks = 3;
/// The exit code of mlw_data_tree whose base version's tree is gone or was written to.
constexpr int k_base_gone = 6;
/// The most bytes of new contents that a push whose folder is made from the base's sends
/// without asking the store which it lacks.
constexpr std::uint64_t k_sent_unasked = 1 << 20;
/// The most a store step may print per version asked about (its lines are short), and at least.
constexpr std::size_t k_answer_floor = 1 << 20;

std::vector<DataLine> parse_lines(const std::string& output) {
  std::vector<DataLine> lines;
  for (const auto& line : split(output, '\n')) {
    if (line.empty()) continue;
    DataLine parsed;
    const auto first = line.find(' ');
    parsed.word = line.substr(0, first);
    if (first != std::string::npos) {
      const auto second = line.find(' ', first + 1);
      parsed.id = line.substr(first + 1, second == std::string::npos ? second : second - first - 1);
      if (second != std::string::npos) parsed.rest = line.substr(second + 1);
    }
    lines.push_back(std::move(parsed));
  }
  return lines;
}

/// data.sh, then `mlw_data_open STORE`: the store's folder in $S, its gc lock held shared.
std::string open_store(const DataStore& store) {
  return script_call("src/data/data.sh", {"mlw_data_open", store.store});
}

/// The ship step (exec/ship.sh) into the store's objects, in a subshell: it reads "U\n", a tar
/// of objects, "N\n", their names and "0\n".
std::string ship_into_store(const std::string& nonce) {
  return "(\nset -- \"$S\" " + shell_quote(nonce) + " \"$S/trees/.none\" \"$S/trees\"\n" +
         script_body("src/exec/ship.sh") + ")\n";
}

/// The folder entries and links of a version's tree under `trees/.ID.tmp/`, made as the stream
/// is read, a few hundred entries at a time.
class TreeStream {
 public:
  /// The tree of `entries` (in path order), folders in `made` (relative) taken as there.
  TreeStream(std::vector<const DataEntry*> entries, const std::string& id,
             const std::set<std::string>& made = {})
      : m_entries(std::move(entries)), m_prefix("trees/." + id + ".tmp/") {
    for (const auto& dir : made) m_made.insert(m_prefix + dir);
    m_dirs = m_made;
  }

  /// The stream's length.
  std::uint64_t bytes() const {
    std::uint64_t total = TarWriter::end_bytes();
    std::set<std::string> dirs = m_made;
    for (std::size_t i = 0; i < m_entries.size(); ++i) {
      for_entry(i, dirs, [&](char, const std::string& name, const std::string& link) {
        total += TarWriter::entry_bytes(name, 0, link);
      });
    }
    return total;
  }

  /// Makes `tar` produce the tree as it is read.
  void feed(TarWriter& tar) {
    tar.add_lazily([this, &tar] {
      if (m_next >= m_entries.size()) return false;
      for (std::size_t end = std::min(m_next + 256, m_entries.size()); m_next < end; ++m_next) {
        for_entry(m_next, m_dirs, [&](char type, const std::string& name, const std::string& link) {
          if (type == '5') tar.add_directory(name, 0755);
          if (type == '1') tar.add_hard_link(name, link);
          if (type == '2') tar.add_symlink(name, link);
        });
      }
      return true;
    });
  }

 private:
  /// Calls `add` with the entries of manifest entry `i`: its folders not yet made, then it.
  template <class Add>
  void for_entry(std::size_t i, std::set<std::string>& dirs, Add&& add) const {
    const DataEntry& entry = *m_entries[i];
    for (auto slash = entry.path.find('/'); slash != std::string::npos;
         slash = entry.path.find('/', slash + 1)) {
      std::string dir = m_prefix + entry.path.substr(0, slash);
      if (dirs.insert(dir).second) add('5', dir, std::string());
    }
    if (entry.link_target.empty()) {
      add('1', m_prefix + entry.path, "objects/" + data_object_name(entry));
    } else {
      add('2', m_prefix + entry.path, entry.link_target);
    }
  }

  std::vector<const DataEntry*> m_entries;
  std::set<std::string> m_made;
  std::string m_prefix;
  std::size_t m_next = 0;
  std::set<std::string> m_dirs;
};

/// Throws DataSourceChanged where a file to send is gone from the folder, or is no longer a
/// file of its recorded size (a changed content of the same size shows in the store's check).
void check_source(const DataVersion& version, const std::vector<const DataEntry*>& files) {
  for (const DataEntry* entry : files) {
    const std::string path = version.source + "/" + entry->path;
    struct stat info {};
    if (::lstat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        static_cast<std::uint64_t>(info.st_size) == entry->size) {
      continue;
    }
    throw DataSourceChanged(fmt::format(
        "{} changed since `mlw data add` ({}); add the folder again: mlw data add {} {}",
        printable(path, 4096),
        ::access(path.c_str(), F_OK) == 0 ? "its size is not the recorded one" : "it is gone",
        version.name, shell_quote(version.source)));
  }
}

/// What failed in a push, for the user: no room (with the bytes it needed), a file changed since
/// it was added, or the target's words.
[[noreturn]] void push_failed(const DataStore& store, const DataVersion& version,
                              const ShellResult& result, std::uint64_t needed,
                              const Objects& objects) {
  const std::string said = trim(trim(result.errors) + "\n" + trim(result.output));
  if (said.find("No space left on device") != std::string::npos ||
      said.find("Disk quota exceeded") != std::string::npos ||
      said.find(": Wrote only ") != std::string::npos) {  // GNU tar on a full disk
    throw Error(
        fmt::format("{}: the data store {} ran out of room while {} was pushed: it needs "
                    "{:.1f} MB more ({} bytes); free some (mlw data gc -c TARGET) or set "
                    "dataStore in the compute file; what arrived is kept, and the next "
                    "push goes on from it",
                    store.shell->host(), store.store, version.label(),
                    static_cast<double>(needed) / 1e6, needed));
  }
  for (const auto& line : split(said, '\n')) {
    if (!starts_with(line, "damaged: ")) continue;
    const DataEntry* found = objects.find(line.substr(9));
    if (!found) continue;
    throw DataSourceChanged(
        fmt::format("{} changed since `mlw data add` (its content no longer has the "
                    "recorded hash); add the folder again: mlw data add {} {}",
                    printable(version.source + "/" + found->path, 4096), version.name,
                    shell_quote(version.source)));
  }
  throw Error(fmt::format("{}: pushing {} to the data store {} failed (exit {}): {}",
                          store.shell->host(), version.label(), store.store, result.exit_code,
                          said.empty() ? "it said nothing" : printable(said, 400)));
}

/// The objects' names, a line each, made as they are sent: never held whole (`of` outlives the
/// step).
void name_lines(Segments& input, const std::vector<const DataEntry*>& of) {
  input.lines(of.size(), [&of](std::size_t i) { return data_object_name(*of[i]) + "\n"; });
}

/// The bytes of an object's line in a version's list, "NAME SIZE\n", its name's known.
std::size_t list_line_bytes(std::size_t name_bytes, const DataEntry& entry) {
  return name_bytes + 2 + fmt::formatted_size("{}", entry.size);
}

/// The objects of `objects` that the store lacks, of `asking` (`names_bytes` of names in all);
/// throws where the step fails or names another object.
std::vector<const DataEntry*> ask_store(DataStore& store, const DataVersion& version,
                                        const Objects& objects, const std::string& nonce,
                                        const std::vector<const DataEntry*>& asking,
                                        std::size_t names_bytes) {
  Segments ask;
  ask.text("0\n" + std::to_string(names_bytes) + "\n");
  name_lines(ask, asking);
  ask.text("0\n");
  std::vector<const DataEntry*> lacking;
  std::string stranger;
  const ShellResult asked =
      run_bounded(*store.shell, open_store(store) + ship_into_store(nonce), &ask,
                  2 * names_bytes + k_answer_floor, [&](std::string_view line) {
                    if (line.empty() || line == ":missing") return;
                    if (const DataEntry* found = objects.find(line)) {
                      lacking.push_back(found);
                    } else if (stranger.empty()) {
                      stranger = line;
                    }
                  });
  if (asked.exit_code == k_store_lacks && !stranger.empty()) {
    throw Error(fmt::format(
        "{}: its data store said it lacks \"{}\", which is no file of {}; is a tool on its "
        "PATH (awk, ls) replaced?",
        store.shell->host(), printable(stranger), version.label()));
  }
  if (asked.exit_code != 0 && asked.exit_code != k_store_lacks) {
    push_failed(store, version, asked, 0, objects);
  }
  return lacking;
}

/// The lines of a data.sh step that reads the store (at most `limit` bytes); throws where it fails.
std::vector<DataLine> read_store(DataStore& store, const std::vector<std::string>& words,
                                 std::size_t limit) {
  const ShellResult result =
      run_bounded(*store.shell, script_call("src/data/data.sh", words), nullptr, limit);
  if (result.exit_code != 0) {
    throw Error(fmt::format("{}: the data store {} could not be read (exit {}): {}",
                            store.shell->host(), store.store, result.exit_code,
                            printable(trim(result.errors + result.output), 400)));
  }
  return parse_lines(result.output);
}

}  // namespace

std::vector<DataReadiness> data_ready(DataStore& store, const std::vector<std::string>& ids,
                                      const std::string& run_dir, const std::string& run_id) {
  std::vector<std::string> words = {"mlw_data_ready", store.store, run_dir, run_id};
  words.insert(words.end(), ids.begin(), ids.end());
  std::vector<DataReadiness> answers;
  for (auto& line : read_store(store, words, k_answer_floor + 8192 * ids.size())) {
    if (line.word == "ready" || line.word == "damaged" || line.word == "missing") {
      answers.push_back({line.id, line.word, line.rest});
    }
  }
  return answers;
}

DataPushResult push_data(Context& ctx, DataStore& store, const DataVersion& version,
                         const DataManifest& manifest, const DataCatalog* catalog,
                         DataStore* from) {
  DataPushResult pushed;
  const std::string base_id = base_candidate(catalog, version);
  bool base_ready = false;
  std::vector<DataReadiness> answers;
  if (base_id.empty()) {
    answers = data_ready(store, {version.id});
  } else {
    // The version's state, and whether the store holds the base whole (not whether its folder
    // was written to: a walk of all of it, left to the step that makes the folder from it).
    for (auto& line :
         read_store(store, {"mlw_data_held", store.store, version.id, base_id}, k_answer_floor)) {
      if (line.word == "held" && line.id == base_id) base_ready = true;
      if (line.id == version.id) answers.push_back({line.id, line.word, line.rest});
    }
  }
  for (const auto& answer : answers) {
    if (answer.state == "ready") {
      pushed.path = answer.path;
      return pushed;
    }
    if (answer.state == "damaged") {
      spdlog::warn("{}: {} on {} was written to ({}); its changed files are sent again",
                   store.shell->host(), version.label(), store.store, printable(answer.path, 4096));
    }
  }
  // A folder made from the base's asks only about the objects the base lacks: the store holds
  // the base's (its folder is whole), so a version with one file changed asks about one name.
  DataManifest base;
  TreePlan plan = plan_tree(version, manifest, catalog, base_id, base_ready, base);
  const Objects objects(manifest);
  const std::vector<const DataEntry*> asking = objects_to_ask(plan, objects, base);
  std::size_t names_bytes = 0;
  std::size_t all_names_bytes = 0;
  std::size_t listed_bytes = 0;
  for (std::size_t i = 0; i < objects.size(); ++i) {
    const std::size_t name = data_object_name(objects[i]).size();
    all_names_bytes += name + 1;
    listed_bytes += list_line_bytes(name, objects[i]);
  }
  for (const DataEntry* entry : asking) names_bytes += data_object_name(*entry).size() + 1;
  // A version's list ("NAME SIZE" per object, in name order): whole, or where its folder is
  // made from the base's, the lines the base's list gains, "-" and those it loses (the store
  // derives it, and checks its size).
  const auto list_line = [](const DataEntry& entry) {
    return fmt::format("{} {}\n", data_object_name(entry), entry.size);
  };
  const auto listed = [&](Segments& input, const TreePlan& tree_plan,
                          const std::vector<const DataEntry*>& dropped) {
    input.text(std::to_string(listed_bytes) + (tree_plan.base.empty() ? "\n" : " derived\n"));
    if (tree_plan.base.empty()) {
      input.lines(objects.size(), [&](std::size_t i) { return list_line(objects[i]); });
      return;
    }
    std::size_t bytes = 2;  // "-\n"
    for (const auto* of : {&asking, &dropped}) {
      for (const DataEntry* entry : *of) {
        bytes += list_line_bytes(data_object_name(*entry).size(), *entry);
      }
    }
    input.text(std::to_string(bytes) + "\n");
    input.lines(asking.size(), [&](std::size_t i) { return list_line(*asking[i]); });
    input.text("-\n");
    input.lines(dropped.size(),
                [&dropped, &list_line](std::size_t i) { return list_line(*dropped[i]); });
  };
  std::random_device random;
  const std::string nonce = fmt::format("data-{}-{:x}", ::getpid(), random());
  // What the store lacks (uploads a dropped push left are taken in first), read as it comes. A
  // folder made from the base's with few bytes changed sends them without asking (a round trip
  // less): the store checks them as any upload, and keeps one copy of each.
  std::uint64_t asking_bytes = 0;
  for (const DataEntry* entry : asking) asking_bytes += entry->size;
  const bool unasked = !from && !plan.base.empty() && asking_bytes <= k_sent_unasked;
  const std::vector<const DataEntry*> lacking =
      unasked ? asking : ask_store(store, version, objects, nonce, asking, names_bytes);
  // The objects it lacks, the names again (checked once more), then the version's tree.
  TarWriter upload;
  std::uint64_t upload_bytes = TarWriter::end_bytes();
  for (const DataEntry* entry : lacking) {
    pushed.bytes_sent += entry->size;
    upload_bytes += TarWriter::entry_bytes(data_object_name(*entry), entry->size);
  }
  pushed.objects_sent = lacking.size();
  std::unique_ptr<DataPull> pull;
  if (from && !lacking.empty()) {
    std::vector<std::string> wanted;
    for (const DataEntry* entry : lacking) wanted.push_back(data_object_name(*entry));
    pull = std::make_unique<DataPull>(*from, wanted, pushed.bytes_sent);
  } else if (!from) {
    check_source(version, lacking);
  }
  std::size_t next = 0;
  upload.add_lazily([&] {
    if (next >= lacking.size()) return false;
    const DataEntry& entry = *lacking[next++];
    const std::uint32_t mode = (entry.mode & 0111) ? 0555 : 0444;
    if (pull) {
      upload.add_stream(
          data_object_name(entry), entry.size, mode,
          [&pull](char* buffer, std::size_t size) { return pull->read(buffer, size); });
    } else {
      upload.add_file(data_object_name(entry), fs::path(version.source) / entry.path, entry.size,
                      mode);
    }
    return true;
  });
  // The step checks once more that the store holds what it was asked about and did not just
  // receive (a gc may have run since): the objects uploaded are checked by their hash as they
  // arrive.
  std::vector<const DataEntry*> held;
  std::size_t held_bytes = 0;
  {
    std::vector<const DataEntry*> sent(lacking.begin(), lacking.end());
    std::sort(sent.begin(), sent.end());
    for (const DataEntry* entry : asking) {
      if (std::binary_search(sent.begin(), sent.end(), entry)) continue;
      held.push_back(entry);
      held_bytes += data_object_name(*entry).size() + 1;
    }
  }
  const auto progress = ship_progress(ctx, pushed.bytes_sent, lacking.size());
  spdlog::info("pushing {}: {} of its {} files' contents ({} bytes) to {}{}", version.label(),
               lacking.size(), objects.size(), pushed.bytes_sent, store.shell->host(),
               plan.base.empty() ? ""
                                 : fmt::format(", its folder made from {}'s ({} entries sent)",
                                               plan.base.substr(0, 7), plan.entries.size()));
  // One step: the objects it lacks, the names again (checked once more), then the tree.
  const auto send = [&](const TreePlan& tree_plan, bool with_upload) {
    TreeStream tree_entries(tree_plan.entries, version.id, tree_plan.made);
    TarWriter tree;
    tree_entries.feed(tree);
    Segments input;
    const bool uploading = with_upload && !lacking.empty();
    input.text(uploading ? std::to_string(upload_bytes) + "\n" : "0\n");
    if (uploading) {
      input.tar(upload, upload_bytes);
      input.text(std::to_string(held_bytes) + "\n");
      name_lines(input, held);
    } else if (with_upload) {
      input.text(std::to_string(names_bytes) + "\n");
      name_lines(input, asking);
    } else {
      input.text(std::to_string(all_names_bytes) + "\n");
      input.lines(objects.size(),
                  [&](std::size_t i) { return data_object_name(objects[i]) + "\n"; });
    }
    input.text("0\n");
    const auto dropped = tree_plan.base.empty() ? std::vector<const DataEntry*>()
                                                : objects_dropped(tree_plan, objects);
    listed(input, tree_plan, dropped);
    if (!tree_plan.base.empty()) {
      input.text(std::to_string(tree_plan.gone.size()) + " " +
                 std::to_string(tree_plan.gone_dirs.size()) + "\n" + tree_plan.gone +
                 tree_plan.gone_dirs);
    }
    input.text(std::to_string(tree_entries.bytes()) + "\n");
    input.tar(tree, tree_entries.bytes());
    if (progress && uploading) {
      input.on_tar_bytes = [progress, total = pushed.bytes_sent](std::uint64_t sent) {
        progress(std::min(sent, total));
      };
    }
    std::vector<std::string> words = {store.store, version.id};
    if (!tree_plan.base.empty()) words.push_back(tree_plan.base);
    ShellResult result = run_bounded(
        *store.shell,
        open_store(store) + ship_into_store(nonce) + "mlw_data_tree " + shell_join(words) + "\n",
        &input, 2 * all_names_bytes + k_answer_floor);
    if (progress && uploading) *ctx.err << "\r\x1b[K" << std::flush;
    return result;
  };
  ShellResult result = send(plan, true);
  if (result.exit_code == k_base_gone && !plan.base.empty()) {
    spdlog::info("{}: the folder of {} went away: the whole folder of {} is sent",
                 store.shell->host(), plan.base.substr(0, 7), version.label());
    result = send(whole_tree(manifest), false);
  }
  if (result.exit_code != 0) push_failed(store, version, result, pushed.bytes_sent, objects);
  for (auto& line : parse_lines(result.output)) {
    if (line.word == "ready" && line.id == version.id) pushed.path = line.rest;
  }
  if (pushed.path.empty()) push_failed(store, version, result, 0, objects);
  return pushed;
}

std::vector<DataLine> data_step(DataStore& store, const std::string& step,
                                const std::vector<std::string>& words,
                                const std::vector<int>& allowed) {
  std::vector<std::string> all = {step, store.store};
  all.insert(all.end(), words.begin(), words.end());
  const ShellResult result =
      run_bounded(*store.shell, script_call("src/data/data.sh", all), nullptr, 64 << 20);
  if (result.exit_code != 0 &&
      std::find(allowed.begin(), allowed.end(), result.exit_code) == allowed.end()) {
    throw Error(fmt::format("{}: {} on the data store {} failed (exit {}): {}", store.shell->host(),
                            step, store.store, result.exit_code,
                            printable(trim(result.errors + "\n" + result.output), 400)));
  }
  return parse_lines(result.output);
}

}  // namespace mlw
