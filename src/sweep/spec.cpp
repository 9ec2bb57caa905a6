// A sweep's definition: from `--name a,b` words and from a sweep file; checked and expanded.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <random>

#include "mlw/config/keys.hpp"
#include "mlw/history/params.hpp"
#include "mlw/sweep/sweep.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

constexpr const char* k_top_keys[] = {"method",        "count",     "seed",
                                      "maxConcurrent", "metric",    "parameters",
                                      "earlyStop",     "scheduler", "startup"};
constexpr const char* k_parameter_keys[] = {"values",  "range",      "step",
                                            "uniform", "loguniform", "int"};
constexpr const char* k_metric_keys[] = {"name", "goal"};
constexpr const char* k_early_keys[] = {"rule",     "metric",       "goal",
                                        "minSteps", "minCompleted", "eta"};
constexpr const char* k_scheduler_keys[] = {"type", "resource", "min", "max", "eta"};

template <std::size_t N>
std::vector<std::string> names_of(const char* const (&keys)[N]) {
  return {std::begin(keys), std::end(keys)};
}

/// Fails at an unknown key of a mapping, with a "did you mean".
void check_keys(const ConfigDocument& doc, const YAML::Node& map,
                const std::vector<std::string>& known, const std::string& where) {
  for (const auto& entry : map) {
    const std::string key = entry.first.Scalar();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    fail_at(doc, entry.first,
            fmt::format("unknown key \"{}\"{}{}", key, where, did_you_mean(key, known)));
  }
}

double number_at(const ConfigDocument& doc, const YAML::Node& node, std::string_view key) {
  const nlohmann::ordered_json value = typed_value(scalar_value(doc, node, key));
  if (!value.is_number()) fail_at(doc, node, fmt::format("{} must be a number", key));
  return value.get<double>();
}

/// `[low, high]` of a parameter's bounds.
std::pair<double, double> bounds_at(const ConfigDocument& doc, const YAML::Node& node,
                                    const std::string& key) {
  if (!node.IsSequence() || node.size() != 2) {
    fail_at(doc, node, fmt::format("{} must be two numbers: [low, high]", key));
  }
  const double low = number_at(doc, node[0], key);
  const double high = number_at(doc, node[1], key);
  if (!(low <= high))
    fail_at(doc, node, fmt::format("{} must be [low, high] with low <= high", key));
  return {low, high};
}

std::vector<nlohmann::ordered_json> range_values(const ConfigDocument& doc, const YAML::Node& at,
                                                 const std::string& name, double low, double high,
                                                 double step, bool integers) {
  if (step <= 0 || !std::isfinite(step)) {
    fail_at(doc, at, fmt::format("parameter {}: step must be more than 0", name));
  }
  const double count = std::floor((high - low) / step + 1e-9) + 1;
  if (count > 1e6)
    fail_at(doc, at, fmt::format("parameter {}: the range has over 1,000,000 values", name));
  std::vector<nlohmann::ordered_json> values;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(count); ++i) {
    const double value = low + static_cast<double>(i) * step;
    if (integers) {
      values.emplace_back(static_cast<std::int64_t>(std::llround(value)));
    } else {
      values.emplace_back(std::round(value * 1e12) /
                          1e12);  // 0.1 + 2*0.1 is 0.3, not 0.30000000000000004
    }
  }
  return values;
}

