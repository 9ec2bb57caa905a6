#include "mlw/remote/frame.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <random>

#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

constexpr std::size_t k_noise_kept = 4096;

}  // namespace

FramedStream::FramedStream(std::string marker) : m_marker(std::move(marker) + "\n") {}

std::string_view FramedStream::feed(std::string_view chunk) {
  if (m_started) return chunk;
  m_window.append(chunk);
  const auto at = m_window.find(m_marker);
  if (at == std::string::npos) {
    // Keep only what could still begin the marker line; the rest is noise.
    const std::size_t keep = std::min(m_window.size(), m_marker.size() - 1);
    const std::size_t noise = m_window.size() - keep;
    if (m_noise.size() < k_noise_kept) {
      m_noise.append(m_window, 0, std::min(noise, k_noise_kept - m_noise.size()));
    }
    m_window.erase(0, noise);
    return {};
  }
  if (m_noise.size() < k_noise_kept) {
    m_noise.append(m_window, 0, std::min(at, k_noise_kept - m_noise.size()));
  }
  m_started = true;
  // The command's bytes are the tail of the window, which ends with `chunk`.
  const std::size_t after = at + m_marker.size();
  const std::size_t from_chunk = m_window.size() - after;
  m_window.clear();
  return chunk.substr(chunk.size() - from_chunk);
}

std::string FramedStream::noise() const {
  if (m_started || m_noise.size() >= k_noise_kept) return m_noise;
  return m_noise + m_window.substr(0, k_noise_kept - m_noise.size());
}

std::string new_frame_marker() {
  std::random_device random;
  return fmt::format("mlw-frame-{:08x}{:08x}", random(), random());
}

std::string framed_script(const std::string& marker, const std::string& script) {
  // The marker has no character a shell treats specially.
  return fmt::format("printf '%s\\n' {0}; printf '%s\\n' {0} >&2\n{1}", marker, script);
}

void report_noise(const std::string& where, const FramedStream (&frames)[2], ShellResult& result) {
  for (const FramedStream& frame : frames) {
    if (!frame.noise().empty() && frame.started()) {
      spdlog::debug("ssh {}: the login shell printed {}{} bytes before the command; ignored", where,
                    frame.noise().size() >= 4096 ? "over " : "", frame.noise().size());
    }
  }
  if (frames[0].started()) return;
  const std::string printed = trim(frames[1].noise() + frames[0].noise());
  result.output.clear();
  result.errors = fmt::format("the login shell on {} ended (exit {}) before running the command{}",
                              where, result.exit_code, printed.empty() ? "" : ": " + printed);
  if (result.exit_code == 0) result.exit_code = 255;
}

}  // namespace mlw
