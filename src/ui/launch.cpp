// `mlw history ui` in mlw: the dashboard's server lives in mlw-ui (beside mlw in a build tree,
// ../libexec/mlw/ when installed), which this runs in mlw's place with the same arguments.
#include <stdlib.h>
#include <unistd.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "mlw/ui/server.hpp"
#include "mlw/util/error.hpp"

namespace mlw::ui {

namespace {

namespace fs = std::filesystem;

/// This process's arguments, as the kernel has them.
std::vector<std::string> own_arguments() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  std::string word;
  for (const char c : all) {
    if (c == '\0') {
      args.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  return args;
}

}  // namespace

void history_ui(Context& ctx, const UiOptions&) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find the mlw program's folder (/proc/self/exe)");
  const fs::path folder = self.parent_path();
  const std::vector<fs::path> candidates = {folder / "mlw-ui",
                                            folder.parent_path() / "libexec" / "mlw" / "mlw-ui"};
  std::vector<std::string> args = own_arguments();
  if (args.empty()) throw Error("cannot read mlw's own arguments (/proc/self/cmdline)");
  ctx.out->flush();
  ctx.err->flush();
  // malloc backs its big blocks (a million-point series) with transparent huge pages where the
  // kernel offers them on request: a fifth as many page faults on a run's first chart. Only
  // when the user has set no tunables of their own.
  ::setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1", 0);
  for (const auto& program : candidates) {
    if (::access(program.c_str(), X_OK) != 0) continue;
    args[0] = program.string();
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    ::execv(program.c_str(), argv.data());
    throw Error(fmt::format("cannot start the dashboard's server {}: {}", program.string(),
                            errno_text(errno)));
  }
  throw Error(fmt::format(
      "the dashboard's server is not installed (looked for {} and {}); install mlw with "
      "`cmake --install` or its .deb, which put it in libexec/mlw/",
      candidates[0].string(), candidates[1].string()));
}

}  // namespace mlw::ui
