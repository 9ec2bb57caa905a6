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
  EXPECT_THROW(parse_output_format("xml"), UsageError);
}

}  // namespace mlw
