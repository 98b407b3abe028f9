// hang_report.cpp -- collecting the ranks' hang-doctor answers on one node,
// and mpirun's report and diagnosis (hang_report.hpp).
#include "launcher/hang_report.hpp"

#include "diag/hang_signal.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <sstream>

namespace axon::launcher {
namespace {

// Reads a whole small file; false when it is not there.
bool read_file(const std::string &path, std::string &text) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    text.clear();
    char chunk[4096];
    ssize_t got;
    while ((got = read(fd, chunk, sizeof chunk)) > 0 && text.size() < (1u << 20)) text.append(chunk, got);
    close(fd);
    return true;
}

std::string answer_file(const std::string &tmpdir, uint32_t rank) { return tmpdir + "/hang." + std::to_string(rank); }

}  // namespace

void HangCollector::start(const std::string &tmpdir, const std::vector<Target> &targets, Clock::duration wait) {
    tmpdir_ = tmpdir;
    answers_.clear();
    waiting_.clear();
    for (const Target &target : targets) {
        RankAnswer &answer = answers_[target.rank];
        answer.pid = static_cast<int>(target.pid);
        std::string armed = tmpdir + "/hang-armed." + std::to_string(target.rank);
        if (access(armed.c_str(), F_OK) != 0) {
            answer.state = RankAnswer::State::not_mpi;  // before MPI_Init, or not an MPI program
            continue;
        }
        unlink(answer_file(tmpdir, target.rank).c_str());  // a late answer to an earlier question
        if (kill(target.pid, diag::hang::signal_number()) != 0) {
            answer.state = RankAnswer::State::not_mpi;  // already gone (its exit is reported apart)
            continue;
        }
        answer.state = RankAnswer::State::silent;
        waiting_.push_back(target.rank);
    }
    deadline_ = Clock::now() + wait;
    active_ = true;
    poll();
}

bool HangCollector::poll() {
    if (!active_) return true;
    std::erase_if(waiting_, [this](uint32_t rank) {
        std::string path = answer_file(tmpdir_, rank), text;
        if (!read_file(path, text)) return false;
        unlink(path.c_str());
        answers_[rank].state = RankAnswer::State::answered;
        answers_[rank].text = std::move(text);
        return true;
    });
    if (waiting_.empty() || Clock::now() >= deadline_) active_ = false;
    return !active_;
}

std::optional<HangCollector::Clock::time_point> HangCollector::next_look() const {
    if (!active_) return std::nullopt;
    return std::min(deadline_, Clock::now() + std::chrono::milliseconds(20));
}

std::map<uint32_t, RankAnswer> HangCollector::take() {
    active_ = false;
    waiting_.clear();
    return std::move(answers_);
}

void write_answers(wire::Writer &out, const std::map<uint32_t, RankAnswer> &answers) {
    out.u32(static_cast<uint32_t>(answers.size()));
    for (const auto &[rank, answer] : answers)
        out.u32(rank).u8(static_cast<uint8_t>(answer.state)).i32(answer.pid).str(answer.text);
}

bool read_answers(wire::Reader &in, std::map<uint32_t, RankAnswer> &answers) {
    uint32_t n = in.u32();
    for (uint32_t i = 0; i < n && !in.failed(); ++i) {
        uint32_t rank = in.u32();
        RankAnswer answer;
        uint8_t state = in.u8();
        answer.state = state >= 1 && state <= 3 ? static_cast<RankAnswer::State>(state) : RankAnswer::State::silent;
        answer.pid = in.i32();
        answer.text = in.str();
        if (!in.failed()) answers[rank] = std::move(answer);
    }
    return !in.failed();
}

// ---- the diagnosis ------------------------------------------------------------------

namespace {

struct Parsed {
    std::vector<uint32_t> waits;  // world ranks
    bool in_collective = false;
    std::string coll_comm;        // collective context id
    uint64_t coll_seq = 0;
    std::string coll_call;
    int coll_root = -1;
    bool finalizing = false;
};

Parsed parse(const std::string &text, std::map<std::string, std::string> &names) {
    Parsed parsed;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.rfind('#', 0) != 0) continue;
        std::istringstream words(line);
        std::string key;
        words >> key;
        if (key == "#waits") {
            long long rank = -1;
            if (words >> rank && rank >= 0) parsed.waits.push_back(static_cast<uint32_t>(rank));
        } else if (key == "#coll") {
            if (words >> parsed.coll_comm >> parsed.coll_seq >> parsed.coll_call) parsed.in_collective = true;
            if (!(words >> parsed.coll_root)) parsed.coll_root = -1;
        } else if (key == "#finalize") {
            parsed.finalizing = true;
        } else if (key == "#name") {
            std::string id, name;
            words >> id;
            std::getline(words, name);
            if (!name.empty() && name.front() == ' ') name.erase(0, 1);
            names[id] = name;
        }
    }
    return parsed;
}

// MPI_Bcast and MPI_Bcast_c are the same collective.
std::string base_call(std::string call) {
    if (call.size() > 2 && call.compare(call.size() - 2, 2, "_c") == 0) call.resize(call.size() - 2);
    return call;
}

std::string rank_list(const std::vector<uint32_t> &ranks) {
    std::string text;
    for (uint32_t rank : ranks) text += (text.empty() ? "" : ", ") + std::to_string(rank);
    return text;
}

}  // namespace

bool worth_printing(const HangReport &report) {
    // Exits alone are said by mpirun anyway: a report needs a rank with the doctor.
    return std::any_of(report.answers.begin(), report.answers.end(),
                       [](const auto &entry) { return entry.second.state != RankAnswer::State::not_mpi; });
}

