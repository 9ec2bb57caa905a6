#include "mlw/snapshot/manifest.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <exception>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "mlw/snapshot/ignore.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/json_text.hpp"
#include "mlw/util/sha256.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

/// Threads that hash and store new content at once (at most; fewer on fewer cores).
constexpr std::size_t k_max_hash_workers = 8;
/// Bytes read and written at a time while storing (fewer system calls than 64 KiB).
constexpr std::size_t k_store_buffer = 1 << 18;

struct CachedHash {
  std::uint64_t size;
  std::int64_t mtime_ns;
  std::int64_t ctime_ns;
  std::uint64_t inode;
  std::string sha256;
};

using HashCache = std::unordered_map<std::string, CachedHash>;

std::int64_t nanoseconds(const timespec& t) {
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

HashCache load_cache(const fs::path& path) {
  HashCache cache;
  auto text = read_file_if_exists(path);
  if (!text) return cache;
  for (const auto& line : split(*text, '\n')) {
    auto fields = split(line, '\t');
    if (fields.size() != 6 || fields[5].size() != 64) continue;
    try {
      cache[fields[0]] = {std::stoull(fields[1]), std::stoll(fields[2]), std::stoll(fields[3]),
                          std::stoull(fields[4]), fields[5]};
    } catch (const std::exception&) {
    }
  }
  return cache;
}

void save_cache(const fs::path& path, const HashCache& cache) {
  // Entries changed in the last two seconds are left out: a file rewritten again within the
  // clock's resolution could keep its times, so such files are hashed afresh next time.
  const std::int64_t recent = (static_cast<std::int64_t>(::time(nullptr)) - 2) * 1000000000LL;
  std::string text;
  for (const auto& [name, entry] : cache) {
    if (entry.mtime_ns >= recent || entry.ctime_ns >= recent) continue;
    text += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\n", name, entry.size, entry.mtime_ns,
                        entry.ctime_ns, entry.inode, entry.sha256);
  }
  try {
    make_directories(path.parent_path());
    atomic_write_file(path, text);
  } catch (const Error& e) {
    spdlog::debug("hash cache not saved: {}", e.what());
  }
}

