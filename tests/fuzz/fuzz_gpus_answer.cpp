// A machine's answer to `computetarget gpus` (gpus_now.sh's lines, queue.sh's tickets with their
// samplers' "GPU BUSY UTIL MEM" use): any bytes give a view or one Error, never a crash.
#include "fuzz_util.hpp"
#include "mlw/api/computetarget.hpp"
#include "mlw/util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string answer(mlw::fuzz::text(data, size));
  try {
    const auto gpus = mlw::api::read_gpus_answer(
        answer, "host", [](const std::string& run) { return run.size() % 2 == 0; });
    gpus.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  } catch (const mlw::Error&) {
  }
  return 0;
}
