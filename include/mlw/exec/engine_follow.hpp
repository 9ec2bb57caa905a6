#pragma once
// Following a container run through the Docker Engine API to its end, through engine restarts.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "mlw/remote/docker_engine.hpp"

namespace mlw {

/// What following a container found.
struct EngineFollowResult {
  /// The container's end as the supervisor reads it: its exit code line (and `oom`), `bad-code
  /// TEXT` for an answer that is not 0-255, or empty when the engine gave none.
  std::string ending;
  bool engine_lost = false;     ///< the engine did not answer again within the bound
  bool container_gone = false;  ///< the engine answered again but no longer knows the container
  int outages = 0;              ///< times the connection broke and was made again
  double longest_outage_s = 0;  ///< the longest wait for the engine to answer again
};

/// What follow_container asks of its caller.
struct EngineFollowHooks {
  std::function<void(std::string_view)> on_log;  ///< the container's output, beyond `skip`
  std::function<bool()> canceled;                ///< true once the run should be stopped
  /// How long to wait for an engine that stopped answering (it was stopped or restarted).
  std::chrono::milliseconds return_bound{std::chrono::seconds(60)};
  /// How often to ask a silent engine again.
  std::chrono::milliseconds retry_every{std::chrono::milliseconds(250)};
  int max_outages = 10;  ///< reconnections at most: an engine that keeps breaking is lost
};

/// Follows container `id`'s log (stdout and stderr, after its first `skip` bytes) until it stops,
/// then reads its exit code and whether it was killed for memory. When the connection breaks
/// (the engine was killed or restarted), the engine is asked again every `retry_every` for up to
/// `return_bound`, and the log goes on from the byte where it broke: no line lost or doubled.
/// Cancelling asks the engine to stop the container (10 s, then SIGKILL), once.
EngineFollowResult follow_container(DockerEngine& engine, const std::string& id, std::uint64_t skip,
                                    const EngineFollowHooks& hooks);

}  // namespace mlw