bool object_intact(const fs::path& object, std::uint64_t size) {
  struct stat info {};
  return ::lstat(object.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         static_cast<std::uint64_t>(info.st_size) == size && info.st_mtim.tv_sec == 0 &&
         info.st_mtim.tv_nsec == 0;
}

/// Copies `source` into the store while hashing it; returns the hash of what was copied.
std::string store_object(const fs::path& source, const fs::path& objects_dir, bool executable) {
  make_directories(objects_dir);
  std::random_device random;
  const fs::path temp = objects_dir / fmt::format(".in-{}-{}", ::getpid(), random());
  const int in = ::open(source.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) throw Error("cannot read " + source.string() + ": " + errno_text(errno));
  const int out = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (out < 0) {
    const int err = errno;
    ::close(in);
    throw Error("cannot write to the snapshot store " + objects_dir.string() + ": " +
                errno_text(err));
  }
  Sha256 hash;
  // Not zeroed: a small file touches only the buffer's first pages.
  static thread_local const std::unique_ptr<char[]> buffer(new char[k_store_buffer]);
  std::string failure;
  while (failure.empty()) {
    const ssize_t n = ::read(in, buffer.get(), k_store_buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) failure = "cannot read " + source.string() + ": " + errno_text(errno);
    if (n <= 0) break;
    hash.update(std::string_view(buffer.get(), static_cast<std::size_t>(n)));
    for (ssize_t done = 0; done < n && failure.empty();) {
      const ssize_t w = ::write(out, buffer.get() + done, static_cast<std::size_t>(n - done));
      if (w < 0 && errno != EINTR)
        failure = "cannot write to the snapshot store: " + errno_text(errno);
      if (w > 0) done += w;
    }
  }
  ::close(in);
  const timespec zero_times[2] = {{0, 0}, {0, 0}};
  if (failure.empty() &&
      (::futimens(out, zero_times) != 0 || ::fchmod(out, executable ? 0555 : 0444) != 0)) {
    failure = "cannot prepare a snapshot object: " + errno_text(errno);
  }
  ::close(out);
  if (!failure.empty()) {
    ::unlink(temp.c_str());
    throw Error(failure);
  }
  const std::string digest = hash.hex_digest();
  const fs::path final_path = object_path(objects_dir, digest, executable);
  make_directories(final_path.parent_path());
  if (::rename(temp.c_str(), final_path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    throw Error("cannot write to the snapshot store: " + errno_text(err));
  }
  return digest;
}

bool inside(const fs::path& root, const fs::path& candidate) {
  auto relative = candidate.lexically_relative(root);
  return !relative.empty() && !relative.native().starts_with("..");
}

struct Walker {
  fs::path root;
  fs::path canonical_root;
  fs::path objects_dir;
  IgnoreRules rules;
  HashCache cache;
  HashCache fresh;
  Manifest manifest;
  SnapshotProgress progress;
  std::uint64_t bytes_read = 0;
  struct Pending {
    std::size_t index;  ///< in manifest.entries
    fs::path full;
    bool executable;
  };
  std::vector<Pending> pending;

  void add_file(const std::string& relative, const fs::path& full, const struct stat& info) {
    ManifestEntry entry;
    entry.path = relative;
    entry.size = static_cast<std::uint64_t>(info.st_size);
    entry.mode = info.st_mode & 0777;
    const bool executable = is_executable(entry.mode);
    const auto cached = cache.find(relative);
    const bool hit = cached != cache.end() && cached->second.size == entry.size &&
                     cached->second.mtime_ns == nanoseconds(info.st_mtim) &&
                     cached->second.ctime_ns == nanoseconds(info.st_ctim) &&
                     cached->second.inode == info.st_ino;
    if (hit) {
      entry.sha256 = cached->second.sha256;
    } else {
      pending.push_back({manifest.entries.size(), full, executable});
    }
    fresh[relative] = {entry.size, nanoseconds(info.st_mtim), nanoseconds(info.st_ctim),
                       info.st_ino, entry.sha256};
    manifest.entries.push_back(std::move(entry));
  }

  /// Hashes and stores the files the cache did not know, on every core: hashing is CPU-bound
  /// and the store's writes are mostly the kernel's, so two workers on two cores halve it.
  void store_pending() {
    if (pending.empty()) return;
    const std::size_t workers = std::min<std::size_t>(
        {pending.size(), std::max(1U, std::thread::hardware_concurrency()), k_max_hash_workers});
    std::atomic<std::size_t> next{0};
    std::atomic<bool> stop{false};
    std::mutex reporting;
    std::exception_ptr failure;
    std::size_t done = 0;
    auto work = [&] {
      for (std::size_t i = next++; i < pending.size() && !stop; i = next++) {
        ManifestEntry& entry = manifest.entries[pending[i].index];
        try {
          entry.sha256 = store_object(pending[i].full, objects_dir, pending[i].executable);
        } catch (...) {
          const std::lock_guard lock(reporting);
          if (!failure) failure = std::current_exception();
          stop = true;
          return;
        }
        const std::lock_guard lock(reporting);
        bytes_read += entry.size;
        if (progress) progress(++done, bytes_read);
      }
    };
    std::vector<std::thread> threads;
    for (std::size_t i = 1; i < workers; ++i) threads.emplace_back(work);
    work();
    for (auto& thread : threads) thread.join();
    if (failure) std::rethrow_exception(failure);
    for (const auto& job : pending) {
      const ManifestEntry& entry = manifest.entries[job.index];
      fresh[entry.path].sha256 = entry.sha256;
    }
  }

  void add_symlink(const std::string& relative, const std::string& prefix, const fs::path& full) {
    auto target = link_inside(canonical_root, prefix, full);
    if (!target) {
      manifest.warnings.push_back("skipped symlink " + relative +
                                  ": it points outside the project (or nowhere)");
      return;
    }
    ManifestEntry entry;
    entry.path = relative;
    entry.link_target = std::move(*target);
    entry.mode = 0777;
    manifest.entries.push_back(std::move(entry));
  }

  void walk(const fs::path& folder, const std::string& prefix) {
    if (!prefix.empty()) {
      if (auto text = read_file_if_exists(folder / ".amlignore")) rules.add_text(*text, prefix);
    }
    std::error_code ec;
    fs::directory_iterator it(folder, ec);
    if (ec) throw Error("cannot read folder " + folder.string() + ": " + ec.message());
    for (const auto& dirent : it) {
      const std::string name = dirent.path().filename().string();
      const std::string relative = prefix.empty() ? name : prefix + "/" + name;
      struct stat info {};
      if (::lstat(dirent.path().c_str(), &info) != 0) continue;
      const bool is_dir = S_ISDIR(info.st_mode);
      if (name == ".git" || (prefix.empty() && (name == ".mlw" || name == "outputs"))) continue;
      if (rules.ignored(relative, is_dir)) continue;
      if (is_dir) {
        // A folder that `history download` or `diagnostics` filled with runs' files.
        if (::access((dirent.path() / k_download_marker).c_str(), F_OK) == 0) continue;
        walk(dirent.path(), relative);
      } else if (S_ISREG(info.st_mode)) {
        add_file(relative, dirent.path(), info);
      } else if (S_ISLNK(info.st_mode)) {
        add_symlink(relative, prefix, dirent.path());
      }
    }
  }
};

}  // namespace

std::optional<std::string> link_inside(const fs::path& canonical_root, const std::string& prefix,
                                       const fs::path& full) {
  std::error_code ec;
  const fs::path resolved = fs::weakly_canonical(full, ec);
  if (ec || !inside(canonical_root, resolved) || !fs::exists(resolved, ec)) return std::nullopt;
  return resolved.lexically_relative(canonical_root / prefix).string();
}

fs::path object_path(const fs::path& objects_dir, const std::string& sha256, bool executable) {
  return objects_dir / sha256.substr(0, 2) / (sha256 + (executable ? ".x" : ""));
}

bool is_executable(std::uint32_t mode) {
  return (mode & 0111) != 0;
}

/// A stored object is valid while it keeps the size and the zero mtime it was given: writing
/// through a hard link in a run's snapshot changes the mtime, and such an object is replaced.

std::string Manifest::hash() const {
  Sha256 hash;
  for (const auto& entry : entries) {
    const char separator = '\0';
    for (const std::string& field :
         {entry.path, fmt::format("{:o}", entry.mode), entry.sha256, entry.link_target}) {
      hash.update(field);
      hash.update(std::string_view(&separator, 1));
    }
  }
  return hash.hex_digest();
}

std::uint64_t Manifest::total_bytes() const {
  std::uint64_t total = 0;
  for (const auto& entry : entries) total += entry.size;
  return total;
}

nlohmann::ordered_json Manifest::to_json() const {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& entry : entries) {
    nlohmann::ordered_json item = {
        {"path", entry.path}, {"size", entry.size}, {"mode", fmt::format("{:04o}", entry.mode)}};
    if (entry.link_target.empty()) {
      item["sha256"] = entry.sha256;
    } else {
      item["link"] = entry.link_target;
    }
    out.push_back(std::move(item));
  }
  make_json_safe(out);  // file names that are not UTF-8
  return out;
}