std::vector<std::string> diagnose(const HangReport &report) {
    std::vector<std::string> lines;
    std::map<std::string, std::string> names;
    std::map<uint32_t, Parsed> parsed;
    for (const auto &[rank, answer] : report.answers) {
        if (answer.state == RankAnswer::State::answered) parsed[rank] = parse(answer.text, names);
    }

    // A rank in MPI_Finalize waits (in its barrier) for every rank not there yet.
    for (auto &[rank, p] : parsed) {
        if (!p.finalizing) continue;
        for (const auto &[other, q] : parsed) {
            if (other != rank && !q.finalizing) p.waits.push_back(other);
        }
        for (const auto &[other, how] : report.exited) {
            if (how.find("after MPI_Finalize") == std::string::npos) p.waits.push_back(other);
        }
    }

    // Cycles in the wait-for graph: each rank of a cycle waits for the next,
    // and the last for the first. Found by walking from every rank; a cycle
    // is said once (by its smallest rank).
    std::set<std::vector<uint32_t>> cycles;
    for (const auto &[start, p] : parsed) {
        std::vector<uint32_t> path{start};
        std::function<void(uint32_t)> walk = [&](uint32_t at) {
            auto found = parsed.find(at);
            if (found == parsed.end() || path.size() > 64) return;
            for (uint32_t next : found->second.waits) {
                if (next == start) {
                    if (*std::min_element(path.begin(), path.end()) == start) cycles.insert(path);
                    continue;
                }
                if (next < start || std::find(path.begin(), path.end(), next) != path.end()) continue;
                path.push_back(next);
                walk(next);
                path.pop_back();
            }
        };
        walk(start);
        if (cycles.size() > 16) break;
    }
    for (const auto &cycle : cycles) {
        std::string text = "deadlock: ";
        for (size_t i = 0; i < cycle.size(); ++i) {
            text += (i ? ", rank " : "rank ") + std::to_string(cycle[i]) + " waits for rank " +
                    std::to_string(cycle[(i + 1) % cycle.size()]);
        }
        lines.push_back(text + " (a cycle)");
    }

    // Waits on ranks that cannot answer.
    for (const auto &[rank, p] : parsed) {
        for (uint32_t peer : p.waits) {
            if (auto gone = report.exited.find(peer); gone != report.exited.end()) {
                lines.push_back("rank " + std::to_string(rank) + " waits for rank " + std::to_string(peer) +
                                ", which " + gone->second);
            }
        }
    }

    // Collectives: ranks on one communicator in different calls, in
    // different instances (numbers) of them, or with different roots.
    using Instance = std::tuple<uint64_t, std::string, int>;
    std::map<std::string, std::map<Instance, std::vector<uint32_t>>> by_comm;
    for (const auto &[rank, p] : parsed) {
        if (p.in_collective) by_comm[p.coll_comm][{p.coll_seq, base_call(p.coll_call), p.coll_root}].push_back(rank);
    }
    for (const auto &[comm, groups] : by_comm) {
        if (groups.size() < 2) continue;
        auto name = names.find(comm);
        std::string text = "collective mismatch on " +
                           (name != names.end() ? name->second : "communicator #" + comm) + ": ";
        bool first = true;
        for (const auto &[key, ranks] : groups) {
            const auto &[seq, call, root] = key;
            text += (first ? "" : "; ") + std::string(ranks.size() == 1 ? "rank " : "ranks ") + rank_list(ranks) +
                    " in " + call + (root >= 0 ? " root " + std::to_string(root) : "") + " (collective #" +
                    std::to_string(seq) + ")";
            first = false;
        }
        lines.push_back(text);
    }

    for (const auto &[rank, how] : report.exited) lines.push_back("rank " + std::to_string(rank) + " " + how);
    std::vector<uint32_t> silent;
    for (const auto &[rank, answer] : report.answers) {
        if (answer.state == RankAnswer::State::silent) silent.push_back(rank);
    }
    if (!silent.empty()) {
        lines.push_back(std::string(silent.size() == 1 ? "rank " : "ranks ") + rank_list(silent) +
                        " did not answer (stopped, or blocked outside MPI's progress loop)");
    }
    if (lines.empty()) lines.push_back("no cycle of waiting ranks, no collective mismatch, no rank exited");
    return lines;
}

void print_report(const HangReport &report, std::FILE *to) {
    std::string out = "mpirun: hang report (" + report.why + "):\n";
    for (const auto &[rank, answer] : report.answers) {
        out += "mpirun: " + report.where(rank, answer.pid) + ": ";
        switch (answer.state) {
            case RankAnswer::State::not_mpi: out += "no hang doctor (not in MPI yet, or not an MPI program)\n"; break;
            case RankAnswer::State::silent: out += "no answer\n"; break;
            case RankAnswer::State::answered: {
                std::istringstream lines(answer.text);
                std::string line;
                bool first = true;
                while (std::getline(lines, line)) {
                    if (line.rfind('#', 0) == 0) continue;
                    out += (first ? "" : "mpirun:   ") + (first ? line : line.substr(line.rfind("  ", 0) == 0 ? 2 : 0)) + "\n";
                    first = false;
                }
                if (first) out += "(empty answer)\n";
                break;
            }
        }
    }
    for (const std::string &line : diagnose(report)) out += "mpirun: diagnosis: " + line + "\n";
    out += "mpirun: end of hang report\n";
    std::fputs(out.c_str(), to);
    std::fflush(to);
}

}  // namespace axon::launcher