SweepParameter parameter_at(const ConfigDocument& doc, const std::string& name,
                            const YAML::Node& node) {
  SweepParameter parameter;
  if (!is_param_name(name)) {
    fail_at(doc, node,
            fmt::format("parameter \"{}\": a name is a letter or _, then letters, digits, _, . and "
                        "- (it is passed as --NAME VALUE)",
                        printable(name)));
  }
  parameter.name = name;
  if (node.IsSequence()) {
    for (const auto& item : node)
      parameter.values.push_back(typed_value(scalar_value(doc, item, name)));
    if (parameter.values.empty())
      fail_at(doc, node, fmt::format("parameter {} has no values", name));
    return parameter;
  }
  if (!node.IsMap()) {
    fail_at(doc, node,
            fmt::format("parameter {} must be a list of values or a mapping with one of values, "
                        "range, uniform, loguniform, int",
                        name));
  }
  check_keys(doc, node, names_of(k_parameter_keys), " in parameter " + name);
  if (node["values"]) return parameter_at(doc, name, node["values"]);
  if (const YAML::Node range = node["range"]) {
    const auto [low, high] = bounds_at(doc, range, "range");
    const YAML::Node step_node = node["step"];
    const double step = step_node ? number_at(doc, step_node, "step") : 1;
    const bool integers =
        std::floor(low) == low && std::floor(high) == high && std::floor(step) == step;
    parameter.values =
        range_values(doc, step_node ? step_node : range, name, low, high, step, integers);
    return parameter;
  }
  for (const char* kind : {"uniform", "loguniform", "int"}) {
    if (const YAML::Node bounds = node[kind]) {
      parameter.kind = kind;
      std::tie(parameter.low, parameter.high) = bounds_at(doc, bounds, kind);
      if (parameter.kind == "loguniform" && parameter.low <= 0) {
        fail_at(doc, bounds, "loguniform bounds must be more than 0");
      }
      // Bounds whose values a run could not be given as they are: an int past 2^53 (a double
      // holds no such whole number), a span past the largest double (every draw inf).
      constexpr double k_whole = 9007199254740992.0;  // 2^53
      if (parameter.kind == "int" && (std::floor(parameter.low) != parameter.low ||
                                      std::floor(parameter.high) != parameter.high ||
                                      parameter.low < -k_whole || parameter.high > k_whole)) {
        fail_at(doc, bounds,
                fmt::format("parameter {}: int bounds must be whole numbers from -2^53 to 2^53 "
                            "(-9007199254740992 to 9007199254740992)",
                            name));
      }
      if (!std::isfinite(parameter.high - parameter.low)) {
        fail_at(doc, bounds,
                fmt::format("parameter {}: {} bounds are too far apart to draw from (their "
                            "difference is past the largest number)",
                            name, kind));
      }
      return parameter;
    }
  }
  fail_at(doc, node,
          fmt::format("parameter {} needs one of values, range, uniform, loguniform, int", name));
}

void goal_at(const ConfigDocument& doc, const YAML::Node& node, bool& maximize) {
  const std::string goal = scalar_value(doc, node, "goal");
  if (goal != "min" && goal != "max")
    fail_at(doc, node, choices_message("goal", goal, {"min", "max"}));
  maximize = goal == "max";
}

void early_stop_at(const ConfigDocument& doc, const YAML::Node& node, EarlyStopSpec& early) {
  if (!node.IsMap())
    fail_at(doc, node, "earlyStop must be a mapping (rule, metric, goal, minSteps, …)");
  check_keys(doc, node, names_of(k_early_keys), " in earlyStop");
  if (const YAML::Node rule = node["rule"]) {
    early.rule = scalar_value(doc, rule, "rule");
    if (early.rule != "median" && early.rule != "asha") {
      fail_at(doc, rule, choices_message("rule", early.rule, {"median", "asha"}));
    }
  } else {
    fail_at(doc, node, "earlyStop needs a rule: median or asha");
  }
  if (const YAML::Node metric = node["metric"]) early.metric = scalar_value(doc, metric, "metric");
  if (const YAML::Node goal = node["goal"]) goal_at(doc, goal, early.maximize);
  const auto positive = [&](const char* key, int& out) {
    if (const YAML::Node value = node[key]) {
      out = int_value(doc, value, key);
      if (out < 1) fail_at(doc, value, fmt::format("{} must be 1 or more", key));
    }
  };
  positive("minSteps", early.min_steps);
  positive("minCompleted", early.min_completed);
  positive("eta", early.eta);
  if (early.eta < 2) fail_at(doc, node["eta"], "eta must be 2 or more");
}

void scheduler_at(const ConfigDocument& doc, const YAML::Node& node, SchedulerSpec& scheduler) {
  if (!node.IsMap())
    fail_at(doc, node, "scheduler must be a mapping (type, resource, min, max, eta)");
  check_keys(doc, node, names_of(k_scheduler_keys), " in scheduler");
  if (!node["type"]) fail_at(doc, node, "scheduler needs a type: asha or hyperband");
  scheduler.kind = scalar_value(doc, node["type"], "type");
  if (scheduler.kind != "asha" && scheduler.kind != "hyperband") {
    fail_at(doc, node["type"], choices_message("type", scheduler.kind, {"asha", "hyperband"}));
  }
  if (const YAML::Node resource = node["resource"])
    scheduler.resource = scalar_value(doc, resource, "resource");
  for (const auto& [key, out] : {std::pair<const char*, int*>{"min", &scheduler.min},
                                 {"max", &scheduler.max},
                                 {"eta", &scheduler.eta}}) {
    if (const YAML::Node value = node[key]) *out = int_value(doc, value, key);
  }
}

}  // namespace

