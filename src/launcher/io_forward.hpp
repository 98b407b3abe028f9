// io_forward.hpp -- the ranks' stdout/stderr to mpirun's, mpirun's stdin to rank 0.
#pragma once

#include "base/unique_fd.h"

#include <cstdint>
#include <functional>
#include <string>

namespace axon::launcher {

// Writes all of `data` to `fd`, waiting when it is non-blocking and full.
// Returns false when the reader is gone (EPIPE) or on another error.
bool write_fully(int fd, const char *data, size_t size);

// How forwarded lines are tagged: Open MPI's "[job,rank]<stdout>: " (job > 0),
// Hydra's "[rank] " (-l), or not at all.
struct Tagging {
    int job = 0;         // 0: no tag
    bool hydra = false;  // "[rank] " instead
};

// One output stream of one rank (its stdout or its stderr).
class OutputStream {
public:
    // Where forwarded bytes go when not to a descriptor (a daemon sends them to mpirun).
    using Sink = std::function<void(uint32_t rank, bool is_stderr, const char *data, size_t size)>;

    OutputStream(UniqueFd source, int destination, uint32_t rank, bool is_stderr, Sink sink = nullptr)
        : source_(std::move(source)), destination_(destination), rank_(rank), is_stderr_(is_stderr),
          sink_(std::move(sink)) {}

    int fd() const { return source_.get(); }
    bool open() const { return static_cast<bool>(source_); }
    // --output-filename: every byte also goes to `file`, as the rank wrote it;
    // `copy` false (DIR:nocopy): to the file only.
    void set_file(UniqueFd file, bool copy) {
        file_ = std::move(file);
        copy_ = copy;
    }

    // Reads what is available and writes it out. When tagging, each complete
    // line goes out as one write with its tag, so lines of different ranks
    // never mix; a partial line waits for its newline (or for EOF). Untagged
    // output passes through as it comes. Closes the stream at EOF.
    void forward(const Tagging &tagging);

private:
    void emit_lines(const Tagging &tagging, bool at_eof);
    void deliver(const char *data, size_t size);

    UniqueFd source_;
    int destination_;
    uint32_t rank_;
    bool is_stderr_;
    Sink sink_;
    UniqueFd file_;
    bool copy_ = true;
    std::string pending_;  // tagged mode: an incomplete last line
};

// Copies mpirun's stdin to rank 0's stdin pipe, with back-pressure: stdin is
// read only when the previous chunk has been delivered.
class StdinForwarder {
public:
    // `source` is mpirun's stdin (not owned); `sink` the write end of rank 0's pipe.
    StdinForwarder(int source, UniqueFd sink);

    bool wants_input() const { return active_ && buffer_.empty() && !source_eof_; }
    bool wants_output() const { return active_ && !buffer_.empty(); }
    int source() const { return source_; }
    int sink() const { return sink_.get(); }

    void on_input();   // stdin readable
    void on_output();  // rank 0's pipe writable
    void stop();       // rank 0 is gone: close its pipe, stop reading stdin

private:
    int source_;
    UniqueFd sink_;
    std::string buffer_;
    bool source_eof_ = false;
    bool active_ = true;
};

// Whether mpirun should read its stdin at all: not when it is a terminal that
// belongs to another (foreground) process group, where reading would stop
// mpirun with SIGTTIN.
bool stdin_is_forwardable();

}  // namespace axon::launcher
