#include "mlw/output/output.hpp"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <sstream>

#include "mlw/util/error.hpp"

namespace mlw {

namespace {
const nlohmann::ordered_json k_rows = nlohmann::ordered_json::array(
    {{{"id", "a"}, {"n", 1}, {"s", "x y"}}, {{"id", "bbb"}, {"n", nullptr}, {"s", "tab\there"}}});
const std::vector<Column> k_columns = {{"id", "ID"}, {"n", "N"}, {"s", "S"}};

std::string render(OutputFormat format) {
  std::ostringstream out;
  Output(out, format).print_list(k_rows, k_columns);
  return out.str();
}
}  // namespace

TEST(Output, TableAlignsColumnsUnderHeaders) {
  EXPECT_EQ(render(OutputFormat::Table), "ID   N  S\na    1  x y\nbbb     tab\there\n");
}

// Issue 45: a float in a table is short (6 significant digits); json and tsv keep it whole.
TEST(Output, ATablesFloatsAreShortTheDataWhole) {
  const nlohmann::ordered_json rows = nlohmann::ordered_json::array(
      {{{"v", 0.00036735525164001404}}, {{"v", 1234567.5}}, {{"v", 2.0}}, {{"v", 7}}});
  std::ostringstream table, tsv;
  Output(table, OutputFormat::Table).print_list(rows, {{"v", "V"}});
  Output(tsv, OutputFormat::Tsv).print_list(rows, {{"v", "V"}});
  EXPECT_EQ(table.str(), "V\n0.000367355\n1.23457e+06\n2\n7\n");
  EXPECT_EQ(tsv.str(), "0.00036735525164001404\n1234567.5\n2.0\n7\n");
}

TEST(Output, TsvHasOneLinePerRowAndNoTabsInside) {
  EXPECT_EQ(render(OutputFormat::Tsv), "a\t1\tx y\nbbb\t\ttab here\n");
}

TEST(Output, JsonAndYamlCarryTheSameData) {
  EXPECT_EQ(nlohmann::ordered_json::parse(render(OutputFormat::Json)), k_rows);
  const YAML::Node yaml = YAML::Load(render(OutputFormat::Yaml));
  ASSERT_TRUE(yaml.IsSequence());
  EXPECT_EQ(yaml[1]["id"].as<std::string>(), "bbb");
  EXPECT_EQ(yaml[1]["s"].as<std::string>(), "tab\there");
  EXPECT_TRUE(yaml[1]["n"].IsNull());
}

TEST(Output, ParsesFormatNames) {
  EXPECT_EQ(parse_output_format("yaml"), OutputFormat::Yaml);
  EXPECT_EQ(parse_output_format("jsonc"), OutputFormat::Jsonc);
  EXPECT_EQ(parse_output_format("none"), OutputFormat::None);
  EXPECT_THROW(parse_output_format("xml"), UsageError);
}

TEST(Output, NonePrintsNothing) {
  std::ostringstream out;
  Output(out, OutputFormat::None).print_list(k_rows, k_columns);
  Output(out, OutputFormat::None).print_object(k_rows[0]);
  EXPECT_EQ(out.str(), "");
}

TEST(Output, JsoncIsColouredOnlyWhenAskedAndIsTheJsonWithoutItsColours) {
  const nlohmann::ordered_json value = {{"a", 1.5},
                                        {"b", "x\"y"},
                                        {"c", nullptr},
                                        {"d", {1, true}},
                                        {"e", nlohmann::ordered_json::object()},
                                        {"f", {{"g", -2}}},
                                        {"h", nlohmann::ordered_json::array()}};
  std::ostringstream plain;
  Output(plain, OutputFormat::Jsonc, false).print_object(value);
  EXPECT_EQ(plain.str(), value.dump(2) + "\n");
  std::ostringstream colored;
  Output(colored, OutputFormat::Jsonc, true).print_object(value);
  EXPECT_NE(colored.str().find("\x1b[1;34m\"a\"\x1b[0m: \x1b[36m1.5\x1b[0m"), std::string::npos);
  std::string stripped;
  const std::string text = colored.str();
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b') {
      i = text.find('m', i);
      continue;
    }
    stripped += text[i];
  }
  EXPECT_EQ(stripped, value.dump(2) + "\n");
}

TEST(Output, DisplayWidthCountsScreenCells) {
  EXPECT_EQ(display_width("abc"), 3u);
  EXPECT_EQ(display_width("\u65e5\u672c\u8a9e"), 6u);  // wide
  EXPECT_EQ(display_width("re\u0301sume\u0301"), 6u);  // combining acute accents
  EXPECT_EQ(display_width("\U0001f642"), 2u);          // emoji
  EXPECT_EQ(display_width("r\u00e9sum\u00e9"), 6u);    // precomposed
}

TEST(Output, TableColumnsLineUpOnTheScreenForWideText) {
  const nlohmann::ordered_json rows = nlohmann::ordered_json::array(
      {{{"a", "re\u0301sume\u0301 \u65e5\u672c\u8a9e"}, {"b", "x"}}, {{"a", "plain"}, {"b", "y"}}});
  std::ostringstream out;
  Output(out, OutputFormat::Table).print_list(rows, {{"a", "A"}, {"b", "B"}});
  EXPECT_EQ(out.str(),
            "A              B\n"
            "re\u0301sume\u0301 \u65e5\u672c\u8a9e  x\n"
            "plain          y\n");
}

}  // namespace mlw
