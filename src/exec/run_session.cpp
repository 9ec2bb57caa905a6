// The run life cycle in the supervisor: record transitions, the connection (made again when it
// drops), the environment image, the log, results brought back, and the end from the driver's
// typed RunEnding.

#include "mlw/exec/run_session.hpp"
#include "mlw/exec/build_output.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <cerrno>

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "mlw/history/collect.hpp"
#include "mlw/remote/tar.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/settings.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"
#include "results_fetch.hpp"

namespace mlw {

RunEnding exit_code_ending(const std::string& text, bool cancel_requested,
                           const std::string& source, const std::string& no_code) {
  RunEnding ending;
  const auto lines = split(trim(text), '\n');
  const std::string first = lines.empty() ? "" : lines[0];
  std::optional<int> code;
  if (const auto number = parse_integer(first, 0, 255)) code = static_cast<int>(*number);
  if (!code && !first.empty()) {
    const std::string said = starts_with(first, "bad-") ? first.substr(first.find(' ') + 1) : first;
    ending.problems.push_back(
        fmt::format("{} answered \"{}\" where the run's exit code (0-255) was expected", source,
                    printable(said)));
    code = exit_code::k_cannot_start;
  } else if (!code) {
    ending.problems.push_back(no_code);
    code = exit_code::k_cannot_start;
  }
  if (lines.size() > 1 && lines[1] == "oom") {
    code = 137;
    ending.oom = true;
    ending.problems.push_back("the container was killed: out of memory (its memory limit)");
  }
  ending.exit_code = code;
  ending.status = *code == 0         ? status::k_completed
                  : cancel_requested ? status::k_canceled
                                     : status::k_failed;
  return ending;
}

ShellResult ensure_image(Shell& shell, const RunPlan& plan, const TargetFacts& facts,
                         const EnvironmentSpec& env, const TargetRunPaths& paths,
                         const std::string& locks,
                         const std::function<void(std::string_view)>& on_output) {
  // The probe's answer holds only for the same tag (before the snapshot, wheels are unknown).
  if (facts.image_present == env.tag) return ShellResult{0, "", ""};
  const std::string script =
      "mlw_locks=" + shell_quote(locks) + "\nmlw_hash=" + shell_quote(env.hash) +
      "\nmlw_tag=" + shell_quote(env.tag) +
      "\nmlw_base=" + shell_quote(plan.compute.base_docker_image) +
      "\nmlw_docker=" + shell_quote(join(docker_words(plan.compute, facts), " ")) +
      "\nmlw_env_dir=" + shell_quote(paths.run_dir + "/env") + "\n" +
      std::string(embedded_script("src/exec/build.sh"));
  ShellStreams streams;
  streams.on_output = on_output;
  streams.on_errors = on_output;
  return shell.run(script, streams);
}

bool image_exists(Shell& shell, const ComputeConfig& compute, const TargetFacts& facts,
                  const std::string& tag) {
  std::vector<std::string> words = {"mlw_has_image", tag};
  for (auto& word : docker_words(compute, facts)) words.push_back(std::move(word));
  return shell.run(script_call("src/exec/engine_steps.sh", words)).exit_code == 0;
}

RunSession::RunSession(Context& context, RunPlan& run_plan, std::unique_ptr<Shell> shell,
                       TargetFacts target_facts, TargetRunPaths run_paths, int live_fd,
                       bool copy_log, const Place& place, Reconnect reconnect)
    : RunRecorder(context, run_plan),
      plan(run_plan),
      facts(std::move(target_facts)),
      paths(std::move(run_paths)),
      m_shell(std::move(shell)),
      m_place(place),
      m_reconnect(std::move(reconnect)),
      m_live_fd(live_fd),
      m_copy_log(copy_log) {}

RunSession::~RunSession() {
  if (m_local_log >= 0) ::close(m_local_log);
}

Shell& RunSession::shell() {
  if (!m_shell) m_shell = m_reconnect(m_own_login);
  return *m_shell;
}

void RunSession::leave_kept() {
  if (!m_shell || !m_shell->kept() || !m_reconnect) return;
  m_shell.reset();
  m_own_login = true;
}

std::string RunSession::host() const {
  return m_shell ? m_shell->host() : plan.compute.address;
}

void RunSession::say(std::string_view text) {
  while (m_live_fd >= 0 && !text.empty()) {
    const ssize_t n = ::write(m_live_fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close_live();
      return;
    }
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

void RunSession::close_live() {
  if (m_live_fd >= 0) ::close(m_live_fd);
  m_live_fd = -1;
}

void RunSession::append_log(std::string_view text) {
  if (m_local_log >= 0) write_fully(m_local_log, text);
  say(text);
}

void RunSession::note(std::string_view text) {
  std::string marked;
  for (const auto& line : split(std::string(text), '\n')) {
    if (!line.empty()) marked += k_live_note + line + "\n";
  }
  say(marked);
}

int RunSession::fail(int code, const std::string& problem) {
  RunRecorder::fail(code, problem);
  return 0;
}

ShellResult RunSession::run_reconnecting(const std::string& script, const ShellStreams& streams) {
  return run_reconnecting([&] { return script; }, streams);
}

ShellResult RunSession::run_reconnecting(const std::function<std::string()>& make_script,
                                         const ShellStreams& streams,
                                         std::optional<std::string_view> input) {
  using namespace std::chrono;
  const auto deadline = steady_clock::now() + seconds(setting("MLW_RECONNECT_TIMEOUT"));
  int delay_ms = 250;
  while (true) {
    try {
      Shell& target = shell();
      return input ? target.run_with_input(make_script(), *input)
                   : target.run(make_script(), streams);
    } catch (const Error& e) {
      if (!m_reconnect || steady_clock::now() > deadline) throw;
      std::fprintf(stderr, "mlw supervisor: %s; reconnecting\n", e.what());
      m_shell.reset();
      std::this_thread::sleep_for(milliseconds(delay_ms));
      delay_ms = std::min(delay_ms * 2, 5000);
    }
  }
}

int RunSession::run(RunDriver& driver, const EnvironmentSpec* env) {
  record = plan.record;
  if (m_copy_log) {
    m_local_log = ::open((plan.run_dir / "driver_log.txt").c_str(),
                         O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  }
  if (canceled()) {
    cancel_before_start();
    return 0;
  }
  std::string image;
  if (env) {
    image = env->tag;
    record.image_tag = image;
    if (build_environment(*env) != 0) return 0;
    // A cancel that came while the environment was built: the script never starts.
    if (canceled()) {
      cancel_before_start();
      return 0;
    }
  }
  if (!driver.start(*this, image)) return 0;
  driver.follow(*this);
  // A driver that starts the run within its first follow step may find it could not start.
  if (status::is_final(record.status)) return 0;
  return finish(driver);
}

int RunSession::resume(RunDriver& driver) {
  record = plan.record;
  record.clear_lost();
  record.status = status::k_running;
  claim();
  save(false);
  const fs::path log = plan.run_dir / "driver_log.txt";
  std::error_code ec;
  const auto size = fs::file_size(log, ec);
  offset = ec ? 0 : size;
  if (m_copy_log)
    m_local_log = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (!driver.resume(*this)) return 0;
  driver.follow(*this);
  return finish(driver);
}

/// Builds the environment image unless it is there; non-zero when the run failed (recorded).
int RunSession::build_environment(const EnvironmentSpec& env) {
  if (!plan.run_config.prepare_environment && facts.image_present != env.tag &&
      !image_exists(shell(), plan.compute, facts, env.tag)) {
    fail(exit_code::k_cannot_start,
         fmt::format("the environment {} is not built and PrepareEnvironment is false; build it "
                     "with: mlw experiment prepare -c {}",
                     env.tag, plan.record.run_config));
    return 1;
  }
  const int build_log =
      ::open((plan.run_dir / "build.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  std::string tail;
  bool announced = false;
  const ShellResult result =
      ensure_image(shell(), plan, facts, env, paths, m_place.lock_folder(plan, facts),
                   [&](std::string_view chunk) {
                     if (build_log >= 0) write_fully(build_log, chunk);
                     if (!announced) {
                       announced = true;
                       // A rerun's image is named by its spec: gone from the target, it is
                       // built again from the same spec (its packages may resolve anew).
                       if (!record.rerun_of.empty()) {
                         note(
                             fmt::format("The environment {} of run {} is not on {}: building "
                                         "it again from the same spec",
                                         env.tag, record.rerun_of, host()));
                       }
                       note(fmt::format("Building environment {} (log: .mlw/runs/{}/build.log)…",
                                        env.tag, record.run_id));
                     }
                     tail.append(chunk);
                     if (tail.size() > 4000) tail.erase(0, tail.size() - 4000);
                   });
  if (build_log >= 0) ::close(build_log);
  if (result.exit_code == 0) return 0;
  build_failed(env, result.exit_code, tail);
  return 1;
}

/// The environment build failed: its log goes into the driver log (what `history logs` shows),
/// and the run fails with the reason the install script gave, or with the build's exit code.
int RunSession::build_failed(const EnvironmentSpec& env, int build_exit, const std::string& tail) {
  const std::string log = read_file_if_exists(plan.run_dir / "build.log").value_or(tail);
  const int fd = m_local_log >= 0 ? m_local_log
                                  : ::open((plan.run_dir / "driver_log.txt").c_str(),
                                           O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd >= 0) write_fully(fd, log);
  if (fd >= 0 && fd != m_local_log) ::close(fd);
  const BuildFailure reason = build_failure_reason(tail);
  const std::string where = fmt::format("the build log is .mlw/runs/{}/build.log", record.run_id);
  if (reason.exit_code != 0) {
    return fail(reason.exit_code, fmt::format("{} ({})", reason.message, where));
  }
  // The failing step's last lines (no colour codes, no Docker notice), then the reason once:
  // pip's or conda's own last error, in the run's problem and the submit's error line.
  note(build_output_tail(tail, 15));
  const std::string base = base_image_problem(tail, plan.compute.base_docker_image, shell().host(),
                                              plan.compute.username);
  if (!base.empty()) return fail(exit_code::k_cannot_start, fmt::format("{} ({})", base, where));
  const std::string why = build_error_line(tail);
  return fail(exit_code::k_cannot_start,
              fmt::format("building the environment {} failed (exit {}){}; {}", env.tag, build_exit,
                          why.empty() ? "" : ": " + why, where));
}

int RunSession::finish(RunDriver& driver) {
  const bool remote = !m_place.shares_run_folder();
  if (remote) fetch_results();
  if (m_local_log >= 0) ::close(m_local_log);
  m_local_log = -1;
  record.cancel_requested = canceled();
  apply(driver.ending(*this));
  collect_results(!remote);
  end();
  driver.after_finish(*this);
  return 0;
}

std::string RunSession::results_script() {
  return ResultsFetch::script();
}

void RunSession::results_begin() {
  if (!m_results) m_results = std::make_unique<ResultsFetch>(plan.run_dir, host());
  m_results->begin();
  m_results_taken = false;
}

void RunSession::results_feed(std::string_view chunk) {
  if (m_results) m_results->feed(chunk);
}

bool RunSession::results_failed() const {
  return m_results && m_results->failed();
}

void RunSession::results_taken() {
  m_results_taken = m_results != nullptr;
}

/// Brings metrics.jsonl and outputs/ back into the run's history folder (ResultsFetch): from the
/// follow step's end where the driver took them there, else in one step of their own.
void RunSession::fetch_results() {
  if (!m_results_taken) {
    results_begin();
    ShellStreams streams;
    streams.on_output = [this](std::string_view chunk) { m_results->feed(chunk); };
    streams.should_stop = [this] { return m_results->failed(); };
    try {
      run_reconnecting(
          [this] {
            m_results->begin();
            return "mlw_results_in=" + shell_quote(paths.run_dir) + "\n" + results_script();
          },
          streams);
    } catch (const Error& e) {
      record.problems.push_back(
          fmt::format("outputs could not all be brought back from {}: {}", host(), e.what()));
    }
  }
  m_results->finish(record.problems);
  m_results.reset();
  std::vector<std::string> ignored;
  record.outputs = collect_outputs(plan.run_dir / "outputs", plan.run_dir / "outputs", ignored);
}

}  // namespace mlw
