// io_forward.cpp -- output tagging and stdin forwarding.
#include "launcher/io_forward.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace axon::launcher {

bool write_fully(int fd, const char *data, size_t size) {
    while (size > 0) {
        ssize_t written = write(fd, data, size);
        if (written > 0) {
            data += written;
            size -= static_cast<size_t>(written);
        } else if (written < 0 && errno == EINTR) {
            continue;
        } else if (written < 0 && errno == EAGAIN) {
            pollfd wait_writable{fd, POLLOUT, 0};
            poll(&wait_writable, 1, -1);
        } else {
            return false;
        }
    }
    return true;
}

void OutputStream::forward(const Tagging &tagging) {
    char chunk[65536];
    const bool tagged = tagging.job > 0 || tagging.hydra;
    // A few chunks per call at most, so one rank that floods its output
    // cannot starve the others (or mpirun's signal handling).
    for (int reads = 0; source_ && reads < 4; ++reads) {
        ssize_t got = read(source_.get(), chunk, sizeof chunk);
        if (got > 0) {
            if (file_ && !write_fully(file_.get(), chunk, static_cast<size_t>(got))) file_.reset();
            if (!copy_) {
                // to the file only
            } else if (tagged) {
                pending_.append(chunk, static_cast<size_t>(got));
                emit_lines(tagging, false);
            } else {
                deliver(chunk, static_cast<size_t>(got));
            }
            if (static_cast<size_t>(got) < sizeof chunk) return;  // drained for now
        } else if (got < 0 && errno == EINTR) {
            continue;  // counts as a read: harmless
        } else if (got < 0 && errno == EAGAIN) {
            return;
        } else {  // EOF, or the pipe broke: the rank closed this stream
            if (tagged && copy_) emit_lines(tagging, true);
            source_.reset();
            file_.reset();
        }
    }
}

void OutputStream::emit_lines(const Tagging &tagging, bool at_eof) {
    const std::string tag = tagging.hydra ? "[" + std::to_string(rank_) + "] "
                                          : "[" + std::to_string(tagging.job) + "," + std::to_string(rank_) + "]" +
                                                (is_stderr_ ? "<stderr>: " : "<stdout>: ");
    std::string out;
    size_t start = 0;
    while (true) {
        size_t newline = pending_.find('\n', start);
        if (newline == std::string::npos) break;
        out += tag;
        out.append(pending_, start, newline + 1 - start);
        start = newline + 1;
    }
    if (at_eof && start < pending_.size()) {  // a last line without newline
        out += tag;
        out.append(pending_, start, std::string::npos);
        out += '\n';
        start = pending_.size();
    }
    pending_.erase(0, start);
    // One write for all complete lines: a pipe write up to PIPE_BUF is atomic,
    // and mpirun is the only writer, so lines never interleave mid-line.
    if (!out.empty()) deliver(out.data(), out.size());
}

void OutputStream::deliver(const char *data, size_t size) {
    if (sink_) {
        sink_(rank_, is_stderr_, data, size);
    } else {
        write_fully(destination_, data, size);
    }
}

StdinForwarder::StdinForwarder(int source, UniqueFd sink) : source_(source), sink_(std::move(sink)) {
    fcntl(sink_.get(), F_SETFL, O_NONBLOCK);
}

void StdinForwarder::on_input() {
    char chunk[65536];
    ssize_t got = read(source_, chunk, sizeof chunk);
    if (got > 0) {
        buffer_.assign(chunk, static_cast<size_t>(got));
        on_output();
    } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        source_eof_ = true;
        if (buffer_.empty()) stop();  // rank 0 sees EOF
    }
}

void StdinForwarder::on_output() {
    while (!buffer_.empty()) {
        ssize_t written = write(sink_.get(), buffer_.data(), buffer_.size());
        if (written > 0) {
            buffer_.erase(0, static_cast<size_t>(written));
        } else if (written < 0 && errno == EINTR) {
            continue;
        } else if (written < 0 && errno == EAGAIN) {
            return;  // wait for POLLOUT
        } else {
            stop();  // rank 0 closed its stdin or exited
            return;
        }
    }
    if (source_eof_) stop();
}

void StdinForwarder::stop() {
    active_ = false;
    buffer_.clear();
    sink_.reset();
}

bool stdin_is_forwardable() {
    if (fcntl(STDIN_FILENO, F_GETFD) < 0) return false;  // closed
    if (!isatty(STDIN_FILENO)) return true;
    return tcgetpgrp(STDIN_FILENO) == getpgrp();
}

}  // namespace axon::launcher
