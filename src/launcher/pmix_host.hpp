// pmix_host.hpp -- mpirun's embedded PMIx server (libpmix 4.2, server side).
//
// One per process (libpmix keeps global state). The upcalls run on libpmix's
// progress thread: they only record facts (connected, finalized) in atomics or
// queue an abort and wake the main loop through an eventfd; they never block
// and never call back into libpmix synchronously.
#pragma once

#include "launcher/job_map.hpp"
#include "launcher/unique_fd.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace axon::launcher {

struct AbortRequest {
    uint32_t rank = 0;
    int status = 0;
    std::string message;
};

class PmixHost {
public:
    explicit PmixHost(uint32_t num_ranks);
    PmixHost(const PmixHost &) = delete;
    PmixHost &operator=(const PmixHost &) = delete;
    // Does not tear libpmix down: after an abnormal end that can hang or
    // crash (4.2.2), so teardown is the explicit, guarded shutdown().
    ~PmixHost();

    // PMIx_server_init with the job's tmpdir; PMIX_MCA_gds must already be set.
    bool start(const std::string &tmpdir, const std::string &hostname, const Topology &topology,
               std::string &error);
    // Registers the nspace with job-, node- and rank-level information.
    bool register_job(const std::string &nspace, const JobMap &map, const std::string &tmpdir,
                      std::string &error);
    // Registers rank's client and adds the PMIx variables to `env` (NAME=value list).
    bool prepare_rank(uint32_t rank, std::vector<std::string> &env, std::string &error);

    // Readable when abort requests are queued; read it, then take_aborts().
    int wakeup_fd() const { return wakeup_.get(); }
    void clear_wakeup() const;
    std::vector<AbortRequest> take_aborts();

    bool connected(uint32_t rank) const { return ranks_[rank].connected.load(); }
    bool finalized(uint32_t rank) const { return ranks_[rank].finalized.load(); }

    // Deregisters the nspace and finalizes libpmix; gives up (returns false)
    // when that does not complete within `limit`. Only for clean ends.
    bool shutdown(std::chrono::milliseconds limit);

    // Entry points for the C upcalls (see pmix_host.cpp).
    void note_connected(uint32_t rank);
    void note_finalized(uint32_t rank);
    void queue_abort(AbortRequest request);

private:
    struct RankState {
        std::atomic<bool> connected{false};
        std::atomic<bool> finalized{false};
    };

    uint32_t num_ranks_;
    std::unique_ptr<RankState[]> ranks_;  // fixed size: upcalls index it concurrently
    std::string nspace_;
    bool started_ = false;
    bool registered_ = false;
    UniqueFd wakeup_;
    std::mutex abort_mutex_;
    std::vector<AbortRequest> aborts_;
};

}  // namespace axon::launcher