SweepSpec load_sweep_file(const std::filesystem::path& path, const std::string& display_path) {
  ConfigDocument doc = load_config_file(path, display_path);
  SweepSpec spec;
  check_keys(doc, doc.root, names_of(k_top_keys), "");
  if (const YAML::Node method = doc.root["method"]) {
    spec.method = scalar_value(doc, method, "method");
    if (spec.method != "grid" && spec.method != "random" && spec.method != "tpe") {
      fail_at(doc, method, choices_message("method", spec.method, {"grid", "random", "tpe"}));
    }
  }
  if (const YAML::Node count = doc.root["count"]) {
    spec.count = int_value(doc, count, "count");
    if (spec.count < 1) fail_at(doc, count, "count must be 1 or more");
  }
  if (const YAML::Node startup = doc.root["startup"]) {
    spec.startup = int_value(doc, startup, "startup");
    if (spec.startup < 1) fail_at(doc, startup, "startup must be 1 or more");
  }
  if (const YAML::Node seed = doc.root["seed"]) {
    spec.seed = static_cast<std::uint64_t>(int_value(doc, seed, "seed"));
  }
  if (const YAML::Node concurrent = doc.root["maxConcurrent"]) {
    spec.max_concurrent = int_value(doc, concurrent, "maxConcurrent");
    if (spec.max_concurrent < 1) fail_at(doc, concurrent, "maxConcurrent must be 1 or more");
  }
  if (const YAML::Node metric = doc.root["metric"]) {
    if (!metric.IsMap()) fail_at(doc, metric, "metric must be a mapping: {name: loss, goal: min}");
    check_keys(doc, metric, names_of(k_metric_keys), " in metric");
    if (!metric["name"]) fail_at(doc, metric, "metric needs a name");
    spec.metric = scalar_value(doc, metric["name"], "name");
    if (const YAML::Node goal = metric["goal"]) goal_at(doc, goal, spec.maximize);
  }
  if (const YAML::Node parameters = doc.root["parameters"]) {
    if (!parameters.IsMap()) fail_at(doc, parameters, "parameters must be a mapping of names");
    for (const auto& entry : parameters) {
      spec.parameters.push_back(parameter_at(doc, entry.first.Scalar(), entry.second));
    }
  }
  if (const YAML::Node early = doc.root["earlyStop"]) {
    spec.early_stop.maximize = spec.maximize;  // the sweep's goal unless earlyStop gives one
    early_stop_at(doc, early, spec.early_stop);
  }
  if (const YAML::Node scheduler = doc.root["scheduler"]) {
    scheduler_at(doc, scheduler, spec.scheduler);
  }
  if (spec.method == "grid") {
    for (const auto& parameter : spec.parameters) {
      if (parameter.kind != "values" && parameter.kind != "int") {
        fail_at(
            doc, doc.root["parameters"][parameter.name],
            fmt::format("parameter {}: {} bounds need method: random or tpe (a grid needs values)",
                        parameter.name, parameter.kind));
      }
    }
  }
  return spec;
}

void sweep_lists_from_arguments(const std::vector<std::string>& words, SweepSpec& spec,
                                std::vector<std::string>& fixed) {
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    const bool option = word.size() > 2 && word.starts_with("--");
    std::string name;
    std::string list;
    if (option && word.find('=') != std::string::npos) {
      name = word.substr(2, word.find('=') - 2);
      list = word.substr(word.find('=') + 1);
    } else if (option && i + 1 < words.size()) {
      name = word.substr(2);
      list = words[i + 1];
    }
    if (name.empty() || list.find(',') == std::string::npos) {
      fixed.push_back(word);
      continue;
    }
    if (!is_param_name(name)) {
      throw UsageError(
          fmt::format("--{}: a swept parameter's name is a letter or _, then letters, "
                      "digits, _, . and -",
                      printable(name)));
    }
    if (word.find('=') == std::string::npos) ++i;
    SweepParameter parameter;
    parameter.name = name;
    for (const auto& item : split(list, ',')) {
      if (trim(item).empty()) {
        throw UsageError(fmt::format("--{} {}: an empty value in the list", name, list));
      }
      parameter.values.push_back(typed_value(trim(item)));
    }
    const auto same = std::find_if(spec.parameters.begin(), spec.parameters.end(),
                                   [&](const auto& p) { return p.name == name; });
    if (same != spec.parameters.end()) throw UsageError(fmt::format("--{} is swept twice", name));
    spec.parameters.push_back(std::move(parameter));
  }
}

namespace {

bool is_valid_resource(const std::string& name) {
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  });
}

