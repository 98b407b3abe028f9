// job_files.hpp -- the files a job leaves on this node, and their removal.
//
// Contract with the MPI library: every shared-memory object it creates is
// /dev/shm/axon.<sanitized nspace>.<suffix>, where the sanitized nspace has
// every character outside [A-Za-z0-9._-] replaced by '_'. mpirun removes all of
// them, and its per-job PMIx tmpdir, on every exit path it controls.
#pragma once

#include <string>
#include <string_view>

namespace axon::launcher {

// The nspace as it appears in shared-memory object names.
std::string sanitize_nspace(std::string_view nspace);

// A new nspace name "axon.<pid>.<8 random hex digits>".
std::string make_nspace();

class JobFiles {
public:
    explicit JobFiles(std::string nspace) : nspace_(std::move(nspace)) {}
    JobFiles(const JobFiles &) = delete;
    JobFiles &operator=(const JobFiles &) = delete;
    ~JobFiles() { remove_all(); }

    // Creates the private (0700) tmpdir for the PMIx server and the ranks.
    bool create_tmpdir(std::string &error);
    const std::string &tmpdir() const { return tmpdir_; }
    // Takes over a tmpdir another process made (the janitor, for a dead mpirun).
    void adopt_tmpdir(std::string path) { tmpdir_ = std::move(path); }

    // Removes the shared-memory objects of the job and the tmpdir. Idempotent,
    // so the explicit call before _exit and the destructor can both run it.
    void remove_all();

private:
    void remove_shm_objects() const;

    std::string nspace_;
    std::string tmpdir_;
};

}  // namespace axon::launcher
