#include "mlw/api/config.hpp"
#include "cli/app.hpp"

namespace mlw::cli {

namespace {

std::string keys_help() {
  std::string text =
      "\nKeys (each also an environment variable; a flag > the environment > the "
      "project's .mlw/config.yaml > $XDG_CONFIG_HOME/mlw/config.yaml):\n";
  for (const UserKey& key : user_keys()) {
    text += "  " + std::string(key.name) + " (" + std::string(key.env) +
            "): " + std::string(key.help) + "\n";
  }
  return text;
}

}  // namespace

void register_config(CLI::App& app, Context& ctx) {
  auto* group = app.add_subcommand("config", "Set mlw's defaults (target, output format, colours)");
  group->require_subcommand(1);
  group->footer(keys_help() + examples({"mlw config set defaults.target my_dsvm",
                                        "mlw config set defaults.output json --local",
                                        "mlw config list --show-origin"}));
  auto key = std::make_shared<std::string>();
  auto value = std::make_shared<std::string>();
  auto local = std::make_shared<bool>(false);
  auto show_origin = std::make_shared<bool>(false);
  const char* local_help = "The project's .mlw/config.yaml instead of your own";

  auto* set = group->add_subcommand("set", "Set a key in your config file (or the project's)");
  set->add_option("key", *key, "defaults.target, defaults.output, core.no_color, …")
      ->required()
      ->type_name("KEY");
  set->add_option("value", *value, "The value")->required()->type_name("VALUE");
  set->add_flag("--local", *local, local_help);
  set->footer(
      examples({"mlw config set defaults.target my_dsvm", "mlw config set core.no_color true"}));
  set->callback([&ctx, key, value, local] { api::config_set(ctx, *key, *value, *local); });

  auto* get = group->add_subcommand("get", "Print a key's value in effect");
  get->add_option("key", *key, "The key")->required()->type_name("KEY");
  get->footer(examples({"mlw config get defaults.target"}));
  get->callback([&ctx, key] { api::config_get(ctx, *key); });

  auto* list = group->add_subcommand("list", "List the values in effect");
  list->add_flag("--show-origin", *show_origin, "Say where each value comes from");
  list->footer(examples({"mlw config list --show-origin"}));
  list->callback([&ctx, show_origin] { api::config_list(ctx, *show_origin); });

  auto* unset =
      group->add_subcommand("unset", "Remove a key from your config file (or the project's)");
  unset->add_option("key", *key, "The key")->required()->type_name("KEY");
  unset->add_flag("--local", *local, local_help);
  unset->footer(examples({"mlw config unset defaults.target"}));
  unset->callback([&ctx, key, local] { api::config_unset(ctx, *key, *local); });
}

}  // namespace mlw::cli
