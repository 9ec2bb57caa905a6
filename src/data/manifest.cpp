#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <optional>

#include "mlw/data/dataset.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/sha256.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

/// The manifest's first line.
constexpr std::string_view k_header = "mlw-data 1";
/// The longest path or link a manifest may hold (PATH_MAX).
constexpr std::size_t k_max_path = 4096;

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

/// A relative path with no empty, "." or ".." component and no NUL.
bool safe_relative(std::string_view path) {
  if (path.empty() || path.size() > k_max_path || path.front() == '/' ||
      path.find('\0') != std::string_view::npos) {
    return false;
  }
  for (const auto& part : split(path, '/')) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

/// 64 lowercase hex digits (a manifest's every file line: no branch per digit).
bool is_hex64(std::string_view text) {
  static constexpr auto k_lower_hex = [] {
    std::array<std::uint8_t, 256> table{};
    for (int c = '0'; c <= '9'; ++c) table[static_cast<std::size_t>(c)] = 1;
    for (int c = 'a'; c <= 'f'; ++c) table[static_cast<std::size_t>(c)] = 1;
    return table;
  }();
  if (text.size() != 64) return false;
  unsigned hex = 1;
  for (const char c : text) hex &= k_lower_hex[static_cast<unsigned char>(c)];
  return hex != 0;
}

}  // namespace

std::string escape_data_path(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const std::size_t n = utf8_sequence_length(text, i);
    if (n == 0 || byte <= 0x20 || byte == 0x7f || byte == '%') {
      out += fmt::format("%{:02X}", byte);
      ++i;
    } else {
      out.append(text, i, n);
      i += n;
    }
  }
  return out;
}

std::optional<std::string> unescape_data_path(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte <= 0x20 || byte == 0x7f) return std::nullopt;
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const int high = hex_digit(text[i + 1]);
    const int low = hex_digit(text[i + 2]);
    if (high < 0 || low < 0) return std::nullopt;
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

namespace {

/// An entry's line of the manifest, without its '\n'.
std::string entry_line(const DataEntry& entry) {
  if (entry.link_target.empty()) {
    return fmt::format("F {} {} {:o} {}", entry.sha256, entry.size, entry.mode,
                       escape_data_path(entry.path));
  }
  return fmt::format("L {} {}", escape_data_path(entry.link_target), escape_data_path(entry.path));
}

}  // namespace

std::string DataManifest::text() const {
  // Reserved (a line is ~75 bytes and its path, once escaped): a text grown by doubling held
  // twice its size at once.
  std::size_t estimate = k_header.size() + 1;
  for (const auto& entry : entries) estimate += 96 + entry.path.size() + entry.link_target.size();
  std::string out;
  out.reserve(estimate);
  out.append(k_header).append(1, '\n');
  for (const auto& entry : entries) out.append(entry_line(entry)).append(1, '\n');
  return out;
}

std::string DataManifest::id() const {
  return sha256_hex(text());
}

std::uint64_t DataManifest::bytes() const {
  std::uint64_t total = 0;
  for (const auto& entry : entries) total += entry.size;
  return total;
}

std::size_t DataManifest::files() const {
  return static_cast<std::size_t>(std::count_if(
      entries.begin(), entries.end(), [](const auto& e) { return e.link_target.empty(); }));
}

