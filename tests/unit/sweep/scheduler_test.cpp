#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "mlw/sweep/sweep.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "temp_dir.hpp"
#include "trial_curve.hpp"

namespace mlw {

namespace {

using test::curve;  // the resource is the step

SchedulerSpec asha(int min, int max, int eta) {
  SchedulerSpec s;
  s.kind = "asha";
  s.resource = "epochs";
  s.min = min;
  s.max = max;
  s.eta = eta;
  return s;
}

struct Judge {
  explicit Judge(SchedulerSpec s, bool max = false) : scheduler(std::move(s)), maximize(max) {}
  SchedulerSpec scheduler;
  bool maximize = false;
  std::map<std::pair<int, int>, std::vector<double>> rungs;
  std::vector<std::string> notes;
  std::optional<std::string> operator()(const TrialSeries& trial, TrialRungs& mine) {
    return scheduler_verdict(scheduler, maximize, "loss", trial, rungs, mine, notes);
  }
};

}  // namespace

TEST(Scheduler, AshaPromotesTheTopOfEachRungAsTrialsArrive) {
  // Rungs at 1 and 3 (max 9); the fourth trial at rung 1 is judged against the three before it:
  // nothing waits for a rung to fill.
  Judge judge(asha(1, 9, 3));
  std::vector<TrialRungs> t(5);
  EXPECT_FALSE(judge(curve({1.5}), t[0]));  // 1 of 3: goes on
  EXPECT_FALSE(judge(curve({1.9}), t[1]));
  EXPECT_FALSE(judge(curve({1.1}), t[2]));  // 3 of 3, the best: promoted
  const auto stopped = judge(curve({1.7}), t[3]);
  ASSERT_TRUE(stopped);
  EXPECT_EQ(*stopped,
            "stopped by ASHA at epochs 1: loss 1.7 is not in the top 1/3 (1 of 4 trials at that "
            "rung; cutoff 1.1)");
  EXPECT_FALSE(judge(curve({1.0}), t[4]));  // better than the cutoff: promoted at once
  EXPECT_EQ(
      judge.notes.back(),
      "promoted at epochs 1: loss 1 is in the top 1/3 (1 of 5 trials at that rung; cutoff 1)");
  // Each rung is judged once: the stopped trial's later values add nothing.
  EXPECT_FALSE(judge(curve({1.7, 1.2}), t[3]));
  EXPECT_EQ(judge.rungs[std::make_pair(0, 1)].size(), 5u);
}

TEST(Scheduler, TheValueAtARungIsTheLastLoggedUpToIt) {
  Judge judge(asha(2, 9, 2));
  std::vector<TrialRungs> t(3);
  EXPECT_FALSE(judge(curve({0.1, 0.8}), t[0]));  // at rung 2: 0.8, not its best 0.1
  EXPECT_FALSE(judge(curve({0.9, 0.5}), t[1]));  // 0.5 of {0.8, 0.5}: top half
  EXPECT_EQ(judge.rungs[std::make_pair(0, 2)], (std::vector<double>{0.8, 0.5}));
  EXPECT_TRUE(judge(curve({0.9, 0.85}), t[2]));
}

TEST(Scheduler, HigherIsBetterWhenTheGoalIsMax) {
  Judge judge(asha(1, 9, 2), true);
  std::vector<TrialRungs> t(3);
  EXPECT_FALSE(judge(curve({0.5}), t[0]));
  EXPECT_TRUE(judge(curve({0.4}), t[1]));   // the lower accuracy is stopped
  EXPECT_FALSE(judge(curve({0.9}), t[2]));  // the higher goes on
}

TEST(Scheduler, NotANumberRanksLastAndIsSaid) {
  Judge judge(asha(1, 9, 2));
  std::vector<TrialRungs> t(2);
  EXPECT_FALSE(judge(curve({0.5}), t[0]));
  const auto verdict = judge(curve({std::nan("")}), t[1]);
  ASSERT_TRUE(verdict);
  EXPECT_EQ(judge.notes.back(), "its loss at epochs 1 is nan: ranked last");
  Judge high(asha(1, 9, 2), true);
  EXPECT_FALSE(high(curve({0.5}), t[0] = {}));
  EXPECT_TRUE(high(curve({std::numeric_limits<double>::infinity()}), t[1] = {}));
}

TEST(Scheduler, ATrialPastItsBudgetIsStopped) {
  Judge judge(asha(1, 3, 3));
  TrialRungs mine;
  EXPECT_FALSE(judge(curve({0.5, 0.4, 0.3}), mine));
  const auto verdict = judge(curve({0.5, 0.4, 0.3, 0.2}), mine);
  ASSERT_TRUE(verdict);
  EXPECT_EQ(*verdict, "stopped at epochs 4: past its budget of 3 (--epochs 3 was given)");
}

TEST(Scheduler, HyperbandBracketsStartAtMinTimesEtaToTheBracket) {
  SchedulerSpec s = asha(1, 81, 3);
  EXPECT_EQ(scheduler_brackets(s), 1);
  s.kind = "hyperband";
  EXPECT_EQ(scheduler_brackets(s), 5);  // first rungs 1, 3, 9, 27 and 81 (the whole budget)
  Judge judge(s);
  // Bracket 2's rungs are 9 and 27: a value at step 3 is no rung of it; its rungs are its own.
  std::vector<TrialRungs> t(3, TrialRungs{2, {}});
  TrialSeries low;
  for (int e = 1; e <= 9; ++e) {
    low.steps.push_back(e);
    low.values.push_back(1.0 / e);
  }
  EXPECT_FALSE(judge(low, t[0]));
  EXPECT_EQ(judge.rungs.size(), 1u);
  EXPECT_EQ(judge.rungs.begin()->first, std::make_pair(2, 9));
  EXPECT_EQ(judge.notes.back(),
            "reached epochs 9, bracket 2 (loss 0.111111): goes on, 1 of the 3 to judge by");
  // The last bracket starts at the whole budget: nothing to judge.
  TrialRungs last{4, {}};
  EXPECT_FALSE(judge(low, last));
  EXPECT_TRUE(last.judged.empty());
}

TEST(Scheduler, ABadDefinitionIsOneLine) {
  SweepSpec spec;
  SweepParameter lr;
  lr.name = "lr";
  lr.values = {0.1, 0.01};
  spec.parameters = {lr};
  spec.metric = "loss";
  spec.scheduler = asha(1, 9, 3);
  EXPECT_NO_THROW(check_sweep_spec(spec));
  const auto error_of = [&](auto change) {
    SweepSpec bad = spec;
    change(bad);
    try {
      check_sweep_spec(bad);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of([](SweepSpec& s) { s.scheduler.eta = 1; }), "eta must be 2 or more (got 1)");
  EXPECT_EQ(error_of([](SweepSpec& s) { s.scheduler.min = 10; }),
            "--min 10 is more than --max 9: the first rung must fit the budget");
  EXPECT_NE(error_of([](SweepSpec& s) { s.metric.clear(); }).find("--metric NAME[:max]"),
            std::string::npos);
  EXPECT_NE(error_of([](SweepSpec& s) { s.scheduler.resource = "ep och"; }).find("--resource"),
            std::string::npos);
  EXPECT_NE(error_of([](SweepSpec& s) { s.early_stop.rule = "median"; }).find("not both"),
            std::string::npos);
}

TEST(Scheduler, ASweepFileNamesItsScheduler) {
  test::TempDir temp{"scheduler"};
  const auto load = [&](const std::string& text) {
    atomic_write_file(temp.path() / "sweep.yml", text);
    return load_sweep_file(temp.path() / "sweep.yml", "sweep.yml");
  };
  const SweepSpec spec = load(
      "metric: {name: loss}\nparameters:\n  lr: [1, 2]\n"
      "scheduler: {type: hyperband, resource: epochs, min: 1, max: 27}\n");
  EXPECT_EQ(spec.scheduler.kind, "hyperband");
  EXPECT_EQ(spec.scheduler.max, 27);
  EXPECT_EQ(spec.scheduler.eta, 3);
  try {
    load("parameters:\n  lr: [1, 2]\nscheduler: {type: hyperbnd}\n");
    FAIL() << "a misspelt type was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sweep.yml:3:19: type must be one of asha, hyperband"),
              std::string::npos)
        << e.what();
  }
}

TEST(Scheduler, TheDefinitionIsRecordedAndReadBack) {
  SweepSpec spec;
  spec.scheduler = asha(2, 27, 3);
  spec.scheduler.kind = "hyperband";
  const SweepSpec back = SweepSpec::from_json(spec.to_json());
  EXPECT_EQ(back.scheduler.kind, "hyperband");
  EXPECT_EQ(back.scheduler.resource, "epochs");
  EXPECT_EQ(back.scheduler.min, 2);
  EXPECT_EQ(back.scheduler.max, 27);
  EXPECT_EQ(back.scheduler.eta, 3);
}

}  // namespace mlw
