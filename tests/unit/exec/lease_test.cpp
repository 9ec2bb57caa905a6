// src/exec/lease.sh through LocalLease, as the local and docker supervisors hold it: a stand-in
// nvidia-smi (two GPUs, a file naming the GPUs a foreign process uses) first on PATH, a lease
// folder of the test's own.

#include "mlw/exec/lease.hpp"

#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "mlw/util/embedded.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/shell_quote.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"

namespace mlw {
namespace {

namespace fs = std::filesystem;
using Kind = LeaseAnswer::Kind;

/// The name of the user running the tests.
std::string user_name() {
  const passwd* entry = ::getpwuid(::geteuid());
  return entry ? entry->pw_name : std::to_string(::geteuid());
}

class LeaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path bin = m_dir.path() / "bin";
    fs::create_directories(bin);
    atomic_write_file(bin / "nvidia-smi",
                      "#!/bin/sh\n"
                      "case \"$1\" in\n"
                      "  --query-gpu=*) printf '0, GPU-aaa\\n1, GPU-bbb\\n' ;;\n"
                      "  --query-compute-apps=*) cat \"$(dirname \"$0\")/apps\" 2>/dev/null ;;\n"
                      "esac\n");
    fs::permissions(bin / "nvidia-smi", fs::perms::owner_all);
    m_path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
    ::setenv("PATH", (bin.string() + ":" + m_path).c_str(), 1);
  }
  void TearDown() override { ::setenv("PATH", m_path.c_str(), 1); }

  LeaseRequest request(const std::string& want, const std::string& run,
                       const std::string& foreign = "wait") const {
    return {want, (m_dir.path() / "leases").string(), foreign, run, "me@laptop"};
  }
  /// The next answer, within `seconds`.
  static LeaseAnswer next(LocalLease& lease, double seconds = 5) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(static_cast<int>(seconds * 1000));
    bool late = false;
    LeaseAnswer answer = lease.next([&] {
      late = std::chrono::steady_clock::now() > deadline;
      return late;
    });
    if (late) answer.text = "no answer in time";
    return answer;
  }
  /// The live tickets queue.sh reads, one line each.
  std::string queue() const {
    return test::run_command(queue_script((m_dir.path() / "leases").string())).output;
  }

  test::TempDir m_dir{"mlw-lease"};
  std::string m_path;
};

TEST(LeaseAnswerTest, ReadsEachLineAndRefusesTheRest) {
  EXPECT_EQ(parse_lease_answer("queued 3", true).position, 3);
  const LeaseAnswer granted = parse_lease_answer("granted 1,3", true);
  EXPECT_EQ(granted.kind, Kind::Granted);
  EXPECT_EQ(granted.gpus, (std::vector<int>{1, 3}));
  EXPECT_EQ(gpu_list(granted.gpus), "1,3");
  EXPECT_EQ(parse_lease_answer("granted 0", false).gpus, std::vector<int>{});
  // The ticket's folder after the list (the GPU sampler writes its use there).
  const LeaseAnswer named = parse_lease_answer("granted 2 /tmp/mlw leases/q.1.2", true);
  EXPECT_EQ(named.gpus, std::vector<int>{2});
  EXPECT_EQ(named.ticket, "/tmp/mlw leases/q.1.2");
  EXPECT_EQ(parse_lease_answer("error no GPU", true).text, "no GPU");
  const LeaseAnswer notice = parse_lease_answer("notice not shared\x1b[2J", true);
  EXPECT_EQ(notice.kind, Kind::Notice);
  EXPECT_EQ(notice.text.find('\x1b'), std::string::npos);  // shown as printable text
  for (const char* bad : {"granted x", "queued -1", "queued", "hello", "granted 1,,2", "notice"}) {
    EXPECT_EQ(parse_lease_answer(bad, true).kind, Kind::Error) << bad;
  }
}

