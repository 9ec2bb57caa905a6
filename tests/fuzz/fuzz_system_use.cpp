// The sys/ samples of a run's metrics.jsonl, as a target's sampler wrote them, summed up for the
// record (per GPU mean, p95, peak memory; CPU; RSS) and described for history info.
#include "fuzz_util.hpp"
#include "mlw/history/system_use.hpp"
#include "mlw/util/fs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto file = mlw::fuzz::scratch() / "metrics.jsonl";
  mlw::atomic_write_file(file, std::string(mlw::fuzz::text(data, size)));
  const mlw::SystemUse use = mlw::read_system_use(file);
  const auto json = use.to_json();
  mlw::system_summary_metrics(use).dump();
  mlw::describe_system_use(json);
  return 0;
}
