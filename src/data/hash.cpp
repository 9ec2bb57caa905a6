#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

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

/// A file (or link) found by the walk, with its stat (a file of a first add: taken once it is
/// open, inode 0 until then).
struct Found {
  DataEntry entry;
  Stat stat;
};

/// Reads the stat cache line by line, in its order (the manifest's: by path bytes), so that a
/// walk sorted the same way takes its hashes by one merge: no map of 300,000 names in memory.
class CacheReader {
 public:
  explicit CacheReader(const fs::path& path) : m_file(std::fopen(path.c_str(), "re")) {
    if (!m_file) return;
    std::string header;
    if (!next_line(header) || !starts_with(header, std::string(k_cache_header) + " ")) {
      close();
      return;
    }
    const auto began = parse_integer(header.substr(k_cache_header.size() + 1), 0, INT64_MAX);
    if (!began) close();
    m_began = began.value_or(0);
    advance();
  }
  ~CacheReader() { close(); }
  CacheReader(const CacheReader&) = delete;
  CacheReader& operator=(const CacheReader&) = delete;

  /// The cached hash of `path` when its stat is `stat` and it had not changed for 2 s when its
  /// hashing began; nullptr otherwise. Paths must be asked in ascending order.
  const std::string* hash_of(const std::string& path, const Stat& stat) {
    while (m_file && m_path < path) advance();
    if (!m_file || m_path != path || !(m_stat == stat)) return nullptr;
    if (m_stat.mtime_ns >= m_began - k_racy_ns || m_stat.ctime_ns >= m_began - k_racy_ns) {
      return nullptr;
    }
    return &m_sha256;
  }

 private:
  bool next_line(std::string& line) {
    char* data = nullptr;
    std::size_t capacity = 0;
    const ssize_t n = ::getline(&data, &capacity, m_file);
    if (n > 0) line.assign(data, static_cast<std::size_t>(n) - (data[n - 1] == '\n' ? 1 : 0));
    std::free(data);
    return n > 0;
  }

  /// The next well-formed line, or the end (m_file closed).
  void advance() {
    std::string line;
    while (next_line(line)) {
      const auto fields = split(line, ' ');
      if (fields.size() != 6 || fields[4].size() != 64) continue;
      const auto size = parse_integer(fields[0], 0, INT64_MAX);
      const auto mtime = parse_integer(fields[1], INT64_MIN, INT64_MAX);
      const auto ctime = parse_integer(fields[2], INT64_MIN, INT64_MAX);
      const auto inode = parse_integer(fields[3], 0, INT64_MAX);
      auto name = unescape_data_path(fields[5]);
      if (!size || !mtime || !ctime || !inode || !name) continue;
      m_stat = {static_cast<std::uint64_t>(*size), *mtime, *ctime,
                static_cast<std::uint64_t>(*inode)};
      m_sha256 = fields[4];
      m_path = std::move(*name);
      return;
    }
    close();
  }

  void close() {
    if (m_file) std::fclose(m_file);
    m_file = nullptr;
  }

  std::FILE* m_file;
  std::int64_t m_began = 0;
  std::string m_path;
  Stat m_stat;
  std::string m_sha256;
};

/// Writes the stat cache, a line at a time, to a temporary file renamed over it.
void save_cache(const fs::path& path, std::int64_t began_ns, const std::vector<Found*>& found) {
  try {
    make_directories(path.parent_path());
    const fs::path temporary = path.string() + ".tmp";
    std::FILE* out = std::fopen(temporary.c_str(), "we");
    if (!out) throw Error(temporary.string() + ": " + errno_text(errno));
    ::fchmod(::fileno(out), 0600);
    bool ok = std::fputs(fmt::format("{} {}\n", k_cache_header, began_ns).c_str(), out) >= 0;
    for (const Found* each : found) {
      const Found& f = *each;
      if (!f.entry.link_target.empty()) continue;
      ok = ok && std::fputs(fmt::format("{} {} {} {} {} {}\n", f.stat.size, f.stat.mtime_ns,
                                        f.stat.ctime_ns, f.stat.inode, f.entry.sha256,
                                        escape_data_path(f.entry.path))
                                .c_str(),
                            out) >= 0;
    }
    ok = std::fclose(out) == 0 && ok;
    if (!ok || ::rename(temporary.c_str(), path.c_str()) != 0) {
      ::unlink(temporary.c_str());
      throw Error(path.string() + ": " + errno_text(errno));
    }
  } catch (const Error& e) {
    spdlog::warn("the stat cache {} was not saved ({}): the next add reads every file again",
                 path.string(), e.what());
  }
}

/// Lists a folder's files, links and subfolders, on every core: each worker lists one folder at
/// a time and hands its subfolders to the others.
class Lister {
 public:
  /// `stat_files`: false where no stat cache is there to compare with (a first add): a file is
  /// stat'ed when it is hashed, open, not by its name here as well.
  Lister(fs::path root, HashReport& report, bool stat_files)
      : m_root(std::move(root)), m_report(report), m_stat_files(stat_files) {
    std::error_code ec;
    m_canonical_root = fs::weakly_canonical(m_root, ec);
  }