TEST_F(LeaseTest, FirstComeFirstServedNoRunOvertakesTheOneAhead) {
  LocalLease a(request("gpu:1", "a"));
  const LeaseAnswer got_a = next(a);
  ASSERT_EQ(got_a.kind, Kind::Granted) << got_a.text;
  LocalLease b(request("gpu:2", "b"));
  EXPECT_EQ(next(b).position, 1);  // one GPU is free, b wants two: it waits
  LocalLease c(request("gpu:1", "c"));
  EXPECT_EQ(next(c).position, 2);  // the free GPU is not c's: b is ahead
  ::usleep(300 * 1000);
  const std::string waiting = queue();
  EXPECT_NE(waiting.find("\t-\t-\tb\tme@laptop\tgpu:2"), std::string::npos) << waiting;
  a.end();
  const LeaseAnswer got_b = next(b);
  EXPECT_EQ(got_b.kind, Kind::Granted);
  EXPECT_EQ(got_b.gpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(next(c).position, 1);  // c is next now; no GPU is free yet
  b.end();
  EXPECT_EQ(next(c).kind, Kind::Granted);
}

TEST_F(LeaseTest, TheKernelFreesALeaseWhenItsOwnerIsKilled) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t owner = ::fork();
  if (owner == 0) {
    LocalLease held(request("gpu:2", "owner"));
    const char said = next(held).kind == Kind::Granted ? 'g' : 'x';
    (void)!::write(ready[1], &said, 1);
    ::pause();
    ::_exit(0);
  }
  char said = 0;
  ASSERT_EQ(::read(ready[0], &said, 1), 1);
  ASSERT_EQ(said, 'g');
  LocalLease next_one(request("gpu:1", "next"));
  EXPECT_EQ(next(next_one).kind, Kind::Queued);
  const auto killed = std::chrono::steady_clock::now();
  ::kill(owner, SIGKILL);
  ::waitpid(owner, nullptr, 0);
  EXPECT_EQ(next(next_one, 1.0).kind, Kind::Granted);
  EXPECT_LT(std::chrono::steady_clock::now() - killed, std::chrono::seconds(1));
}

TEST_F(LeaseTest, AStoppedWaitLeavesTheQueue) {
  LocalLease a(request("gpu:2", "a"));
  ASSERT_EQ(next(a).kind, Kind::Granted);
  LocalLease b(request("gpu:1", "b"));
  EXPECT_EQ(next(b).kind, Kind::Queued);
  EXPECT_EQ(b.next([] { return true; }).kind, Kind::Ended);
  EXPECT_EQ(queue().find("\tb\t"), std::string::npos) << queue();
  EXPECT_NE(queue().find("\ta\t"), std::string::npos) << queue();
}

TEST_F(LeaseTest, AGpuInForeignUseIsNotHandedOutUnlessIgnored) {
  atomic_write_file(m_dir.path() / "bin" / "apps", "GPU-aaa\n");
  LocalLease a(request("gpu:1", "a"));
  const LeaseAnswer got = next(a);
  EXPECT_EQ(got.gpus, std::vector<int>{1});
  LocalLease b(request("gpu:1", "b"));
  EXPECT_EQ(next(b).kind, Kind::Queued);
  ::usleep(300 * 1000);
  EXPECT_NE(queue().find("\tgpu:1\t"), std::string::npos);
  // b waits for GPU 0's user; the ticket is this user's own.
  EXPECT_NE(queue().find("\tb\tme@laptop\tgpu:1\t"), std::string::npos) << queue();
  EXPECT_NE(queue().find("\t0\t" + user_name() + "\t1\t"), std::string::npos) << queue();
  LocalLease c(request("gpu:1", "c", "ignore"));
  b.end();
  EXPECT_EQ(next(c).gpus, std::vector<int>{0});
}

TEST_F(LeaseTest, SlotsLimitRunsWithoutGpus) {
  LocalLease a(request("slot:1", "a"));
  EXPECT_EQ(next(a).kind, Kind::Granted);
  LocalLease b(request("slot:1", "b"));
  EXPECT_EQ(next(b).kind, Kind::Queued);
  a.end();
  EXPECT_EQ(next(b).kind, Kind::Granted);
}