namespace {

/// The entry of a line that is not the plain file line below, or why not (any line that
/// read_plain_file takes reads the same here).
DataEntry read_entry_line(std::string_view line,
                          const std::function<void(const std::string&)>& fail) {
  const auto fields = split(line, ' ');
  DataEntry entry;
  if (fields.size() == 5 && fields[0] == "F") {
    if (!is_hex64(fields[1])) fail("the sha256 is not 64 lowercase hex digits");
    const auto size = parse_integer(fields[2], 0, (1LL << 50));
    if (!size || fields[2] != std::to_string(*size)) fail("the size is not a number");
    if (fields[3].empty() || fields[3].size() > 4 ||
        fields[3].find_first_not_of("01234567") != std::string::npos) {
      fail("the mode is not octal permission bits");
    }
    entry.sha256 = fields[1];
    entry.size = static_cast<std::uint64_t>(*size);
    entry.mode = static_cast<std::uint32_t>(std::stoul(fields[3], nullptr, 8)) & 0777;
    if (fmt::format("{:o}", entry.mode) != fields[3]) fail("the mode is not octal permission bits");
  } else if (fields.size() == 3 && fields[0] == "L") {
    const auto target = unescape_data_path(fields[1]);
    if (!target || target->empty() || target->size() > k_max_path || target->front() == '/') {
      fail("the link's target is not a relative path");
    }
    entry.link_target = *target;
    entry.mode = 0777;
  } else {
    fail("expected \"F SHA256 SIZE MODE PATH\" or \"L TARGET PATH\"");
  }
  const auto path = unescape_data_path(fields.back());
  if (!path || !safe_relative(*path)) fail("the path is not a relative path inside the folder");
  entry.path = *path;
  // One text per manifest, so that its id names it: "%41" for "A", "0644" for "644" are not
  // it (checked line by line: the whole text again would double a large manifest's memory).
  if (entry_line(entry) != line) fail("the manifest is not in its one written form");
  return entry;
}

/// The digits of `text` from `at` up to `stop` as a number with no leading zero (or "0"), at
/// most `most`, in base `base`; `at` moved past them. Nullopt otherwise.
std::optional<std::uint64_t> plain_number(std::string_view text, std::size_t& at, char stop,
                                          unsigned base, std::uint64_t most) {
  const std::size_t first = at;
  std::uint64_t value = 0;
  while (at < text.size() && text[at] != stop) {
    const unsigned digit = static_cast<unsigned char>(text[at]) - '0';
    if (digit >= base || value > most) return std::nullopt;
    value = value * base + digit;
    ++at;
  }
  const std::size_t digits = at - first;
  if (at == text.size() || digits == 0 || (digits > 1 && text[first] == '0') || value > most) {
    return std::nullopt;
  }
  ++at;
  return value;
}

/// The common line, read without a copy of its fields: `F SHA256 SIZE MODE PATH` in its one
/// written form, whose path needs no escape (printable ASCII but '%') and is a relative path
/// inside the folder. False for any other line (read_entry_line says what it is).
bool read_plain_file(std::string_view line, DataEntry& entry) {
  if (line.size() < 72 || line[0] != 'F' || line[1] != ' ' || line[66] != ' ') return false;
  const std::string_view sha = line.substr(2, 64);
  if (!is_hex64(sha)) return false;
  std::size_t at = 67;
  const auto size = plain_number(line, at, ' ', 10, 1ULL << 50);
  if (!size) return false;
  const auto mode = plain_number(line, at, ' ', 8, 0777);
  if (!mode) return false;
  const std::string_view path = line.substr(at);
  if (path.empty() || path.size() > k_max_path || path.front() == '/') return false;
  std::size_t part = 0;  // where the path's current component starts
  for (std::size_t i = 0; i <= path.size(); ++i) {
    if (i < path.size() && path[i] != '/') {
      const auto byte = static_cast<unsigned char>(path[i]);
      if (byte <= 0x20 || byte >= 0x7f || byte == '%') return false;
      continue;
    }
    const std::string_view component = path.substr(part, i - part);
    if (component.empty() || component == "." || component == "..") return false;
    part = i + 1;
  }
  entry.sha256.assign(sha);
  entry.size = *size;
  entry.mode = static_cast<std::uint32_t>(*mode);
  entry.path.assign(path);
  return true;
}

}  // namespace

DataManifest read_data_manifest(std::string_view text, const std::string& origin) {
  DataManifest manifest;
  // One entry per line after the first: reserved, so that a vector growing by doubling does not
  // hold two copies of 300,000 entries at once.
  std::size_t lines = 0;
  for (auto at = text.find('\n'); at != std::string_view::npos; at = text.find('\n', at + 1))
    ++lines;
  manifest.entries.reserve(lines);
  std::size_t line_number = 0;
  const std::function<void(const std::string&)> fail = [&](const std::string& why) {
    throw Error(fmt::format("{}:{}: {}", origin, line_number, why));
  };
  std::size_t start = 0;
  while (start < text.size()) {
    ++line_number;
    const std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) fail("the manifest does not end with a new line");
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (line_number == 1) {
      if (line != k_header) fail("not an mlw data manifest (its first line is not \"mlw-data 1\")");
      continue;
    }
    DataEntry entry;
    if (!read_plain_file(line, entry)) entry = read_entry_line(line, fail);
    if (!manifest.entries.empty() && manifest.entries.back().path >= entry.path) {
      fail("the paths are not sorted, or one is repeated");
    }
    manifest.entries.push_back(std::move(entry));
  }
  if (line_number == 0) throw Error(origin + ": the manifest is empty");
  return manifest;
}

std::string data_object_name(const DataEntry& entry) {
  return entry.sha256 + ((entry.mode & 0111) != 0 ? ".x" : "");
}

DataDiff diff_data(const DataManifest& before, const DataManifest& after) {
  DataDiff diff;
  auto a = before.entries.begin();
  auto b = after.entries.begin();
  while (a != before.entries.end() || b != after.entries.end()) {
    if (b == after.entries.end() || (a != before.entries.end() && a->path < b->path)) {
      diff.removed.push_back((a++)->path);
    } else if (a == before.entries.end() || b->path < a->path) {
      diff.added.push_back((b++)->path);
    } else {
      if (a->sha256 != b->sha256 || a->mode != b->mode || a->link_target != b->link_target) {
        diff.changed.push_back(b->path);
      }
      ++a;
      ++b;
    }
  }
  return diff;
}

void check_data_name(const std::string& name) {
  if (name.empty()) throw UsageError("a data set needs a name");
  if (name.size() > 64)
    throw UsageError("data set name \"" + printable(name) + "\" is over 64 characters");
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    if (!ok) {
      throw UsageError(
          fmt::format("data set name \"{}\" may hold only letters, digits, '_', '.' "
                      "and '-' (not '{}')",
                      printable(name), printable(std::string(1, c))));
    }
  }
  if (name[0] == '.' || name[0] == '-') {
    throw UsageError("data set name \"" + name + "\" must start with a letter, a digit or '_'");
  }
}

std::string data_variable(const std::string& name) {
  std::string out = "MLW_DATA_";
  for (const char c : name) {
    if (c >= 'a' && c <= 'z') {
      out += static_cast<char>(c - 'a' + 'A');
    } else if ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
      out += c;
    } else {
      out += '_';
    }
  }
  return out;
}

}  // namespace mlw
