// A sweep's supervisor: launches its Queued points as the targets have room, stops trials by
// the early-stopping rule, and ends when every point's run has ended (docs/sweeps.md).
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <deque>
#include <set>
#include <sstream>
#include <thread>

#include "mlw/exec/place.hpp"
#include "mlw/exec/run_recorder.hpp"
#include "mlw/history/params.hpp"
#include "mlw/history/series.hpp"
#include "mlw/history/sweep_record.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/util/clock.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/process.hpp"
#include "mlw/util/settings.hpp"
#include "mlw/util/strings.hpp"
#include "run_start.hpp"
#include "sweep_internal.hpp"

namespace mlw::api {

namespace {

/// A launched run of the sweep that has not ended.
struct Flight {
  std::string run_id;
  int target = -1;       ///< index in SweepWork::targets (-1: adopted from elsewhere)
  pid_t supervisor = 0;  ///< its supervisor, when this process started it
  std::int64_t stop_sent_ms = 0;
  bool forced = false;
  MetricSeriesReader reader;  ///< its metrics so far
  std::map<int, bool> rungs_seen;
  TrialRungs scheduled;               ///< its rungs, for a sweep with a scheduler
  std::size_t mirrored = 0;           ///< its decisions on the target logged here so far
  std::int64_t stopped_there_ms = 0;  ///< when its target's decision to stop it was seen
  bool rung_seen = false;             ///< it reached a rung (its time to it is counted)
  bool no_rung_said = false;          ///< that it reached none in time was logged
};

TrialSeries series_of(const MetricSeriesReader& reader, const std::string& metric) {
  TrialSeries out;
  const auto found = reader.series().find(metric);
  if (found == reader.series().end()) return out;
  out.steps = found->second.x;
  out.values = found->second.y;
  return out;
}

bool process_alive(pid_t pid) {
  return pid > 0 && process_start_time(pid).has_value();
}

class SweepSupervisor {
 public:
  SweepSupervisor(Context& ctx, SweepWork& work)
      : m_ctx(ctx), m_work(work), m_dir(sweep_dir(work.state_dir, work.sweep_id)) {
    m_in_flight.assign(work.targets.size(), 0);
    m_gate_slots = gate_slots();
    if (m_gate_slots > 0) m_gate_room = m_gate_slots + setting("MLW_SWEEP_AHEAD");
    m_tpe_there = tpe_on_target();
  }

  int run() {
    if (const auto logged = read_file_if_exists(m_dir / "decisions.log")) {
      std::istringstream lines(*logged);
      for (std::string line; std::getline(lines, line);) {
        const auto space = line.find(' ');
        if (space != std::string::npos) m_logged.insert(line.substr(space + 1));
      }
    }
    adopt();
    log(fmt::format("supervising {} queued and {} live runs", m_pending.size(), m_flights.size()));
    while (!m_pending.empty() || !m_flights.empty()) {
      reap();
      if (!m_canceled && fs::exists(m_dir / k_sweep_cancel_file)) cancel_all();
      check_flights();
      launch_next();
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
    }
    log("every point's run has ended");
    return 0;
  }

 private:
  void log(const std::string& line) {
    const std::string text = fmt::format("{} {}\n", format_utc(m_ctx.clock->now_ms()), line);
    std::fputs(text.c_str(), stderr);
    std::fflush(stderr);
    if (FILE* file = std::fopen((m_dir / "decisions.log").c_str(), "a")) {
      std::fputs(text.c_str(), file);
      std::fclose(file);
    }
  }

  Flight new_flight(std::int64_t point) const {
    Flight flight;
    const int brackets = scheduler_brackets(m_work.spec.scheduler);
    flight.scheduled.bracket = static_cast<int>(point % brackets);
    return flight;
  }

  int target_of(const std::string& name) const {
    for (std::size_t i = 0; i < m_work.targets.size(); ++i) {
      if (m_work.targets[i].plan.target_name == name) return static_cast<int>(i);
    }
    return -1;
  }

