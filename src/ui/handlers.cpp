// The dashboard's routes: the page, its scripts, and the JSON API over the project's history.
#include <fcntl.h>
#include <httplib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <regex>

#include "dashboard.hpp"
#include "mlw/api/experiment.hpp"
#include "mlw/api/history.hpp"
#include "mlw/history/store.hpp"
#include "mlw/ui/server.hpp"
#include "mlw/util/clock.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/process.hpp"
#include "mlw/util/strings.hpp"

namespace mlw::ui {

std::string html_escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr std::size_t k_log_chunk = 1024 * 1024;
/// A run id as the path has it once decoded: any text without a slash (a project folder's name,
/// and so its run ids, may hold spaces, punctuation and any letter); HistoryStore::load refuses
/// one that is not a plain name.
constexpr const char* k_run_id = "([^/]+)";

void send_json(httplib::Response& res, const Json& json, int status = 200) {
  res.status = status;
  res.set_content(json.dump(-1, ' ', false, Json::error_handler_t::replace), "application/json");
}

/// A big answer (a sweep's thousands of runs) uncompressed: cpp-httplib would compress
/// "application/json" with Brotli at its slowest setting (seconds for a few MB), which loopback
/// does not need; with its charset named the type is not one it compresses.
void send_large_json(httplib::Response& res, const Json& json) {
  res.set_content(json.dump(-1, ' ', false, Json::error_handler_t::replace),
                  "application/json; charset=utf-8");
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  send_json(res, {{"error", message}}, status);
}

/// RFC 5987's attr-char kept, every other byte as %XX.
std::string percent_encode(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (std::isalnum(b) || std::strchr("!#$&+-.^_`|~", c)) {
      out += c;
    } else {
      out += fmt::format("%{:02X}", b);
    }
  }
  return out;
}

std::string_view web_file(std::string_view path) {
  for (const auto& file : embedded_web_files()) {
    if (file.path == path) return file.contents;
  }
  throw NotFoundError(fmt::format("{} is not in this build", path));
}

std::int64_t int_param(const httplib::Request& req, const char* name, std::int64_t fallback,
                       std::int64_t low, std::int64_t high) {
  if (!req.has_param(name)) return fallback;
  const auto value = parse_integer(req.get_param_value(name), std::numeric_limits<long long>::min(),
                                   std::numeric_limits<long long>::max());
  if (!value) throw UsageError(fmt::format("{} must be a whole number", name));
  return std::clamp<std::int64_t>(*value, low, high);
}

double double_param(const httplib::Request& req, const char* name, double fallback) {
  if (!req.has_param(name)) return fallback;
  try {
    return std::stod(req.get_param_value(name));
  } catch (const std::exception&) {
    throw UsageError(fmt::format("{} must be a number", name));
  }
}

Json page_row(const RunPageRow& row, std::int64_t now_ms) {
  const RunSummary& r = row.run;
  const std::int64_t end = r.end_ms ? r.end_ms : now_ms;
  return {{"run_id", r.run_id},
          {"run_number", r.run_number},
          {"script", r.script},
          {"target", r.target},
          {"status", r.status},
          {"created", utc_or_null(r.created_ms)},
          {"duration_s", r.start_ms ? Json((end - r.start_ms) / 1000.0) : Json()},
          {"exit_code", r.exit_code ? Json(*r.exit_code) : Json()},
          {"problem", row.problem.empty() ? Json() : Json(row.problem)},
          {"metric", row.metric ? Json(*row.metric) : Json()},
          {"values", row.values}};
}

void list_page(Dashboard& board, const httplib::Request& req, httplib::Response& res) {
  board.reconcile_now_and_then();
  RunPageQuery query;
  query.status = req.get_param_value("status");
  query.target = req.get_param_value("target");
  query.script = req.get_param_value("script");
  query.text = req.get_param_value("q");
  query.metric = req.get_param_value("metric");
  query.sweep_id = req.get_param_value("sweep");
  // columns=param:lr,metric:loss; where=lr<0.1 (repeatable)
  for (const auto& field : split(req.get_param_value("columns"), ',')) {
    if (!field.empty()) query.columns.push_back(api::parse_run_field(field));
  }
  for (std::size_t i = 0; i < req.get_param_value_count("where"); ++i) {
    const std::string text = req.get_param_value("where", i);
    if (!text.empty()) query.where.push_back(api::parse_run_condition(text));
  }
  if (req.has_param("sort")) query.sort = req.get_param_value("sort");
  query.descending = req.get_param_value("order") != "asc";
  query.offset = int_param(req, "offset", 0, 0, std::numeric_limits<int>::max());
  query.limit = int_param(req, "limit", 50, 1, 500);
  HistoryStore store(board.state_dir);
  const std::int64_t now = board.ctx.clock->now_ms();
  const RunPage page = store.page(query, now);
  Json rows = Json::array();
  for (const auto& row : page.rows) rows.push_back(page_row(row, now));
  send_json(res, {{"total", page.total}, {"offset", query.offset}, {"runs", rows}});
}

