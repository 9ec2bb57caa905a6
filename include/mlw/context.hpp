#pragma once

#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>

#include "mlw/config/project.hpp"
#include "mlw/config/user_config.hpp"
#include "mlw/output/output.hpp"
#include "mlw/util/clock.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/process.hpp"

namespace mlw {

class Connector;
class Executor;

/// The executors of the kinds of target: the kind table's (src/kinds/, set in main), or a fake
/// kind's in unit tests, so that api:: reaches no kind but through the Context.
class ExecutorSource {
 public:
  virtual ~ExecutorSource() = default;
  /// The executor of the kind named `type` (an alias too); throws mlw::Error for an unknown one.
  virtual std::unique_ptr<Executor> make(const std::string& type) = 0;
};

/// Everything a command needs from its surroundings; built once in main and passed down.
struct Context {
  std::optional<std::filesystem::path> project_dir;  ///< --project
  std::filesystem::path working_dir;                 ///< where mlw was started
  OutputFormat output_format = OutputFormat::Table;
  bool quiet = false;
  bool color = false;         ///< colours on stderr
  bool stdout_color = false;  ///< colours on stdout (-o jsonc on a terminal)
  bool stdin_is_terminal = false;
  bool stdout_is_terminal = false;
  bool stderr_is_terminal = false;
  std::ostream* out = nullptr;  ///< stdout: data
  std::ostream* err = nullptr;  ///< stderr: messages for people
  std::shared_ptr<Clock> clock;
  std::shared_ptr<ProcessRunner> processes;
  std::shared_ptr<Connector> connector;       ///< opens shells on targets and Docker engines
  std::shared_ptr<ExecutorSource> executors;  ///< runs, cancels and follows runs, by kind
  std::filesystem::path config_dir;           ///< the user's mlw config folder (secret store, keys)
  /// mlw's settings in effect (`mlw config`), key by key, with where each came from.
  std::map<std::string, ConfigValue> config;
  /// Which exit codes the command's errors take (exit_code_of): submit's inside a waiting
  /// submit.
  CommandCodes codes = CommandCodes::Plain;
  /// The exit code a successful command chose (submit: the script's).
  int exit_status = exit_code::k_success;

  /// The project (found once, from --project or the working folder).
  const Project& project();
  /// The executor of the kind `type` (through `executors`).
  std::unique_ptr<Executor> executor(const std::string& type);
  /// The result printer over `out`.
  Output output() const { return Output(*out, output_format, stdout_color); }

 private:
  std::optional<Project> m_project;
};

}  // namespace mlw
