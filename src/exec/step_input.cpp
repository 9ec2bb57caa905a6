#include "step_input.hpp"

#include <fmt/format.h>

#include "mlw/remote/tar.hpp"
#include "mlw/util/error.hpp"

namespace mlw {

void Segments::text(std::string value) {
  m_parts.push_back({std::move(value), nullptr, {}});
}

void Segments::tar(TarWriter& stream, std::uint64_t bytes) {
  Part part{{}, &stream, {}};
  part.bytes = bytes;
  m_parts.push_back(std::move(part));
}

void Segments::lines(std::size_t count, std::function<std::string(std::size_t)> line) {
  m_parts.push_back({{}, nullptr, std::move(line), count});
}

std::size_t Segments::read(char* buffer, std::size_t size) {
  while (m_index < m_parts.size()) {
    Part& part = m_parts[m_index];
    std::size_t n = 0;
    if (part.stream) {
      n = part.stream->read(buffer, size);
      part.read += n;
      m_tar_bytes += n;
      if (n > 0 && on_tar_bytes) on_tar_bytes(m_tar_bytes);
    } else if (part.line) {
      n = read_lines(part, buffer, size);
    } else {
      n = read_held(part.value, m_offset, buffer, size);
    }
    if (n > 0) return n;
    ++m_index;
    m_offset = 0;
  }
  return 0;
}

std::size_t Segments::known() const {
  if (m_index >= m_parts.size() || !m_parts[m_index].stream) return 0;
  const Part& part = m_parts[m_index];
  return part.read < part.bytes ? static_cast<std::size_t>(part.bytes - part.read) : 0;
}

std::size_t Segments::read_lines(Part& part, char* buffer, std::size_t size) {
  std::size_t filled = 0;
  while (filled < size) {
    if (m_offset == part.value.size()) {
      if (part.next == part.count) break;
      part.value = part.line(part.next++);
      m_offset = 0;
    }
    filled += read_held(part.value, m_offset, buffer + filled, size - filled);
  }
  return filled;
}

ShellResult run_bounded(Shell& shell, const std::string& script, Segments* input, std::size_t bound,
                        const std::function<void(std::string_view)>& on_line) {
  std::string answer;
  std::size_t said = 0;
  ShellStreams streams;
  streams.on_output = [&](std::string_view chunk) {
    said += chunk.size();
    if (said > bound) {
      throw Error(
          fmt::format("{}: its data store answered with more than {} bytes; is a tool on "
                      "its PATH (awk, ls, sha256sum) replaced?",
                      shell.host(), bound));
    }
    answer.append(chunk);
    if (!on_line) return;
    std::size_t start = 0;
    for (auto end = answer.find('\n'); end != std::string::npos; end = answer.find('\n', start)) {
      on_line(std::string_view(answer).substr(start, end - start));
      start = end + 1;
    }
    answer.erase(0, start);
  };
  if (input) {
    streams.read_input = [input](char* b, std::size_t n) { return input->read(b, n); };
    streams.input_known = [input] { return input->known(); };
  }
  ShellResult result = shell.run(script, streams);
  if (on_line && !answer.empty()) on_line(answer);
  result.output = on_line ? std::string() : std::move(answer);
  return result;
}

}  // namespace mlw
