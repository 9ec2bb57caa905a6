// `mlw history ui`: the dashboard's HTTP server — binding, the token, the Host check, limits on
// threads and connections, and Ctrl-C.
#include "mlw/ui/server.hpp"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>

#include "dashboard.hpp"
#include "mlw/api/experiment.hpp"
#include "mlw/history/store.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/process.hpp"
#include "mlw/util/random.hpp"
#include "mlw/util/strings.hpp"

namespace mlw::ui {

namespace {

constexpr int k_default_port = 8717;
constexpr int k_default_ports = 10;
constexpr std::size_t k_threads = 24;
constexpr std::size_t k_cache_runs = 8;
/// The longest a request may take to arrive: a client that sends slowly is cut off.
constexpr auto k_request_time = std::chrono::seconds(10);
/// How long a send may wait for the client to read.
constexpr auto k_write_wait = std::chrono::seconds(5);
/// How long a kept-alive connection may wait idle for its next request.
constexpr auto k_keep_alive = std::chrono::seconds(2);
constexpr int k_requests_per_connection = 100;
/// How long a worker waits for a request's head before the connection waits without one.
constexpr auto k_head_wait = std::chrono::milliseconds(300);
/// How long a worker waits for a kept-alive connection's next request before it waits without.
constexpr auto k_next_wait = std::chrono::milliseconds(20);
/// The longest request head (httplib's own limit is the same order).
constexpr std::size_t k_max_head = 64 * 1024;
/// At most this many connections wait for their request without a worker.
constexpr std::size_t k_max_waiting = 2048;

/// Compares secrets in time that does not depend on where they differ.
bool same_secret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

/// The value of cookie `name` in a Cookie header, or "".
std::string cookie_value(const std::string& header, const std::string& name) {
  for (const auto& part : split(header, ';')) {
    const std::string item(trim(part));
    if (starts_with(item, name + "=")) return item.substr(name.size() + 1);
  }
  return "";
}

/// The socket of one request: reads wait for a deadline fixed when the request began, so a
/// client that sends slowly (a byte now and then) holds a thread for at most k_request_time.
class DeadlineStream : public httplib::Stream {
 public:
  DeadlineStream(int sock, std::chrono::steady_clock::time_point deadline)
      : m_sock(sock), m_deadline(deadline) {}
  bool is_readable() const override { return wait_for(POLLIN, remaining()); }
  bool is_writable() const override { return wait_for(POLLOUT, k_write_wait); }
  ssize_t read(char* ptr, size_t size) override {
    if (!is_readable()) return -1;
    return ::recv(m_sock, ptr, size, 0);
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    return ::send(m_sock, ptr, size, MSG_NOSIGNAL);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    address(::getpeername, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    address(::getsockname, ip, port);
  }
  int socket() const override { return m_sock; }

 private:
  std::chrono::milliseconds remaining() const {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        m_deadline - std::chrono::steady_clock::now());
    return std::max(left, std::chrono::milliseconds(0));
  }
  bool wait_for(short events, std::chrono::milliseconds limit) const {
    pollfd fd{m_sock, events, 0};
    int rc;
    do {
      rc = ::poll(&fd, 1, static_cast<int>(limit.count()));
    } while (rc < 0 && errno == EINTR);
    return rc > 0;
  }
  void address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
    sockaddr_storage addr{};
    socklen_t length = sizeof addr;
    ip.clear();
    port = 0;
    if (get(m_sock, reinterpret_cast<sockaddr*>(&addr), &length) != 0) return;
    char text[INET6_ADDRSTRLEN] = {};
    if (addr.ss_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
      inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
      port = ntohs(in->sin_port);
    } else if (addr.ss_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
      inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
      port = ntohs(in6->sin6_port);
    }
    ip = text;
  }
  int m_sock;
  std::chrono::steady_clock::time_point m_deadline;
};

/// True when a whole request head (up to its blank line) is waiting on `sock`, or the client
/// closed or sent more than a head may be (httplib then answers or closes); never reads it.
bool head_here(int sock) {
  static thread_local char buffer[k_max_head];
  const ssize_t n = ::recv(sock, buffer, sizeof buffer, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;
  if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
  return static_cast<std::size_t>(n) == sizeof buffer ||
         std::string_view(buffer, static_cast<std::size_t>(n)).find("\r\n\r\n") !=
             std::string_view::npos;
}

/// httplib's server with mlw's own connection loop: each request must arrive whole within
/// k_request_time, an idle kept-alive connection is closed after k_keep_alive, and at most
/// k_requests_per_connection requests share one connection. A request whose head has not
/// arrived within k_head_wait waits without a worker: one thread looks at all such connections
/// and hands each to the pool once its head is there, so that slow clients (another local
/// user's, a byte a second) cannot hold every worker and keep others out.
class GuardedServer : public httplib::Server {
 public:
  GuardedServer() {
    new_task_queue = [this] {
      m_workers = new Workers(*this);
      return m_workers;
    };
  }
  ~GuardedServer() override { stop_waiting(); }
  /// A connection waiting for a request's head without a worker.
  struct Waiting {
    int sock;
    std::chrono::steady_clock::time_point deadline;  ///< closed after it
    int served;                                      ///< requests it has had
  };
  GuardedServer(const GuardedServer&) = delete;
  GuardedServer& operator=(const GuardedServer&) = delete;

  /// Closes the connections still waiting for their request (before the server stops).
  void stop_waiting() {
    {
      std::lock_guard lock(m_mutex);
      m_stopping = true;
    }
    if (m_waiter.joinable()) m_waiter.join();
    for (const Waiting& waiting : m_waiting) ::close(waiting.sock);
    m_waiting.clear();
  }

 private:
  /// The server's workers (httplib owns and shuts them down): the waiting thread is stopped
  /// before they are, so that it never hands a connection to workers that are gone.
  class Workers : public httplib::TaskQueue {
   public:
    explicit Workers(GuardedServer& server) : m_server(server), m_pool(k_threads) {}
    void enqueue(std::function<void()> fn) override { m_pool.enqueue(std::move(fn)); }
    void shutdown() override {
      m_server.stop_waiting();
      m_pool.shutdown();
    }

   private:
    GuardedServer& m_server;
    httplib::ThreadPool m_pool;
  };

  bool process_and_close_socket(int sock) override { return serve(sock, 0); }

  /// Serves the requests of a connection from its `first`; a connection idle between two
  /// requests (kept alive, up to k_keep_alive) waits without a worker too, so that 500 browsers'
  /// kept-alive connections do not hold the 24 workers while they think.
  bool serve(int sock, int first) {
    bool ok = true;
    for (int served = first; served < k_requests_per_connection && is_running(); ++served) {
      const auto started = std::chrono::steady_clock::now();
      if (served > first && !head_within(sock, k_next_wait)) {
        if (wait_without_worker(sock, started + k_keep_alive, served)) return true;
        const auto idle = std::chrono::duration_cast<std::chrono::milliseconds>(k_keep_alive);
        pollfd fd{sock, POLLIN, 0};
        if (::poll(&fd, 1, static_cast<int>(idle.count())) <= 0) break;
      }
      if (served == first && !head_within(sock, k_head_wait) &&
          wait_without_worker(sock, started + k_request_time, served)) {
        return true;
      }
      DeadlineStream stream(sock, started + k_request_time);
      bool closed = false;
      ok = process_request(stream, served + 1 == k_requests_per_connection, closed, nullptr);
      if (!ok || closed) break;
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return ok;
  }

  /// Waits up to `limit` for a whole request head on `sock`.
  static bool head_within(int sock, std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!head_here(sock)) {
      if (std::chrono::steady_clock::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }

  /// Hands `sock` to the waiting thread until `deadline` (its `served` requests done); false when
  /// it cannot take it (too many waiting, or the server stops): the worker then goes on with it.
  bool wait_without_worker(int sock, std::chrono::steady_clock::time_point deadline, int served) {
    std::lock_guard lock(m_mutex);
    if (m_stopping || !m_workers || m_waiting.size() >= k_max_waiting) return false;
    m_waiting.push_back({sock, deadline, served});
    if (!m_waiter.joinable()) m_waiter = std::thread([this] { watch(); });
    return true;
  }

  /// The waiting thread: every 20 ms, each connection whose head has come goes to the pool; one
  /// past its deadline is closed.
  void watch() {
    while (true) {
      std::vector<Waiting> ready;
      {
        std::lock_guard lock(m_mutex);
        if (m_stopping) return;
        const auto now = std::chrono::steady_clock::now();
        for (auto it = m_waiting.begin(); it != m_waiting.end();) {
          if (head_here(it->sock)) {
            ready.push_back(*it);
          } else if (now > it->deadline) {
            ::shutdown(it->sock, SHUT_RDWR);
            ::close(it->sock);
          } else {
            ++it;
            continue;
          }
          it = m_waiting.erase(it);
        }
      }
      for (const Waiting& waiting : ready) {
        m_workers->enqueue([this, waiting] { serve(waiting.sock, waiting.served); });
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  Workers* m_workers = nullptr;  ///< made by new_task_queue; httplib owns it
  std::mutex m_mutex;
  bool m_stopping = false;
  std::vector<Waiting> m_waiting;
  std::thread m_waiter;
};

/// Prints the URL, opens it when asked, and serves until SIGINT, SIGTERM or SIGHUP.
void serve_until_signal(Context& ctx, const UiOptions& options, GuardedServer& server, int port,
                        const Dashboard& board, const sigset_t& stop_signals) {
  const std::string url = dashboard_url(options.host, port, board.base, board.token);
  if (is_wildcard(options.host)) {
    spdlog::warn(
        "--host {} serves the dashboard to every network this machine is on; anyone "
        "with the token can read the history and cancel runs",
        options.host);
  }
  *ctx.out << url << "\n";
  ctx.out->flush();
  if (!ctx.quiet) {
    *ctx.err << fmt::format("Serving the history of {} at {} (Ctrl-C to stop)\n",
                            ctx.project().name, url);
    ctx.err->flush();
  }
  std::optional<RedirectFile> redirect;
  if (options.open) {
    try {
      redirect.emplace(ctx.config_dir / "ui", port, url);
      open_in_browser("file://" + redirect->path().string());
    } catch (const Error& e) {
      spdlog::warn("could not open a browser ({}); open the URL above yourself", e.what());
    }
  }
  std::atomic<bool> finished{false};
  std::thread waiter([&] {
    const timespec tick{0, 200 * 1000 * 1000};
    while (!finished) {
      if (sigtimedwait(&stop_signals, nullptr, &tick) > 0) {
        server.stop_waiting();
        server.stop();
        return;
      }
    }
  });
  const bool served = server.listen_after_bind();
  finished = true;
  waiter.join();
  if (!served) throw Error("the dashboard's server stopped unexpectedly");
  if (!ctx.quiet) *ctx.err << "Dashboard stopped\n";
}

}  // namespace

Dashboard::Dashboard(Context& context, std::string access_token, std::string csrf_token,
                     std::string base_path)
    : ctx(context),
      state_dir(context.project().state_dir()),
      token(std::move(access_token)),
      csrf(std::move(csrf_token)),
      base(std::move(base_path)),
      project_name(context.project().name) {}

Dashboard::~Dashboard() {
  std::lock_guard lock(m_cancel_mutex);
  for (auto& thread : m_cancels) thread.join();
}

std::shared_ptr<SeriesEntry> Dashboard::series(const std::string& run_id, bool ended) {
  std::shared_ptr<SeriesEntry> entry;
  {
    std::lock_guard lock(m_cache_mutex);
    const auto found = std::find_if(m_cache.begin(), m_cache.end(),
                                    [&](const auto& e) { return e->run_id == run_id; });
    if (found != m_cache.end()) {
      entry = *found;
      m_cache.erase(found);
    } else {
      entry = std::make_shared<SeriesEntry>();
      entry->run_id = run_id;
    }
    m_cache.push_front(entry);
    if (m_cache.size() > k_cache_runs) m_cache.pop_back();
  }
  std::lock_guard lock(entry->mutex);
  entry->reader.update(state_dir / "runs" / run_id / "metrics.jsonl", ended);
  return entry;
}

void Dashboard::reconcile_now_and_then() {
  std::lock_guard lock(m_reconcile_mutex);
  const auto now = std::chrono::steady_clock::now();
  if (now - m_last_reconcile < std::chrono::seconds(2)) return;
  m_last_reconcile = now;
  HistoryStore store(state_dir);
  store.reconcile_lost(host_name());
}

void Dashboard::start_cancel(const std::string& run_id) {
  std::lock_guard lock(m_cancel_mutex);
  m_cancels.emplace_back([this, run_id] {
    // A context of its own: the cancel's messages go nowhere near the dashboard's stdout.
    Context own = ctx;
    std::ostringstream out;
    std::ostringstream err;
    own.out = &out;
    own.err = &err;
    own.quiet = true;
    own.output_format = OutputFormat::Json;
    try {
      api::cancel(own, run_id);
      spdlog::info("run {} canceled from the dashboard", run_id);
    } catch (const std::exception& e) {
      spdlog::warn("canceling run {} from the dashboard: {}", run_id, e.what());
    }
  });
}

namespace {

/// The server's limits, socket options and the headers of every answer.
void configure(GuardedServer& server) {
  server.set_payload_max_length(64 * 1024);
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a second dashboard (or
  // any process of the user) binds the same port and takes a share of its connections.
  server.set_socket_options([](int sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server.set_keep_alive_timeout(k_keep_alive.count());  // what the Keep-Alive header says
  server.set_keep_alive_max_count(k_requests_per_connection);
  server.set_default_headers(
      {{"X-Content-Type-Options", "nosniff"},
       {"X-Frame-Options", "DENY"},
       {"Referrer-Policy", "no-referrer"},
       {"Cache-Control", "no-store"},
       {"Content-Security-Policy",
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"}});
  server.set_logger([](const httplib::Request& req, const httplib::Response& res) {
    spdlog::debug("{} {} -> {}", req.method, req.path, res.status);
  });
}

/// Binds the port the options ask for (-1: the first free default port); returns it.
int bind_port(GuardedServer& server, const UiOptions& options) {
  int port = options.port;
  bool bound = false;
  if (port == -1) {
    for (int p = k_default_port; !bound && p < k_default_port + k_default_ports; ++p) {
      bound = server.bind_to_port(options.host, p);
      if (bound) port = p;
    }
  } else if (port == 0) {
    port = server.bind_to_any_port(options.host);
    bound = port > 0;
  } else {
    bound = server.bind_to_port(options.host, port);
  }
  if (bound) return port;
  throw Error(options.port == -1
                  ? fmt::format("cannot listen on {} ports {}-{} (all in use?); choose one with "
                                "--port, or --port 0 for any free port",
                                options.host, k_default_port, k_default_port + k_default_ports - 1)
                  : fmt::format("cannot listen on {} port {}: in use, or not an address of "
                                "this machine; choose another with --port (0: any free port)",
                                options.host, options.port));
}

/// Every request passes here first: the Host header, the token (from the URL or the cookie),
/// and the token's move from the address bar into a cookie.
void guard_requests(GuardedServer& server, const Dashboard& board, const UiOptions& options,
                    int port) {
  // The cookie is scoped to the dashboard's secret base path: cookies are not port-scoped, so
  // one with Path=/ would go to every server on this address (another user's too); one scoped to
  // /<random>/ goes only where that path is asked for, which no other server learns.
  const std::string cookie_name = fmt::format("mlw_token_{}", port);
  server.set_pre_routing_handler([&board, &options, cookie_name, port, machine = host_name()](
                                     const httplib::Request& req, httplib::Response& res) {
    if (!host_header_allowed(req.get_header_value("Host"), options.host, port, machine)) {
      res.status = 403;
      res.set_content("mlw: refused: the Host header does not name this server\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    // A browser asks for /favicon.ico at the root, outside the path the cookie goes to: an
    // empty answer, which tells nothing.
    if (req.path == "/favicon.ico") return httplib::Server::HandlerResponse::Unhandled;
    const std::string given = req.has_param("token")
                                  ? req.get_param_value("token")
                                  : cookie_value(req.get_header_value("Cookie"), cookie_name);
    if (!same_secret(given, board.token)) {
      res.status = 403;
      res.set_content(
          "mlw: this dashboard needs its token: open the URL that `mlw history ui` printed\n",
          "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    const std::string page = board.base.substr(0, board.base.size() - 1);
    if (req.has_param("token") && req.method == "GET" &&
        (req.path == board.base || req.path == page || req.path == "/")) {
      // The token moves into a cookie and out of the address bar (and the history).
      res.set_header("Set-Cookie", fmt::format("{}={}; Path={}; HttpOnly; SameSite=Strict",
                                               cookie_name, board.token, board.base));
      res.set_redirect(board.base, 303);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
}

}  // namespace

void history_ui(Context& ctx, const UiOptions& options) {
  serve_dashboard(ctx, options);
}

void serve_dashboard(Context& ctx, const UiOptions& options) {
  if (options.port < -1 || options.port > 65535) {
    throw UsageError("--port must be 0 (any free port) to 65535");
  }
  // The stop signals go to one thread that stops the server: blocked here, before any thread
  // starts, so that no thread of the server is killed by them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  for (const int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stop_signals, s);
  sigset_t previous;
  pthread_sigmask(SIG_BLOCK, &stop_signals, &previous);
  struct Restore {
    sigset_t mask;
    ~Restore() { pthread_sigmask(SIG_SETMASK, &mask, nullptr); }
  } restore{previous};
  const std::string what = "the dashboard's token";
  Dashboard board(ctx, random_hex(24, what), random_hex(24, what),
                  "/" + random_hex(16, what) + "/");
  GuardedServer server;
  configure(server);
  const int port = bind_port(server, options);
  guard_requests(server, board, options, port);
  server.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr error) {
        std::string message;
        res.status = http_status_of(error, message);
        res.set_content(nlohmann::json({{"error", message}})
                            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                        "application/json");
      });
  board.add_routes(server);
  serve_until_signal(ctx, options, server, port, board, stop_signals);
}

}  // namespace mlw::ui
