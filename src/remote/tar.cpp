#include "mlw/remote/tar.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <charconv>
#include <cstring>
#include <deque>
#include <optional>
#include <set>
#include <utility>

#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

constexpr std::size_t k_block = 512;
constexpr std::uint64_t k_max_name = 4096;        // a long name or pax path
constexpr std::uint64_t k_max_pax = 1024 * 1024;  // one pax header

void put_octal(char* field, std::size_t width, std::uint64_t value) {
  const std::string text = fmt::format("{:0{}o}", value, width - 1);
  std::memcpy(field, text.data(), width - 1);
  field[width - 1] = '\0';
}

/// A 512-byte header; the size in base-256 when octal cannot hold it.
std::string header(const std::string& name, char type, std::uint64_t size, std::uint32_t mode,
                   const std::string& link) {
  std::string block(k_block, '\0');
  char* h = block.data();
  std::memcpy(h, name.data(), std::min<std::size_t>(name.size(), 100));
  put_octal(h + 100, 8, mode & 07777);
  put_octal(h + 108, 8, 0);
  put_octal(h + 116, 8, 0);
  if (size < (1ULL << 33)) {
    put_octal(h + 124, 12, size);
  } else {
    h[124] = static_cast<char>(0x80);
    for (int i = 0; i < 8; ++i) h[135 - i] = static_cast<char>((size >> (8 * i)) & 0xff);
  }
  put_octal(h + 136, 12, 0);
  h[156] = type;
  std::memcpy(h + 157, link.data(), std::min<std::size_t>(link.size(), 100));
  std::memcpy(h + 257, "ustar  ", 8);  // GNU magic and version
  std::memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (std::size_t i = 0; i < k_block; ++i) sum += static_cast<unsigned char>(h[i]);
  const std::string check = fmt::format("{:06o}", sum);
  std::memcpy(h + 148, check.data(), 6);
  h[154] = '\0';
  h[155] = ' ';
  return block;
}

std::string padding(std::uint64_t size) {
  return std::string((k_block - size % k_block) % k_block, '\0');
}

}  // namespace

struct TarWriter::Impl {
  struct Piece {
    std::string bytes;                          // header, inline data or padding
    std::optional<std::filesystem::path> file;  // else: a file streamed from disk
    std::uint64_t size = 0;
    std::function<std::size_t(char*, std::size_t)> reader;  // else: content read from it
    Piece(std::string b, std::optional<std::filesystem::path> f, std::uint64_t n,
          std::function<std::size_t(char*, std::size_t)> r = nullptr)
        : bytes(std::move(b)), file(std::move(f)), size(n), reader(std::move(r)) {}
  };
  std::deque<Piece> pieces;
  std::uint64_t total = 2 * k_block;
  std::size_t offset = 0;
  int fd = -1;
  std::uint64_t file_left = 0;
  bool reading = false;  // the front piece's reader has begun
  bool ended = false;
  std::function<bool()> more;

  void push(Piece piece) {
    total += piece.file || piece.reader ? piece.size : piece.bytes.size();
    pieces.push_back(std::move(piece));
  }

  void add_header(const std::string& name, char type, std::uint64_t size, std::uint32_t mode,
                  const std::string& link) {
    if (name.size() > 100) {
      push({header("././@LongLink", 'L', name.size() + 1, 0644, "") + name + std::string(1, '\0') +
                padding(name.size() + 1),
            std::nullopt, 0});
    }
    if (link.size() > 100) {
      push({header("././@LongLink", 'K', link.size() + 1, 0644, "") + link + std::string(1, '\0') +
                padding(link.size() + 1),
            std::nullopt, 0});
    }
    push({header(name, type, size, mode, link), std::nullopt, 0});
  }
};

TarWriter::TarWriter() : m_impl(std::make_unique<Impl>()) {}

TarWriter::~TarWriter() {
  if (m_impl->fd >= 0) ::close(m_impl->fd);
}

void TarWriter::add_file(const std::string& name, const std::filesystem::path& source,
                         std::uint64_t size, std::uint32_t mode) {
  m_impl->add_header(name, '0', size, mode, "");
  m_impl->push({"", source, size});
  m_impl->push({padding(size), std::nullopt, 0});
}

void TarWriter::add_stream(const std::string& name, std::uint64_t size, std::uint32_t mode,
                           std::function<std::size_t(char*, std::size_t)> reader) {
  m_impl->add_header(name, '0', size, mode, "");
  m_impl->push({"", std::nullopt, size, std::move(reader)});
  m_impl->push({padding(size), std::nullopt, 0});
}

void TarWriter::add_data(const std::string& name, std::string content, std::uint32_t mode) {
  const std::uint64_t size = content.size();
  m_impl->add_header(name, '0', size, mode, "");
  m_impl->push({std::move(content) + padding(size), std::nullopt, 0});
}

