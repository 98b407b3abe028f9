// slurm.cpp -- reading Slurm's compressed host and count lists.
#include "launcher/slurm.hpp"

#include <cstdio>
#include <cstdlib>

namespace axon::launcher {
namespace {

// Splits on commas that are outside brackets.
std::vector<std::string> split_top(const std::string &list) {
    std::vector<std::string> parts;
    std::string current;
    int depth = 0;
    for (char c : list) {
        if (c == '[') ++depth;
        if (c == ']') --depth;
        if (c == ',' && depth == 0) {
            parts.push_back(current);
            current.clear();
        } else {
            current += c;
        }
    }
    if (!current.empty()) parts.push_back(current);
    return parts;
}

bool all_digits(const std::string &text) {
    return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

bool expand_slurm_nodelist(const std::string &list, std::vector<std::string> &names) {
    for (const std::string &part : split_top(list)) {
        auto open = part.find('[');
        if (open == std::string::npos) {
            if (part.empty()) return false;
            names.push_back(part);
            continue;
        }
        auto close = part.find(']', open);
        if (close == std::string::npos) return false;
        const std::string prefix = part.substr(0, open), suffix = part.substr(close + 1);
        std::string ranges = part.substr(open + 1, close - open - 1);
        size_t start = 0;
        while (start <= ranges.size()) {
            size_t comma = ranges.find(',', start);
            std::string range = ranges.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
            auto dash = range.find('-');
            std::string low = range.substr(0, dash), high = dash == std::string::npos ? low : range.substr(dash + 1);
            if (!all_digits(low) || !all_digits(high)) return false;
            long from = std::strtol(low.c_str(), nullptr, 10), to = std::strtol(high.c_str(), nullptr, 10);
            if (to < from || to - from > 100000) return false;
            for (long value = from; value <= to; ++value) {
                std::string digits = std::to_string(value);
                if (digits.size() < low.size()) digits.insert(0, low.size() - digits.size(), '0');
                names.push_back(prefix + digits + suffix);
            }
            if (comma == std::string::npos) break;
            start = comma + 1;
        }
    }
    return !names.empty();
}

bool expand_slurm_counts(const std::string &list, std::vector<int> &counts) {
    for (const std::string &part : split_top(list)) {
        auto paren = part.find("(x");
        std::string count = part.substr(0, paren);
        if (!all_digits(count)) return false;
        long repeat = 1;
        if (paren != std::string::npos) {
            std::string times = part.substr(paren + 2);
            if (times.empty() || times.back() != ')') return false;
            times.pop_back();
            if (!all_digits(times)) return false;
            repeat = std::strtol(times.c_str(), nullptr, 10);
        }
        for (long i = 0; i < repeat; ++i) counts.push_back(static_cast<int>(std::strtol(count.c_str(), nullptr, 10)));
    }
    return !counts.empty();
}

bool hosts_from_slurm(std::vector<HostSlots> &hosts) {
    const char *nodelist = std::getenv("SLURM_JOB_NODELIST");
    if (!nodelist || !*nodelist) return true;
    std::vector<std::string> names;
    if (!expand_slurm_nodelist(nodelist, names)) {
        std::fprintf(stderr, "mpirun: cannot read SLURM_JOB_NODELIST='%s'\n", nodelist);
        return false;
    }
    std::vector<int> counts;
    const char *tasks = std::getenv("SLURM_TASKS_PER_NODE");
    const char *cpus = std::getenv("SLURM_JOB_CPUS_PER_NODE");
    if (tasks && *tasks) {
        expand_slurm_counts(tasks, counts);
    } else if (cpus && *cpus) {
        expand_slurm_counts(cpus, counts);
    }
    for (size_t i = 0; i < names.size(); ++i) {
        int slots = i < counts.size() && counts[i] > 0 ? counts[i] : 1;
        hosts.push_back(HostSlots{names[i], slots});
    }
    return true;
}

}  // namespace axon::launcher
