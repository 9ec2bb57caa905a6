// ~/.ssh/config as users write it. Include is followed inside a scratch ~/.ssh only: an input
// that names a path with a slash in it is not run, so the fuzzer never reads the machine's own
// files (Include /*/* would read /proc/kmsg and wait for ever).
#include <algorithm>
#include <cctype>

#include "fuzz_util.hpp"
#include "mlw/remote/ssh_config.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"

namespace {

const mlw::SshConfigContext& sandbox() {
  static const mlw::SshConfigContext context = [] {
    const auto home = mlw::fuzz::scratch() / "home";
    std::filesystem::create_directories(home / ".ssh" / "conf.d");
    mlw::atomic_write_file(home / ".ssh" / "gpu.conf", "Host gpu\n  Port 2200\n  Include *.d\n");
    mlw::atomic_write_file(home / ".ssh" / "loop", "Include loop\n");
    return mlw::SshConfigContext{home / ".ssh", home, "me"};
  }();
  return context;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(mlw::fuzz::text(data, size));
  std::string lower = input;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower.find("include") != std::string::npos && input.find('/') != std::string::npos) return 0;
  for (const char* alias : {"gpu", "gpu-vm.example.com", "10.0.0.5", ""}) {
    try {
      mlw::read_ssh_config(input, alias, sandbox(), "config");
    } catch (const mlw::Error&) {
    }
  }
  return 0;
}
