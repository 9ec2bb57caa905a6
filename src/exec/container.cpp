#include "mlw/exec/container.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include "mlw/remote/probe.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/json_text.hpp"
#include "mlw/util/sha256.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

constexpr const char* k_environment_format = "mlw-env-2";

/// Project paths named by a pip requirement line (`./wheels/x.whl`, `--find-links=wheels`).
std::vector<std::string> named_paths(const std::string& requirement) {
  std::vector<std::string> paths;
  std::string token;
  auto flush = [&] {
    std::string candidate = token;
    token.clear();
    while (starts_with(candidate, "./")) candidate = candidate.substr(2);
    if (candidate.empty() || candidate[0] == '-' || candidate[0] == '/' ||
        candidate.find("://") != std::string::npos || candidate.find("..") != std::string::npos) {
      return;
    }
    while (!candidate.empty() && candidate.back() == '/') candidate.pop_back();
    paths.push_back(candidate);
  };
  for (char c : requirement) {
    if (c == ' ' || c == '\t' || c == '=') {
      flush();
    } else {
      token += c;
    }
  }
  flush();
  return paths;
}

/// The version of a conda `python` line (`python=3.5.2`, `python==3.6`, `python 3.11`, `python`:
/// empty); nothing for another package.
std::optional<std::string> python_pin(const std::string& dependency) {
  if (dependency == "python") return std::string();
  for (const char* prefix : {"python==", "python=", "python "}) {
    if (starts_with(dependency, prefix)) {
      std::string version = trim(dependency.substr(std::string_view(prefix).size()));
      if (version.ends_with(".*")) version.resize(version.size() - 2);
      return version;
    }
  }
  return std::nullopt;
}

}  // namespace

std::string share_folder(const std::string& native, const RunPlan& plan) {
  std::string folder = native;
  while (folder.size() > 1 && folder.back() == '/') folder.pop_back();
  return (folder == "/" ? "" : folder) + "/" + plan.project.name + "/" + plan.target_name;
}

std::string share_variable(const std::string& folder) {
  return folder.ends_with('/') ? folder : folder + "/";
}

EnvironmentSpec environment_spec(const RunPlan& plan) {
  EnvironmentSpec env;
  const std::string file = plan.run_config.conda_dependencies_file;
  env.conda_file = read_file_if_exists(plan.project.root / file).value_or("");
  std::vector<std::string> pip;
  if (!trim(env.conda_file).empty()) {
    YAML::Node root;
    try {
      root = YAML::Load(env.conda_file);
    } catch (const YAML::Exception& e) {
      throw Error(fmt::format("{}:{}:{}: {}", file, e.mark.line + 1, e.mark.column + 1, e.msg),
                  exit_code::k_cannot_start);
    }
    const YAML::Node deps = root.IsMap() ? root["dependencies"] : YAML::Node();
    if (deps && !deps.IsSequence() && !deps.IsNull()) {
      throw Error(fmt::format("{}:{}: dependencies must be a list", file, deps.Mark().line + 1),
                  exit_code::k_cannot_start);
    }
    for (const auto& item : deps) {
      if (item.IsScalar()) {
        const std::string name = item.Scalar();
        if (const auto pin = python_pin(name)) {
          env.python_pin = *pin;
        } else if (name != "pip" && !starts_with(name, "pip=")) {
          env.conda_packages.push_back(name);
        }
      } else if (item.IsMap() && item["pip"] && !item["pip"].IsNull()) {
        if (!item["pip"].IsSequence()) {
          throw Error(fmt::format("{}:{}: pip must be a list", file, item["pip"].Mark().line + 1),
                      exit_code::k_cannot_start);
        }
        for (const auto& requirement : item["pip"]) {
          if (!requirement.IsScalar()) {
            throw Error(
                fmt::format("{}:{}: each pip entry must be one requirement line (got a {})", file,
                            requirement.Mark().line + 1, requirement.IsMap() ? "mapping" : "list"),
                exit_code::k_cannot_start);
          }
          pip.push_back(requirement.Scalar());
        }
      }
    }
  }
  std::set<std::string> seen;
  for (const auto& requirement : pip) {
    env.requirements += requirement + "\n";
    for (const auto& path : named_paths(requirement)) {
      for (const auto& entry : plan.manifest.entries) {
        if (!entry.link_target.empty()) continue;
        if ((entry.path == path || starts_with(entry.path, path + "/")) &&
            seen.insert(entry.path).second) {
          env.local_files.push_back(entry);
        }
      }
    }
  }
  std::string hashed =
      fmt::format("{}\n{}\n{}\n{}\n", k_environment_format, plan.compute.base_docker_image,
                  plan.run_config.framework, env.conda_file);
  for (const auto& entry : env.local_files) {
    hashed += fmt::format("{} {:o} {}\n", entry.path, entry.mode, entry.sha256);
  }
  env.hash = sha256_hex(hashed).substr(0, 24);
  env.tag = "mlw_env:" + env.hash;
  env.dockerfile = fmt::format(
      "FROM {}\nCOPY . /mlw/env/\nRUN [\"/bin/sh\", \"/mlw/env/install.sh\"]\n"
      "LABEL mlw.env=\"{}\"\n",
      plan.compute.base_docker_image, env.hash);
  env.install_script = install_script(plan, env);
  return env;
}

