#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlw {

class SafeTarReader;

/// The file beside a run's live copy of metrics.jsonl (the lines the follow steps carried) that
/// counts the bytes of the target's lines they did not (over 4000 bytes, or empty): with the
/// copy's size, where the next step starts. Gone once the results replace the copy.
inline constexpr std::string_view k_metrics_skipped = "metrics.skipped";

/// The count in `run_dir`'s k_metrics_skipped (0 where there is none, or it holds no count).
std::uintmax_t metrics_skipped(const std::filesystem::path& run_dir);

/// Brings a target run folder's metrics.jsonl and outputs/ back into the run's history folder,
/// never outside it, from what results_script() prints: the metrics' size, the metrics (unless
/// over 256 MiB), the size and text of the list of sockets in outputs/ (tar leaves them out), then
/// a tar of outputs/. What it reads is bounded and checked; a malformed
/// answer stops it. Fed by its own step or by the end of the follow step.
class ResultsFetch {
 public:
  /// `run_dir`: the run's history folder; `host` for problems.
  ResultsFetch(std::filesystem::path run_dir, std::string host);
  ~ResultsFetch();
  ResultsFetch(const ResultsFetch&) = delete;
  ResultsFetch& operator=(const ResultsFetch&) = delete;

  /// The shell text that prints them, run in the target's run folder (it ends the script).
  static std::string script();
  /// Starts over (a step run again after a reconnect).
  void begin();
  /// Takes the next piece of what the script printed.
  void feed(std::string_view chunk);
  /// True once the answer was found malformed (stop reading).
  bool failed() const;
  /// Puts metrics.jsonl and outputs/ in place; what went wrong goes into `problems`.
  void finish(std::vector<std::string>& problems);

 private:
  std::filesystem::path m_run_dir;
  std::string m_host;
  std::filesystem::path m_part;
  std::filesystem::path m_incoming;
  std::ofstream m_metrics;
  std::unique_ptr<SafeTarReader> m_reader;
  std::string m_size_line;
  /// The part of the answer being read: two size-prefixed blocks, then the tar.
  enum class Block { Metrics, Sockets, Tar };
  Block m_block = Block::Metrics;
  std::optional<std::uint64_t> m_left;  // of the block, set once its size line is in
  std::string m_sockets;
  bool m_too_big = false;
  bool m_bad_size = false;
};

}  // namespace mlw
