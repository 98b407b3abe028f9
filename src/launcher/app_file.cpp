// app_file.cpp -- splitting an appfile / configfile into application contexts.
#include "launcher/app_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

namespace axon::launcher {
namespace {

// Splits one logical line into words; false (with `error`) on an open quote.
bool split_words(const std::string &line, std::vector<std::string> &words, std::string &error) {
    std::string word;
    bool in_word = false;
    for (size_t i = 0; i < line.size(); ++i) {
        char c = line[i];
        if (c == ' ' || c == '\t' || c == '\r') {
            if (in_word) words.push_back(std::move(word));
            word.clear();
            in_word = false;
        } else if (c == '#' && !in_word) {
            break;  // a comment runs to the end of the line
        } else if (c == '\'') {
            size_t end = line.find('\'', i + 1);
            if (end == std::string::npos) {
                error = "unmatched single quote";
                return false;
            }
            word.append(line, i + 1, end - i - 1);
            in_word = true;
            i = end;
        } else if (c == '"') {
            size_t j = i + 1;
            for (; j < line.size() && line[j] != '"'; ++j) {
                if (line[j] == '\\' && j + 1 < line.size() &&
                    (line[j + 1] == '"' || line[j + 1] == '\\' || line[j + 1] == '$' || line[j + 1] == '`')) {
                    ++j;
                }
                word += line[j];
            }
            if (j >= line.size()) {
                error = "unmatched double quote";
                return false;
            }
            in_word = true;
            i = j;
        } else if (c == '\\' && i + 1 < line.size()) {
            word += line[++i];
            in_word = true;
        } else {
            word += c;
            in_word = true;
        }
    }
    if (in_word) words.push_back(std::move(word));
    return true;
}

}  // namespace

bool read_app_file(const std::string &path, std::vector<FileSegment> &segments, std::string &error) {
    std::ifstream file(path);
    if (!file) {
        error = "cannot read '" + path + "': " + std::strerror(errno);
        return false;
    }
    std::string physical;
    int number = 0;
    while (std::getline(file, physical)) {
        ++number;
        const int first_line = number;
        std::string line = physical;
        // A backslash at the end continues the line (long argument lists).
        while (!line.empty() && line.back() == '\\' && std::getline(file, physical)) {
            line.pop_back();
            line += ' ';
            line += physical;
            ++number;
        }
        std::vector<std::string> words;
        if (!split_words(line, words, error)) {
            error = path + ":" + std::to_string(first_line) + ": " + error;
            return false;
        }
        FileSegment segment;
        segment.origin = path + ":" + std::to_string(first_line);
        for (auto &word : words) {
            if (word == ":") {
                if (!segment.words.empty()) segments.push_back(segment);
                segment.words.clear();
            } else {
                segment.words.push_back(std::move(word));
            }
        }
        if (!segment.words.empty()) segments.push_back(std::move(segment));
    }
    if (segments.empty()) {
        error = "'" + path + "' describes no program";
        return false;
    }
    return true;
}

}  // namespace axon::launcher
