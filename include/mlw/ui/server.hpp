#pragma once

#include <exception>
#include <string>
#include <vector>

#include "mlw/context.hpp"

namespace mlw::ui {

/// The options of `mlw history ui`.
struct UiOptions {
  std::string host = "127.0.0.1";  ///< the address to bind
  int port = -1;                   ///< -1: the first free of 8717..8726; 0: any free port
  bool open = false;               ///< open the URL in a browser (xdg-open)
};

/// What `mlw history ui` does in this program, defined once per binary (the same command line is
/// linked into both): in mlw it execs mlw-ui with the same arguments (src/ui/launch.cpp); in
/// mlw-ui it is serve_dashboard (src/ui/server.cpp).
void history_ui(Context& ctx, const UiOptions& options);

/// Serves the project's history as a dashboard until SIGINT/SIGTERM: prints its URL (with an
/// access token) on stdout. Throws mlw::Error when the address cannot be bound. Only in mlw-ui.
void serve_dashboard(Context& ctx, const UiOptions& options);

/// The HTTP status of an error a request handler raised, and its message: 400 for a malformed
/// parameter (UsageError), 404 for what does not exist (NotFoundError), 500 for the rest.
int http_status_of(std::exception_ptr error, std::string& message);

/// True for an address that binds every interface (0.0.0.0, ::).
bool is_wildcard(const std::string& host);

/// A host's allowed `Host` header values for a server bound to `host`:`port` (DNS rebinding):
/// true when `header` names this server.
bool host_header_allowed(const std::string& header, const std::string& bound_host, int port,
                         const std::string& machine_name);

/// The relative path of an output file as sent in a URL, checked: no empty, `.` or `..`
/// component, not absolute, no NUL. Returns the components, or an empty vector when refused.
std::vector<std::string> output_path_components(const std::string& path);

}  // namespace mlw::ui
