// options.cpp -- parsing of the mpirun command line.
//
// Long options take one or two dashes (Open MPI and MPICH users type both) and
// "--opt=value" as well as "--opt value". The first word that is not an option
// starts the program and its arguments, which are passed on untouched.
#include "launcher/options.hpp"

#include "axon_config.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>

namespace axon::launcher {
namespace {

constexpr const char *help_text =
    "Usage: mpirun [options] program [arguments...]\n"
    "       mpiexec [options] program [arguments...]\n"
    "\n"
    "Starts NP copies of program on this node or on the hosts given, wired\n"
    "together through PMIx servers (mpirun's own and one daemon per other host),\n"
    "and waits for them.\n"
    "\n"
    "Options:\n"
    "  -n, -np N              number of ranks (required unless a host list gives slots)\n"
    "  -x NAME[=VALUE]        export NAME (with VALUE, or mpirun's value) to the ranks;\n"
    "                         repeatable\n"
    "  --bind-to core|none    bind each rank to one core (the default; round-robin when\n"
    "                         ranks outnumber the cores mpirun may use), or not at all\n"
    "  --tag-output           prefix each output line with [job,rank]<stdout>: or <stderr>:\n"
    "  --timeout SECONDS      end the job when it runs longer (exit status 124);\n"
    "                         default: the MPIEXEC_TIMEOUT environment variable\n"
    "  --display-map          print where each rank runs and what it is bound to\n"
    "  --oversubscribe        accepted for compatibility: more ranks than cores is allowed\n"
    "  -H, --host LIST        hosts as name[:slots],... (this machine: its name or localhost)\n"
    "  --hostfile FILE        hosts, one \"name [slots=N]\" per line, # comments\n"
    "  --map-by POLICY        slot (fill each host's slots in order, the default),\n"
    "                         node (round-robin over hosts) or ppr:N:node (N per host)\n"
    "  --launch-agent CMD     how to start a daemon on another host; {} is the host\n"
    "                         (default: ssh -x -T -o BatchMode=yes {}; srun in Slurm)\n"
    "  --launch-timeout SEC   daemons must connect back within SEC seconds (default 30)\n"
    "  --head-addr ADDR       address the daemons connect back to (default: chosen\n"
    "                         from the route to the first remote host)\n"
    "  -h, --help             this text\n"
    "  -V, --version          print the version\n"
    "\n"
    "Exit status: 0 when every rank exits 0; otherwise the status of the first rank to\n"
    "fail (128+N when killed by signal N), the MPI_Abort code, 124 on --timeout,\n"
    "126/127 when the program cannot be run, 128+N when mpirun receives signal N,\n"
    "1 for mpirun's own errors. See docs/launcher.md.\n";

void report(const char *fmt, const std::string &what) {
    std::fprintf(stderr, "mpirun: ");
    std::fprintf(stderr, fmt, what.c_str());
    std::fprintf(stderr, " (see mpirun --help)\n");
}

// A strictly positive decimal integer, or nothing.
std::optional<int> parse_positive(const std::string &text) {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    errno = 0;
    long value = std::strtol(text.c_str(), nullptr, 10);
    if (errno != 0 || value <= 0 || value > INT_MAX) return std::nullopt;
    return static_cast<int>(value);
}

// "name[:slots]" -> HostSlots; slots must be positive when given.
std::optional<HostSlots> parse_host_entry(const std::string &entry) {
    HostSlots host;
    auto colon = entry.find(':');
    host.name = entry.substr(0, colon);
    if (host.name.empty()) return std::nullopt;
    if (colon != std::string::npos) {
        auto slots = parse_positive(entry.substr(colon + 1));
        if (!slots) return std::nullopt;
        host.slots = *slots;
    }
    return host;
}

bool parse_map_by(const std::string &text, MapPolicy &policy) {
    if (text == "slot" || text == "core") {
        policy.kind = MapPolicy::Kind::slot;
        return true;
    }
    if (text == "node") {
        policy.kind = MapPolicy::Kind::node;
        return true;
    }
    // ppr:N:node
    if (text.rfind("ppr:", 0) == 0) {
        auto colon = text.find(':', 4);
        if (colon == std::string::npos || text.substr(colon + 1) != "node") return false;
        auto count = parse_positive(text.substr(4, colon - 4));
        if (!count) return false;
        policy.kind = MapPolicy::Kind::ppr;
        policy.per_node = *count;
        return true;
    }
    return false;
}

bool parse_host_list(const std::string &list, std::vector<HostSlots> &hosts) {
    std::stringstream stream(list);
    std::string entry;
    while (std::getline(stream, entry, ',')) {
        auto host = parse_host_entry(entry);
        if (!host) {
            report("bad host entry '%s' in -H; expected name[:slots]", entry);
            return false;
        }
        hosts.push_back(*host);
    }
    return true;
}

// Hostfile lines: "name", "name:N" or "name slots=N [other keys ignored]";
// '#' starts a comment; blank lines are skipped. Errors name file:line.
bool parse_hostfile(const std::string &path, std::vector<HostSlots> &hosts) {
    std::ifstream file(path);
    if (!file) {
        std::fprintf(stderr, "mpirun: cannot read hostfile '%s': %s\n", path.c_str(), std::strerror(errno));
        return false;
    }
    std::string line;
    size_t found = 0;
    for (int number = 1; std::getline(file, line); ++number) {
        line = line.substr(0, line.find('#'));
        std::stringstream words(line);
        std::string first;
        if (!(words >> first)) continue;
        auto host = parse_host_entry(first);
        if (!host) {
            std::fprintf(stderr, "mpirun: %s:%d: bad host entry '%s'; expected name[:slots] or name slots=N\n",
                         path.c_str(), number, first.c_str());
            return false;
        }
        std::string word;
        while (words >> word) {
            if (word.rfind("slots=", 0) != 0 && word.rfind("max_slots=", 0) != 0) {
                std::fprintf(stderr, "mpirun: %s:%d: unknown key '%s'; expected slots=N\n", path.c_str(), number,
                             word.c_str());
                return false;
            }
            if (word.rfind("max_slots=", 0) == 0) continue;  // Open MPI's; nothing to cap here
            auto slots = parse_positive(word.substr(6));
            if (!slots) {
                std::fprintf(stderr, "mpirun: %s:%d: bad '%s'; slots must be a positive integer\n", path.c_str(),
                             number, word.c_str());
                return false;
            }
            host->slots = *slots;
        }
        hosts.push_back(*host);
        ++found;
    }
    if (found == 0) {
        std::fprintf(stderr, "mpirun: hostfile '%s' names no host\n", path.c_str());
        return false;
    }
    return true;
}

// -x NAME copies mpirun's value; an unset NAME exports nothing (the ranks
// would not have it either way).
void add_exported_variable(const std::string &spec, std::vector<std::string> &exported) {
    if (spec.find('=') != std::string::npos) {
        exported.push_back(spec);
    } else if (const char *value = std::getenv(spec.c_str())) {
        exported.push_back(spec + "=" + value);
    }
}

}  // namespace

ParseOutcome parse_options(int argc, char **argv, LaunchOptions &options) {
    int index = 1;
    for (; index < argc; ++index) {
        std::string word = argv[index];
        if (word == "--") {
            ++index;
            break;
        }
        if (word.size() < 2 || word[0] != '-') break;  // the program starts here

        // Normalise "--name" and "-name" to "name", and split "name=value".
        std::string name = word.substr(word[1] == '-' ? 2 : 1);
        std::optional<std::string> inline_value;
        if (auto eq = name.find('='); eq != std::string::npos) {
            inline_value = name.substr(eq + 1);
            name.resize(eq);
        }
        auto value = [&]() -> std::optional<std::string> {
            if (inline_value) return inline_value;
            if (index + 1 >= argc) {
                report("option '%s' needs a value", word);
                return std::nullopt;
            }
            return std::string(argv[++index]);
        };
        auto flag_only = [&]() {
            if (!inline_value) return true;
            report("option '%s' takes no value", word);
            return false;
        };

        if (name == "n" || name == "np" || name == "c") {
            auto text = value();
            if (!text) return ParseOutcome::exit_failure;
            auto count = parse_positive(*text);
            if (!count) {
                report("the number of ranks must be a positive integer, not '%s'", *text);
                return ParseOutcome::exit_failure;
            }
            options.num_ranks = *count;
        } else if (name == "x") {
            auto text = value();
            if (!text) return ParseOutcome::exit_failure;
            if (text->empty() || text->front() == '=') {
                report("-x needs NAME or NAME=VALUE, not '%s'", *text);
                return ParseOutcome::exit_failure;
            }
            add_exported_variable(*text, options.exported_env);
        } else if (name == "bind-to") {
            auto text = value();
            if (!text) return ParseOutcome::exit_failure;
            if (*text == "core") {
                options.bind = BindPolicy::core;
            } else if (*text == "none") {
                options.bind = BindPolicy::none;
            } else {
                report("--bind-to accepts core or none, not '%s'", *text);
                return ParseOutcome::exit_failure;
            }
        } else if (name == "tag-output") {
            if (!flag_only()) return ParseOutcome::exit_failure;
            options.tag_output = true;
        } else if (name == "display-map") {
            if (!flag_only()) return ParseOutcome::exit_failure;
            options.display_map = true;
        } else if (name == "oversubscribe") {
            if (!flag_only()) return ParseOutcome::exit_failure;
            options.oversubscribe = true;
        } else if (name == "timeout") {
            auto text = value();
            if (!text) return ParseOutcome::exit_failure;
            auto seconds = parse_positive(*text);
            if (!seconds) {
                report("--timeout needs a positive number of seconds, not '%s'", *text);
                return ParseOutcome::exit_failure;
            }
            options.timeout_seconds = *seconds;
        } else if (name == "H" || name == "host") {
            auto text = value();
            if (!text || !parse_host_list(*text, options.hosts)) return ParseOutcome::exit_failure;
        } else if (name == "hostfile" || name == "machinefile") {
            auto text = value();
            if (!text || !parse_hostfile(*text, options.hosts)) return ParseOutcome::exit_failure;
        } else if (name == "map-by") {
            auto text = value();
            if (!text) return ParseOutcome::exit_failure;
            if (!parse_map_by(*text, options.map_by)) {
                report("--map-by accepts slot, node or ppr:N:node, not '%s'", *text);
                return ParseOutcome::exit_failure;
            }
        } else if (name == "launch-agent") {
            auto text = value();
            if (!text) return ParseOutcome::exit_failure;
            if (text->find_first_not_of(" \t") == std::string::npos) {
                report("--launch-agent needs a command, not '%s'", *text);
                return ParseOutcome::exit_failure;
            }
            options.launch_agent = *text;
        } else if (name == "launch-timeout") {
            auto text = value();
            if (!text) return ParseOutcome::exit_failure;
            auto seconds = parse_positive(*text);
            if (!seconds) {
                report("--launch-timeout needs a positive number of seconds, not '%s'", *text);
                return ParseOutcome::exit_failure;
            }
            options.launch_timeout_seconds = *seconds;
        } else if (name == "head-addr") {
            auto text = value();
            if (!text) return ParseOutcome::exit_failure;
            options.head_address = *text;
        } else if (name == "h" || name == "help") {
            std::fputs(help_text, stdout);
            return ParseOutcome::exit_success;
        } else if (name == "V" || name == "version") {
            std::printf("mpirun (Axon MPI) %s\n", PACKAGE_VERSION);
            return ParseOutcome::exit_success;
        } else {
            report("unknown option '%s'", word);
            return ParseOutcome::exit_failure;
        }
    }

    for (; index < argc; ++index) options.program.emplace_back(argv[index]);
    // MPIEXEC_TIMEOUT: the variable MPICH's and Open MPI's launchers honour
    // as a default for --timeout; test harnesses (MPICH's runtests, CI
    // scripts) set it to end hung jobs.
    if (options.timeout_seconds == 0) {
        if (const char *env = std::getenv("MPIEXEC_TIMEOUT"); env && *env) {
            auto seconds = parse_positive(env);
            if (!seconds) {
                report("MPIEXEC_TIMEOUT needs a positive number of seconds, not '%s'", env);
                return ParseOutcome::exit_failure;
            }
            options.timeout_seconds = *seconds;
            options.timeout_origin = "MPIEXEC_TIMEOUT";
        }
    }
    if (options.program.empty()) {
        std::fprintf(stderr, "mpirun: no program to run (see mpirun --help)\n");
        return ParseOutcome::exit_failure;
    }
    // Without -np, the slots decide: of -H/--hostfile, or of a Slurm allocation.
    const char *slurm_nodes = std::getenv("SLURM_JOB_NODELIST");
    if (options.num_ranks == 0 && options.hosts.empty() && options.map_by.kind != MapPolicy::Kind::ppr &&
        !(slurm_nodes && *slurm_nodes)) {
        std::fprintf(stderr, "mpirun: give the number of ranks with -np N (see mpirun --help)\n");
        return ParseOutcome::exit_failure;
    }
    return ParseOutcome::run;
}

}  // namespace axon::launcher
