#pragma once
// Shared by the libFuzzer harnesses: a scratch folder for parsers that read or write files.

#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace mlw::fuzz {

/// One folder for the whole fuzzing process, removed at exit.
inline const std::filesystem::path& scratch() {
  static const std::filesystem::path path = [] {
    std::string pattern = "/tmp/mlw-fuzz-XXXXXX";
    std::filesystem::path made = ::mkdtemp(pattern.data());
    static struct Remover {
      std::filesystem::path path;
      ~Remover() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
      }
    } remover{made};
    return made;
  }();
  return path;
}

/// The input as text.
inline std::string_view text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace mlw::fuzz