void TarWriter::add_directory(const std::string& name, std::uint32_t mode) {
  m_impl->add_header(name.ends_with('/') ? name : name + "/", '5', 0, mode, "");
}

void TarWriter::add_hard_link(const std::string& name, const std::string& target) {
  m_impl->add_header(name, '1', 0, 0644, target);
}

void TarWriter::add_symlink(const std::string& name, const std::string& target) {
  m_impl->add_header(name, '2', 0, 0777, target);
}

void TarWriter::add_lazily(std::function<bool()> more) {
  m_impl->more = std::move(more);
}

std::uint64_t TarWriter::entry_bytes(const std::string& name, std::uint64_t size,
                                     const std::string& link) {
  auto long_blocks = [](const std::string& text) -> std::uint64_t {
    return text.size() > 100 ? k_block + text.size() + 1 + padding(text.size() + 1).size() : 0;
  };
  return long_blocks(name) + long_blocks(link) + k_block + size + padding(size).size();
}

std::uint64_t TarWriter::end_bytes() {
  return 2 * k_block;
}

std::uint64_t TarWriter::size() const {
  return m_impl->total;
}

std::size_t TarWriter::read(char* buffer, std::size_t size) {
  Impl& s = *m_impl;
  std::size_t filled = 0;
  while (filled < size) {
    if (s.pieces.empty() && s.more && !s.ended) {
      if (!s.more()) s.more = nullptr;
      continue;
    }
    if (s.pieces.empty()) {
      if (s.ended) break;
      s.ended = true;
      s.pieces.push_back({std::string(2 * k_block, '\0'), std::nullopt, 0});
    }
    Impl::Piece& piece = s.pieces.front();
    if (piece.reader) {
      if (!s.reading) s.file_left = piece.size;
      s.reading = true;
      if (s.file_left == 0) {
        s.reading = false;
        s.pieces.pop_front();
        continue;
      }
      const std::size_t n = piece.reader(
          buffer + filled,
          static_cast<std::size_t>(std::min<std::uint64_t>(size - filled, s.file_left)));
      if (n == 0) throw Error("a streamed file ended before its size");
      filled += n;
      s.file_left -= n;
      continue;
    }
    if (piece.file) {
      if (s.fd < 0) {
        s.fd = ::open(piece.file->c_str(), O_RDONLY | O_CLOEXEC);
        if (s.fd < 0) throw Error("cannot read " + piece.file->string() + ": " + errno_text(errno));
        s.file_left = piece.size;
      }
      if (s.file_left == 0) {
        ::close(s.fd);
        s.fd = -1;
        s.pieces.pop_front();
        continue;
      }
      const ssize_t n =
          ::read(s.fd, buffer + filled,
                 static_cast<std::size_t>(std::min<std::uint64_t>(size - filled, s.file_left)));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        throw Error(fmt::format("{} changed while it was being sent (shorter than {} bytes)",
                                piece.file->string(), piece.size));
      }
      filled += static_cast<std::size_t>(n);
      s.file_left -= static_cast<std::uint64_t>(n);
      continue;
    }
    const std::size_t n = std::min(size - filled, piece.bytes.size() - s.offset);
    std::memcpy(buffer + filled, piece.bytes.data() + s.offset, n);
    filled += n;
    s.offset += n;
    if (s.offset == piece.bytes.size()) {
      s.offset = 0;
      s.pieces.pop_front();
    }
  }
  return filled;
}

struct SafeTarReader::Impl {
  std::filesystem::path root;
  std::string buffer;           // an incomplete header
  std::uint64_t data_left = 0;  // bytes of the current entry still to come
  std::uint64_t pad_left = 0;
  int out_fd = -1;
  enum class Sink { None, File, LongName, Pax } sink = Sink::None;
  std::string long_name, pax_path, pax_records, current;
  std::vector<std::string> written, refused;
  std::set<std::string> written_set;
  bool ended = false;
  std::string failure;  // the stream was malformed: the rest is ignored

  [[noreturn]] static void malformed(const std::string& what) {
    throw Error("a malformed tar stream: " + what);
  }

