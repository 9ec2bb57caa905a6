#include "mlw/remote/ssh_config.hpp"

#include <glob.h>

#include <fmt/format.h>

#include <memory>
#include <set>

#include "mlw/util/fs.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

constexpr int k_max_include_depth = 16;

/// Keys mlw reads; every other key in a block that applies is named once at -v.
const std::set<std::string> k_known = {"host",
                                       "match",
                                       "include",
                                       "hostname",
                                       "port",
                                       "user",
                                       "identityfile",
                                       "proxycommand",
                                       "proxyjump",
                                       "userknownhostsfile",
                                       "stricthostkeychecking",
                                       "identitiesonly"};

/// Words of a value: spaces separate, double quotes group.
std::vector<std::string> words_of(const std::string& value) {
  std::vector<std::string> words;
  std::string word;
  bool quoted = false, any = false;
  for (const char c : value) {
    if (c == '"') {
      quoted = !quoted;
      any = true;
    } else if (!quoted && (c == ' ' || c == '\t')) {
      if (any) words.push_back(word);
      word.clear();
      any = false;
    } else {
      word += c;
      any = true;
    }
  }
  if (any) words.push_back(word);
  return words;
}

/// A Match criterion's comma-separated pattern list (Match host a,!b), case-insensitive.
bool criterion_matches(const std::string& list, const std::string& name) {
  return pattern_list_matches(split(list, ','), name, true);
}

/// A proxy setting that is set and not "none".
bool real(const std::optional<std::string>& value) {
  return value && *value != "none";
}

struct Reader {
  const std::string& alias;
  const SshConfigContext& context;
  SshConfigEntry entry;
  std::set<std::string> named;

  std::string expand_host_name(const std::string& value) const {
    std::string out;
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (value[i] == '%' && i + 1 < value.size() && (value[i + 1] == 'h' || value[i + 1] == '%')) {
        out += value[i + 1] == 'h' ? alias : "%";
        ++i;
      } else {
        out += value[i];
      }
    }
    return out;
  }

  /// Evaluates a Match line's criteria (all must hold).
  bool match(const std::vector<std::string>& words, const std::string& where) {
    bool result = true;
    for (std::size_t i = 0; i < words.size(); ++i) {
      std::string criterion = lower_ascii(words[i]);
      const bool negated = starts_with(criterion, "!");
      if (negated) criterion.erase(0, 1);
      bool holds = false;
      if (criterion == "all") {
        holds = true;
      } else if (i + 1 >= words.size()) {
        return false;
      } else {
        const std::string& argument = words[++i];
        const std::string host = entry.host_name ? *entry.host_name : alias;
        if (criterion == "host") {
          holds = criterion_matches(argument, host);
        } else if (criterion == "originalhost") {
          holds = criterion_matches(argument, alias);
        } else if (criterion == "user") {
          holds = criterion_matches(argument, entry.user.value_or(context.local_user));
        } else if (criterion == "localuser") {
          holds = criterion_matches(argument, context.local_user);
        } else {
          name_unsupported(where, "Match " + criterion);
          return false;
        }
      }
      result = result && (holds != negated);
    }
    return result;
  }

  void name_unsupported(const std::string& where, const std::string& key) {
    if (named.insert(lower_ascii(key)).second) entry.unsupported.push_back(where + ": " + key);
  }

  void include(const std::vector<std::string>& patterns, int depth) {
    for (const auto& pattern : patterns) {
      std::string path = pattern;
      if (starts_with(path, "~/")) path = (context.home / path.substr(2)).string();
      if (!path.empty() && path[0] != '/') path = (context.ssh_dir / path).string();
      // Freed however the loop ends: an included file that is refused throws out of read().
      glob_t found{};
      const std::unique_ptr<glob_t, void (*)(glob_t*)> release(&found, ::globfree);
      if (::glob(path.c_str(), 0, nullptr, &found) == 0) {
        for (std::size_t i = 0; i < found.gl_pathc; ++i) {
          // As OpenSSH: a folder (or anything else that is not a file) named by Include is skipped.
          std::error_code ignored;
          if (!fs::is_regular_file(found.gl_pathv[i], ignored)) continue;
          if (const auto text = read_file_if_exists(found.gl_pathv[i])) {
            read(*text, found.gl_pathv[i], depth + 1);
          }
        }
      }
    }
  }

  void set(const std::string& key, const std::vector<std::string>& words, const std::string& line,
           const std::string& where) {
    const std::string& value = words[0];
    if (key == "hostname" && !entry.host_name) {
      entry.host_name = expand_host_name(value);
    } else if (key == "port" && !entry.port) {
      if (const auto port = parse_integer(value, 1, 65535)) entry.port = static_cast<int>(*port);
    } else if (key == "user" && !entry.user) {
      entry.user = value;
    } else if (key == "identityfile") {
      entry.identity_files.push_back(value);
    } else if (key == "proxycommand" && !entry.proxy_command && !real(entry.proxy_jump)) {
      // OpenSSH passes the rest of the line to the shell as written, quotes included.
      entry.proxy_command = line;
    } else if (key == "proxyjump" && !entry.proxy_jump && !real(entry.proxy_command)) {
      entry.proxy_jump = value;
    } else if (key == "userknownhostsfile" && entry.user_known_hosts_files.empty()) {
      entry.user_known_hosts_files = words;
    } else if (key == "stricthostkeychecking" && !entry.strict_host_key_checking) {
      const std::string v = lower_ascii(value);
      entry.strict_host_key_checking = v == "off" ? "no" : v == "true" ? "yes" : v;
    } else if (key == "identitiesonly" && !entry.identities_only) {
      entry.identities_only = lower_ascii(value) == "yes" || lower_ascii(value) == "true";
    } else if (!k_known.count(key)) {
      name_unsupported(where, key);
    }
  }

  void read(const std::string& text, const std::string& file, int depth) {
    if (depth > k_max_include_depth) return;
    bool active = true;  // lines before the first Host or Match apply to every host
    int number = 0;
    for (const auto& raw : split(text, '\n')) {
      ++number;
      const std::string line = trim(raw);
      if (line.empty() || line[0] == '#') continue;
      const std::size_t split_at = line.find_first_of(" \t=");
      if (split_at == std::string::npos) continue;
      const std::string key = lower_ascii(line.substr(0, split_at));
      std::string value = trim(line.substr(split_at));
      if (!value.empty() && value[0] == '=') value = trim(value.substr(1));
      const auto words = words_of(value);
      if (words.empty()) continue;
      const std::string where = fmt::format("{}:{}", file, number);
      if (key == "host") {
        // Host patterns are matched as typed (OpenSSH's match_pattern is case-sensitive).
        active = pattern_list_matches(words, alias, false);
      } else if (key == "match") {
        active = match(words, where);
      } else if (key == "include") {
        if (active) include(words, depth);
      } else if (active) {
        set(key, words, value, where);
      }
    }
  }
};

}  // namespace

SshConfigEntry read_ssh_config(const std::string& text, const std::string& alias,
                               const SshConfigContext& context, const std::string& file) {
  Reader reader{alias, context, {}, {}};
  reader.read(text, file, 0);
  return reader.entry;
}

SshConfigEntry read_ssh_config(const std::string& text, const std::string& alias) {
  static const SshConfigContext none{"/nonexistent", "/nonexistent", ""};
  return read_ssh_config(text, alias, none);
}

}  // namespace mlw
