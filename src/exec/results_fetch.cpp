// A run's results from its target: metrics.jsonl and outputs/, bounded and checked.

#include "results_fetch.hpp"

#include <fmt/format.h>

#include "mlw/remote/tar.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace fs = std::filesystem;

namespace {

/// The most of a run's metrics.jsonl brought back from a target.
constexpr std::uint64_t k_max_metrics_bytes = 256ULL << 20;

/// The most of the list of sockets read (results.sh sends the first 100 names).
constexpr std::uint64_t k_max_sockets_bytes = 1ULL << 20;

}  // namespace

std::uintmax_t metrics_skipped(const fs::path& run_dir) {
  std::error_code ec;
  if (fs::file_size(run_dir / k_metrics_skipped, ec) > 32 || ec) return 0;
  const auto text = read_file_if_exists(run_dir / k_metrics_skipped);
  const auto count = text ? parse_integer(trim(*text), 0, 1LL << 50) : std::nullopt;
  return count ? static_cast<std::uintmax_t>(*count) : 0;
}

ResultsFetch::ResultsFetch(fs::path run_dir, std::string host)
    : m_run_dir(std::move(run_dir)),
      m_host(std::move(host)),
      m_part(m_run_dir / "metrics.jsonl.part"),
      m_incoming(m_run_dir / ".outputs-in") {
  begin();
}

ResultsFetch::~ResultsFetch() {
  std::error_code ec;
  m_metrics.close();
  fs::remove(m_part, ec);
  fs::remove_all(m_incoming, ec);
}

std::string ResultsFetch::script() {
  return fmt::format("mlw_max_metrics={}\n", k_max_metrics_bytes) +
         std::string(embedded_script("src/exec/results.sh"));
}

void ResultsFetch::begin() {
  std::error_code ec;
  m_reader.reset();
  fs::remove_all(m_incoming, ec);
  m_metrics.close();
  m_metrics.clear();
  m_metrics.open(m_part, std::ios::binary | std::ios::trunc);
  m_reader = std::make_unique<SafeTarReader>(m_incoming);
  m_size_line.clear();
  m_block = Block::Metrics;
  m_left.reset();
  m_sockets.clear();
  m_too_big = m_bad_size = false;
}

void ResultsFetch::feed(std::string_view chunk) {
  while (!m_bad_size && !chunk.empty()) {
    if (m_block == Block::Tar) return m_reader->feed(chunk);
    if (!m_left) {  // the block's size line
      const auto newline = chunk.find('\n');
      m_size_line.append(chunk.substr(0, newline));
      if (newline == std::string_view::npos && m_size_line.size() <= 24) return;
      const auto size = parse_integer(trim(m_size_line), 0, 1LL << 62);
      m_bad_size =
          !size || newline == std::string_view::npos ||
          (m_block == Block::Sockets && static_cast<std::uint64_t>(*size) > k_max_sockets_bytes);
      if (m_bad_size) return;
      chunk.remove_prefix(newline + 1);
      m_size_line.clear();
      // Metrics over the bound are not sent: only their size.
      if (m_block == Block::Metrics) {
        m_too_big = static_cast<std::uint64_t>(*size) > k_max_metrics_bytes;
      }
      m_left = m_block == Block::Metrics && m_too_big ? 0 : static_cast<std::uint64_t>(*size);
    }
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(*m_left, chunk.size()));
    if (m_block == Block::Metrics) m_metrics.write(chunk.data(), static_cast<std::streamsize>(n));
    if (m_block == Block::Sockets) m_sockets.append(chunk.substr(0, n));
    chunk.remove_prefix(n);
    *m_left -= n;
    if (*m_left == 0) {
      m_block = m_block == Block::Metrics ? Block::Sockets : Block::Tar;
      m_left.reset();
    }
  }
}

bool ResultsFetch::failed() const {
  return m_bad_size || m_reader->failed();
}

void ResultsFetch::finish(std::vector<std::string>& problems) {
  try {
    if (m_bad_size) {
      throw Error(fmt::format(
          "it sent \"{}\" where the size of {} was expected", printable(m_size_line),
          m_block == Block::Metrics ? "metrics.jsonl" : "the list of sockets in outputs/"));
    }
    m_reader->finish();
  } catch (const Error& e) {
    problems.push_back(
        fmt::format("outputs could not all be brought back from {}: {}", m_host, e.what()));
  }
  m_metrics.close();
  if (m_too_big) {
    problems.push_back(
        fmt::format("metrics.jsonl on {} is over {} MiB; the metrics were not "
                    "brought back",
                    m_host, k_max_metrics_bytes >> 20));
  }
  std::error_code ec;
  if (m_block != Block::Metrics && !m_too_big && m_metrics && fs::file_size(m_part, ec) > 0) {
    fs::rename(m_part, m_run_dir / "metrics.jsonl", ec);
    if (!ec) fs::remove(m_run_dir / k_metrics_skipped, ec);  // the whole file: nothing skipped
  }
  fs::remove(m_part, ec);
  for (const auto& refused : m_reader->refused()) problems.push_back("output refused: " + refused);
  // In the words collect_outputs uses where the run folder is this machine's.
  for (const auto& name : split(m_sockets, '\n')) {
    if (!name.empty())
      problems.push_back(printable(name) + " is not a regular file; it was not collected");
  }
  if (fs::is_directory(m_incoming / "outputs")) {
    fs::rename(m_incoming / "outputs", m_run_dir / "outputs", ec);
  } else if (!m_bad_size) {
    fs::create_directory(m_run_dir / "outputs", ec);  // an empty one is not sent (no tar run)
  }
  fs::remove_all(m_incoming, ec);
}

}  // namespace mlw
