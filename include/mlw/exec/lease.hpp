#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mlw/exec/executor.hpp"

// A run's lease of GPUs, or of a run slot (maxConcurrentRuns), on the machine it runs on
// (docs/gpus.md): src/exec/lease.sh, run by the run's own process there (its monitor, or the
// supervisor on this machine), holds flock(1)s in a machine-wide folder for as long as that
// process lives. These are the requests, its answers, and its owner on this machine.

namespace mlw {

class RunSession;

/// The lease folder when MLW_LEASE_DIR does not name another: machine-wide, mode 1777.
inline constexpr const char* k_lease_folder = "/tmp/mlw-leases";

/// The lease folder on a target: MLW_LEASE_DIR, else k_lease_folder (what runs lease in and
/// `experiment queue` reads).
std::string lease_folder();

/// What a run asks of the leases of its machine.
struct LeaseRequest {
  std::string want;     ///< "gpu:N" or "slot:M"; empty: the run takes no lease
  std::string folder;   ///< the lease folder there
  std::string foreign;  ///< gpuForeignUse: wait or ignore
  std::string run_id;   ///< shown by `experiment queue`
  std::string who;      ///< user@host of the submitting mlw, shown by `experiment queue`
};

/// The lease `plan` asks for: gpusPerRun N (gpu:N), else maxConcurrentRuns M (slot:M), else none.
LeaseRequest lease_request(const RunPlan& plan);

/// The body of the lease: exec/lease_dir.sh, then exec/lease.sh (`sh -c BODY mlw-lease …`).
std::string lease_script();

/// What `experiment queue` runs on a target: the tickets of the lease folder `folder` where it
/// is shared, and of the user's own (exec/lease_dir.sh, exec/queue.sh).
std::string queue_script(const std::string& folder);

/// lease.sh's words after its body (`sh -c BODY mlw-lease …`).
std::vector<std::string> lease_words(const LeaseRequest& request);

/// One line of lease.sh's answer.
struct LeaseAnswer {
  enum class Kind {
    Queued,   ///< it waits, at `position` (1: next)
    Granted,  ///< held: `gpus` (empty for a slot)
    Error,    ///< it cannot lease: `text` says why
    Notice,   ///< it leases, but not as asked: `text` says how (a folder that is not shared)
    Ended,    ///< it ended without a grant (stopped)
  };
  Kind kind = Kind::Ended;
  int position = 0;
  std::vector<int> gpus;
  std::string text;    ///< Granted: the list as said ("1,3"); Error, Notice: what it says
  std::string ticket;  ///< Granted: the ticket's folder on the machine ("" where not said)
};

/// Reads one line lease.sh printed (without its newline); anything else is an Error.
LeaseAnswer parse_lease_answer(std::string_view line, bool gpus);

/// The GPU indexes as the run's variables and docker take them: "1,3".
std::string gpu_list(const std::vector<int>& gpus);

/// A lease held on this machine by this process (the local and docker kinds' supervisors):
/// lease.sh in a session of its own, its stdin a pipe that only this process holds, so that the
/// lease ends when this process ends, however it ends.
class LocalLease {
 public:
  /// Starts lease.sh; throws mlw::Error when it cannot.
  explicit LocalLease(const LeaseRequest& request);
  ~LocalLease();
  LocalLease(const LocalLease&) = delete;
  LocalLease& operator=(const LocalLease&) = delete;
  /// The next answer; `stop` is asked every 100 ms while none comes (true: the lease is ended
  /// and Ended returned).
  LeaseAnswer next(const std::function<bool()>& stop);
  /// Gives the lease back (the GPUs are free for the next run at once, unless the script's
  /// processes still hold holder()).
  void end();
  /// The descriptor that holds the lease (-1 once ended): given to the script (SpawnOptions::
  /// keep_fd), the lease lasts while the script's processes or this object keep it, so that a
  /// supervisor killed with SIGKILL does not free the GPUs of a script that goes on.
  int holder() const { return m_in; }
  /// The ticket's folder the grant named ("" before it, or where it named none).
  const std::string& ticket() const { return m_ticket; }

 private:
  pid_t m_pid = -1;
  int m_in = -1;   ///< lease.sh's stdin: the lease lasts while it is open
  int m_out = -1;  ///< lease.sh's answers
  bool m_gpus = false;
  std::string m_buffer;
  std::string m_ticket;
};

/// Takes one answer of a run's lease: Queued recorded and said ("Queued (position 3 on T)"),
/// Granted kept in the record (its GPUs); false when the run will not start, recorded (an Error
/// fails it; an end without a grant is Canceled where cancel asked for it, else fails it).
bool take_lease_answer(RunSession& session, const LeaseAnswer& answer);

/// Takes the lease the run asks for on this machine (none: true at once) into `lease`, waiting
/// for it answer after answer (a cancel ends the wait). True once granted; false when the run
/// will not start (recorded).
bool take_local_lease(RunSession& session, std::unique_ptr<LocalLease>& lease);

}  // namespace mlw
