// `computetarget doctor` through the Context's Connector: a recording fake opens the shell, and a
// stand-in `docker` on that shell's PATH plays the daemon (no dockerd, no sshd).

#include <gtest/gtest.h>

#include "fakes.hpp"

#include <fstream>
#include <sstream>

#include "temp_dir.hpp"

#include "mlw/api/computetarget.hpp"
#include "mlw/api/project.hpp"
#include "mlw/remote/connect.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/shell_quote.hpp"

namespace mlw {
namespace {

using test::RecordingConnector;

class DoctorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_ctx.working_dir = m_temp.path();
    m_ctx.out = &m_out;
    m_ctx.err = &m_err;
    m_ctx.output_format = OutputFormat::Json;
    api::create_project(m_ctx, {"demo", std::nullopt, "blank"});
    m_out.str("");
    m_ctx.project_dir = m_temp.path() / "demo";
    make_directories(m_temp.path() / "bin");
    m_connector = std::make_shared<RecordingConnector>(m_temp.path() / "bin");
    m_ctx.connector = m_connector;
  }

  /// A stand-in docker: `info` answers as a running daemon (`up`) or as none (`down`).
  void docker(const std::string& mode) {
    const auto path = m_temp.path() / "bin" / "docker";
    std::ofstream(path) << "#!/bin/sh\ncase \"$1\" in\n  image) exit 1;;\n  info) "
                        << (mode == "up" ? "echo '24.0.7 {\"runc\":{\"path\":\"runc\"}}';;"
                                         : "echo 'Cannot connect to the Docker daemon' >&2; "
                                           "exit 1;;")
                        << "\nesac\n";
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  }

  /// The result doctor printed for `check`.
  std::string result_of(const std::string& check) const {
    for (const auto& row : nlohmann::json::parse(m_out.str())) {
      if (row["check"] == check) return row["result"];
    }
    return "(no row)";
  }

  test::TempDir m_temp{"doctor"};
  std::ostringstream m_out, m_err;
  Context m_ctx;
  std::shared_ptr<RecordingConnector> m_connector;
};

TEST_F(DoctorTest, ADockerTargetIsCheckedThroughTheConnectorsLocalShell) {
  docker("up");
  EXPECT_EQ(api::doctor(m_ctx, "docker"), 0);
  EXPECT_EQ(result_of("docker"), "ok");
  EXPECT_EQ(m_connector->asked, std::vector<std::string>{"local shell"});
}

TEST_F(DoctorTest, ADaemonThatDoesNotAnswerIsAFailingRowWithItsFix) {
  docker("down");
  EXPECT_GT(api::doctor(m_ctx, "docker"), 0);
  EXPECT_EQ(result_of("docker"), "fail");
  EXPECT_EQ(m_connector->asked, std::vector<std::string>{"local shell"});
}

}  // namespace
}  // namespace mlw
