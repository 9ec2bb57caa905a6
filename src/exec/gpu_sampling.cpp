// A leased run's GPU sampler (docs/gpus.md): its settings for a monitor, the local one, and
// what it leaves for the run's record.
#include "mlw/exec/gpu_sampling.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "mlw/exec/executor.hpp"
#include "mlw/exec/lease.hpp"
#include "mlw/exec/run_recorder.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/process.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

/// The most lines of gpu_notes a record takes, and the longest.
constexpr std::size_t k_max_notes = 20;
constexpr std::size_t k_max_note = 400;

/// Appends `line` to `file`, a regular file (a FIFO a script put in its place is left alone: it
/// would block).
void append_line(const fs::path& file, const std::string& line) {
  const int fd = ::open(file.c_str(),
                        O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) write_fully(fd, line + "\n");
  ::close(fd);
}

/// The sampler's words after its program and GPUs: seconds, warn, policy.
std::vector<std::string> settings(const RunPlan& plan) {
  const ComputeConfig& compute = plan.compute;
  return {std::to_string(compute.gpu_sample_seconds), compute.gpu_unused_warn_minutes,
          compute.idle_gpu.sampler_word()};
}

}  // namespace

bool samples_gpus(const RunPlan& plan) {
  return starts_with(lease_request(plan).want, "gpu:") || !unleased_gpus(plan.compute).empty();
}

std::string unleased_gpus(const ComputeConfig& compute) {
  if (compute.gpus_per_run != "all" || !compute.nvidia_docker) return "";
  if (compute.type != "docker" && compute.type != "remotedocker") return "";
  const std::string& gpus = compute.gpus;
  if (gpus.empty() || gpus == "all") return "all";
  if (starts_with(gpus, "device=")) return gpus.substr(7);  // indexes or UUIDs: sampler.sh maps
  // A count: Docker gives the first N (its countToDevices: 0 … N-1).
  const auto count = parse_integer(gpus, 1, 64);
  if (!count) return "";
  std::string list;
  for (long long k = 0; k < *count; ++k) list += (k ? "," : "") + std::to_string(k);
  return list;
}

std::string sampler_preamble(const RunPlan& plan) {
  if (!samples_gpus(plan)) return "mlw_sample_sh=\n";
  const auto words = settings(plan);
  return "mlw_sample_sh=" + shell_quote(script_body("src/exec/sampler.sh")) +
         "\nmlw_sample_awk=" + shell_quote(script_body("src/exec/sampler.awk")) +
         "\nmlw_sample_every=" + shell_quote(words[0]) +
         "\nmlw_sample_warn=" + shell_quote(words[1]) +
         "\nmlw_sample_policy=" + shell_quote(words[2]) +
         "\nmlw_sample_gpus=" + shell_quote(unleased_gpus(plan.compute)) +
         "\nmlw_sample_nvml=" + shell_quote(std::string(nvml_reader_packed())) + "\n";
}

LocalSampler::LocalSampler(const RunPlan& plan, const std::string& gpus, const std::string& ticket,
                           pid_t root, const std::vector<std::string>& stop)
    : m_run_dir(plan.run_dir) {
  if (!samples_gpus(plan) || gpus.empty() || root <= 0) return;
  ProcessSpec spec;
  spec.argv = {"/bin/sh",
               "-c",
               script_body("src/exec/sampler.sh"),
               "mlw-sample",
               script_body("src/exec/sampler.awk"),
               gpus};
  for (auto& word : settings(plan)) spec.argv.push_back(std::move(word));
  spec.argv.push_back(ticket);
  spec.argv.push_back(std::to_string(root));
  spec.argv.push_back("metrics.jsonl");
  spec.argv.insert(spec.argv.end(), stop.begin(), stop.end());
  spec.cwd = plan.run_dir;
  spec.env = current_environment();
  spec.env["MLW_NVML"] = nvml_reader_packed();
  try {
    m_pid = spawn(spec, {.new_session = true});
    append_line(m_run_dir / "gpu.pid", std::to_string(m_pid));
  } catch (const Error& e) {
    append_line(m_run_dir / "gpu_notes", std::string("GPU sampling did not start: ") + e.what());
  }
}

LocalSampler::~LocalSampler() {
  end();
}

void LocalSampler::end() {
  if (m_pid <= 0) return;
  // Reaped first where it ended by itself: then its group is gone.
  int status = 0;
  const bool ended = ::waitpid(m_pid, &status, WNOHANG) == m_pid;
  if (ended || ::kill(-m_pid, SIGTERM) != 0) {
    if (!fs::exists(m_run_dir / "gpu.end") && !fs::exists(m_run_dir / "gpu_stop")) {
      append_line(m_run_dir / "gpu_notes",
                  "GPU sampling stopped: its sampler was killed; the run went on without samples");
    }
  }
  if (!ended) {
    for (int i = 0; i < 100 && ::waitpid(m_pid, &status, WNOHANG) == 0; ++i) ::usleep(10000);
  }
  m_pid = -1;
}

void apply_gpu_words(const std::vector<std::string>& lines, RunEnding& ending) {
  std::size_t notes = 0;
  for (const auto& line : lines) {
    if (starts_with(line, "gpu-stop ")) {
      ending.problems.push_back(printable(trim(line.substr(9)), k_max_note));
    } else if (starts_with(line, "gpu-note ") && notes++ < k_max_notes) {
      ending.problems.push_back(printable(trim(line.substr(9)), k_max_note));
    }
  }
}

void apply_gpu_files(const fs::path& run_dir, RunEnding& ending) {
  std::vector<std::string> lines;
  for (const auto& [file, word] :
       {std::pair{"gpu_stop", "gpu-stop "}, {"gpu_notes", "gpu-note "}}) {
    // A regular file only (a FIFO a script put there would block), its first 64 KiB.
    const int fd = open_regular_file(run_dir / file);
    if (fd < 0) continue;
    std::string text(64 * 1024, '\0');
    const ssize_t n = ::read(fd, text.data(), text.size());
    ::close(fd);
    text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    std::size_t count = 0;
    for (const auto& line : split(text, '\n')) {
      if (line.empty() || count++ >= k_max_notes) continue;
      lines.push_back(word + line.substr(0, k_max_note));
    }
  }
  apply_gpu_words(lines, ending);
}

}  // namespace mlw
