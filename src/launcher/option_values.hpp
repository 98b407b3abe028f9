// option_values.hpp -- the values of mpirun's options: numbers, host lists
// and hostfiles, --map-by, --bind-to, --rank-by, environment exports.
//
// Each parser returns false with `error` set to the message (without the
// "mpirun: " prefix); the caller says where the value came from.
#pragma once

#include "launcher/options.hpp"

#include <optional>
#include <string>
#include <vector>

namespace axon::launcher {

// A strictly positive decimal integer, or nothing.
std::optional<int> parse_positive(const std::string &text);

// "a,b,,c" -> a b c (empty items dropped).
std::vector<std::string> split_list(const std::string &text, char separator = ',');

// -H / -hosts: "name[:slots],..."; `option` names the option in the error.
bool parse_host_list(const std::string &list, const std::string &option, std::vector<HostSlots> &hosts,
                     std::string &error);

// Hostfile lines (Open MPI's and Hydra's): "name", "name:N", "name slots=N"
// (also "slot", "count"; "max_slots=" is accepted and ignored), '#' starts a
// comment, blank lines are skipped. Errors start with "FILE:LINE: ".
bool parse_hostfile(const std::string &path, std::vector<HostSlots> &hosts, std::string &error);

// --map-by OBJECT[:PE=n][:OVERSUBSCRIBE|NOOVERSUBSCRIBE|SPAN], ppr:N:OBJECT[:...].
bool parse_map_by(const std::string &text, MapPolicy &policy, std::string &error);
// --bind-to LEVEL[:overload-allowed|if-supported], Hydra's core:N (N cores per rank).
bool parse_bind_to(const std::string &text, BindTo &bind, MapPolicy &policy, std::string &error);
// --rank-by slot|node (core and hwthread mean slot here).
bool parse_rank_by(const std::string &text, RankBy &rank_by, std::string &error);

// Sets NAME=value in a NAME=value list (the last setting wins).
void set_variable(std::vector<std::string> &env, const std::string &name, const std::string &value);
// -x NAME / -envlist NAME: mpirun's value, if NAME is set (else nothing).
void export_from_environment(const std::string &name, std::vector<std::string> &env);
// -genvall / -envall: every variable of mpirun's environment but those that
// describe mpirun's own session or launcher (PMIX_*, SLURM_*, SSH_*, PWD, ...).
void export_whole_environment(std::vector<std::string> &env);

// `path` made absolute against `cwd` (no symlink resolution).
std::string absolute_path(const std::string &path, const std::string &cwd);

}  // namespace axon::launcher
