// wire.cpp -- framing and the non-blocking channel of the daemon protocol.
#include "launcher/wire.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>

namespace axon::launcher::wire {

Channel::Channel(UniqueFd fd) : fd_(std::move(fd)) {
    fcntl(fd_.get(), F_SETFL, fcntl(fd_.get(), F_GETFL) | O_NONBLOCK);
    int one = 1;
    setsockopt(fd_.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // fences are latency-bound
}

void Channel::send(Type type, const Writer &payload) {
    if (!open()) return;
    uint32_t length = static_cast<uint32_t>(payload.data().size() + 1);
    outgoing_.append(reinterpret_cast<const char *>(&length), 4);
    outgoing_.push_back(static_cast<char>(type));
    outgoing_ += payload.data();
    flush();
}

bool Channel::flush() {
    while (open() && !outgoing_.empty()) {
        ssize_t written = ::send(fd_.get(), outgoing_.data(), outgoing_.size(), MSG_NOSIGNAL);
        if (written > 0) {
            outgoing_.erase(0, static_cast<size_t>(written));
        } else if (written < 0 && errno == EINTR) {
            continue;
        } else if (written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return true;
        } else {
            return false;
        }
    }
    return open();
}

bool Channel::receive(std::vector<Message> &out) {
    if (!open()) return false;
    char chunk[65536];
    bool alive = true;
    for (int reads = 0; reads < 16; ++reads) {
        ssize_t got = ::recv(fd_.get(), chunk, sizeof chunk, 0);
        if (got > 0) {
            incoming_.append(chunk, static_cast<size_t>(got));
            if (static_cast<size_t>(got) < sizeof chunk) break;
        } else if (got < 0 && errno == EINTR) {
            continue;
        } else if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        } else {
            alive = false;
            break;
        }
    }
    size_t offset = 0;
    while (incoming_.size() - offset >= 5) {
        uint32_t length;
        std::memcpy(&length, incoming_.data() + offset, 4);
        if (length == 0 || length > limit_) {
            alive = false;
            break;
        }
        if (incoming_.size() - offset - 4 < length) break;
        Message message;
        message.type = static_cast<Type>(incoming_[offset + 4]);
        message.payload.assign(incoming_, offset + 5, length - 1);
        out.push_back(std::move(message));
        offset += 4 + length;
    }
    incoming_.erase(0, offset);
    if (!alive) close();
    return alive;
}

void Channel::drain(int timeout_ms) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (wants_write()) {
        if (!flush()) return;
        if (outgoing_.empty()) return;
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return;
        pollfd writable{fd_.get(), POLLOUT, 0};
        poll(&writable, 1, static_cast<int>(left.count()));
    }
}

UniqueFd connect_to(const std::string &host, const std::string &port, int timeout_ms, std::string &error) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *found = nullptr;
    if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
        error = "cannot resolve " + host + ": " + gai_strerror(rc);
        return {};
    }
    UniqueFd result;
    error = "no address for " + host;
    for (addrinfo *ai = found; ai; ai = ai->ai_next) {
        UniqueFd fd(socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol));
        if (!fd) continue;
        int rc = connect(fd.get(), ai->ai_addr, ai->ai_addrlen);
        if (rc != 0 && errno == EINPROGRESS) {
            pollfd writable{fd.get(), POLLOUT, 0};
            if (poll(&writable, 1, timeout_ms) == 1) {
                int soerr = 0;
                socklen_t len = sizeof soerr;
                getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &soerr, &len);
                rc = soerr == 0 ? 0 : -1;
                errno = soerr;
            } else {
                errno = ETIMEDOUT;
            }
        }
        if (rc == 0) {
            result = std::move(fd);
            break;
        }
        error = "cannot connect to " + host + ":" + port + ": " + std::strerror(errno);
    }
    freeaddrinfo(found);
    return result;
}

}  // namespace axon::launcher::wire