  /// A header's number field: octal digits (leading spaces, ended by a space or NUL) or GNU
  /// base-256; anything else, or a value over 2^62, is malformed.
  static std::uint64_t parse_number(const char* field, std::size_t width, const char* what) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(field);
    std::uint64_t value = 0;
    if (bytes[0] & 0x80) {
      if (bytes[0] != 0x80) malformed(fmt::format("a negative or oversized {} field", what));
      for (std::size_t i = 1; i < width; ++i) {
        if (value >> 54) malformed(fmt::format("a {} over 2^62", what));
        value = (value << 8) | bytes[i];
      }
      return value;
    }
    std::size_t i = 0;
    while (i < width && field[i] == ' ') ++i;
    for (; i < width && field[i] >= '0' && field[i] <= '7'; ++i) {
      value = value * 8 + static_cast<unsigned>(field[i] - '0');
    }
    if (i < width && field[i] != ' ' && field[i] != '\0') {
      malformed(fmt::format("a {} field that is not a number", what));
    }
    return value;
  }

  /// Checks the header's checksum (unsigned sum, as POSIX says; old tars' signed sum accepted).
  static void check_header(const char* h) {
    const std::uint64_t stated = parse_number(h + 148, 8, "checksum");
    std::uint64_t unsigned_sum = 0;
    std::int64_t signed_sum = 0;
    for (std::size_t i = 0; i < k_block; ++i) {
      const bool in_field = i >= 148 && i < 156;
      unsigned_sum += in_field ? ' ' : static_cast<unsigned char>(h[i]);
      signed_sum += in_field ? ' ' : static_cast<signed char>(h[i]);
    }
    if (stated != unsigned_sum && static_cast<std::int64_t>(stated) != signed_sum) {
      malformed("a header whose checksum is wrong");
    }
  }

  /// The relative path for an entry name, or nullopt when it would leave the root.
  static std::optional<std::string> clean(const std::string& name) {
    if (name.empty() || name[0] == '/') return std::nullopt;
    std::vector<std::string> parts;
    for (const auto& part : split(name, '/')) {
      if (part.empty() || part == ".") continue;
      if (part == "..") return std::nullopt;
      parts.push_back(part);
    }
    if (parts.empty()) return std::nullopt;
    return join(parts, "/");
  }

  void make_parents(const std::string& relative) {
    const auto parent = (root / relative).parent_path();
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (std::filesystem::is_symlink(parent, ec)) throw Error("refusing to write through a link");
  }

  /// The name of the entry whose header is `h`, after any long name or pax path before it.
  std::string entry_name(const char* h) {
    std::string name(h, strnlen(h, 100));
    const std::string prefix(h + 345, strnlen(h + 345, 155));
    if (!prefix.empty() && std::memcmp(h + 257, "ustar\0", 6) == 0) name = prefix + "/" + name;
    if (!long_name.empty()) name = std::exchange(long_name, "");
    if (!pax_path.empty()) name = std::exchange(pax_path, "");
    return name;
  }

  void start_entry(const char* h) {
    check_header(h);
    const std::string name = entry_name(h);
    const char type = h[156];
    const std::uint64_t size = parse_number(h + 124, 12, "size");
    data_left = size;
    pad_left = (k_block - size % k_block) % k_block;
    sink = Sink::None;
    if (type == 'L' || type == 'x') {
      const std::uint64_t limit = type == 'L' ? k_max_name : k_max_pax;
      if (size > limit) {
        malformed(fmt::format("a {} of {} bytes (at most {})",
                              type == 'L' ? "long name" : "pax header", size, limit));
      }
      sink = type == 'L' ? Sink::LongName : Sink::Pax;
      return;
    }
    if (type == 'g' || type == 'K') return;
    const auto relative = clean(name);
    if (!relative) {
      refused.push_back(fmt::format("{}: a name that leaves the folder; not written", name));
      return;
    }
    if (type == '5') {
      std::error_code ec;
      std::filesystem::create_directories(root / *relative, ec);
      return;
    }
    if (type == '1' || type == '2') {
      link_entry(*relative, type, std::string(h + 157, strnlen(h + 157, 100)));
      return;
    }
    if (type != '0' && type != '\0' && type != '7') {
      refused.push_back(fmt::format("{}: not a regular file; not brought back", *relative));
      return;
    }
    open_file(*relative);
  }

  void open_file(const std::string& relative) {
    make_parents(relative);
    out_fd = ::open((root / relative).c_str(),
                    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (out_fd < 0) {
      refused.push_back(fmt::format("{}: cannot write it: {}", relative, errno_text(errno)));
      return;
    }
    current = relative;
    if (written_set.insert(relative).second) written.push_back(relative);
    sink = Sink::File;
  }

  /// A hard link to a file this stream already wrote comes back as a copy of it; any other
  /// link is refused.
  void link_entry(const std::string& relative, char type, const std::string& link) {
    const auto target = clean(link);
    if (type == '1' && target && written_set.count(*target) && *target != relative) {
      make_parents(relative);
      std::error_code ec;
      std::filesystem::copy_file(root / *target, root / relative,
                                 std::filesystem::copy_options::overwrite_existing, ec);
      if (ec) {
        refused.push_back(fmt::format("{}: cannot copy {}: {}", relative, *target, ec.message()));
        return;
      }
      if (written_set.insert(relative).second) written.push_back(relative);
      return;
    }
    refused.push_back(fmt::format("{}: a {} to {}; links are not brought back", relative,
                                  type == '2' ? "symlink" : "hard link", link));
  }

  /// Reads `length key=value\n` records; only `path` is used.
  void read_pax(const std::string& records) {
    std::size_t at = 0;
    while (at < records.size()) {
      const auto space = records.find(' ', at);
      std::size_t length = 0;
      const char* first = records.data() + at;
      const char* last = records.data() + std::min(space, records.size());
      const auto [end, ec] = std::from_chars(first, last, length);
      if (space == std::string::npos || ec != std::errc() || end != last ||
          length <= space - at + 1 || length > records.size() - at ||
          records[at + length - 1] != '\n') {
        malformed("a pax record whose length is wrong");
      }
      const std::string record = records.substr(space + 1, length - (space - at) - 2);
      if (starts_with(record, "path=")) {
        pax_path = record.substr(5);
        if (pax_path.size() > k_max_name) malformed("a pax path over 4096 bytes");
      }
      at += length;
    }
  }

  void end_entry() {
    if (sink == Sink::File && out_fd >= 0) {
      ::close(out_fd);
      out_fd = -1;
    }
    current.clear();
    if (sink == Sink::LongName) {
      while (!long_name.empty() && long_name.back() == '\0') long_name.pop_back();
    }
    if (sink == Sink::Pax) read_pax(std::exchange(pax_records, ""));
    sink = Sink::None;
  }

  void data(const char* bytes, std::size_t n) {
    switch (sink) {
      case Sink::File:
        if (out_fd >= 0) {
          std::size_t done = 0;
          while (done < n) {
            const ssize_t w = ::write(out_fd, bytes + done, n - done);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0)
              throw Error("cannot write " + (root / current).string() + ": " + errno_text(errno));
            done += static_cast<std::size_t>(w);
          }
        }
        break;
      case Sink::LongName:
        long_name.append(bytes, n);
        break;
      case Sink::Pax:
        pax_records.append(bytes, n);
        break;
      case Sink::None:
        break;
    }
  }

  /// After a malformed stream: the entry being written is removed (it is incomplete), the
  /// files before it stay.
  void fail(const std::string& why) {
    failure = why;
    if (out_fd >= 0) {
      ::close(out_fd);
      out_fd = -1;
      std::error_code ec;
      std::filesystem::remove(root / current, ec);
      written_set.erase(current);
      std::erase(written, current);
    }
  }

  void feed(std::string_view input);
};

