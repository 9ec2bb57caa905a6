// run.json as found on disk (another mlw version, a hand edit, a half-written file).
#include <nlohmann/json.hpp>

#include "fuzz_util.hpp"
#include "mlw/history/record.hpp"
#include "mlw/util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto json = nlohmann::ordered_json::parse(mlw::fuzz::text(data, size), nullptr, false);
  if (json.is_discarded()) return 0;
  try {
    const mlw::RunRecord record = mlw::RunRecord::from_json(json);
    record.to_json().dump();
  } catch (const mlw::Error&) {
  }
  return 0;
}
