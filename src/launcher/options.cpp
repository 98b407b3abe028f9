// options.cpp -- parsing of the mpirun command line.
//
// The spellings of both families are accepted: Open MPI's (-x, --map-by,
// --npernode, --app FILE, --mca ...) and MPICH Hydra's (-genv, -env, -ppn,
// -f, -hosts, -configfile FILE ...). Long options take one or two dashes and
// "--opt=value" as well as "--opt value".
//
// The command line is one or more application contexts separated by ':'
// words (MPMD): options, then the program and its arguments. Options that
// describe a context (-n, -x, -env*, -wdir, -H) belong to the context they
// appear in; every other option is the job's, wherever it appears. `--`
// ends the options: the rest, ':' included, is the program's. With --app or
// -configfile the contexts come from the file, one per line; the command
// line's context options are then the defaults of every line, and the
// command line's job options win over the file's (as in Hydra).
#include "launcher/app_file.hpp"
#include "launcher/head_address.hpp"
#include "launcher/mca_params.hpp"
#include "launcher/option_values.hpp"
#include "launcher/options.hpp"

#include "axon_config.h"

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <set>

namespace axon::launcher {
namespace {

// A context while it is parsed: -envall / -envnone apply at the end, so
// explicit -env settings win whatever their order.
struct ContextState {
    AppContext app;
    bool env_all = false;
    bool inherited_hosts = false;  // hosts copied from the command line's defaults
};

// Where the words being parsed come from.
struct Source {
    explicit Source(const std::vector<std::string> &w, bool file = false, std::string origin = {})
        : words(w), from_file(file), where(std::move(origin)) {}
    const std::vector<std::string> &words;
    size_t index = 0;
    bool from_file = false;
    std::string where;      // "" (the command line) or "FILE:LINE"
    bool separator = false; // the last context ended with ':'
};

enum class Result { next, exit_success, exit_failure };

class Parser {
public:
    explicit Parser(LaunchOptions &options) : options_(options) {}
    ParseOutcome run(int argc, char **argv);

private:
    Result parse_context(Source &source, ContextState &context);
    Result option(Source &source, const std::string &word, ContextState &context);
    bool finish(std::vector<ContextState> &contexts);
    // A job option given in a file is dropped when the command line set it.
    bool take_global(const Source &source, const std::string &key);
    void error(const Source &source, const std::string &message) const;

