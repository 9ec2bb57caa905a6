#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "mlw/data/dataset.hpp"
#include "mlw/snapshot/manifest.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/sha256.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

/// The stat cache's first line, before the time its hashing began.
constexpr std::string_view k_cache_header = "mlw-data-cache 1";
/// A file changed this close to (or after) the time its hash was taken may have changed again
/// within the clock's resolution, keeping its times: it is read again (git's racy rule).
constexpr std::int64_t k_racy_ns = 2'000'000'000;
/// Bytes read at a time.
constexpr std::size_t k_buffer = 1 << 18;

struct Stat {
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  std::uint64_t inode = 0;
  bool operator==(const Stat&) const = default;
};

Stat stat_of(const struct stat& info) {
  return {static_cast<std::uint64_t>(info.st_size),
          info.st_mtim.tv_sec * 1'000'000'000LL + info.st_mtim.tv_nsec,
          info.st_ctim.tv_sec * 1'000'000'000LL + info.st_ctim.tv_nsec,
          static_cast<std::uint64_t>(info.st_ino)};
}

struct Cached {
  Stat stat;
  std::string sha256;
};

/// The cache's entries that may be trusted: those that had not changed for 2 s when their
/// hashing began.
std::unordered_map<std::string, Cached> load_cache(const fs::path& path) {
  std::unordered_map<std::string, Cached> cache;
  const auto text = read_file_if_exists(path);
  if (!text) return cache;
  const auto lines = split(*text, '\n');
  if (lines.empty() || !starts_with(lines[0], std::string(k_cache_header) + " ")) return cache;
  const auto began = parse_integer(lines[0].substr(k_cache_header.size() + 1), 0, INT64_MAX);
  if (!began) return cache;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const auto fields = split(lines[i], ' ');
    if (fields.size() != 6 || fields[4].size() != 64) continue;
    const auto size = parse_integer(fields[0], 0, INT64_MAX);
    const auto mtime = parse_integer(fields[1], INT64_MIN, INT64_MAX);
    const auto ctime = parse_integer(fields[2], INT64_MIN, INT64_MAX);
    const auto inode = parse_integer(fields[3], 0, INT64_MAX);
    const auto name = unescape_data_path(fields[5]);
    if (!size || !mtime || !ctime || !inode || !name) continue;
    if (*mtime >= *began - k_racy_ns || *ctime >= *began - k_racy_ns) continue;
    cache[*name] = {
        {static_cast<std::uint64_t>(*size), *mtime, *ctime, static_cast<std::uint64_t>(*inode)},
        fields[4]};
  }
  return cache;
}

void save_cache(const fs::path& path, std::int64_t began_ns, const DataManifest& manifest,
                const std::vector<Stat>& stats) {
  std::string text = fmt::format("{} {}\n", k_cache_header, began_ns);
  for (std::size_t i = 0; i < manifest.entries.size(); ++i) {
    const DataEntry& entry = manifest.entries[i];
    if (!entry.link_target.empty()) continue;
    const Stat& s = stats[i];
    text += fmt::format("{} {} {} {} {} {}\n", s.size, s.mtime_ns, s.ctime_ns, s.inode,
                        entry.sha256, escape_data_path(entry.path));
  }
  try {
    make_directories(path.parent_path());
    atomic_write_file(path, text, 0600);
  } catch (const Error& e) {
    spdlog::warn("the stat cache {} was not saved ({}): the next add reads every file again",
                 path.string(), e.what());
  }
}

/// Lists a folder's files, links and subfolders into a manifest (unsorted), with each file's
/// stat.
struct Lister {
  fs::path root;
  fs::path canonical_root;
  DataManifest manifest;
  std::vector<Stat> stats;
  HashReport& report;

  void link(const std::string& relative, const std::string& prefix, const fs::path& full) {
    auto target = link_inside(canonical_root, prefix, full);
    if (!target) {
      report.warnings.push_back("skipped link " + printable(relative, 4096) +
                                ": it points outside the folder (or nowhere)");
      return;
    }
    DataEntry entry;
    entry.path = relative;
    entry.link_target = std::move(*target);
    entry.mode = 0777;
    manifest.entries.push_back(std::move(entry));
    stats.emplace_back();
  }

