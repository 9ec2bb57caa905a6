#include "mlw/config/names.hpp"

#include <gtest/gtest.h>

#include "mlw/util/error.hpp"

namespace mlw {

TEST(ValidateName, AcceptsLettersDigitsUnderscoreDash) {
  EXPECT_NO_THROW(validate_name("my_dsvm-2", "target name"));
  EXPECT_NO_THROW(validate_name(std::string(64, 'a'), "target name"));
}

TEST(ValidateName, RefusesPathsEmptyAndLongNames) {
  EXPECT_THROW(validate_name("../x", "target name"), UsageError);
  EXPECT_THROW(validate_name("", "target name"), UsageError);
  EXPECT_THROW(validate_name(std::string(65, 'a'), "target name"), UsageError);
  EXPECT_THROW(validate_name("a b", "target name"), UsageError);
  EXPECT_THROW(validate_name("naïve", "target name"), UsageError);
}

TEST(ParseAddress, HostDefaultsToPort22) {
  const Address a = parse_address("gpu-vm.example.com");
  EXPECT_EQ(a.host, "gpu-vm.example.com");
  EXPECT_EQ(a.port, 22);
  EXPECT_FALSE(a.port_given);
}

TEST(ParseAddress, HostPortAndBracketedIpv6) {
  EXPECT_EQ(parse_address("127.0.0.1:2222").port, 2222);
  const Address v6 = parse_address("[::1]:2200");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, 2200);
  EXPECT_EQ(parse_address("[fe80::1]").port, 22);
  EXPECT_EQ(parse_address("::1").host, "::1");
}

TEST(ParseAddress, RefusesMalformedAddresses) {
  EXPECT_THROW(parse_address(""), UsageError);
  EXPECT_THROW(parse_address("host:0"), UsageError);
  EXPECT_THROW(parse_address("host:70000"), UsageError);
  EXPECT_THROW(parse_address("host:ssh"), UsageError);
  EXPECT_THROW(parse_address("[::1"), UsageError);
  EXPECT_THROW(parse_address("[::1]x"), UsageError);
  EXPECT_THROW(parse_address(":22"), UsageError);
  EXPECT_THROW(parse_address("a b"), UsageError);
  EXPECT_THROW(parse_address("user@host"), UsageError);
  EXPECT_THROW(parse_address("host:22:33"), UsageError);  // not IPv6, not one port
  EXPECT_THROW(parse_address("gpu-vm:22:"), UsageError);
  EXPECT_EQ(parse_address("fe80::1:22").host, "fe80::1:22");  // a bare IPv6 address is one
}

}  // namespace mlw
