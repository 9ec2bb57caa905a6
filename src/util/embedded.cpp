// Lookup of the files compiled into the binary (cmake/Embed.cmake writes the tables).

#include "mlw/util/embedded.hpp"

#include <string>

#include "mlw/util/error.hpp"

namespace mlw {

std::string_view embedded_script(std::string_view path) {
  for (const EmbeddedFile& file : embedded_scripts()) {
    if (file.path == path) return file.contents;
  }
  throw Error("this build of mlw has no target script " + std::string(path));
}

}  // namespace mlw
