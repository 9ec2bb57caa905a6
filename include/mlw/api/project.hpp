#pragma once

#include <optional>
#include <string>

#include "mlw/context.hpp"

namespace mlw::api {

/// `mlw project create`.
struct CreateProjectRequest {
  std::string name;
  std::optional<std::string> parent;  ///< -p: the folder to create the project in
  std::string template_name = "blank";
};

/// Project templates: name and the examples/ folder it comes from.
const std::vector<std::pair<std::string, std::string>>& project_templates();

/// Creates the project folder with the layout of spec §1; prints what it wrote.
void create_project(Context& ctx, const CreateProjectRequest& request);

}  // namespace mlw::api
