#include "mlw/util/terminal.hpp"

#include <termios.h>

#include <iostream>

namespace mlw {

std::string read_terminal_line(std::ostream& err, const std::string& prompt, bool echo) {
  err << prompt << std::flush;
  termios old_mode{};
  const bool hide = !echo && ::tcgetattr(0, &old_mode) == 0;
  if (hide) {
    termios quiet = old_mode;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    ::tcsetattr(0, TCSAFLUSH, &quiet);
  }
  std::string line;
  std::getline(std::cin, line);
  if (hide) ::tcsetattr(0, TCSAFLUSH, &old_mode);
  if (!echo) err << "\n";
  return line;
}

}  // namespace mlw
