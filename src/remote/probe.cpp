#include "mlw/remote/probe.hpp"

#include <algorithm>

#include <fmt/format.h>

#include <chrono>
#include <sstream>

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

namespace {

/// One HTTP/1.0 request on the engine's unix socket, in Perl with builtins only (perl-base is in
/// every Debian and Ubuntu; it starts in ~9 ms where curl takes ~20 and the docker CLI ~60).
/// Arguments: seconds, socket, method, path, body file or "", answer file or "". Prints the
/// status code. Exits 3 when it sent nothing (no socket, no connection: curl may try), 4 when
/// the request may have gone out (timeout, short write, no HTTP answer): nothing is asked again.
/// The answer is read up to 1 MiB; sockaddr_un is packed by hand (AF_UNIX 1, SOCK_STREAM 1).
constexpr const char* k_http_perl =
    "$SIG{ALRM}=sub{exit 4};alarm $ARGV[0];($t,$s,$m,$p,$i,$o)=@ARGV;$b=\"\";"
    "if($i ne \"\"){open(I,\"<\",$i)||exit 3;binmode I;local $/;$b=<I>;close I}"
    "socket(S,1,1,0)&&connect(S,pack(\"SZ*\",1,$s))||exit 3;binmode S;"
    "$q=\"$m $p HTTP/1.0\\r\\nHost: docker\\r\\n\".($i ne \"\"?\"Content-Type: application/json"
    "\\r\\nContent-Length: \".length($b).\"\\r\\n\":\"\").\"\\r\\n\".$b;"
    "while(length $q){$n=syswrite(S,$q);defined $n||exit 4;substr($q,0,$n)=\"\"}"
    "$r=\"\";while(length($r)<1048576){$n=sysread(S,$r,65536,length $r);defined $n||exit "
    "4;$n||last}"
    "$r=~m{^HTTP/1\\.[01] (\\d\\d\\d)[ \\r]}||exit 4;$c=$1;"
    "if($o ne \"\"){$x=index($r,\"\\r\\n\\r\\n\");open(O,\">\",$o)||exit 4;binmode O;"
    "print O substr($r,$x+4) if $x>=0;close O||exit 4}print $c";

}  // namespace

std::string engine_socket_lookup() {
  // As local_engine_socket (docker_engine.cpp): DOCKER_HOST=unix://PATH, else the default
  // socket unless a docker context is chosen; the socket must be one the user can write to.
  // mlw_http SECONDS METHOD PATH [BODY [ANSWER]] asks it (Perl, else curl) and prints the status.
  return "mlw_engine() {\n"
         "  case \"${DOCKER_HOST:-}\" in\n"
         "    unix://*) s=${DOCKER_HOST#unix://};;\n"
         "    '') case \"${DOCKER_CONTEXT:-default}\" in default) ;; *) return 1;; esac\n"
         "      c=$(sed -n 's/.*\"currentContext\" *: *\"\\([^\"]*\\)\".*/\\1/p' "
         "\"${DOCKER_CONFIG:-$HOME/.docker}/config.json\" 2>/dev/null)\n"
         "      case \"$c\" in ''|default) s=/var/run/docker.sock;; *) return 1;; esac;;\n"
         "    *) return 1;;\n"
         "  esac\n"
         "  [ -S \"$s\" ] && [ -w \"$s\" ] && { command -v perl || command -v curl; } >/dev/null "
         "2>&1\n"
         "}\n"
         "mlw_http() {\n"
         "  if command -v perl >/dev/null 2>&1; then\n"
         "    perl -e " +
         shell_quote(k_http_perl) +
         " \"$1\" \"$s\" \"$2\" \"$3\" \"${4:-}\" \"${5:-}\" </dev/null 2>/dev/null && return 0\n"
         "    [ $? = 4 ] && return 1\n"
         "  fi\n"
         "  command -v curl >/dev/null 2>&1 || return 1\n"
         "  if [ -n \"${4:-}\" ]; then\n"
         "    curl -s --max-time \"$1\" --unix-socket \"$s\" -X \"$2\" -H 'Content-Type: "
         "application/json' "
         "--data-binary \"@$4\" -o \"${5:-/dev/null}\" -w '%{http_code}' \"http://docker$3\" "
         "</dev/null 2>/dev/null\n"
         "  else\n"
         "    curl -s --max-time \"$1\" --unix-socket \"$s\" -X \"$2\" -o \"${5:-/dev/null}\" "
         "-w '%{http_code}' \"http://docker$3\" </dev/null 2>/dev/null\n"
         "  fi\n"
         "}\n";
}