  /// The sweep's runs as they stand: Queued ones never launched wait; live ones are watched;
  /// completed ones give the early-stopping rule its reference.
  void adopt() {
    const SweepRecord sweep = load_sweep(m_work.state_dir, m_work.sweep_id);
    HistoryStore store(m_work.state_dir);
    for (const auto& point : sweep.points) {
      if (point.run_id.empty()) continue;
      RunRecord record;
      try {
        record = store.load(point.run_id);
      } catch (const Error&) {
        continue;
      }
      if (status::is_final(record.status) && scheduled()) {
        // An ended trial of a resumed sweep: its rungs' values, as it reached them (decided on
        // its target: its decisions, logged here where they were not yet).
        Flight ended = new_flight(record.point);
        ended.reader.update(store.run_dir(record.run_id) / "metrics.jsonl", true);
        if (on_target()) {
          mirror(ended, record);
        } else {
          schedule(ended, record, true);
        }
      }
      if (record.status == status::k_completed) {
        note_completed(store.run_dir(record.run_id));
      } else if (record.status == status::k_queued && record.pid == 0) {
        m_pending.push_back(record.run_id);
      } else if (!status::is_final(record.status)) {
        Flight flight = new_flight(record.point);
        flight.run_id = record.run_id;
        flight.target = target_of(record.target);
        if (flight.target >= 0) ++m_in_flight[static_cast<std::size_t>(flight.target)];
        if (scheduled() && !on_target()) replay_live(flight, record, store.run_dir(record.run_id));
        m_flights.push_back(std::move(flight));
      }
    }
  }

  void note_completed(const fs::path& run_dir) {
    const std::string& metric = m_work.spec.early_stop.metric;
    if (m_work.spec.early_stop.rule.empty() || metric.empty()) return;
    MetricSeriesReader reader;
    reader.update(run_dir / "metrics.jsonl", true);
    m_completed.push_back(series_of(reader, metric));
  }

  void reap() {
    int code = 0;
    while (::waitpid(-1, &code, WNOHANG) > 0) {
    }
  }

  /// Ends the points not launched (Canceled) and asks the live runs to stop.
  void cancel_all() {
    m_canceled = true;
    log("cancel asked: the points not started are canceled, the live runs stopped");
    HistoryStore store(m_work.state_dir);
    for (const auto& run_id : m_pending) {
      RunRecord record = store.load(run_id);
      if (!status::is_final(record.status))
        cancel_unstarted_point(store, record, m_ctx.clock->now_ms());
    }
    m_pending.clear();
    for (auto& flight : m_flights) {
      request_cancel(store, flight.run_id);
      flight.stop_sent_ms = m_ctx.clock->now_ms();
      const RunRecord record = store.load(flight.run_id);
      if (record.process_group > 0) m_ctx.executor(record.target_type)->stop(m_ctx, record, false);
    }
  }

  void check_flights() {
    if (m_flights.empty()) return;
    HistoryStore store(m_work.state_dir);
    for (auto it = m_flights.begin(); it != m_flights.end();) {
      RunRecord record = store.load(it->run_id);
      if (!status::is_final(record.status)) {
        const pid_t owner = record.pid == ::getpid() ? it->supervisor : record.pid;
        if (owner > 0 && !process_alive(owner)) {
          record = store.load(it->run_id);  // it may have ended since
          if (!status::is_final(record.status)) {
            record.mark_lost(
                lost_reason::k_supervisor,
                fmt::format("the process that supervised the run (pid {}) is gone", owner));
            store.save(record);
          }
        }
      }
      if (status::is_final(record.status)) {
        if (scheduled() || m_tpe_there) last_look(*it, record, store.run_dir(record.run_id));
        log(fmt::format("run {} (point {}) ended: {}", record.run_id, record.point, record.status));
        if (record.status == status::k_completed) note_completed(store.run_dir(record.run_id));
        if (it->target >= 0) --m_in_flight[static_cast<std::size_t>(it->target)];
        it = m_flights.erase(it);
        continue;
      }
      if (record.status == status::k_running) judge(*it, record, store.run_dir(record.run_id));
      ++it;
    }
  }

  bool scheduled() const { return !m_work.spec.scheduler.kind.empty(); }

  /// ASHA's and Hyperband's decisions are taken on the target, in each trial (python/mlw/
  /// rungs.py), from the sweep's record in the target's share folder; a sweep over several
  /// targets (no folder in common) is judged here.
  bool on_target() const { return scheduled() && m_work.targets.size() == 1; }

  /// Whether the trial was judged at a rung yet (on its target: it logged a decision).
  bool reached_a_rung(const Flight& flight) const {
    if (!on_target()) return !flight.scheduled.judged.empty();
    const auto& decisions = flight.reader.decisions();
    return std::any_of(decisions.begin(), decisions.end(),
                       [](const TrialDecision& d) { return d.verdict != k_proposal_verdict; });
  }

