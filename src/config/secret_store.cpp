#include "mlw/config/secret_store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <random>

#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

constexpr std::string_view k_prefix = "MlwSecret=";

std::string new_uuid() {
  std::random_device random;
  std::uniform_int_distribution<unsigned> byte(0, 255);
  unsigned char b[16];
  for (auto& x : b) x = static_cast<unsigned char>(byte(random));
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  return fmt::format(
      "{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:"
      "02x}{:02x}",
      b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
      b[15]);
}

/// Holds an exclusive flock on the store's lock file for the lifetime of the object.
class StoreLock {
 public:
  explicit StoreLock(const fs::path& folder) {
    const fs::path path = folder / "secrets.lock";
    m_fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (m_fd < 0) throw Error("cannot open " + path.string() + ": " + errno_text(errno));
    ::flock(m_fd, LOCK_EX);
  }
  ~StoreLock() { ::close(m_fd); }
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;

 private:
  int m_fd;
};

}  // namespace

SecretStore::SecretStore(fs::path folder) : m_folder(std::move(folder)) {}

bool SecretStore::is_reference(const std::string& value) {
  return starts_with(value, k_prefix);
}

std::string SecretStore::load_text() const {
  restrict_folder();
  const fs::path path = file();
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return "{}";
  if (info.st_uid != ::geteuid()) {
    throw Error(
        fmt::format("{} belongs to another user (uid {}); mlw reads passwords only from a "
                    "file of yours",
                    path.string(), info.st_uid));
  }
  if ((info.st_mode & 077) != 0) {
    throw Error(
        fmt::format("{} can be read by other users (mode {:04o}); fix it with: chmod 600 {}",
                    path.string(), info.st_mode & 07777, path.string()));
  }
  return read_file(path);
}

void SecretStore::restrict_folder() const {
  // A folder that already existed (made by another tool, or with a loose umask) is made 0700
  // too: the store's lock and temporary files live in it. One that another user owns is never
  // used: that user could read or replace every secret written there.
  struct stat info {};
  if (::lstat(m_folder.c_str(), &info) == 0 &&
      (!S_ISDIR(info.st_mode) || info.st_uid != ::geteuid())) {
    throw Error(
        fmt::format("{} is not a folder of yours (owner uid {}): mlw keeps passwords only "
                    "in a folder that you own and only you can open; remove it, or set "
                    "XDG_CONFIG_HOME to a folder of yours",
                    m_folder.string(), info.st_uid));
  }
  if (::lstat(m_folder.c_str(), &info) == 0 && S_ISDIR(info.st_mode) &&
      info.st_uid == ::geteuid() && (info.st_mode & 077) != 0) {
    if (::chmod(m_folder.c_str(), 0700) != 0) {
      throw Error(fmt::format("cannot make {} private (chmod 700): {}", m_folder.string(),
                              errno_text(errno)));
    }
  }
}

std::string SecretStore::put(const std::string& target, const std::string& user,
                             const std::string& secret, const std::string& endpoint) {
  make_directories(m_folder, 0700);
  restrict_folder();
  StoreLock lock(m_folder);
  nlohmann::ordered_json data;
  try {
    data = nlohmann::ordered_json::parse(load_text());
  } catch (const nlohmann::ordered_json::parse_error&) {
    throw Error(file().string() + " is damaged (not JSON); move it away and attach again");
  }
  const std::string reference = fmt::format("{}{}#{}#{}", k_prefix, target, user, new_uuid());
  data["secrets"][reference] = {{"secret", secret}, {"endpoint", endpoint}};
  atomic_write_file(file(), data.dump(2) + "\n", 0600);
  return reference;
}

StoredSecret SecretStore::lookup(const std::string& reference) const {
  if (starts_with(reference, "AzureMlSecret=")) {
    throw Error(
        "the password is an Azure ML Workbench secret reference (AzureMlSecret=…) that "
        "mlw cannot read; re-attach the target with: mlw computetarget attach … --force "
        "--password-stdin");
  }
  if (!is_reference(reference)) {
    throw Error(
        "the password key must hold a secret reference (MlwSecret=…), not a password; "
        "re-attach the target with --force --password-stdin");
  }
  nlohmann::ordered_json data;
  try {
    data = nlohmann::ordered_json::parse(load_text());
  } catch (const nlohmann::ordered_json::parse_error&) {
    throw Error(file().string() + " is damaged (not JSON); move it away and attach again");
  }
  if (!data.contains("secrets") || !data["secrets"].contains(reference)) {
    throw Error("no stored password for " + reference + " in " + file().string() +
                "; re-attach the target with --force --password-stdin");
  }
  const auto& entry = data["secrets"][reference];
  if (entry.is_string()) return {entry.get<std::string>(), ""};  // stored before mlw bound them
  if (!entry.is_object() || !entry.contains("secret") || !entry["secret"].is_string()) {
    throw Error(
        fmt::format("{}: the entry {} is damaged; re-attach the target with --force "
                    "--password-stdin",
                    file().string(), reference));
  }
  const auto endpoint = entry.value("endpoint", nlohmann::ordered_json(""));
  return {entry["secret"].get<std::string>(),
          endpoint.is_string() ? endpoint.get<std::string>() : ""};
}

std::string SecretStore::get(const std::string& reference) const {
  return lookup(reference).value;
}

bool SecretStore::remove(const std::string& reference) {
  if (!is_reference(reference) || !fs::exists(file())) return false;
  StoreLock lock(m_folder);
  nlohmann::ordered_json data = nlohmann::ordered_json::parse(load_text(), nullptr, false);
  if (data.is_discarded() || !data.contains("secrets") || !data["secrets"].contains(reference)) {
    return false;
  }
  data["secrets"].erase(reference);
  atomic_write_file(file(), data.dump(2) + "\n", 0600);
  return true;
}

}  // namespace mlw
