#include <unistd.h>

#include <fmt/format.h>

#include <functional>

#include "mlw/api/computetarget.hpp"
#include "mlw/config/targets.hpp"
#include "mlw/exec/place.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/remote/connect.hpp"
#include "mlw/remote/probe.hpp"
#include "mlw/remote/shell.hpp"
#include "mlw/util/net.hpp"
#include "mlw/util/strings.hpp"

// `mlw computetarget doctor`: one row per check, each with its fix.

namespace mlw::api {

namespace {

/// Resolves the endpoint and opens a TCP connection (closed at once): doctor's first two lines.
std::pair<std::string, std::string> check_reachable(const SshEndpoint& endpoint, bool& resolved) {
  const TcpConnection connection = tcp_connect(endpoint.host, endpoint.port, 10000);
  resolved = connection.resolve_error.empty();
  if (!resolved) return {connection.resolve_error, ""};
  if (connection.fd >= 0) {
    ::close(connection.fd);
    return {"", "port " + std::to_string(endpoint.port) + " answers"};
  }
  return {connection.any_address ? errno_text(connection.connect_errno) : "no address", ""};
}

}  // namespace

int doctor(Context& ctx, const std::string& name) {
  const Project& project = ctx.project();
  const ComputeConfig compute = load_compute(project, name);
  const TargetKind& kind = kind_of(compute.type);
  std::vector<CheckRow> rows;
  auto line = [&](const std::string& check, bool ok, const std::string& detail,
                  const std::string& fix = "") {
    rows.push_back({check, ok ? CheckResult::Ok : CheckResult::Fail, detail, fix});
  };
  std::unique_ptr<Shell> shell;
  if (kind.place->connects()) {
    const SshEndpoint endpoint = target_endpoint(compute);
    bool resolved = false;
    const auto [error, reached] = check_reachable(endpoint, resolved);
    line("address resolves", resolved, resolved ? endpoint.host : error,
         "fix address in aml_config/" + name + ".compute or ~/.ssh/config");
    if (resolved) {
      line(
          "reachable", error.empty(), error.empty() ? reached : error,
          "check that sshd runs there and that port " + std::to_string(endpoint.port) + " is open");
    }
    if (resolved && error.empty()) {
      try {
        ConnectRequest own_login;
        own_login.reuse = false;  // doctor checks the login itself
        auto ssh = ctx.connector->connect(ctx, name, compute, own_login);
        line("host key", true, ssh->fingerprint() + " is in ~/.ssh/known_hosts");
        line("login", true, compute.username + " with " + ssh->auth_method());
        shell = std::move(ssh);
      } catch (const Error& e) {
        const std::string message = e.what();
        const bool host_key = message.find(": host key:") != std::string::npos;
        line(host_key ? "host key" : "login", false, message,
             host_key ? "attach again with --accept-host-key after checking the fingerprint"
                      : "attach again with -w/--password-stdin or -k");
      }
    }
  } else {
    shell = kind.place->open(ctx, name, compute);
  }
  if (shell) {
    // The probe as a submit's asks it: for a kind with images, the engine is asked for one
    // (Perl, else curl, else the docker CLI), so that a replaced tool that never returns fails
    // here too, bounded by MLW_PROBE_TIMEOUT, instead of doctor saying all is well.
    try {
      const TargetFacts facts = probe_target(*shell, compute, probe_ask(compute),
                                             kind.runner.image ? "mlw_env:doctor" : "");
      kind.checks({compute, facts, shell->host(), name}, rows);
    } catch (const Error& e) {
      line("probe", false, e.what(),
           "check docker, perl and curl on the target's PATH (which -a docker perl curl there)");
    }
  }
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  int failed = 0;
  for (const CheckRow& row : rows) {
    const bool ok = row.result != CheckResult::Fail;
    if (!ok) ++failed;
    list.push_back({{"check", row.name},
                    {"result", row.result == CheckResult::Ok     ? "ok"
                               : row.result == CheckResult::Fail ? "fail"
                                                                 : "-"},
                    {"detail", row.detail},
                    {"fix", ok ? "" : row.fix}});
  }
  ctx.output().print_list(
      list, {{"check", "CHECK"}, {"result", "RESULT"}, {"detail", "DETAIL"}, {"fix", "FIX"}});
  return failed;
}

}  // namespace mlw::api
