#pragma once

// A kind's own program for a thing every kind does its own way (src/kinds/KIND/NAME.sh).

#include <optional>
#include <string>
#include <string_view>

namespace mlw {

/// The path of kind `kind`'s program `name` (src/kinds/KIND/NAME.sh), if this build embeds one.
std::optional<std::string> kind_program(std::string_view kind, std::string_view name);

}  // namespace mlw