  /// Every entry found, unsorted, in one vector per folder (one vector of all would double,
  /// and copy, as it grew: 100 MB more at 300,000 files).
  std::vector<std::vector<Found>> run() {
    m_folders.push_back("");
    const unsigned workers = std::max(1U, std::thread::hardware_concurrency());
    std::vector<std::thread> threads;
    for (unsigned i = 1; i < workers; ++i) threads.emplace_back([this] { work(); });
    work();
    for (auto& thread : threads) thread.join();
    if (m_failure) std::rethrow_exception(m_failure);
    std::sort(m_report.warnings.begin(), m_report.warnings.end());
    return std::move(m_found);
  }

 private:
  void work() {
    while (true) {
      std::string folder;
      {
        std::unique_lock lock(m_mutex);
        m_wake.wait(lock, [&] { return !m_folders.empty() || m_busy == 0 || m_failure; });
        if (m_failure || m_folders.empty()) {
          m_wake.notify_all();
          return;
        }
        folder = std::move(m_folders.back());
        m_folders.pop_back();
        ++m_busy;
      }
      Listed listed;
      try {
        list(folder, listed);
      } catch (...) {
        const std::lock_guard lock(m_mutex);
        if (!m_failure) m_failure = std::current_exception();
      }
      const std::lock_guard lock(m_mutex);
      --m_busy;
      if (!listed.found.empty()) {
        listed.found.shrink_to_fit();
        m_found.push_back(std::move(listed.found));
      }
      for (auto& f : listed.folders) m_folders.push_back(std::move(f));
      for (auto& w : listed.warnings) m_report.warnings.push_back(std::move(w));
      m_wake.notify_all();
    }
  }

  struct Listed {
    std::vector<Found> found;
    std::vector<std::string> folders;
    std::vector<std::string> warnings;
  };

  void list(const std::string& prefix, Listed& out) const {
    const fs::path folder = prefix.empty() ? m_root : m_root / prefix;
    DIR* dir = ::opendir(folder.c_str());
    if (!dir)
      throw Error("cannot read folder " + printable(folder.string(), 4096) + ": " +
                  errno_text(errno));
    const std::unique_ptr<DIR, int (*)(DIR*)> closer(dir, ::closedir);
    while (const dirent* item = ::readdir(dir)) {
      const std::string name = item->d_name;
      if (name == "." || name == "..") continue;
      const std::string relative = prefix.empty() ? name : prefix + "/" + name;
      if (item->d_type == DT_DIR) {
        out.folders.push_back(relative);
        continue;
      }
      if (item->d_type == DT_REG && !m_stat_files) {
        out.found.emplace_back().entry.path = relative;
        continue;
      }
      struct stat info {};
      if (::fstatat(::dirfd(dir), item->d_name, &info, AT_SYMLINK_NOFOLLOW) != 0) {
        throw Error(
            fmt::format("{} went away while it was listed; add the folder again when it is "
                        "still",
                        printable(relative, 4096)));
      }
      Found found;
      found.entry.path = relative;
      if (S_ISDIR(info.st_mode)) {
        out.folders.push_back(relative);
        continue;
      } else if (S_ISREG(info.st_mode)) {
        found.entry.size = static_cast<std::uint64_t>(info.st_size);
        found.entry.mode = info.st_mode & 0777;
        found.stat = stat_of(info);
      } else if (S_ISLNK(info.st_mode)) {
        auto target = link_inside(m_canonical_root, prefix, folder / name);
        if (!target) {
          out.warnings.push_back("skipped link " + printable(relative, 4096) +
                                 ": it points outside the folder (or nowhere)");
          continue;
        }
        found.entry.link_target = std::move(*target);
        found.entry.mode = 0777;
      } else {
        out.warnings.push_back("skipped " + printable(relative, 4096) +
                               ": not a file, a folder or a link");
        continue;
      }
      out.found.push_back(std::move(found));
    }
  }

  fs::path m_root;
  fs::path m_canonical_root;
  HashReport& m_report;
  bool m_stat_files = true;
  std::mutex m_mutex;
  std::condition_variable m_wake;
  std::vector<std::string> m_folders;
  std::size_t m_busy = 0;
  std::exception_ptr m_failure;
  std::vector<std::vector<Found>> m_found;
};

/// The folder of the file a thread hashed last, kept open: the next file there is opened by its
/// name in it, not looked up again from the root (most of a first add's time was path lookups).
class OpenFolder {
 public:
  explicit OpenFolder(const fs::path& root) : m_root(root) {}
  OpenFolder(const OpenFolder&) = delete;
  OpenFolder& operator=(const OpenFolder&) = delete;
  ~OpenFolder() { close(); }

