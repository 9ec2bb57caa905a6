#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace mlw::test {

/// A fresh folder under /tmp for one test, removed with its contents when the object goes.
class TempDir {
 public:
  /// Creates /tmp/mlw-<name>-XXXXXX.
  explicit TempDir(const std::string& name) {
    std::string pattern = "/tmp/mlw-" + name + "-XXXXXX";
    m_path = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  /// The folder.
  const std::filesystem::path& path() const { return m_path; }

 private:
  std::filesystem::path m_path;
};

}  // namespace mlw::test
