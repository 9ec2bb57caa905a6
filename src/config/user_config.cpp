#include "mlw/config/user_config.hpp"

#include <fmt/format.h>

#include <cstdlib>

#include "mlw/config/keys.hpp"
#include "mlw/config/names.hpp"
#include "mlw/output/output.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

const std::vector<UserKey>& user_keys() {
  static const std::vector<UserKey> table = {
      {"defaults.target", "MLW_DEFAULT_TARGET", "-c", false,
       "the run configuration (target) `experiment submit` uses without -c"},
      {"defaults.output", "MLW_OUTPUT", "-o", false,
       "the output format: table, json, jsonc, tsv, yaml or none", "table"},
      {"core.no_color", "MLW_NO_COLOR", "--no-color", true, "no colours (NO_COLOR=1 too)", "false"},
      {"core.only_show_errors", "MLW_ONLY_SHOW_ERRORS", "--only-show-errors", true,
       "only errors on stderr", "false"},
  };
  return table;
}

namespace {

std::vector<std::string> key_names() {
  std::vector<std::string> names;
  for (const UserKey& key : user_keys()) names.emplace_back(key.name);
  return names;
}

}  // namespace

const UserKey& find_user_key(const std::string& name) {
  for (const UserKey& key : user_keys()) {
    if (key.name == name) return key;
  }
  throw UsageError(fmt::format("unknown config key \"{}\"{}; keys: {}", name,
                               did_you_mean(name, key_names()), join(key_names(), ", ")));
}

std::string check_user_value(const UserKey& key, const std::string& text,
                             const std::string& where) {
  if (key.boolean) {
    for (const char* yes : {"true", "yes", "on", "1"}) {
      if (text == yes) return "true";
    }
    for (const char* no : {"false", "no", "off", "0"}) {
      if (text == no) return "false";
    }
    throw UsageError(fmt::format("{} must be true or false (got \"{}\")", where, text));
  }
  try {
    if (key.name == "defaults.output") parse_output_format(text);
    if (key.name == "defaults.target") validate_name(text, "target name");
  } catch (const Error& e) {
    throw UsageError(fmt::format("{}: {}", where, e.what()));
  }
  return text;
}

std::map<std::string, std::string> read_user_config(const fs::path& path,
                                                    const std::string& display_path) {
  std::map<std::string, std::string> values;
  const auto text = read_file_if_exists(path);
  if (!text) return values;
  const ConfigDocument doc = parse_config_text(*text, display_path);
  for (const auto& section : doc.root) {
    const std::string name = section.first.IsScalar() ? section.first.Scalar() : "";
    if (!section.second.IsMap()) {
      fail_at(doc, section.first,
              fmt::format("\"{}\" must hold keys (such as defaults: {{target: NAME}}); keys: {}",
                          name, join(key_names(), ", ")));
    }
    for (const auto& entry : section.second) {
      const std::string key = name + "." + (entry.first.IsScalar() ? entry.first.Scalar() : "");
      const UserKey* known = nullptr;
      for (const UserKey& row : user_keys()) known = row.name == key ? &row : known;
      if (!known) {
        fail_at(doc, entry.first,
                fmt::format("unknown config key \"{}\"{}", key, did_you_mean(key, key_names())));
      }
      const std::string value = scalar_value(doc, entry.second, key);
      try {
        values[key] = check_user_value(*known, value, key);
      } catch (const Error& e) {
        fail_at(doc, entry.second, e.what());
      }
    }
  }
  return values;
}

void write_user_config(const fs::path& path, const std::map<std::string, std::string>& values) {
  if (values.empty()) {
    std::error_code ec;
    fs::remove(path, ec);
    if (ec) throw Error(fmt::format("cannot remove {}: {}", path.string(), ec.message()));
    return;
  }
  std::string text = "# mlw's settings: mlw config set|get|list|unset (docs/cli.md)\n";
  std::string section;
  for (const auto& [key, value] : values) {
    const std::size_t dot = key.find('.');
    if (key.substr(0, dot) != section) {
      section = key.substr(0, dot);
      text += section + ":\n";
    }
    const bool boolean = find_user_key(key).boolean;
    text += fmt::format("  {}: {}\n", key.substr(dot + 1), boolean ? value : yaml_quote(value));
  }
  make_directories(path.parent_path(), 0700);
  atomic_write_file(path, text, 0644);
}

std::map<std::string, ConfigValue> effective_config(const fs::path& user_file,
                                                    const std::optional<fs::path>& project_file,
                                                    const std::string& project_display) {
  std::map<std::string, ConfigValue> out;
  for (const auto& [key, value] : read_user_config(user_file, user_file.string())) {
    out[key] = {value, "user: " + user_file.string()};
  }
  if (project_file) {
    for (const auto& [key, value] : read_user_config(*project_file, project_display)) {
      out[key] = {value, "project: " + project_display};
    }
  }
  for (const UserKey& key : user_keys()) {
    const char* env = std::getenv(std::string(key.env).c_str());
    if (!env || !*env) continue;
    out[std::string(key.name)] = {check_user_value(key, env, std::string(key.env)),
                                  "env: " + std::string(key.env)};
  }
  return out;
}

}  // namespace mlw
