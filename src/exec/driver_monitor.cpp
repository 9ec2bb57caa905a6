// The monitor driver: a detached monitor on the target runs the container or the script.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <fstream>

#include "mlw/exec/gpu_sampling.hpp"
#include "mlw/exec/lease.hpp"
#include "mlw/exec/monitor_driver.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/settings.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"
#include "results_fetch.hpp"

namespace mlw {

namespace {

/// How long after its stop a run the target still reports as going on is waited for (cancel's
/// 10 s from SIGTERM to SIGKILL, and the time to see the end).
constexpr int k_stop_bound_s = 20;

/// The most of the target's answer about a run's end that is read (a number, "oom").
constexpr std::size_t k_state_bound = 4096;

/// The monitor runner's short steps (stop, submit, wait), functions of one file.
constexpr std::string_view k_steps = "src/exec/steps.sh";

}  // namespace

std::string stdin_file(std::string_view text) {
  return std::to_string(text.size()) + "\n" + std::string(text);
}

bool MonitorDriver::start_monitor(RunSession& session, const std::string& monitor) {
  // monitor.sh from stdin, started detached in the run folder; its pid printed.
  const std::string launch =
      script_call("src/exec/launch.sh", {"mlw_launch_pid", session.paths.run_dir});
  const ShellResult launched = session.run_reconnecting([&] { return launch; }, {}, monitor);
  m_monitor_pid = trim(launched.output);
  const auto pid = parse_integer(m_monitor_pid, 2, 1LL << 31);
  if (launched.exit_code != 0 || !pid) {
    const std::string why =
        !trim(launched.errors).empty()
            ? trim(launched.errors)
            : fmt::format("it answered \"{}\" where the monitor's pid was expected",
                          printable(trim(launched.output)));
    session.fail(exit_code::k_cannot_start,
                 fmt::format("cannot start the run on {}: {}", session.shell().host(), why));
    return false;
  }
  session.record.process_group = static_cast<int>(*pid);
  return true;
}

/// The monitor is started by follow's first step, which then follows it (one round trip less).
bool MonitorDriver::start(RunSession& session, const std::string& image) {
  const std::string& tree = session.paths.tree;
  m_launch = (tree.empty() ? "" : std::to_string(tree.size()) + "\n" + tree) +
             monitor_script(session.plan, session.paths, session.facts, image);
  m_lease_pending = !lease_request(session.plan).want.empty() || session.plan.gate;
  return true;
}

bool MonitorDriver::take_launch(RunSession& session, std::string& state) {
  const auto at = state.find("mlw-pid=");
  const auto newline = at == std::string::npos ? at : state.find('\n', at);
  if (newline == std::string::npos) return false;
  const std::string printed = trim(state.substr(0, at));
  m_monitor_pid = state.substr(at + 8, newline - at - 8);
  state.erase(0, newline + 1);
  m_launch.clear();
  const auto pid = parse_integer(m_monitor_pid, 2, 1LL << 31);
  if (!pid) {
    m_launch_fail = !printed.empty() ? printed
                                     : fmt::format(
                                           "it answered \"{}\" where the monitor's pid "
                                           "was expected",
                                           printable(m_monitor_pid));
    return true;
  }
  session.record.process_group = static_cast<int>(*pid);
  if (m_lease_pending) {
    session.save(false);  // Queued or Running as the lease answers
  } else {
    session.mark_running();
  }
  return true;
}

void MonitorDriver::take_lease_lines(RunSession& session, std::string& state) {
  constexpr std::string_view prefix = "mlw-lease=";
  constexpr std::string_view metric = "mlw-metric=";
  constexpr std::string_view skip = "mlw-metric-skip=";
  std::string metrics;
  std::uintmax_t skipped = 0;
  while (starts_with(state, prefix) || starts_with(state, metric) || starts_with(state, skip)) {
    const auto newline = state.find('\n');
    if (newline == std::string::npos) break;
    if (starts_with(state, metric)) {
      // The run's metrics as they are logged, into the local copy of metrics.jsonl (the whole
      // file replaces it with the results).
      metrics.append(state, metric.size(), newline + 1 - metric.size());
      state.erase(0, newline + 1);
      continue;
    }
    if (starts_with(state, skip)) {
      // A line the step does not carry (over 4000 bytes, or empty): its bytes on the target.
      const auto bytes =
          parse_integer(state.substr(skip.size(), newline - skip.size()), 1, 1LL << 40);
      if (bytes) skipped += static_cast<std::uintmax_t>(*bytes);
      state.erase(0, newline + 1);
      continue;
    }
    const std::string line = state.substr(prefix.size(), newline - prefix.size());
    state.erase(0, newline + 1);
    if (!m_lease_pending) continue;  // said again after a reconnect
    const bool gpus = session.plan.compute.gpus_per_run != "all";
    const LeaseAnswer answer = line == "stopped" ? LeaseAnswer{} : parse_lease_answer(line, gpus);
    if (!take_lease_answer(session, answer)) {
      m_lease_pending = false;
    } else if (answer.kind == LeaseAnswer::Kind::Granted) {
      m_lease_pending = false;
      session.mark_running();
    }
  }
  // The skipped bytes first: a supervisor killed between the two writes then starts the next
  // step past lines it lacks (they come with the results), never again at lines it has. Where
  // the count cannot be written, the next step starts at the copy's size, as before the count.
  if (skipped > 0) {
    try {
      atomic_write_file(session.plan.run_dir / k_metrics_skipped,
                        std::to_string(metrics_skipped(session.plan.run_dir) + skipped) + "\n",
                        0600, false);
    } catch (const Error& e) {
      spdlog::warn("the live copy of metrics.jsonl: {}", e.what());
    }
  }
  if (!metrics.empty()) {
    std::ofstream out(session.plan.run_dir / "metrics.jsonl", std::ios::binary | std::ios::app);
    out << metrics;
  }
}

bool MonitorDriver::resume(RunSession& session) {
  m_monitor_pid = std::to_string(session.record.process_group);
  // A sweep's point waiting for its turn there has a `gate` file here (the sweep's launch).
  m_lease_pending = session.plan.record.status == status::k_queued &&
                    (!lease_request(session.plan).want.empty() ||
                     std::filesystem::exists(session.plan.run_dir / "gate"));
  return true;
}

void MonitorDriver::stop(RunSession& session) {
  std::vector<std::string> words = {"mlw_stop_process", session.paths.run_dir};
  if (!session.record.image_tag.empty()) {
    words = {"mlw_stop_container", session.paths.run_dir};
    for (auto& word : docker_words(session.plan.compute, session.facts)) words.push_back(word);
  }
  session.run_reconnecting(script_call(k_steps, words));
}

bool MonitorDriver::start_batch_job(RunSession& session, const BatchSubmit& job) {
  std::vector<std::string> words = {"mlw_submit_job", session.paths.run_dir};
  words.insert(words.end(), job.arguments.begin(), job.arguments.end());
  const ShellResult submitted = session.shell().run_with_input(script_call(k_steps, words),
                                                               stdin_file(job.submit) + job.files);
  const std::string id = trim(submitted.output);
  // A job's id, or an array element's (Slurm's JOBID_INDEX, Grid Engine's JOBID.TASK).
  const auto separator = id.find_first_of("_.");
  const bool element = separator != std::string::npos && separator > 0 &&
                       separator + 1 < id.size() &&
                       id.find_first_of("_.", separator + 1) == std::string::npos;
  if (submitted.exit_code != 0 || id.empty() ||
      id.find_first_not_of(element ? "0123456789_." : "0123456789") != std::string::npos) {
    session.fail(exit_code::k_cannot_start,
                 fmt::format("{} on {} refused the job: {}", job.tool, session.shell().host(),
                             printable(trim(trim(submitted.errors) + " " + id))));
    return false;
  }
  session.record.job_id = id;
  session.record.status = status::k_queued;
  session.claim();
  session.save(false);
  session.say(fmt::format("{} job {} queued on {}.\n", job.system, id, session.shell().host()));
  if (!start_monitor(session, job.monitor)) return false;
  session.save(false);
  // A job deleted while it waited never ran: its record keeps no start.
  if (wait_until_started(session)) session.mark_running();
  return true;
}

bool MonitorDriver::resume_batch_job(RunSession& session, const std::string& stale,
                                     const std::function<std::string()>& monitor) {
  MonitorDriver::resume(session);
  std::vector<std::string> words = {"mlw_monitor_alive", session.paths.run_dir, m_monitor_pid};
  for (auto& file : split(stale, ' ')) words.push_back(file);
  const ShellResult alive = session.run_reconnecting(script_call(k_steps, words));
  if (alive.output.find("alive") == std::string::npos) {
    const std::string text = monitor();
    if (text.empty() || !start_monitor(session, text)) return false;
    session.save(false);
  }
  wait_until_started(session);
  return true;
}

bool MonitorDriver::wait_until_started(RunSession& session) {
  bool stop_sent = false;
  while (true) {
    ShellStreams streams;
    streams.should_stop = [&] { return !stop_sent && session.canceled(); };
    const ShellResult waited = session.run_reconnecting(
        script_call(k_steps, {"mlw_wait_started", session.paths.run_dir, m_monitor_pid}), streams);
    if (!stop_sent && session.canceled()) {
      stop(session);
      stop_sent = true;
      continue;
    }
    if (waited.exit_code == 0) return waited.output.find("started") != std::string::npos;
  }
}

std::string MonitorDriver::end_script() const {
  return std::string(embedded_script("src/exec/end.sh"));
}

void MonitorDriver::take_errors(RunSession& session, StepErrors& step, std::string_view chunk) {
  if (step.in_results) return session.results_feed(chunk);
  step.state.append(chunk);  // a chunk is at most 64 KiB; cut to the bound below
  if (step.launching && take_launch(session, step.state)) step.launching = false;
  if (!step.launching) take_lease_lines(session, step.state);
  const auto at = step.state.find("\nmlw-results\n");
  if (at != std::string::npos) {
    step.in_results = true;
    const std::string results = step.state.substr(at + 13);
    step.state.erase(at + 1);
    session.results_feed(results);
  } else if (step.state.size() > k_state_bound) {
    step.state.resize(k_state_bound);
  }
}

namespace {

/// Where the next follow step's metrics start on the target: the bytes of the run's
/// metrics.jsonl here, and those of the lines the steps so far did not carry.
std::uintmax_t metrics_received(RunSession& session) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(session.plan.run_dir / "metrics.jsonl", ec);
  return (ec ? 0 : size) + metrics_skipped(session.plan.run_dir);
}

}  // namespace

