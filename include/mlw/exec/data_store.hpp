#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mlw/context.hpp"
#include "mlw/data/catalog.hpp"
#include "mlw/remote/shell.hpp"
#include "mlw/util/error.hpp"

namespace mlw {

/// A machine's data store as `mlw data` and submit reach it (docs/data.md).
struct DataStore {
  Shell* shell = nullptr;        ///< the executor's open shell there, or `owned`
  std::unique_ptr<Shell> owned;  ///< a shell opened for the store alone
  std::string store;  ///< its folder there: the dataStore key (a leading ~/ is the login's home)
  /// The folder of run folders there ("~/.mlw/runs"); empty where a run's folder is its folder
  /// in the project's history (this machine's kinds).
  std::string runs;
  bool containers = false;  ///< runs see versions through read-only bind mounts
};

/// What the store said of one version: ready (its folder's path there), damaged (written to: it
/// is made again), or missing.
struct DataReadiness {
  std::string id;
  std::string state;  ///< "ready", "damaged" or "missing"
  std::string path;   ///< ready: the version's folder; damaged: the file written to
};

/// Asks the store (one round trip) whether each version is ready; with a `run_id`, marks them
/// used by that run (its folder `run_dir` there) when all are, so that gc keeps them.
std::vector<DataReadiness> data_ready(DataStore& store, const std::vector<std::string>& ids,
                                      const std::string& run_dir = "",
                                      const std::string& run_id = "");

/// A push whose files here changed (or went) since the version was added: another machine that
/// holds it may still give its files.
class DataSourceChanged : public Error {
 public:
  using Error::Error;
};

/// The contents of objects read from another machine's store (data.sh's `mlw_data_cat`), in
/// order, while a push sends them on: a thread runs the step there, at most 8 MiB held between.
class DataPull {
 public:
  /// Starts reading `names` (their sizes add up to `total`) from `from`.
  DataPull(DataStore& from, const std::vector<std::string>& names, std::uint64_t total);
  /// Stops the reading where it is and waits for its thread.
  ~DataPull();
  DataPull(const DataPull&) = delete;
  DataPull& operator=(const DataPull&) = delete;
  /// Up to `size` bytes of the contents, at least one; throws mlw::Error where the other store
  /// failed or ended before `total`.
  std::size_t read(char* buffer, std::size_t size);

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

/// What a push did.
struct DataPushResult {
  std::size_t objects_sent = 0;
  std::uint64_t bytes_sent = 0;
  std::string path;  ///< the version's folder there
};

/// Pushes a version: only the objects the store lacks (read from the folder it was added from,
/// each checked by its hash there), in one tar stream, then its folder of hard links — made from
/// the folder of another version of the data set that the store holds (`catalog` names them),
/// where there is one, so that only what changed is sent. Interrupted, what arrived is kept for
/// the next push.
/// With `from`, the contents come from that store (another machine's), not from the folder;
/// without, a file of the folder that changed since the version was added throws
/// DataSourceChanged.
DataPushResult push_data(Context& ctx, DataStore& store, const DataVersion& version,
                         const DataManifest& manifest, const DataCatalog* catalog = nullptr,
                         DataStore* from = nullptr);

/// One line of a store step's answer: its first word, the id, and the rest.
struct DataLine {
  std::string word;
  std::string id;
  std::string rest;
};

/// Runs one of data.sh's steps (`mlw_data_verify`, `mlw_data_rm`, `mlw_data_gc`,
/// `mlw_data_du`) with `words` after the store, and returns its lines; throws mlw::Error with
/// the target's words when it fails (but for the codes in `allowed`).
std::vector<DataLine> data_step(DataStore& store, const std::string& step,
                                const std::vector<std::string>& words,
                                const std::vector<int>& allowed = {});

}  // namespace mlw
