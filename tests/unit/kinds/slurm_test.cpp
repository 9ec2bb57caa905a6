#include "kinds/slurm/slurm.hpp"

#include "mlw/exec/container.hpp"
#include "mlw/kinds/kind.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include <cstdlib>
#include <fstream>
#include "mlw/util/embedded.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/json_text.hpp"
#include "mlw/util/shell_quote.hpp"
#include "temp_dir.hpp"

namespace mlw {

namespace {

/// Submit's checks of a slurm target: the kind's rows, stopped at the first refusal.
void check_slurm(const ComputeConfig& compute, const TargetFacts& facts, const std::string& host) {
  std::vector<CheckRow> rows;
  kind_of("slurm").checks({compute, facts, host, "hpc"}, rows);
  refuse_first(rows);
}

RunPlan slurm_plan() {
  RunPlan plan;
  plan.project = {"/tmp/p", "demo"};
  plan.target_name = "hpc";
  plan.compute.type = "slurm";
  plan.compute.section["nodes"] = "2";
  plan.compute.section["gpusPerNode"] = "4";
  plan.compute.section["partition"] = "gpu";
  plan.compute.section["timeLimit"] = "01:30:00";
  plan.compute.section["account"] = "proj42";
  plan.run_config = default_run_config("hpc");
  plan.run_config.environment_variables = {{"SECRET_TOKEN", "s3cr3t value"}};
  plan.script = "train.py";
  plan.arguments = {"it's", "$(id)"};
  plan.record.run_id = "demo_1700000000000";
  return plan;
}

const TargetRunPaths k_paths{"/home/u/.mlw/runs/demo_1700000000000", "/home/u/.mlw/share", ""};

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& word : words) out += (out.empty() ? "" : " ") + word;
  return out;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST(Slurm, SbatchAsksForWhatTheComputeFileSays) {
  const std::string options = joined(sbatch_options(slurm_plan())) + " ";
  for (const char* option : {"--job-name=mlw-demo_1700000000000 ", "--nodes=2 ",
                             "--ntasks-per-node=1 ", "--gpus-per-node=4 ", "--partition=gpu ",
                             "--time=01:30:00 ", "--account=proj42 ", "--output=driver_log.txt "}) {
    EXPECT_TRUE(contains(options, option)) << option << "\n" << options;
  }
  const std::string env = slurm_run_env(slurm_plan(), k_paths);
  EXPECT_TRUE(contains(env, "mlw_gpus_per_node=4\n")) << env;
  EXPECT_TRUE(contains(env, "mlw_nodes=2\n")) << env;
  // job.sh, the same for every run, sets the rendezvous and each rank's number.
  const std::string job(embedded_script("src/kinds/slurm/job.sh"));
  EXPECT_TRUE(contains(job, "export MLW_GPUS_PER_NODE=\"$mlw_gpus_per_node\"\n"));
  EXPECT_TRUE(contains(job, "export MASTER_ADDR="));
  EXPECT_TRUE(contains(job, "export MASTER_PORT="));
  EXPECT_TRUE(contains(job, "MLW_NODE_RANK=\"$SLURM_NODEID\""));
}

TEST(Slurm, UnsetOptionsAreLeftToSlurm) {
  RunPlan plan = slurm_plan();
  plan.compute.section["gpusPerNode"] = "0";
  plan.compute.section.erase("partition");
  plan.compute.section.erase("timeLimit");
  plan.compute.section.erase("account");
  const std::string options = joined(sbatch_options(plan));
  for (const char* absent : {"--gpus-per-node", "--partition", "--time", "--account"}) {
    EXPECT_FALSE(contains(options, absent)) << absent;
  }
}

TEST(Slurm, RequeueSubmitsARerunnableJobWarnedBeforeItsLimit) {
  RunPlan plan = slurm_plan();
  for (const char* absent : {"--requeue", "--signal"}) {
    EXPECT_FALSE(contains(joined(sbatch_options(plan)), absent)) << absent;
  }
  EXPECT_TRUE(contains(slurm_run_env(plan, k_paths), "mlw_checkpoint_signal=''\n"));
  EXPECT_FALSE(contains(slurm_run_env(plan, k_paths), "MLW_CHECKPOINT_DIR"));
  plan.compute.section["requeue"] = "true";
  plan.compute.section["checkpointSignal"] = "USR2";
  plan.compute.section["checkpointLeadSeconds"] = "45";
  const std::string options = joined(sbatch_options(plan)) + " ";
  EXPECT_TRUE(contains(options, "--requeue --signal=B:USR2@45 ")) << options;
  const std::string env = slurm_run_env(plan, k_paths);
  EXPECT_TRUE(contains(env, "mlw_checkpoint_signal=USR2\n")) << env;
  EXPECT_TRUE(contains(env, "export MLW_CHECKPOINT_SIGNAL=USR2\n")) << env;
  EXPECT_TRUE(contains(env,
                       "export MLW_CHECKPOINT_DIR=/home/u/.mlw/share/checkpoints/"
                       "demo_1700000000000\n"))
      << env;
  // In a container: the share folder as the container sees it, passed by name.
  plan.compute.section["container"] = "img:1";
  EXPECT_TRUE(contains(slurm_run_env(plan, k_paths),
                       "export MLW_CHECKPOINT_DIR=/mlw/share/checkpoints/demo_1700000000000\n"));
  EXPECT_TRUE(contains(joined(slurm_node_command(plan, k_paths).command),
                       "-e MLW_CHECKPOINT_DIR -e MLW_CHECKPOINT_SIGNAL"));
}

TEST(Slurm, TimeLimitsAreReadInEachOfSlurmsFormats) {
  EXPECT_EQ(slurm_time_seconds("90"), 5400);  // minutes
  EXPECT_EQ(slurm_time_seconds("1:30"), 90);  // MM:SS
  EXPECT_EQ(slurm_time_seconds("01:00:05"), 3605);
  EXPECT_EQ(slurm_time_seconds("2-3"), 2 * 86400 + 3 * 3600);  // D-HH
  EXPECT_EQ(slurm_time_seconds("1-00:30"), 86400 + 1800);      // D-HH:MM
  EXPECT_EQ(slurm_time_seconds("1-00:00:10"), 86410);
  EXPECT_EQ(slurm_time_seconds("0"), 0);  // no limit
  for (const char* bad : {"", "1h", "1:2:3:4", "-1", "99999999999999999999", "1-2-3"}) {
    EXPECT_EQ(slurm_time_seconds(bad), std::nullopt) << bad;
  }
}

TEST(Slurm, AWarningThatWouldComeAsTheJobStartsIsRefused) {
  ComputeConfig compute;
  compute.type = "slurm";
  compute.section["timeLimit"] = "1";
  compute.section["requeue"] = "true";
  compute.section["checkpointLeadSeconds"] = "60";
  const TargetFacts facts = parse_probe("slurm_partition=gpu\nslurm_node=n1|idle|(null)\n");
  try {
    check_slurm(compute, facts, "login");
    FAIL() << "a lead as long as the limit passed";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "checkpointLeadSeconds (60) must be less than timeLimit (60 s) in "
              "aml_config/hpc.compute: the warning would come as the job starts");
  }
  compute.section["checkpointLeadSeconds"] = "59";
  EXPECT_NO_THROW(check_slurm(compute, facts, "login"));
  // Without requeue, or with no limit of its own (the partition's, or 0), nothing to check.
  compute.section["checkpointLeadSeconds"] = "600";
  compute.section["timeLimit"] = "0";
  EXPECT_NO_THROW(check_slurm(compute, facts, "login"));
  compute.section.erase("timeLimit");
  EXPECT_NO_THROW(check_slurm(compute, facts, "login"));
  compute.section["timeLimit"] = "1";
  compute.section["requeue"] = "false";
  EXPECT_NO_THROW(check_slurm(compute, facts, "login"));
}

