#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlw {

/// One file (or link inside the folder) of a data set's version.
struct DataEntry {
  std::string path;         ///< relative, '/'-separated, byte for byte as on disk
  std::uint64_t size = 0;   ///< bytes (files)
  std::uint32_t mode = 0;   ///< permission bits (files)
  std::string sha256;       ///< content hash (files)
  std::string link_target;  ///< relative link text (links); empty for files
};

/// Every file of a version of a data set, sorted by path (docs/data.md, "The manifest").
struct DataManifest {
  std::vector<DataEntry> entries;
  /// The manifest's text: "mlw-data 1", then one line per entry — `F SHA256 SIZE MODE PATH` or
  /// `L TARGET PATH` — with '%', space, control bytes and bytes that are not UTF-8 as %XX.
  std::string text() const;
  /// The version's id: the sha256 of text().
  std::string id() const;
  /// Total bytes of the files.
  std::uint64_t bytes() const;
  /// How many regular files.
  std::size_t files() const;
};

/// `text` as the manifest writes a path: '%', space, control bytes and bytes outside UTF-8 as %XX.
std::string escape_data_path(std::string_view text);

/// escape_data_path undone; nullopt for a malformed %XX or a byte that should have been escaped.
std::optional<std::string> unescape_data_path(std::string_view text);

/// Reads a manifest's text; throws mlw::Error naming `origin` and the line on anything that is
/// not one (a bad field, an unsorted or repeated path, `..`, an absolute path).
DataManifest read_data_manifest(std::string_view text, const std::string& origin);

/// The name of the object that holds a file's content in a store (sha256, `.x` if executable).
std::string data_object_name(const DataEntry& entry);

/// What differs between two versions: paths added, removed, and changed (content or mode).
struct DataDiff {
  std::vector<std::string> added;
  std::vector<std::string> removed;
  std::vector<std::string> changed;
};

/// Compares two manifests by path.
DataDiff diff_data(const DataManifest& before, const DataManifest& after);

/// How a folder was hashed: files read and bytes read (the others came from the stat cache),
/// and what was skipped.
struct HashReport {
  std::size_t files_read = 0;
  std::uint64_t bytes_read = 0;
  std::vector<std::string> warnings;  ///< links leaving the folder, special files: skipped
};

/// Hashes every file under `root` on every core; a file whose size, mtime, ctime and inode match
/// `stat_cache` (and changed at least 2 s before `now_ns` and the cache was written: the racy
/// window) is not read. A file that changes while it is read is refused with its name. The
/// cache is rewritten afterwards.
DataManifest hash_folder(const std::filesystem::path& root, const std::filesystem::path& stat_cache,
                         std::int64_t now_ns, HashReport& report);

/// A data set's name: letters, digits, '_', '.', '-', not starting with '.' or '-', at most 64;
/// throws mlw::UsageError saying what is wrong.
void check_data_name(const std::string& name);

/// The environment variable that holds a data set's path in a run: MLW_DATA_ and the name in
/// upper case, other characters as '_'.
std::string data_variable(const std::string& name);

}  // namespace mlw
