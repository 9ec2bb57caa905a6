#include "mlw/remote/ssh_keys.hpp"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cstdint>

#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

void put_u32(std::string& out, std::uint32_t v) {
  out += static_cast<char>(v >> 24);
  out += static_cast<char>(v >> 16);
  out += static_cast<char>(v >> 8);
  out += static_cast<char>(v);
}

void put_string(std::string& out, std::string_view text) {
  put_u32(out, static_cast<std::uint32_t>(text.size()));
  out += text;
}

}  // namespace

std::string encode_base64(const unsigned char* data, std::size_t size, bool pad) {
  static const char* const alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < size; i += 3) {
    const unsigned v = (data[i] << 16) | ((i + 1 < size ? data[i + 1] : 0) << 8) |
                       (i + 2 < size ? data[i + 2] : 0);
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    if (i + 1 < size)
      out += alphabet[(v >> 6) & 63];
    else if (pad)
      out += '=';
    if (i + 2 < size)
      out += alphabet[v & 63];
    else if (pad)
      out += '=';
  }
  return out;
}

std::optional<std::string> decode_base64(std::string_view text) {
  static const std::string_view alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  std::string out;
  std::uint32_t bits = 0;
  int count = 0;
  for (const char c : text) {
    const auto at = alphabet.find(c);
    if (at == std::string_view::npos) return std::nullopt;
    bits = (bits << 6) | static_cast<std::uint32_t>(at);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xff));
    }
  }
  if (count >= 6) return std::nullopt;  // a single leftover character cannot be base64
  return out;
}

bool is_rsa_key_file(const std::filesystem::path& file) {
  const auto text = read_file_if_exists(file);
  if (!text) return false;
  if (text->find("BEGIN RSA PRIVATE KEY") != std::string::npos) return true;
  const auto pub = read_file_if_exists(file.string() + ".pub");
  return pub && starts_with(*pub, "ssh-rsa ");
}

std::string ssh_fingerprint(const std::string& key_blob) {
  unsigned char digest[32];
  unsigned int size = 0;
  EVP_Digest(key_blob.data(), key_blob.size(), digest, &size, EVP_sha256(), nullptr);
  return "SHA256:" + encode_base64(digest, size, false);
}

std::pair<std::string, std::string> generate_ed25519_key(const std::string& comment) {
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr);
  EVP_PKEY* key = nullptr;
  if (!ctx || EVP_PKEY_keygen_init(ctx) <= 0 || EVP_PKEY_keygen(ctx, &key) <= 0) {
    if (ctx) EVP_PKEY_CTX_free(ctx);
    throw Error("cannot create an ed25519 key pair (OpenSSL)");
  }
  EVP_PKEY_CTX_free(ctx);
  unsigned char secret[32], pub[32];
  std::size_t secret_size = sizeof secret, pub_size = sizeof pub;
  EVP_PKEY_get_raw_private_key(key, secret, &secret_size);
  EVP_PKEY_get_raw_public_key(key, pub, &pub_size);
  EVP_PKEY_free(key);
  const std::string pub_bytes(reinterpret_cast<char*>(pub), 32);
  std::string pub_blob;
  put_string(pub_blob, "ssh-ed25519");
  put_string(pub_blob, pub_bytes);

  std::uint32_t check = 0;
  RAND_bytes(reinterpret_cast<unsigned char*>(&check), sizeof check);
  std::string private_block;
  put_u32(private_block, check);
  put_u32(private_block, check);
  put_string(private_block, "ssh-ed25519");
  put_string(private_block, pub_bytes);
  put_string(private_block, std::string(reinterpret_cast<char*>(secret), 32) + pub_bytes);
  put_string(private_block, comment);
  for (char pad = 1; private_block.size() % 8 != 0; ++pad) private_block += pad;
  OPENSSL_cleanse(secret, sizeof secret);

  std::string body("openssh-key-v1", 15);  // with its NUL
  put_string(body, "none");
  put_string(body, "none");
  put_string(body, "");
  put_u32(body, 1);
  put_string(body, pub_blob);
  put_string(body, private_block);
  OPENSSL_cleanse(private_block.data(), private_block.size());
  const std::string encoded =
      encode_base64(reinterpret_cast<const unsigned char*>(body.data()), body.size(), true);
  OPENSSL_cleanse(body.data(), body.size());
  std::string pem = "-----BEGIN OPENSSH PRIVATE KEY-----\n";
  for (std::size_t i = 0; i < encoded.size(); i += 70) pem += encoded.substr(i, 70) + "\n";
  pem += "-----END OPENSSH PRIVATE KEY-----\n";
  const std::string public_line =
      "ssh-ed25519 " +
      encode_base64(reinterpret_cast<const unsigned char*>(pub_blob.data()), pub_blob.size(),
                    true) +
      " " + comment + "\n";
  return {pem, public_line};
}

}  // namespace mlw