  /// TPE's points proposed on the sweep's one target as each starts (python/mlw/propose.py, from
  /// the sweep's record there): where its points wait there for their turn or form a job array,
  /// and the script is Python's (docs/sweeps.md "The laptop may close").
  bool tpe_on_target() const {
    if (m_work.spec.method != "tpe" || m_work.targets.size() != 1) return false;
    const RunPlan& plan = m_work.targets.front().plan;
    if (plan.run_config.framework == "PySpark") return false;
    return m_gate_slots > 0 || kind_of(plan.compute.type).runner.arrays;
  }

  /// Logs the decisions the trial took on its target since the last look (a line logged before,
  /// as by a supervisor before a resume, is not logged again).
  void mirror(Flight& flight, const RunRecord& record) {
    const auto& decisions = flight.reader.decisions();
    for (; flight.mirrored < decisions.size(); ++flight.mirrored) {
      const TrialDecision& decision = decisions[flight.mirrored];
      // A rung's decision, or TPE's point proposed there.
      const bool rung = decision.verdict != k_proposal_verdict;
      if (decision.verdict == "stopped" && !flight.stopped_there_ms)
        flight.stopped_there_ms = m_ctx.clock->now_ms();
      if (rung && !flight.rung_seen && record.start_ms) {  // its time to its first rung there
        flight.rung_seen = true;
        const auto at = static_cast<std::int64_t>(decision.time * 1000);
        m_first_rung_ms.push_back((at > record.start_ms ? at : m_ctx.clock->now_ms()) -
                                  record.start_ms);
      }
      const std::string line =
          fmt::format("run {} (point {}): {}", record.run_id, record.point, decision.text);
      if (m_logged.insert(line).second) log(line);
    }
  }

  /// The scheduler's verdict on a trial's metrics so far, its notes logged.
  std::optional<std::string> schedule(Flight& flight, const RunRecord& record, bool quiet = false) {
    std::vector<std::string> notes;
    const auto verdict = scheduler_verdict(
        m_work.spec.scheduler, m_work.spec.maximize, m_work.spec.metric,
        series_of(flight.reader, m_work.spec.metric), m_scheduled_rungs, flight.scheduled, notes);
    for (const auto& note : quiet ? std::vector<std::string>{} : notes)
      log(fmt::format("run {} (point {}): {}", record.run_id, record.point, note));
    return verdict;
  }

  /// A live trial of a resumed sweep judged here: the rungs that decisions.log names for it are
  /// judged again quietly from its metrics up to the last of them (its values back among the
  /// others', nothing decided twice); a rung it reached while no supervisor looked is judged at
  /// the next look.
  void replay_live(Flight& flight, const RunRecord& record, const fs::path& run_dir) {
    const std::string prefix = fmt::format("run {} (point {}): ", record.run_id, record.point);
    const std::string word = m_work.spec.scheduler.resource + " ";
    double last = -1;
    for (const auto& line : m_logged) {
      if (!starts_with(line, prefix)) continue;
      for (auto at = line.find(word); at != std::string::npos; at = line.find(word, at + 1)) {
        const std::string rest = line.substr(at + word.size());
        const std::string digits = rest.substr(0, rest.find_first_not_of("0123456789"));
        if (const auto rung = parse_integer(digits, 0, 1 << 30))
          last = std::max(last, static_cast<double>(*rung));
      }
    }
    if (last < 0) return;
    flight.reader.update(run_dir / "metrics.jsonl", false);
    const TrialSeries series = series_of(flight.reader, m_work.spec.metric);
    TrialSeries judged;
    for (std::size_t i = 0; i < series.steps.size() && i < series.values.size(); ++i) {
      if (series.steps[i] > last) continue;
      judged.steps.push_back(series.steps[i]);
      judged.values.push_back(series.values[i]);
    }
    std::vector<std::string> notes;
    scheduler_verdict(m_work.spec.scheduler, m_work.spec.maximize, m_work.spec.metric, judged,
                      m_scheduled_rungs, flight.scheduled, notes);
  }

  /// An ended trial's last metrics reach its rungs (the others are judged against them); one
  /// that reached none is said, with what it may have missed.
  void last_look(Flight& flight, const RunRecord& record, const fs::path& run_dir) {
    if (flight.stop_sent_ms) return;  // stopped at a rung: what it logged after counts nowhere
    flight.reader.update(run_dir / "metrics.jsonl", true);
    if (on_target() || m_tpe_there) {
      mirror(flight, record);
    } else {
      schedule(flight, record);
    }
    if (!scheduled()) return;
    const SchedulerSpec& scheduler = m_work.spec.scheduler;
    const bool judged = reached_a_rung(flight);
    if (record.status == status::k_completed && !judged && !flight.no_rung_said &&
        scheduler_first_rung(scheduler, flight.scheduled.bracket) < scheduler.max) {
      log(fmt::format("run {} (point {}) reached no rung: does it log {} with {} as its step?",
                      record.run_id, record.point, m_work.spec.metric, scheduler.resource));
    }
  }

