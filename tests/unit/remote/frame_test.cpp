#include "mlw/remote/frame.hpp"

#include <gtest/gtest.h>

namespace mlw {

namespace {

/// Feeds `text` in pieces of `step` bytes; returns what passed the frame.
std::string through(FramedStream& frame, const std::string& text, std::size_t step) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); i += step) out += frame.feed(text.substr(i, step));
  return out;
}

}  // namespace

TEST(FramedStream, WhatTheLoginShellPrintsBeforeTheMarkerIsDropped) {
  const std::string marker = "mlw-frame-0123456789abcdef";
  const std::string noise = "Welcome to the HPC login node\nmodule: gcc/12 loaded\nno newline";
  const std::string stream = noise + marker + "\n4242\nmlw-frame-0123456789abcdef\nrest";
  for (std::size_t step : {1u, 3u, 7u, 26u, 27u, 1000u}) {
    FramedStream frame(marker);
    EXPECT_EQ(through(frame, stream, step), "4242\nmlw-frame-0123456789abcdef\nrest") << step;
    EXPECT_TRUE(frame.started());
    EXPECT_EQ(frame.noise(), noise) << step;
  }
}

TEST(FramedStream, NothingPassesWithoutTheMarkerAndTheNoiseKeptIsBounded) {
  FramedStream frame("mlw-frame-x");
  EXPECT_EQ(through(frame, std::string(100000, 'n') + "mlw-frame-", 4096), "");
  EXPECT_FALSE(frame.started());
  EXPECT_EQ(frame.noise().size(), 4096u);
  EXPECT_EQ(frame.feed("x\nok"), "ok");
}

TEST(FramedStream, TheScriptPrintsTheMarkerOnBothStreamsFirst) {
  const std::string script = framed_script("mlw-frame-ab", "echo hi");
  EXPECT_EQ(script, "printf '%s\\n' mlw-frame-ab; printf '%s\\n' mlw-frame-ab >&2\necho hi");
  EXPECT_EQ(new_frame_marker().size(), 26u);
  EXPECT_NE(new_frame_marker(), new_frame_marker());
}

}  // namespace mlw
