#include "mlw/util/json_text.hpp"

#include <gtest/gtest.h>

#include "mlw/history/record.hpp"

namespace mlw {

TEST(JsonText, BytesThatAreNotUtf8RoundTripThroughJson) {
  for (const std::string& text : std::vector<std::string>{
           std::string("caf\xe9"), std::string("\xff\xfe"), std::string("a\\xe9\\\\b\x80"),
           std::string("\xed\xa0\x80"), std::string("\xc0\xaf"), std::string("\xf4\x90\x80\x80")}) {
    const std::string safe = json_safe_text(text);
    ASSERT_EQ(safe[0], '\0') << text;
    const std::string dumped = nlohmann::ordered_json(safe).dump();  // must not throw
    EXPECT_EQ(text_from_json(nlohmann::ordered_json::parse(dumped).get<std::string>()), text);
  }
  EXPECT_EQ(json_safe_text("plain résumé \\x41"), "plain résumé \\x41");
  EXPECT_EQ(shown_text(json_safe_text("caf\xe9")), "caf\\xe9");
  EXPECT_EQ(text_from_json("no marker \\xe9"), "no marker \\xe9");
}

TEST(JsonText, MakeJsonSafeMarksOnlyWhatIsNotUtf8AndOnlyOnce) {
  nlohmann::ordered_json json = {{"a", {"ok", "caf\xe9"}}, {"b", {{"c", "\xff"}}}};
  make_json_safe(json);
  const std::string once = json.dump();
  make_json_safe(json);
  EXPECT_EQ(json.dump(), once);
  EXPECT_EQ(json["a"][0], "ok");
  EXPECT_EQ(text_from_json(json["b"]["c"].get<std::string>()), "\xff");
}

TEST(RunRecordJson, NamesAndArgumentsThatAreNotUtf8AreKeptByteForByte) {
  RunRecord record;
  record.run_id = "p_1";
  record.script = "train\xe9.py";
  record.arguments = {"caf\xe9", "ok"};
  record.outputs = {"outputs/\xff.bin"};
  const std::string text = record.to_json().dump(2);
  const RunRecord back = RunRecord::from_json(nlohmann::ordered_json::parse(text));
  EXPECT_EQ(back.script, record.script);
  EXPECT_EQ(back.arguments, record.arguments);
  EXPECT_EQ(back.outputs, record.outputs);
}

TEST(RunRecordJson, ADamagedRunJsonGivesDefaultsNeverAnException) {
  // Found by fuzz_run_json (tests/fuzz/corpus/run_json/regression-not-an-object).
  EXPECT_EQ(RunRecord::from_json(nlohmann::ordered_json(4)).run_id, "");
  const auto odd = nlohmann::ordered_json::parse(
      R"({"run_number":"x","pid":1e300,"exit_code":4096.5,"pid_start":-1,"snapshot_files":-3,)"
      R"("cancel_requested":"yes","started_ms":1e300,"arguments":[1,"a"],"job_id":7})");
  const RunRecord r = RunRecord::from_json(odd);
  EXPECT_EQ(r.run_number, 0);
  EXPECT_EQ(r.pid, 0);
  EXPECT_FALSE(r.exit_code.has_value());
  EXPECT_EQ(r.pid_start, 0u);
  EXPECT_EQ(r.snapshot_files, 0u);
  EXPECT_FALSE(r.cancel_requested);
  EXPECT_EQ(r.start_ms, 0);
  EXPECT_EQ(r.arguments, std::vector<std::string>{"a"});
  nlohmann::ordered_json deep = nlohmann::ordered_json::array();
  for (int i = 0; i < 100; ++i) deep = nlohmann::ordered_json::array({deep});
  EXPECT_TRUE(RunRecord::from_json({{"metrics", {{"m", deep}}}}).metrics.empty());
}

}  // namespace mlw
