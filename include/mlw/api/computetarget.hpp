#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "mlw/context.hpp"

namespace mlw::api {

/// `mlw computetarget attach TYPE -n NAME …`.
struct AttachRequest {
  std::string type;
  std::string name;
  std::optional<std::string> address;
  std::optional<std::string> username;
  std::optional<std::string> password;  ///< -w/--password (shows in the process list: warned)
  std::string password_option = "-w";   ///< the option the password came with, for the warning
  bool password_stdin = false;
  std::optional<std::string> private_key_file;
  std::optional<std::string> private_key_passphrase;  ///< stored in the secret store
  bool use_ssh_key = false;      ///< -k: make a key pair for the target and install it there
  bool accept_host_key = false;  ///< --accept-host-key: trust an unknown host key
  bool no_connect = false;       ///< --no-connect: write the files without connecting
  std::optional<std::string> base_image;
  std::optional<std::string> python_location;
  bool nvidia_docker = false;
  bool force = false;
  /// The options of keys a kind owns (OwnKey::attach_flag), by key name, as typed.
  std::map<std::string, std::string> own;
};

/// Writes aml_config/NAME.compute and NAME.runconfig (and the password into the secret store).
void attach(Context& ctx, const AttachRequest& request);
/// Prints the project's compute targets.
void list_targets(Context& ctx);
/// Prints one compute target's settings.
void show_target(Context& ctx, const std::string& name);
/// doctor's rows for target NAME: {check, result ("ok", "fail", "-"), detail, fix}.
nlohmann::ordered_json doctor_rows(Context& ctx, const std::string& name);
/// `mlw computetarget doctor -n NAME`: one line per check; returns the number that failed.
int doctor(Context& ctx, const std::string& name);
/// `mlw computetarget gpus -c NAME [--watch]`: every GPU of the target's machine, its use, the
/// run and user that lease it, other processes on it, how long it has been idle (docs/gpus.md).
void gpus(Context& ctx, const std::string& name, bool watch);
/// The same as a JSON object: {"target", "host", "gpus": [...]}, over an open shell.
nlohmann::ordered_json gpus_of(Context& ctx, const std::string& name);
/// Whether a run id names a run of this project's history.
using InHistory = std::function<bool(const std::string& run_id)>;
/// The "gpus" array of gpus_of from a machine's answer (gpus_now.sh, then queue.sh's tickets);
/// an answer that lists no GPU is an Error naming `host`. Reads at most 1 MiB of it.
nlohmann::ordered_json read_gpus_answer(const std::string& answer, const std::string& host,
                                        const InHistory& in_history);
/// Removes NAME.compute, NAME.runconfig and the stored password.
void detach(Context& ctx, const std::string& name);

}  // namespace mlw::api
