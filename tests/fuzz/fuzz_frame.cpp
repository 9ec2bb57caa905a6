// What a login shell prints around mlw's commands: the frame passes only the command's bytes.
#include "fuzz_util.hpp"
#include "mlw/remote/frame.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto input = mlw::fuzz::text(data, size);
  const std::string marker = "mlw-frame-0123456789abcdef";
  mlw::FramedStream frame(marker);
  std::string passed;
  for (std::size_t at = 0; at < input.size(); at += 5) passed += frame.feed(input.substr(at, 5));
  const auto found = std::string(input).find(marker + "\n");
  if ((found == std::string::npos) != !frame.started()) __builtin_trap();
  if (found != std::string::npos && passed != input.substr(found + marker.size() + 1)) {
    __builtin_trap();
  }
  return 0;
}
