// libFuzzer target: the daemon protocol between mpirun and its per-node
// daemons (src/launcher/wire.hpp, included read-only): the framing of
// Channel::receive over a socket, and the Reader that decodes payloads.
// Input: a mode byte; odd: the bytes arrive on a channel's socket; even: a
// count n and n operations (u8, u32, i32, str, strings) then the payload
// they read.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "launcher/wire.hpp"

namespace wire = axon::launcher::wire;

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

void reader(const uint8_t* data, size_t size) {
  if (size < 1) return;
  size_t n = std::min<size_t>(data[0] % 65, size - 1);
  const uint8_t* ops = data + 1;
  std::string payload(reinterpret_cast<const char*>(data + 1 + n), size - 1 - n);
  wire::Reader r(payload);
  size_t taken = 0;
  for (size_t i = 0; i < n; ++i) {
    bool before = r.failed();
    switch (ops[i] % 5) {
      case 0: check(r.u8() == 0 || !r.failed()); break;
      case 1: check(r.u32() == 0 || !r.failed()); break;
      case 2: check(r.i32() == 0 || !r.failed()); break;
      case 3: taken += r.str().size(); break;
      default:
        for (const std::string& s : r.strings()) taken += s.size();
        break;
    }
    check(!before || r.failed());  // once failed, always failed
  }
  check(taken <= payload.size());
}

void channel(const uint8_t* data, size_t size) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return;
  fcntl(fds[1], F_SETFL, O_NONBLOCK);
  wire::Channel ch{axon::UniqueFd(fds[0])};
  std::vector<wire::Message> out;
  size_t sent = 0, got = 0;
  bool alive = true;
  while (alive) {
    if (sent < size) {
      ssize_t w = ::write(fds[1], data + sent, size - sent);
      if (w > 0) sent += static_cast<size_t>(w);
    }
    if (sent == size && fds[1] >= 0) {
      ::close(fds[1]);
      fds[1] = -1;
    }
    alive = ch.receive(out);
    for (const wire::Message& m : out) got += 5 + m.payload.size();
    out.clear();
  }
  if (fds[1] >= 0) ::close(fds[1]);
  check(got <= size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  if (data[0] & 1) channel(data + 1, size - 1);
  else reader(data + 1, size - 1);
  return 0;
}
