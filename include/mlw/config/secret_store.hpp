#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace mlw {

/// The user's passwords for compute targets, kept outside every project in
/// `$XDG_CONFIG_HOME/mlw/secrets.json` (mode 0600, written atomically under a lock).
class SecretStore {
 public:
  /// A store in `folder` (normally user_config_directory()).
  explicit SecretStore(std::filesystem::path folder);

  /// Stores `secret` for a target and user; returns its reference
  /// `MlwSecret=<target>#<user>#<uuid>`.
  std::string put(const std::string& target, const std::string& user, const std::string& secret);
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
