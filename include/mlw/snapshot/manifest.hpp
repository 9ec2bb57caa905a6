#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mlw {

/// The file that marks a folder of runs' files that mlw wrote into a project (`history download
/// -d DIR`, a diagnostics zip's folder): a snapshot leaves such a folder out.
inline constexpr const char* k_download_marker = ".mlw-download";

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
  nlohmann::ordered_json to_json() const;
};

/// Where the content store keeps an object: `<objects_dir>/<2>/<sha256>`, `.x` for executables.
std::filesystem::path object_path(const std::filesystem::path& objects_dir,
                                  const std::string& sha256, bool executable);

/// The text of a link at `full` (in the folder `prefix` of a tree whose canonical root is
/// `canonical_root`), relative to its folder, where it resolves to something inside the tree;
/// none where it leaves the tree or points nowhere (snapshots and data sets skip such links).
std::optional<std::string> link_inside(const std::filesystem::path& canonical_root,
                                       const std::string& prefix,
                                       const std::filesystem::path& full);

/// True when any execute bit is set in `mode`.
bool is_executable(std::uint32_t mode);

/// Called while a snapshot reads new content (from several threads, one call at a time): files
/// read so far and bytes read so far.
using SnapshotProgress = std::function<void(std::size_t files, std::uint64_t bytes_read)>;

/// Builds the snapshot of the project at `root`: every file not excluded by `.amlignore`, nor
/// under `.git/`, `.mlw/` or `outputs/`. File contents are added to the content-addressed store
/// `objects_dir`; hashes of unchanged files come from the cache file `hash_cache`.
Manifest build_snapshot(const std::filesystem::path& root, const std::filesystem::path& objects_dir,
                        const std::filesystem::path& hash_cache,
                        const SnapshotProgress& progress = {});

/// Writes the manifest once per content (`<manifests_dir>/<hash>.json`) and links it to
/// `run_copy`, so that every run folder holds its manifest without rewriting identical ones.
void save_manifest(const Manifest& manifest, const std::string& hash,
                   const std::filesystem::path& manifests_dir,
                   const std::filesystem::path& run_copy);

/// Reads a manifest as Manifest::to_json writes it (a run folder's manifest.json); throws
/// mlw::Error on anything else.
Manifest manifest_from_json(const nlohmann::ordered_json& json);

/// Makes sure the store holds every file of `manifest` unchanged, storing again from
/// `fallback` (a run folder's snapshot/) a file whose object is gone or was written to, where
/// its content there still has the manifest's hash. Returns the paths it could not find.
std::vector<std::string> restore_snapshot_objects(const Manifest& manifest,
                                                  const std::filesystem::path& objects_dir,
                                                  const std::filesystem::path& fallback);

/// Makes the snapshot's tree under `destination` from the store, with hard links where it can
/// and copies where it cannot. An object missing from the store, or modified through a run's
/// hard link, is stored again from `project_root` first.
void materialize_snapshot(const Manifest& manifest, const std::filesystem::path& objects_dir,
                          const std::filesystem::path& project_root,
                          const std::filesystem::path& destination);

/// Moves a tree prepared for this snapshot (`<trees_dir>/<hash>`) to `destination` and repairs
/// any file written through a hard link since; false when no such tree is ready.
bool adopt_prepared_tree(const Manifest& manifest, const std::string& hash,
                         const std::filesystem::path& trees_dir,
                         const std::filesystem::path& objects_dir,
                         const std::filesystem::path& project_root,
                         const std::filesystem::path& destination);

/// Builds `<trees_dir>/<hash>` for the next run of an unchanged project (off the submit's
/// critical path) and removes trees of other snapshots. Failures only mean no tree is ready.
void prepare_tree(const Manifest& manifest, const std::string& hash,
                  const std::filesystem::path& trees_dir, const std::filesystem::path& objects_dir,
                  const std::filesystem::path& project_root);

}  // namespace mlw
