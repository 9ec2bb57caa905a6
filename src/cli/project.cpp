#include "mlw/api/project.hpp"
#include "cli/app.hpp"

namespace mlw::cli {

void register_project(CLI::App& app, Context& ctx) {
  auto* group = app.add_subcommand("project", "Create projects");
  group->footer(examples(
      {"mlw project create -n demo", "mlw project create -n mnist --template pytorch-mnist"}));
  group->require_subcommand(1);
  auto* create = group->add_subcommand(
      "create", "Create a project folder with aml_config/ and a sample script");
  auto request = std::make_shared<api::CreateProjectRequest>();
  create->add_option("-n,--name", request->name, "Project name (letters, digits, _ and -)")
      ->required();
  create->add_option_function<std::string>(
      "-p,--path", [request](const std::string& v) { request->parent = v; },
      "Folder to create the project in (default: here)");
  create
      ->add_option("--template", request->template_name, "blank, pytorch-mnist or tensorflow-mnist")
      ->type_name("NAME");
  create->footer(examples({"mlw project create -n demo",
                           "mlw project create -n mnist -p ~/work --template pytorch-mnist"}));
  create->callback([&ctx, request] { api::create_project(ctx, *request); });
}

}  // namespace mlw::cli
