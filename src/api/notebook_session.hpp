#pragma once

// Which notebook a kernel serves, asked of the Jupyter that `mlw notebook start` started.

#include <filesystem>
#include <string>

namespace mlw::api {

/// The notebook (its path in the project) whose session holds the kernel of `connection_file`
/// (Jupyter names it kernel-ID.json), asked of Jupyter's sessions API on 127.0.0.1 at
/// $MLW_NOTEBOOK_PORT with $JUPYTER_TOKEN (both set by `mlw notebook start`); "" when there is
/// no such Jupyter, it does not answer within 2 s, or has no such session yet.
std::string notebook_of_kernel(const std::filesystem::path& connection_file);

}  // namespace mlw::api
