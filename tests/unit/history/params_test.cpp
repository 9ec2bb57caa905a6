#include "mlw/history/params.hpp"

#include <gtest/gtest.h>

#include "mlw/api/history.hpp"
#include "mlw/history/collect.hpp"
#include "mlw/history/series.hpp"
#include "mlw/history/store.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "temp_dir.hpp"

namespace mlw {

TEST(Params, FromEveryArgumentStyleTyped) {
  const auto params = params_from_arguments({"--lr", "0.1", "--bs=64", "data.csv", "--verbose",
                                             "--name", "resnet", "model.depth=50", "+extra=true",
                                             "-k", "3", "--offset", "-2", "--last"});
  EXPECT_EQ(
      params.dump(),
      R"({"lr":0.1,"bs":64,"verbose":true,"name":"resnet","model.depth":50,"extra":true,"k":3,"offset":-2,"last":true})");
}

TEST(Params, PositionalWordsAndOddNamesAreNotParameters) {
  EXPECT_EQ(params_from_arguments({"a=b=c", "-1", "x", "--=3", "--9x", "1", "=2"}).dump(),
            R"({"a":"b=c"})");
}

TEST(Params, AHydraOverrideIsNotAFlagsValue) {
  EXPECT_EQ(params_from_arguments({"--debug", "lr=3"}).dump(), R"({"debug":true,"lr":3})");
}

TEST(Params, ALaterValueWins) {
  EXPECT_EQ(params_from_arguments({"--lr", "1", "--lr=2"}).dump(), R"({"lr":2})");
}

TEST(Params, TypedValues) {
  EXPECT_EQ(typed_value("1e-3"), 0.001);
  EXPECT_EQ(typed_value("+5"), 5);
  EXPECT_EQ(typed_value("TRUE"), true);
  EXPECT_EQ(typed_value("nan"), "nan");
  EXPECT_EQ(typed_value("0x10"), "0x10");
  EXPECT_EQ(param_text(typed_value("0.001")), "0.001");
}

TEST(Params, LoggedParamsAreNeitherMetricsNorSkippedLines) {
  test::TempDir temp{"params"};
  const auto file = temp.path() / "metrics.jsonl";
  atomic_write_file(file,
                    "{\"name\": \"loss\", \"value\": 1}\n"
                    "{\"param\": \"optimizer\", \"value\": \"adam\"}\n"
                    "{\"param\": \"layers\", \"value\": 3}\n"
                    "{\"param\": \"layers\", \"value\": 4}\n"
                    "{\"param\": \"nested\", \"value\": [1]}\n");
  EXPECT_EQ(logged_params(file).dump(), R"({"optimizer":"adam","layers":4})");
  std::vector<std::string> problems;
  const auto metrics = last_metric_values(file, &problems);
  EXPECT_EQ(metrics.dump(), R"({"loss":1})");
  ASSERT_EQ(problems.size(), 1u);  // only the nested value is a bad line
  EXPECT_NE(problems[0].find("1 line skipped"), std::string::npos);
  MetricSeriesReader reader;
  reader.update(file, true);
  EXPECT_EQ(reader.series().size(), 1u);
  EXPECT_EQ(reader.skipped(), 1u);
}

TEST(Params, FieldsAndConditions) {
  const RunCondition c = api::parse_run_condition("metric:loss <= 0.2");
  EXPECT_EQ(c.field.kind, "metric");
  EXPECT_EQ(c.field.name, "loss");
  EXPECT_EQ(c.op, "<=");
  EXPECT_EQ(c.value, 0.2);
  EXPECT_EQ(api::parse_run_condition("optimizer!=adam").value, "adam");
  EXPECT_EQ(api::parse_run_field("lr").kind, "param");
  EXPECT_THROW(api::parse_run_condition("lr"), UsageError);
  EXPECT_THROW(api::parse_run_condition("<3"), UsageError);
  EXPECT_THROW(api::parse_run_field("metrc:loss"), UsageError);
}

class ParamsStoreTest : public ::testing::Test {
 protected:
  RunRecord run(double lr, const std::string& optimizer, std::optional<double> loss) {
    RunRecord r;
    r.project = "demo";
    r.script = "train.py";
    r.target = "local";
    r.host = "h";
    r.params = {{"lr", lr}, {"optimizer", optimizer}};
    r.sweep_id = "demo_sweep_1";
    r.point = static_cast<int>(lr * 10);
    r.status = status::k_completed;
    if (loss) r.metrics["loss"] = *loss;
    return r;
  }
  test::TempDir m_temp{"params-store"};
};

TEST_F(ParamsStoreTest, ColumnsFiltersAndSortingFromTheIndex) {
  HistoryStore store(m_temp.path() / ".mlw");
  std::vector<RunRecord> runs = {run(0.1, "adam", 0.5), run(0.2, "sgd", 0.3),
                                 run(0.3, "adam", std::nullopt), run(0.4, "adam", 0.9)};
  store.create_many(runs, 1000);
  EXPECT_EQ(runs[0].run_id, "demo_1000");
  EXPECT_EQ(runs[3].run_id, "demo_1003");
  RunRecord other = run(0.5, "adam", 0.1);
  other.sweep_id.clear();
  store.create(other, 1000);
  RunQuery query;
  query.sweep_id = "demo_sweep_1";
  query.columns = {{"param", "lr"}};
  query.where = {api::parse_run_condition("optimizer=adam")};
  query.sort = RunField{"metric", "loss"};
  const auto rows = store.list(query);
  ASSERT_EQ(rows.size(), 3u);         // not sgd, not the run outside the sweep
  EXPECT_EQ(rows[0].values[0], 0.1);  // loss 0.5
  EXPECT_EQ(rows[1].values[0], 0.4);  // loss 0.9
  EXPECT_EQ(rows[2].values[0], 0.3);  // no loss: last
  query.descending = true;
  EXPECT_EQ(store.list(query)[0].values[0], 0.4);
  RunQuery below;
  below.where = {api::parse_run_condition("lr<0.25")};
  EXPECT_EQ(store.list(below).size(), 2u);
}

TEST_F(ParamsStoreTest, AnIndexRebuiltFromRunFoldersKeepsTheParameters) {
  const auto state = m_temp.path() / ".mlw";
  {
    HistoryStore store(state);
    std::vector<RunRecord> runs = {run(0.1, "adam", 0.5)};
    store.create_many(runs, 1000);
  }
  fs::remove(state / "history.db");
  HistoryStore again(state);
  RunQuery query;
  query.where = {api::parse_run_condition("optimizer=adam")};
  query.sweep_id = "demo_sweep_1";
  EXPECT_EQ(again.list(query).size(), 1u);
}

}  // namespace mlw