    LaunchOptions &options_;
    McaSettings mca_;
    std::set<std::string> command_line_globals_;
    std::vector<std::string> global_explicit_env_;
    bool global_env_all_ = false;
    std::string app_file_;
    std::vector<std::string> head_interfaces_;
    bool bind_given_ = false, map_given_ = false, rank_given_ = false, agent_given_ = false;
};

void Parser::error(const Source &source, const std::string &message) const {
    std::string where = source.where.empty() ? std::string() : source.where + ": ";
    std::fprintf(stderr, "mpirun: %s%s (see mpirun --help)\n", where.c_str(), message.c_str());
}

bool Parser::take_global(const Source &source, const std::string &key) {
    if (!source.from_file) {
        command_line_globals_.insert(key);
        return true;
    }
    return command_line_globals_.count(key) == 0;
}

// Options, then the program and its arguments up to a ':' word (consumed).
Result Parser::parse_context(Source &source, ContextState &context) {
    bool verbatim = false;
    source.separator = false;
    while (source.index < source.words.size()) {
        const std::string &word = source.words[source.index];
        if (word == "--") {
            ++source.index;
            verbatim = true;
            break;
        }
        if (word.size() < 2 || word[0] != '-') break;
        ++source.index;
        if (Result result = option(source, word, context); result != Result::next) return result;
    }
    while (source.index < source.words.size()) {
        const std::string &word = source.words[source.index++];
        if (!verbatim && word == ":") {
            source.separator = true;
            break;
        }
        context.app.argv.push_back(word);
    }
    return Result::next;
}

Result Parser::option(Source &source, const std::string &word, ContextState &context) {
    // Normalise "--name" and "-name" to "name", and split "name=value".
    std::string name = word.substr(word[1] == '-' ? 2 : 1);
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos) {
        inline_value = name.substr(eq + 1);
        name.resize(eq);
    }
    bool failed = false;
    auto value = [&]() -> std::string {
        if (inline_value) return *inline_value;
        if (source.index >= source.words.size()) {
            error(source, "option '" + word + "' needs a value");
            failed = true;
            return {};
        }
        return source.words[source.index++];
    };
    auto flag = [&]() {
        if (inline_value) {
            error(source, "option '" + word + "' takes no value");
            failed = true;
        }
        return !failed;
    };
    // NAME VALUE, or NAME=VALUE in one word (-genv, -env, --mca).
    auto pair = [&](bool equals_allowed) -> std::pair<std::string, std::string> {
        if (!inline_value && source.index >= source.words.size()) {
            error(source, "option '" + word + "' needs a name and a value");
            failed = true;
            return {};
        }
        std::string first = value();
        if (auto eq = first.find('='); equals_allowed && eq != std::string::npos && eq > 0)
            return {first.substr(0, eq), first.substr(eq + 1)};
        if (source.index >= source.words.size()) {
            error(source, "option '" + word + "' needs a name and a value");
            failed = true;
            return {};
        }
        return {first, source.words[source.index++]};
    };
    auto positive = [&](const std::string &what) -> int {
        std::string text = value();
        if (failed) return 0;
        auto number = parse_positive(text);
        if (!number) {
            error(source, what + ", not '" + text + "'");
            failed = true;
            return 0;
        }
        return *number;
    };
    auto outcome = [&] { return failed ? Result::exit_failure : Result::next; };
    AppContext &app = context.app;

