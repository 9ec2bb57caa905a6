#include "mlw/context.hpp"

#include "mlw/exec/executor.hpp"

namespace mlw {

const Project& Context::project() {
  if (!m_project) m_project = find_project(working_dir, project_dir);
  return *m_project;
}

std::unique_ptr<Executor> Context::executor(const std::string& type) {
  if (!executors) throw Error("internal: no executors in this context");
  return executors->make(type);
}

}  // namespace mlw
