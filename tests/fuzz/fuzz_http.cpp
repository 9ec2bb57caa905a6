// The Docker Engine's HTTP answers (status line, headers, chunked bodies).
#include "fuzz_util.hpp"
#include "mlw/remote/docker_engine.hpp"
#include "mlw/util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::size_t body = 0;
  mlw::HttpResponseReader reader([&](std::string_view chunk) { body += chunk.size(); });
  const auto input = mlw::fuzz::text(data, size);
  try {
    for (std::size_t at = 0; at < input.size() && !reader.complete(); at += 7) {
      reader.feed(input.substr(at, 7));
    }
  } catch (const mlw::Error&) {
  }
  if (body > size) __builtin_trap();  // more body than bytes sent
  return 0;
}
