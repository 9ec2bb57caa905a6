// `mlw computetarget gpus`: what nvidia-smi would show of a machine's GPUs if it knew the team's
// runs (docs/gpus.md): each GPU's use, the run and user whose lease holds it, the processes on
// it, and how long it has been idle, read in one round trip (exec/gpus_now.sh, exec/queue.sh).

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <thread>

#include "mlw/api/computetarget.hpp"
#include "mlw/config/targets.hpp"
#include "mlw/exec/lease.hpp"
#include "mlw/exec/place.hpp"
#include "mlw/history/store.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"

namespace fs = std::filesystem;

namespace mlw::api {

namespace {

/// The most of a machine's answer that is read.
constexpr std::size_t k_answer_bound = 1 << 20;
/// Seconds between two views of --watch.
constexpr int k_watch_seconds = 2;

/// A figure of the machine's answer: a plain decimal number, never negative, inf or nan.
std::optional<double> number(const std::string& text) {
  return parse_decimal(text, 0, 1e12);
}

/// A number as JSON (whole numbers as integers), or null.
nlohmann::ordered_json number_or_null(const std::string& text) {
  const auto value = number(text);
  if (!value) return nullptr;
  if (*value == std::floor(*value) && std::fabs(*value) < 1e15) {
    return static_cast<std::int64_t>(*value);
  }
  return *value;
}

/// A ticket's line (queue.sh) that holds GPUs: which, and its sampler's "GPU BUSY UTIL MEM"s.
struct Holder {
  std::vector<std::string> fields;
  std::vector<int> gpus;
  std::map<int, double> last_busy;  ///< s since 1970 of the last sample that used the GPU
};

std::vector<Holder> holders_of(const std::vector<std::string>& lines) {
  std::vector<Holder> out;
  for (const auto& line : lines) {
    const std::vector<std::string> f = split(line, '\t');
    if (f.size() < 11 || f[0] != "ticket" || f[2] == "-" || !starts_with(f[6], "gpu:")) continue;
    Holder holder{f, {}, {}};
    for (const auto& item : split(f[2], ',')) {
      if (const auto index = parse_integer(item, 0, 1023)) {
        holder.gpus.push_back(static_cast<int>(*index));
      }
    }
    if (f.size() > 11) {
      for (const auto& item : split(f[11], ';')) {
        const std::vector<std::string> w = split(trim(item), ' ');
        const auto gpu = w.empty() ? std::nullopt : parse_integer(w[0], 0, 1023);
        const auto busy = w.size() > 1 ? number(w[1]) : std::nullopt;
        if (gpu && busy) holder.last_busy[static_cast<int>(*gpu)] = *busy;
      }
    }
    out.push_back(std::move(holder));
  }
  return out;
}

/// The run that holds `gpu`, as `experiment queue` names it, with its idle time.
void add_holder(nlohmann::ordered_json& gpu, const Holder* holder, const InHistory& in_history,
                double now) {
  if (!holder) {
    gpu["run_id"] = nullptr;
    gpu["run_user"] = nullptr;
    gpu["target_user"] = nullptr;
    gpu["idle_s"] = nullptr;
    return;
  }
  const auto& f = holder->fields;
  const std::string run = printable(f[4]);
  const bool mine = f[10] == "1" && !run.empty() && run.find('/') == std::string::npos &&
                    run[0] != '.' && in_history(run);
  gpu["run_id"] = run;
  gpu["in_history"] = mine;
  gpu["run_user"] = printable(f[5]);
  gpu["target_user"] = printable(f[9]);
  const int index = gpu["index"].get<int>();
  const double util = gpu["util"].is_number() ? gpu["util"].get<double>() : 0;
  const auto held_since = number(f[3]);
  const auto busy = holder->last_busy.find(index);
  double since = held_since.value_or(now);
  if (busy != holder->last_busy.end() && busy->second > since) since = busy->second;
  gpu["idle_s"] = util > 0 ? 0 : static_cast<std::int64_t>(std::max(0.0, now - since));
}

}  // namespace

nlohmann::ordered_json read_gpus_answer(const std::string& answer, const std::string& host,
                                        const InHistory& in_history) {
  const std::vector<std::string> lines = split(answer.substr(0, k_answer_bound), '\n');
  double now = 0;
  nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
  std::map<std::string, int> by_uuid;
  for (const auto& line : lines) {
    const std::vector<std::string> f = split(line, '\t');
    if (f.size() >= 2 && f[0] == "now") now = number(f[1]).value_or(0);
    if (f.size() >= 2 && f[0] == "none") {
      throw Error(fmt::format("nvidia-smi on {} lists no GPU: {}", host, printable(f[1])));
    }
    if (f.size() < 7 || f[0] != "gpu") continue;
    const auto index = parse_integer(f[1], 0, 1023);
    if (!index) continue;
    by_uuid[trim(f[6])] = static_cast<int>(gpus.size());
    gpus.push_back({{"index", *index},
                    {"name", printable(f[2])},
                    {"util", number_or_null(f[3])},
                    {"mem_used_mib", number_or_null(f[4])},
                    {"mem_total_mib", number_or_null(f[5])},
                    {"processes", nlohmann::ordered_json::array()}});
  }
  const std::vector<Holder> holders = holders_of(lines);
  for (auto& gpu : gpus) {
    const Holder* holder = nullptr;
    for (const auto& each : holders) {
      for (const int held : each.gpus) {
        if (held == gpu["index"].get<int>()) holder = &each;
      }
    }
    add_holder(gpu, holder, in_history, now);
  }
  for (const auto& line : lines) {
    const std::vector<std::string> f = split(line, '\t');
    if (f.size() < 6 || f[0] != "app") continue;
    const auto at = by_uuid.find(trim(f[1]));
    if (at == by_uuid.end()) continue;
    auto& gpu = gpus[static_cast<std::size_t>(at->second)];
    const std::string user = printable(trim(f[5]));
    // A process of the lease's owner is its run's; any other is foreign to mlw's leases.
    const bool foreign = !gpu["target_user"].is_string() || user != gpu["target_user"];
    gpu["processes"].push_back({{"pid", number_or_null(trim(f[2]))},
                                {"name", printable(trim(f[3]))},
                                {"mem_mib", number_or_null(trim(f[4]))},
                                {"user", user},
                                {"foreign", foreign}});
  }
  return gpus;
}

nlohmann::ordered_json gpus_of(Context& ctx, const std::string& name) {
  const Project& project = ctx.project();
  const ComputeConfig compute = load_compute(project, name);
  const TargetKind& kind = kind_of(compute.type);
  if (!kind.has_key("gpusPerRun")) {
    throw Error(
        fmt::format("target {} is {}: its GPUs are the cluster's nodes' (see sinfo or "
                    "qhost); computetarget gpus reads one machine's",
                    name, compute.type));
  }
  std::unique_ptr<Shell> shell = kind.place->open(ctx, name, compute);
  const std::string script = "d=" + shell_quote(lease_folder()) + "\n" +
                             std::string(embedded_script("src/exec/lease_dir.sh")) +
                             std::string(embedded_script("src/exec/gpus_now.sh")) +
                             std::string(embedded_script("src/exec/queue.sh"));
  const ShellResult read = shell->run(script);
  if (read.exit_code != 0) {
    throw Error(
        fmt::format("cannot read the GPUs of {}: {}", shell->host(), printable(trim(read.errors))));
  }
  HistoryStore store(project.state_dir());
  const auto in_history = [&store](const std::string& run) {
    std::error_code ec;
    return fs::exists(store.run_dir(run) / "run.json", ec);
  };
  return {{"target", name},
          {"host", shell->host()},
          {"gpus", read_gpus_answer(read.output, shell->host(), in_history)}};
}

namespace {

/// An idle time as a person reads it: "8 s", "42 min", "3 h 5 min".
std::string idle_text(std::int64_t s) {
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{} min", s / 60);
  return fmt::format("{} h {} min", s / 3600, s % 3600 / 60);
}

std::string percent(const nlohmann::ordered_json& value) {
  return value.is_number() ? fmt::format("{:g}%", value.get<double>()) : "?";
}

std::string processes_text(const nlohmann::ordered_json& processes) {
  std::vector<std::string> parts;
  for (const auto& p : processes) {
    const std::string pid =
        p["pid"].is_number() ? fmt::format("{:g}", p["pid"].get<double>()) : "?";
    parts.push_back(fmt::format("{}{} (pid {}, {})", p["foreign"].get<bool>() ? "foreign: " : "",
                                p["name"].get<std::string>(), pid, p["user"].get<std::string>()));
  }
  return join(parts, "; ");
}

void print_gpus(Context& ctx, const nlohmann::ordered_json& view) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& gpu : view["gpus"]) {
    std::string run = "-";
    if (gpu["run_id"].is_string()) {
      run = gpu["run_id"].get<std::string>();
      if (!gpu["in_history"].get<bool>()) run += " (" + gpu["run_user"].get<std::string>() + ")";
    }
    std::string idle = "-";
    if (gpu["idle_s"].is_number()) {
      const auto s = gpu["idle_s"].get<std::int64_t>();
      idle = s <= 0 ? "busy" : idle_text(s);
    }
    rows.push_back(
        {{"gpu", gpu["index"]},
         {"name", gpu["name"]},
         {"util", percent(gpu["util"])},
         {"memory",
          fmt::format("{} / {}", gpu["mem_used_mib"].dump(), gpu["mem_total_mib"].dump())},
         {"run", run},
         {"user", gpu["target_user"].is_string() ? gpu["target_user"].get<std::string>() : "-"},
         {"idle", idle},
         {"processes", processes_text(gpu["processes"])}});
  }
  ctx.output().print_list(rows, {{"gpu", "GPU"},
                                 {"name", "NAME"},
                                 {"util", "UTIL"},
                                 {"memory", "MEMORY (MiB)"},
                                 {"run", "RUN"},
                                 {"user", "USER"},
                                 {"idle", "IDLE FOR"},
                                 {"processes", "PROCESSES"}});
}

}  // namespace

void gpus(Context& ctx, const std::string& name, bool watch) {
  const std::string target = target_of_name(ctx.project(), name);
  for (int shown = 0;; ++shown) {
    const nlohmann::ordered_json view = gpus_of(ctx, target);
    if (ctx.output().structured()) {
      ctx.output().print_object(view);
    } else {
      if (watch && ctx.stdout_is_terminal) *ctx.out << "\x1b[H\x1b[2J";
      if (watch)
        *ctx.out << fmt::format("{} on {}, every {} s (Ctrl-C ends)\n", target,
                                view["host"].get<std::string>(), k_watch_seconds);
      print_gpus(ctx, view);
    }
    *ctx.out << std::flush;
    if (!watch) return;
    if (!ctx.stdout_is_terminal) *ctx.out << "\n";
    std::this_thread::sleep_for(std::chrono::seconds(k_watch_seconds));
  }
}

}  // namespace mlw::api