  /// A running trial that reached no rung long after the others reached their first (twice the
  /// slowest of them, at least 5 s, once 3 have) is said once: its script may not log the
  /// metric with the resource as its step.
  void watch_first_rung(Flight& flight, const RunRecord& record) {
    const bool judged = reached_a_rung(flight);
    const std::int64_t ran_ms = m_ctx.clock->now_ms() - record.start_ms;
    if (judged && !flight.rung_seen) {  // judged here: seen now
      flight.rung_seen = true;
      m_first_rung_ms.push_back(ran_ms);
    }
    if (judged || flight.no_rung_said || m_first_rung_ms.size() < 3 || !record.start_ms) return;
    const std::int64_t slowest = *std::max_element(m_first_rung_ms.begin(), m_first_rung_ms.end());
    if (ran_ms <= std::max<std::int64_t>(2 * slowest, 5000)) return;
    flight.no_rung_said = true;
    log(fmt::format(
        "run {} (point {}) reached no rung in {} s (the others reached their first in {} s or "
        "less): does it log {} with {} as its step?",
        record.run_id, record.point, ran_ms / 1000, (slowest + 999) / 1000, m_work.spec.metric,
        m_work.spec.scheduler.resource));
  }

  /// The early-stopping rule's look at a running trial's metrics so far.
  void judge(Flight& flight, const RunRecord& record, const fs::path& run_dir) {
    const EarlyStopSpec& rule = m_work.spec.early_stop;
    if (flight.stop_sent_ms) {
      if (!flight.forced && m_ctx.clock->now_ms() - flight.stop_sent_ms > 10000 &&
          record.process_group > 0) {
        m_ctx.executor(record.target_type)->stop(m_ctx, record, true);
        flight.forced = true;
      }
      return;
    }
    if ((rule.rule.empty() && !scheduled() && !m_tpe_there) || m_canceled) return;
    flight.reader.update(run_dir / "metrics.jsonl", false);
    if (m_tpe_there && !on_target()) mirror(flight, record);  // the point proposed there
    if (rule.rule.empty() && !scheduled()) return;
    std::optional<std::string> verdict;
    if (on_target()) {
      mirror(flight, record);
      watch_first_rung(flight, record);
      // Stopped there, it ends itself; a script that goes on after that (it caught the
      // SystemExit) is stopped from here.
      if (flight.stopped_there_ms && m_ctx.clock->now_ms() - flight.stopped_there_ms > 15000)
        verdict = "it went on after its decision to stop: stopped by the sweep";
    } else {
      verdict = scheduled()
                    ? schedule(flight, record)
                    : early_stop_verdict(rule, m_completed, series_of(flight.reader, rule.metric),
                                         m_rungs, flight.rungs_seen);
      if (scheduled()) watch_first_rung(flight, record);
    }
    if (!verdict) return;
    log(fmt::format("run {} (point {}): {}", record.run_id, record.point, *verdict));
    atomic_write_file(run_dir / k_stop_reason_file, *verdict + "\n");
    HistoryStore store(m_work.state_dir);
    request_cancel(store, record.run_id);
    flight.stop_sent_ms = m_ctx.clock->now_ms();
    if (record.process_group > 0) m_ctx.executor(record.target_type)->stop(m_ctx, record, false);
  }

  /// How many of the sweep's points run at once on its one target when the others wait there
  /// for their turn (docs/sweeps.md "The laptop may close"): an SSH target that runs its own
  /// monitors (remote, remotedocker), MLW_SWEEP_AHEAD above 0 (TPE's points are proposed there,
  /// or, for a Spark script, as they start from here); else 0, and each point starts from here as
  /// the target has room.
  int gate_slots() const {
    if (m_work.targets.size() != 1) return 0;
    const SweepTarget& target = m_work.targets.front();
    const TargetKind& kind = kind_of(target.plan.compute.type);
    if (kind.runner.batch || !kind.runner.detached || kind.place->shares_run_folder()) return 0;
    if (m_work.spec.method == "tpe" && target.plan.run_config.framework == "PySpark") return 0;
    if (setting("MLW_SWEEP_AHEAD") == 0) return 0;
    const int limit = m_work.spec.max_concurrent;
    return limit > 0 ? std::min(limit, target.capacity) : target.capacity;
  }