    // ---- the context's own options ----
    if (name == "n" || name == "np" || name == "c") {
        int count = positive("the number of ranks must be a positive integer");
        if (!failed) app.num_ranks = count;
    } else if (name == "x") {
        std::string spec = value();
        if (failed) return outcome();
        if (spec.empty() || spec.front() == '=') {
            error(source, "-x needs NAME or NAME=VALUE, not '" + spec + "'");
            return Result::exit_failure;
        }
        if (auto eq = spec.find('='); eq != std::string::npos) {
            set_variable(app.env, spec.substr(0, eq), spec.substr(eq + 1));
        } else {
            export_from_environment(spec, app.env);  // unset: nothing (the ranks would not have it either)
        }
    } else if (name == "env") {
        auto [variable, text] = pair(true);
        if (!failed) set_variable(app.env, variable, text);
    } else if (name == "envlist") {
        for (const auto &variable : split_list(value())) export_from_environment(variable, app.env);
    } else if (name == "envall" || name == "envnone") {
        if (flag()) context.env_all = name == "envall";
    } else if (name == "wdir" || name == "wd") {
        std::string dir = value();
        if (!failed) app.wdir = absolute_path(dir, options_.cwd);
    } else if (name == "H" || name == "host") {
        std::string list = value();
        if (failed) return outcome();
        if (context.inherited_hosts) {
            app.hosts.clear();  // a file line's -H replaces the command line's
            context.inherited_hosts = false;
        }
        std::string why;
        if (!parse_host_list(list, word, app.hosts, why)) {
            error(source, why);
            return Result::exit_failure;
        }

    // ---- environment of every context ----
    } else if (name == "genv") {
        auto [variable, text] = pair(true);
        if (!failed) set_variable(global_explicit_env_, variable, text);
    } else if (name == "genvlist") {
        for (const auto &variable : split_list(value())) export_from_environment(variable, global_explicit_env_);
    } else if (name == "genvall" || name == "genvnone") {
        if (flag() && take_global(source, "genvall")) global_env_all_ = name == "genvall";
    } else if (name == "mca" || name == "gmca") {
        auto [parameter, text] = pair(false);
        if (failed) return outcome();
        if (std::string note = apply_mca(parameter, text, mca_); !note.empty())
            std::fprintf(stderr, "mpirun: %s\n", note.c_str());

    // ---- hosts and placement ----
    } else if (name == "hosts") {
        std::string why, list = value();
        if (!failed && !parse_host_list(list, word, options_.hosts, why)) {
            error(source, why);
            return Result::exit_failure;
        }
    } else if (name == "f" || name == "hostfile" || name == "machinefile" || name == "default-hostfile") {
        std::string why, path = value();
        if (failed) return outcome();
        if (!parse_hostfile(absolute_path(path, options_.cwd), options_.hosts, why)) {
            std::fprintf(stderr, "mpirun: %s%s\n", source.where.empty() ? "" : (source.where + ": ").c_str(),
                         why.c_str());
            return Result::exit_failure;
        }
    } else if (name == "ppn" || name == "npernode" || name == "N" || name == "npersocket") {
        int count = positive("-" + name + " needs a positive number of ranks");
        if (!failed && take_global(source, "map-by")) {
            map_given_ = true;
            options_.map_by.per_object = count;
            options_.map_by.kind = name == "ppn" ? MapPolicy::Kind::block : MapPolicy::Kind::ppr;
            options_.map_by.ppr_object = name == "npersocket" ? Level::socket : Level::node;
        }
    } else if (name == "pernode" || name == "bynode" || name == "byslot") {
        if (flag() && take_global(source, "map-by")) {
            map_given_ = true;
            if (name == "pernode") {
                options_.map_by.kind = MapPolicy::Kind::ppr;
                options_.map_by.per_object = 1;
                options_.map_by.ppr_object = Level::node;
            } else {
                options_.map_by.kind = name == "bynode" ? MapPolicy::Kind::node : MapPolicy::Kind::slot;
            }
        }
    } else if (name == "map-by") {
        std::string text = value(), why;
        if (failed) return outcome();
        if (!take_global(source, "map-by")) return Result::next;
        if (!parse_map_by(text, options_.map_by, why)) {
            error(source, why);
            return Result::exit_failure;
        }
        map_given_ = true;
    } else if (name == "rank-by") {
        std::string text = value(), why;
        if (failed) return outcome();
        if (!take_global(source, "rank-by")) return Result::next;
        if (!parse_rank_by(text, options_.rank_by, why)) {
            error(source, why);
            return Result::exit_failure;
        }
        rank_given_ = true;
    } else if (name == "bind-to" || name == "bind-to-core" || name == "bind-to-socket" || name == "bind-to-none") {
        std::string text = name == "bind-to" ? value() : name.substr(8), why;
        if (failed || (name != "bind-to" && !flag())) return Result::exit_failure;
        if (!take_global(source, "bind-to")) return Result::next;
        if (!parse_bind_to(text, options_.bind, options_.map_by, why)) {
            error(source, why);
            return Result::exit_failure;
        }
        bind_given_ = true;
    } else if (name == "cpus-per-proc" || name == "cpus-per-rank") {
        int count = positive("--" + name + " needs a positive number of cores");
        if (!failed && take_global(source, "pe")) options_.map_by.cores_per_rank = count;
    } else if (name == "cpu-set" || name == "cpu-list") {
        std::string list = value();
        if (failed) return outcome();
        if (list.empty() || list.find_first_not_of("0123456789,-") != std::string::npos) {
            error(source, "--" + name + " needs a cpu list such as 0-3,8, not '" + list + "'");
            return Result::exit_failure;
        }
        if (take_global(source, "cpu-set")) options_.cpu_set = list;
    } else if (name == "report-bindings") {
        if (flag()) options_.report_bindings = true;
    } else if (name == "display-map" || name == "display-devel-map" || name == "print-rank-map") {
        if (flag()) options_.display_map = true;
    } else if (name == "oversubscribe" || name == "allow-run-as-root") {
        // Accepted: oversubscription is always allowed, and root needs no flag.
        if (flag() && name == "oversubscribe") options_.oversubscribe = true;

    // ---- output ----
    } else if (name == "tag-output" || name == "l" || name == "prepend-rank") {
        if (flag()) options_.tag_output = true;
        if (!failed && name != "tag-output") options_.hydra_tags = true;
    } else if (name == "output-filename") {
        std::string dir = value();
        if (failed) return outcome();
        // Open MPI's directives after a ':': nocopy (files only), nojobid (no "1/" level).
        bool copy = true, jobid = true;
        if (auto colon = dir.rfind(':'); colon != std::string::npos) {
            std::vector<std::string> directives = split_list(dir.substr(colon + 1));
            bool known = !directives.empty();
            for (const auto &d : directives) known = known && (d == "nocopy" || d == "nojobid");
            if (known) {
                for (const auto &d : directives) (d == "nocopy" ? copy : jobid) = false;
                dir.resize(colon);
            }
        }
        if (dir.empty()) {
            error(source, "--output-filename needs a directory");
            return Result::exit_failure;
        }
        if (take_global(source, "output-filename")) {
            options_.output_dir = absolute_path(dir, options_.cwd);
            options_.output_copy = copy;
            options_.output_jobid = jobid;
        }
    } else if (name == "timeout") {
        int seconds = positive("--timeout needs a positive number of seconds");
        if (!failed && take_global(source, "timeout")) options_.timeout_seconds = seconds;
    } else if (name == "no-hang-report") {
        if (flag()) options_.hang_report_on_timeout = false;
    } else if (name == "report" || name == "report-file") {
        // The library's end-of-run report (AXON_REPORT, AXON_REPORT_FILE), in every rank.
        std::string text = value();
        if (failed) return outcome();
        if (text.empty()) {
            error(source, "--" + name + " needs a value");
            return Result::exit_failure;
        }
        if (!take_global(source, name)) return Result::next;
        if (name == "report-file") text = absolute_path(text, options_.cwd);
        set_variable(global_explicit_env_, name == "report" ? "AXON_REPORT" : "AXON_REPORT_FILE", text);

    // ---- other nodes ----
    } else if (name == "launch-agent" || name == "launcher-exec") {
        std::string agent = value();
        if (failed) return outcome();
        if (agent.find_first_not_of(" \t") == std::string::npos) {
            error(source, "--launch-agent needs a command, not '" + agent + "'");
            return Result::exit_failure;
        }
        if (take_global(source, "launch-agent")) options_.launch_agent = agent;
        agent_given_ = true;
    } else if (name == "launch-timeout") {
        int seconds = positive("--launch-timeout needs a positive number of seconds");
        if (!failed && take_global(source, "launch-timeout")) options_.launch_timeout_seconds = seconds;
    } else if (name == "head-addr") {
        std::vector<std::string> addresses = split_list(value());
        if (failed) return outcome();
        if (addresses.empty()) {
            error(source, "--head-addr needs an address, or several separated by commas");
            return Result::exit_failure;
        }
        if (take_global(source, "head-addr")) options_.head_addresses = addresses;
    } else if (name == "iface") {
        std::vector<std::string> interfaces = split_list(value());
        if (!failed && take_global(source, "iface")) head_interfaces_ = interfaces;
    } else if (name == "prefix") {
        std::string dir = value();
        if (!failed && take_global(source, "prefix")) options_.daemon_prefix = absolute_path(dir, options_.cwd);

    // ---- files of contexts ----
    } else if (name == "app" || name == "configfile") {
        std::string path = value();
        if (failed) return outcome();
        if (source.from_file) {
            error(source, "-" + name + " cannot be used inside an application file");
            return Result::exit_failure;
        }
        if (!app_file_.empty()) {
            error(source, "only one --app or -configfile file can be given");
            return Result::exit_failure;
        }
        app_file_ = absolute_path(path, options_.cwd);

    // ---- refused, help, version ----
    } else if (name == "s" || name == "preload-binary" || name == "preload-files") {
        std::fprintf(stderr,
                     "mpirun: %s%s is not supported: Axon does not copy files to the nodes; install the program "
                     "at the same path on every node, or on a shared file system\n",
                     word.c_str(), name == "s" ? " (--preload-binary)" : "");
        return Result::exit_failure;
    } else if (name == "h" || name == "help") {
        std::fputs(mpirun_help_text, stdout);
        return Result::exit_success;
    } else if (name == "V" || name == "version") {
        std::printf("mpirun (Axon MPI) %s\n", PACKAGE_VERSION);
        return Result::exit_success;
    } else {
        error(source, "unknown option '" + word + "'");
        return Result::exit_failure;
    }
    return outcome();
}

ParseOutcome Parser::run(int argc, char **argv) {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd)) options_.cwd = cwd;

    std::vector<std::string> words(argv + 1, argv + argc);
    Source command_line(words);
    std::vector<ContextState> contexts;
    do {
        ContextState context;
        context.app.origin = "context " + std::to_string(contexts.size() + 1);
        switch (parse_context(command_line, context)) {
            case Result::exit_success: return ParseOutcome::exit_success;
            case Result::exit_failure: return ParseOutcome::exit_failure;
            case Result::next: break;
        }
        if (context.app.argv.empty() && (command_line.separator || !contexts.empty())) {
            error(command_line, "no program before ':'");
            return ParseOutcome::exit_failure;
        }
        contexts.push_back(std::move(context));
        if (command_line.separator && command_line.index >= words.size()) {
            error(command_line, "no program after ':'");
            return ParseOutcome::exit_failure;
        }
    } while (command_line.index < words.size());

    if (!app_file_.empty()) {
        if (contexts.size() > 1 || !contexts.front().app.argv.empty()) {
            error(command_line, "give the programs either on the command line or in the --app/-configfile file");
            return ParseOutcome::exit_failure;
        }
        std::vector<FileSegment> segments;
        std::string why;
        if (!read_app_file(app_file_, segments, why)) {
            std::fprintf(stderr, "mpirun: %s\n", why.c_str());
            return ParseOutcome::exit_failure;
        }
        const ContextState defaults = contexts.front();
        contexts.clear();
        for (const auto &segment : segments) {
            Source file(segment.words, true, segment.origin);
            ContextState context = defaults;
            context.app.origin = segment.origin;
            context.inherited_hosts = !context.app.hosts.empty();
            switch (parse_context(file, context)) {
                case Result::exit_success: return ParseOutcome::exit_success;
                case Result::exit_failure: return ParseOutcome::exit_failure;
                case Result::next: break;
            }
            if (context.app.argv.empty() || file.index < file.words.size()) {
                error(file, "no program in this line");
                return ParseOutcome::exit_failure;
            }
            contexts.push_back(std::move(context));
        }
    }
    return finish(contexts) ? ParseOutcome::run : ParseOutcome::exit_failure;
}

