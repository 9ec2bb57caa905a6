// Jupyter's answer to GET /api/sessions as `mlw notebook kernel` reads it (api/notebook_session):
// any bytes, as an HTTP answer and as its body, never crash or throw.
#include "api/notebook_session.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(mlw::fuzz::text(data, size));
  if (const auto body = mlw::api::http_answer_body(input)) {
    (void)mlw::api::notebook_in_sessions(*body, "k1");
  }
  (void)mlw::api::notebook_in_sessions(input, "k1");
  return 0;
}
