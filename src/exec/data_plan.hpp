#pragma once
// How a data push plans a version's folder on a store (exec/data_push.cpp): the version's
// objects, and whether its folder is made whole or from another version's.

#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mlw/data/dataset.hpp"

namespace mlw {

class DataCatalog;
struct DataVersion;

/// An object's name as a key: the file's hash, and whether it is executable (".x"); ordered as
/// the names are.
using ObjectKey = std::pair<std::string_view, bool>;

/// The key of the object that holds a file's content.
ObjectKey object_key(const DataEntry& entry);

/// The objects of a version, each once (the first file that holds it), in name order: eight
/// bytes per object, where a map of names held 150 (a push of 300,000 files took 311 MB).
class Objects {
 public:
  /// The objects of the manifest's files (it outlives this).
  explicit Objects(const DataManifest& manifest);
  /// How many there are.
  std::size_t size() const { return m_entries.size(); }
  /// The file that holds the i-th object.
  const DataEntry& operator[](std::size_t i) const { return *m_entries[i]; }
  /// The file that holds the object named `name`, or nullptr.
  const DataEntry* find(std::string_view name) const;
  /// The file that holds the object of `key`, or nullptr.
  const DataEntry* find(const ObjectKey& key) const;

 private:
  std::vector<const DataEntry*> m_entries;
};

/// How a version's tree is made: whole, or from a base version's tree that the store holds
/// (what is gone removed, what is new or changed sent): O(changes) entries on the wire.
struct TreePlan {
  std::string base;                       ///< the base version's id; empty: whole
  std::vector<const DataEntry*> entries;  ///< sent, in path order
  std::set<std::string> made;             ///< folders the base's tree already has
  std::string gone;                       ///< paths to remove, each ended by NUL
  std::string gone_dirs;                  ///< folders to remove, deepest first, each ended by NUL
  std::vector<const DataEntry*> left;     ///< the base's files gone or changed, in path order
};

/// Every entry of the manifest sent: the folder made whole.
TreePlan whole_tree(const DataManifest& manifest);

/// The version to make a tree from: the newest other version of the data set before it (else
/// after it); empty where it has none.
std::string base_candidate(const DataCatalog* catalog, const DataVersion& version);

/// The tree plan of a push: derived from `base_id`'s tree where the store holds it whole and the
/// two versions' folders agree, else whole; `base` is that version's manifest (kept for the
/// objects it holds).
TreePlan plan_tree(const DataVersion& version, const DataManifest& manifest,
                   const DataCatalog* catalog, const std::string& base_id, bool base_ready,
                   DataManifest& base);

/// The objects a push asks the store about: all of the version's, or where its folder is made
/// from the base's (which the store holds whole), those of the files sent that the base lacks:
/// one pass over the base, however large, for the few files that changed.
std::vector<const DataEntry*> objects_to_ask(const TreePlan& plan, const Objects& objects,
                                             const DataManifest& base);

/// The base's objects that a version made from it lacks: those of its files gone or changed
/// that no file of the version holds, each once, in name order.
std::vector<const DataEntry*> objects_dropped(const TreePlan& plan, const Objects& objects);

}  // namespace mlw
