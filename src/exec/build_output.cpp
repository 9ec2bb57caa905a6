// Reading a failed environment build's output: the install script's marked reason, the last
// lines as a person reads them, pip's or conda's own error, and a base image that could not be
// had.
#include "mlw/exec/build_output.hpp"

#include <fmt/format.h>

#include <vector>

#include "mlw/util/strings.hpp"

namespace mlw {

BuildFailure build_failure_reason(const std::string& output) {
  static const std::string marker = "mlw-error[";
  std::size_t at = 0;
  while ((at = output.find(marker, at)) != std::string::npos) {
    // The marker counts only where the install script echoed it: at the start of a line.
    if (at == 0 || output[at - 1] == '\n' || output[at - 1] == ' ') {
      const std::size_t close = output.find("]: ", at);
      const std::size_t end = std::min(output.find('\n', at), output.size());
      if (close != std::string::npos && close < end) {
        const std::string digits = output.substr(at + marker.size(), close - at - marker.size());
        // Only the codes install.sh writes: the output comes from the target, which may lie.
        if (digits == "125" || digits == "127") {
          return {std::stoi(digits), output.substr(close + 3, end - close - 3)};
        }
      }
    }
    at += marker.size();
  }
  return {};
}

namespace {

/// `text` without terminal escape sequences (ESC [ … letter), as pip and conda colour them.
std::string without_escapes(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
      i += 2;
      while (i < text.size() && !(text[i] >= '@' && text[i] <= '~')) ++i;
      continue;
    }
    if (text[i] != '\r') out += text[i];
  }
  return out;
}

/// Lines of a build's output a person needs: not Docker's deprecation notice of its builder.
std::vector<std::string> readable_lines(const std::string& output) {
  std::vector<std::string> lines;
  for (auto& line : split(without_escapes(output), '\n')) {
    if (starts_with(line, "DEPRECATED: The legacy builder is deprecated") ||
        starts_with(line, "            Install the buildx component") ||
        starts_with(line, "            BuildKit is currently disabled") ||
        starts_with(line, "            https://docs.docker.com/go/buildx/") || trim(line).empty()) {
      continue;
    }
    lines.push_back(line);
  }
  return lines;
}

}  // namespace

std::string build_line_for_terminal(const std::string& line) {
  const std::vector<std::string> kept = readable_lines(line);
  if (kept.empty() && !trim(line).empty()) return "";
  const auto run = line.find(" : RUN [\"/bin/sh\",\"/mlw/env/install.sh\"");
  if (run != std::string::npos && starts_with(line, "Step ")) {
    return line.substr(0, run) + " : RUN /bin/sh /mlw/env/install.sh (mlw's install script)";
  }
  return line;
}

std::string build_output_tail(const std::string& output, std::size_t count) {
  std::vector<std::string> lines = readable_lines(output);
  if (lines.size() > count) lines.erase(lines.begin(), lines.end() - static_cast<long>(count));
  std::string out;
  for (const auto& line : lines) out += line.substr(0, 400) + "\n";
  return out;
}

std::string ssh_command_for(const std::string& host, const std::string& user) {
  std::string name = host;
  std::string port;
  const auto colon = host.rfind(':');
  const bool bracketed = !host.empty() && host[0] == '[';
  if (colon != std::string::npos && (bracketed || host.find(':') == colon) &&
      parse_integer(host.substr(colon + 1), 1, 65535)) {
    name = host.substr(0, colon);
    port = host.substr(colon + 1);
  }
  if (name.size() > 2 && name.front() == '[' && name.back() == ']') {
    name = name.substr(1, name.size() - 2);
  }
  const bool default_port = port.empty() || port == "22";
  return "ssh" + (default_port ? std::string() : " -p " + port) + " " +
         (user.empty() ? std::string() : user + "@") + name;
}

std::string base_image_problem(const std::string& output, const std::string& image,
                               const std::string& host, const std::string& user) {
  const std::string text = without_escapes(output);
  // The base image is pulled at the FROM step (the first), before any line of install.sh.
  const auto from = text.find("FROM " + image);
  if (from == std::string::npos || text.find("Step 2/", from) != std::string::npos ||
      text.find("install.sh", from) != std::string::npos) {
    return "";
  }
  std::string said;
  for (const auto& line : split(text.substr(from), '\n')) {
    const std::string trimmed(trim(line));
    if (starts_with(trimmed, "Get \"https://") || trimmed.find("pull access denied") == 0 ||
        trimmed.find("manifest") != std::string::npos ||
        trimmed.find("not found") != std::string::npos ||
        starts_with(trimmed, "Error response from daemon") || starts_with(trimmed, "ERROR")) {
      said = trimmed.substr(0, 300);
      break;
    }
  }
  if (said.empty()) return "";
  const bool here = host == "this machine";
  const std::string fix =
      here ? "set baseDockerImage to an image this machine has (docker images), or docker pull "
             "or docker load it first"
           : fmt::format(
                 "set baseDockerImage to an image {} has (docker images there), or "
                 "pull or load it there first (docker save {} | {} docker load)",
                 host, image, ssh_command_for(host, user));
  for (const char* offline : {"network is unreachable", "no such host", "i/o timeout",
                              "Temporary failure in name resolution", "connection refused",
                              "dial tcp", "TLS handshake timeout"}) {
    if (said.find(offline) != std::string::npos) {
      return fmt::format(
          "the base image {} is not on {} (not found locally) and the registry is not reachable "
          "from there ({}); {}",
          image, host, said, fix);
    }
  }
  return fmt::format(
      "the base image {} does not exist in its registry ({}); the 2017 guide's "
      "microsoft/mmlspark tags are gone: {}",
      image, said, fix);
}

std::string build_error_line(const std::string& output) {
  const std::vector<std::string> lines = readable_lines(output);
  std::string found;
  for (auto it = lines.rbegin(); it != lines.rend() && found.empty(); ++it) {
    const std::string line(trim(*it));
    for (const char* start : {"ERROR:", "error:", "CondaError", "PackagesNotFoundError",
                              "ResolvePackageNotFound", "E: "}) {
      if (starts_with(line, start)) found = line.substr(0, 300);
    }
  }
  if (found.empty()) return "";
  for (const char* offline : {"Temporary failure in name resolution", "Network is unreachable",
                              "Could not resolve host", "Name or service not known"}) {
    if (output.find(offline) != std::string::npos) {
      return found + " (the build could not reach the network from the target)";
    }
  }
  return found;
}

}  // namespace mlw
