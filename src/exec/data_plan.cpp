#include "data_plan.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

#include "mlw/data/catalog.hpp"

namespace mlw {

ObjectKey object_key(const DataEntry& entry) {
  return {entry.sha256, (entry.mode & 0111) != 0};
}

namespace {

bool less(const DataEntry* a, const DataEntry* b) {
  return object_key(*a) < object_key(*b);
}

}  // namespace

Objects::Objects(const DataManifest& manifest) {
  // Sorted by the name's first eight bytes as a number (big-endian: as memcmp orders them),
  // then the name, then the file's place in the manifest: of the files that hold an object,
  // the first is kept.
  struct Key {
    std::uint64_t prefix;
    const DataEntry* entry;
  };
  std::vector<Key> keys;
  keys.reserve(manifest.entries.size());
  for (const auto& entry : manifest.entries) {
    if (!entry.link_target.empty()) continue;
    std::uint64_t prefix = 0;
    for (std::size_t i = 0; i < 8 && i < entry.sha256.size(); ++i) {
      prefix |= std::uint64_t{static_cast<unsigned char>(entry.sha256[i])} << (56 - 8 * i);
    }
    keys.push_back({prefix, &entry});
  }
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    if (a.prefix != b.prefix) return a.prefix < b.prefix;
    if (object_key(*a.entry) != object_key(*b.entry)) return less(a.entry, b.entry);
    return a.entry < b.entry;
  });
  m_entries.reserve(keys.size());
  for (const Key& key : keys) {
    if (m_entries.empty() || less(m_entries.back(), key.entry)) m_entries.push_back(key.entry);
  }
}

const DataEntry* Objects::find(std::string_view name) const {
  const bool exec = name.size() == 66 && name.substr(64) == ".x";
  if (name.size() != 64 && !exec) return nullptr;
  return find(ObjectKey(name.substr(0, 64), exec));
}

const DataEntry* Objects::find(const ObjectKey& key) const {
  const auto at = std::lower_bound(
      m_entries.begin(), m_entries.end(), key,
      [](const DataEntry* e, const ObjectKey& wanted) { return object_key(*e) < wanted; });
  if (at == m_entries.end() || object_key(**at) != key) return nullptr;
  return *at;
}

namespace {

std::set<std::string> folders_of(const DataManifest& manifest) {
  std::set<std::string> dirs;
  // Sorted by path: the files of one folder come together, and its folders are taken once.
  std::string_view last;
  for (const auto& entry : manifest.entries) {
    const std::string_view path = entry.path;
    const auto parent = path.rfind('/');
    if (parent == std::string_view::npos || path.substr(0, parent) == last) continue;
    last = path.substr(0, parent);
    for (auto slash = path.find('/'); slash <= parent; slash = path.find('/', slash + 1)) {
      dirs.emplace(path.substr(0, slash));
    }
  }
  return dirs;
}

/// The plan that starts from `base`'s tree; nullopt where a path is a folder in one version and
/// a file or link in the other (a whole tree is simpler than unmaking one).
std::optional<TreePlan> derived_tree(const DataManifest& manifest, const std::string& base_id,
                                     const DataManifest& base) {
  const auto dirs = folders_of(manifest);
  const auto base_dirs = folders_of(base);
  for (const auto& entry : manifest.entries) {
    if (base_dirs.count(entry.path)) return std::nullopt;
  }
  for (const auto& entry : base.entries) {
    if (dirs.count(entry.path)) return std::nullopt;
  }
  TreePlan plan;
  plan.base = base_id;
  auto a = base.entries.begin();
  auto b = manifest.entries.begin();
  // The same object (its name: the hash, ".x" where executable) or the same link.
  const auto same = [](const DataEntry& x, const DataEntry& y) {
    return x.link_target == y.link_target &&
           (!x.link_target.empty() || object_key(x) == object_key(y));
  };
  while (a != base.entries.end() || b != manifest.entries.end()) {
    if (b == manifest.entries.end() || (a != base.entries.end() && a->path < b->path)) {
      plan.gone.append(a->path).append(1, '\0');
      plan.left.push_back(&*a++);
    } else if (a == base.entries.end() || b->path < a->path) {
      plan.entries.push_back(&*b++);
    } else {
      if (!same(*a, *b)) {
        plan.gone.append(a->path).append(1, '\0');
        plan.left.push_back(&*a);
        plan.entries.push_back(&*b);
      }
      ++a;
      ++b;
    }
  }
  std::vector<std::string> emptied;
  for (const auto& dir : base_dirs) {
    if (dirs.count(dir)) {
      plan.made.insert(dir);
    } else {
      emptied.push_back(dir);
    }
  }
  // Deepest first: a folder after the folders inside it.
  std::sort(emptied.begin(), emptied.end(), std::greater<>());
  for (const auto& dir : emptied) plan.gone_dirs.append(dir).append(1, '\0');
  return plan;
}

}  // namespace

