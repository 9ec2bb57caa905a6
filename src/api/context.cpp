#include "mlw/context.hpp"

namespace mlw {

const Project& Context::project() {
  if (!m_project) m_project = find_project(working_dir, project_dir);
  return *m_project;
}

}  // namespace mlw
