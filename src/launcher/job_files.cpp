// job_files.cpp -- tmpdir creation, shared-memory and tmpdir removal.
#include "launcher/job_files.hpp"

#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <vector>

namespace axon::launcher {

std::string sanitize_nspace(std::string_view nspace) {
    std::string result(nspace);
    for (char &c : result) {
        bool keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
        if (!keep) c = '_';
    }
    return result;
}

std::string make_nspace() {
    uint32_t random_bits = 0;
    if (getrandom(&random_bits, sizeof random_bits, 0) != sizeof random_bits) {
        // No entropy source: time and pid still make a clash between live jobs unlikely.
        random_bits = static_cast<uint32_t>(std::time(nullptr)) ^ (static_cast<uint32_t>(getpid()) << 16);
    }
    char name[64];
    std::snprintf(name, sizeof name, "axon.%d.%08x", static_cast<int>(getpid()), random_bits);
    return name;
}

bool JobFiles::create_tmpdir(std::string &error) {
    // $TMPDIR when usable and short: PMIx puts rendezvous sockets below it and
    // a socket path is limited to 108 bytes.
    std::string base = "/tmp";
    if (const char *env = std::getenv("TMPDIR"); env && *env && std::strlen(env) < 48) {
        struct stat info {};
        if (stat(env, &info) == 0 && S_ISDIR(info.st_mode)) base = env;
    }
    std::string pattern = base + "/" + nspace_ + ".XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (mkdtemp(buffer.data()) == nullptr) {  // mkdtemp creates it with mode 0700
        error = "cannot create a directory like " + pattern + ": " + std::strerror(errno);
        return false;
    }
    tmpdir_ = buffer.data();
    return true;
}

void JobFiles::remove_shm_objects() const {
    const std::string prefix = "axon." + sanitize_nspace(nspace_) + ".";
    // Collected first: removing entries while iterating the directory is
    // allowed to skip or repeat entries.
    std::vector<std::filesystem::path> doomed;
    std::error_code ec;
    for (std::filesystem::directory_iterator it("/dev/shm", ec), end; !ec && it != end; it.increment(ec)) {
        if (it->path().filename().string().compare(0, prefix.size(), prefix) == 0) doomed.push_back(it->path());
    }
    for (const auto &path : doomed) {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
}

void JobFiles::remove_all() {
    remove_shm_objects();
    if (!tmpdir_.empty()) {
        std::error_code ignored;
        std::filesystem::remove_all(tmpdir_, ignored);
        tmpdir_.clear();
    }
}

}  // namespace axon::launcher
