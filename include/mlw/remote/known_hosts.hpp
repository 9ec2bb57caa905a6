#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace mlw {

/// One usable line of a known_hosts file.
struct KnownHostEntry {
  std::string file;      ///< the file it came from, for messages
  int line = 0;          ///< 1-based
  std::string marker;    ///< "", "@revoked" (a key never to trust) or "@cert-authority"
  std::string hosts;     ///< the host field: patterns, or one hashed name (|1|salt|hash)
  std::string key_type;  ///< "ssh-ed25519", "ecdsa-sha2-nistp256", ...
  std::string key_blob;  ///< the decoded public key (SSH wire format)
};

/// known_hosts as OpenSSH reads it: every line on its own, so that a bad one (a lone \r, a cut
/// key, an unknown marker) is skipped and named in `skipped`, never hiding the lines after it.
struct KnownHosts {
  std::vector<KnownHostEntry> entries;
  std::vector<std::string> skipped;  ///< "FILE:LINE: why", for -v

  /// Adds the lines of `text`, read from `file`.
  void add(std::string_view text, const std::string& file);
  /// Adds the lines of each file that exists (the user's, then /etc/ssh/ssh_known_hosts).
  static KnownHosts read(const std::vector<std::filesystem::path>& files);
};

/// The known_hosts name of `host` on `port`, as OpenSSH writes it: `host`, or `[host]:port`
/// for a port other than 22.
std::string known_host_name(const std::string& host, int port);

/// The key type named inside an SSH public key blob (its first length-prefixed string), "" when
/// the blob is cut.
std::string key_type_of(std::string_view blob);

/// Whether the host field `hosts` names `host` on `port` (OpenSSH's rules: comma-separated
/// patterns with * and ?, !negation, [host]:port for a port other than 22, case-insensitive;
/// or a hashed name |1|salt|hash, HMAC-SHA1 of the name).
bool known_host_matches(std::string_view hosts, const std::string& host, int port);

/// What known_hosts says about a host's key.
enum class HostKeyVerdict { Known, Changed, Revoked, Unknown };

/// The verdict and the entry it rests on (the changed or revoked line; null when unknown).
struct HostKeyCheck {
  HostKeyVerdict verdict = HostKeyVerdict::Unknown;
  const KnownHostEntry* entry = nullptr;
};

/// Checks the key `key_blob` the host offered: @revoked first, then a line with the same key
/// (Known), then a line of the same type with another key (Changed). @cert-authority lines
/// are never host keys.
HostKeyCheck check_known_host(const KnownHosts& known, const std::string& host, int port,
                              const std::string& key_blob);

/// The key types known for the host, in file order without repeats: the handshake prefers
/// them, as OpenSSH does, so that a host first met with ssh is known to mlw.
std::vector<std::string> known_key_types(const KnownHosts& known, const std::string& host,
                                         int port);

/// Appends `line` to known_hosts: through a symlink, keeping the file's mode (0644 when new), a
/// newline added first when the file does not end with one.
void append_known_host(const std::filesystem::path& file, const std::string& line);

}  // namespace mlw
