// known_hosts lines (user and global files), host patterns and hashed names.
#include "fuzz_util.hpp"
#include "mlw/remote/known_hosts.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto input = mlw::fuzz::text(data, size);
  mlw::KnownHosts known;
  known.add(input, "known_hosts");
  for (const auto& entry : known.entries) {
    mlw::check_known_host(known, "gpu.example.com", 2222, entry.key_blob);
    if (mlw::check_known_host(known, "h", 22, entry.key_blob).verdict ==
            mlw::HostKeyVerdict::Known &&
        entry.key_blob.empty()) {
      __builtin_trap();  // an empty key can never be known
    }
  }
  mlw::known_key_types(known, "gpu.example.com", 22);
  mlw::known_host_matches(input.substr(0, 300), "gpu.example.com", 2222);
  return 0;
}
