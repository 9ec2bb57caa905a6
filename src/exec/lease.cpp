// A run's lease on its machine (docs/gpus.md): requests, answers, and the owner on this machine.

#include "mlw/exec/lease.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>

#include "mlw/exec/run_session.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/process.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

/// The most of one answer line that is kept.
constexpr std::size_t k_answer_bound = 4096;

}  // namespace

std::string lease_folder() {
  const char* folder = std::getenv("MLW_LEASE_DIR");
  return folder && *folder ? folder : k_lease_folder;
}

LeaseRequest lease_request(const RunPlan& plan) {
  LeaseRequest request;
  const ComputeConfig& compute = plan.compute;
  if (compute.gpus_per_run != "all") {
    request.want = "gpu:" + compute.gpus_per_run;
  } else if (compute.max_concurrent_runs > 0) {
    request.want = fmt::format("slot:{}", compute.max_concurrent_runs);
  } else {
    return request;
  }
  request.folder = lease_folder();
  request.foreign = compute.gpu_foreign_use;
  request.run_id = plan.record.run_id;
  request.who = plan.record.user + "@" + plan.record.host;
  return request;
}

std::string lease_script() {
  return std::string(embedded_script("src/exec/lease_dir.sh")) +
         std::string(embedded_script("src/exec/lease.sh"));
}

std::string queue_script(const std::string& folder) {
  return "d=" + shell_quote(folder) + "\n" + std::string(embedded_script("src/exec/lease_dir.sh")) +
         std::string(embedded_script("src/exec/queue.sh"));
}

std::vector<std::string> lease_words(const LeaseRequest& request) {
  return {"mlw-lease", request.folder, request.want, request.run_id, request.who, request.foreign};
}

std::string gpu_list(const std::vector<int>& gpus) {
  std::vector<std::string> words;
  for (const int gpu : gpus) words.push_back(std::to_string(gpu));
  return join(words, ",");
}

LeaseAnswer parse_lease_answer(std::string_view line, bool gpus) {
  LeaseAnswer answer;
  const std::string text = trim(std::string(line));
  const auto space = text.find(' ');
  const std::string word = text.substr(0, space);
  const std::string rest = space == std::string::npos ? "" : text.substr(space + 1);
  if (word == "queued") {
    if (const auto position = parse_integer(rest, 1, 1 << 30)) {
      answer.kind = LeaseAnswer::Kind::Queued;
      answer.position = static_cast<int>(*position);
      return answer;
    }
  } else if (word == "granted" && !rest.empty()) {
    answer.kind = LeaseAnswer::Kind::Granted;
    const auto gap = rest.find(' ');
    answer.text = rest.substr(0, gap);
    if (gap != std::string::npos) answer.ticket = rest.substr(gap + 1);
    if (!gpus) return answer;
    for (const auto& item : split(answer.text, ',')) {
      const auto index = parse_integer(item, 0, 1023);
      if (!index) {
        answer.gpus.clear();
        break;
      }
      answer.gpus.push_back(static_cast<int>(*index));
    }
    if (!answer.gpus.empty()) return answer;
  } else if ((word == "error" || word == "notice") && !rest.empty()) {
    answer.kind = word == "error" ? LeaseAnswer::Kind::Error : LeaseAnswer::Kind::Notice;
    answer.text = printable(rest, k_answer_bound);
    return answer;
  }
  answer.kind = LeaseAnswer::Kind::Error;
  answer.text = fmt::format("the lease answered \"{}\"", printable(text));
  return answer;
}

LocalLease::LocalLease(const LeaseRequest& request) : m_gpus(starts_with(request.want, "gpu:")) {
  int in[2];
  int out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) throw Error("cannot create a pipe: " + errno_text(errno));
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    throw Error("cannot create a pipe: " + errno_text(errno));
  }
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", lease_script()};
  for (auto& word : lease_words(request)) spec.argv.push_back(std::move(word));
  try {
    m_pid = spawn(spec, {.stdin_fd = in[0], .stdout_fd = out[1], .new_session = true});
  } catch (const Error&) {
    for (const int fd : {in[0], in[1], out[0], out[1]}) ::close(fd);
    throw;
  }
  ::close(in[0]);
  ::close(out[1]);
  m_in = in[1];
  m_out = out[0];
}

