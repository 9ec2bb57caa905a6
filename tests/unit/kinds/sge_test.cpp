// The sge kind: its keys in a .compute file, its checks, how its runs end, and its programs on
// the target (job.sh, monitor.sh, submit.sh, end.sh) run by sh against fake Grid Engine commands.

#include "kinds/sge/sge.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "mlw/config/compute_file.hpp"
#include "mlw/remote/probe.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/shell_quote.hpp"
#include "temp_dir.hpp"

namespace mlw {

namespace {

ComputeConfig parse(const std::string& text, std::vector<std::string>* warnings = nullptr) {
  ConfigDocument doc = parse_config_text(text, "aml_config/g.compute");
  ComputeConfig config = parse_compute(doc);
  if (warnings) *warnings = doc.warnings;
  return config;
}

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

void write(const fs::path& path, std::string_view text, bool executable = false) {
  std::ofstream(path) << text;
  if (executable) fs::permissions(path, fs::perms::owner_all, fs::perm_options::add);
}

std::string read(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Runs `command` with sh in `dir`, fakes first on PATH; returns its exit status.
int sh(const fs::path& dir, const std::string& command) {
  const std::string line = "cd " + shell_quote(dir.string()) +
                           " && PATH=" + shell_quote((dir / "bin").string()) + ":$PATH sh -c " +
                           shell_quote(command) + " >out.txt 2>err.txt";
  const int status = std::system(line.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// The run folder of a job, with job.sh and run.env as submit.sh leaves them.
struct JobFolder {
  test::TempDir dir{"sge"};
  explicit JobFolder(const std::string& words) {
    fs::create_directories(dir.path() / "snapshot");
    fs::create_directories(dir.path() / "bin");
    write(dir.path() / "job.sh", embedded_script("src/kinds/sge/job.sh"));
    write(dir.path() / "run.env", "export 'MLW_SHARE_DIR=" + (dir.path() / "share").string() +
                                      "'\nexport 'ODD=a b'\\''c\n$d'\nset -- " + words + "\n");
  }
};

const ComputeConfig k_sge = parse("type: sge\naddress: head\nqueue: all.q\n");

TargetFacts probed(const std::string& lines) {
  return parse_probe("home=/home/me\npython=ok Python 3.11\n" + lines);
}

std::vector<CheckRow> checks_of(const ComputeConfig& compute, const TargetFacts& facts) {
  std::vector<CheckRow> rows;
  sge::checks({compute, facts, "head", "g"}, rows);
  return rows;
}

std::string first_refusal(const std::vector<CheckRow>& rows) {
  for (const auto& row : rows) {
    if (!row.refusal.empty()) return row.refusal;
  }
  return "";
}

}  // namespace

TEST(SgeKind, OwnKeysAreReadCheckedAtTheirPlaceAndWrittenBack) {
  const ComputeConfig config = parse("type: sge\naddress: head\nqueue: all.q\npe: smp\nslots: 4\n");
  const sge::Config sge = sge::config_of(config);
  EXPECT_EQ(sge.queue, "all.q");
  EXPECT_EQ(sge.pe, "smp");
  EXPECT_EQ(sge.slots, 4);
  EXPECT_EQ(sge::config_of(parse("type: sge\naddress: head\n")).slots, 1);  // the fallback
  EXPECT_EQ(error_of("type: sge\naddress: head\nslots: 0\n"),
            "aml_config/g.compute:3:8: slots must be at least 1");
  EXPECT_EQ(error_of("type: sge\naddress: head\nslots: many\n"),
            "aml_config/g.compute:3:8: slots must be a whole number");
  EXPECT_EQ(error_of("type: sge\naddress: head\nqueue: \"all.q; rm -rf ~\"\n"),
            "aml_config/g.compute:3:8: queue \"all.q; rm -rf ~\" is not a Grid Engine name "
            "(letters, digits, . _ -)");
  // Another kind's file does not use sge's keys: said, and the value is still checked.
  std::vector<std::string> warnings;
  EXPECT_TRUE(parse("type: remote\naddress: head\nqueue: all.q\n", &warnings).section.empty());
  ASSERT_EQ(warnings.size(), 1U);
  EXPECT_EQ(warnings[0],
            "aml_config/g.compute:3: queue is a key of sge targets; this one is remote, which "
            "does not use it");
  EXPECT_EQ(error_of("type: remote\naddress: head\nslots: 0\n"),
            "aml_config/g.compute:3:8: slots must be at least 1");
  // Written and read back the same; an update rewrites the changed key in place.
  const std::string text = render_compute(config, "g");
  EXPECT_NE(text.find("slots: 4\n"), std::string::npos) << text;
  EXPECT_EQ(parse(text).section, config.section);
  ComputeConfig after = config;
  after.section["queue"] = "gpu.q";
  const std::string updated =
      update_compute_text("type: sge\naddress: head\nqueue: all.q # mine\npe: smp\nslots: 4\n", "g",
                          config, after, "g");
  EXPECT_EQ(updated, "type: sge\naddress: head\nqueue: \"gpu.q\"\npe: smp\nslots: 4\n");
}

TEST(SgeKind, ChecksNameTheQueueThePeAndTheSlots) {
  const std::string cluster = "sge_queue=all.q 2 1\nsge_queue=gpu.q 8 8\nsge_pe=smp\nsge_pe=mpi\n";
  EXPECT_EQ(first_refusal(checks_of(k_sge, probed(cluster))), "");
  EXPECT_EQ(
      first_refusal(checks_of(parse("type: sge\naddress: head\nqueue: big.q\n"), probed(cluster))),
      "Grid Engine on head has no queue \"big.q\" (list them with: qconf -sql)");
  EXPECT_EQ(first_refusal(
                checks_of(parse("type: sge\naddress: head\npe: omp\nslots: 2\n"), probed(cluster))),
            "Grid Engine on head has no parallel environment \"omp\" (list them with: qconf -spl)");
  EXPECT_EQ(
      first_refusal(checks_of(parse("type: sge\naddress: head\nqueue: all.q\npe: smp\nslots: 3\n"),
                              probed(cluster))),
      "the run asks for 3 slots but all.q on head has 2; lower slots in the compute file");
  EXPECT_EQ(
      first_refusal(checks_of(parse("type: sge\naddress: head\nslots: 2\n"), probed(cluster))),
      "slots: 2 needs a parallel environment: set pe in the compute file (list them with: "
      "ssh head qconf -spl)");
  EXPECT_EQ(first_refusal(checks_of(k_sge, probed("sge_missing=qsub\nsge_missing=qacct\n"))),
            "head has no qsub, qacct on the PATH of an SSH session: is it a Grid Engine submit "
            "host? (source $SGE_ROOT/$SGE_CELL/common/settings.sh in ~/.bashrc there)");
  EXPECT_EQ(first_refusal(checks_of(
                k_sge, probed("sge_error=error: commlib error: can't connect to service\n"))),
            "the Grid Engine qmaster does not answer on head: error: commlib error: can't "
            "connect to service (is sge_qmaster up? try: ssh head qstat)");
}

TEST(SgeKind, TheEndComesFromTheScriptThenQacct) {
  std::vector<std::string> problems;
  auto end = [&](const std::string& text) { return sge::parse_end(text, "head", problems); };
  RunEnding e =
      sge::ending_of(end("job_code=3\nbatch_state=done\nsge_acct=3 0\n"), false, 0, "7", "head");
  EXPECT_EQ(e.status, status::k_failed);
  EXPECT_EQ(e.exit_code, 3);
  e = sge::ending_of(end("job_code=0\nbatch_state=done\n"), false, 0, "7", "head");
  EXPECT_EQ(e.status, status::k_completed);
  EXPECT_EQ(e.exit_code, 0);
  // qdel: job.sh saw SIGUSR2 and wrote 143; or the job was still queued and never ran.
  e = sge::ending_of(end("job_code=143\nbatch_state=done\n"), true, 0, "7", "head");
  EXPECT_EQ(e.status, status::k_canceled);
  EXPECT_EQ(e.exit_code, 143);
  e = sge::ending_of(end("batch_state=done\n"), true, 0, "7", "head");
  EXPECT_EQ(e.status, status::k_canceled);
  EXPECT_EQ(e.exit_code, 143);
  // Killed by Grid Engine (h_rt, memory) before job.sh could write its code.
  e = sge::ending_of(end("batch_state=done\nsge_acct=137 100\n"), false, 0, "7", "head");
  EXPECT_EQ(e.status, status::k_failed);
  EXPECT_EQ(e.exit_code, 137);
  ASSERT_EQ(e.problems.size(), 1U);
  EXPECT_EQ(e.problems[0],
            "Grid Engine ended job 7 before the script (qacct: exit_status 137, failed 100)");
  // Stopped by Grid Engine, not by mlw: at the time limit (h_rt, 60 s) or by another's qdel.
  e = sge::ending_of(end("job_code=143\nbatch_state=done\nstopped_after=61\n"), false, 60, "7",
                     "head");
  EXPECT_EQ(e.status, status::k_failed);
  EXPECT_EQ(e.exit_code, 143);
  ASSERT_EQ(e.problems.size(), 1U);
  EXPECT_EQ(e.problems[0],
            "Grid Engine stopped job 7 at its time limit (60 s, h_rt; timeLimit in the compute "
            "file) after 61 s");
  e = sge::ending_of(end("job_code=143\nbatch_state=done\nstopped_after=5\n"), false, 600, "7",
                     "head");
  ASSERT_EQ(e.problems.size(), 1U);
  EXPECT_NE(e.problems[0].find("mlw did not ask; a qdel by another"), std::string::npos);
  e = sge::ending_of(end("job_code=143\nbatch_state=done\nstopped_after=5\n"), true, 600, "7",
                     "head");
  EXPECT_EQ(e.status, status::k_canceled);
  EXPECT_TRUE(e.problems.empty());
  e = sge::ending_of(end("batch_state=done\nsge_error=can't chdir\n"), false, 0, "7", "head");
  EXPECT_EQ(e.exit_code, exit_code::k_cannot_start);
  EXPECT_EQ(e.problems[0], "Grid Engine could not run job 7 on head: can't chdir");
  e = sge::ending_of(end("batch_state=LOST\n"), false, 0, "7", "head");
  EXPECT_EQ(e.status, status::k_lost);
  EXPECT_EQ(e.lost_reason, sge::k_lost_qmaster);
  EXPECT_TRUE(problems.empty());
  // A lying host: its answer is named, not taken.
  sge::parse_end("job_code=-1\x1b[2J\n", "head", problems);
  ASSERT_EQ(problems.size(), 1U);
  EXPECT_EQ(problems[0].find('\x1b'), std::string::npos) << problems[0];
}

TEST(SgeScripts, JobShRunsTheWordsWithTheVariablesAndKeepsTheExitCode) {
  JobFolder job("sh -c 'printf \"%s|%s\" \"$ODD\" \"$1\" > ../seen; exit 7' x 'two words'");
  EXPECT_EQ(sh(job.dir.path(), "sh ./job.sh"), 7);
  EXPECT_EQ(read(job.dir.path() / "seen"), "a b'c\n$d|two words");
  EXPECT_EQ(read(job.dir.path() / "exit_code.job"), "7\n");
  EXPECT_TRUE(fs::is_directory(job.dir.path() / "share"));
}

TEST(SgeScripts, JobShNeverExitsWithGridEnginesSpecialCodes) {
  for (const char* code : {"99", "100"}) {
    JobFolder job(std::string("sh -c 'exit ") + code + "'");
    EXPECT_EQ(sh(job.dir.path(), "sh ./job.sh"), 1) << code;  // 99 would requeue, 100 hold
    EXPECT_EQ(read(job.dir.path() / "exit_code.job"), std::string(code) + "\n");
  }
}

TEST(SgeScripts, JobShRecordsACancelAs143) {
  // qdel with -notify: SIGUSR2 to the job's processes.
  JobFolder job("sleep 30");
  // Its own process group, as the shepherd gives a job; the signal goes to the whole group.
  EXPECT_EQ(sh(job.dir.path(), "setsid sh ./job.sh & sleep 0.5; kill -USR2 -$!; wait $!"), 143);
  EXPECT_EQ(read(job.dir.path() / "exit_code.job"), "143\n");
}

TEST(SgeScripts, AWaitCutShortByAWarningStillGivesTheScriptsOwnCode) {
  // Grid Engine's warning (USR1) cuts job.sh's wait short (128+10); the script ends on its own
  // with 3. A `kill` that says the script is gone at once (as when it ends meanwhile): its own
  // code is waited for, not the cut wait's.
  JobFolder job("sh -c 'sleep 0.5; kill -s USR1 $JOB_PID; sleep 0.3; exit 3'");
  std::ofstream(job.dir.path() / "run.env", std::ios::app)
      << "JOB_PID=$$; export JOB_PID\n"
         "kill() { if [ \"$1\" = -0 ]; then return 1; fi; command kill \"$@\"; }\n";
  EXPECT_EQ(sh(job.dir.path(), "sh ./job.sh"), 3) << read(job.dir.path() / "out.txt");
  EXPECT_EQ(read(job.dir.path() / "exit_code.job"), "3\n");
}

TEST(SgeScripts, MonitorMarksStartedThenReadsQacct) {
  test::TempDir dir("sge-monitor");
  const fs::path d = dir.path();
  fs::create_directories(d / "bin");
  write(d / "monitor.sh", embedded_script("src/kinds/sge/monitor.sh"));
  write(d / "job_id", "12\n");
  // qstat shows the job waiting, then running, then no more; qacct has its record.
  write(d / "bin/qstat",
        "#!/bin/sh\nn=$(cat qstat.n 2>/dev/null || echo 0); echo $((n+1)) > qstat.n\n"
        "echo 'job-ID prior name user state'\necho '-----'\n"
        "case $n in 0) echo '12 0.5 mlw-x me qw';; 1|2) echo '12 0.5 mlw-x me r';; esac\n",
        true);
  write(d / "bin/qacct", "#!/bin/sh\necho 'failed       0'\necho 'exit_status  3'\n", true);
  EXPECT_EQ(sh(d, ". ./monitor.sh"), 0) << read(d / "err.txt");
  EXPECT_TRUE(fs::exists(d / "started"));
  EXPECT_EQ(read(d / "sge_acct"), "3 0\n");
  EXPECT_EQ(read(d / "batch_state"), "done\n");
  write(d / "end.sh", embedded_script("src/kinds/sge/end.sh"));
  write(d / "exit_code.job", "3\n");
  EXPECT_EQ(sh(d, "sh ./end.sh"), 0);
  EXPECT_EQ(read(d / "out.txt"), "job_code=3\nbatch_state=done\nsge_acct=3 0\nsge_error=\n");
}

TEST(SgeScripts, MonitorGivesUpOnAQmasterThatDoesNotAnswer) {
  test::TempDir dir("sge-monitor");
  const fs::path d = dir.path();
  fs::create_directories(d / "bin");
  write(d / "monitor.sh", embedded_script("src/kinds/sge/monitor.sh"));
  write(d / "job_id", "12\n");
  write(d / "sge_retry", "1\n");
  write(d / "bin/qstat", "#!/bin/sh\necho 'error: commlib error' >&2\nexit 1\n", true);
  EXPECT_EQ(sh(d, ". ./monitor.sh"), 0);
  EXPECT_EQ(read(d / "batch_state"), "LOST\n");
  EXPECT_FALSE(fs::exists(d / "started"));
}

TEST(SgeScripts, SubmitWritesTheFilesAndAsksQsubForTheQueueAndSlots) {
  test::TempDir dir("sge-submit");
  const fs::path d = dir.path();
  fs::create_directories(d / "bin");
  write(d / "submit.sh", embedded_script("src/kinds/sge/submit.sh"));
  write(d / "bin/qsub", "#!/bin/sh\nprintf '%s\\n' \"$@\" > qsub.args\necho 42\n", true);
  write(d / "in", "3\nJOB2\nEN4\nENV!3\nSMP3\nAWK4\nNVML");
  EXPECT_EQ(sh(d, "sh ./submit.sh mlw-r1 all.q smp 2 9 < in"), 0) << read(d / "err.txt");
  EXPECT_EQ(read(d / "out.txt"), "42\n");
  EXPECT_EQ(read(d / "job.sh"), "JOB");
  EXPECT_EQ(read(d / "end.sh"), "EN");
  EXPECT_EQ(read(d / "run.env"), "ENV!");
  EXPECT_EQ(read(d / "sampler.sh"), "SMP");
  EXPECT_EQ(read(d / "sampler.awk"), "AWK");
  EXPECT_EQ(read(d / "sampler.nvml"), "NVML");
  EXPECT_EQ(read(d / "job_id"), "42\n");
  EXPECT_EQ(read(d / "sge_retry"), "9\n");
  EXPECT_EQ(read(d / "qsub.args"),
            "-terse\n-cwd\n-N\nmlw-r1\n-o\ndriver_log.txt\n-j\ny\n-S\n/bin/sh\n-r\nn\n-notify\n-q\n"
            "all.q\n-pe\nsmp\n2\njob.sh\n");
  write(d / "bin/qsub", "#!/bin/sh\necho 'Unable to run job: denied' >&2\nexit 1\n", true);
  EXPECT_EQ(sh(d, "sh ./submit.sh mlw-r1 '' '' 1 9 < in"), 1);
  EXPECT_EQ(read(d / "err.txt"), "Unable to run job: denied\n");
}

TEST(SgeKind, RunEnvKeepsEveryValueOffTheCommandLine) {
  RunPlan plan;
  plan.record.run_id = "p_1";
  plan.script = "train.py";
  plan.arguments = {"--lr", "0.1 $(touch x)"};
  plan.extra_env["TOKEN"] = "s3cr3t'\"";
  plan.compute = k_sge;
  plan.run_config.framework = "Python";
  TargetRunPaths paths{"/home/me/.mlw/runs/p_1", "/home/me/.mlw/share/p/g", ""};
  const std::string env = sge::run_env(plan, paths);
  EXPECT_NE(env.find("export 'TOKEN=s3cr3t'\\''\"'\n"), std::string::npos) << env;
  EXPECT_NE(env.find("set -- python3 train.py --lr '0.1 $(touch x)'\n"), std::string::npos) << env;
}

}  // namespace mlw

namespace mlw {

TEST(SgeKind, ATimeLimitAndItsWarningAreQsubsLimitsAndChecked) {
  const sge::Config plain =
      sge::config_of(parse("type: sge\naddress: head\ntimeLimit: 01:00:00\n"));
  EXPECT_EQ(plain.time_limit_s, 3600);
  EXPECT_EQ(sge::limits(plain), "h_rt=3600");  // no warning without requeue
  const sge::Config warned = sge::config_of(parse(
      "type: sge\naddress: head\ntimeLimit: \"0:01:00\"\nrequeue: true\ncheckpointLeadSeconds: "
      "45\n"));
  EXPECT_EQ(sge::limits(warned), "h_rt=60,s_rt=15");
  EXPECT_EQ(sge::limits(sge::config_of(parse("type: sge\naddress: head\nrequeue: true\n"))), "");
  EXPECT_EQ(error_of("type: sge\naddress: head\ntimeLimit: 2-00:00\n"),
            "aml_config/g.compute:3:12: timeLimit must be HH:MM:SS (qsub -l h_rt), not "
            "\"2-00:00\"");
  EXPECT_EQ(error_of("type: sge\naddress: head\ncheckpointSignal: TERM\n"),
            "aml_config/g.compute:3:19: checkpointSignal must be USR1 on Grid Engine, not "
            "\"TERM\": its warning (qsub -notify, the soft time limit s_rt) is SIGUSR1, sent to "
            "every process of the job");
  // Slurm's own timeLimit and signals are still Slurm's.
  EXPECT_EQ(error_of("type: slurm\naddress: head\ntimeLimit: 2-00:00\ncheckpointSignal: TERM\n"),
            "no error");
  // A lead that is not less than the limit: refused with the file's name.
  const ComputeConfig early = parse(
      "type: sge\naddress: head\ntimeLimit: \"00:01:00\"\nrequeue: true\ncheckpointLeadSeconds: "
      "60\n");
  EXPECT_EQ(first_refusal(checks_of(early, probed("sge_queue=all.q 2 1\n"))),
            "checkpointLeadSeconds (60) must be less than timeLimit (60 s) in "
            "aml_config/g.compute: the warning would come before the job starts");
}

}  // namespace mlw