TEST(Slurm, ArgumentsAndValuesAreQuotedOnce) {
  const std::string env = slurm_run_env(slurm_plan(), k_paths);
  EXPECT_TRUE(contains(env, "export 'SECRET_TOKEN=s3cr3t value'\n"));
  EXPECT_TRUE(contains(env, "command=(python3 train.py 'it'\\''s' '$(id)')\n")) << env;
}

TEST(Slurm, ContainersRunThroughTheChosenRuntime) {
  RunPlan plan = slurm_plan();
  plan.compute.section["container"] = "nvcr.io/nvidia/pytorch:24.01-py3";
  auto joined = [](const std::vector<std::string>& words) {
    std::string text;
    for (const auto& w : words) text += w + " ";
    return text;
  };
  plan.compute.section["containerRuntime"] = "docker";
  SlurmNodeCommand node = slurm_node_command(plan, k_paths);
  EXPECT_TRUE(node.srun_options.empty());
  EXPECT_TRUE(contains(joined(node.command), "docker run --rm --init --network host"));
  EXPECT_TRUE(contains(joined(node.command), "-v /home/u/.mlw/runs/demo_1700000000000:/mlw/run"));
  EXPECT_TRUE(contains(joined(node.command), "--gpus all"));
  EXPECT_TRUE(contains(joined(node.command), "-e MLW_NODE_RANK -e MLW_NUM_NODES"));
  EXPECT_TRUE(contains(joined(node.command),
                       "nvcr.io/nvidia/pytorch:24.01-py3 python3 train.py it's $(id)"));
  EXPECT_FALSE(contains(joined(node.command), "s3cr3t"));  // values stay in the environment
  EXPECT_TRUE(contains(slurm_run_env(plan, k_paths), " --user @MLW_USER@ "));  // job.sh: uid:gid

  plan.compute.section["containerRuntime"] = "pyxis";
  node = slurm_node_command(plan, k_paths);
  EXPECT_EQ(node.srun_options,
            std::vector<std::string>(
                {"--container-image=nvcr.io/nvidia/pytorch:24.01-py3",
                 "--container-mounts=/home/u/.mlw/runs/demo_1700000000000:/mlw/run,/home/u/.mlw/"
                 "share:/mlw/share",
                 "--container-workdir=/mlw/run/snapshot"}));
  EXPECT_EQ(node.command.front(), "python3");

  plan.compute.section["containerRuntime"] = "apptainer";
  node = slurm_node_command(plan, k_paths);
  EXPECT_TRUE(contains(joined(node.command), "apptainer exec --bind"));
  EXPECT_TRUE(contains(joined(node.command), "--nv docker://nvcr.io/nvidia/pytorch:24.01-py3"));
}