void facets(Dashboard& board, httplib::Response& res) {
  HistoryStore store(board.state_dir);
  const RunFacets f = store.facets();
  send_json(res, {{"project", board.project_name},
                  {"statuses", status::all()},
                  {"targets", f.targets},
                  {"scripts", f.scripts},
                  {"metrics", f.metrics},
                  {"params", f.params},
                  {"sweeps", f.sweeps}});
}

void run_record(Dashboard& board, const std::string& id, httplib::Response& res) {
  HistoryStore store(board.state_dir);
  const RunRecord record = store.load(id);
  Json json = record.to_public_json(store.run_dir(id).string());
  std::error_code ec;
  const auto log_size = fs::file_size(store.run_dir(id) / "driver_log.txt", ec);
  json["log_size"] = ec ? 0 : log_size;
  json["live"] = !status::is_final(record.status);
  json["has_build_log"] = fs::is_regular_file(store.run_dir(id) / "build.log", ec);
  json["forwards"] = api::live_forwards(store.run_dir(id));  // experiment forward, now
  send_json(res, json);
}

/// The run's environment build log (its last 4 MiB), as text.
void run_build_log(Dashboard& board, const std::string& id, httplib::Response& res) {
  HistoryStore store(board.state_dir);
  store.load(id);  // a run of this project
  const int fd = open_regular_file(store.run_dir(id) / "build.log");
  if (fd < 0) return send_error(res, 404, "this run has no environment build log");
  std::string text;
  struct stat st {};
  if (::fstat(fd, &st) == 0) {
    const off_t keep = std::min<off_t>(st.st_size, 4 * 1024 * 1024);
    text.resize(static_cast<std::size_t>(keep));
    const ssize_t n = ::pread(fd, text.data(), text.size(), st.st_size - keep);
    text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  }
  ::close(fd);
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_content(text, "text/plain; charset=utf-8");
}

void run_series(Dashboard& board, const std::string& id, const httplib::Request& req,
                httplib::Response& res) {
  HistoryStore store(board.state_dir);
  const RunRecord record = store.load(id);
  const auto entry = board.series(id, status::is_final(record.status));
  const std::size_t points = static_cast<std::size_t>(int_param(req, "points", 2000, 10, 20000));
  const double from = double_param(req, "from", -std::numeric_limits<double>::infinity());
  const double to = double_param(req, "to", std::numeric_limits<double>::infinity());
  const std::string only = req.get_param_value("name");
  Json out = Json::object();
  std::lock_guard lock(entry->mutex);
  for (const auto& [name, series] : entry->reader.series()) {
    if (!only.empty() && name != only) continue;
    const MetricSeries shown = downsample(series, from, to, points);
    out[name] = {
        {"total", series.x.size()}, {"values", series.values}, {"x", shown.x}, {"y", shown.y}};
  }
  send_json(res, {{"run_id", id}, {"skipped", entry->reader.skipped()}, {"series", out}});
}

