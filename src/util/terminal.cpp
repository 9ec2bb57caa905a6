#include "mlw/util/terminal.hpp"

#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include <iostream>

namespace mlw {

namespace {

// The terminal mode to put back if a signal ends mlw while a secret is typed with echo off.
// A signal handler can reach nothing else, so this one piece of state is file-wide.
termios g_saved_mode{};
volatile sig_atomic_t g_echo_off = 0;

void restore_and_die(int signal_number) {
  if (g_echo_off) ::tcsetattr(0, TCSAFLUSH, &g_saved_mode);
  const char newline = '\n';
  [[maybe_unused]] const auto written = ::write(2, &newline, 1);
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

constexpr int k_fatal_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

}  // namespace

std::string read_terminal_line(std::ostream& err, const std::string& prompt, bool echo) {
  err << prompt << std::flush;
  termios old_mode{};
  const bool hide = !echo && ::tcgetattr(0, &old_mode) == 0;
  struct sigaction previous[std::size(k_fatal_signals)]{};
  if (hide) {
    g_saved_mode = old_mode;
    g_echo_off = 1;
    struct sigaction action {};
    action.sa_handler = restore_and_die;
    ::sigemptyset(&action.sa_mask);
    for (std::size_t i = 0; i < std::size(k_fatal_signals); ++i) {
      ::sigaction(k_fatal_signals[i], &action, &previous[i]);
    }
    termios quiet = old_mode;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    ::tcsetattr(0, TCSAFLUSH, &quiet);
  }
  std::string line;
  std::getline(std::cin, line);
  if (hide) {
    ::tcsetattr(0, TCSAFLUSH, &old_mode);
    g_echo_off = 0;
    for (std::size_t i = 0; i < std::size(k_fatal_signals); ++i) {
      ::sigaction(k_fatal_signals[i], &previous[i], nullptr);
    }
  }
  if (!echo) err << "\n";
  return line;
}

}  // namespace mlw
