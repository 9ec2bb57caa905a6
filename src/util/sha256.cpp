#include "mlw/util/sha256.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "mlw/util/error.hpp"

namespace mlw {

// OpenSSL's libcrypto (already linked for libssh2) hashes with the machine's SHA extensions or
// vector code: several times the speed of portable C++. Nothing is set up before the first
// hash, so commands that hash nothing pay nothing.
Sha256::Sha256() : m_context(EVP_MD_CTX_new()) {
  // Fetched once per process: EVP_sha256() is looked up again in every init (OpenSSL 3), a
  // tenth of a small snapshot's time. The algorithm object is immutable and thread-safe.
  static EVP_MD* const algorithm = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  if (!m_context || !algorithm || EVP_DigestInit_ex(m_context, algorithm, nullptr) != 1) {
    throw Error("cannot start a SHA-256 hash (libcrypto)");
  }
}

Sha256::~Sha256() {
  EVP_MD_CTX_free(m_context);
}

void Sha256::update(std::string_view data) {
  if (EVP_DigestUpdate(m_context, data.data(), data.size()) != 1) {
    throw Error("SHA-256 failed (libcrypto)");
  }
}

std::string Sha256::hex_digest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(m_context, digest, &size) != 1) throw Error("SHA-256 failed (libcrypto)");
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * size);
  for (unsigned int i = 0; i < size; ++i) {
    out += k_hex[digest[i] >> 4];
    out += k_hex[digest[i] & 0xf];
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  Sha256 hash;
  hash.update(data);
  return hash.hex_digest();
}

std::string sha256_file(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot read " + path.string() + ": " + errno_text(errno));
  Sha256 hash;
  static thread_local char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw Error("cannot read " + path.string() + ": " + errno_text(err));
    }
    if (n == 0) break;
    hash.update(std::string_view(buffer, static_cast<std::size_t>(n)));
  }
  ::close(fd);
  return hash.hex_digest();
}

std::string sha1_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha1(), nullptr) != 1) {
    throw Error("SHA-1 failed (libcrypto)");
  }
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out += k_hex[digest[i] >> 4];
    out += k_hex[digest[i] & 0xf];
  }
  return out;
}

}  // namespace mlw