  /// The target with the most room, or -1.
  int free_target() const {
    int best = -1;
    int room = 0;
    for (std::size_t i = 0; i < m_work.targets.size(); ++i) {
      const int capacity = m_gate_slots > 0 ? m_gate_room : m_work.targets[i].capacity;
      const int free = capacity - m_in_flight[i];
      if (free > room) {
        room = free;
        best = static_cast<int>(i);
      }
    }
    return best;
  }

  void launch_next() {
    while (!m_pending.empty()) {
      const int target = free_target();
      if (target < 0) return;
      const RunPlan& base = m_work.targets[static_cast<std::size_t>(target)].plan;
      if (kind_of(base.compute.type).runner.arrays) {
        // A batch system that takes arrays gets the points as one job array, which runs at most
        // maxConcurrent of them at once (sbatch --array=…%K).
        BatchArray array;
        array.id = fmt::format("{}-{}", m_work.sweep_id, ++m_arrays);
        array.size = static_cast<int>(std::min<std::size_t>(m_pending.size(), 1000));
        array.limit = m_work.spec.max_concurrent;
        log(fmt::format("array {}: {} points on {}{}", array.id, array.size, base.target_name,
                        array.limit ? fmt::format(", at most {} at once", array.limit) : ""));
        for (int i = 0; i < array.size; ++i) {
          array.index = i;
          const std::string run_id = m_pending.front();
          m_pending.pop_front();
          launch(run_id, target, array);
        }
        continue;
      }
      const int limit = m_gate_slots > 0 ? 0 : m_work.spec.max_concurrent;
      if (limit > 0 && static_cast<int>(m_flights.size()) >= limit) return;
      const std::string run_id = m_pending.front();
      m_pending.pop_front();
      launch(run_id, target);
    }
  }

  /// TPE's point for a run about to start, learnt from the sweep's ended trials; recorded in
  /// sweep.json and the run's arguments (a point proposed before, as in a resume, is kept).
  void propose(HistoryStore& store, RunRecord& record) {
    SweepRecord sweep = load_sweep(m_work.state_dir, m_work.sweep_id);
    const auto index = static_cast<std::size_t>(record.point);
    if (index >= sweep.points.size() || !sweep.points[index].params.empty()) return;
    std::vector<TpeTrial> trials;
    for (const auto& point : sweep.points) {
      if (point.run_id.empty() || point.params.empty()) continue;
      // An ended trial's metrics are read once for the whole sweep.
      if (const auto known = m_tpe_ended.find(point.run_id); known != m_tpe_ended.end()) {
        trials.push_back(known->second);
        continue;
      }
      RunRecord ended;
      try {
        ended = store.load(point.run_id);
      } catch (const Error&) {
        continue;
      }
      if (ended.status != status::k_completed && ended.status != status::k_stopped) continue;
      TpeTrial trial;
      trial.point = point.params;
      trial.stopped = ended.status == status::k_stopped;
      MetricSeriesReader reader;
      reader.update(store.run_dir(ended.run_id) / "metrics.jsonl", true);
      const TrialSeries series = series_of(reader, m_work.spec.metric);
      if (!series.values.empty()) trial.value = series.values.back();
      m_tpe_ended.emplace(point.run_id, trial);
      trials.push_back(std::move(trial));
    }
    const nlohmann::ordered_json point = tpe_propose(m_work.spec, trials, index);
    sweep.points[index].params = point;
    save_sweep(m_work.state_dir, sweep);
    record.arguments = sweep.arguments;
    for (auto& word : point_arguments(point)) record.arguments.push_back(word);
    record.params = params_from_arguments(record.arguments);
    const bool learnt =
        trials.size() >= static_cast<std::size_t>(m_work.spec.startup) &&
        std::any_of(trials.begin(), trials.end(), [](const TpeTrial& t) { return !t.stopped; });
    log(fmt::format("run {} (point {}): TPE {} {} ({} ended trials)", record.run_id, record.point,
                    learnt ? "proposes" : "draws at random", point.dump(), trials.size()));
  }