std::string MonitorDriver::follow_script(RunSession& session, bool launching, bool handover) const {
  // Its first line names the step in -vv's trace of each step.
  return fmt::format(
             "# mlw follow\nmlw_run={}\nmlw_offset={}\nmlw_pid={}\nmlw_tree={}\nmlw_end={}\n"
             "mlw_lease={}\nmlw_metrics={}\nmlw_handover={}\nmlw_reboot_wait={}\n",
             shell_quote(session.paths.run_dir), session.offset + 1,
             launching ? "" : shell_quote(m_monitor_pid),
             launching && !session.paths.tree.empty() ? "1" : "", shell_quote(end_script()),
             m_lease_pending ? "1" : "", metrics_received(session) + 1, handover ? "1" : "",
             setting("MLW_REBOOT_WAIT")) +
         (launching ? std::string(embedded_script("src/exec/launch.sh")) : std::string()) +
         std::string(embedded_script("src/exec/follow.sh")) + RunSession::results_script();
}

void MonitorDriver::follow(RunSession& session) {
  using namespace std::chrono;
  bool stop_sent = false;
  steady_clock::time_point stopped_at;
  while (true) {
    // The log until the monitor ends, then (on stderr, in the same round trip) whether it
    // ended and how: "mlw-state=running", or "mlw-state=ended", the end script's lines and,
    // after "mlw-results", the run's results. The first step starts the monitor (its pid first
    // on stderr).
    StepErrors step;
    std::string& state = step.state;
    bool& launching = step.launching;
    // A detached run's launch through the kept connection ends once the run started (or
    // queued): the connection is free for the next submit; the rest logs in on its own.
    bool handover = false;
    std::size_t sent = 0;  // of m_launch, the step's stdin
    ShellStreams streams;
    streams.on_output = [&](std::string_view chunk) {
      session.offset += chunk.size();
      session.append_log(chunk);
    };
    streams.on_errors = [&](std::string_view chunk) { take_errors(session, step, chunk); };
    streams.read_input = [&](char* buffer, std::size_t size) {
      return launching ? read_held(m_launch, sent, buffer, size) : 0;
    };
    streams.should_stop = [&] {
      return (!stop_sent && session.canceled()) || (step.in_results && session.results_failed());
    };
    session.run_reconnecting(
        [&] {
          state.clear();
          sent = 0;
          step.in_results = false;
          session.results_begin();
          launching = !m_launch.empty();
          handover = launching && session.plan.detached && session.shell().kept();
          return follow_script(session, launching, handover);
        },
        streams);
    if (handover) session.leave_kept();
    if (step.in_results) session.results_taken();  // they came with the end (one round trip less)
    if (!m_launch_fail.empty() || launching) {
      if (session.canceled()) stop(session);  // it may have started before its pid came back
      session.fail(
          exit_code::k_cannot_start,
          fmt::format("cannot start the run on {}: {}", session.shell().host(),
                      m_launch_fail.empty() ? "it did not say the monitor's pid" : m_launch_fail));
      return;
    }
    if (!stop_sent && session.canceled()) {
      stop(session);
      stop_sent = true;
      stopped_at = steady_clock::now();
      continue;
    }
    const auto newline = state.find('\n');
    const std::string first = state.substr(0, newline);
    if (first == "mlw-state=ended") {
      m_seen = Seen::Ended;
      m_end = newline == std::string::npos ? "" : state.substr(newline + 1);
      return;
    }
    if (first != "mlw-state=running") {
      m_seen = Seen::BadAnswer;
      m_end = "bad-answer " + printable(state) + "\n";
      return;
    }
    // A stopped run that the target still reports as going on is not waited for forever.
    if (stop_sent && steady_clock::now() > stopped_at + seconds(k_stop_bound_s)) {
      m_seen = Seen::StopUnconfirmed;
      m_end.clear();
      return;
    }
  }
}

