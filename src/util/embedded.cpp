// Lookup of the files compiled into the binary (cmake/Embed.cmake writes the tables).

#include "mlw/util/embedded.hpp"

#include <string>

#include "mlw/util/error.hpp"
#include "mlw/util/shell_quote.hpp"

namespace mlw {

std::string_view embedded_script(std::string_view path) {
  for (const EmbeddedFile& file : embedded_scripts()) {
    if (file.path == path) return file.contents;
  }
  throw Error("this build of mlw has no target script " + std::string(path));
}

std::string script_call(std::string_view path, const std::vector<std::string>& words) {
  return std::string(embedded_script(path)) + shell_join(words) + "\n";
}

std::string script_body(std::string_view path) {
  std::string_view text = embedded_script(path);
  while (text.starts_with('#')) {
    const auto end = text.find('\n');
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
  }
  return std::string(text);
}

}  // namespace mlw
