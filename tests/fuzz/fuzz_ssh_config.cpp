// ~/.ssh/config as users write it.
#include "fuzz_util.hpp"
#include "mlw/remote/ssh.hpp"
#include "mlw/util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(mlw::fuzz::text(data, size));
  for (const char* alias : {"gpu", "gpu-vm.example.com", "10.0.0.5", ""}) {
    try {
      mlw::read_ssh_config(input, alias);
    } catch (const mlw::Error&) {
    }
  }
  return 0;
}
