// ResultsFetch reads what results.sh prints on a target: the metrics, the names of the sockets tar
// leaves out, then the tar of outputs/, however the stream is cut into pieces.
#include "exec/results_fetch.hpp"

#include <gtest/gtest.h>

#include <cstdio>

#include "mlw/util/fs.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"
#include "temp_dir.hpp"

namespace mlw {

namespace {

/// `tar -cf - outputs` of a folder holding outputs/model.txt.
std::string outputs_tar(const fs::path& dir) {
  make_directories(dir / "outputs");
  atomic_write_file(dir / "outputs/model.txt", "weights\n");
  const std::string command = "cd " + shell_quote(dir.string()) + " && tar -cf - outputs";
  std::FILE* pipe = ::popen(command.c_str(), "r");
  std::string tar;
  char buffer[4096];
  while (pipe && !std::feof(pipe)) {
    const std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe);
    tar.append(buffer, n);
    if (n == 0) break;
  }
  if (pipe) ::pclose(pipe);
  return tar;
}

}  // namespace

TEST(ResultsFetch, MetricsSocketsAndOutputsFedOneByteAtATime) {
  test::TempDir dir("mlw-results");
  const fs::path run = dir.path() / "run";
  make_directories(run);
  const std::string metrics = "{\"name\": \"loss\", \"value\": 1}\n";
  const std::string sockets = "outputs/s\noutputs/a\x1b[31m";
  const std::string stream = std::to_string(metrics.size()) + "\n" + metrics +
                             std::to_string(sockets.size()) + "\n" + sockets +
                             outputs_tar(dir.path() / "target");
  ResultsFetch fetch(run, "gpu-host");
  for (const char c : stream) fetch.feed(std::string_view(&c, 1));
  EXPECT_FALSE(fetch.failed());
  std::vector<std::string> problems;
  fetch.finish(problems);
  EXPECT_EQ(read_file_if_exists(run / "metrics.jsonl"), metrics);
  EXPECT_EQ(read_file_if_exists(run / "outputs/model.txt"), "weights\n");
  ASSERT_EQ(problems.size(), 2u) << join(problems, "\n");
  EXPECT_EQ(problems[0], "outputs/s is not a regular file; it was not collected");
  EXPECT_EQ(problems[1].find('\x1b'), std::string::npos) << problems[1];  // printable
}

TEST(ResultsFetch, NoMetricsNoSocketsNoOutputs) {
  test::TempDir dir("mlw-results");
  ResultsFetch fetch(dir.path(), "gpu-host");
  fetch.feed("0\n0\n");
  std::vector<std::string> problems;
  fetch.finish(problems);
  EXPECT_TRUE(problems.empty()) << join(problems, "\n");
  EXPECT_FALSE(fs::exists(dir.path() / "metrics.jsonl"));
  EXPECT_TRUE(fs::is_directory(dir.path() / "outputs"));
}

TEST(ResultsFetch, AListOfSocketsOverItsBoundIsAMalformedAnswer) {
  test::TempDir dir("mlw-results");
  ResultsFetch fetch(dir.path(), "gpu-host");
  fetch.feed("0\n99999999999\noutputs/s\n");
  EXPECT_TRUE(fetch.failed());
  std::vector<std::string> problems;
  fetch.finish(problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("outputs could not all be brought back from gpu-host"),
            std::string::npos)
      << problems[0];
}

}  // namespace mlw
