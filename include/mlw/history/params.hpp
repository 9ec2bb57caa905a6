#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace mlw {

/// A parameter's name: a letter or _ first, then letters, digits, _, . and - (ASCII).
bool is_param_name(std::string_view name);

/// A parameter's value read from text: an integer, a finite number, true/false (any case),
/// else the text itself.
nlohmann::ordered_json typed_value(std::string_view text);

/// The parameters in a script's arguments (docs/sweeps.md): `--lr 0.1`, `--lr=0.1`, `-lr 0.1`,
/// Hydra's `lr=0.1` (`+lr=0.1` too), and `--flag` (true) before another option, a Hydra
/// override or the end.
/// Positional arguments are not parameters. A later value of a name wins.
nlohmann::ordered_json params_from_arguments(const std::vector<std::string>& arguments);

/// A `mlw.log_param` line of a metrics file (`{"param": NAME, "value": SCALAR}`): the name and
/// the value, or nullopt for any other line.
std::optional<std::pair<std::string, nlohmann::ordered_json>> parse_param_line(
    std::string_view line);

/// The parameters a script logged with `mlw.log_param`, in order (a later value wins).
nlohmann::ordered_json logged_params(const std::filesystem::path& metrics_file);

/// A parameter value as an argument's text (`0.001`, `64`, `true`, `adam`).
std::string param_text(const nlohmann::ordered_json& value);

}  // namespace mlw