// Checks what only the whole command line can tell, and fills in options_.
bool Parser::finish(std::vector<ContextState> &contexts) {
    static const std::vector<std::string> no_words;
    Source end(no_words);
    if (contexts.size() == 1 && contexts.front().app.argv.empty()) {
        std::fprintf(stderr, "mpirun: no program to run (see mpirun --help)\n");
        return false;
    }
    // MPIEXEC_TIMEOUT: the variable MPICH's and Open MPI's launchers honour
    // as a default for --timeout; test harnesses (MPICH's runtests, CI
    // scripts) set it to end hung jobs.
    if (options_.timeout_seconds == 0) {
        if (const char *env = std::getenv("MPIEXEC_TIMEOUT"); env && *env) {
            auto seconds = parse_positive(env);
            if (!seconds) {
                error(end, std::string("MPIEXEC_TIMEOUT needs a positive number of seconds, not '") + env + "'");
                return false;
            }
            options_.timeout_seconds = *seconds;
            options_.timeout_origin = "MPIEXEC_TIMEOUT";
        }
    }

    // --mca settings, unless the command line said otherwise; a bad value
    // is reported and ignored, never fatal.
    auto from_mca = [&](const std::string &text, const char *parameter, auto parse) {
        std::string why;
        if (!text.empty() && !parse(text, why))
            std::fprintf(stderr, "mpirun: --mca %s %s ignored: %s\n", parameter, text.c_str(), why.c_str());
    };
    if (!bind_given_)
        from_mca(mca_.bind_to, "hwloc_base_binding_policy", [&](const std::string &t, std::string &why) {
            return parse_bind_to(t, options_.bind, options_.map_by, why);
        });
    if (!map_given_)
        from_mca(mca_.map_by, "rmaps_base_mapping_policy",
                 [&](const std::string &t, std::string &why) { return parse_map_by(t, options_.map_by, why); });
    if (!rank_given_)
        from_mca(mca_.rank_by, "rmaps_base_ranking_policy",
                 [&](const std::string &t, std::string &why) { return parse_rank_by(t, options_.rank_by, why); });
    if (!agent_given_ && !mca_.launch_agent.empty()) options_.launch_agent = mca_.launch_agent;

    // Daemons try these addresses of mpirun in order.
    std::vector<std::string> interfaces = head_interfaces_.empty() ? mca_.head_interfaces : head_interfaces_;
    if (options_.head_addresses.empty() && !interfaces.empty()) {
        std::string why;
        if (!interface_addresses(interfaces, options_.head_addresses, why)) {
            std::fprintf(stderr, "mpirun: -iface: %s\n", why.c_str());
            return false;
        }
    }

    // Every context's environment: --mca's, then -genvall's, then -genv's
    // (later settings win), then the context's own.
    options_.global_env = mca_.env;
    if (global_env_all_) export_whole_environment(options_.global_env);
    for (const auto &entry : global_explicit_env_) {
        auto eq = entry.find('=');
        set_variable(options_.global_env, entry.substr(0, eq), entry.substr(eq + 1));
    }
    for (auto &context : contexts) {
        if (context.env_all) {
            std::vector<std::string> env;
            export_whole_environment(env);
            for (const auto &entry : context.app.env) {
                auto eq = entry.find('=');
                set_variable(env, entry.substr(0, eq), entry.substr(eq + 1));
            }
            context.app.env = std::move(env);
        }
        options_.apps.push_back(std::move(context.app));
    }

    if (options_.apps.size() > 1) {
        for (const auto &app : options_.apps) {
            if (app.num_ranks > 0) continue;
            std::fprintf(stderr,
                         "mpirun: %s (%s) needs -n N: in a job of several programs each gives its number of ranks "
                         "(see mpirun --help)\n",
                         app.origin.c_str(), app.argv.front().c_str());
            return false;
        }
        return true;
    }
    // Without -np, the slots decide: of -H/--hostfile, or of a Slurm allocation.
    const AppContext &only = options_.apps.front();
    const char *slurm_nodes = std::getenv("SLURM_JOB_NODELIST");
    const bool per_node = options_.map_by.kind == MapPolicy::Kind::ppr || options_.map_by.kind == MapPolicy::Kind::block;
    if (only.num_ranks == 0 && options_.hosts.empty() && only.hosts.empty() && !per_node &&
        !(slurm_nodes && *slurm_nodes)) {
        std::fprintf(stderr, "mpirun: give the number of ranks with -np N (see mpirun --help)\n");
        return false;
    }
    return true;
}

}  // namespace

ParseOutcome parse_options(int argc, char **argv, LaunchOptions &options) {
    Parser parser(options);
    return parser.run(argc, argv);
}

}  // namespace axon::launcher
