#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mlw {

/// One entry of a snapshot: a regular file (with its content hash) or a symlink inside the
/// project.
struct ManifestEntry {
  std::string path;         ///< relative, '/'-separated
  std::uint64_t size = 0;   ///< bytes
  std::uint32_t mode = 0;   ///< permission bits
  std::string sha256;       ///< content hash (files)
  std::string link_target;  ///< relative link text (symlinks); empty for files
};

/// What a snapshot holds, sorted by path.
struct Manifest {
  std::vector<ManifestEntry> entries;
  std::vector<std::string> warnings;  ///< e.g. symlinks leaving the project, skipped
  /// A hash over every entry's path, mode and content: equal snapshots have equal hashes.
  std::string hash() const;
  /// Total bytes of the files.
  std::uint64_t total_bytes() const;
  /// The manifest as JSON (a list of {path, size, mode, sha256 | link}).
  nlohmann::json to_json() const;
};

/// Builds the snapshot of the project at `root`: every file not excluded by `.amlignore`, nor
/// under `.git/`, `.mlw/` or `outputs/`. File contents are added to the content-addressed store
/// `objects_dir`; hashes of unchanged files come from the cache file `hash_cache`.
Manifest build_snapshot(const std::filesystem::path& root, const std::filesystem::path& objects_dir,
                        const std::filesystem::path& hash_cache);

/// Makes the snapshot's tree under `destination` (which must not exist yet) from the store,
/// with hard links where it can and copies where it cannot.
void materialize_snapshot(const Manifest& manifest, const std::filesystem::path& objects_dir,
                          const std::filesystem::path& destination);

}  // namespace mlw
