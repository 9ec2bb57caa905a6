#pragma once

#include <string>

#include "mlw/context.hpp"

namespace mlw::api {

/// `mlw config set KEY VALUE`: in the user's file, or the project's with `local`.
void config_set(Context& ctx, const std::string& key, const std::string& value, bool local);
/// `mlw config get KEY`: the value in effect; fails (1) when the key is set nowhere.
void config_get(Context& ctx, const std::string& key);
/// `mlw config list`: every value in effect; `show_origin` adds where each came from.
void config_list(Context& ctx, bool show_origin);
/// `mlw config unset KEY`: removes it from the user's file, or the project's with `local`.
void config_unset(Context& ctx, const std::string& key, bool local);

}  // namespace mlw::api
