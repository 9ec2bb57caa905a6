#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "mlw/exec/data_store.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

/// The most held between the other store and the push (the two run at their own pace).
constexpr std::size_t k_held = 8 << 20;

}  // namespace

struct DataPull::Impl {
  std::mutex mutex;
  std::condition_variable changed;
  std::string held;  ///< received, not yet read (from `offset`)
  std::size_t offset = 0;
  std::uint64_t received = 0;
  std::uint64_t total = 0;
  bool done = false;
  bool stop = false;
  std::exception_ptr failure;
  std::string host;
  std::thread thread;
};

DataPull::DataPull(DataStore& from, const std::vector<std::string>& names, std::uint64_t total)
    : m_impl(std::make_unique<Impl>()) {
  Impl& s = *m_impl;
  s.total = total;
  s.host = from.shell->host();
  std::string list;
  for (const auto& name : names) list += name + "\n";
  s.thread = std::thread([&s, &from, list = std::move(list)] {
    try {
      ShellStreams streams;
      std::size_t offset = 0;
      streams.read_input = [&](char* buffer, std::size_t size) {
        return read_held(list, offset, buffer, size);
      };
      std::string errors;
      streams.on_errors = [&](std::string_view chunk) {
        if (errors.size() < 4096) errors.append(chunk.substr(0, 4096 - errors.size()));
      };
      streams.on_output = [&](std::string_view chunk) {
        std::unique_lock lock(s.mutex);
        s.changed.wait(lock, [&] { return s.stop || s.held.size() - s.offset < k_held; });
        if (s.stop) throw Error("stopped");
        if (s.received + chunk.size() > s.total) {
          throw Error(fmt::format("{}: its data store sent more than the {} bytes asked for",
                                  s.host, s.total));
        }
        if (s.offset > 0) {
          s.held.erase(0, s.offset);
          s.offset = 0;
        }
        s.held.append(chunk);
        s.received += chunk.size();
        s.changed.notify_all();
      };
      const ShellResult result =
          from.shell->run(script_call("src/data/data.sh", {"mlw_data_cat", from.store}), streams);
      if (result.exit_code != 0) {
        throw Error(fmt::format("{}: reading its data store {} failed (exit {}): {}", s.host,
                                from.store, result.exit_code, printable(trim(errors), 400)));
      }
    } catch (...) {
      const std::lock_guard lock(s.mutex);
      if (!s.stop) s.failure = std::current_exception();
    }
    const std::lock_guard lock(s.mutex);
    s.done = true;
    s.changed.notify_all();
  });
}

DataPull::~DataPull() {
  {
    const std::lock_guard lock(m_impl->mutex);
    m_impl->stop = true;
    m_impl->changed.notify_all();
  }
  m_impl->thread.join();
}

std::size_t DataPull::read(char* buffer, std::size_t size) {
  Impl& s = *m_impl;
  std::unique_lock lock(s.mutex);
  s.changed.wait(lock, [&] { return s.offset < s.held.size() || s.done; });
  if (s.offset == s.held.size()) {
    if (s.failure) std::rethrow_exception(s.failure);
    throw Error(fmt::format("{}: its data store sent {} of the {} bytes asked for", s.host,
                            s.received, s.total));
  }
  const std::size_t n = std::min(size, s.held.size() - s.offset);
  std::memcpy(buffer, s.held.data() + s.offset, n);
  s.offset += n;
  s.changed.notify_all();
  return n;
}

}  // namespace mlw