void SafeTarReader::Impl::feed(std::string_view input) {
  while (!input.empty() && !ended) {
    if (data_left > 0) {
      const std::size_t n =
          static_cast<std::size_t>(std::min<std::uint64_t>(data_left, input.size()));
      data(input.data(), n);
      data_left -= n;
      input.remove_prefix(n);
      if (data_left == 0 && pad_left == 0) end_entry();
      continue;
    }
    if (pad_left > 0) {
      const std::size_t n =
          static_cast<std::size_t>(std::min<std::uint64_t>(pad_left, input.size()));
      pad_left -= n;
      input.remove_prefix(n);
      if (pad_left == 0) end_entry();
      continue;
    }
    const std::size_t n = std::min(k_block - buffer.size(), input.size());
    buffer.append(input.data(), n);
    input.remove_prefix(n);
    if (buffer.size() < k_block) break;
    std::string block = std::exchange(buffer, "");
    if (block.find_first_not_of('\0') == std::string::npos) {
      ended = true;
      break;
    }
    start_entry(block.data());
    if (data_left == 0 && pad_left == 0) end_entry();
  }
}

SafeTarReader::SafeTarReader(std::filesystem::path root) : m_impl(std::make_unique<Impl>()) {
  m_impl->root = std::move(root);
  make_directories(m_impl->root);
}

SafeTarReader::~SafeTarReader() {
  if (m_impl->out_fd >= 0) ::close(m_impl->out_fd);
}

void SafeTarReader::feed(std::string_view input) {
  Impl& s = *m_impl;
  if (!s.failure.empty()) return;
  try {
    s.feed(input);
  } catch (const Error& e) {
    s.fail(e.what());
  }
}

bool SafeTarReader::failed() const {
  return !m_impl->failure.empty();
}

std::vector<std::string> SafeTarReader::finish() {
  Impl& s = *m_impl;
  if (!s.failure.empty()) throw Error(s.failure);
  if (!s.ended && (s.data_left > 0 || s.pad_left > 0 || !s.buffer.empty())) {
    throw Error("the archive ended in the middle of " +
                (s.current.empty() ? "a header" : s.current));
  }
  return s.written;
}

const std::vector<std::string>& SafeTarReader::refused() const {
  return m_impl->refused;
}

}  // namespace mlw
