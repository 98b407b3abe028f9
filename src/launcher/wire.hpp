// wire.hpp -- the messages between mpirun and its per-node daemons.
//
// One TCP connection per daemon. A message is [u32 length][u8 type][payload],
// length counting the type byte; integers are little-endian host order (both
// ends run the same mpirun binary on the same architecture, which the HELLO
// message checks through its magic number).
#pragma once

#include "base/unique_fd.h"

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace axon::launcher::wire {

constexpr uint32_t hello_magic = 0x41584e32;  // "AXN2": protocol version 2 (node resources, apps, welcome)
constexpr uint32_t max_message = 1u << 30;     // a larger length means a broken peer

enum class Type : uint8_t {
    hello = 1,     // d->h: magic, node, secret, the node's resources (binding.hpp)
    job,           // h->d: the job (see RemoteNodes::send_job)
    fence,         // d->h: key, node count, local contribution
    fence_done,    // h->d: key, concatenation of every node's contribution
    dmodex_req,    // both ways: origin node, request id, rank
    dmodex_resp,   // both ways: origin node, request id, status, data
    output,        // d->h: rank, stream (1 stdout, 2 stderr), bytes (tagged by the daemon)
    exit,          // d->h: rank, pid, wait status, exec errno, connected, finalized
    abort,         // d->h: rank, pid, status, message
    error,         // d->h: exit status, message (the daemon cannot run the job)
    done,          // d->h: every local rank reaped, output sent; the daemon exits
    signal,        // h->d: forward this signal to the local ranks
    kill,          // h->d: end the job (SIGTERM, SIGKILL after the grace)
    welcome,       // h->d: the HELLO was accepted (the daemon found mpirun, not some other listener)
    hang_request,  // h->d: ask the local ranks for their hang-doctor state (hang_report.hpp)
    hang_answers,  // d->h: the local ranks' answers (write_answers)
    hang_ask,      // d->h: local rank (i32) asked for a hang report (AXON_HANG_REPORT_AFTER)
};

class Writer {
public:
    Writer &u8(uint8_t v) { data_.push_back(static_cast<char>(v)); return *this; }
    Writer &u32(uint32_t v) { data_.append(reinterpret_cast<const char *>(&v), 4); return *this; }
    Writer &i32(int32_t v) { return u32(static_cast<uint32_t>(v)); }
    Writer &bytes(const void *p, size_t n) {
        u32(static_cast<uint32_t>(n));
        if (n) data_.append(static_cast<const char *>(p), n);
        return *this;
    }
    Writer &str(const std::string &s) { return bytes(s.data(), s.size()); }
    Writer &strings(const std::vector<std::string> &list) {
        u32(static_cast<uint32_t>(list.size()));
        for (const auto &s : list) str(s);
        return *this;
    }
    const std::string &data() const { return data_; }

private:
    std::string data_;
};

// Reads a payload; any read past the end sets failed() and returns zeros, so a
// malformed message is detected once, after decoding it.
class Reader {
public:
    explicit Reader(const std::string &payload) : data_(payload) {}
    uint8_t u8() {
        if (!need(1)) return 0;
        return static_cast<uint8_t>(data_[offset_++]);
    }
    uint32_t u32() {
        uint32_t v = 0;
        if (!need(4)) return 0;
        std::memcpy(&v, data_.data() + offset_, 4);
        offset_ += 4;
        return v;
    }
    int32_t i32() { return static_cast<int32_t>(u32()); }
    std::string str() {
        uint32_t n = u32();
        if (!need(n)) return {};
        std::string s = data_.substr(offset_, n);
        offset_ += n;
        return s;
    }
    std::vector<std::string> strings() {
        uint32_t n = u32();
        std::vector<std::string> list;
        for (uint32_t i = 0; i < n && !failed_; ++i) list.push_back(str());
        return list;
    }
    bool failed() const { return failed_; }

private:
    bool need(size_t n) {
        if (failed_ || data_.size() - offset_ < n) failed_ = true;
        return !failed_;
    }
    const std::string &data_;
    size_t offset_ = 0;
    bool failed_ = false;
};

struct Message {
    Type type{};
    std::string payload;
};

// A non-blocking connection with an outgoing queue: send() never blocks, so
// mpirun and a daemon that both send large messages cannot deadlock; the
// event loop flushes the queue when the socket is writable.
class Channel {
public:
    Channel() = default;
    explicit Channel(UniqueFd fd);

    int fd() const { return fd_.get(); }
    bool open() const { return static_cast<bool>(fd_); }
    bool wants_write() const { return open() && !outgoing_.empty(); }

    void send(Type type, const Writer &payload);
    // Writes what the socket takes now; false when the peer is gone.
    bool flush();
    // Reads what is available and appends complete messages to `out`. Returns
    // false at EOF, on an error or on a malformed frame (then the channel is
    // closed; messages before it are still in `out`).
    bool receive(std::vector<Message> &out);
    // Blocks (poll) until everything queued is written or `timeout_ms` passes.
    void drain(int timeout_ms);
    void close() { fd_.reset(); }
    // A frame longer than `max` is malformed (a peer that has not proved
    // itself yet gets a small limit, not max_message).
    void limit_messages(uint32_t max) { limit_ = max; }

private:
    UniqueFd fd_;
    std::string outgoing_;
    std::string incoming_;
    uint32_t limit_ = max_message;
};

// Connects to host:port (numeric IPv4/IPv6 or a name) with a bound wait.
UniqueFd connect_to(const std::string &host, const std::string &port, int timeout_ms, std::string &error);

}  // namespace axon::launcher::wire