  /// Starts one point's run on a target, as submit starts a run; a failure is its record's.
  void launch(const std::string& run_id, int target,
              const std::optional<BatchArray>& array = std::nullopt) {
    const RunPlan& base = m_work.targets[static_cast<std::size_t>(target)].plan;
    RunPlan plan = base;
    plan.array = array;
    {
      HistoryStore store(m_work.state_dir);  // closed before the run's supervisor is forked
      plan.record = store.load(run_id);
      if (status::is_final(plan.record.status)) return;
      if (m_work.spec.method == "tpe" && !m_tpe_there) propose(store, plan.record);
      plan.run_dir = store.run_dir(run_id);
      plan.arguments = plan.record.arguments;
      plan.record.target = plan.target_name;
      plan.record.target_type = plan.compute.type;
      plan.record.run_config = base.record.run_config;
      plan.record.command = expand_argument_vector(plan.run_config, plan.script, plan.arguments);
      plan.record.status = status::k_preparing;
      plan.record.pid = ::getpid();
      plan.record.pid_start = process_start_time(::getpid()).value_or(0);
      plan.record.boot_id = boot_id();
      store.save(plan.record, false);
    }
    Flight flight = new_flight(plan.record.point);
    flight.run_id = run_id;
    flight.target = target;
    try {
      const fs::path state = m_work.state_dir;
      // The shared snapshot's hash (share_snapshot), not the manifest hashed again per point.
      const std::string& hash = base.record.snapshot_hash;
      save_manifest(plan.manifest, hash, state / "manifests", plan.run_dir / "manifest.json");
      save_run_env(plan.run_dir, plan.extra_env);  // a rerun of a trial is judged nowhere
      if (m_gate_slots > 0) {
        // It waits there for its turn, its launch handed over as `-a`'s (no channel kept).
        plan.gate = SweepGate{fmt::format("~/.mlw/sweeps/{}/turns", m_work.sweep_id), m_gate_slots};
        plan.detached = true;
        atomic_write_file(plan.run_dir / "gate", plan.gate->folder + "\n");
      }
      if (on_target()) {
        plan.extra_env["MLW_SCHEDULER"] = scheduler_variable(
            m_work, plan.record.point, new_flight(plan.record.point).scheduled.bracket);
      }
      if (m_tpe_there) {
        plan.extra_env["MLW_PROPOSE"] = propose_variable(m_work, plan.record.point);
        plan.propose_on_target = true;
      }
      materialize_snapshot(plan.manifest, state / "objects", plan.project.root,
                           plan.run_dir / "snapshot");
      auto executor = m_ctx.executor(plan.compute.type);
      executor->validate(m_ctx, plan);
      const RunHandle handle = executor->start(m_ctx, plan);
      ::close(handle.output_fd);
      flight.supervisor = handle.supervisor;
      log(fmt::format("run {} (point {}) started on {}", run_id, plan.record.point,
                      plan.target_name));
    } catch (const Error& e) {
      HistoryStore store(m_work.state_dir);
      plan.record.exit_code.reset();
      plan.record.mark_failed(exit_code::k_cannot_start,
                              std::string("the run could not start: ") + e.what(),
                              m_ctx.clock->now_ms());
      store.save(plan.record);
      log(fmt::format("run {} (point {}) could not start: {}", run_id, plan.record.point,
                      e.what()));
      return;
    }
    ++m_in_flight[static_cast<std::size_t>(target)];
    m_flights.push_back(std::move(flight));
  }

  Context& m_ctx;
  SweepWork& m_work;
  fs::path m_dir;
  std::deque<std::string> m_pending;
  std::vector<Flight> m_flights;
  std::vector<int> m_in_flight;
  std::vector<TrialSeries> m_completed;
  std::map<int, std::vector<double>> m_rungs;
  std::map<std::pair<int, int>, std::vector<double>> m_scheduled_rungs;  ///< (bracket, rung)
  std::set<std::string> m_logged;             ///< decisions.log's lines, without their times
  std::vector<std::int64_t> m_first_rung_ms;  ///< each trial's time from its start to a rung
  bool m_canceled = false;
  int m_arrays = 0;      ///< job arrays submitted so far
  int m_gate_slots = 0;  ///< gate_slots()
  int m_gate_room = 0;   ///< with a gate: its slots and MLW_SWEEP_AHEAD, the points launched ahead
  bool m_tpe_there = false;                     ///< tpe_on_target()
  std::map<std::string, TpeTrial> m_tpe_ended;  ///< ended trials as TPE learns from them, by run
};

}  // namespace

int supervise_sweep(Context& ctx, SweepWork& work) {
  SweepSupervisor supervisor(ctx, work);
  return supervisor.run();
}

}  // namespace mlw::api