Manifest build_snapshot(const fs::path& root, const fs::path& objects_dir,
                        const fs::path& hash_cache, const SnapshotProgress& progress) {
  Walker walker;
  walker.progress = progress;
  walker.root = root;
  std::error_code ec;
  walker.canonical_root = fs::weakly_canonical(root, ec);
  walker.objects_dir = objects_dir;
  if (auto text = read_file_if_exists(root / ".amlignore")) walker.rules.add_text(*text);
  walker.cache = load_cache(hash_cache);
  walker.walk(root, "");
  walker.store_pending();
  std::sort(walker.manifest.entries.begin(), walker.manifest.entries.end(),
            [](const auto& a, const auto& b) { return a.path < b.path; });
  if (walker.fresh.size() != walker.cache.size() ||
      std::any_of(walker.fresh.begin(), walker.fresh.end(), [&](const auto& item) {
        auto old = walker.cache.find(item.first);
        return old == walker.cache.end() || old->second.mtime_ns != item.second.mtime_ns ||
               old->second.ctime_ns != item.second.ctime_ns;
      })) {
    save_cache(hash_cache, walker.fresh);
  }
  return std::move(walker.manifest);
}

void save_manifest(const Manifest& manifest, const std::string& hash, const fs::path& manifests_dir,
                   const fs::path& run_copy) {
  const fs::path shared = manifests_dir / (hash + ".json");
  if (!fs::exists(shared)) {
    make_directories(manifests_dir);
    atomic_write_file(shared, manifest.to_json().dump(1) + "\n");
  }
  if (::link(shared.c_str(), run_copy.c_str()) != 0) {
    atomic_write_file(run_copy, manifest.to_json().dump(1) + "\n");
  }
}

