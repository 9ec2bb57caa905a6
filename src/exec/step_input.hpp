#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mlw/remote/shell.hpp"

namespace mlw {

class TarWriter;

/// A step's stdin: pieces of text, lines made as they are read, and tar streams, one after
/// the other.
class Segments {
 public:
  /// Text sent as it is.
  void text(std::string value);
  /// A tar stream of `bytes` bytes (what was announced for it).
  void tar(TarWriter& stream, std::uint64_t bytes);
  /// `count` lines, line(i) the i-th (with its '\n'), made as the stream reaches them.
  void lines(std::size_t count, std::function<std::string(std::size_t)> line);
  /// Called with the bytes read from the tar streams so far.
  std::function<void(std::uint64_t)> on_tar_bytes;

  /// Fills up to `size` bytes; 0 at the end.
  std::size_t read(char* buffer, std::size_t size);
  /// The bytes the next reads surely give (what is left of a tar stream; 0 elsewhere).
  std::size_t known() const;

 private:
  struct Part {
    std::string value;  ///< text, or the line being read of `line`'s
    TarWriter* stream;
    std::function<std::string(std::size_t)> line;
    std::size_t count = 0;
    std::size_t next = 0;
    std::uint64_t bytes = 0;  ///< a tar stream's length
    std::uint64_t read = 0;   ///< of it, read so far
  };

  std::size_t read_lines(Part& part, char* buffer, std::size_t size);

  std::vector<Part> m_parts;
  std::size_t m_index = 0;
  std::size_t m_offset = 0;
  std::uint64_t m_tar_bytes = 0;
};

/// Runs `script` with `input`, its answer bounded; throws where it says more than `bound`.
/// With `on_line`, each whole line of its output goes there as it comes, not into the result.
ShellResult run_bounded(Shell& shell, const std::string& script, Segments* input, std::size_t bound,
                        const std::function<void(std::string_view)>& on_line = nullptr);

}  // namespace mlw
