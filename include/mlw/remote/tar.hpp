#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mlw {

/// Builds a tar stream (GNU format, long names, any size) that is read out in pieces, so a
/// large file is never held in memory.
class TarWriter {
 public:
  TarWriter();
  ~TarWriter();
  /// Adds a regular file whose content is read from `source` when its turn comes.
  void add_file(const std::string& name, const std::filesystem::path& source, std::uint64_t size,
                std::uint32_t mode);
  /// Adds a regular file of `size` bytes read from `reader` when its turn comes (it returns at
  /// most the bytes asked; 0 before `size` throws).
  void add_stream(const std::string& name, std::uint64_t size, std::uint32_t mode,
                  std::function<std::size_t(char*, std::size_t)> reader);
  /// Adds a regular file with the given content.
  void add_data(const std::string& name, std::string content, std::uint32_t mode);
  /// Adds a directory.
  void add_directory(const std::string& name, std::uint32_t mode = 0755);
  /// Adds a hard link `name` to `target` (an absolute path on the receiving side).
  void add_hard_link(const std::string& name, const std::string& target);
  /// Adds a symbolic link.
  void add_symlink(const std::string& name, const std::string& target);
  /// Entries made as the stream is read, for streams too long to hold: `more` is called whenever
  /// the entries added so far are read out; it adds the next ones and returns false when none
  /// are left. size() then counts only what was added: the caller sums entry_bytes().
  void add_lazily(std::function<bool()> more);
  /// The bytes one entry takes in the stream (its long-name blocks, header, content, padding).
  static std::uint64_t entry_bytes(const std::string& name, std::uint64_t size,
                                   const std::string& link = "");
  /// The end blocks' bytes.
  static std::uint64_t end_bytes();
  /// Fills up to `size` bytes of the stream; 0 at its end. Throws mlw::Error when a source file
  /// cannot be read.
  std::size_t read(char* buffer, std::size_t size);
  /// The length of the whole stream (end blocks included), known before it is read.
  std::uint64_t size() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

/// Extracts a tar stream fed in pieces under `root`, refusing anything that would be written
/// outside it: absolute names, `..`, links of any kind (reported, not made; a hard link to a
/// file the stream already wrote comes back as a copy). Regular files and folders only; every
/// length is bounded.
class SafeTarReader {
 public:
  /// Extracts under `root` (created when missing).
  explicit SafeTarReader(std::filesystem::path root);
  ~SafeTarReader();
  /// Feeds the next piece of the stream. A malformed stream (a wrong checksum, a number that is
  /// not one, a long name over 4 KiB, a pax header over 1 MiB) is not an exception here: the
  /// rest is ignored, failed() turns true and finish() throws the one-line reason.
  void feed(std::string_view data);
  /// True once the stream was found malformed (the caller may stop reading it).
  bool failed() const;
  /// Checks that the stream ended cleanly; returns the relative paths of the files written
  /// (those complete before a malformed part stay on disk).
  std::vector<std::string> finish();
  /// Entries that were refused, one line each ("outputs/x: a symlink to /etc/passwd").
  const std::vector<std::string>& refused() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

}  // namespace mlw
