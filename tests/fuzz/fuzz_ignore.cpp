// .amlignore rules (first lines) against paths (after a line "--"): fast and never crashing.
#include "fuzz_util.hpp"
#include "mlw/snapshot/ignore.hpp"
#include "mlw/util/strings.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(mlw::fuzz::text(data, size));
  const auto split_at = input.find("\n--\n");
  mlw::IgnoreRules rules;
  rules.add_text(input.substr(0, split_at));
  rules.add_text(input.substr(0, split_at), "sub");
  const std::string paths = split_at == std::string::npos ? input : input.substr(split_at + 4);
  for (const auto& path : mlw::split(paths, '\n')) {
    rules.ignored(path, false);
    rules.ignored("sub/" + path, true);
    mlw::glob_match(input.substr(0, std::min<std::size_t>(split_at, 200)), path);
  }
  return 0;
}
