// The one owner of a POSIX file descriptor: closed when its owner goes.
//
// Used wherever the library and mpirun hold a descriptor of their own
// (sockets, pipes, epoll, signalfd, /dev/null): a descriptor that leaks on
// an early return is one fewer for the job, and a closed one that is closed
// again may by then be somebody else's. Movable, never copied; -1 is "none".
#pragma once

#include <unistd.h>

#include <cerrno>
#include <utility>

namespace axon {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  ~UniqueFd() { reset(); }

  int get() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }

  // Gives the descriptor up without closing it: the caller owns it now.
  [[nodiscard]] int release() noexcept { return std::exchange(fd_, -1); }

  // Closes the descriptor held (if any) and takes `fd` instead. errno is
  // left as it was: an owner that goes out of scope on an error path must
  // not replace the error its caller is about to report with close()'s.
  // close() is not retried on EINTR: Linux has released the descriptor
  // by then, and a second close could hit one another thread just opened.
  void reset(int fd = -1) noexcept {
    const int old = std::exchange(fd_, fd);
    if (old < 0 || old == fd) return;
    const int saved = errno;
    ::close(old);
    errno = saved;
  }

 private:
  int fd_ = -1;
};

}  // namespace axon
