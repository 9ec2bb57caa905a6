#include "mlw/util/sha256.hpp"

#include <gtest/gtest.h>

namespace mlw {

TEST(Sha256, MatchesTheFipsTestVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, IncrementalUpdatesEqualOneShot) {
  const std::string text(1000003, 'x');
  Sha256 hash;
  for (std::size_t i = 0; i < text.size(); i += 97)
    hash.update(std::string_view(text).substr(i, 97));
  EXPECT_EQ(hash.hex_digest(), sha256_hex(text));
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

}  // namespace mlw
