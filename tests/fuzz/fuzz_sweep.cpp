// A sweep file (a cloned project's may be hostile), a sweep's recorded JSON, and the parameters
// read from arguments: bad input is an mlw::Error, never another exception or a huge expansion.
#include "fuzz_util.hpp"
#include "mlw/history/params.hpp"
#include "mlw/history/sweep_record.hpp"
#include "mlw/sweep/sweep.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/json_text.hpp"
#include "mlw/util/strings.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(mlw::fuzz::text(data, size));
  const auto file = mlw::fuzz::scratch() / "sweep.yml";
  mlw::atomic_write_file(file, input);
  try {
    mlw::SweepSpec spec = mlw::load_sweep_file(file, "sweep.yml");
    mlw::check_sweep_spec(spec);
    if (mlw::sweep_size(spec) <= 2000) {
      for (const auto& point : mlw::expand_sweep(spec)) mlw::point_arguments(point);
    }
    mlw::SweepSpec::from_json(spec.to_json());
    if (spec.method == "tpe") {  // proposals, learning from the trials before them
      std::vector<mlw::TpeTrial> trials;
      for (std::uint64_t i = 0; i < 6; ++i) {
        mlw::TpeTrial trial;
        trial.point = mlw::tpe_propose(spec, trials, i);
        trial.value = static_cast<double>(data[i % size]) / 7.0;
        trial.stopped = data[(i + 1) % size] % 3 == 0;
        trials.push_back(std::move(trial));
      }
    }
    if (!spec.scheduler.kind.empty()) {  // the input's bytes as a learning curve
      std::map<std::pair<int, int>, std::vector<double>> rungs;
      std::vector<std::string> notes;
      mlw::TrialSeries series;
      mlw::TrialRungs mine;
      mine.bracket = static_cast<int>(
          size % static_cast<std::size_t>(mlw::scheduler_brackets(spec.scheduler)));
      for (std::size_t i = 0; i < std::min<std::size_t>(size, 200); ++i) {
        series.steps.push_back(static_cast<double>(i + 1));
        series.values.push_back(static_cast<double>(data[i]) - 100.0);
        mlw::scheduler_verdict(spec.scheduler, spec.maximize, spec.metric, series, rungs, mine,
                               notes);
      }
    }
  } catch (const mlw::Error&) {
  }
  const auto json = nlohmann::ordered_json::parse(input, nullptr, false);
  if (!json.is_discarded() && mlw::json_depth(json) <= 64) {
    mlw::SweepSpec::from_json(json).to_json().dump();
    mlw::SweepRecord::from_json(json).to_json().dump();
  }
  const auto words = mlw::split(input, '\n');
  // Values may be any bytes: records make them JSON-safe (make_json_safe) before they are written.
  mlw::params_from_arguments(words).dump(-1, ' ', false,
                                         nlohmann::ordered_json::error_handler_t::replace);
  mlw::parse_param_line(input);
  return 0;
}
