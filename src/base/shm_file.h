// The job's files in /dev/shm (btl/sm rings, node-level collective
// segments, shared windows), made so that nobody else can plant, adopt or
// read them (docs/security.md, "Other users of the node"):
// * a name carries 128 random bits (getrandom) after the job's prefix, so
//   it cannot be guessed from anything visible on the node; the creator
//   hands it to the others through PMIx or a message of the job;
// * the rank that owns a file creates it with O_CREAT | O_EXCL, mode 0600:
//   a name that exists already is never adopted (another name is drawn,
//   with a warning about the file found there);
// * the others open it without O_CREAT and map it only when fstat says it
//   is a regular file of this user, mode 0600, of the size expected.
// Names stay "<prefix>.<what>.<random>", the prefix "/axon.<nspace>" that
// mpirun's clean-up removes (rte.h, src/launcher/job_files.hpp).
#pragma once

#include <cstddef>
#include <string>

namespace axon::shm {

// A shared mapping, unmapped on destruction.
class Mapping {
 public:
  Mapping() = default;
  ~Mapping() { reset(); }
  Mapping(Mapping&& o) noexcept : base_(o.base_), size_(o.size_) {
    o.base_ = nullptr;
    o.size_ = 0;
  }
  Mapping& operator=(Mapping&& o) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  void* base() const { return base_; }
  size_t size() const { return size_; }
  void reset();
  // Hands the mapping to the caller (who munmaps base(), size()).
  void* release() {
    void* b = base_;
    base_ = nullptr;
    size_ = 0;
    return b;
  }

 private:
  friend int create(const std::string&, const std::string&, size_t, std::string*, Mapping*, std::string*);
  friend int open_existing(const std::string&, size_t, Mapping*, std::string*);
  void* base_ = nullptr;
  size_t size_ = 0;
};

// Creates and maps a new file of `size` bytes named
// "<prefix>.<what>.<32 random hex digits>" (exclusively, mode 0600); the
// name, for the others and for unlink(), goes to *name. Returns 0, or an
// errno value with *why saying what failed.
int create(const std::string& prefix, const std::string& what, size_t size, std::string* name, Mapping* out,
           std::string* why);

// Opens and maps (whole) the file `name` another rank of the job created,
// after checking that it is a regular file of this user, mode 0600, of at
// least `min_size` bytes. Returns 0, or an errno value (EPERM: the file is
// not what a rank makes) with *why saying what is wrong.
int open_existing(const std::string& name, size_t min_size, Mapping* out, std::string* why);

// Removes the name (the mappings stay valid).
void unlink(const std::string& name);

// A name received from another rank: true, and the name in *out, when the
// `len` bytes at `bytes` (up to a NUL) are "<prefix>." followed by 1 to 200
// characters of [A-Za-z0-9._-] (no '/': it stays in /dev/shm).
bool parse_name(const void* bytes, size_t len, const std::string& prefix, std::string* out);

}  // namespace axon::shm
