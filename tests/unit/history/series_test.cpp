#include "mlw/history/series.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "mlw/history/collect.hpp"
#include "mlw/util/fs.hpp"
#include "temp_dir.hpp"

namespace mlw {

namespace {

MetricSeriesReader read(std::string_view text, bool at_end = true) {
  MetricSeriesReader reader;
  reader.add(text, at_end);
  return reader;
}

}  // namespace

TEST(MetricSeries, StepsValuesAndPositions) {
  const auto r = read(
      "{\"name\": \"loss\", \"value\": 0.5, \"time\": 1.5, \"step\": 10}\n"
      "{\"name\": \"loss\", \"value\": 0.25, \"step\": 20}\n"
      "{\"name\": \"acc\", \"value\": 1}\n"
      "{\"name\": \"acc\", \"value\": [1, 2]}\n"
      "{\"name\": \"acc\", \"value\": 3}\n");
  const auto& loss = r.series().at("loss");
  EXPECT_EQ(loss.x, (std::vector<double>{10, 20}));
  EXPECT_EQ(loss.y, (std::vector<double>{0.5, 0.25}));
  const auto& acc = r.series().at("acc");
  // Without a step, x is the value's position among the metric's values (numeric or not).
  EXPECT_EQ(acc.x, (std::vector<double>{0, 2}));
  EXPECT_EQ(acc.values, 3u);
  EXPECT_EQ(r.skipped(), 0u);
}

TEST(MetricSeries, SkipsWhatForEachMetricSkips) {
  const auto r =
      read("not json\n{\"value\": 1}\n\n{\"name\": 3, \"value\": 1}\n{\"name\": \"a\"}\n");
  EXPECT_EQ(r.skipped(), 4u);
  EXPECT_TRUE(r.series().empty());
}

TEST(MetricSeries, FurthestStepIsTheLargestStepOfTheMetric) {
  test::TempDir dir{"series"};
  const auto file = dir.path() / "m.jsonl";
  atomic_write_file(file,
                    "{\"name\": \"loss\", \"value\": 1, \"step\": 3}\n"
                    "{\"name\": \"loss\", \"value\": 2, \"step\": 9}\n"
                    "{\"name\": \"loss\", \"value\": 3, \"step\": 5}\n"
                    "{\"name\": \"acc\", \"value\": 1, \"step\": 40}\n"
                    "{\"name\": \"loss\", \"value\": 4, \"step\": 12}");
  EXPECT_EQ(furthest_step(file, "loss"), 12);        // the last line counts at the end
  EXPECT_EQ(furthest_step(file, "loss", false), 9);  // not while the run may still write it
  EXPECT_EQ(furthest_step(file, "missing"), 0);
  EXPECT_EQ(furthest_step(dir.path() / "none.jsonl", "loss"), 0);
}

TEST(MetricSeries, ATrialsDecisionsAreReadInOrderNotSkipped) {
  // python/mlw/rungs.py's lines: {"decision": TEXT, "verdict": V, "time": T}.
  const auto r = read(
      "{\"decision\": \"promoted at epochs 1: …\", \"verdict\": \"promoted\", \"time\": 1}\n"
      "{\"name\": \"loss\", \"value\": 0.5, \"step\": 3}\n"
      "{\"decision\": \"stopped by ASHA at epochs 3\", \"verdict\": \"stopped\"}\n"
      "{\"decision\": \"no verdict\"}\n"
      "{\"decision\": \"a\", \"verdict\": 3}\n"
      "{\"decision\": \"a\", \"verdict\": \"stopped\", \"name\": \"x\", \"value\": 1}\n");
  ASSERT_EQ(r.decisions().size(), 2u);
  EXPECT_EQ(r.decisions()[0].verdict, "promoted");
  EXPECT_EQ(r.decisions()[1].text, "stopped by ASHA at epochs 3");
  EXPECT_EQ(r.skipped(), 2u);  // no verdict, a verdict not a string; the last is a metric
  EXPECT_EQ(r.series().at("x").y, (std::vector<double>{1}));
  // for_each_metric does not count them as bad lines either; read_decisions finds the same.
  test::TempDir dir{"series"};
  atomic_write_file(dir.path() / "m.jsonl",
                    "{\"decision\": \"s\", \"verdict\": \"stopped\"}\nnot json\n");
  EXPECT_EQ(for_each_metric(dir.path() / "m.jsonl", [](const std::string&, auto) {}), 1u);
  const auto found = read_decisions(dir.path() / "m.jsonl");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].verdict, "stopped");
}

