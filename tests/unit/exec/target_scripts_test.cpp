// Each short program mlw runs on a target (src/exec/steps.sh, engine_steps.sh, build.sh,
// results.sh, launch.sh, follow.sh and end.sh, the kinds' stop.sh, remote/authorize_key.sh), run
// here by /bin/sh as a target runs it, with stand-ins for docker, qdel and scancel first on PATH.
#include <gtest/gtest.h>

#include <unistd.h>
#include <chrono>
#include <thread>

#include "fakes.hpp"
#include "mlw/exec/container.hpp"
#include "mlw/exec/monitor_driver.hpp"
#include "mlw/exec/run_session.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/strings.hpp"
#include "temp_dir.hpp"

namespace mlw {

namespace {

/// A place with HOME in the temp folder and bin/ first on its PATH; `calls` holds what the
/// stand-ins were called with, one line each.
struct ScriptPlace {
  test::TempDir dir{"mlw-scripts"};
  fs::path home = dir.path() / "home";
  fs::path bin = dir.path() / "bin";
  fs::path calls = dir.path() / "calls";
  test::LocalTargetShell shell{"here", (dir.path() / "home").string(), dir.path() / "bin"};
  ScriptPlace() {
    make_directories(home);
    make_directories(bin);
  }
  /// A stand-in `name` that records its words in `calls`, then runs `body`.
  void stand_in(const std::string& name, const std::string& body = "") const {
    atomic_write_file(bin / name, "#!/bin/sh\necho \"" + name + " $*\" >>" +
                                      shell_quote(calls.string()) + "\n" + body);
    fs::permissions(bin / name, fs::perms::owner_all);
  }
  Shell& target() { return shell; }
  std::string recorded() const { return read_file_if_exists(calls).value_or(""); }
};

bool process_gone(pid_t pid) {
  const auto stat = read_file_if_exists("/proc/" + std::to_string(pid) + "/stat");
  return !stat || stat->find(") Z ") != std::string::npos;
}

}  // namespace

TEST(TargetScripts, StopProcessSendsSigtermToTheScript) {
  ScriptPlace place;
  const fs::path run = place.dir.path() / "run";
  make_directories(run);
  const ShellResult started =
      place.target().run("cd " + shell_quote(run.string()) +
                         " && setsid sleep 30 >/dev/null 2>&1 </dev/null & echo $! >" +
                         shell_quote((run / "script.pid").string()) + "; echo $!");
  const pid_t pid = static_cast<pid_t>(std::stol(trim(started.output)));
  const auto begun = std::chrono::steady_clock::now();
  EXPECT_EQ(place.target()
                .run(script_call("src/exec/steps.sh", {"mlw_stop_process", run.string()}))
                .exit_code,
            0);
  for (int i = 0; i < 100 && !process_gone(pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(process_gone(pid));
  EXPECT_LT(std::chrono::steady_clock::now() - begun, std::chrono::seconds(5));
  // No script.pid (the script never started): nothing to stop, and no error.
  fs::remove(run / "script.pid");
  EXPECT_EQ(place.target()
                .run(script_call("src/exec/steps.sh", {"mlw_stop_process", run.string()}))
                .exit_code,
            0);
}

TEST(TargetScripts, RestartGivesAStoppedScriptsOwnCodeNotTheCutWaits) {
  // A stop (SIGTERM) cuts restart.sh's wait short (143) and is passed to the script, which ends
  // with its own 7. A `kill` that says the script is gone at once (as when it ends meanwhile):
  // its own code is waited for and given, not the cut wait's.
  test::TempDir dir("mlw-restart");
  make_directories(dir.path() / "snapshot");
  atomic_write_file(dir.path() / "restart.sh",
                    "kill() { if [ \"$1\" = -0 ]; then return 1; fi; command kill \"$@\"; }\n" +
                        script_body("src/exec/restart.sh"));
  const std::string line =
      "cd " + shell_quote((dir.path() / "snapshot").string()) +
      " && { sh ../restart.sh any 2 0 sh -c 'sleep 5 & s=$!; trap \"kill $s; exit 7\" TERM; "
      "wait' & p=$!; sleep 0.5; kill -s TERM $p; wait $p; }";
  const int status = std::system(line.c_str());
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 7);
  EXPECT_FALSE(fs::exists(dir.path() / "restarts"));  // a stopped script is not restarted
}

TEST(TargetScripts, StopContainerStopsTheRunsContainerWithTheDockerWords) {
  ScriptPlace place;
  place.stand_in("docker");
  const fs::path run = place.dir.path() / "run";
  make_directories(run);
  const auto stop = script_call("src/exec/steps.sh",
                                {"mlw_stop_container", run.string(), "docker", "--host", "x y"});
  EXPECT_EQ(place.target().run(stop).exit_code, 0);
  EXPECT_EQ(place.recorded(), "");  // no container yet
  atomic_write_file(run / "container", "c0ffee\n");
  EXPECT_EQ(place.target().run(stop).exit_code, 0);
  EXPECT_EQ(place.recorded(), "docker --host x y stop -t 10 c0ffee\n");
}

TEST(TargetScripts, SubmitJobWritesSubmitShFromStdinAndRunsIt) {
  ScriptPlace place;
  const fs::path run = place.dir.path() / "run";
  make_directories(run);
  const ShellResult result = place.target().run_with_input(
      script_call("src/exec/steps.sh", {"mlw_submit_job", run.string(), "a b", "$HOME"}),
      stdin_file("printf '%s|' \"$@\"; cat\n") + "the rest");
  EXPECT_EQ(result.exit_code, 0) << result.errors;
  EXPECT_EQ(result.output, "a b|$HOME|the rest");
  EXPECT_EQ(read_file_if_exists(run / "submit.sh"), "printf '%s|' \"$@\"; cat\n");
}

TEST(TargetScripts, MonitorAliveAndWaitStarted) {
  ScriptPlace place;
  const fs::path run = place.dir.path() / "run";
  make_directories(run);
  atomic_write_file(run / "batch_state", "x");
  const std::string self = std::to_string(::getpid());
  const auto alive = [&](const std::string& pid) {
    return place.target()
        .run(script_call("src/exec/steps.sh",
                         {"mlw_monitor_alive", run.string(), pid, "batch_state", "slurm_state"}))
        .output;
  };
  EXPECT_EQ(alive(self), "alive\n");
  EXPECT_TRUE(fs::exists(run / "batch_state"));
  const ShellResult gone = place.target().run("sh -c 'echo $$'");  // a pid that has ended
  EXPECT_EQ(alive(trim(gone.output)), "");
  EXPECT_FALSE(fs::exists(run / "batch_state"));
  // Returns at once when the monitor is gone, and once the run has started.
  const auto wait = script_call("src/exec/steps.sh", {"mlw_wait_started", run.string(), self});
  atomic_write_file(run / "started", "");
  EXPECT_EQ(place.target().run(wait).exit_code, 0);
  fs::remove(run / "started");
  EXPECT_EQ(place.target()
                .run(script_call("src/exec/steps.sh",
                                 {"mlw_wait_started", run.string(), trim(gone.output)}))
                .exit_code,
            0);
  EXPECT_EQ(
      place.target().run(script_call("src/exec/steps.sh", {"mlw_print", "/nonexistent/x"})).output,
      "");
}

TEST(TargetScripts, EngineStepsAskAndCleanTheEngineAndTheStore) {
  ScriptPlace place;
  place.stand_in("docker",
                 "case \"$1 $2\" in\n"
                 "'image inspect') [ \"$3\" = mlw_env:have ] ;;\n"
                 "'images --filter') [ \"$4\" = --filter ] && printf 'mlw_env:p\\n' || "
                 "printf 'mlw_env:a\\nmlw_env:b\\n' ;;\n"
                 "'rmi '*) shift; for i; do case $i in\n"
                 "  mlw_env:b) echo 'Error: conflict: mlw_env:b is in use' >&2 ;;\n"
                 "  *) printf 'Untagged: %s\\nDeleted: sha256:1\\n' \"$i\" ;; esac; done ;;\n"
                 "esac\n");
  ComputeConfig compute;
  EXPECT_TRUE(image_exists(place.shell, compute, {}, "mlw_env:have"));
  EXPECT_FALSE(image_exists(place.shell, compute, {}, "mlw_env:other"));
  const ShellResult cleaned = place.target().run(
      script_call("src/exec/engine_steps.sh", {"mlw_clean_images", "", "0", "docker"}));
  EXPECT_EQ(cleaned.exit_code, 0);
  EXPECT_EQ(cleaned.output, "Untagged: mlw_env:a\n");
  // One project's: the images labelled with it and those its runs used, nothing else.
  const ShellResult own = place.target().run(script_call(
      "src/exec/engine_steps.sh", {"mlw_clean_images", "proj", "1", "mlw_env:h", "docker"}));
  EXPECT_EQ(own.output, "Untagged: mlw_env:h\nUntagged: mlw_env:p\n");
  // The store: its objects and incoming/, and the folders of the runs that ended.
  const fs::path store = place.home / ".mlw";
  for (const char* path : {"objects/1", "objects/2", "incoming/x/y", "runs/done/exit_code",
                           "runs/batch/batch_state", "runs/live/driver_log.txt"}) {
    make_directories((store / path).parent_path());
    atomic_write_file(store / path, "");
  }
  // A project's clean: its ended runs only (proj_DIGITS, not proj_x_1 nor projx_1); the store
  // stays.
  for (const char* path : {"runs/proj_12/exit_code", "runs/proj_13/driver_log.txt",
                           "runs/proj_x_1/exit_code", "runs/projx_1/exit_code"}) {
    make_directories((store / path).parent_path());
    atomic_write_file(store / path, "");
  }
  const ShellResult project_cleaned = place.target().run(
      script_call("src/exec/engine_steps.sh", {"mlw_clean_store", store.string(), "proj"}));
  EXPECT_EQ(project_cleaned.output, "kept objects 2\nrun runs/proj_12/\n");
  EXPECT_TRUE(fs::exists(store / "objects/1"));
  EXPECT_TRUE(fs::exists(store / "runs/proj_13"));
  fs::remove_all(store / "runs/proj_13");
  const ShellResult store_cleaned = place.target().run(
      script_call("src/exec/engine_steps.sh", {"mlw_clean_store", store.string(), ""}));
  EXPECT_EQ(store_cleaned.output,
            "objects 2\nrun runs/batch/\nrun runs/done/\nrun runs/proj_x_1/\nrun runs/projx_1/\n");
  EXPECT_FALSE(fs::exists(store / "objects"));
  EXPECT_FALSE(fs::exists(store / "incoming"));
  EXPECT_TRUE(fs::exists(store / "runs/live/driver_log.txt"));
  EXPECT_EQ(place.target()
                .run(script_call("src/exec/engine_steps.sh",
                                 {"mlw_clean_store", (place.home / "none").string(), ""}))
                .output,
            "");
  // A prepared run's folder goes in the background; the step does not wait for it.
  EXPECT_EQ(place.target()
                .run(script_call("src/exec/engine_steps.sh",
                                 {"mlw_forget", (store / "runs/live").string()}))
                .exit_code,
            0);
  for (int i = 0; i < 250 && fs::exists(store / "runs/live"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(fs::exists(store / "runs/live"));
}

TEST(TargetScripts, BuildMakesTheImageOnceUnderTheLock) {
  ScriptPlace place;
  place.stand_in("docker",
                 "[ \"$1\" = image ] && [ -e \"$0.built\" ] && exit 0\n"
                 "[ \"$1\" = build ] && : >\"$0.built\" && echo 'Step 1/3 : FROM base'\n"
                 "[ \"$1\" = build ] || exit 1\n");
  RunPlan plan;
  plan.compute.base_docker_image = "base:1";
  EnvironmentSpec env;
  env.hash = "abc";
  env.tag = "mlw_env:abc";
  const std::string locks = (place.dir.path() / "locks").string();
  const TargetRunPaths paths{(place.dir.path() / "run").string(), "", ""};
  std::string seen;
  const auto on_output = [&seen](std::string_view chunk) { seen.append(chunk); };
  EXPECT_EQ(ensure_image(place.shell, plan, {}, env, paths, locks, on_output).exit_code, 0);
  EXPECT_EQ(seen, "Building environment mlw_env:abc from base:1\nStep 1/3 : FROM base\n");
  EXPECT_TRUE(fs::exists(fs::path(locks) / "abc.lock"));
  EXPECT_NE(place.recorded().find("docker build --force-rm -t mlw_env:abc -f " + paths.run_dir +
                                  "/env/Dockerfile " + paths.run_dir + "/env\n"),
            std::string::npos)
      << place.recorded();
  seen.clear();
  EXPECT_EQ(ensure_image(place.shell, plan, {}, env, paths, locks, on_output).exit_code, 0);
  EXPECT_EQ(seen, "");  // it exists: no build
}

TEST(TargetScripts, KindsStopTheirJobs) {
  ScriptPlace place;
  place.stand_in("qdel", "echo 'denied' >&2; exit 1\n");
  place.stand_in("scancel", "echo 'scancel: error: Invalid job id' >&2; exit 1\n");
  EXPECT_EQ(place.target().run(script_call("src/kinds/sge/stop.sh", {"mlw_stop", "17"})).exit_code,
            0);
  const ShellResult slurm =
      place.target().run(script_call("src/kinds/slurm/stop.sh", {"mlw_stop", "42"}));
  EXPECT_EQ(slurm.exit_code, 0);
  EXPECT_EQ(slurm.output, "scancel: error: Invalid job id\n");  // said, as scancel said it
  EXPECT_EQ(place.recorded(), "qdel 17\nscancel 42\n");
}

TEST(TargetScripts, AuthorizeKeyAppendsToAPrivateAuthorizedKeys) {
  ScriptPlace place;
  const std::string script(embedded_script("src/remote/authorize_key.sh"));
  EXPECT_EQ(place.target().run_with_input(script, "ssh-ed25519 AAAA one\n").exit_code, 0);
  EXPECT_EQ(place.target().run_with_input(script, "ssh-ed25519 BBBB two\n").exit_code, 0);
  const fs::path keys = place.home / ".ssh/authorized_keys";
  EXPECT_EQ(read_file_if_exists(keys), "ssh-ed25519 AAAA one\nssh-ed25519 BBBB two\n");
  EXPECT_EQ(fs::status(keys).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(fs::status(keys.parent_path()).permissions() & fs::perms::all, fs::perms::owner_all);
}

TEST(TargetScripts, LaunchStartsTheMonitorDetachedAndFollowReadsItToItsEnd) {
  ScriptPlace place;
  const fs::path run = place.dir.path() / "run";
  make_directories(run);
  atomic_write_file(run / "driver_log.txt", "");
  const ShellResult launched = place.target().run_with_input(
      script_call("src/exec/launch.sh", {"mlw_launch_pid", run.string()}),
      "printf 'first\\nsecond\\n' >>driver_log.txt; echo 3 >exit_code\n");
  const std::string pid = trim(launched.output);
  ASSERT_FALSE(pid.empty());
  EXPECT_EQ(pid.find_first_not_of("0123456789"), std::string::npos) << pid;
  EXPECT_TRUE(fs::exists(run / "monitor.sh"));
  // follow.sh from the log's 3rd byte, until the monitor ends; then how the run ended (end.sh).
  const std::string follow =
      "mlw_run=" + shell_quote(run.string()) + "\nmlw_offset=3\nmlw_pid=" + pid +
      "\nmlw_tree=\nmlw_end=" + shell_quote(std::string(embedded_script("src/exec/end.sh"))) +
      "\n" + std::string(embedded_script("src/exec/follow.sh"));
  const ShellResult followed = place.target().run(follow);
  EXPECT_EQ(followed.output, "rst\nsecond\n");
  EXPECT_EQ(followed.errors, "mlw-state=ended\n3\n\nmlw-results\n");
}

}  // namespace mlw