LocalLease::~LocalLease() {
  end();
}

LeaseAnswer LocalLease::next(const std::function<bool()>& stop) {
  char buffer[512];
  while (true) {
    const auto newline = m_buffer.find('\n');
    if (newline != std::string::npos) {
      const std::string line = m_buffer.substr(0, newline);
      m_buffer.erase(0, newline + 1);
      LeaseAnswer answer = parse_lease_answer(line, m_gpus);
      if (answer.kind == LeaseAnswer::Kind::Granted) m_ticket = answer.ticket;
      return answer;
    }
    if (m_out < 0 || (stop && stop())) {
      end();
      return {};
    }
    pollfd item{m_out, POLLIN, 0};
    const int ready = ::poll(&item, 1, 100);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = ::read(m_out, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      end();
      return {};
    }
    m_buffer.append(buffer, static_cast<std::size_t>(n));
    if (m_buffer.size() > k_answer_bound && m_buffer.find('\n') == std::string::npos) {
      m_buffer.resize(k_answer_bound);  // no line in all that: not an answer
      end();
      return parse_lease_answer(m_buffer, m_gpus);
    }
  }
}

void LocalLease::end() {
  for (int* fd : {&m_in, &m_out}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  if (m_pid > 0) {
    // Its stdin closed by every holder, it ends its group (the holders of the locks) at once.
    // A process the script left behind may hold it still (a lease as long as the script's
    // processes): waited for a moment, then left to init.
    int status = 0;
    for (int i = 0; i < 50; ++i) {
      const pid_t done = ::waitpid(m_pid, &status, WNOHANG);
      if (done == m_pid || (done < 0 && errno != EINTR)) break;
      ::usleep(i < 10 ? 2000 : 20000);
    }
    m_pid = -1;
  }
}

bool take_lease_answer(RunSession& session, const LeaseAnswer& answer) {
  switch (answer.kind) {
    case LeaseAnswer::Kind::Queued:
      if (session.record.status != status::k_queued) {
        session.record.status = status::k_queued;
        session.claim();
        session.save(false);
      }
      session.note(
          fmt::format("Queued (position {} on {})", answer.position, session.plan.target_name));
      return true;
    case LeaseAnswer::Kind::Granted:
      session.record.gpus = answer.gpus;
      return true;
    case LeaseAnswer::Kind::Notice:
      session.note("mlw: warning: " + answer.text);
      return true;
    case LeaseAnswer::Kind::Error:
      session.fail(exit_code::k_cannot_start, "cannot lease: " + answer.text);
      return false;
    case LeaseAnswer::Kind::Ended:
      break;
  }
  if (session.canceled()) {
    // Its wait ended by the cancel: 143, as a script stopped by SIGTERM (docs/gpus.md).
    session.record.exit_code = 143;
    session.cancel_before_start();
  } else {
    session.fail(exit_code::k_cannot_start, "the lease ended before the run started");
  }
  return false;
}

bool take_local_lease(RunSession& session, std::unique_ptr<LocalLease>& lease) {
  const LeaseRequest request = lease_request(session.plan);
  if (request.want.empty()) return true;
  try {
    lease = std::make_unique<LocalLease>(request);
  } catch (const Error& e) {
    session.fail(exit_code::k_cannot_start, std::string("cannot lease: ") + e.what());
    return false;
  }
  while (true) {
    const LeaseAnswer answer = lease->next([&session] { return session.canceled(); });
    if (answer.kind == LeaseAnswer::Kind::Notice) {
      // In the run's log too, as a target's monitor writes it there.
      const int log = ::open((session.plan.run_dir / "driver_log.txt").c_str(),
                             O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (log >= 0) {
        write_fully(log, "mlw: warning: " + answer.text + "\n");
        ::close(log);
      }
    }
    if (!take_lease_answer(session, answer)) return false;
    if (answer.kind == LeaseAnswer::Kind::Granted) return true;
  }
}

}  // namespace mlw