TEST(Slurm, DockerOnTheNodesGetsBytesThatAreNotUtf8ThroughAnAsciiScript) {
  RunPlan plan = slurm_plan();
  plan.compute.section["container"] = "img:1";
  plan.compute.section["containerRuntime"] = "docker";
  plan.arguments = {"caf\xe9", "ok"};
  plan.run_config.environment_variables = {{"ODD", "v\xe9"}, {"FINE", "plain"}};
  const SlurmNodeCommand node = slurm_node_command(plan, k_paths);
  for (const auto& word : node.command) EXPECT_TRUE(is_utf8(word)) << word;
  const auto image = std::find(node.command.begin(), node.command.end(), "img:1");
  ASSERT_NE(image, node.command.end());
  EXPECT_EQ(std::vector<std::string>(image + 1, image + 3),
            (std::vector<std::string>{"/bin/sh", "-c"}));
  EXPECT_EQ(*(image + 4), "mlw-words");  // src/exec/words.sh (ContainerWords runs it)
  EXPECT_EQ(std::count(image, node.command.end(), "caf\\351x"), 1);  // printf's octal escape
  EXPECT_EQ(std::count(image, node.command.end(), "ODD=v\\351x"), 1);
  // The odd value is set in the container, not passed by name through docker's JSON.
  EXPECT_EQ(std::count(node.command.begin(), image, "ODD"), 0);
  EXPECT_EQ(std::count(node.command.begin(), image, "FINE"), 1);
  // pyxis and apptainer pass words and the environment as bytes: unchanged.
  plan.compute.section["containerRuntime"] = "apptainer";
  const auto plain = slurm_node_command(plan, k_paths).command;
  EXPECT_EQ(plain.back(), "ok");
  EXPECT_EQ(*(plain.end() - 2), "caf\xe9");
}

