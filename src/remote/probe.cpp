#include "mlw/remote/probe.hpp"

#include "mlw/exec/lease.hpp"

#include <algorithm>

#include <fmt/format.h>

#include <chrono>
#include <sstream>

#include "mlw/util/embedded.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/settings.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

std::vector<std::string> docker_words(const ComputeConfig& compute, const TargetFacts& facts) {
  if (compute.nvidia_docker && !facts.nvidia_runtime && facts.nvidia_docker_binary) {
    return compute.use_sudo ? std::vector<std::string>{"sudo", "-n", "nvidia-docker"}
                            : std::vector<std::string>{"nvidia-docker"};
  }
  return compute.use_sudo ? std::vector<std::string>{"sudo", "-n", "docker"}
                          : std::vector<std::string>{"docker"};
}

std::string engine_socket_lookup() {
  return "mlw_engine_pl=" + shell_quote(embedded_script("src/remote/engine.pl")) + "\n" +
         std::string(embedded_script("src/remote/engine.sh"));
}

std::string probe_script(const ComputeConfig& compute, const ProbeAsk& ask,
                         const std::string& image_tag, const std::string& ship, bool disk) {
  // The engine's answer about the image (mlw_http starts in ~9 ms, the docker CLI in ~60) is
  // asked side by side with the ship.
  const bool engine_query = ask.docker && !image_tag.empty() && !compute.use_sudo;
  // Its first line names the step in -vv's trace of each step.
  std::string script =
      "# mlw probe\nmlw_docker=" + shell_quote(ask.docker ? join(docker_words(compute), " ") : "") +
      "\nmlw_image=" + shell_quote(ask.docker ? image_tag : "") +
      "\nmlw_engine_query=" + (engine_query ? "1" : "") +
      "\nmlw_nvidia=" + (compute.nvidia_docker ? "1" : "") + "\nmlw_disk=" + (disk ? "1" : "") +
      "\nmlw_python=" + shell_quote(ask.python ? compute.python_location : "") +
      "\nmlw_ship=" + shell_quote(ship) + "\nmlw_section=" + shell_quote(ask.section) + "\n";
  if (engine_query) script += engine_socket_lookup();
  // The boot hook that restartAfterReboot would use, where it is wanted or doctor asks.
  if (ask.reboot && (disk || compute.restart.after_reboot)) {
    script += "mlw_reboot_probe=1\n" + std::string(embedded_script("src/exec/reboot.sh"));
  }
  // Whether the machine's lease folder is shared between its users, where doctor asks of a
  // target whose runs lease.
  if (disk && (compute.gpus_per_run != "all" || compute.max_concurrent_runs > 0)) {
    script += "mlw_lease_probe=" + shell_quote(lease_folder()) + "\n" +
              std::string(embedded_script("src/exec/lease_dir.sh"));
  }
  return script + std::string(embedded_script("src/remote/probe.sh"));
}