void run_log(Dashboard& board, const std::string& id, const httplib::Request& req,
             httplib::Response& res) {
  HistoryStore store(board.state_dir);
  // The status is read before the bytes: a run that had ended has its whole log written.
  const RunRecord record = store.load(id);
  const auto offset = int_param(req, "offset", 0, 0, std::numeric_limits<std::int64_t>::max());
  std::string bytes;
  const int fd = ::open((store.run_dir(id) / "driver_log.txt").c_str(), O_RDONLY | O_CLOEXEC);
  std::int64_t size = 0;
  if (fd >= 0) {
    struct stat st {};
    if (::fstat(fd, &st) == 0) size = st.st_size;
    bytes.resize(k_log_chunk);
    const ssize_t n = ::pread(fd, bytes.data(), k_log_chunk, static_cast<off_t>(offset));
    bytes.resize(static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
    ::close(fd);
  }
  res.set_header("X-Run-Status", record.status);
  res.set_header("X-Log-Size", std::to_string(size));
  res.set_content(bytes, "application/octet-stream");
}

/// Sends a file of the run's outputs/: every component opened without following a link.
void run_output(Dashboard& board, const std::string& id, const std::string& path,
                httplib::Response& res) {
  const auto parts = output_path_components(path);
  if (parts.empty()) return send_error(res, 400, "that path is not inside the run's outputs");
  HistoryStore store(board.state_dir);
  store.load(id);  // an unknown run is a 404 with near ids
  int dir = ::open((store.run_dir(id) / "outputs").c_str(),
                   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  for (std::size_t i = 0; dir >= 0 && i + 1 < parts.size(); ++i) {
    const int next =
        ::openat(dir, parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    ::close(dir);
    dir = next;
  }
  const int fd =
      dir >= 0 ? ::openat(dir, parts.back().c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
  if (dir >= 0) ::close(dir);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (fd >= 0) ::close(fd);
    return send_error(res, 404, "no such output file (links are not followed)");
  }
  auto file = std::make_shared<int>(fd);
  res.set_header("Content-Disposition",
                 "attachment; filename*=UTF-8''" + percent_encode(parts.back()));
  res.set_content_provider(
      static_cast<std::size_t>(st.st_size), "application/octet-stream",
      [file](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
        char buffer[65536];
        const ssize_t n =
            ::pread(*file, buffer, std::min(length, sizeof buffer), static_cast<off_t>(offset));
        if (n <= 0) return false;
        return sink.write(buffer, static_cast<std::size_t>(n));
      },
      [file](bool) { ::close(*file); });
}

void cancel_run(Dashboard& board, const std::string& id, const httplib::Request& req,
                httplib::Response& res) {
  if (req.get_header_value("X-MLW-CSRF") != board.csrf) {
    return send_error(res, 403, "the cancel request lacks this page's CSRF token; reload the page");
  }
  HistoryStore store(board.state_dir);
  const RunRecord record = store.load(id);
  if (status::is_final(record.status)) {
    return send_error(res, 409, fmt::format("run {} has already ended ({})", id, record.status));
  }
  board.start_cancel(id);
  send_json(res, {{"run_id", id}, {"canceling", true}}, 202);
}

std::string index_page(const Dashboard& board) {
  std::string page(web_file("web/index.html"));
  const auto put = [&](std::string_view key, const std::string& value) {
    const std::string escaped = html_escape(value);
    for (auto at = page.find(key); at != std::string::npos;
         at = page.find(key, at + escaped.size())) {
      page.replace(at, key.size(), escaped);
    }
  };
  put("{{CSRF}}", board.csrf);
  put("{{PROJECT}}", board.project_name);
  return page;
}

}  // namespace

void Dashboard::add_routes(httplib::Server& server) {
  // Everything under the secret base path (`/<hex>/`): the token's cookie is scoped to it.
  server.Get(base, [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(index_page(*this), "text/html; charset=utf-8");
  });
  const std::vector<std::pair<std::string, std::pair<std::string, std::string>>> statics = {
      {base + "static/app.js", {"web/app.js", "text/javascript"}},
      {base + "static/app.css", {"web/app.css", "text/css"}},
      {base + "static/sweep.js", {"web/sweep.js", "text/javascript"}},
      {base + "static/uplot.js",
       {"web/node_modules/uplot/dist/uPlot.iife.min.js", "text/javascript"}},
      {base + "static/uplot.css", {"web/node_modules/uplot/dist/uPlot.min.css", "text/css"}},
  };
  for (const auto& [url, file] : statics) {
    const std::string path = file.first;
    const std::string type = file.second;
    server.Get(url, [path, type](const httplib::Request&, httplib::Response& res) {
      const auto contents = web_file(path);
      res.set_content(contents.data(), contents.size(), type.c_str());
    });
  }
  server.Get("/favicon.ico",
             [](const httplib::Request&, httplib::Response& res) { res.status = 204; });
  server.Get(base + "api/facets",
             [this](const httplib::Request&, httplib::Response& res) { facets(*this, res); });
  server.Get(base + "api/runs", [this](const httplib::Request& req, httplib::Response& res) {
    list_page(*this, req, res);
  });
  const std::string run = base + "api/runs/" + k_run_id;
  server.Get(run, [this](const httplib::Request& req, httplib::Response& res) {
    run_record(*this, req.matches[1], res);
  });
  server.Get(run + "/series", [this](const httplib::Request& req, httplib::Response& res) {
    run_series(*this, req.matches[1], req, res);
  });
  server.Get(run + "/log", [this](const httplib::Request& req, httplib::Response& res) {
    run_log(*this, req.matches[1], req, res);
  });
  server.Get(run + "/build.log", [this](const httplib::Request& req, httplib::Response& res) {
    run_build_log(*this, req.matches[1], res);
  });
  server.Get(run + "/outputs/(.+)", [this](const httplib::Request& req, httplib::Response& res) {
    run_output(*this, req.matches[1], req.matches[2], res);
  });
  const std::string sweep = base + "api/sweeps/([^/]+)";
  server.Get(sweep, [this](const httplib::Request& req, httplib::Response& res) {
    send_large_json(res, sweep_json(*this, req.matches[1]));
  });
  server.Get(sweep + "/curves", [this](const httplib::Request& req, httplib::Response& res) {
    send_large_json(res, sweep_curves(*this, req.matches[1], req.get_param_value("metric"),
                                      req.get_param_value("group")));
  });
  server.Get(base + "api/gpus", [this](const httplib::Request&, httplib::Response& res) {
    send_large_json(res, gpus_json(*this));
  });
  server.Post(run + "/cancel", [this](const httplib::Request& req, httplib::Response& res) {
    cancel_run(*this, req.matches[1], req, res);
  });
}

}  // namespace mlw::ui