  /// The descriptor of `folder` (relative to the root, "" for the root); `relative` names the
  /// file wanted in what a failure says.
  int at(std::string_view folder, const std::string& relative) {
    if (m_fd >= 0 && folder == m_folder) return m_fd;
    close();
    const fs::path full = folder.empty() ? m_root : m_root / fs::path(std::string(folder));
    m_fd = ::open(full.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (m_fd < 0)
      throw Error("cannot read " + printable(relative, 4096) + ": " + errno_text(errno));
    m_folder = folder;
    return m_fd;
  }

 private:
  void close() {
    if (m_fd >= 0) ::close(m_fd);
    m_fd = -1;
  }

  const fs::path& m_root;
  std::string m_folder;
  int m_fd = -1;
};

/// Hashes `f`, the file `name` of the open folder `folder_fd`, refusing one that changes while
/// it is read (or since it was listed); one the listing did not stat is stat'ed open first.
void hash_file(int folder_fd, const char* name, Found& f) {
  const std::string& relative = f.entry.path;
  // Not blocked by a pipe put in a file's place since the listing (the stat then refuses it).
  const int fd = ::openat(folder_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) throw Error("cannot read " + printable(relative, 4096) + ": " + errno_text(errno));
  const std::unique_ptr<int, void (*)(int*)> closer(new int(fd), [](int* p) {
    ::close(*p);
    delete p;
  });
  auto changed = [&] {
    return Error(
        fmt::format("{} changed while it was hashed; add the folder again when it is "
                    "still (a data set is a version of files that do not change)",
                    printable(relative, 4096)));
  };
  if (f.stat.inode == 0) {
    struct stat before {};
    if (::fstat(fd, &before) != 0 || !S_ISREG(before.st_mode)) throw changed();
    f.stat = stat_of(before);
    f.entry.size = f.stat.size;
    f.entry.mode = before.st_mode & 0777;
  }
  // The stat after reading is compared with the one before (the listing's, or the one above):
  // the same inode, size and times, which a file replaced or written since then fails.
  const Stat& listed = f.stat;
  static thread_local const std::unique_ptr<char[]> buffer(new char[k_buffer]);
  Sha256 hash;
  std::uint64_t total = 0;
  // Read up to the listed size (no read more to see the end: a file that grew has another
  // size, and a rewritten one another mtime, in the stat after).
  while (total < listed.size) {
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
  f.entry.sha256 = hash.hex_digest();
}

/// Hashes the files `pending` on every core.
void hash_pending(const fs::path& root, const std::vector<Found*>& pending) {
  const std::size_t workers =
      std::min<std::size_t>(pending.size(), std::max(1U, std::thread::hardware_concurrency()));
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex failing;
  std::exception_ptr failure;
  auto work = [&] {
    OpenFolder folder(root);  // the pending files are in path order: mostly the last one's folder
    for (std::size_t k = next++; k < pending.size() && !stop; k = next++) {
      Found& f = *pending[k];
      try {
        const std::string& path = f.entry.path;
        const std::size_t slash = path.rfind('/');
        const bool top = slash == std::string::npos;
        const int fd =
            folder.at(top ? std::string_view() : std::string_view(path).substr(0, slash), path);
        hash_file(fd, path.c_str() + (top ? 0 : slash + 1), f);
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
}

}  // namespace

DataManifest hash_folder(const fs::path& root, const fs::path& stat_cache, std::int64_t now_ns,
                         HashReport& report) {
  std::error_code no_cache;
  std::vector<std::vector<Found>> folders =
      Lister(root, report, fs::exists(stat_cache, no_cache)).run();
  std::vector<Found*> found;
  for (auto& folder : folders) {
    for (Found& f : folder) found.push_back(&f);
  }
  std::sort(found.begin(), found.end(),
            [](const Found* a, const Found* b) { return a->entry.path < b->entry.path; });
  std::vector<Found*> pending;
  {
    CacheReader cache(stat_cache);
    for (Found* f : found) {
      if (!f->entry.link_target.empty()) continue;
      if (const std::string* hash = cache.hash_of(f->entry.path, f->stat)) {
        f->entry.sha256 = *hash;
      } else {
        pending.push_back(f);
      }
    }
  }
  hash_pending(root, pending);
  for (const Found* f : pending) {
    ++report.files_read;
    report.bytes_read += f->entry.size;
  }
  save_cache(stat_cache, now_ns, found);
  DataManifest manifest;
  manifest.entries.reserve(found.size());
  for (Found* f : found) manifest.entries.push_back(std::move(f->entry));
  found = {};
  folders = {};
  // The walk's records are freed in pieces the manifest's text (one large block, mapped anew)
  // cannot reuse: handed back, so that the peak is one of them, not both.
  ::malloc_trim(0);
  return manifest;
}

}  // namespace mlw
