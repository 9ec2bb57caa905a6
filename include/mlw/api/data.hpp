#pragma once

#include <optional>
#include <string>

#include "mlw/context.hpp"

namespace mlw::api {

/// `mlw data add NAME PATH [-m MESSAGE]`: records a version of the folder (docs/data.md).
void data_add(Context& ctx, const std::string& name, const std::string& path,
              const std::string& message);
/// `mlw data list [NAME]`: every data set's versions (or one's).
void data_list(Context& ctx, const std::optional<std::string>& name);
/// `mlw data show NAME[@V]`: a version's files, size and the targets that hold it.
void data_show(Context& ctx, const std::string& spec);
/// `mlw data push NAME[@V] -c TARGET`: sends what the target's store lacks.
void data_push(Context& ctx, const std::string& spec, const std::string& target);
/// `mlw data verify -c TARGET [NAME[@V]]`: checks the store's objects by their hashes.
void data_verify(Context& ctx, const std::string& target, const std::optional<std::string>& spec);
/// `mlw data du -c TARGET`: the versions a target holds and the room they take.
void data_du(Context& ctx, const std::string& target);
/// `mlw data rm NAME@V [-c TARGET]`: forgets a version, or removes it from a target's store.
void data_rm(Context& ctx, const std::string& spec, const std::optional<std::string>& target);
/// `mlw data gc -c TARGET`: removes what no version held there references.
void data_gc(Context& ctx, const std::string& target);

}  // namespace mlw::api