TreePlan whole_tree(const DataManifest& manifest) {
  TreePlan plan;
  for (const auto& entry : manifest.entries) plan.entries.push_back(&entry);
  return plan;
}

std::string base_candidate(const DataCatalog* catalog, const DataVersion& version) {
  if (!catalog) return {};
  std::string before;
  std::string after;
  for (const auto& other : catalog->versions(version.name)) {
    if (other.id == version.id) continue;
    (other.number < version.number ? before : after) = other.id;
  }
  return before.empty() ? after : before;
}

std::vector<const DataEntry*> objects_to_ask(const TreePlan& plan, const Objects& objects,
                                             const DataManifest& base) {
  std::vector<const DataEntry*> asking;
  if (plan.base.empty()) {
    for (std::size_t i = 0; i < objects.size(); ++i) asking.push_back(&objects[i]);
    return asking;
  }
  std::vector<ObjectKey> sent;
  for (const DataEntry* entry : plan.entries) {
    if (entry->link_target.empty()) sent.push_back(object_key(*entry));
  }
  std::sort(sent.begin(), sent.end());
  sent.erase(std::unique(sent.begin(), sent.end()), sent.end());
  std::vector<bool> held(sent.size(), false);
  for (const auto& entry : base.entries) {
    if (!entry.link_target.empty()) continue;
    const auto at = std::lower_bound(sent.begin(), sent.end(), object_key(entry));
    if (at != sent.end() && *at == object_key(entry))
      held[static_cast<std::size_t>(at - sent.begin())] = true;
  }
  for (std::size_t i = 0; i < sent.size(); ++i) {
    if (held[i]) continue;
    if (const DataEntry* found = objects.find(sent[i])) asking.push_back(found);
  }
  return asking;  // in the objects' order (sent's)
}

std::vector<const DataEntry*> objects_dropped(const TreePlan& plan, const Objects& objects) {
  std::vector<const DataEntry*> dropped;
  for (const DataEntry* entry : plan.left) {
    if (entry->link_target.empty() && !objects.find(object_key(*entry))) {
      dropped.push_back(entry);
    }
  }
  std::sort(dropped.begin(), dropped.end(), less);
  dropped.erase(std::unique(dropped.begin(), dropped.end(),
                            [](const DataEntry* a, const DataEntry* b) {
                              return object_key(*a) == object_key(*b);
                            }),
                dropped.end());
  return dropped;
}

TreePlan plan_tree(const DataVersion& version, const DataManifest& manifest,
                   const DataCatalog* catalog, const std::string& base_id, bool base_ready,
                   DataManifest& base) {
  if (base_ready) {
    for (const auto& other : catalog->versions(version.name)) {
      if (other.id != base_id) continue;
      base = catalog->manifest(other);
      if (auto derived = derived_tree(manifest, base_id, base)) return std::move(*derived);
    }
  }
  base = DataManifest();
  return whole_tree(manifest);
}

}  // namespace mlw
