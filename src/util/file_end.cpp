// Reading the end of a file that another user or a target may have put in place.

#include "mlw/util/file_end.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "mlw/util/error.hpp"

namespace mlw {

FileEnd read_file_end(const std::filesystem::path& path, std::size_t bound) {
  FileEnd out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    out.why = errno == ENOENT ? "missing" : errno == ELOOP ? "a link" : errno_text(errno);
    return out;
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    out.why = "not a regular file";
    return out;
  }
  out.size = static_cast<std::uint64_t>(info.st_size);
  const std::uint64_t skip = out.size > bound ? out.size - bound : 0;
  out.text.resize(static_cast<std::size_t>(out.size - skip));
  std::size_t got = 0;
  while (got < out.text.size()) {
    const ssize_t n =
        ::pread(fd, out.text.data() + got, out.text.size() - got, static_cast<off_t>(skip + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // it shrank meanwhile: what was there
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  out.text.resize(got);
  out.found = true;
  return out;
}

}  // namespace mlw
