#pragma once

#include <cstddef>
#include <string>

namespace mlw {

/// `bytes` random bytes from the kernel (getrandom), as lowercase hex: tokens and secrets.
/// Throws mlw::Error naming `what` when none can be read.
std::string random_hex(std::size_t bytes, const std::string& what);

}  // namespace mlw
