#include "mlw/exec/engine_follow.hpp"

#include <algorithm>
#include <thread>

#include <nlohmann/json.hpp>

#include "mlw/util/error.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

using std::chrono::steady_clock;

/// Asks the engine until it answers, for at most the hooks' bound; the seconds waited go to
/// `waited_s`. False when it did not answer in time.
bool await_engine(DockerEngine& engine, const EngineFollowHooks& hooks, double& waited_s) {
  const auto start = steady_clock::now();
  while (true) {
    try {
      if (engine.request("GET", "/_ping").status == 200) {
        waited_s = std::chrono::duration<double>(steady_clock::now() - start).count();
        return true;
      }
    } catch (const Error&) {
    }
    if (steady_clock::now() - start >= hooks.return_bound) {
      waited_s = std::chrono::duration<double>(steady_clock::now() - start).count();
      return false;
    }
    std::this_thread::sleep_for(hooks.retry_every);
  }
}

/// The container's end from the engine's answer to `/wait`: the exit code line (and `oom` when
/// the kernel killed it for memory), `bad-code TEXT` for a code outside 0-255, empty for none.
std::string ending_of(DockerEngine& engine, const std::string& id, const EngineResponse& waited) {
  const auto result = nlohmann::json::parse(waited.body, nullptr, false);
  if (waited.status != 200 || !result.is_object() || !result.contains("StatusCode")) return "";
  const auto& code = result["StatusCode"];
  if (!code.is_number_integer() || code.get<long long>() < 0 || code.get<long long>() > 255) {
    return "bad-code " + printable(code.dump()) + "\n";
  }
  std::string ending = std::to_string(code.get<int>()) + "\n";
  if (code.get<int>() == 137) {
    const auto state = nlohmann::json::parse(
        engine.request("GET", "/containers/" + id + "/json").body, nullptr, false);
    if (state.is_object() && state.contains("State") && state["State"].is_object() &&
        state["State"].value("OOMKilled", false)) {
      ending += "oom\n";
    }
  }
  return ending;
}

}  // namespace

EngineFollowResult follow_container(DockerEngine& engine, const std::string& id, std::uint64_t skip,
                                    const EngineFollowHooks& hooks) {
  EngineFollowResult result;
  std::uint64_t delivered = skip;  // log bytes before this point are already with the caller
  bool stop_sent = false;
  while (true) {
    try {
      // Each attempt reads the log from its start (the engine keeps it) and passes on only what
      // lies beyond `delivered`.
      std::uint64_t position = 0;
      DockerStreamDemuxer demuxer([&](int, std::string_view payload) {
        const std::uint64_t end = position + payload.size();
        if (end > delivered) {
          hooks.on_log(payload.substr(static_cast<std::size_t>(delivered - position)));
          delivered = end;
        }
        position = end;
      });
      const int status = engine.stream(
          "GET", "/containers/" + id + "/logs?follow=1&stdout=1&stderr=1",
          [&](std::string_view chunk) { demuxer.feed(chunk); },
          [&] {
            if (stop_sent || !hooks.canceled || !hooks.canceled()) return;
            engine.request("POST", "/containers/" + id + "/stop?t=10");
            stop_sent = true;
          });
      const EngineResponse waited = engine.request("POST", "/containers/" + id + "/wait");
      if (result.outages > 0 && (status == 404 || waited.status == 404)) {
        result.container_gone = true;
        return result;
      }
      result.ending = ending_of(engine, id, waited);
      return result;
    } catch (const Error&) {
      // The engine stopped answering mid-way (killed, restarted) or sent something unreadable.
      if (result.outages >= hooks.max_outages) {
        result.engine_lost = true;
        return result;
      }
      ++result.outages;
      double waited_s = 0;
      const bool back = await_engine(engine, hooks, waited_s);
      result.longest_outage_s = std::max(result.longest_outage_s, waited_s);
      if (!back) {
        result.engine_lost = true;
        return result;
      }
    }
  }
}

}  // namespace mlw
