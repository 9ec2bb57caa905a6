// A run folder's manifest.json as `experiment rerun` and `history diff` read it (another mlw
// version, a hand edit, a half-written file).
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "fuzz_util.hpp"
#include "mlw/snapshot/manifest.hpp"
#include "mlw/util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto json = nlohmann::ordered_json::parse(mlw::fuzz::text(data, size), nullptr, false);
  if (json.is_discarded()) return 0;
  try {
    const mlw::Manifest manifest = mlw::manifest_from_json(json);
    std::set<std::string> links;
    for (const auto& entry : manifest.entries) {
      if (!entry.link_target.empty()) links.insert(entry.path);
    }
    for (const auto& entry : manifest.entries) {
      // Nothing is restored through a link: no entry lies under a link entry (issue 45).
      for (auto slash = entry.path.find('/'); slash != std::string::npos;
           slash = entry.path.find('/', slash + 1)) {
        if (links.count(entry.path.substr(0, slash))) __builtin_trap();
      }
      // What is read back never climbs out of the snapshot.
      if (entry.path.empty() || entry.path[0] == '/' ||
          ("/" + entry.path + "/").find("/../") != std::string::npos ||
          (entry.link_target.empty() &&
           entry.sha256.find_first_not_of("0123456789abcdef") != std::string::npos)) {
        __builtin_trap();
      }
    }
    manifest.hash();
    manifest.to_json().dump();
  } catch (const mlw::Error&) {
  }
  return 0;
}