namespace {

/// Links one file of the snapshot from the store, first re-storing its object from the project
/// when the object is missing or was modified through a hard link.
void link_entry(const ManifestEntry& entry, const fs::path& objects_dir,
                const fs::path& project_root, const fs::path& target) {
  const bool executable = is_executable(entry.mode);
  const fs::path object = object_path(objects_dir, entry.sha256, executable);
  if (!object_intact(object, entry.size)) {
    std::error_code ec;
    fs::remove(object, ec);
    const std::string digest = store_object(project_root / entry.path, objects_dir, executable);
    if (digest != entry.sha256) {
      throw Error(entry.path + " changed while the snapshot was taken; submit again");
    }
  }
  if (::link(object.c_str(), target.c_str()) == 0) return;
  std::error_code ec;
  fs::copy_file(object, target, ec);
  if (ec) throw Error("cannot create " + target.string() + ": " + ec.message());
  ::chmod(target.c_str(), entry.mode);
}

/// The link of `links` that `path` lies under (a folder of its path is that link), if any.
const std::string* link_above(const std::set<std::string>& links, const std::string& path) {
  for (auto slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    const auto it = links.find(path.substr(0, slash));
    if (it != links.end()) return &*it;
  }
  return nullptr;
}

/// Refuses an entry that lies under a link entry, in either order: restored, it would be written
/// through the link, wherever the link points.
void refuse_entries_under_links(const Manifest& manifest) {
  std::set<std::string> links;
  for (const auto& entry : manifest.entries) {
    if (!entry.link_target.empty()) links.insert(entry.path);
  }
  if (links.empty()) return;
  for (const auto& entry : manifest.entries) {
    if (const std::string* link = link_above(links, entry.path)) {
      throw Error(fmt::format("a snapshot manifest entry is malformed: {} lies under the link {}",
                              entry.path, *link));
    }
  }
}

}  // namespace

Manifest manifest_from_json(const nlohmann::ordered_json& json) {
  if (!json.is_array()) throw Error("a snapshot manifest must be a list of files");
  Manifest manifest;
  for (const auto& item : json) {
    const auto text = [&item](const char* key) {
      const auto it = item.find(key);
      return it != item.end() && it->is_string() ? text_from_json(it->get<std::string>())
                                                 : std::string();
    };
    ManifestEntry entry;
    entry.path = text("path");
    entry.sha256 = text("sha256");
    entry.link_target = text("link");
    const std::string mode = text("mode");
    const auto size = item.find("size");
    const bool safe_path = !entry.path.empty() && entry.path[0] != '/' &&
                           ("/" + entry.path + "/").find("/../") == std::string::npos;
    // A digest names a file of the object store: 64 lowercase hex digits, nothing else.
    const bool digest = entry.sha256.size() == 64 &&
                        entry.sha256.find_first_not_of("0123456789abcdef") == std::string::npos;
    if (!item.is_object() || !safe_path || size == item.end() || !size->is_number_unsigned() ||
        mode.empty() || mode.size() > 7 ||
        mode.find_first_not_of("01234567") != std::string::npos ||
        (entry.link_target.empty() && !digest)) {
      throw Error("a snapshot manifest entry is malformed: " + item.dump().substr(0, 200));
    }
    entry.size = size->get<std::uint64_t>();
    entry.mode = static_cast<std::uint32_t>(std::stoul(mode, nullptr, 8) & 07777);
    manifest.entries.push_back(std::move(entry));
  }
  refuse_entries_under_links(manifest);
  return manifest;
}