TEST(Slurm, FinalStatesMapIntoHistory) {
  EXPECT_EQ(slurm_end("COMPLETED", "0:0", 0).status, status::k_completed);
  const SlurmEnd failed = slurm_end("FAILED", "3:0", 3);
  EXPECT_EQ(failed.status, status::k_failed);
  EXPECT_EQ(failed.exit_code, 3);
  EXPECT_EQ(slurm_end("FAILED", "7:0", std::nullopt).exit_code, 7);
  const SlurmEnd canceled = slurm_end("CANCELLED", "0:15", std::nullopt);
  EXPECT_EQ(canceled.status, status::k_canceled);
  EXPECT_EQ(canceled.exit_code, 143);
  const SlurmEnd oom = slurm_end("OUT_OF_MEMORY", "0:125", std::nullopt);
  EXPECT_EQ(oom.status, status::k_failed);
  EXPECT_EQ(oom.exit_code, 137);
  const SlurmEnd timeout = slurm_end("TIMEOUT", "0:0", std::nullopt);
  EXPECT_EQ(timeout.status, status::k_failed);
  EXPECT_EQ(timeout.exit_code, 143);  // Slurm's SIGTERM at the limit, when it names no signal
  EXPECT_EQ(slurm_end("TIMEOUT", "0:9", std::nullopt).exit_code, 137);
  EXPECT_EQ(slurm_end("TIMEOUT", "0:15", 0).exit_code, 143);  // not the script's own 0
  EXPECT_TRUE(contains(timeout.problem, "time limit"));
  const SlurmEnd node_fail = slurm_end("NODE_FAIL", "0:0", std::nullopt);
  EXPECT_EQ(node_fail.status, status::k_failed);
  EXPECT_EQ(node_fail.exit_code, 1);
  EXPECT_TRUE(contains(node_fail.problem, "NODE_FAIL"));
  EXPECT_EQ(slurm_end("LOST", "", std::nullopt).status, status::k_lost);
}

TEST(Slurm, TargetsThatCannotTakeTheRunAreRefused) {
  ComputeConfig compute;
  compute.type = "slurm";
  compute.section["partition"] = "gpu";
  compute.section["nodes"] = "4";
  // The probe's slurm lines, as the login node prints them.
  TargetFacts facts = parse_probe("slurm_missing=sbatch\n");
  EXPECT_THROW(check_slurm(compute, facts, "login"), Error);
  facts = parse_probe("slurm_error=Unable to contact slurm controller (connect failure)\n");
  try {
    check_slurm(compute, facts, "login");
    FAIL() << "an unanswering controller passed";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "does not answer on login: Unable to contact")) << e.what();
  }
  facts = parse_probe("");
  try {
    check_slurm(compute, facts, "login");
    FAIL() << "a missing partition passed";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "no partition \"gpu\"")) << e.what();
    EXPECT_EQ(e.code(), exit_code::k_cannot_start);
  }
  facts =
      parse_probe("slurm_partition=gpu\nslurm_node=n1|idle|(null)\nslurm_node=n2|idle|(null)\n");
  try {
    check_slurm(compute, facts, "login");
    FAIL() << "too many nodes passed";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "asks for 4 nodes but partition gpu on login has 2"));
  }
  compute.section["nodes"] = "2";
  EXPECT_NO_THROW(check_slurm(compute, facts, "login"));
}

TEST(Slurm, APartitionHasGpusWhenOneOfItsNodesReportsAGpuGres) {
  SlurmFacts facts;
  EXPECT_FALSE(partition_has_gpus(facts));
  facts.nodes = {{"n1", "idle", ""}, {"n2", "idle", "mps:100"}};
  EXPECT_FALSE(partition_has_gpus(facts));
  facts.nodes.push_back({"n3", "mixed", "gpu:a100:4"});
  EXPECT_TRUE(partition_has_gpus(facts));
}

