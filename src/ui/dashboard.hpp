#pragma once

// The state the dashboard's request handlers share (private to src/ui/).

#include <atomic>
#include <chrono>
#include <filesystem>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include "mlw/context.hpp"

#include "mlw/history/series.hpp"
#include "mlw/history/store.hpp"
#include "mlw/history/sweep_record.hpp"
#include "mlw/sweep/sweep.hpp"

namespace httplib {
class Server;
}

namespace mlw::ui {

/// Escapes text for HTML (text and double-quoted attribute values).
std::string html_escape(std::string_view text);

/// A run's metric series, read incrementally, shared by the requests that chart it.
struct SeriesEntry {
  std::string run_id;
  std::mutex mutex;
  MetricSeriesReader reader;
};

/// What every handler needs: the project, the secrets, the series cache, the cancels going on.
class Dashboard {
 public:
  /// The dashboard of ctx's project; `token` and `csrf` are the secrets of this server, `base`
  /// the secret path everything is served under (`/<hex>/`, where the token's cookie is scoped).
  Dashboard(Context& ctx, std::string token, std::string csrf, std::string base);
  ~Dashboard();
  Dashboard(const Dashboard&) = delete;
  Dashboard& operator=(const Dashboard&) = delete;

  /// Adds the API routes and the pages to `server`.
  void add_routes(httplib::Server& server);

  /// The series of a run's metrics file, brought up to date (the cache keeps 8 runs).
  std::shared_ptr<SeriesEntry> series(const std::string& run_id, bool ended);
  /// Marks Lost runs at most every 2 s (a dashboard left open keeps the statuses true).
  void reconcile_now_and_then();
  /// Starts canceling a run in the background (the cancel waits up to 20 s for the end).
  void start_cancel(const std::string& run_id);

  Context& ctx;
  const std::filesystem::path state_dir;
  const std::string token;
  const std::string csrf;
  const std::string base;
  std::string project_name;

 private:
  std::mutex m_cache_mutex;
  std::list<std::shared_ptr<SeriesEntry>> m_cache;  ///< most recently used first
  std::mutex m_reconcile_mutex;
  std::chrono::steady_clock::time_point m_last_reconcile{};
  std::mutex m_cancel_mutex;
  std::vector<std::thread> m_cancels;
};

/// The URL to print: the bound address (a wildcard shown as this machine's name) with the token.
std::string dashboard_url(const std::string& host, int port, const std::string& base,
                          const std::string& token);

/// A page in a private folder (0700, the user's) that sends the browser on to `url`: what
/// xdg-open is given, so that the token is on no command line (as Jupyter does). Removed when
/// the dashboard stops.
class RedirectFile {
 public:
  /// Writes the page for the dashboard on `port`; throws mlw::Error when `folder` is not private.
  RedirectFile(const std::filesystem::path& folder, int port, const std::string& url);
  ~RedirectFile();
  RedirectFile(const RedirectFile&) = delete;
  RedirectFile& operator=(const RedirectFile&) = delete;
  /// The page's path.
  const std::filesystem::path& path() const { return m_path; }

 private:
  std::filesystem::path m_path;
};

/// Hands the URL to xdg-open; a thread of its own waits for it and warns when it failed (not
/// installed, no browser), so that the server need not wait.
void open_in_browser(const std::string& url);

/// A sweep for its page: what was swept, and each current run's status, parameters and metrics.
nlohmann::ordered_json sweep_json(Dashboard& board, const std::string& sweep_id);

/// A sweep page's scheduler parts (sweep_schedule.cpp), added to `page` (sweep_json's, its
/// "runs" in the order of `rows`): the best value so far over time; for a scheduled sweep also
/// the scheduler, each rung's tally, each run's budget reached, GPU-seconds and decisions, and
/// the budget spent against every trial given the whole of it.
void add_schedule(Dashboard& board, const SweepRecord& sweep, const SweepSpec& spec,
                  const std::vector<SweepRow>& rows, nlohmann::ordered_json& page);

/// Every GPU of each project target that leases them (`computetarget gpus`), one request at a
/// time: [{target, host, gpus} or {target, error}].
nlohmann::ordered_json gpus_json(Dashboard& board);
/// A metric's curves over the sweep's runs grouped by the parameter `group` (empty: one group):
/// per group, at each step, the mean, min and max; and each run's own curve (the first 300).
nlohmann::ordered_json sweep_curves(Dashboard& board, const std::string& sweep_id,
                                    const std::string& metric, const std::string& group);

}  // namespace mlw::ui
