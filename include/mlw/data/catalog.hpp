#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "mlw/data/dataset.hpp"

namespace mlw {

/// One recorded version of a data set (`NAME@NUMBER`, or `NAME@` and its id's first hex digits).
struct DataVersion {
  std::string name;
  int number = 0;
  std::string id;  ///< the manifest's sha256
  std::string message;
  std::int64_t created_ms = 0;
  std::string source;  ///< the folder it was added from, on this machine
  std::size_t files = 0;
  std::uint64_t bytes = 0;
  /// `NAME@NUMBER`.
  std::string label() const { return name + "@" + std::to_string(number); }
};

/// A project's data sets (`.mlw/data/NAME/`: versions.json, each version's manifest, the stat
/// cache), and which targets were last seen holding which versions.
class DataCatalog {
 public:
  /// The catalog under a project's `.mlw`.
  explicit DataCatalog(std::filesystem::path state_dir);
  /// The data sets' names, sorted.
  std::vector<std::string> names() const;
  /// A data set's versions, oldest first; none when it has none.
  std::vector<DataVersion> versions(const std::string& name) const;
  /// `NAME` (its newest version), `NAME@N` or `NAME@HEX` (an id's first 4 or more hex digits);
  /// throws mlw::Error naming what exists where it names nothing.
  DataVersion resolve(const std::string& spec) const;
  /// The version's manifest, checked against its id.
  DataManifest manifest(const DataVersion& version) const;
  /// Records `manifest` as the newest version of `name`, unless its newest already is it
  /// (`added` false). Atomic; concurrent adds take turns.
  DataVersion add(const std::string& name, const DataManifest& manifest, const std::string& source,
                  const std::string& message, std::int64_t now_ms, bool& added);
  /// Forgets a version (its manifest stays while another version or a run names it).
  void forget(const DataVersion& version);
  /// Where the stat cache of a data set is.
  std::filesystem::path stat_cache(const std::string& name) const;
  /// Notes that `target` holds (or no longer holds) the version with id `id`.
  void note_target(const std::string& id, const std::string& target, bool holds);
  /// The targets last seen holding the version with id `id`, sorted.
  std::vector<std::string> holders(const std::string& id) const;

 private:
  std::filesystem::path folder(const std::string& name) const;
  void write_versions(const std::string& name, const std::vector<DataVersion>& versions) const;

  std::filesystem::path m_root;  ///< .mlw/data
};

/// Splits `NAME[@V][:MOUNT]` (submit --data, the runconfig's data: list) into its parts.
struct DataRequest {
  std::string spec;   ///< NAME or NAME@V
  std::string mount;  ///< empty: /mlw/data/NAME
};

/// Parses `NAME[@V][:MOUNT]`; MOUNT must be an absolute path with no `..`.
DataRequest parse_data_request(const std::string& text);

}  // namespace mlw