std::map<std::string, std::string> run_environment(const RunPlan& plan, const std::string& run_dir,
                                                   const std::string& share_dir,
                                                   const std::string& helper_dir,
                                                   const std::map<std::string, std::string>& base) {
  std::map<std::string, std::string> env = base;
  for (const auto& [k, v] : plan.run_config.environment_variables) env[k] = v;
  for (const auto& [k, v] : plan.extra_env) env[k] = v;
  env["MLW_RUN_ID"] = plan.record.run_id;
  env["MLW_TARGET"] = plan.target_name;
  env["MLW_PROJECT"] = plan.project.name;
  env["MLW_OUTPUTS_DIR"] = run_dir + "/snapshot/outputs";
  env["MLW_METRICS_FILE"] = run_dir + "/metrics.jsonl";
  env["MLW_SHARE_DIR"] = share_variable(share_dir);
  env["AZUREML_NATIVE_SHARE_DIRECTORY"] = share_variable(share_dir);
  env["PYTHONUNBUFFERED"] = "1";
  const auto existing = env.find("PYTHONPATH");
  env["PYTHONPATH"] =
      (helper_dir.empty() ? run_dir + "/helper" : helper_dir) +
      (existing != env.end() && !existing->second.empty() ? ":" + existing->second : std::string());
  return env;
}

namespace {

/// A printf format (single-quoted) that prints `text` byte for byte and then "x": only ASCII
/// letters and digits stay as they are, every other byte is \ooo.
std::string printf_word(const std::string& text) {
  std::string out = "'";
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    const bool plain = (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9');
    out += plain ? std::string(1, c) : fmt::format("\\{:03o}", u);
  }
  return out + "x'";
}

}  // namespace

bool passes_docker(const std::string& value) {
  return is_utf8(value);
}

std::vector<std::string> utf8_command(const RunPlan& plan, std::vector<std::string> words) {
  const auto env = run_environment(plan, "/mlw/run", "/mlw/share");
  const bool odd_env = std::any_of(env.begin(), env.end(),
                                   [](const auto& item) { return !passes_docker(item.second); });
  const bool odd_word = std::any_of(words.begin(), words.end(),
                                    [](const auto& word) { return !passes_docker(word); });
  if (!odd_env && !odd_word) return words;
  std::string script;
  for (const auto& [key, value] : env) {
    if (passes_docker(value)) continue;
    script +=
        fmt::format("{0}=$(printf {1}); export {0}=\"${{{0}%x}}\"\n", key, printf_word(value));
  }
  script += "set --\n";
  for (const auto& word : words) {
    script += fmt::format("w=$(printf {}); set -- \"$@\" \"${{w%x}}\"\n", printf_word(word));
  }
  script += "exec \"$@\"\n";
  return {"/bin/sh", "-c", script};
}

