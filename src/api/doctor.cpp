#include <fmt/format.h>

#include <functional>

#include "mlw/api/computetarget.hpp"
#include "mlw/config/targets.hpp"
#include "mlw/exec/place.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/remote/probe.hpp"
#include "mlw/remote/shell.hpp"
#include "mlw/util/strings.hpp"

// `mlw computetarget doctor`: one row per check, each with its fix.

namespace mlw::api {

nlohmann::ordered_json doctor_rows(Context& ctx, const std::string& name) {
  const Project& project = ctx.project();
  const ComputeConfig compute = load_compute(project, name);
  const TargetKind& kind = kind_of(compute.type);
  std::vector<CheckRow> rows;
  auto line = [&](const std::string& check, bool ok, const std::string& detail,
                  const std::string& fix = "") {
    rows.push_back({check, ok ? CheckResult::Ok : CheckResult::Fail, detail, fix});
  };
  std::unique_ptr<Shell> shell = kind.place->reach(ctx, name, compute, line);
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
  for (const CheckRow& row : rows) {
    const bool ok = row.result != CheckResult::Fail;
    list.push_back({{"check", row.name},
                    {"result", row.result == CheckResult::Ok     ? "ok"
                               : row.result == CheckResult::Fail ? "fail"
                                                                 : "-"},
                    {"detail", row.detail},
                    {"fix", ok ? "" : row.fix}});
  }
  return list;
}

int doctor(Context& ctx, const std::string& name) {
  const nlohmann::ordered_json list = doctor_rows(ctx, name);
  int failed = 0;
  for (const auto& row : list) failed += row["result"] == "fail" ? 1 : 0;
  ctx.output().print_list(
      list, {{"check", "CHECK"}, {"result", "RESULT"}, {"detail", "DETAIL"}, {"fix", "FIX"}});
  return failed;
}

}  // namespace mlw::api