TEST(SlurmEnd, ExitFieldsThatAreNotNumbersDoNotThrow) {
  EXPECT_EQ(slurm_end("FAILED", "99999999999999999999:0", std::nullopt).exit_code, 1);
  EXPECT_EQ(slurm_end("FAILED", "running:x", std::nullopt).exit_code, 1);
  EXPECT_EQ(slurm_end("CANCELLED", "0:4096", std::nullopt).exit_code, 143);
}

TEST(Slurm, AProjectNameWithSpacesAndOddNamesCannotBreakTheScript) {
  RunPlan plan = slurm_plan();
  plan.record.run_id = "my project_1700000000000";
  plan.run_config.environment_variables["A"] = "x'$(id)";
  EXPECT_EQ(sbatch_options(plan).front(), "--job-name=" + container_name(plan.record.run_id));
  EXPECT_TRUE(contains(slurm_run_env(plan, k_paths), "export 'A=x'\\''$(id)'\n"));
}

TEST(SlurmKeys, AValueOfAnSbatchLineIsOneWord) {
  // A cloned project's account with a newline would add a line to the job script.
  ConfigDocument doc =
      parse_config_text("type: slurm\naddress: login\naccount: \"x\\nrm -rf ~\"\n", "a.compute");
  try {
    parse_compute(doc);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "a.compute:3:10: account must be one word, not \"x\\x0arm -rf ~\"");
  }
  ConfigDocument partition = parse_config_text("type: slurm\npartition: a b\n", "a.compute");
  EXPECT_THROW(parse_compute(partition), Error);
}

TEST(SlurmScripts, JobShRunsEachRankAndKeepsTheFirstFailure) {
  test::TempDir dir("slurm-job");
  const fs::path d = dir.path();
  fs::create_directories(d / "snapshot");
  fs::create_directories(d / "bin");
  std::ofstream(d / "job.sh") << embedded_script("src/kinds/slurm/job.sh");
  // A fake srun: its options dropped, the command run once, as rank 0.
  std::ofstream(d / "bin/srun") << "#!/bin/sh\nwhile case \"$1\" in --*) true;; *) false;; esac; "
                                   "do shift; done\nSLURM_NODEID=0 exec \"$@\"\n";
  fs::permissions(d / "bin/srun", fs::perms::owner_all, fs::perm_options::add);
  std::ofstream(d / "run.env")
      << "export 'ODD=a b'\\''c'\nmlw_share=" << (d / "share").string()
      << "\nmlw_nodes=1\nmlw_gpus_per_node=0\nsrun_options=()\n"
         "command=(sh -c 'echo \"$ODD $MLW_NODE_RANK\" > ../seen; exit 3')\n";
  const std::string line = "cd " + shell_quote(d.string()) +
                           " && PATH=" + shell_quote((d / "bin").string()) +
                           ":$PATH bash ./job.sh >out 2>&1";
  const int status = std::system(line.c_str());
  EXPECT_EQ(WEXITSTATUS(status), 3);
  std::ifstream seen(d / "seen");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(seen), {}), "a b'c 0\n");
  std::ifstream code(d / "exit_code.job");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(code), {}), "3\n");
  EXPECT_TRUE(fs::exists(d / "rank_exit.0"));
  EXPECT_TRUE(fs::is_directory(d / "share"));
}

