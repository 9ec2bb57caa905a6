// Following a container through an engine that breaks: a fake Engine API whose log stream stops
// mid-frame, whose pings fail for a while, that forgets the container or never comes back.
#include "mlw/exec/engine_follow.hpp"

#include <gtest/gtest.h>

#include "fakes.hpp"

#include <string>
#include <vector>

#include "mlw/util/error.hpp"

namespace mlw {

namespace {

/// Docker's multiplexed frame: stream number, three zero bytes, big-endian length, payload.
std::string frame(int stream, const std::string& payload) {
  std::string out(8, '\0');
  out[0] = static_cast<char>(stream);
  const auto size = static_cast<std::uint32_t>(payload.size());
  for (int i = 0; i < 4; ++i) out[4 + i] = static_cast<char>((size >> (8 * (3 - i))) & 0xff);
  return out + payload;
}

using test::BreakingEngine;

struct Followed {
  EngineFollowResult result;
  std::string text;
};

Followed follow(BreakingEngine& engine, std::uint64_t skip = 0, bool cancel = false) {
  Followed out;
  EngineFollowHooks hooks;
  hooks.on_log = [&](std::string_view chunk) { out.text.append(chunk); };
  hooks.canceled = [cancel] { return cancel; };
  hooks.return_bound = std::chrono::milliseconds(200);
  hooks.retry_every = std::chrono::milliseconds(5);
  out.result = follow_container(engine, "abc", skip, hooks);
  return out;
}

std::string ticks(int from, int to) {
  std::string out;
  for (int i = from; i < to; ++i) out += "tick " + std::to_string(i) + "\n";
  return out;
}

BreakingEngine engine_with_ticks(int count) {
  BreakingEngine engine;
  for (int i = 0; i < count; ++i) {
    engine.log += frame(i % 3 == 0 ? 2 : 1, "tick " + std::to_string(i) + "\n");
  }
  return engine;
}

}  // namespace

TEST(EngineFollow, AnUnbrokenFollowPassesTheLogAndTheExitCode) {
  BreakingEngine engine = engine_with_ticks(20);
  const Followed got = follow(engine);
  EXPECT_EQ(got.text, ticks(0, 20));
  EXPECT_EQ(got.result.ending, "3\n");
  EXPECT_EQ(got.result.outages, 0);
  EXPECT_FALSE(got.result.engine_lost);
}

TEST(EngineFollow, BreaksMidFrameLoseAndDoubleNoByte) {
  BreakingEngine engine = engine_with_ticks(50);
  // Breaks inside a header, inside a payload, and right at a frame's end.
  engine.break_after = {3, 120, 250, 251};
  engine.failing_pings = 4;
  const Followed got = follow(engine);
  EXPECT_EQ(got.text, ticks(0, 50));
  EXPECT_EQ(got.result.ending, "3\n");
  EXPECT_EQ(got.result.outages, 4);
  EXPECT_EQ(engine.pings, 4 * 5);
  EXPECT_FALSE(got.result.engine_lost);
}

TEST(EngineFollow, TheSkippedStartIsNotPassedAgainAfterABreak) {
  BreakingEngine engine = engine_with_ticks(10);
  engine.break_after = {40};
  const std::string all = ticks(0, 10);
  const Followed got = follow(engine, 7);
  EXPECT_EQ(got.text, all.substr(7));
}

TEST(EngineFollow, AnEngineThatDoesNotComeBackInTimeLeavesTheRunLost) {
  BreakingEngine engine = engine_with_ticks(10);
  engine.break_after = {30};
  engine.never_back = true;
  const auto start = std::chrono::steady_clock::now();
  const Followed got = follow(engine);
  EXPECT_TRUE(got.result.engine_lost);
  EXPECT_EQ(got.result.ending, "");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_GE(got.result.longest_outage_s, 0.2);
}

TEST(EngineFollow, AnEngineThatKeepsBreakingIsLostAfterItsBound) {
  BreakingEngine engine = engine_with_ticks(10);
  engine.break_after = std::vector<std::size_t>(100, 0);
  const Followed got = follow(engine);
  EXPECT_TRUE(got.result.engine_lost);
  EXPECT_EQ(got.result.outages, 10);
  EXPECT_EQ(engine.streams, 11);
}

TEST(EngineFollow, AContainerTheRestartedEngineNoLongerKnowsIsGone) {
  BreakingEngine engine = engine_with_ticks(10);
  engine.break_after = {30};
  engine.forget_after_break = true;
  const Followed got = follow(engine);
  EXPECT_TRUE(got.result.container_gone);
  EXPECT_FALSE(got.result.engine_lost);
}

TEST(EngineFollow, ExitCodesOutsideTheRangeAreNamedNotTaken) {
  BreakingEngine engine = engine_with_ticks(2);
  engine.wait_body = R"({"StatusCode":4096})";
  EXPECT_EQ(follow(engine).result.ending, "bad-code 4096\n");
  engine.wait_body = R"({"Error":null})";
  EXPECT_EQ(follow(engine).result.ending, "");
}

TEST(EngineFollow, CancelAsksTheEngineToStopOnceEvenAcrossABreak) {
  BreakingEngine engine = engine_with_ticks(10);
  engine.break_after = {30};
  const Followed got = follow(engine, 0, true);
  EXPECT_EQ(engine.stops, 1);
  EXPECT_EQ(got.text, ticks(0, 10));
}

}  // namespace mlw