std::string container_name(const std::string& run_id) {
  std::string name = "mlw-";
  bool changed = false;
  for (const char c : run_id) {
    const char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    const bool ok = (lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9') ||
                    lower == '_' || lower == '.' || lower == '-';
    name += ok ? lower : '-';
    changed = changed || !ok;
  }
  if (changed) name += "-" + sha256_hex(run_id).substr(0, 8);
  return name;
}

std::vector<std::string> docker_run_words(const RunPlan& plan, const TargetRunPaths& paths,
                                          const TargetFacts& facts, const std::string& image,
                                          const std::string& user) {
  std::vector<std::string> words = docker_words(plan.compute, facts);
  const std::string name = container_name(plan.record.run_id);
  words.insert(words.end(),
               {"create", "--name", name, "--label", "mlw.run=" + plan.record.run_id, "--label",
                "mlw.project=" + plan.project.name, "--init", "-w", "/mlw/run/snapshot"});
  if (plan.compute.shared_volumes) {
    // The id goes into the run folder's `container` at create, for cancel.
    words.insert(words.end(), {"--cidfile", "container", "-v", paths.run_dir + ":/mlw/run"});
    if (!user.empty()) words.insert(words.end(), {"--user", user, "-e", "HOME=/tmp"});
  }
  words.insert(words.end(), {"-v", paths.share_dir + ":/mlw/share"});
  for (const auto& [key, value] : run_environment(plan, "/mlw/run", "/mlw/share")) {
    if (passes_docker(value)) words.insert(words.end(), {"-e", key});
  }
  if (plan.compute.nvidia_docker && facts.nvidia_runtime) {
    const std::string& gpus = plan.compute.gpus.empty() ? "all" : plan.compute.gpus;
    words.insert(words.end(),
                 {"--gpus", gpus.find(',') != std::string::npos ? "\"" + gpus + "\"" : gpus});
  }
  for (const auto& arg : plan.compute.docker_run_args) words.push_back(arg);
  words.push_back(image);
  for (auto& word : container_command(plan)) words.push_back(std::move(word));
  return words;
}

std::vector<std::string> container_command(const RunPlan& plan) {
  std::vector<std::string> words = utf8_command(plan, script_command(plan));
  if (!plan.compute.nvidia_docker) return words;
  // The run header (spec §6): the GPUs this container sees, as nvidia-smi names them there.
  std::vector<std::string> header = {
      "/bin/sh", "-c",
      "if gpus=$(nvidia-smi --query-gpu=index,name,memory.total,pci.bus_id --format=csv,noheader "
      "2>/dev/null) && [ -n \"$gpus\" ]; then echo \"mlw: GPUs seen by this run:\"; echo "
      "\"$gpus\" | sed 's/^/mlw:   GPU /'; else echo 'mlw: GPUs seen by this run: none (nvidia-smi "
      "lists no GPU in the container)'; fi; exec \"$@\"",
      "mlw-gpus"};
  header.insert(header.end(), words.begin(), words.end());
  return header;
}

std::vector<std::string> script_command(const RunPlan& plan, const std::string& python) {
  std::vector<std::string> words = {python};
  if (plan.run_config.framework == "PySpark") {
    // Where the run starts without an image built for it (remote, a batch job, a prebuilt image), a
    // missing spark-submit is explained as on the local target, not as tini's exec failure.
    words = {"/bin/sh", "-c",
             "command -v spark-submit >/dev/null 2>&1 || { echo \"mlw: error: $0\" >&2; exit 127; "
             "}; exec spark-submit \"$@\"",
             no_spark_submit_message(plan.record.run_config, "the run's PATH")};
  }
  for (auto& word : expand_argument_vector(plan.run_config, plan.script, plan.arguments)) {
    words.push_back(std::move(word));
  }
  return words;
}

std::string engine_create_body(const RunPlan& plan, const TargetRunPaths& paths,
                               const TargetFacts& facts, const std::string& image,
                               const std::string& user) {
  nlohmann::json env = nlohmann::json::array();
  for (const auto& [key, value] : run_environment(plan, "/mlw/run", "/mlw/share")) {
    if (passes_docker(value)) env.push_back(key + "=" + value);
  }
  nlohmann::json host = {{"Init", true},
                         {"Binds", {paths.run_dir + ":/mlw/run", paths.share_dir + ":/mlw/share"}}};
  if (plan.compute.nvidia_docker && facts.nvidia_runtime) {
    const std::string gpus = plan.compute.gpus.empty() ? "all" : plan.compute.gpus;
    nlohmann::json request = {{"Driver", ""}, {"Capabilities", {{"gpu"}}}};
    if (gpus == "all") {
      request["Count"] = -1;
    } else if (starts_with(gpus, "device=")) {
      request["Count"] = 0;
      request["DeviceIDs"] = split(gpus.substr(7), ',');
    } else {
      try {
        request["Count"] = std::stoi(gpus);
      } catch (const std::exception&) {
        throw Error(fmt::format("gpus: \"{}\" is not all, a count or device=0,1", gpus),
                    exit_code::k_cannot_start);
      }
    }
    host["DeviceRequests"] = {request};
  }
  nlohmann::json body = {
      {"Image", image},
      {"Cmd", container_command(plan)},
      {"WorkingDir", "/mlw/run/snapshot"},
      {"Env", env},
      {"Labels", {{"mlw.run", plan.record.run_id}, {"mlw.project", plan.project.name}}},
      {"HostConfig", host}};
  if (!user.empty()) {
    body["User"] = user;
    body["Env"].push_back("HOME=/tmp");
  }
  return body.dump();
}

namespace {

/// Attaches to the container `$cid` the engine made, starts it and waits for it, in Perl with
/// builtins only (`docker start -a` does the same three requests after ~60 ms of its own start):
/// the output's frames go to stdout as they come, the container's exit code to the code file.
/// Any failure exits non-zero (engine_start then asks the container's state). Arguments:
/// socket, container id, code file.
constexpr const char* k_attach_perl =
    "$SIG{ALRM}=sub{exit 4};($s,$id,$f)=@ARGV;"
    "sub o{socket($_[0],1,1,0)&&connect($_[0],pack(\"SZ*\",1,$s))||exit 3;binmode $_[0]}"
    "sub w{my($h,$r,$x)=@_;while(length $r){my $n=syswrite($h,$r);defined $n||exit $x;"
    "substr($r,0,$n)=\"\"}}"
    "sub h{my($h,$x)=@_;my $r=\"\";alarm 60;while(index($r,\"\\r\\n\\r\\n\")<0){"
    "length($r)<65536||exit $x;my $n=sysread($h,$r,65536,length $r);$n||exit $x}alarm 0;"
    "$r=~m{^HTTP/1\\.[01] (\\d\\d\\d)[ \\r]}||exit $x;($1,substr($r,index($r,\"\\r\\n\\r\\n\")+4))}"
    "sub p{\"POST /containers/$id/$_[0] HTTP/$_[1]\\r\\nHost: docker\\r\\n$_[2]"
    "Content-Length: 0\\r\\n\\r\\n\"}"
    "o(\\*A);w(\\*A,p(\"attach?stream=1&stdout=1&stderr=1\",\"1.1\","
    "\"Connection: Upgrade\\r\\nUpgrade: tcp\\r\\n\"),3);"
    "($c,$b)=h(\\*A,3);$c==101||$c==200||exit 3;"
    "o(\\*B);w(\\*B,p(\"start\",\"1.0\",\"\"),4);($c)=h(\\*B,4);$c==204||$c==304||exit 4;close B;"
    "while(1){while(length($b)>=8){$n=unpack(\"N\",substr($b,4,4));last if length($b)<8+$n;"
    "$o=substr($b,8,$n);substr($b,0,8+$n)=\"\";while(length $o){$k=syswrite(STDOUT,$o);"
    "defined $k||last;substr($o,0,$k)=\"\"}}$n=sysread(A,$b,65536,length $b);last unless $n}"
    "close A;o(\\*C);w(\\*C,p(\"wait\",\"1.0\",\"\"),4);($c,$r)=h(\\*C,4);$c==200||exit 4;"
    "while(sysread(C,$r,4096,length $r)){length($r)<65536||exit 4}"
    "$r=~/\"StatusCode\":(\\d+)/||exit 4;open(F,\">\",$f)||exit 4;print F \"$1\\n\";"
    "close F||exit 4;exit 0";

/// Shell text that runs the container `$cid` to its end with its output appended to
/// driver_log.txt and its exit code in $code: through the engine's socket with Perl where the
/// engine made it ($e), else `docker start -a`. Where Perl did not tell the end, the container's
/// state says what is left: still `created`, the docker CLI starts it (and says why it cannot);
/// else its end is waited for (never started twice).
std::string engine_start(const std::string& docker) {
  return "if [ -n \"$e\" ] && command -v perl >/dev/null 2>&1; then\n"
         "  perl -e " +
         shell_quote(k_attach_perl) +
         " \"$s\" \"$cid\" engine_code </dev/null >>driver_log.txt 2>/dev/null\n"
         "  if [ $? != 0 ] || ! { read -r code <engine_code; } 2>/dev/null; then\n"
         "    code=\n"
         "    case \"$(" +
         docker +
         " inspect -f '{{.State.Status}}' \"$cid\" 2>/dev/null)\" in\n"
         "      created) " +
         docker + " start -a \"$cid\" >>driver_log.txt 2>&1; code=$?;;\n      *) code=$(" + docker +
         " wait \"$cid\" 2>/dev/null) || code=;;\n"
         "    esac\n"
         "  fi\n"
         "else\n  " +
         docker + " start -a \"$cid\" >>driver_log.txt 2>&1\n  code=$?\nfi\n";
}

/// Shell text that creates the container through the engine's unix socket (mlw_http), where it
/// is sure to be the engine the docker command would ask (as the probe's engine_socket_lookup),
/// setting $cid and writing it to `container`; $cid stays empty where it did not (the docker
/// command then creates it, and says why it cannot). One docker CLI start (~60 ms) less.
std::string engine_create(const RunPlan& plan, const TargetRunPaths& paths,
                          const TargetFacts& facts, const std::string& image) {
  const ComputeConfig& compute = plan.compute;
  const bool plain = compute.docker_run_args.empty() && !compute.use_sudo &&
                     docker_words(compute, facts) == std::vector<std::string>{"docker"} &&
                     (!compute.nvidia_docker || facts.nvidia_runtime);
  if (!plain) return "cid=\n";
  const std::string body = engine_create_body(plan, paths, facts, image, "@USER@");
  const std::string placeholder = "\"@USER@\"";
  const auto at = body.find(placeholder);
  const std::string json = at == std::string::npos
                               ? "printf '%s' " + shell_quote(body)
                               : "printf '%s' " + shell_quote(body.substr(0, at)) +
                                     " \"\\\"$u:$g\\\"\" " +
                                     shell_quote(body.substr(at + placeholder.size()));
  // Every process costs a few ms on the target: the user's ids from /proc and the container's
  // id from the engine's answer are read by the shell itself (id and sed where that fails).
  return "cid=\ne=\n" + engine_socket_lookup() +
         "if mlw_engine; then\n"
         "  u=; g=\n"
         "  { while read -r k r f x; do case \"$k\" in Uid:) u=$f;; Gid:) g=$f;; esac; done; } "
         "</proc/self/status 2>/dev/null\n"
         "  case \"$u$g\" in ''|*[!0-9]*) u=$(id -u); g=$(id -g);; esac\n  " +
         json +
         " > create.json\n"
         "  a=$(mlw_http 60 POST " +
         shell_quote("/containers/create?name=" + container_name(plan.record.run_id)) +
         " create.json create.out) || a=\n"
         "  o=\n  [ \"$a\" = 201 ] && { IFS= read -r o || :; } <create.out\n"
         "  if [ -n \"$o\" ]; then\n"
         "    o=${o#*\\\"Id\\\"}; o=${o#*\\\"}; cid=${o%%\\\"*}\n"
         "    case \"$cid\" in *[!0-9a-f]*|'') cid=;; ????????????*) e=1;; *) cid=;; esac\n"
         "  fi\n"
         "  [ -n \"$cid\" ] && echo \"$cid\" > container\nfi\n";
}

}  // namespace

std::string monitor_script(const RunPlan& plan, const TargetRunPaths& paths,
                           const TargetFacts& facts, const std::string& image) {
  const bool container = !image.empty();
  const std::string run = shell_quote(paths.run_dir);
  std::string script = "#!/bin/sh\n# The monitor of run " + plan.record.run_id +
                       ", written by mlw: it outlives the SSH connection.\ncd " + run +
                       " || exit 125\n";
  const auto env = container ? run_environment(plan, "/mlw/run", "/mlw/share")
                             : run_environment(plan, paths.run_dir, paths.share_dir);
  for (const auto& [key, value] : env) script += "export " + shell_quote(key + "=" + value) + "\n";
  script +=
      "finish() { echo \"$1\" > exit_code.tmp && mv exit_code.tmp exit_code; }\n"
      "[ -d snapshot/outputs ] && [ -d " +
      shell_quote(paths.share_dir) + " ] || mkdir -p snapshot/outputs " +
      shell_quote(paths.share_dir) + "\n";
  if (!container) {
    script += "cd snapshot || { finish 125; exit 0; }\n" +
              shell_join(script_command(plan, plan.compute.python_location)) +
              " </dev/null >>../driver_log.txt 2>&1 &\n"
              "echo $! > ../script.pid\n"
              "wait $!\ncode=$?\ncd ..\nfinish \"$code\"\n";
    return script;
  }
  const std::string docker = shell_join(docker_words(plan.compute, facts));
  std::vector<std::string> words = docker_run_words(plan, paths, facts, image, "@USER@");
  std::string run_line = shell_join(words);
  const std::string placeholder = shell_quote("@USER@");
  if (const auto at = run_line.find(placeholder); at != std::string::npos) {
    run_line.replace(at, placeholder.size(), "\"$(id -u):$(id -g)\"");
  }
  const std::string oom = "[ \"$code\" = 137 ] && [ \"$(" + docker +
                          " inspect -f '{{.State.OOMKilled}}' \"$cid\" 2>/dev/null)\" = true ]"
                          " && echo oom > oom\n";
  if (plan.compute.shared_volumes) {
    // One docker process attaches, starts, streams and waits (as `docker run` does, without
    // -d, logs -f and wait beside it); create's own warnings stay out of the log.
    script += engine_create(plan, paths, facts, image) + "if [ -z \"$cid\" ] && ! cid=$(" +
              run_line +
              " 2>docker_run.err); then cat docker_run.err >>driver_log.txt; finish 125; exit 0; "
              "fi\n" +
              engine_start(docker) + oom;
  } else {
    script +=
        "if ! cid=$(" + run_line +
        " 2>docker_run.err); then cat docker_run.err >>driver_log.txt; finish 125; exit 0; "
        "fi\n"
        "echo \"$cid\" > container\n"
        "if ! tar -cf - --transform 's,^\\./,mlw/run/,' ./snapshot ./helper | " +
        docker + " cp - \"$cid:/\" 2>>driver_log.txt; then finish 125; exit 0; fi\n" + "if ! " +
        docker + " start \"$cid\" >/dev/null 2>>driver_log.txt; then finish 125; exit 0; fi\n" +
        docker + " logs -f \"$cid\" >>driver_log.txt 2>&1 &\nlogs=$!\ncode=$(" + docker +
        " wait \"$cid\")\nwait $logs\n" + oom + docker +
        " cp \"$cid:/mlw/run/snapshot/outputs\" - 2>/dev/null | "
        "tar -C snapshot -xf - 2>/dev/null\n" +
        docker + " cp \"$cid:/mlw/run/metrics.jsonl\" - 2>/dev/null | tar -xf - 2>/dev/null\n";
  }
  script += "finish \"${code:-125}\"\n";
  // A container the engine made is removed through its socket (mlw_http, not the docker CLI's
  // ~60 ms of a core while the results are read).
  script +=
      plan.compute.shared_volumes
          ? "if [ -n \"$e\" ]; then (mlw_http 60 DELETE \"/containers/$cid\" >/dev/null 2>&1 &)\n"
            "else (" +
                docker + " rm \"$cid\" >/dev/null 2>&1 &)\nfi\n"
          : "(" + docker + " rm \"$cid\" >/dev/null 2>&1 &)\n";
  return script;
}

}  // namespace mlw