std::vector<std::string> restore_snapshot_objects(const Manifest& manifest,
                                                  const fs::path& objects_dir,
                                                  const fs::path& fallback) {
  std::vector<std::string> missing;
  for (const auto& entry : manifest.entries) {
    if (!entry.link_target.empty()) continue;
    const bool executable = is_executable(entry.mode);
    const fs::path object = object_path(objects_dir, entry.sha256, executable);
    if (object_intact(object, entry.size)) continue;
    const fs::path copy = fallback / entry.path;
    struct stat info {};
    bool restored = false;
    if (::lstat(copy.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        static_cast<std::uint64_t>(info.st_size) == entry.size) {
      std::error_code ec;
      fs::remove(object, ec);
      try {
        restored = store_object(copy, objects_dir, executable) == entry.sha256;
      } catch (const Error&) {
        restored = false;
      }
    }
    if (!restored) missing.push_back(entry.path);
  }
  return missing;
}

void materialize_snapshot(const Manifest& manifest, const fs::path& objects_dir,
                          const fs::path& project_root, const fs::path& destination) {
  make_directories(destination);
  std::string last_folder;
  std::set<std::string> links;  // restored so far: nothing is written under one
  for (const auto& entry : manifest.entries) {
    if (const std::string* link = link_above(links, entry.path)) {
      throw Error(fmt::format("cannot restore {}: it lies under the link {}", entry.path, *link));
    }
    const fs::path target = destination / entry.path;
    const std::string folder = target.parent_path().string();
    if (folder != last_folder) {
      make_directories(target.parent_path());
      last_folder = folder;
    }
    if (!entry.link_target.empty()) {
      if (::symlink(entry.link_target.c_str(), target.c_str()) != 0) {
        throw Error("cannot create " + target.string() + ": " + errno_text(errno));
      }
      links.insert(entry.path);
      continue;
    }
    link_entry(entry, objects_dir, project_root, target);
  }
}

bool adopt_prepared_tree(const Manifest& manifest, const std::string& hash,
                         const fs::path& trees_dir, const fs::path& objects_dir,
                         const fs::path& project_root, const fs::path& destination) {
  if (::rename((trees_dir / hash).c_str(), destination.c_str()) != 0) return false;
  for (const auto& entry : manifest.entries) {
    const fs::path target = destination / entry.path;
    if (!entry.link_target.empty()) continue;
    // Prepared files are hard links to store objects: a zero mtime and the right size show that
    // no run wrote through its own link since.
    if (object_intact(target, entry.size)) continue;
    std::error_code ec;
    fs::remove(target, ec);
    make_directories(target.parent_path());
    link_entry(entry, objects_dir, project_root, target);
  }
  return true;
}

void prepare_tree(const Manifest& manifest, const std::string& hash, const fs::path& trees_dir,
                  const fs::path& objects_dir, const fs::path& project_root) {
  std::error_code ec;
  if (fs::exists(trees_dir / hash, ec)) return;
  make_directories(trees_dir);
  for (const auto& old : fs::directory_iterator(trees_dir, ec)) {
    const std::string name = old.path().filename().string();
    if (name.size() == 64 && name != hash) fs::remove_all(old.path(), ec);
  }
  const fs::path building = trees_dir / fmt::format(".building-{}", ::getpid());
  fs::remove_all(building, ec);
  try {
    materialize_snapshot(manifest, objects_dir, project_root, building);
  } catch (const Error&) {
    fs::remove_all(building, ec);
    return;
  }
  if (::rename(building.c_str(), (trees_dir / hash).c_str()) != 0) fs::remove_all(building, ec);
}

}  // namespace mlw
