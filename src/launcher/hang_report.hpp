// hang_report.hpp -- the hang doctor, launcher side (docs/diagnostics.md
// "Hang doctor").
//
// Asked by --timeout, by SIGUSR1 to mpirun, or by a rank that made no
// progress for AXON_HANG_REPORT_AFTER seconds, every node (mpirun for its
// own ranks, each daemon for its node's) signals its ranks that armed the
// doctor (src/diag/hang.h) and collects what they write in the node's tmpdir,
// within a bound; daemons send their answers to mpirun over the wire. mpirun
// prints one block per rank and a diagnosis (cycles of waiting ranks,
// collective mismatches, ranks that exited or did not answer).
#pragma once

#include "launcher/wire.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace axon::launcher {

struct RankAnswer {
    enum class State : uint8_t { answered = 1, silent, not_mpi };
    State state = State::silent;
    int pid = -1;
    std::string text;  // the rank's snapshot (answered)
};

// Collects the answers of one node's ranks.
class HangCollector {
public:
    using Clock = std::chrono::steady_clock;
    struct Target {
        uint32_t rank;
        pid_t pid;
    };
    // Signals every target that armed the doctor (others are answered
    // not_mpi at once) and waits at most `wait` for their files.
    void start(const std::string &tmpdir, const std::vector<Target> &targets, Clock::duration wait);
    // Reads the answers that arrived; true once all are in or the wait is over.
    bool poll();
    bool active() const { return active_; }
    // While active: when to look again (answers come as files, not events).
    std::optional<Clock::time_point> next_look() const;
    std::map<uint32_t, RankAnswer> take();

private:
    std::string tmpdir_;
    std::map<uint32_t, RankAnswer> answers_;
    std::vector<uint32_t> waiting_;
    Clock::time_point deadline_{};
    bool active_ = false;
};

// On the wire (HANG_ANSWERS, daemon -> mpirun).
void write_answers(wire::Writer &out, const std::map<uint32_t, RankAnswer> &answers);
bool read_answers(wire::Reader &in, std::map<uint32_t, RankAnswer> &answers);

struct HangReport {
    std::string why;                                 // "the job ran longer than --timeout 3 s"
    std::map<uint32_t, RankAnswer> answers;          // ranks still running
    std::map<uint32_t, std::string> exited;          // rank -> "exited with status 0" ...
    uint32_t size = 0;                               // ranks of the job
    std::function<std::string(uint32_t, int)> where;  // "rank 1 (pid 1234) on node2"
};

// Whether any rank can say anything (one armed the doctor: answered, or did not).
bool worth_printing(const HangReport &report);
// The diagnosis lines (without prefix): cycles, mismatches, exits, silences.
std::vector<std::string> diagnose(const HangReport &report);
void print_report(const HangReport &report, std::FILE *to);

}  // namespace axon::launcher
