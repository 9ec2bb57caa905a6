// A notebook kernel's run output as `mlw notebook kernel` follows it (api/notebook_cells.hpp):
// what a target sends, split into lines (bounded) and the kernel's marked events made runs of the
// history: never crashes, writes only into the history's folder, keeps no line past the bound.
#include <filesystem>

#include "api/notebook_cells.hpp"
#include "fuzz_util.hpp"
#include "mlw/util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto root = mlw::fuzz::scratch() / "kernel";
  // One history for the whole process: opening one per input would be most of the time.
  static mlw::HistoryStore store = [] {
    std::filesystem::create_directories(root / "state");
    return mlw::HistoryStore(root / "state");
  }();
  {
    mlw::RunRecord kernel;
    kernel.run_id = "fuzz_1";
    kernel.project = "fuzz";
    kernel.target = "t";
    mlw::api::CellRecorder cells(store, kernel, root / "kernel-1.json");
    constexpr std::size_t limit = 4096;
    mlw::api::LineSplitter lines(limit);
    const auto input = mlw::fuzz::text(data, size);
    // In uneven pieces, as a network delivers them.
    for (std::size_t at = 0, step = 1; at < input.size(); at += step, step = step * 3 % 997 + 1) {
      const auto piece = input.substr(at, step);
      lines.feed(piece.data(), piece.size(), [&](const std::string& line) {
        if (line.size() > limit) __builtin_trap();  // a line past the bound
        if (line.rfind(mlw::api::k_kernel_event_mark, 0) != 0) return;
        try {
          cells.take(line.substr(mlw::api::k_kernel_event_mark.size()));
        } catch (const mlw::Error&) {
          // a record mlw refuses to write is an error of its own, not a crash
        }
      });
    }
  }
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    if (entry.path().filename() != "state") __builtin_trap();  // written outside the history
  }
  return 0;
}