namespace {

/// A run folder for job.sh whose run has a checkpoint signal (USR1, no lead), with a fake srun
/// (the command as rank 0), squeue (10 minutes left: a warning is not passed on) and scontrol
/// (`on_show` for `scontrol show`); run.env exports JOB_PID, job.sh's own pid, and `more`.
struct WarnedJobFolder {
  test::TempDir dir{"slurm-warned"};
  WarnedJobFolder(const std::string& command, const std::string& on_show,
                  const std::string& more = "") {
    const fs::path d = dir.path();
    fs::create_directories(d / "snapshot");
    fs::create_directories(d / "bin");
    std::ofstream(d / "job.sh") << embedded_script("src/kinds/slurm/job.sh");
    tool("srun",
         "while case \"$1\" in --*) true;; *) false;; esac; do shift; done\n"
         "SLURM_NODEID=0 exec \"$@\"\n");
    tool("squeue", "echo 10:00\n");
    tool("scontrol", "case \"$1\" in show) " + on_show + " ;; esac\n");
    std::ofstream(d / "run.env") << "export JOB_PID=$$\nmlw_share=" << (d / "share").string()
                                 << "\nmlw_checkpoint_signal=USR1\nmlw_checkpoint_lead=0\n"
                                 << more << "command=(sh -c " << shell_quote(command) << ")\n";
  }
  void tool(const std::string& name, const std::string& body) const {
    std::ofstream(dir.path() / "bin" / name) << "#!/bin/sh\n" << body;
    fs::permissions(dir.path() / "bin" / name, fs::perms::owner_all, fs::perm_options::add);
  }
  /// job.sh's exit status, its output in `out`.
  int run() const {
    const std::string line = "cd " + shell_quote(dir.path().string()) +
                             " && PATH=" + shell_quote((dir.path() / "bin").string()) +
                             ":$PATH bash ./job.sh >out 2>&1";
    const int status = std::system(line.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::string file(const std::string& name) const {
    std::ifstream in(dir.path() / name);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
};

}  // namespace

TEST(SlurmScripts, AWarningWhileJobShStartsIsPassedOnNotItsDeath) {
  // Slurm warns a requeued job again at once: here while job.sh asks for the job's nodes, before
  // its step starts. The warning is looked at (10 minutes left: not passed on), not fatal (138).
  WarnedJobFolder job("exit 0", "kill -s USR1 \"$JOB_PID\"");
  EXPECT_EQ(job.run(), 0) << job.file("out");
  EXPECT_TRUE(contains(job.file("out"), "USR1 came with 600 s of the time limit left"))
      << job.file("out");
  EXPECT_EQ(job.file("exit_code.job"), "0\n");
}

TEST(SlurmScripts, AWaitCutShortByAWarningStillGivesTheStepsOwnCode) {
  // The warning cuts job.sh's wait short (128+10); the step then ends on its own with 0 (its
  // rank's 0 leaves the code to the wait). A `kill` that says the step is gone at once (as when it
  // ends while the warning is looked at): the step's own code is waited for, not the cut wait's.
  WarnedJobFolder job("sleep 0.5; kill -s USR1 \"$JOB_PID\"; sleep 0.3; exit 0", "true",
                      "kill() { if [ \"$1\" = -0 ]; then return 1; fi; command kill \"$@\"; }\n");
  EXPECT_EQ(job.run(), 0) << job.file("out");
  EXPECT_EQ(job.file("exit_code.job"), "0\n");
}

TEST(SlurmScripts, MonitorWaitsOutAJobThatSqueueLeavesOutBetweenAttempts) {
  test::TempDir dir("slurm-monitor");
  const fs::path d = dir.path();
  fs::create_directories(d / "bin");
  std::ofstream(d / "job_id") << "7\n";
  std::ofstream(d / "requeued") << "";
  // squeue lists nothing; scontrol says REQUEUED until the file goes (a second), then COMPLETED.
  const auto tool = [&](const std::string& name, const std::string& body) {
    std::ofstream(d / "bin" / name) << "#!/bin/sh\n" << body;
    fs::permissions(d / "bin" / name, fs::perms::owner_all, fs::perm_options::add);
  };
  tool("squeue", "exit 0\n");
  tool("scontrol",
       "if [ -e requeued ]; then s=REQUEUED; else s=COMPLETED; fi\n"
       "echo \"JobId=7 JobState=$s Reason=None ExitCode=0:0\"\n");
  std::ofstream(d / "monitor.sh") << embedded_script("src/kinds/slurm/monitor.sh");
  const std::string line = "cd " + shell_quote(d.string()) + " && (sleep 1; rm requeued) & cd " +
                           shell_quote(d.string()) +
                           " && PATH=" + shell_quote((d / "bin").string()) +
                           ":$PATH sh ./monitor.sh; wait";
  EXPECT_EQ(std::system(line.c_str()), 0);
  std::ifstream state(d / "slurm_state");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(state), {}), "COMPLETED\n");
}

}  // namespace mlw
