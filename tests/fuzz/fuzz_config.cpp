// The files users edit: .compute, .runconfig (YAML and the 2017 JSON) and conda_dependencies.yml.
// Bad input must be an mlw::Error (one line with its place), never another exception.
#include "fuzz_util.hpp"
#include "mlw/config/compute_file.hpp"
#include "mlw/config/keys.hpp"
#include "mlw/config/run_config.hpp"
#include "mlw/exec/container.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(mlw::fuzz::text(data, size));
  try {
    mlw::ConfigDocument doc = mlw::parse_config_text(input, "aml_config/x.compute");
    const mlw::ComputeConfig before = mlw::parse_compute(doc);
    mlw::ComputeConfig after = before;
    after.address = "gpu-vm.example.com:2222";
    after.nvidia_docker = !before.nvidia_docker;
    mlw::update_compute_text(input, "aml_config/x.compute", before, after, "x");
  } catch (const mlw::Error&) {
  }
  try {
    mlw::ConfigDocument doc = mlw::parse_config_text(input, "aml_config/x.runconfig");
    mlw::parse_run_config(doc);
  } catch (const mlw::Error&) {
  }
  mlw::RunPlan plan;
  plan.project.root = mlw::fuzz::scratch();
  plan.run_config.conda_dependencies_file = "conda_dependencies.yml";
  mlw::atomic_write_file(plan.project.root / "conda_dependencies.yml", input);
  try {
    mlw::environment_spec(plan);
  } catch (const mlw::Error&) {
  }
  return 0;
}
