#include "mlw/remote/known_hosts.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "mlw/remote/ssh_keys.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

constexpr std::size_t k_max_line = 64 * 1024;

/// The length-prefixed strings an SSH public key blob is made of; empty when they do not fill
/// it exactly (a cut key).
std::vector<std::string_view> blob_fields(std::string_view blob) {
  std::vector<std::string_view> fields;
  while (!blob.empty()) {
    if (blob.size() < 4) return {};
    const auto* b = reinterpret_cast<const unsigned char*>(blob.data());
    const std::size_t length = (std::size_t{b[0]} << 24) | (b[1] << 16) | (b[2] << 8) | b[3];
    if (length > blob.size() - 4) return {};
    fields.push_back(blob.substr(4, length));
    blob.remove_prefix(4 + length);
  }
  return fields;
}

/// The type name of a whole key blob of a known shape, else "".
std::string blob_type(std::string_view blob) {
  const auto fields = blob_fields(blob);
  if (fields.empty()) return "";
  const std::string type(fields[0]);
  std::size_t want = 0;
  if (type == "ssh-ed25519") want = 2;
  if (starts_with(type, "ecdsa-sha2-") || type == "ssh-rsa") want = 3;
  if (type == "ssh-dss") want = 5;
  if (want != 0 && fields.size() != want) return "";
  if (type == "ssh-ed25519" && fields[1].size() != 32) return "";
  return fields.size() >= 2 ? type : "";
}

/// Words split on spaces and tabs.
std::vector<std::string_view> words_of(std::string_view line) {
  std::vector<std::string_view> words;
  std::size_t at = 0;
  while (at < line.size()) {
    const auto start = line.find_first_not_of(" \t", at);
    if (start == std::string_view::npos) break;
    const auto end = std::min(line.find_first_of(" \t", start), line.size());
    words.push_back(line.substr(start, end - start));
    at = end;
  }
  return words;
}

/// One line; an empty reason when it is blank or a comment, else why it is skipped.
std::string parse_line(std::string_view line, KnownHostEntry& entry) {
  if (line.size() > k_max_line) return "a line over 64 KiB";
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  auto words = words_of(line);
  if (words.empty() || words[0].front() == '#') return "";
  if (words[0].front() == '@') {
    if (words[0] != "@revoked" && words[0] != "@cert-authority") return "an unknown marker";
    entry.marker = words[0];
    words.erase(words.begin());
  }
  if (words.size() < 3) return "not HOSTS TYPE KEY";
  const auto blob = decode_base64(words[2]);
  if (!blob) return "a key that is not base64";
  if (blob_type(*blob) != words[1]) return "a key that is cut or not of its type";
  entry.hosts = words[0];
  entry.key_type = words[1];
  entry.key_blob = *blob;
  return {};
}

bool hashed_name_matches(std::string_view hashed, const std::string& name) {
  // |1|base64(salt)|base64(HMAC-SHA1(salt, name))
  const auto bar = hashed.find('|', 3);
  if (bar == std::string_view::npos) return false;
  const auto salt = decode_base64(hashed.substr(3, bar - 3));
  const auto hash = decode_base64(hashed.substr(bar + 1));
  if (!salt || !hash || hash->size() != 20) return false;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha1(), salt->data(), static_cast<int>(salt->size()),
       reinterpret_cast<const unsigned char*>(name.data()), name.size(), digest, &size);
  return size == 20 && std::memcmp(digest, hash->data(), 20) == 0;
}

bool same_key(const KnownHostEntry& entry, const std::string& blob) {
  return entry.key_blob == blob;
}

}  // namespace

std::string known_host_name(const std::string& host, int port) {
  return port == 22 ? host : fmt::format("[{}]:{}", host, port);
}

std::string key_type_of(std::string_view blob) {
  const auto fields = blob_fields(blob);
  return fields.empty() ? "" : std::string(fields[0]);
}

void KnownHosts::add(std::string_view text, const std::string& file) {
  int number = 0;
  std::size_t at = 0;
  while (at < text.size()) {
    const auto end = std::min(text.find('\n', at), text.size());
    ++number;
    KnownHostEntry entry;
    const std::string why = parse_line(text.substr(at, end - at), entry);
    if (!why.empty()) {
      skipped.push_back(fmt::format("{}:{}: {}; skipped", file, number, why));
    } else if (!entry.hosts.empty()) {
      entry.file = file;
      entry.line = number;
      entries.push_back(std::move(entry));
    }
    at = end + 1;
  }
}

KnownHosts KnownHosts::read(const std::vector<std::filesystem::path>& files) {
  KnownHosts known;
  for (const auto& file : files) {
    if (const auto text = read_file_if_exists(file)) known.add(*text, file.string());
  }
  return known;
}

bool known_host_matches(std::string_view hosts, const std::string& host, int port) {
  const std::string name = lower_ascii(known_host_name(host, port));
  if (starts_with(hosts, "|1|")) return hashed_name_matches(hosts, name);
  return pattern_list_matches(split(hosts, ','), name, true);
}

HostKeyCheck check_known_host(const KnownHosts& known, const std::string& host, int port,
                              const std::string& key_blob) {
  HostKeyCheck changed;
  for (const auto& entry : known.entries) {
    if (entry.marker == "@revoked" && same_key(entry, key_blob)) {
      return {HostKeyVerdict::Revoked, &entry};
    }
  }
  const std::string type = blob_type(key_blob);
  for (const auto& entry : known.entries) {
    if (!entry.marker.empty() || !known_host_matches(entry.hosts, host, port)) continue;
    if (same_key(entry, key_blob)) return {HostKeyVerdict::Known, &entry};
    if (entry.key_type == type && !changed.entry) changed = {HostKeyVerdict::Changed, &entry};
  }
  return changed;
}

std::vector<std::string> known_key_types(const KnownHosts& known, const std::string& host,
                                         int port) {
  std::vector<std::string> types;
  for (const auto& entry : known.entries) {
    if (!entry.marker.empty() || !known_host_matches(entry.hosts, host, port)) continue;
    if (std::find(types.begin(), types.end(), entry.key_type) == types.end()) {
      types.push_back(entry.key_type);
    }
  }
  return types;
}

void append_known_host(const std::filesystem::path& file, const std::string& line) {
  make_directories(file.parent_path());
  const auto existing = read_file_if_exists(file);
  std::string text = line;
  if (existing && !existing->empty() && existing->back() != '\n') text.insert(0, "\n");
  // O_APPEND without O_NOFOLLOW: a known_hosts that is a symlink (dotfiles managers) is
  // written through, and an existing file keeps its mode.
  const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(fmt::format("cannot write {}: {}", file.string(), errno_text(errno)));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      throw Error(fmt::format("cannot write {}: {}", file.string(), errno_text(err)));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) {
    throw Error(fmt::format("cannot write {}: {}", file.string(), errno_text(errno)));
  }
}

}  // namespace mlw
