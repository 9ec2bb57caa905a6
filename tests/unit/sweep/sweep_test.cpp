#include "mlw/sweep/sweep.hpp"

#include <gtest/gtest.h>

#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "temp_dir.hpp"
#include "trial_curve.hpp"
#include "yaml_bomb.hpp"

namespace mlw {

namespace {

std::string points_text(const std::vector<nlohmann::ordered_json>& points) {
  std::string out;
  for (const auto& point : points) out += point.dump() + " ";
  return out;
}

SweepSpec from_file(const std::string& text) {
  test::TempDir temp{"sweep"};
  atomic_write_file(temp.path() / "sweep.yml", text);
  return load_sweep_file(temp.path() / "sweep.yml", "sweep.yml");
}

std::string error_of(const std::string& text) {
  try {
    from_file(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(Sweep, BoundsARunCouldNotBeGivenAreRefused) {
  EXPECT_NE(error_of("parameters:\n  n: {int: [-1e300, 1e300]}\nmethod: random\ncount: 2\n")
                .find("int bounds must be whole numbers from -2^53 to 2^53"),
            std::string::npos);
  EXPECT_NE(error_of("parameters:\n  n: {int: [0.5, 3]}\n").find("whole numbers"),
            std::string::npos);
  EXPECT_NE(error_of("parameters:\n  x: {uniform: [-1e308, 1e308]}\nmethod: random\ncount: 2\n")
                .find("uniform bounds are too far apart"),
            std::string::npos);
  // A grid past the most a sweep holds is refused before a value of it is made.
  const SweepSpec huge = from_file("parameters:\n  n: {int: [0, 1e12]}\n");
  EXPECT_EQ(sweep_size(huge), 1000000000001u);
  EXPECT_THROW(expand_sweep(huge), UsageError);
}

TEST(Sweep, AYamlAliasBombAsASweepFileIsRefusedInOneLine) {
  EXPECT_NE(error_of(test::yaml_alias_bomb("method: grid\n")).find("sweep.yml: too large to read"),
            std::string::npos);
}

TEST(Sweep, ListsAfterTheScriptAreSweptTheRestIsKept) {
  SweepSpec spec;
  std::vector<std::string> fixed;
  sweep_lists_from_arguments({"--lr", "0.1,0.01", "--epochs", "3", "--bs=32,64", "data"}, spec,
                             fixed);
  EXPECT_EQ(fixed, (std::vector<std::string>{"--epochs", "3", "data"}));
  EXPECT_EQ(points_text(expand_sweep(spec)),
            R"({"lr":0.1,"bs":32} {"lr":0.1,"bs":64} {"lr":0.01,"bs":32} {"lr":0.01,"bs":64} )");
  EXPECT_THROW(sweep_lists_from_arguments({"--lr", "1,,2"}, spec, fixed), UsageError);
  EXPECT_THROW(sweep_lists_from_arguments({"--l\xffr", "1,2"}, spec, fixed), UsageError);
}

TEST(Sweep, GridInTheOrderOfItsLists) {
  const SweepSpec spec = from_file(
      "parameters:\n  a: [x, y]\n  b: {range: [0.1, 0.3], step: 0.1}\n  c: {int: [1, 2]}\n");
  EXPECT_EQ(sweep_size(spec), 12u);
  const auto points = expand_sweep(spec);
  EXPECT_EQ(points[0].dump(), R"({"a":"x","b":0.1,"c":1})");
  EXPECT_EQ(points[1].dump(), R"({"a":"x","b":0.1,"c":2})");
  EXPECT_EQ(points[2].dump(), R"({"a":"x","b":0.2,"c":1})");
  EXPECT_EQ(points[5].dump(), R"({"a":"x","b":0.3,"c":2})");
  EXPECT_EQ(points[11].dump(), R"({"a":"y","b":0.3,"c":2})");
}

TEST(Sweep, RandomSearchIsDrawnFromItsSeedWithinBounds) {
  const std::string text =
      "method: random\ncount: 50\nseed: 7\nparameters:\n  lr: {loguniform: [0.0001, 0.1]}\n"
      "  d: {uniform: [0, 0.5]}\n  n: {int: [1, 4]}\n  o: [adam, sgd]\n";
  const auto a = expand_sweep(from_file(text));
  EXPECT_EQ(points_text(a), points_text(expand_sweep(from_file(text))));
  ASSERT_EQ(a.size(), 50u);
  bool low_decade = false;
  for (const auto& p : a) {
    EXPECT_GE(p["lr"].get<double>(), 0.0001);
    EXPECT_LE(p["lr"].get<double>(), 0.1);
    low_decade = low_decade || p["lr"].get<double>() < 0.001;
    EXPECT_GE(p["d"].get<double>(), 0);
    EXPECT_LE(p["d"].get<double>(), 0.5);
    EXPECT_GE(p["n"].get<int>(), 1);
    EXPECT_LE(p["n"].get<int>(), 4);
  }
  EXPECT_TRUE(low_decade);  // log-uniform: the low decades are drawn too
}

TEST(Sweep, FileMistakesNameTheirPlace) {
  EXPECT_EQ(error_of("methd: grid\n"),
            "sweep.yml:1:1: unknown key \"methd\" (did you mean \"method\"?)");
  EXPECT_EQ(error_of("parameters:\n  a: {rnage: [1, 2]}\n"),
            "sweep.yml:2:7: unknown key \"rnage\" in parameter a (did you mean \"range\"?)");
  EXPECT_EQ(error_of("parameters:\n  a: {range: [1, 2], step: 0}\n"),
            "sweep.yml:2:28: parameter a: step must be more than 0");
  EXPECT_EQ(error_of("parameters:\n  a: []\n"), "sweep.yml:2:6: parameter a has no values");
  EXPECT_EQ(error_of("maxConcurrent: 0\n"), "sweep.yml:1:16: maxConcurrent must be 1 or more");
  EXPECT_EQ(error_of("method: grd\n"),
            "sweep.yml:1:9: method must be one of grid, random, tpe (got \"grd\") (did you mean "
            "\"grid\"?)");
  EXPECT_EQ(error_of("parameters:\n  a: {uniform: [0, 1]}\n"),
            "sweep.yml:2:6: parameter a: uniform bounds need method: random or tpe (a grid needs "
            "values)");
  EXPECT_EQ(
      error_of("earlyStop: {rule: mean}\n"),
      "sweep.yml:1:19: rule must be one of median, asha (got \"mean\") (did you mean \"median\"?)");
}

TEST(Sweep, ChecksOfAWholeDefinition) {
  SweepSpec spec;
  EXPECT_THROW(check_sweep_spec(spec), UsageError);
  spec.parameters.push_back({"a", "values", {1}, 0, 0});
  spec.method = "random";
  EXPECT_THROW(check_sweep_spec(spec), UsageError);
  spec.method = "grid";
  spec.early_stop.rule = "median";
  EXPECT_THROW(check_sweep_spec(spec), UsageError);  // no metric to judge by
}

TEST(Sweep, HugeGridsSaturate) {
  SweepSpec spec;
  for (int i = 0; i < 8; ++i) {
    SweepParameter p;
    p.name = "p" + std::to_string(i);
    p.values.assign(1000, 1);
    spec.parameters.push_back(p);
  }
  EXPECT_EQ(sweep_size(spec), UINT64_MAX);
}

TEST(Sweep, PointArguments) {
  EXPECT_EQ(point_arguments(nlohmann::ordered_json{{"lr", 0.001}, {"o", "adam"}, {"n", 3}}),
            (std::vector<std::string>{"--lr", "0.001", "--o", "adam", "--n", "3"}));
}

namespace {
using test::curve;
}  // namespace

TEST(EarlyStop, MedianRuleStopsATrialWorseThanTheMedianAtItsStep) {
  EarlyStopSpec rule;
  rule.rule = "median";
  rule.metric = "loss";
  rule.min_steps = 2;
  rule.min_completed = 2;
  std::map<int, std::vector<double>> rungs;
  std::map<int, bool> seen;
  const std::vector<TrialSeries> completed = {curve({1, 0.5, 0.3}), curve({1, 0.6, 0.4})};
  EXPECT_FALSE(early_stop_verdict(rule, completed, curve({9}), rungs, seen));  // before minSteps
  EXPECT_FALSE(early_stop_verdict(rule, completed, curve({1, 0.5}), rungs, seen));
  const auto verdict = early_stop_verdict(rule, completed, curve({2, 0.9}), rungs, seen);
  ASSERT_TRUE(verdict);
  EXPECT_EQ(*verdict,
            "stopped early by the median rule at step 2: best loss 0.9 is higher than the median "
            "0.55 of 2 completed trials at that step");
  EXPECT_FALSE(early_stop_verdict(rule, {completed[0]}, curve({2, 0.9}), rungs, seen));
  rule.maximize = true;  // accuracy: higher is better
  EXPECT_FALSE(early_stop_verdict(rule, completed, curve({2, 0.9}), rungs, seen));
}

TEST(EarlyStop, AshaKeepsTheTopThirdAtEachRung) {
  EarlyStopSpec rule;
  rule.rule = "asha";
  rule.metric = "loss";
  rule.min_steps = 1;
  rule.eta = 3;
  std::map<int, std::vector<double>> rungs;
  std::map<int, bool> a, b, c, d;
  EXPECT_FALSE(early_stop_verdict(rule, {}, curve({0.5}), rungs, a));
  EXPECT_FALSE(early_stop_verdict(rule, {}, curve({0.4}), rungs, b));  // too few to judge
  EXPECT_TRUE(early_stop_verdict(rule, {}, curve({0.9}), rungs, c));   // 3rd of 3: not top 1/3
  EXPECT_FALSE(early_stop_verdict(rule, {}, curve({0.1}), rungs, d));  // the best goes on
  EXPECT_FALSE(early_stop_verdict(rule, {}, curve({0.9}), rungs, c));  // each rung judged once
}

}  // namespace mlw
