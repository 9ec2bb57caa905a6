#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace mlw {

/// A stored secret and the endpoint (`user@host:port`) it was given for; an empty endpoint is
/// an entry stored before mlw bound secrets to endpoints.
struct StoredSecret {
  std::string value;
  std::string endpoint;
};

/// The user's passwords for compute targets, kept outside every project in
/// `$XDG_CONFIG_HOME/mlw/secrets.json` (mode 0600, written atomically under a lock).
class SecretStore {
 public:
  /// A store in `folder` (normally user_config_directory()).
  explicit SecretStore(std::filesystem::path folder);

  /// Stores `secret` for a target and user, bound to `endpoint` (`user@host:port`, where it
  /// may be sent); returns its reference `MlwSecret=<target>#<user>#<uuid>`.
  std::string put(const std::string& target, const std::string& user, const std::string& secret,
                  const std::string& endpoint = "");
  /// The secret behind `reference` with the endpoint it is bound to; throws as get().
  StoredSecret lookup(const std::string& reference) const;
  /// The secret behind `reference`; throws mlw::Error for a Workbench `AzureMlSecret=` reference
  /// (with how to re-attach) or a missing entry.
  std::string get(const std::string& reference) const;
  /// Removes the entry; returns false when there was none.
  bool remove(const std::string& reference);
  /// The file that holds the secrets.
  std::filesystem::path file() const { return m_folder / "secrets.json"; }

  /// True when `value` is a reference mlw writes.
  static bool is_reference(const std::string& value);

 private:
  std::string load_text() const;
  /// Makes the store's folder 0700 when it is the user's and more open.
  void restrict_folder() const;
  std::filesystem::path m_folder;
};

}  // namespace mlw
