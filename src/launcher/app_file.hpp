// app_file.hpp -- reading an MPMD description from a file: Open MPI's
// --app FILE (one context per line, "-np 2 prog args") and Hydra's
// -configfile FILE (the same, and ':' may join contexts on one line).
#pragma once

#include <string>
#include <vector>

namespace axon::launcher {

// The words of one application context and where it starts ("FILE:LINE").
struct FileSegment {
    std::string origin;
    std::vector<std::string> words;
};

// Splits the file into contexts: a line is one context, or several joined by
// a ':' word; '#' at the start of a word starts a comment; blank lines are
// skipped; words are split as a shell would (whitespace, '...' and "..."
// quotes, backslash escapes; a backslash at the end of a line continues it).
// Returns false with `error` ("FILE:LINE: ...", or why the file cannot be read).
bool read_app_file(const std::string &path, std::vector<FileSegment> &segments, std::string &error);

}  // namespace axon::launcher
