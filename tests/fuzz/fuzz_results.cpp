// ResultsFetch fed what a target sends back after a run (results.sh: the metrics, the sockets'
// names, the tar of outputs/): never loops, never writes outside the run's folder, bounded memory.
#include <filesystem>

#include "exec/results_fetch.hpp"
#include "fuzz_util.hpp"
#include "mlw/util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto root = mlw::fuzz::scratch() / "results";
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
  std::filesystem::create_directories(root / "run", ec);
  {
    mlw::ResultsFetch fetch(root / "run", "fuzz-host");
    const auto input = mlw::fuzz::text(data, size);
    // In uneven pieces, as a network delivers them.
    for (std::size_t at = 0, step = 1; at < input.size() && !fetch.failed();
         at += step, step = step * 3 % 997 + 1) {
      fetch.feed(input.substr(at, step));
    }
    std::vector<std::string> problems;
    fetch.finish(problems);
  }
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    if (entry.path().filename() != "run") __builtin_trap();  // written outside its folder
  }
  for (const auto& entry : std::filesystem::directory_iterator(root / "run")) {
    const auto name = entry.path().filename();
    if (name != "metrics.jsonl" && name != "outputs") __builtin_trap();
  }
  return 0;
}