TEST(MetricSeries, ATPETrialsProposalIsADecisionWithItsPointInOrder) {
  // python/mlw/propose.py's line: verdict "proposal", the point in "proposal" (keys in order).
  const auto r = read(
      "{\"decision\": \"TPE proposes {…} (3 ended trials)\", \"verdict\": \"proposal\", "
      "\"proposal\": {\"x\": 0.25, \"opt\": \"b\"}, \"time\": 2}\n"
      "{\"decision\": \"promoted\", \"verdict\": \"promoted\", \"proposal\": {\"x\": 1}}\n"
      "{\"decision\": \"bad\", \"verdict\": \"proposal\", \"proposal\": [1]}\n");
  ASSERT_EQ(r.decisions().size(), 3u);
  EXPECT_EQ(r.decisions()[0].verdict, k_proposal_verdict);
  EXPECT_EQ(r.decisions()[0].proposal.dump(), R"({"x":0.25,"opt":"b"})");
  EXPECT_TRUE(r.decisions()[1].proposal.is_null());  // only a proposal's point is taken
  EXPECT_TRUE(r.decisions()[2].proposal.is_null());  // a point is an object
  EXPECT_EQ(r.skipped(), 0u);
}

TEST(MetricSeries, EscapesAndNestingGoToTheFullParser) {
  const std::string text =
      "{\"name\": \"l\\u006fss\", \"value\": 2, \"extra\": {\"a\": [1]}}\n"
      "{\"name\": \"loss\", \"value\": 1e400}\n"
      "{\"name\": \"loss\", \"value\": 1, \"value\": 7}\n";
  const auto r = read(text);
  const auto& loss = r.series().at("loss");
  ASSERT_GE(loss.y.size(), 1u);
  EXPECT_EQ(loss.y.front(), 2);
  // The same lines count as for_each_metric counts them.
  test::TempDir dir{"series"};
  atomic_write_file(dir.path() / "m.jsonl", text);
  std::size_t skipped = 0;
  const auto reference = read_metric_series(dir.path() / "m.jsonl", &skipped);
  EXPECT_EQ(loss.values, reference.at("loss").size());
  EXPECT_EQ(r.skipped(), skipped);
}

TEST(MetricSeries, APartialLastLineWaitsForItsNewlineUnlessTheRunEnded) {
  MetricSeriesReader reader;
  const std::string text = "{\"name\": \"a\", \"value\": 1}\n{\"name\": \"a\", \"val";
  EXPECT_EQ(reader.add(text, false), text.find('\n') + 1);
  EXPECT_EQ(reader.series().at("a").y.size(), 1u);
}

TEST(MetricSeries, UpdateReadsOnlyWhatWasAppended) {
  test::TempDir dir{"series"};
  const auto file = dir.path() / "metrics.jsonl";
  atomic_write_file(file, "{\"name\": \"a\", \"value\": 1, \"step\": 1}\n{\"name\": \"a\", \"va");
  MetricSeriesReader reader;
  reader.update(file, false);
  EXPECT_EQ(reader.series().at("a").y, (std::vector<double>{1}));
  atomic_write_file(file,
                    "{\"name\": \"a\", \"value\": 1, \"step\": 1}\n{\"name\": \"a\", \"value\": 2, "
                    "\"step\": 2}\n{\"name\": \"a\", \"value\": 3}");
  reader.update(file, false);
  EXPECT_EQ(reader.series().at("a").y, (std::vector<double>{1, 2}));
  reader.update(file, true);
  EXPECT_EQ(reader.series().at("a").y, (std::vector<double>{1, 2, 3}));
  atomic_write_file(file,
                    "{\"name\": \"b\", \"value\": 5}\n");  // shorter: read again from the start
  reader.update(file, true);
  EXPECT_EQ(reader.series().count("a"), 0u);
  EXPECT_EQ(reader.series().at("b").y, (std::vector<double>{5}));
}

TEST(MetricSeries, AgreesWithForEachMetricOnAFile) {
  test::TempDir dir{"series"};
  const auto file = dir.path() / "metrics.jsonl";
  std::string text;
  for (int i = 0; i < 500; ++i) {
    text += "{\"name\": \"m" + std::to_string(i % 3) + "\", \"value\": " + std::to_string(i * 0.5) +
            (i % 7 ? "}" : ", \"step\": \"x\"}") + "\n";
  }
  text += "{\"name\": \"m0\", \"value\": \"NaN\"}\nbroken\n";
  atomic_write_file(file, text);
  MetricSeriesReader reader;
  reader.update(file, true);
  const auto reference = read_metric_series(file);
  for (const auto& [name, values] : reference) {
    const auto& s = reader.series().at(name);
    EXPECT_EQ(s.values, values.size());
    std::size_t k = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (!values[i].is_number()) continue;
      ASSERT_LT(k, s.y.size());
      EXPECT_EQ(s.y[k], values[i].get<double>());
      EXPECT_EQ(s.x[k], static_cast<double>(i));
      ++k;
    }
    EXPECT_EQ(k, s.y.size());
  }
  EXPECT_EQ(reader.skipped(), 1u);
}

