// src/exec/lease.sh through LocalLease, as the local and docker supervisors hold it: a stand-in
// nvidia-smi (two GPUs, a file naming the GPUs a foreign process uses) first on PATH, a lease
// folder of the test's own.

#include "mlw/exec/lease.hpp"

#include <gtest/gtest.h>
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
    return test::run_command("d=" + shell_quote((m_dir.path() / "leases").string()) + "\n" +
                             std::string(embedded_script("src/exec/queue.sh")))
        .output;
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
  EXPECT_EQ(parse_lease_answer("error no GPU", true).text, "no GPU");
  for (const char* bad : {"granted x", "queued -1", "queued", "hello", "granted 1,,2"}) {
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
  EXPECT_NE(queue().find("\t0\n"), std::string::npos) << queue();  // waits for GPU 0's user
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
  const fs::path folder = m_dir.path() / "leases";
  fs::create_directories(folder);
  ::chmod(folder.c_str(), 0755);
  LocalLease shut(request("gpu:1", "shut"));
  const LeaseAnswer refused = next(shut);
  EXPECT_EQ(refused.kind, Kind::Error);
  EXPECT_NE(refused.text.find("mode 755"), std::string::npos) << refused.text;
  EXPECT_NE(refused.text.find("chmod 1777 " + folder.string()), std::string::npos);
}

}  // namespace
}  // namespace mlw
