// A "billion laughs" YAML file of about 1 KB (issue 45): nine levels of nine aliases each, 9^9
// values to a reader that walks it.
#pragma once

#include <string>

namespace mlw::test {

/// The bomb as mapping keys lol1…lol9 after `head` (e.g. "type: local\n").
inline std::string yaml_alias_bomb(const std::string& head) {
  std::string text = head + "lol1: &a1 [x, x, x, x, x, x, x, x, x]\n";
  for (int level = 2; level <= 9; ++level) {
    const std::string alias = "*a" + std::to_string(level - 1);
    text += "lol" + std::to_string(level) + ": &a" + std::to_string(level) + " [";
    for (int i = 0; i < 9; ++i) text += (i ? ", " : "") + alias;
    text += "]\n";
  }
  return text;
}

}  // namespace mlw::test
