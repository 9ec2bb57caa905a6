#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace mlw {

/// A regular file read without following a link at its last component or blocking (a FIFO in
/// its place is not waited on), at most its last `bound` bytes.
struct FileEnd {
  bool found = false;      ///< a regular file was read
  std::string text;        ///< its last `bound` bytes (all of it when smaller)
  std::uint64_t size = 0;  ///< its whole size
  std::string why;         ///< when not found: "missing", "a link", "not a regular file", …
};

/// Reads the end of `path` as FileEnd says.
FileEnd read_file_end(const std::filesystem::path& path, std::size_t bound);

}  // namespace mlw
