// Random tokens (the dashboard's, Jupyter's for `mlw notebook start`).

#include "mlw/util/random.hpp"

#include <fmt/format.h>
#include <sys/random.h>

#include "mlw/util/error.hpp"

namespace mlw {

std::string random_hex(std::size_t bytes, const std::string& what) {
  std::string raw(bytes, '\0');
  std::size_t got = 0;
  while (got < bytes) {
    const ssize_t n = ::getrandom(raw.data() + got, bytes - got, 0);
    if (n <= 0) throw Error("cannot read random bytes for " + what);
    got += static_cast<std::size_t>(n);
  }
  std::string hex;
  for (const unsigned char c : raw) hex += fmt::format("{:02x}", c);
  return hex;
}

}  // namespace mlw