RunEnding MonitorDriver::ending(RunSession& session) {
  if (m_seen == Seen::StopUnconfirmed) {
    // Recorded as SIGTERM's 143: the stop was sent, its end was not seen.
    RunEnding ending = exit_code_ending("143", session.record.cancel_requested, session.host(), "");
    ending.problems.push_back(fmt::format(
        "{} still reported the run as going on {} s after it was stopped; it may go on there",
        session.host(), k_stop_bound_s));
    return ending;
  }
  // end.sh's words after the exit code: the Docker engine did not answer again, or for a while.
  const std::vector<std::string> lines = split(trim(m_end), '\n');
  const auto said = [&lines](const char* word) {
    return std::find(lines.begin(), lines.end(), word) != lines.end();
  };
  // Its restart policy's count (exec/restart.sh), whatever the end.
  for (const auto& line : lines) {
    if (!starts_with(line, "restarts ")) continue;
    if (const auto count = parse_integer(line.substr(9), 0, 1000)) {
      session.record.restarts = static_cast<int>(*count);
    }
  }
  if (said("lost")) {
    RunEnding lost;
    lost.status = status::k_lost;
    lost.lost_reason = lost_reason::k_engine;
    lost.lost_problem = fmt::format(
        "the Docker engine on {} did not answer for {} s (MLW_ENGINE_RETRY); the container may go "
        "on there (docker ps -a --filter label=mlw.run={})",
        session.host(), setting("MLW_ENGINE_RETRY"), session.record.run_id);
    return lost;
  }
  // restartAfterReboot (exec/reboot.sh): the machine restarted, and the run was not started again.
  if (said("no-relaunch")) {
    return exit_code_ending(
        "", session.record.cancel_requested, session.host(),
        fmt::format("{} restarted during the run and its boot hook (restartAfterReboot) had not "
                    "started it again {} s after the boot (MLW_REBOOT_WAIT; see crontab -l and "
                    "{}/monitor.log there)",
                    session.host(), setting("MLW_REBOOT_WAIT"), session.paths.run_dir));
  }
  RunEnding ending = exit_code_ending(
      m_end, session.record.cancel_requested, session.host(),
      fmt::format("the run's monitor on {} ended without an exit code (see {}/monitor.log there)",
                  session.host(), session.paths.run_dir));
  if (said("reboot-limit")) {
    ending.problems.push_back(fmt::format(
        "{} restarted during the run after its {} restarts (maxRestarts) were used: it was not "
        "started again",
        session.host(), session.record.restarts));
  }
  apply_gpu_words(lines, ending);
  if (said("outage")) {
    ending.problems.push_back(
        fmt::format("the Docker engine on {} stopped answering during the run; its end was read "
                    "after it answered again, and what the script printed while it was away may "
                    "be missing from the log",
                    session.host()));
  }
  return ending;
}

std::unique_ptr<RunDriver> monitor_driver() {
  return std::make_unique<MonitorDriver>();
}

}  // namespace mlw
