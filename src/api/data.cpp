#include "mlw/api/data.hpp"

#include <sys/stat.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "data_run.hpp"
#include "mlw/config/targets.hpp"
#include "mlw/data/catalog.hpp"
#include "mlw/exec/data_store.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/util/clock.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/json_text.hpp"
#include "mlw/util/strings.hpp"

namespace mlw::api {

namespace {

std::string megabytes(std::uint64_t bytes) {
  return fmt::format("{:.1f} MB", static_cast<double>(bytes) / 1e6);
}

nlohmann::ordered_json version_json(const DataVersion& v) {
  return {{"name", v.name},
          {"version", v.number},
          {"label", v.label()},
          {"id", v.id},
          {"files", v.files},
          {"bytes", v.bytes},
          {"created", format_utc(v.created_ms)},
          {"message", v.message},
          {"source", json_safe_text(v.source)}};
}

}  // namespace

void data_add(Context& ctx, const std::string& name, const std::string& path,
              const std::string& message) {
  check_data_name(name);
  const fs::path folder = fs::absolute(ctx.working_dir / expand_user(path)).lexically_normal();
  struct stat info {};
  if (::stat(folder.c_str(), &info) != 0) {
    throw Error(fmt::format("{}: no such folder", printable(path, 4096)));
  }
  if (!S_ISDIR(info.st_mode)) {
    throw Error(
        fmt::format("{}: not a folder (a data set is a folder of files)", printable(path, 4096)));
  }
  DataCatalog catalog(ctx.project().state_dir());
  HashReport report;
  const auto started = std::chrono::steady_clock::now();
  const DataManifest manifest =
      hash_folder(folder, catalog.stat_cache(name), ctx.clock->now_ms() * 1'000'000LL, report);
  for (const auto& warning : report.warnings) spdlog::warn("{}", warning);
  if (manifest.files() == 0) {
    throw Error(fmt::format("{} holds no files: nothing to add", printable(path, 4096)));
  }
  bool added = false;
  const std::string source = folder.string();
  const DataVersion v = catalog.add(name, manifest, source, message, ctx.clock->now_ms(), added);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  nlohmann::ordered_json out = version_json(v);
  out["added"] = added;
  out["files_read"] = report.files_read;
  out["bytes_read"] = report.bytes_read;
  if (ctx.output().structured()) return ctx.output().print_object(out);
  *ctx.out << fmt::format(
      "{} {}{}: {} files, {} (read {} files, {} in {:.1f} s; the rest "
      "unchanged since the last add)\n",
      v.label(), v.id.substr(0, 7), added ? "" : " (unchanged: no new version)", v.files,
      megabytes(v.bytes), report.files_read, megabytes(report.bytes_read), seconds);
}

void data_list(Context& ctx, const std::optional<std::string>& name) {
  DataCatalog catalog(ctx.project().state_dir());
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  const auto names = name ? std::vector<std::string>{*name} : catalog.names();
  if (name && catalog.versions(*name).empty()) catalog.resolve(*name);  // says what exists
  for (const auto& one : names) {
    for (const auto& v : catalog.versions(one)) {
      auto row = version_json(v);
      row["id"] = v.id.substr(0, 7);
      if (ctx.output().structured()) row["id"] = v.id;
      row["size"] = megabytes(v.bytes);
      row["targets"] = join(catalog.holders(v.id), ",");
      rows.push_back(std::move(row));
    }
  }
  ctx.output().print_list(rows, {{"label", "Version"},
                                 {"id", "Id"},
                                 {"files", "Files"},
                                 {"size", "Size"},
                                 {"created", "Created"},
                                 {"targets", "Targets"},
                                 {"message", "Message"}});
}

void data_show(Context& ctx, const std::string& spec) {
  DataCatalog catalog(ctx.project().state_dir());
  const DataVersion v = catalog.resolve(spec);
  const DataManifest manifest = catalog.manifest(v);
  nlohmann::ordered_json out = version_json(v);
  out["targets"] = catalog.holders(v.id);
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  const bool all = ctx.output().structured();
  for (const auto& entry : manifest.entries) {
    if (!all && files.size() == 20) break;
    nlohmann::ordered_json item = {{"path", json_safe_text(entry.path)}};
    if (entry.link_target.empty()) {
      item["size"] = entry.size;
      item["mode"] = fmt::format("{:04o}", entry.mode);
      item["sha256"] = entry.sha256;
    } else {
      item["link"] = json_safe_text(entry.link_target);
    }
    files.push_back(std::move(item));
  }
  if (all) {
    out["entries"] = files;
    return ctx.output().print_object(out);
  }
  out["targets"] = join(catalog.holders(v.id), ", ");
  out["size"] = megabytes(v.bytes);
  ctx.output().print_object(out);
  *ctx.out << "\n";
  for (const auto& item : files) {
    *ctx.out << fmt::format("  {:>12}  {}\n",
                            item.contains("size") ? cell_text(item["size"]) : "link",
                            printable(text_from_json(item["path"].get<std::string>()), 4096));
  }
  if (manifest.entries.size() > 20) {
    *ctx.out << fmt::format("  … and {} more (-o json lists every file)\n",
                            manifest.entries.size() - 20);
  }
}

void data_push(Context& ctx, const std::string& spec, const std::string& target) {
  DataCatalog catalog(ctx.project().state_dir());
  const DataVersion v = catalog.resolve(spec);
  const DataManifest manifest = catalog.manifest(v);
  OpenStore open = open_data_store(ctx, target);
  const auto started = std::chrono::steady_clock::now();
  const DataPushResult pushed = push_version(ctx, open.store, open.target, v, manifest, catalog);
  catalog.note_target(v.id, open.target, true);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  nlohmann::ordered_json out = {{"label", v.label()},
                                {"id", v.id},
                                {"target", open.target},
                                {"files_sent", pushed.objects_sent},
                                {"bytes_sent", pushed.bytes_sent},
                                {"path", json_safe_text(pushed.path)}};
  if (ctx.output().structured()) return ctx.output().print_object(out);
  *ctx.out << fmt::format("{} on {}: {} ({} new files, {} sent in {:.1f} s)\n", v.label(),
                          open.target, printable(pushed.path, 4096), pushed.objects_sent,
                          megabytes(pushed.bytes_sent), seconds);
}

void data_verify(Context& ctx, const std::string& target, const std::optional<std::string>& spec) {
  DataCatalog catalog(ctx.project().state_dir());
  std::vector<std::string> ids;
  if (spec) ids.push_back(catalog.resolve(*spec).id);
  OpenStore open = open_data_store(ctx, target);
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  bool damaged = false;
  for (const auto& line : data_step(open.store, "mlw_data_verify", ids)) {
    const DataLabel label = label_of(catalog, line.id);
    nlohmann::ordered_json row = {{"version", label.text}, {"state", line.word}, {"file", ""}};
    if (line.word == "changed" || line.word == "touched" || line.word == "gone") {
      damaged = true;
      row["file"] = json_safe_text(line.word == "changed" ? label.file_of(line.rest) : line.rest);
      catalog.note_target(line.id, open.target, false);
    }
    rows.push_back(std::move(row));
  }
  ctx.output().print_list(rows, {{"version", "Version"}, {"state", "State"}, {"file", "File"}});
  if (damaged) {
    throw Error(
        fmt::format("the data store of {} holds changed files or a removed folder (dropped: "
                    "the next push or submit sends them again)",
                    open.target));
  }
}

void data_du(Context& ctx, const std::string& target) {
  DataCatalog catalog(ctx.project().state_dir());
  OpenStore open = open_data_store(ctx, target);
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  nlohmann::ordered_json total;
  for (const auto& line : data_step(open.store, "mlw_data_du", {})) {
    const auto fields = split(line.rest, ' ');
    if (line.word == "version" && fields.size() == 3) {
      rows.push_back({{"version", label_of(catalog, line.id).text},
                      {"id", line.id},
                      {"files", parse_integer(fields[0], 0, INT64_MAX).value_or(0)},
                      {"bytes", parse_integer(fields[1], 0, INT64_MAX).value_or(0)},
                      {"runs", parse_integer(fields[2], 0, INT64_MAX).value_or(0)}});
    } else if (line.word == "total" && fields.size() == 2) {
      total = {{"objects", parse_integer(line.id, 0, INT64_MAX).value_or(0)},
               {"bytes", parse_integer(fields[0], 0, INT64_MAX).value_or(0)},
               {"free_bytes", parse_integer(fields[1], 0, INT64_MAX).value_or(0)}};
    }
  }
  if (ctx.output().structured()) {
    return ctx.output().print_object(
        {{"target", open.target}, {"versions", rows}, {"store", total}});
  }
  ctx.output().print_list(
      rows,
      {{"version", "Version"}, {"files", "Files"}, {"bytes", "Bytes"}, {"runs", "Runs using it"}});
  if (!total.is_null()) {
    *ctx.out << fmt::format("store: {} objects, {} ({} free)\n", cell_text(total["objects"]),
                            megabytes(total["bytes"].get<std::uint64_t>()),
                            megabytes(total["free_bytes"].get<std::uint64_t>()));
  }
}

void data_rm(Context& ctx, const std::string& spec, const std::optional<std::string>& target) {
  DataCatalog catalog(ctx.project().state_dir());
  if (spec.find('@') == std::string::npos) {
    throw UsageError(
        fmt::format("name the version to remove: {}@N (mlw data list {})", spec, spec));
  }
  const DataVersion v = catalog.resolve(spec);
  if (!target) {
    catalog.forget(v);
    *ctx.out << fmt::format(
        "removed {} from this project (targets keep their copies: mlw data "
        "rm {} -c TARGET)\n",
        v.label(), spec);
    return;
  }
  OpenStore open = open_data_store(ctx, *target);
  for (const auto& line : data_step(open.store, "mlw_data_rm", {v.id}, {4})) {
    if (line.word == "in-use") {
      throw Error(fmt::format("{} on {} is in use by run {}: remove it once they end", v.label(),
                              open.target, trim(line.rest)));
    }
    catalog.note_target(v.id, open.target, false);
    *ctx.out << fmt::format("{} {} from {}\n", line.word == "removed" ? "removed" : "no copy of",
                            v.label(), open.target);
  }
}

void data_gc(Context& ctx, const std::string& target) {
  OpenStore open = open_data_store(ctx, target);
  nlohmann::ordered_json out = {{"target", open.target}};
  for (const auto& line : data_step(open.store, "mlw_data_gc", {})) {
    if (line.word == "removed") {
      out["removed_objects"] = parse_integer(line.id, 0, INT64_MAX).value_or(0);
      out["removed_bytes"] = parse_integer(line.rest, 0, INT64_MAX).value_or(0);
    } else if (line.word == "kept") {
      out["kept_versions"] = parse_integer(line.id, 0, INT64_MAX).value_or(0);
      out["kept_objects"] = parse_integer(line.rest, 0, INT64_MAX).value_or(0);
    }
  }
  if (ctx.output().structured()) return ctx.output().print_object(out);
  *ctx.out << fmt::format("{}: removed {} objects ({}); kept {} versions ({} objects)\n",
                          open.target,
                          cell_text(out.value("removed_objects", nlohmann::ordered_json(0))),
                          megabytes(out.value("removed_bytes", std::uint64_t{0})),
                          cell_text(out.value("kept_versions", nlohmann::ordered_json(0))),
                          cell_text(out.value("kept_objects", nlohmann::ordered_json(0))));
}

}  // namespace mlw::api
