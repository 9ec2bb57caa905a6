#pragma once

// Which notebook a kernel serves, asked of the Jupyter that `mlw notebook start` started.

#include <filesystem>
#include <optional>
#include <string>

namespace mlw::api {

/// The notebook (its path in the project) whose session holds the kernel of `connection_file`
/// (Jupyter names it kernel-ID.json), asked of Jupyter's sessions API on 127.0.0.1 at
/// $MLW_NOTEBOOK_PORT with $JUPYTER_TOKEN (both set by `mlw notebook start`); "" when there is
/// no such Jupyter, it does not answer within 2 s, or has no such session yet.
std::string notebook_of_kernel(const std::filesystem::path& connection_file);

/// A TCP socket connected to 127.0.0.1:`port` here (close-on-exec), or -1 with errno set.
int connect_loopback(int port);

/// The body of an HTTP answer whose status is 200 (nullopt for any other answer).
std::optional<std::string> http_answer_body(const std::string& answer);

/// The path of the session whose kernel is `kernel_id` in Jupyter's /api/sessions answer `body`
/// ("" when there is none, or the answer is not a list of sessions).
std::string notebook_in_sessions(const std::string& body, const std::string& kernel_id);

}  // namespace mlw::api
