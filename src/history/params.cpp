#include "mlw/history/params.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "mlw/history/collect.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

}  // namespace

bool is_param_name(std::string_view name) {
  if (name.empty() || name.size() > 200) return false;
  const char first = name[0];
  if (!((first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z') || first == '_')) {
    return false;
  }
  for (const char c : name) {
    if (!name_char(c)) return false;
  }
  return true;
}

namespace {

bool is_number_text(std::string_view text) {
  return typed_value(text).is_number();
}

/// Hydra's `name=value` (`+name=value`): a parameter of its own, never an option's value.
bool is_override(std::string_view word) {
  while (word.starts_with('+')) word.remove_prefix(1);
  const auto eq = word.find('=');
  return eq != std::string_view::npos && is_param_name(word.substr(0, eq));
}

}  // namespace

nlohmann::ordered_json typed_value(std::string_view text) {
  if (!text.empty() && text.size() < 64) {
    std::int64_t integer = 0;
    const char* end = text.data() + text.size();
    const char* start = text.data() + (text[0] == '+' ? 1 : 0);
    if (auto [ptr, ec] = std::from_chars(start, end, integer); ec == std::errc() && ptr == end) {
      return integer;
    }
    double number = 0;
    if (auto [ptr, ec] = std::from_chars(start, end, number);
        ec == std::errc() && ptr == end && std::isfinite(number)) {
      return number;
    }
  }
  const std::string lower = lower_ascii(std::string(text));
  if (lower == "true") return true;
  if (lower == "false") return false;
  return std::string(text);
}

nlohmann::ordered_json params_from_arguments(const std::vector<std::string>& arguments) {
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const std::string& word = arguments[i];
    std::string_view body = word;
    if (body.size() > 2 && body.starts_with("--")) {
      body.remove_prefix(2);
    } else if (body.size() > 1 && body[0] == '-' && !is_number_text(body)) {
      body.remove_prefix(1);
    } else {
      // Hydra: name=value, +name=value (added), ++name=value (forced); ~name removes.
      while (body.starts_with('+')) body.remove_prefix(1);
      const auto eq = body.find('=');
      if (eq == std::string_view::npos || !is_param_name(body.substr(0, eq))) continue;
      params[std::string(body.substr(0, eq))] = typed_value(body.substr(eq + 1));
      continue;
    }
    const auto eq = body.find('=');
    const std::string_view name = body.substr(0, eq);
    if (!is_param_name(name)) continue;
    if (eq != std::string_view::npos) {
      params[std::string(name)] = typed_value(body.substr(eq + 1));
    } else if (i + 1 < arguments.size() && !is_override(arguments[i + 1]) &&
               (!arguments[i + 1].starts_with('-') || is_number_text(arguments[i + 1]))) {
      params[std::string(name)] = typed_value(arguments[++i]);
    } else {
      params[std::string(name)] = true;
    }
  }
  return params;
}

std::optional<std::pair<std::string, nlohmann::ordered_json>> parse_param_line(
    std::string_view line) {
  if (line.find("\"param\"") == std::string_view::npos || line.size() > k_max_metric_line) {
    return std::nullopt;
  }
  auto json = nlohmann::ordered_json::parse(line, nullptr, false);
  if (json.is_discarded() || !json.is_object() || json.contains("name")) return std::nullopt;
  const auto name = json.find("param");
  const auto value = json.find("value");
  if (name == json.end() || !name->is_string() || value == json.end()) return std::nullopt;
  if (!value->is_primitive() || value->is_null()) return std::nullopt;
  const std::string text = name->get<std::string>();
  if (text.empty() || text.size() > 200) return std::nullopt;
  return std::make_pair(text, *value);
}

nlohmann::ordered_json logged_params(const std::filesystem::path& metrics_file) {
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  for_each_metric(
      metrics_file, [](const std::string&, const nlohmann::ordered_json&) {},
      [&](const std::string& name, nlohmann::ordered_json value) {
        params[name] = std::move(value);
      });
  return params;
}

std::string param_text(const nlohmann::ordered_json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number_integer()) return std::to_string(value.get<std::int64_t>());
  if (value.is_number()) return fmt::format("{}", value.get<double>());
  return value.dump();
}

}  // namespace mlw
