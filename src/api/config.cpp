#include "mlw/api/config.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "mlw/util/fs.hpp"

namespace mlw::api {

namespace {

struct ConfigFile {
  fs::path path;
  std::string display;
};

ConfigFile file_of(Context& ctx, bool local) {
  if (!local) {
    const fs::path path = ctx.config_dir / "config.yaml";
    return {path, path.string()};
  }
  const Project& project = ctx.project();
  const fs::path path = project.state_dir() / "config.yaml";
  return {path, project.display(path)};
}

/// Says so when a variable set now hides the value just written.
void warn_if_overridden(const UserKey& key) {
  const char* env = std::getenv(std::string(key.env).c_str());
  if (env && *env) {
    spdlog::warn("{} is set in the environment and takes precedence over this file", key.env);
  }
}

}  // namespace

void config_set(Context& ctx, const std::string& key, const std::string& value, bool local) {
  const UserKey& spec = find_user_key(key);
  const std::string checked = check_user_value(spec, value, key);
  const ConfigFile file = file_of(ctx, local);
  auto values = read_user_config(file.path, file.display);
  values[key] = checked;
  write_user_config(file.path, values);
  warn_if_overridden(spec);
}

void config_get(Context& ctx, const std::string& key) {
  find_user_key(key);
  const auto it = ctx.config.find(key);
  if (it == ctx.config.end()) {
    throw Error(fmt::format("{} is not set (set it with: mlw config set {} VALUE)", key, key));
  }
  if (ctx.output().structured()) {
    ctx.output().print_object(
        {{"key", key}, {"value", it->second.value}, {"origin", it->second.origin}});
  } else if (ctx.output_format != OutputFormat::None) {
    *ctx.out << it->second.value << "\n";
  }
}

void config_list(Context& ctx, bool show_origin) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const UserKey& key : user_keys()) {
    // Every key, with the default in effect where nothing sets it (as `git config --list
    // --show-origin` cannot, and `az config` does not): what mlw will do, not only what is set.
    const auto it = ctx.config.find(std::string(key.name));
    if (it == ctx.config.end()) {
      rows.push_back({{"key", key.name},
                      {"value", key.fallback.empty() ? nlohmann::ordered_json()
                                                     : nlohmann::ordered_json(key.fallback)},
                      {"origin", "default"}});
      continue;
    }
    rows.push_back({{"key", key.name}, {"value", it->second.value}, {"origin", it->second.origin}});
  }
  std::vector<Column> columns = {{"key", "KEY"}, {"value", "VALUE"}};
  if (show_origin) columns.push_back({"origin", "ORIGIN"});
  ctx.output().print_list(rows, columns);
}

void config_unset(Context& ctx, const std::string& key, bool local) {
  find_user_key(key);
  const ConfigFile file = file_of(ctx, local);
  auto values = read_user_config(file.path, file.display);
  if (values.erase(key) == 0) {
    throw Error(fmt::format("{} is not set in {}", key, file.display));
  }
  write_user_config(file.path, values);
}

}  // namespace mlw::api
