#include "mlw/config/names.hpp"

#include <arpa/inet.h>

#include <fmt/format.h>

#include "mlw/util/error.hpp"

namespace mlw {

void validate_name(const std::string& name, const std::string& what) {
  if (name.empty()) throw UsageError(fmt::format("{} must not be empty", what));
  if (name.size() > 64) {
    throw UsageError(fmt::format("{} \"{}…\" is {} characters long; at most 64 are allowed", what,
                                 name.substr(0, 16), name.size()));
  }
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) {
      throw UsageError(fmt::format(
          "{} \"{}\" may only contain letters, digits, '_' and '-' (1 to 64 characters)", what,
          name));
    }
  }
}

namespace {

int parse_port(const std::string& text, const std::string& whole) {
  if (text.empty() || text.size() > 5 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    throw UsageError(
        fmt::format("address \"{}\": port \"{}\" is not a number from 1 to 65535", whole, text));
  }
  const int port = std::stoi(text);
  if (port < 1 || port > 65535) {
    throw UsageError(fmt::format("address \"{}\": port {} is not from 1 to 65535", whole, port));
  }
  return port;
}

void check_host(const std::string& host, const std::string& whole) {
  if (host.empty()) throw UsageError(fmt::format("address \"{}\" has no host name", whole));
  if (!is_ssh_host_name(host) || host.find('/') != std::string::npos ||
      host.find('@') != std::string::npos) {
    throw UsageError(fmt::format(
        "address \"{}\": host name contains invalid characters (as OpenSSH refuses it: no "
        "spaces, control characters, quotes or {}, and no '-' first)",
        whole, "$ \\ ; & < > | ( ) { } `,"));
  }
}

}  // namespace

Address parse_address(const std::string& text) {
  Address address;
  if (text.empty()) throw UsageError("address must not be empty");
  if (text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos) {
      throw UsageError(fmt::format("address \"{}\": missing ']' after the IPv6 address", text));
    }
    address.host = text.substr(1, close - 1);
    if (address.host.find(':') == std::string::npos) {
      throw UsageError(fmt::format("address \"{}\": brackets are only for IPv6 addresses", text));
    }
    const std::string rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') {
        throw UsageError(fmt::format("address \"{}\": expected ':PORT' after ']'", text));
      }
      address.port = parse_port(rest.substr(1), text);
      address.port_given = true;
    }
  } else {
    const auto first = text.find(':');
    if (first != std::string::npos && text.find(':', first + 1) == std::string::npos) {
      address.host = text.substr(0, first);
      address.port = parse_port(text.substr(first + 1), text);
      address.port_given = true;
    } else {
      address.host = text;  // a name, IPv4, or a bare IPv6 address
      in6_addr ipv6{};
      if (first != std::string::npos && ::inet_pton(AF_INET6, text.c_str(), &ipv6) != 1) {
        throw UsageError(fmt::format(
            "address \"{}\": a host name takes one :PORT, and an IPv6 address with a port "
            "goes in brackets ([ADDRESS]:PORT)",
            text));
      }
    }
  }
  check_host(address.host, text);
  return address;
}

bool is_ssh_host_name(std::string_view host) {
  if (host.empty() || host.front() == '-') return false;
  for (const char c : host) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= ' ' || u == 0x7f ||
        std::string_view("'`\"$\\;&<>|(){},").find(c) != std::string_view::npos) {
      return false;
    }
  }
  return true;
}

bool is_ssh_user_name(std::string_view user) {
  if (user.empty() || user.front() == '-' || user.back() == '\\') return false;
  for (std::size_t i = 0; i < user.size(); ++i) {
    const auto u = static_cast<unsigned char>(user[i]);
    if (u < ' ' || u == 0x7f ||
        std::string_view("'`\";&<>|(){}").find(user[i]) != std::string_view::npos) {
      return false;
    }
    if ((user[i] == ' ' || user[i] == '\t') && i + 1 < user.size() && user[i + 1] == '-')
      return false;
  }
  return true;
}

void check_ssh_user(const std::string& user, const std::string& where) {
  if (user.empty() || is_ssh_user_name(user)) return;
  throw UsageError(fmt::format(
      "{}username \"{}\" contains invalid characters (as OpenSSH refuses it: no quotes, control "
      "characters or ; & < > | ( ) {{ }} `, and no '-' first)",
      where, user));
}

bool is_environment_name(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (const char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

}  // namespace mlw