std::string probe_script(const ComputeConfig& compute, const ProbeAsk& ask,
                         const std::string& image_tag, const std::string& ship, bool disk) {
  const bool uses_docker = ask.docker;
  std::string script = "echo \"home=$HOME\"\n";
  // The engine's answer about the image (mlw_http starts in ~9 ms, the docker CLI in ~60) is
  // asked first and read on fd 4 once the ship is done: the two run side by side.
  const bool engine_query = uses_docker && !image_tag.empty() && !compute.use_sudo;
  if (engine_query) {
    script += engine_socket_lookup() + "exec 3<&0\n{ mlw_engine && mlw_http 10 GET /images/" +
              shell_quote(image_tag) + "/json; } | {\nexec 4<&0 <&3 3<&-\n";
  }
  if (!ship.empty()) {
    // The ship reads the step's stdin; its lines come back as ship=LINE, its end as ship=end N.
    script += "{ ( " + ship + "); echo \"end $?\"; } 2>&1 | sed 's/^/ship=/'\ncd\n";
  }
  script +=
      "{ command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi "
      "--query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | "
      "sed 's/^/gpu=/'\n" +
      std::string(disk ? "df -Pk \"$HOME\" 2>/dev/null | awk 'NR==2{print \"disk_free_kb=\" $4}'"
                       : ":") +
      "; } &\n";
  if (uses_docker) {
    const std::string d = shell_join(docker_words(compute));
    const std::string info =
        "if v=$(" + d +
        " info --format '{{.ServerVersion}} {{json .Runtimes}}' 2>&1); then "
        "echo \"docker=ok ${v%% *}\"; case \"$v\" in *nvidia*) echo nvidia_runtime=yes;; esac\n"
        "  else echo \"docker=fail $(echo \"$v\" | grep -v '^ *null$' | tail -n 1)\"; fi\n";
    script +=
        "if ! command -v docker >/dev/null 2>&1; then echo 'docker=fail docker is not "
        "installed'\nelse\n";
    if (!image_tag.empty()) {
      // The engine's own answer where its socket is at hand (mlw_http: a few ms, the docker
      // CLI ~60); the CLI wherever that is not sure (another host or context, sudo).
      const std::string tag = shell_quote(image_tag);
      script += "image=\n";
      script += std::string(engine_query ? "a=\nread -r a <&4 || :\n" : "a=\n") +
                "case \"$a\" in 200) image=yes;; 404) ;; *) " + d + " image inspect " + tag +
                " >/dev/null 2>&1 && image=yes;; esac\n"
                "[ \"$image\" = yes ] && echo image=" +
                tag + "\n";
    }
    // An existing image stands for a working daemon unless the runtimes matter (GPUs).
    script += compute.nvidia_docker
                  ? info
                  : "if [ \"$image\" = yes ]; then echo docker=ok; else " + info + "fi\n";
    script += "fi\ncommand -v nvidia-docker >/dev/null 2>&1 && echo nvidia_docker=yes\n";
  }
  script += ask.section;
  if (ask.python) {
    script += "if v=$(" + shell_quote(compute.python_location) +
              " --version 2>&1); then "
              "echo \"python=ok $v\"; else echo \"python=fail $(echo \"$v\" | tail -n 1)\"; fi\n";
  }
  script += engine_query ? "wait\n}\nexit 0\n" : "wait\nexit 0\n";
  return script;
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