  void walk(const fs::path& folder, const std::string& prefix) {
    DIR* dir = ::opendir(folder.c_str());
    if (!dir)
      throw Error("cannot read folder " + printable(folder.string(), 4096) + ": " +
                  errno_text(errno));
    const std::unique_ptr<DIR, int (*)(DIR*)> closer(dir, ::closedir);
    while (const dirent* item = ::readdir(dir)) {
      const std::string name = item->d_name;
      if (name == "." || name == "..") continue;
      const std::string relative = prefix.empty() ? name : prefix + "/" + name;
      struct stat info {};
      if (::fstatat(::dirfd(dir), item->d_name, &info, AT_SYMLINK_NOFOLLOW) != 0) {
        throw Error(
            fmt::format("{} went away while it was listed; add the folder again when it is "
                        "still",
                        printable(relative, 4096)));
      }
      if (S_ISDIR(info.st_mode)) {
        walk(folder / name, relative);
      } else if (S_ISREG(info.st_mode)) {
        DataEntry entry;
        entry.path = relative;
        entry.size = static_cast<std::uint64_t>(info.st_size);
        entry.mode = info.st_mode & 0777;
        manifest.entries.push_back(std::move(entry));
        stats.push_back(stat_of(info));
      } else if (S_ISLNK(info.st_mode)) {
        link(relative, prefix, folder / name);
      } else {
        report.warnings.push_back("skipped " + printable(relative, 4096) +
                                  ": not a file, a folder or a link");
      }
    }
  }
};

/// Hashes one file, refusing one that changes while it is read (or since it was listed).
std::string hash_file(const fs::path& full, const std::string& relative, const Stat& listed) {
  const int fd = ::open(full.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) throw Error("cannot read " + printable(relative, 4096) + ": " + errno_text(errno));
  const std::unique_ptr<int, void (*)(int*)> closer(new int(fd), [](int* f) {
    ::close(*f);
    delete f;
  });
  auto changed = [&] {
    return Error(
        fmt::format("{} changed while it was hashed; add the folder again when it is "
                    "still (a data set is a version of files that do not change)",
                    printable(relative, 4096)));
  };
  struct stat before {};
  if (::fstat(fd, &before) != 0 || !(stat_of(before) == listed)) throw changed();
  static thread_local const std::unique_ptr<char[]> buffer(new char[k_buffer]);
  Sha256 hash;
  std::uint64_t total = 0;
  while (true) {
    const ssize_t n = ::read(fd, buffer.get(), k_buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error("cannot read " + printable(relative, 4096) + ": " + errno_text(errno));
    if (n == 0) break;
    total += static_cast<std::uint64_t>(n);
    hash.update(std::string_view(buffer.get(), static_cast<std::size_t>(n)));
  }
  struct stat after {};
  if (::fstat(fd, &after) != 0 || !(stat_of(after) == listed) || total != listed.size) {
    throw changed();
  }
  return hash.hex_digest();
}

}  // namespace

DataManifest hash_folder(const fs::path& root, const fs::path& stat_cache, std::int64_t now_ns,
                         HashReport& report) {
  Lister lister{root, {}, {}, {}, report};
  std::error_code ec;
  lister.canonical_root = fs::weakly_canonical(root, ec);
  lister.walk(root, "");
  // Sorted by path bytes, their stats with them.
  std::vector<std::size_t> order(lister.manifest.entries.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return lister.manifest.entries[a].path < lister.manifest.entries[b].path;
  });
  DataManifest manifest;
  std::vector<Stat> stats;
  manifest.entries.reserve(order.size());
  stats.reserve(order.size());
  for (const std::size_t i : order) {
    manifest.entries.push_back(std::move(lister.manifest.entries[i]));
    stats.push_back(lister.stats[i]);
  }
  const auto cache = load_cache(stat_cache);
  std::vector<std::size_t> pending;
  for (std::size_t i = 0; i < manifest.entries.size(); ++i) {
    DataEntry& entry = manifest.entries[i];
    if (!entry.link_target.empty()) continue;
    const auto hit = cache.find(entry.path);
    if (hit != cache.end() && hit->second.stat == stats[i]) {
      entry.sha256 = hit->second.sha256;
    } else {
      pending.push_back(i);
    }
  }
  // Every core reads and hashes: one worker per core.
  const std::size_t workers =
      std::min<std::size_t>(pending.size(), std::max(1U, std::thread::hardware_concurrency()));
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex failing;
  std::exception_ptr failure;
  auto work = [&] {
    for (std::size_t k = next++; k < pending.size() && !stop; k = next++) {
      DataEntry& entry = manifest.entries[pending[k]];
      try {
        entry.sha256 = hash_file(root / entry.path, entry.path, stats[pending[k]]);
      } catch (...) {
        const std::lock_guard lock(failing);
        if (!failure) failure = std::current_exception();
        stop = true;
      }
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < workers; ++i) threads.emplace_back(work);
  if (!pending.empty()) work();
  for (auto& thread : threads) thread.join();
  if (failure) std::rethrow_exception(failure);
  for (const std::size_t i : pending) {
    ++report.files_read;
    report.bytes_read += manifest.entries[i].size;
  }
  save_cache(stat_cache, now_ns, manifest, stats);
  return manifest;
}

}  // namespace mlw
