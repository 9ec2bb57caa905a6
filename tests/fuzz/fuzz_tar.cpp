// The tar reader fed what a target sends back as outputs/: never loops, never writes outside
// its folder, bounded memory.
#include <filesystem>

#include "fuzz_util.hpp"
#include "mlw/remote/tar.hpp"
#include "mlw/util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto root = mlw::fuzz::scratch() / "tar";
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
  mlw::SafeTarReader reader(root / "in");
  const auto input = mlw::fuzz::text(data, size);
  // In uneven pieces, as a network delivers them.
  for (std::size_t at = 0, step = 1; at < input.size(); at += step, step = step * 3 % 997 + 1) {
    reader.feed(input.substr(at, step));
  }
  try {
    reader.finish();
  } catch (const mlw::Error&) {
  }
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    if (entry.path().filename() != "in") __builtin_trap();  // written outside its folder
  }
  return 0;
}
