// What `mlw notebook kernel` reads from others: Jupyter's sessions answer (which notebook a kernel
// serves) and a kernel's output lines (split under a bound). Strings of the wrong type are
// answers to skip, never an exception that ends the kernel.

#include <gtest/gtest.h>

#include "api/notebook_cells.hpp"
#include "api/notebook_session.hpp"

namespace mlw::api {
namespace {

TEST(JupyterSessions, TheNotebookOfTheKernelsSession) {
  const std::string body =
      R"([{"path": "other.ipynb", "kernel": {"id": "k2"}},)"
      R"( {"path": "analysis.ipynb", "kernel": {"id": "k1", "name": "mlw-p-local"}}])";
  EXPECT_EQ(notebook_in_sessions(body, "k1"), "analysis.ipynb");
  EXPECT_EQ(notebook_in_sessions(body, "k3"), "");
}

TEST(JupyterSessions, ValuesOfTheWrongTypeAreSkipped) {
  EXPECT_EQ(notebook_in_sessions(R"([{"path": 7, "kernel": {"id": "k1"}}])", "k1"), "");
  EXPECT_EQ(notebook_in_sessions(R"([{"path": "a.ipynb", "kernel": {"id": ["k1"]}}])", "k1"), "");
  EXPECT_EQ(notebook_in_sessions(R"({"path": "a.ipynb"})", "k1"), "");
  EXPECT_EQ(notebook_in_sessions("not json", "k1"), "");
}

TEST(JupyterSessions, OnlyAnAnswerOf200HasABody) {
  EXPECT_EQ(http_answer_body("HTTP/1.1 200 OK\r\nA: b\r\n\r\n[]"), "[]");
  EXPECT_FALSE(http_answer_body("HTTP/1.1 403 Forbidden\r\n\r\n[]"));
  EXPECT_FALSE(http_answer_body("HTTP/1.1"));
  EXPECT_FALSE(http_answer_body("garbage\r\n\r\n"));
}

TEST(KernelOutput, LinesAreSplitAndALongOneIsDropped) {
  LineSplitter lines(8);
  std::vector<std::string> seen;
  const std::string input = "short\nmuch too long a line\nok\npartial";
  for (const char c : input) {
    lines.feed(&c, 1, [&](const std::string& line) { seen.push_back(line); });
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"short", "ok"}));
}

}  // namespace
}  // namespace mlw::api