void check_scheduler(const SweepSpec& spec) {
  const SchedulerSpec& s = spec.scheduler;
  if (s.kind.empty()) return;
  if (!spec.early_stop.rule.empty()) {
    throw UsageError(
        fmt::format("a sweep has either earlyStop or a scheduler ({}), not both", s.kind));
  }
  if (spec.metric.empty()) {
    throw UsageError(fmt::format(
        "the {} scheduler ranks trials by a metric: --metric NAME[:max], or metric: {{name: NAME}} "
        "in the sweep file",
        s.kind));
  }
  if (s.resource.empty() || !is_valid_resource(s.resource)) {
    throw UsageError(fmt::format(
        "the {} scheduler needs the resource its trials log as the metric's step (--resource "
        "epochs): a name of letters, digits, - and _",
        s.kind));
  }
  if (s.eta < 2) throw UsageError(fmt::format("eta must be 2 or more (got {})", s.eta));
  if (s.min < 1) throw UsageError(fmt::format("--min must be 1 or more (got {})", s.min));
  if (s.max < 1)
    throw UsageError(
        fmt::format("the {} scheduler needs --max N, the most a trial is given", s.kind));
  if (s.min > s.max) {
    throw UsageError(fmt::format(
        "--min {} is more than --max {}: the first rung must fit the budget", s.min, s.max));
  }
}

}  // namespace

void check_sweep_spec(const SweepSpec& spec) {
  if (spec.parameters.empty()) {
    throw UsageError(
        "no parameters to sweep: give lists after the script (--lr 0.1,0.01) or -f SWEEP.yml "
        "with parameters:");
  }
  if (spec.method != "grid" && spec.count < 1) {
    throw UsageError(fmt::format("method: {} needs count: N (how many points to {})", spec.method,
                                 spec.method == "tpe" ? "try" : "draw"));
  }
  if (spec.method == "tpe" && spec.metric.empty()) {
    throw UsageError(
        "method: tpe learns from a metric: --metric NAME[:max], or metric: {name: NAME} in the "
        "sweep file");
  }
  check_scheduler(spec);
  if (spec.early_stop.rule.empty()) return;
  if (spec.early_stop.metric.empty() && spec.metric.empty()) {
    throw UsageError(
        "earlyStop needs a metric (earlyStop: {metric: NAME} or metric: {name: NAME})");
  }
}

std::uint64_t sweep_size(const SweepSpec& spec) {
  if (spec.method != "grid") return static_cast<std::uint64_t>(std::max(spec.count, 0));
  std::uint64_t size = 1;
  for (const auto& parameter : spec.parameters) {
    const std::uint64_t n = parameter.kind == "int"
                                ? static_cast<std::uint64_t>(parameter.high - parameter.low) + 1
                                : parameter.values.size();
    if (n != 0 && size > UINT64_MAX / n) return UINT64_MAX;
    size *= n;
  }
  return size;
}

std::vector<nlohmann::ordered_json> expand_sweep(const SweepSpec& spec) {
  if (const std::uint64_t size = sweep_size(spec); size > k_sweep_points_bound) {
    throw UsageError(
        fmt::format("the sweep has {} points, more than {} (the most one sweep holds)",
                    size == UINT64_MAX ? std::string("over 18e18") : std::to_string(size),
                    k_sweep_points_bound));
  }
  std::vector<SweepParameter> parameters = spec.parameters;
  for (auto& parameter : parameters) {  // a grid takes every integer of int bounds
    if (spec.method == "grid" && parameter.kind == "int") {
      for (auto v = static_cast<std::int64_t>(parameter.low);
           v <= static_cast<std::int64_t>(parameter.high); ++v) {
        parameter.values.emplace_back(v);
      }
      parameter.kind = "values";
    }
  }
  std::vector<nlohmann::ordered_json> points;
  const std::uint64_t size = sweep_size(spec);
  if (spec.method == "tpe") {  // each point is proposed when it is launched
    return std::vector<nlohmann::ordered_json>(static_cast<std::size_t>(size),
                                               nlohmann::ordered_json::object());
  }
  points.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(size, 1u << 20)));
  if (spec.method == "random") {
    std::mt19937_64 random(spec.seed);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (std::uint64_t i = 0; i < size; ++i) {
      nlohmann::ordered_json point = nlohmann::ordered_json::object();
      for (const auto& p : parameters) {
        const double u = unit(random);
        if (p.kind == "values") {
          point[p.name] = p.values[std::min(
              p.values.size() - 1,
              static_cast<std::size_t>(u * static_cast<double>(p.values.size())))];
        } else if (p.kind == "uniform") {
          point[p.name] = p.low + u * (p.high - p.low);
        } else if (p.kind == "loguniform") {
          point[p.name] = std::exp(std::log(p.low) + u * (std::log(p.high) - std::log(p.low)));
        } else {
          point[p.name] = static_cast<std::int64_t>(std::floor(p.low + u * (p.high - p.low + 1)));
        }
      }
      points.push_back(std::move(point));
    }
    return points;
  }
  std::vector<std::size_t> index(parameters.size(), 0);
  for (std::uint64_t n = 0; n < size; ++n) {
    nlohmann::ordered_json point = nlohmann::ordered_json::object();
    for (std::size_t k = 0; k < parameters.size(); ++k)
      point[parameters[k].name] = parameters[k].values[index[k]];
    points.push_back(std::move(point));
    for (std::size_t k = parameters.size(); k-- > 0;) {  // the last parameter varies fastest
      if (++index[k] < parameters[k].values.size()) break;
      index[k] = 0;
    }
  }
  return points;
}