TargetFacts parse_probe(const std::string& output, ProbeShip* ship) {
  TargetFacts facts;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq);
    const std::string value = line.substr(eq + 1);
    auto status_detail = [&](bool& ok, std::string& detail) {
      ok = starts_with(value, "ok");
      detail = trim(value.substr(std::min<std::size_t>(value.size(), ok ? 2 : 4)));
    };
    if (key == "home") {
      facts.home = value;
    } else if (key == "docker") {
      status_detail(facts.docker_ok, facts.docker_detail);
    } else if (key == "python") {
      status_detail(facts.python_ok, facts.python_detail);
    } else if (key == "nvidia_runtime") {
      facts.nvidia_runtime = value == "yes";
    } else if (key == "image") {
      facts.image_present = value;
    } else if (key == "lease_dir") {
      facts.lease_dir = printable(value, 400);
    } else if (key == "lease_admin") {
      facts.lease_admin = printable(value, 400);
    } else if (key == "reboot_hook") {
      if (value == "crontab" || value == "systemd" || value == "none") facts.reboot_hook = value;
    } else if (key == "nvidia_docker") {
      facts.nvidia_docker_binary = value == "yes";
    } else if (key == "gpu") {
      const auto parts = split(value, ',');
      GpuInfo gpu;
      if (!parts.empty()) gpu.name = trim(parts[0]);
      if (parts.size() > 1) gpu.memory = trim(parts[1]);
      if (parts.size() > 2) gpu.driver = trim(parts[2]);
      facts.gpus.push_back(gpu);
    } else if (key == "ship") {
      if (!ship) continue;  // a ship's lines where none was asked for: a target that lies
      if (starts_with(value, "end ")) {
        if (const auto code = parse_integer(value.substr(4), 0, 255)) {
          ship->ended = static_cast<int>(*code);
        }
      } else if (ship->heard.size() < (1U << 20)) {
        ship->heard.push_back(value);
      }
    } else if (key == "disk_free_kb") {
      try {
        facts.disk_free_kb = std::stoull(value);
      } catch (const std::exception&) {
      }
    } else if (facts.section.size() < 4096) {
      facts.section.emplace_back(key, value);  // the kind's own lines (its probe section)
    }
  }
  return facts;
}

TargetFacts probe_target(Shell& shell, const ComputeConfig& compute, const ProbeAsk& ask,
                         const std::string& image_tag, ProbeShip* ship, bool disk) {
  const std::string question = ship ? ship->input : "";
  // The probe prints a few lines, and one per object asked about: more is a target that lies.
  const std::size_t bound = 65536 + 2 * question.size();
  ShellResult result;
  std::size_t offset = 0;
  ShellStreams streams;
  streams.on_output = [&](std::string_view chunk) {
    if (result.output.size() + chunk.size() > bound) {
      throw Error(fmt::format("cannot inspect {}: it answered the probe with more than {} bytes; "
                              "is a tool on its PATH replaced?",
                              shell.host(), bound),
                  exit_code::k_cannot_start);
    }
    result.output.append(chunk);
  };
  streams.on_errors = [&](std::string_view chunk) {
    if (result.errors.size() < 65536) result.errors.append(chunk.substr(0, 65536));
  };
  if (ship) {
    streams.read_input = [&](char* buffer, std::size_t size) {
      return read_held(question, offset, buffer, size);
    };
  }
  // Bounded on mlw's side: a tool of the target's that never returns (a replaced perl, curl or
  // docker; a hung engine) must not hang submit, prepare or doctor.
  const auto limit = std::chrono::seconds(setting("MLW_PROBE_TIMEOUT"));
  const auto deadline = std::chrono::steady_clock::now() + limit;
  bool timed_out = false;
  streams.should_stop = [&] {
    timed_out = timed_out || std::chrono::steady_clock::now() > deadline;
    return timed_out;
  };
  result.exit_code =
      shell.run(probe_script(compute, ask, image_tag, ship ? ship->script : "", disk), streams)
          .exit_code;
  if (timed_out) {
    throw Error(fmt::format("cannot inspect {}: the probe (docker, perl and curl there) did not "
                            "answer in {} s (MLW_PROBE_TIMEOUT); is one of them replaced by "
                            "something that does not return, or is its Docker engine hung?",
                            shell.host(), limit.count()),
                exit_code::k_cannot_start);
  }
  if (result.exit_code != 0) {
    throw Error("cannot inspect " + shell.host() + ": " + trim(result.errors),
                exit_code::k_cannot_start);
  }
  if (ship) {
    ship->heard.clear();
    ship->ended.reset();
  }
  TargetFacts facts = parse_probe(result.output, ship);
  if (facts.home.empty()) {
    throw Error("cannot inspect " + shell.host() + ": the login shell printed no HOME",
                exit_code::k_cannot_start);
  }
  return facts;
}

}  // namespace mlw
