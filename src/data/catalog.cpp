#include "mlw/data/catalog.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/json_text.hpp"
#include "mlw/util/sha256.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

/// Holds an exclusive lock on a file while it lives.
class Locked {
 public:
  explicit Locked(const fs::path& path) {
    make_directories(path.parent_path());
    m_fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (m_fd < 0) throw Error("cannot lock " + path.string() + ": " + errno_text(errno));
    while (::flock(m_fd, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~Locked() { ::close(m_fd); }
  Locked(const Locked&) = delete;
  Locked& operator=(const Locked&) = delete;

 private:
  int m_fd = -1;
};

DataVersion version_from_json(const std::string& name, const nlohmann::ordered_json& item) {
  DataVersion v;
  v.name = name;
  v.number = item.value("version", 0);
  v.id = item.value("id", "");
  v.message = item.value("message", "");
  v.created_ms = item.value("created_ms", std::int64_t{0});
  v.source = text_from_json(item.value("source", ""));
  v.files = item.value("files", std::size_t{0});
  v.bytes = item.value("bytes", std::uint64_t{0});
  return v;
}

bool is_hex(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

DataCatalog::DataCatalog(fs::path state_dir) : m_root(std::move(state_dir) / "data") {}

fs::path DataCatalog::folder(const std::string& name) const {
  check_data_name(name);
  return m_root / name;
}

std::vector<std::string> DataCatalog::names() const {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& item : fs::directory_iterator(m_root, ec)) {
    if (item.is_directory() && fs::exists(item.path() / "versions.json")) {
      names.push_back(item.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<DataVersion> DataCatalog::versions(const std::string& name) const {
  const fs::path path = folder(name) / "versions.json";
  const auto text = read_file_if_exists(path);
  std::vector<DataVersion> out;
  if (!text) return out;
  const auto json = nlohmann::ordered_json::parse(*text, nullptr, false);
  if (!json.is_array()) throw Error(path.string() + ": not a list of versions; remove it");
  for (const auto& item : json) {
    if (item.is_object()) out.push_back(version_from_json(name, item));
  }
  return out;
}

DataVersion DataCatalog::resolve(const std::string& spec) const {
  const auto at = spec.find('@');
  const std::string name = spec.substr(0, at);
  const auto all = versions(name);
  if (all.empty()) {
    auto known = names();
    throw Error(fmt::format(
        "no data set \"{}\" in this project{}", printable(name),
        known.empty() ? "; add one with `mlw data add NAME PATH`" : did_you_mean(name, known)));
  }
  if (at == std::string::npos) return all.back();
  const std::string which = spec.substr(at + 1);
  std::vector<const DataVersion*> found;
  if (const auto number = parse_integer(which, 1, 1 << 30); number) {
    for (const auto& v : all) {
      if (v.number == *number) found.push_back(&v);
    }
  }
  // An id's first digits may all be decimal ones (`@4494794`): no such version, then an id.
  if (found.empty() && which.size() >= 4 && is_hex(which)) {
    for (const auto& v : all) {
      if (starts_with(v.id, which)) found.push_back(&v);
    }
  }
  if (found.size() == 1) return *found.front();
  throw Error(
      fmt::format("data set {} has no version \"{}\"{} (its versions: @1 to @{}; `mlw "
                  "data list {}`)",
                  name, printable(which), found.size() > 1 ? " alone: name more digits" : "",
                  all.back().number, name));
}

DataManifest DataCatalog::manifest(const DataVersion& version) const {
  const fs::path path = folder(version.name) / "manifests" / version.id;
  const auto text = read_file_if_exists(path);
  if (!text) {
    throw Error(fmt::format("{}: its manifest {} is gone; add the folder again", version.label(),
                            path.string()));
  }
  if (sha256_hex(*text) != version.id) {
    throw Error(
        fmt::format("{}: its manifest {} was changed (its hash is not the version's id); "
                    "add the folder again",
                    version.label(), path.string()));
  }
  return read_data_manifest(*text, path.string());
}

DataVersion DataCatalog::add(const std::string& name, const DataManifest& manifest,
                             const std::string& source, const std::string& message,
                             std::int64_t now_ms, bool& added) {
  const fs::path dir = folder(name);
  const Locked lock(dir / ".lock");
  auto all = versions(name);
  const std::string text = manifest.text();
  const std::string id = sha256_hex(text);
  added = all.empty() || all.back().id != id;
  if (!added) return all.back();
  make_directories(dir / "manifests");
  if (!fs::exists(dir / "manifests" / id)) atomic_write_file(dir / "manifests" / id, text, 0644);
  DataVersion v;
  v.name = name;
  v.number = all.empty() ? 1 : all.back().number + 1;
  v.id = id;
  v.message = message;
  v.created_ms = now_ms;
  v.source = source;
  v.files = manifest.files();
  v.bytes = manifest.bytes();
  all.push_back(v);
  write_versions(name, all);
  return v;
}

void DataCatalog::write_versions(const std::string& name,
                                 const std::vector<DataVersion>& all) const {
  nlohmann::ordered_json json = nlohmann::ordered_json::array();
  for (const auto& v : all) {
    json.push_back({{"version", v.number},
                    {"id", v.id},
                    {"message", v.message},
                    {"created_ms", v.created_ms},
                    {"source", json_safe_text(v.source)},
                    {"files", v.files},
                    {"bytes", v.bytes}});
  }
  make_json_safe(json);
  atomic_write_file(folder(name) / "versions.json", json.dump(2) + "\n");
}

void DataCatalog::forget(const DataVersion& version) {
  const fs::path dir = folder(version.name);
  const Locked lock(dir / ".lock");
  auto all = versions(version.name);
  std::erase_if(all, [&](const DataVersion& v) { return v.number == version.number; });
  if (all.empty()) {
    fs::remove(dir / "versions.json");
  } else {
    write_versions(version.name, all);
  }
}

fs::path DataCatalog::stat_cache(const std::string& name) const {
  return folder(name) / "stat-cache";
}

void DataCatalog::note_target(const std::string& id, const std::string& target, bool holds) {
  const fs::path path = m_root / "held.json";
  const Locked lock(m_root / ".held.lock");
  auto json =
      nlohmann::ordered_json::parse(read_file_if_exists(path).value_or("{}"), nullptr, false);
  if (!json.is_object()) json = nlohmann::ordered_json::object();
  auto& ids = json[target];
  if (!ids.is_array()) ids = nlohmann::ordered_json::array();
  std::set<std::string> set;
  for (const auto& item : ids) {
    if (item.is_string()) set.insert(item.get<std::string>());
  }
  if (holds) {
    set.insert(id);
  } else {
    set.erase(id);
  }
  ids = nlohmann::ordered_json(std::vector<std::string>(set.begin(), set.end()));
  atomic_write_file(path, json.dump(2) + "\n");
}

std::vector<std::string> DataCatalog::holders(const std::string& id) const {
  const auto json = nlohmann::ordered_json::parse(
      read_file_if_exists(m_root / "held.json").value_or("{}"), nullptr, false);
  std::vector<std::string> out;
  if (!json.is_object()) return out;
  for (const auto& [target, ids] : json.items()) {
    if (ids.is_array() && std::find(ids.begin(), ids.end(), id) != ids.end()) {
      out.push_back(target);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

DataRequest parse_data_request(const std::string& text) {
  DataRequest request;
  const auto colon = text.find(':');
  request.spec = text.substr(0, colon);
  if (colon != std::string::npos) {
    request.mount = text.substr(colon + 1);
    const bool ok = starts_with(request.mount, "/") && request.mount.size() > 1 &&
                    request.mount.find("/../") == std::string::npos &&
                    !request.mount.ends_with("/..") &&
                    request.mount.find(',') == std::string::npos &&
                    request.mount.find(':') == std::string::npos;
    if (!ok) {
      throw UsageError(
          fmt::format("--data {}: the mount point must be an absolute path in the "
                      "container, e.g. {}:/data",
                      printable(text), request.spec));
    }
  }
  check_data_name(request.spec.substr(0, request.spec.find('@')));
  return request;
}

}  // namespace mlw