TEST_F(LeaseTest, RefusalsSayWhatToDo) {
  LocalLease many(request("gpu:3", "many"));
  std::string host = test::run_command("hostname").output;
  host.erase(host.find_last_not_of('\n') + 1);
  EXPECT_EQ(next(many).text, "3 GPUs asked for; " + host + " has 2");
}

// A lock is checked, once taken, to be the file its path still names (issue 45): here a stand-in
// flock opens the lock, then puts another file at its path (as a user who could rename it would),
// then locks what it opened. The lease must not hold a file no other run will ever lock.
TEST_F(LeaseTest, ALockSwappedWhileItIsTakenIsTakenAgain) {
  const auto real = find_executable("flock");
  ASSERT_TRUE(real);
  const std::string flock = shell_quote(real->string());
  const std::string mark = shell_quote((m_dir.path() / "swapped").string());
  atomic_write_file(m_dir.path() / "bin" / "flock",
                    "#!/bin/sh\n"
                    "if [ \"$1\" = -n ] && [ \"$2\" = -E ] && [ ! -e " +
                        mark +
                        " ]; then\n"
                        "  : >" +
                        mark +
                        "\n"
                        "  p=$4; shift 4\n"
                        "  exec 9<\"$p\"; mv \"$p\" \"$p.old\"; mkdir \"$p\"\n"
                        "  " +
                        flock +
                        " -n 9 || exit 75\n"
                        "  exec \"$@\"\n"
                        "fi\n"
                        "exec " +
                        flock + " \"$@\"\n");
  fs::permissions(m_dir.path() / "bin" / "flock", fs::perms::owner_all);
  LocalLease a(request("gpu:1", "a"));
  const LeaseAnswer got = next(a);
  ASSERT_EQ(got.kind, Kind::Granted) << got.text;
  EXPECT_TRUE(fs::exists(m_dir.path() / "swapped"));  // the swap happened
  // The GPU's lock at its path now is held: another run cannot take the same GPU.
  const fs::path lock = m_dir.path() / "leases" / ("gpu." + std::to_string(got.gpus.at(0)));
  EXPECT_NE(test::run_command(flock + " -n " + shell_quote(lock.string()) + " true; echo rc=$?")
                .output.find("rc=1"),
            std::string::npos);
}

// A lease folder that is not root's with mode 1777 is not shared (issue 45: whoever made it could
// take the leases in it): the run leases in the user's own folder and says so, with the
// administrator's command.
TEST_F(LeaseTest, AFolderThatIsNotSharedSafelyIsLeftForTheUsersOwn) {
  const fs::path folder = m_dir.path() / "leases";
  fs::create_directories(folder);
  ::chmod(folder.c_str(), 0755);
  const char* home = std::getenv("HOME");
  const std::string kept = home ? home : "";
  ::setenv("HOME", (m_dir.path() / "home").string().c_str(), 1);
  LocalLease own(request("gpu:1", "own"));
  const LeaseAnswer said = next(own);
  const LeaseAnswer granted = next(own);
  ::setenv("HOME", kept.c_str(), 1);
  EXPECT_EQ(said.kind, Kind::Notice);
  EXPECT_NE(said.text.find("the lease folder " + folder.string() + " is not root's with mode 1777"),
            std::string::npos)
      << said.text;
  EXPECT_NE(said.text.find("mode 755"), std::string::npos) << said.text;
  EXPECT_NE(said.text.find("leased among this user's runs only"), std::string::npos);
  EXPECT_NE(said.text.find("install -d -o root -g root -m 1777 " + folder.string()),
            std::string::npos);
  EXPECT_EQ(granted.kind, Kind::Granted);
  EXPECT_TRUE(fs::is_directory(m_dir.path() / "home/.mlw/leases/gpu.0"));
  EXPECT_EQ(fs::status(m_dir.path() / "home/.mlw/leases").permissions() & fs::perms::all,
            fs::perms::owner_all);
  EXPECT_TRUE(fs::is_empty(folder));  // nothing of the run's in the folder it did not trust
}

}  // namespace
}  // namespace mlw
