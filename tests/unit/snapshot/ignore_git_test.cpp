// Differential test of .amlignore against git itself: random rules and trees, the files mlw's
// snapshot keeps compared with the files git keeps (`git ls-files --others --exclude-standard`,
// the same ignore rules `git check-ignore --no-index` applies, with git's own walk: an excluded
// folder's files stay excluded).
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <set>

#include "run_command.hpp"
#include "temp_dir.hpp"

#include "mlw/snapshot/manifest.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/shell_quote.hpp"

namespace mlw {

namespace {

std::string run_git(const fs::path& repo, const std::string& args) {
  const std::string command = "cd " + shell_quote(repo.string()) +
                              " && GIT_CONFIG_NOSYSTEM=1 HOME=/nonexistent git -c "
                              "core.excludesFile=/dev/null " +
                              args + " 2>&1";
  return test::run_command(command).output;
}

struct Generator {
  std::mt19937 random;
  explicit Generator(unsigned seed) : random(seed) {}

  std::size_t pick(std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(random);
  }

  std::string name() {
    static const std::vector<std::string> names = {"a", "b",   "ab", "ba",  "abc", "a1",
                                                   "1", "x.c", "A",  "a.b", "[a]", "*",
                                                   "?", "a b", "!a", "#x",  "a-b", "bb"};
    return names[pick(names.size())];
  }

  std::string path() {
    std::string out = name();
    for (std::size_t depth = pick(3); depth > 0; --depth) out += "/" + name();
    return out;
  }

  std::string token() {
    static const std::vector<std::string> tokens = {"a",
                                                    "b",
                                                    "c",
                                                    "1",
                                                    "*",
                                                    "?",
                                                    "**",
                                                    "/",
                                                    ".",
                                                    "[ab]",
                                                    "[!a]",
                                                    "[^b]",
                                                    "[a-c]",
                                                    "[]a]",
                                                    "\\*",
                                                    "\\[",
                                                    "A",
                                                    "-",
                                                    "[[:digit:]]",
                                                    "[[:upper:]]",
                                                    "[[:alpha:][:digit:]]",
                                                    "x",
                                                    "[[:nosuch:]]",
                                                    "[a",
                                                    "\\",
                                                    " ",
                                                    "**/",
                                                    "/**",
                                                    "[!]]",
                                                    "[a-]"};
    return tokens[pick(tokens.size())];
  }

  std::string rule() {
    std::string out = pick(5) == 0 ? "!" : "";
    for (std::size_t n = 1 + pick(4); n > 0; --n) out += token();
    return out;
  }
};

}  // namespace

TEST(IgnoreAgainstGit, TheSnapshotKeepsWhatGitKeepsOverGeneratedRulesAndTrees) {
  const test::TempDir temp("ignore-git");
  const fs::path repo = temp.path() / "repo";
  fs::create_directories(repo);
  ASSERT_NE(run_git(repo, "init -q . && echo ok").find("ok"), std::string::npos)
      << "git is needed for this test (scripts/setup installs it)";
  Generator gen(20261123);
  int compared = 0;
  int decided = 0;
  for (int round = 0; round < 250; ++round) {
    for (const auto& entry : fs::directory_iterator(repo)) {
      if (entry.path().filename() != ".git") fs::remove_all(entry.path());
    }
    std::set<std::string> files;
    for (int i = 0; i < 14; ++i) files.insert(gen.path());
    std::set<std::string> made;
    for (const auto& file : files) {
      // A name that is both a file and a folder in the draw: keep the first.
      std::error_code ec;
      fs::create_directories((repo / file).parent_path(), ec);
      if (ec || fs::is_directory(repo / file)) continue;
      atomic_write_file(repo / file, "");
      made.insert(file);
    }
    std::string rules;
    for (std::size_t n = 1 + gen.pick(4); n > 0; --n) rules += gen.rule() + "\n";
    atomic_write_file(repo / ".gitignore", rules);
    atomic_write_file(repo / ".amlignore", rules);
    std::string sub_rules;
    std::string sub;
    if (gen.pick(2) == 0) {
      for (const auto& file : made) {
        if (file.find('/') != std::string::npos) {
          sub = file.substr(0, file.find('/'));
          break;
        }
      }
      if (!sub.empty()) {
        sub_rules = gen.rule() + "\n" + gen.rule() + "\n";
        atomic_write_file(repo / sub / ".gitignore", sub_rules);
        atomic_write_file(repo / sub / ".amlignore", sub_rules);
      }
    }
    std::set<std::string> by_git;
    const std::string listed = run_git(repo, "ls-files -z --others --exclude-standard");
    std::size_t at = 0;
    while (at < listed.size()) {
      const auto end = listed.find('\0', at);
      const std::string path = listed.substr(at, end - at);
      if (!path.ends_with(".gitignore") && !path.ends_with(".amlignore")) by_git.insert(path);
      at = end == std::string::npos ? listed.size() : end + 1;
    }
    const Manifest manifest =
        build_snapshot(repo, temp.path() / "objects", temp.path() / "cache", {});
    std::set<std::string> by_mlw;
    for (const auto& entry : manifest.entries) {
      if (!entry.path.ends_with(".gitignore") && !entry.path.ends_with(".amlignore")) {
        by_mlw.insert(entry.path);
      }
    }
    EXPECT_EQ(by_mlw, by_git) << "round " << round << "\n.amlignore:\n"
                              << rules << (sub.empty() ? "" : sub + "/.amlignore:\n" + sub_rules);
    if (by_mlw != by_git) break;
    ++compared;
    // Rounds where the rules decided something (some files out, some in) are the ones that count.
    if (!by_git.empty() && by_git.size() < made.size()) ++decided;
  }
  EXPECT_EQ(compared, 250);
  EXPECT_GT(decided, 90) << "the generator must produce rules that exclude some files only";
}

}  // namespace mlw
