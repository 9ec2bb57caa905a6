// A data set's manifest (.mlw/data/NAME/manifests/ID) as push, show, rerun and history diff read
// it: a hand edit, another mlw version, a cloned project's hostile file.
#include <string>

#include "fuzz_util.hpp"
#include "mlw/data/dataset.hpp"
#include "mlw/util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(mlw::fuzz::text(data, size));
  try {
    const mlw::DataManifest manifest = mlw::read_data_manifest(text, "fuzz");
    // One written form: what is read writes back to the same text, so its id names it.
    if (manifest.text() != text) __builtin_trap();
    for (std::size_t i = 0; i < manifest.entries.size(); ++i) {
      const auto& entry = manifest.entries[i];
      // Nothing a tree is made from climbs out of it, and the paths are sorted, each once.
      if (entry.path.empty() || entry.path[0] == '/' ||
          ("/" + entry.path + "/").find("/../") != std::string::npos ||
          ("/" + entry.path + "/").find("//") != std::string::npos) {
        __builtin_trap();
      }
      if (i > 0 && !(manifest.entries[i - 1].path < entry.path)) __builtin_trap();
      if (entry.link_target.empty() && mlw::data_object_name(entry).size() < 64) __builtin_trap();
    }
    const auto again = mlw::read_data_manifest(manifest.text(), "again");
    if (again.id() != manifest.id()) __builtin_trap();
  } catch (const mlw::Error&) {
  }
  return 0;
}
