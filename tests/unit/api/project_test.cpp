#include "mlw/api/project.hpp"

#include <gtest/gtest.h>

#include "temp_dir.hpp"

#include <sstream>

#include "mlw/config/targets.hpp"
#include "mlw/util/fs.hpp"

namespace mlw {

class CreateProjectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = m_temp.path();
    m_ctx.working_dir = m_dir;
    m_ctx.out = &m_out;
    m_ctx.err = &m_err;
    m_ctx.output_format = OutputFormat::Json;
  }
  test::TempDir m_temp{"api"};
  fs::path m_dir;
  std::ostringstream m_out, m_err;
  Context m_ctx;
};

TEST_F(CreateProjectTest, WritesALoadableProjectAndReportsIt) {
  api::create_project(m_ctx, {"demo", std::nullopt, "pytorch-mnist"});
  const auto printed = nlohmann::ordered_json::parse(m_out.str());
  EXPECT_EQ(printed["path"], (m_dir / "demo").string());
  const Project project = find_project(m_dir / "demo", std::nullopt);
  EXPECT_EQ(project.compute_names(), (std::vector<std::string>{"docker", "local"}));
  EXPECT_EQ(load_compute(project, "docker").type, "docker");
  EXPECT_EQ(load_run_config(project, "local").target, "local");
  EXPECT_NE(read_file(project.root / "train.py").find("torch"), std::string::npos);
  EXPECT_NE(read_file(project.root / "aml_config/conda_dependencies.yml").find("torchvision"),
            std::string::npos);
  // Nothing is left of the staging folder.
  EXPECT_EQ(std::distance(fs::directory_iterator(m_dir), fs::directory_iterator()), 1);
}

TEST_F(CreateProjectTest, RefusesANonEmptyFolderAndChangesNothing) {
  make_directories(m_dir / "demo");
  atomic_write_file(m_dir / "demo" / "keep.txt", "mine");
  EXPECT_THROW(api::create_project(m_ctx, {"demo", std::nullopt, "blank"}), Error);
  EXPECT_EQ(read_file(m_dir / "demo" / "keep.txt"), "mine");
  EXPECT_FALSE(fs::exists(m_dir / "demo" / "aml_config"));
}

TEST_F(CreateProjectTest, UnknownTemplateSuggestsOne) {
  try {
    api::create_project(m_ctx, {"demo", std::nullopt, "tensorflow"});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean \"tensorflow-mnist\""), std::string::npos);
  }
  EXPECT_FALSE(fs::exists(m_dir / "demo"));
}

}  // namespace mlw
