// python/mlw/propose.py, as the build ships it: TPE's proposals on the target, run by python3.
#include <gtest/gtest.h>

#include "mlw/util/embedded.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"

namespace mlw {

namespace {

/// The helper's Python files written out under `dir`/python.
std::string helper_in(const std::filesystem::path& dir) {
  for (const auto& file : embedded_files()) {
    if (!starts_with(file.path, "python/")) continue;
    const auto path = dir / std::string(file.path);
    make_directories(path.parent_path());
    atomic_write_file(path, std::string(file.contents));
  }
  return (dir / "python").string();
}

/// What python3 prints for `program` with the helper on its path (stderr too).
std::string python(const std::filesystem::path& dir, const std::string& program,
                   const std::string& env = "") {
  return test::run_command("cd " + shell_quote(dir.string()) + " && " + env +
                           " PYTHONPATH=" + shell_quote(helper_in(dir)) + " python3 -c " +
                           shell_quote(program) + " 2>&1")
      .output;
}

constexpr const char* k_choices =
    "spec = {'seed': 7, 'startup': 2, 'goal': 'min', 'parameters': "
    "{'opt': {'kind': 'values', 'values': ['a', 'b']}}}\n";

}  // namespace

TEST(Propose, StoppedTrialsCountAmongTheBadAsOnTheLaptop) {
  // As Tpe.StoppedTrialsCountAmongTheBad: one good trial at a, one worse at b, five more at a
  // stopped early: a is where trials go wrong, so the proposal is b (without them it is a).
  test::TempDir dir{"propose"};
  EXPECT_EQ(python(dir.path(), std::string("from mlw.propose import propose\n") + k_choices +
                                   "t = [({'opt': 'a'}, 0.1, False), ({'opt': 'b'}, 0.2, False)]\n"
                                   "s = t + [({'opt': 'a'}, 0.8, True)] * 5\n"
                                   "print([propose(spec, s, i)[0]['opt'] for i in range(7, 12)],\n"
                                   "      [propose(spec, t, i)[0]['opt'] for i in range(7, 12)],\n"
                                   "      propose(spec, t, 3) == propose(spec, t, 3))\n"),
            "['b', 'b', 'b', 'b', 'b'] ['a', 'a', 'a', 'a', 'a'] True\n");
}

TEST(Propose, AnAttemptsEndIsRecordedAndARestartKeepsItsPoint) {
  // The script's exit code is the run's; the record gains the attempt's end (its code, its
  // metric's last value); the same point started again is given the point proposed before.
  test::TempDir dir{"propose"};
  atomic_write_file(dir.path() / "s.py",
                    "import sys, mlw\nmlw.log_metric('loss', 0.5)\nmlw.log_metric('loss', 0.25)\n"
                    "print('args', sys.argv[1:])\nsys.exit(3)\n");
  const std::string env =
      "MLW_SHARE_DIR=share/ MLW_METRICS_FILE=m.jsonl MLW_PROPOSE='{\"sweep\": \"s\", \"point\": "
      "4, \"seed\": 1, \"startup\": 1, \"metric\": \"loss\", \"goal\": \"min\", \"parameters\": "
      "{\"n\": {\"kind\": \"int\", \"low\": 2, \"high\": 2}}}'";
  const std::string run =
      "import runpy, sys\nsys.argv = ['propose', 's.py', '--k', 'v']\n"
      "try:\n  runpy.run_module('mlw.propose', run_name='__main__')\n"
      "except SystemExit as e:\n  print('exit', e.code)\n";
  EXPECT_EQ(python(dir.path(), run, env),
            "mlw: TPE draws at random {\"n\": 2} (0 ended trials)\n"
            "args ['--k', 'v', '--n', '2']\nexit 3\n");
  EXPECT_EQ(python(dir.path(), run, env),
            "mlw: TPE's point {\"n\": 2}, as proposed before\n"
            "args ['--k', 'v', '--n', '2']\nexit 3\n");
  EXPECT_EQ(python(dir.path(),
                   "import json\nfor l in open('share/sweeps/s/tpe.jsonl'):\n"
                   "  e = json.loads(l); print(e['point'], e.get('params'), e.get('end'), "
                   "e.get('value'), e.get('stopped'))\n"),
            "4 {'n': 2} None None None\n4 None 3 0.25 False\n4 None 3 0.25 False\n");
}

TEST(Propose, ASweepRecordThatCannotBeUsedNeverStopsTheTrial) {
  // A share folder that cannot be written (here a file in its place): the script runs all the
  // same, at a point drawn at random, each line saying why.
  test::TempDir dir{"propose"};
  atomic_write_file(dir.path() / "s.py", "import sys\nprint('args', sys.argv[1:])\n");
  atomic_write_file(dir.path() / "share", "a file\n");
  const std::string out = python(
      dir.path(),
      "import runpy, sys\nsys.argv = ['propose', 's.py']\n"
      "try:\n  runpy.run_module('mlw.propose', run_name='__main__')\n"
      "except SystemExit as e:\n  print('exit', e.code)\n",
      "MLW_SHARE_DIR=share/ MLW_METRICS_FILE=m.jsonl MLW_PROPOSE='{\"sweep\": \"s\", \"point\": "
      "0, \"seed\": 1, \"startup\": 1, \"metric\": \"loss\", \"goal\": \"min\", "
      "\"parameters\": {\"n\": {\"kind\": \"int\", \"low\": 2, \"high\": 2}}}'");
  EXPECT_NE(out.find("mlw: TPE draws at random {\"n\": 2} (the sweep's record there cannot be "
                     "used: NotADirectoryError"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("args ['--n', '2']\n"), std::string::npos) << out;
  EXPECT_NE(out.find("mlw: this trial's end is not in the sweep's record"), std::string::npos)
      << out;
  EXPECT_NE(out.find("exit 0\n"), std::string::npos) << out;
}

}  // namespace mlw
