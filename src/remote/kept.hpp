#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "conversation.hpp"
#include "ssh_channel.hpp"

namespace mlw {

/// Where a kept connection for `key` (user, host, port, keys: what makes two logins the
/// same) listens: `folder`/<hash>.sock. nullopt (with a warning when the folder is not safe)
/// when connections are not to be kept: `folder` must be a real folder of this user's that no
/// one else may enter (0700), as OpenSSH asks of a ControlPath.
std::optional<std::filesystem::path> kept_socket(const std::filesystem::path& folder,
                                                 const std::string& key);

/// Asks the kept connection at `socket` for a conversation (a channel running
/// conversation_command(marker, ahead), `marker` and `ahead` set; `fresh`: a shell started now,
/// not one started ahead): the pipe, or nullptr when there is none, it belongs to another user,
/// is busy, or cannot open one within `timeout_ms` (its peer vanished); the caller then logs in
/// itself.
std::unique_ptr<ShellPipe> kept_open(const std::filesystem::path& socket, int timeout_ms,
                                     bool fresh, std::string& marker, bool& ahead);

/// A listening socket bound at `socket` for a connection about to be kept; -1 when another
/// process's connection already answers there (or binding fails).
int kept_listen(const std::filesystem::path& socket);

/// The kept connection's loop (in its own process): serves each client of this user on
/// `listen_fd` with a channel of `link`'s session, until it has had no client for `idle_s`
/// seconds or the session is gone; then removes `socket` (if still its own).
void kept_serve(const SshLink& link, int listen_fd, const std::filesystem::path& socket,
                int idle_s);

}  // namespace mlw
