// A kind's own program, where this build embeds one (src/kinds/KIND/NAME.sh).

#include "kind_program.hpp"

#include <fmt/format.h>

#include "mlw/util/embedded.hpp"

namespace mlw {

std::optional<std::string> kind_program(std::string_view kind, std::string_view name) {
  const std::string path = fmt::format("src/kinds/{}/{}.sh", kind, name);
  for (const auto& file : embedded_scripts()) {
    if (file.path == path) return path;
  }
  return std::nullopt;
}

}  // namespace mlw