std::vector<std::string> point_arguments(const nlohmann::ordered_json& point) {
  std::vector<std::string> words;
  for (const auto& [name, value] : point.items()) {
    words.push_back("--" + name);
    words.push_back(param_text(value));
  }
  return words;
}

nlohmann::ordered_json SweepSpec::to_json() const {
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  for (const auto& p : parameters) {
    nlohmann::ordered_json one = {{"kind", p.kind}};
    if (p.kind == "values") {
      one["values"] = p.values;
    } else {
      one["low"] = p.low;
      one["high"] = p.high;
    }
    params[p.name] = one;
  }
  nlohmann::ordered_json out = {{"method", method},
                                {"count", count},
                                {"startup", startup},
                                {"seed", seed},
                                {"maxConcurrent", max_concurrent},
                                {"metric", metric},
                                {"goal", maximize ? "max" : "min"},
                                {"parameters", params}};
  if (!early_stop.rule.empty()) {
    out["earlyStop"] = {{"rule", early_stop.rule},
                        {"metric", early_stop.metric},
                        {"goal", early_stop.maximize ? "max" : "min"},
                        {"minSteps", early_stop.min_steps},
                        {"minCompleted", early_stop.min_completed},
                        {"eta", early_stop.eta}};
  }
  if (!scheduler.kind.empty()) {
    out["scheduler"] = {{"type", scheduler.kind},
                        {"resource", scheduler.resource},
                        {"min", scheduler.min},
                        {"max", scheduler.max},
                        {"eta", scheduler.eta}};
  }
  return out;
}

SweepSpec SweepSpec::from_json(const nlohmann::ordered_json& json) {
  try {
    return read_spec(json);
  } catch (const nlohmann::json::exception&) {
    return SweepSpec{};  // a value of the wrong type: a damaged record gives defaults
  }
}

SweepSpec SweepSpec::read_spec(const nlohmann::ordered_json& json) {
  SweepSpec spec;
  if (!json.is_object()) return spec;
  spec.method = json.value("method", "grid");
  spec.count = json.value("count", 0);
  spec.startup = json.value("startup", 10);
  spec.seed = json.value("seed", std::uint64_t{0});
  spec.max_concurrent = json.value("maxConcurrent", 0);
  spec.metric = json.value("metric", "");
  spec.maximize = json.value("goal", "min") == "max";
  if (const auto params = json.find("parameters"); params != json.end() && params->is_object()) {
    for (const auto& [name, one] : params->items()) {
      if (!one.is_object()) continue;
      SweepParameter p;
      p.name = name;
      p.kind = one.value("kind", "values");
      if (const auto values = one.find("values"); values != one.end() && values->is_array()) {
        for (const auto& v : *values) p.values.push_back(v);
      }
      p.low = one.value("low", 0.0);
      p.high = one.value("high", 0.0);
      spec.parameters.push_back(std::move(p));
    }
  }
  if (const auto early = json.find("earlyStop"); early != json.end() && early->is_object()) {
    spec.early_stop.rule = early->value("rule", "");
    spec.early_stop.metric = early->value("metric", "");
    spec.early_stop.maximize = early->value("goal", "min") == "max";
    spec.early_stop.min_steps = early->value("minSteps", 1);
    spec.early_stop.min_completed = early->value("minCompleted", 3);
    spec.early_stop.eta = early->value("eta", 3);
  }
  if (const auto scheduler = json.find("scheduler");
      scheduler != json.end() && scheduler->is_object()) {
    spec.scheduler.kind = scheduler->value("type", "");
    spec.scheduler.resource = scheduler->value("resource", "");
    spec.scheduler.min = scheduler->value("min", 1);
    spec.scheduler.max = scheduler->value("max", 0);
    spec.scheduler.eta = scheduler->value("eta", 3);
  }
  return spec;
}

}  // namespace mlw
