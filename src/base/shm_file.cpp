#include "base/shm_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "base/log.h"

namespace axon::shm {

namespace {

constexpr int kNameTries = 4;
constexpr size_t kMaxSuffix = 200;

class FileDescriptor {  // closes on destruction
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

bool random_hex(std::string* out) {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  static const char digits[] = "0123456789abcdef";
  for (unsigned char b : bytes) {
    out->push_back(digits[b >> 4]);
    out->push_back(digits[b & 15]);
  }
  return true;
}

std::string describe_file(const std::string& name) {
  struct stat st;
  if (lstat(("/dev/shm" + name).c_str(), &st) != 0) return "gone again";
  char buf[96];
  std::snprintf(buf, sizeof buf, "owner uid %u, mode %04o, %lld bytes", static_cast<unsigned>(st.st_uid),
                static_cast<unsigned>(st.st_mode & 07777), static_cast<long long>(st.st_size));
  return buf;
}

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

}  // namespace

Mapping& Mapping::operator=(Mapping&& o) noexcept {
  if (this != &o) {
    reset();
    base_ = o.base_;
    size_ = o.size_;
    o.base_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

void Mapping::reset() {
  if (base_) munmap(base_, size_);
  base_ = nullptr;
  size_ = 0;
}

int create(const std::string& prefix, const std::string& what, size_t size, std::string* name, Mapping* out,
           std::string* why) {
  for (int attempt = 0;; ++attempt) {
    std::string candidate = prefix + "." + what + ".";
    if (!random_hex(&candidate)) {
      *why = std::string("cannot draw a random name: ") + strerror(errno);
      return EIO;
    }
    FileDescriptor fd(shm_open(candidate.c_str(), O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd.get() < 0 && errno == EEXIST) {
      // 128 random bits do not collide: somebody made this file, and it is
      // not ours to use.
      log::warn("/dev/shm%s exists already (%s): not using it, trying another name", candidate.c_str(),
                describe_file(candidate).c_str());
      if (attempt + 1 < kNameTries) continue;
      *why = "/dev/shm" + candidate + " and " + std::to_string(kNameTries - 1) +
             " other random names were taken already (someone is planting files in /dev/shm)";
      return EEXIST;
    }
    if (fd.get() < 0) {
      *why = "/dev/shm" + candidate + ": " + strerror(errno);
      return errno;
    }
    int err = 0;
    struct stat st;
    if (fstat(fd.get(), &st) != 0) err = errno;
    else if (st.st_uid != geteuid() || (st.st_mode & 077) != 0) err = EPERM;  // a umask cannot add bits
    else if (ftruncate(fd.get(), static_cast<off_t>(size)) != 0) err = errno;
    void* p = MAP_FAILED;
    if (!err) {
      p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
      if (p == MAP_FAILED) err = errno;
    }
    if (err) {
      *why = "/dev/shm" + candidate + " (" + std::to_string(size) + " bytes): " + strerror(err);
      shm_unlink(candidate.c_str());
      return err;
    }
    out->reset();
    out->base_ = p;
    out->size_ = size;
    *name = candidate;
    return 0;
  }
}

int open_existing(const std::string& name, size_t min_size, Mapping* out, std::string* why) {
  FileDescriptor fd(shm_open(name.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0));
  if (fd.get() < 0) {
    *why = "/dev/shm" + name + ": " + strerror(errno);
    return errno;
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0) {
    *why = "/dev/shm" + name + ": " + strerror(errno);
    return errno;
  }
  const char* wrong = !S_ISREG(st.st_mode)                  ? "not a regular file"
                      : st.st_uid != geteuid()              ? "owned by another user"
                      : (st.st_mode & 07777) != 0600        ? "its mode is not 0600"
                      : static_cast<uint64_t>(st.st_size) < min_size ? "smaller than the segment"
                                                                     : nullptr;
  if (wrong) {
    char buf[160];
    std::snprintf(buf, sizeof buf, " is %s (owner uid %u, mode %04o, %lld bytes): not what a rank of this job "
                  "made, not using it", wrong, static_cast<unsigned>(st.st_uid),
                  static_cast<unsigned>(st.st_mode & 07777), static_cast<long long>(st.st_size));
    *why = "/dev/shm" + name + buf;
    return EPERM;
  }
  size_t size = static_cast<size_t>(st.st_size);
  void* p = size ? mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0) : MAP_FAILED;
  if (p == MAP_FAILED) {
    int err = size ? errno : EINVAL;
    *why = "/dev/shm" + name + ": " + strerror(err);
    return err;
  }
  out->reset();
  out->base_ = p;
  out->size_ = size;
  return 0;
}

void unlink(const std::string& name) { shm_unlink(name.c_str()); }

bool parse_name(const void* bytes, size_t len, const std::string& prefix, std::string* out) {
  const char* s = static_cast<const char*>(bytes);
  size_t n = strnlen(s, len);
  size_t head = prefix.size() + 1;
  if (n <= head || n - head > kMaxSuffix) return false;
  if (std::memcmp(s, prefix.data(), prefix.size()) != 0 || s[prefix.size()] != '.') return false;
  for (size_t i = head; i < n; ++i)
    if (!name_char(s[i])) return false;
  out->assign(s, n);
  return true;
}

}  // namespace axon::shm
