#pragma once

#include <filesystem>

#include "mlw/config/run_config.hpp"
#include "mlw/exec/executor.hpp"

namespace mlw::test {

/// A run of train.py in project `demo` (at `root`) on the remotedocker target `gpu`, base image
/// pytorch/pytorch:latest, with the target's default run configuration.
inline RunPlan demo_plan(const std::filesystem::path& root) {
  RunPlan plan;
  plan.project = {root, "demo"};
  plan.target_name = "gpu";
  plan.compute.type = "remotedocker";
  plan.compute.base_docker_image = "pytorch/pytorch:latest";
  plan.run_config = default_run_config("gpu");
  plan.script = "train.py";
  plan.record.run_id = "demo_1700000000000";
  plan.record.run_config = "gpu";
  return plan;
}

}  // namespace mlw::test
