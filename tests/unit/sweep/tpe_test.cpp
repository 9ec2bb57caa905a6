#include <gtest/gtest.h>

#include <cmath>

#include "mlw/sweep/sweep.hpp"

namespace mlw {

namespace {

SweepSpec space() {
  SweepSpec spec;
  spec.method = "tpe";
  spec.count = 20;
  spec.startup = 4;
  spec.seed = 7;
  spec.metric = "loss";
  SweepParameter x;
  x.name = "x";
  x.kind = "uniform";
  x.low = 0;
  x.high = 1;
  SweepParameter lr;
  lr.name = "lr";
  lr.kind = "loguniform";
  lr.low = 1e-4;
  lr.high = 1e-1;
  SweepParameter layers;
  layers.name = "layers";
  layers.kind = "int";
  layers.low = 1;
  layers.high = 4;
  SweepParameter opt;
  opt.name = "opt";
  opt.values = {"a", "b"};
  spec.parameters = {x, lr, layers, opt};
  return spec;
}

TpeTrial trial(double x, const char* opt, double value, bool stopped = false) {
  TpeTrial t;
  t.point = {{"x", x}, {"lr", 0.01}, {"layers", 2}, {"opt", opt}};
  t.value = value;
  t.stopped = stopped;
  return t;
}

}  // namespace

TEST(Tpe, TheSameSeedAndTrialsGiveTheSamePoint) {
  const SweepSpec spec = space();
  const std::vector<TpeTrial> trials = {trial(0.1, "a", 0.5), trial(0.5, "b", 0.2),
                                        trial(0.9, "a", 0.9), trial(0.4, "b", 0.1)};
  EXPECT_EQ(tpe_propose(spec, trials, 4).dump(), tpe_propose(spec, trials, 4).dump());
  EXPECT_NE(tpe_propose(spec, trials, 4).dump(), tpe_propose(spec, trials, 5).dump());
  SweepSpec other = spec;
  other.seed = 8;
  EXPECT_NE(tpe_propose(spec, trials, 4).dump(), tpe_propose(other, trials, 4).dump());
}

TEST(Tpe, EveryValueIsInItsParametersSpace) {
  const SweepSpec spec = space();
  std::vector<TpeTrial> trials;
  for (std::uint64_t i = 0; i < 30; ++i) {
    const auto point = tpe_propose(spec, trials, i);
    const double x = point["x"].get<double>();
    const double lr = point["lr"].get<double>();
    EXPECT_TRUE(x >= 0 && x <= 1) << point.dump();
    EXPECT_TRUE(lr >= 1e-4 && lr <= 1e-1) << point.dump();
    ASSERT_TRUE(point["layers"].is_number_integer()) << point.dump();
    EXPECT_TRUE(point["layers"].get<int>() >= 1 && point["layers"].get<int>() <= 4);
    EXPECT_TRUE(point["opt"] == "a" || point["opt"] == "b");
    TpeTrial t;
    t.point = point;
    t.value = std::abs(x - 0.7);
    trials.push_back(t);
  }
}

TEST(Tpe, AfterTheStartupItProposesNearTheBestTrials) {
  SweepSpec spec = space();
  std::vector<TpeTrial> trials;
  // The loss is |x - 0.7|: the proposals after the startup come near 0.7.
  for (double x : {0.05, 0.15, 0.3, 0.45, 0.68, 0.72, 0.9, 0.97})
    trials.push_back(trial(x, "a", std::abs(x - 0.7)));
  int near = 0;
  for (std::uint64_t i = 8; i < 28; ++i) {
    if (std::abs(tpe_propose(spec, trials, i)["x"].get<double>() - 0.7) < 0.2) ++near;
  }
  EXPECT_GE(near, 15) << "of 20 proposals, " << near << " within 0.2 of the best";
  spec.maximize = true;  // the same trials, higher is better: away from 0.7
  int far = 0;
  for (std::uint64_t i = 8; i < 28; ++i) {
    if (std::abs(tpe_propose(spec, trials, i)["x"].get<double>() - 0.7) > 0.3) ++far;
  }
  EXPECT_GE(far, 15);
}

TEST(Tpe, StoppedTrialsCountAmongTheBad) {
  // One good trial at opt a, one worse at b; five more at a were stopped early: a is where
  // trials go wrong, so the proposal is b. (Without the stopped ones it would be a.)
  SweepSpec spec = space();
  spec.parameters = {spec.parameters.back()};
  spec.startup = 2;
  const auto at = [](const char* opt, double value, bool stopped = false) {
    TpeTrial t;
    t.point = {{"opt", opt}};
    t.value = value;
    t.stopped = stopped;
    return t;
  };
  std::vector<TpeTrial> trials = {at("a", 0.1), at("b", 0.2)};
  for (int i = 0; i < 5; ++i) trials.push_back(at("a", 0.8, true));
  for (std::uint64_t i = 7; i < 17; ++i) EXPECT_EQ(tpe_propose(spec, trials, i)["opt"], "b");
  trials.resize(2);
  for (std::uint64_t i = 7; i < 17; ++i) EXPECT_EQ(tpe_propose(spec, trials, i)["opt"], "a");
}

TEST(Tpe, BeforeTheStartupPointsAreRandom) {
  const SweepSpec spec = space();
  const std::vector<TpeTrial> few = {trial(0.7, "a", 0.0)};
  double spread = 0;
  for (std::uint64_t i = 0; i < 20; ++i)
    spread += std::abs(tpe_propose(spec, few, i)["x"].get<double>() - 0.7);
  EXPECT_GT(spread / 20, 0.15);  // uniform on [0, 1]: 0.29 on average from 0.7
}

}  // namespace mlw