TEST(MetricSeries, ABigFileReadInPartsEqualsItReadWhole) {
  // Over 16 MiB: update() cuts it at line starts and reads the parts on threads; the result
  // must be what one reader adding the whole text gets. Step-less points (positions) after a
  // cut, non-numeric values, escapes, bad lines and a line over 1 MiB all cross the cuts.
  test::TempDir dir{"series"};
  const auto file = dir.path() / "metrics.jsonl";
  std::string text;
  text.reserve(24u << 20);
  for (int i = 0; text.size() < (20u << 20); ++i) {
    const std::string n = std::to_string(i);
    switch (i % 9) {
      case 0:
        text += "{\"name\": \"pos\", \"value\": " + n + ".5}\n";
        break;
      case 1:
        text += "{\"name\": \"pos\", \"value\": \"text " + n + "\"}\n";
        break;
      case 2:
        text += "{\"name\": \"l\\u006fss\", \"value\": 1e-3, \"step\": " + n + "}\n";
        break;
      case 3:
        text += "not json " + n + "\n";
        break;
      case 4:
        text += "{\"decision\": \"d" + n + "\", \"verdict\": \"goes on\", \"time\": 1}\n";
        break;
      default:
        text += "{\"name\": \"loss\", \"value\": " + std::to_string(1.0 / (i + 1)) +
                ", \"time\": 1700000000." + n + ", \"step\": " + n + "}\n";
    }
    if (i == 300001) text += std::string(1100 * 1024, 'x') + "\n";
  }
  text += "{\"name\": \"pos\", \"value\": 7";  // no newline yet: the run goes on
  atomic_write_file(file, text);
  MetricSeriesReader parts;
  parts.update(file, false);
  const MetricSeriesReader whole = read(text, false);
  ASSERT_EQ(parts.offset(), text.size() - std::string("{\"name\": \"pos\", \"value\": 7").size());
  EXPECT_EQ(parts.skipped(), whole.skipped());
  ASSERT_EQ(parts.series().size(), 2u);
  ASSERT_EQ(parts.decisions().size(), whole.decisions().size());
  for (std::size_t i = 0; i < whole.decisions().size(); ++i)
    ASSERT_EQ(parts.decisions()[i].text, whole.decisions()[i].text) << i;
  for (const auto& [name, series] : whole.series()) {
    const auto& read_in_parts = parts.series().at(name);
    EXPECT_EQ(read_in_parts.values, series.values) << name;
    EXPECT_TRUE(read_in_parts.x == series.x) << name;
    EXPECT_TRUE(read_in_parts.y == series.y) << name;
  }
  // The rest of the last line arrives; the next update reads only it.
  atomic_write_file(file, text + "}\n");
  parts.update(file, false);
  EXPECT_EQ(parts.series().at("pos").y.back(), 7);
  EXPECT_EQ(parts.series().at("pos").x.back(),
            static_cast<double>(parts.series().at("pos").values - 1));
}

TEST(Downsample, KeepsEndsAndPeaksAndStaysUnderTheThreshold) {
  MetricSeries s;
  for (int i = 0; i < 100000; ++i) {
    s.x.push_back(i);
    s.y.push_back(std::sin(i / 1000.0) + (i == 54321 ? 50 : 0));
  }
  const auto out = downsample(s, -INFINITY, INFINITY, 1000);
  EXPECT_EQ(out.x.size(), 1000u);
  EXPECT_EQ(out.x.front(), 0);
  EXPECT_EQ(out.x.back(), 99999);
  EXPECT_NE(std::find(out.x.begin(), out.x.end(), 54321.0), out.x.end()) << "the spike is kept";
  EXPECT_TRUE(std::is_sorted(out.x.begin(), out.x.end()));
}

TEST(Downsample, ARangeAndUnsortedSteps) {
  MetricSeries s;
  s.x = {5, 1, 3, 2, 4};
  s.y = {50, 10, 30, 20, 40};
  const auto all = downsample(s, -INFINITY, INFINITY, 100);
  EXPECT_EQ(all.x, (std::vector<double>{1, 2, 3, 4, 5}));
  EXPECT_EQ(all.y, (std::vector<double>{10, 20, 30, 40, 50}));
  const auto part = downsample(s, 2, 4, 100);
  EXPECT_EQ(part.x, (std::vector<double>{2, 3, 4}));
}

}  // namespace mlw
