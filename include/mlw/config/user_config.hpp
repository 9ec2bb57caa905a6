#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlw {

/// One key of mlw's own settings (`mlw config`), with the environment variable that overrides it.
struct UserKey {
  std::string_view name;           ///< "section.key", e.g. "defaults.target"
  std::string_view env;            ///< e.g. "MLW_DEFAULT_TARGET"
  std::string_view flag;           ///< the command-line option that overrides both, e.g. "-o"
  bool boolean = false;            ///< true or false; otherwise text checked by the key's own rule
  std::string_view help;           ///< one line, for `mlw config --help` and docs/cli.md
  std::string_view fallback = "";  ///< the value in effect when nothing sets it ("": none)
};

/// The table of keys `mlw config` knows.
const std::vector<UserKey>& user_keys();

/// The key named `name`; throws mlw::UsageError with a "did you mean" otherwise.
const UserKey& find_user_key(const std::string& name);

/// `text` checked for `key` ("yes" as "true", a format or target name as given); throws
/// mlw::UsageError naming `where` (a flag, a variable) when it does not fit.
std::string check_user_value(const UserKey& key, const std::string& text, const std::string& where);

/// A value in effect and where it came from ("env: MLW_OUTPUT", "project: .mlw/config.yaml").
struct ConfigValue {
  std::string value;
  std::string origin;
};

/// The values of one config file ("section.key" → text). A missing file is empty; a broken
/// one, an unknown key or a value of the wrong type throws mlw::Error at file:line:column.
std::map<std::string, std::string> read_user_config(const std::filesystem::path& path,
                                                    const std::string& display_path);

/// Writes `values` to `path` atomically, as nested YAML; an empty map removes the file.
void write_user_config(const std::filesystem::path& path,
                       const std::map<std::string, std::string>& values);

/// The values in effect, key by key: environment over the project's file over the user's.
/// `project_file` is empty outside a project.
std::map<std::string, ConfigValue> effective_config(
    const std::filesystem::path& user_file,
    const std::optional<std::filesystem::path>& project_file, const std::string& project_display);

}  // namespace mlw
