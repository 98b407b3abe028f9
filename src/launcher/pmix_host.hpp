// pmix_host.hpp -- mpirun's embedded PMIx server (libpmix 4.2, server side).
//
// One per process (libpmix keeps global state). The upcalls run on libpmix's
// progress thread: they only record facts (connected, finalized) in atomics or
// queue an abort and wake the main loop through an eventfd; they never block
// and never call back into libpmix synchronously.
#pragma once

#include "base/unique_fd.h"
#include "launcher/job_map.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
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

// Requests libpmix's thread hands to the main loop in a multi-node job.
struct HostEvent {
    enum class Kind {
        fence,         // every local member entered a fence that spans nodes
        modex_request, // a local rank wants the data of a rank on another node
        modex_answer,  // libpmix answered request_local_modex()
        spawn,         // a rank called PMIx_Spawn (MPI_Comm_spawn): start a new job
    };
    Kind kind = Kind::fence;
    uint64_t id = 0;               // handle for release_fence / answer_modex, or the token
    std::vector<uint32_t> ranks;   // fence: member ranks of our nspace (empty with wildcard)
    bool wildcard = false;         // fence: the whole nspace
    uint32_t rank = 0;             // modex: the rank whose data is wanted
    int status = 0;                // modex_answer: a pmix_status_t
    std::string data;              // fence: local contribution; modex_answer: the data
    // spawn: the applications, and the spawning process's nspace.
    struct App {
        std::string command;
        std::vector<std::string> argv;  // argv[0] included
        std::vector<std::string> env;   // NAME=value entries added to the job's environment
        uint32_t maxprocs = 0;
        std::string wdir;               // PMIX_WDIR; empty: mpirun's directory
    };
    std::vector<App> apps;
    std::string nspace;
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
    // Registers the nspace with job-, node- and rank-level information, as
    // seen from node `node` of the map (its local peers, leader, size).
    bool register_job(const std::string &nspace, const JobMap &map, uint32_t node, const std::string &tmpdir,
                      std::string &error);
    // A job started by MPI_Comm_spawn (this node only): registers `nspace`
    // (each rank's application number is its plan's `app`), and tracks its
    // ranks' connected / finalized state apart from the first job's.
    bool register_spawned_job(const std::string &nspace, const JobMap &map, const std::string &tmpdir,
                              std::string &error);
    // Answers a spawn event: the new nspace, or a failure (a pmix_status_t).
    void answer_spawn(uint64_t id, int status, const std::string &nspace);

    // Multi-node mode: fences that span nodes and direct-modex requests for
    // remote ranks become HostEvents for the main loop (single node: fences
    // are answered at once, direct modex finds nothing).
    void set_multi_node(bool on) { multi_node_ = on; }
    std::vector<HostEvent> take_events();
    // Completes a fence with the concatenation of every node's contribution.
    void release_fence(uint64_t id, int status, const std::string &all_data);
    // Answers a modex_request (status: a pmix_status_t).
    void answer_modex(uint64_t id, int status, const std::string &data);
    // Asks libpmix for the data a local rank published; the answer comes as a
    // modex_answer event carrying `token`.
    void request_local_modex(uint32_t rank, uint64_t token);
    // Registers rank's client and adds the PMIx variables to `env` (NAME=value list).
    bool prepare_rank(uint32_t rank, std::vector<std::string> &env, std::string &error);
    bool prepare_rank(const std::string &nspace, uint32_t rank, std::vector<std::string> &env, std::string &error);

    // Readable when abort requests or events are queued; read it, then take_aborts() / take_events().
    int wakeup_fd() const { return wakeup_.get(); }
    void clear_wakeup() const;
    std::vector<AbortRequest> take_aborts();

    bool connected(uint32_t rank) const { return ranks_[rank].connected.load(); }
    bool finalized(uint32_t rank) const { return ranks_[rank].finalized.load(); }
    // The same for the ranks of a spawned job (false when unknown).
    bool connected(const std::string &nspace, uint32_t rank) const;
    bool finalized(const std::string &nspace, uint32_t rank) const;
    const std::string &nspace() const { return nspace_; }

    // Deregisters the nspace and finalizes libpmix; gives up (returns false)
    // when that does not complete within `limit`. Only for clean ends.
    bool shutdown(std::chrono::milliseconds limit);

    // Entry points for the C upcalls (see pmix_host.cpp).
    void note_connected(uint32_t rank);
    void note_finalized(uint32_t rank);
    void note_connected(const char *nspace, uint32_t rank);
    void note_finalized(const char *nspace, uint32_t rank);
    void queue_abort(AbortRequest request);
    void queue_event(HostEvent event);
    // MPI_Publish_name / _Lookup_name / _Unpublish_name: mpirun's name
    // service, one map for every job of this mpirun (upcalls, any thread).
    bool publish_name(const std::string &service, const std::string &value, const std::string &owner_nspace,
                      uint32_t owner_rank);
    bool lookup_name(const std::string &service, std::string &value, std::string &owner_nspace,
                     uint32_t &owner_rank);
    bool unpublish_name(const std::string &service);
    uint64_t remember_callback(void *callback, void *cbdata);
    bool multi_node() const { return multi_node_; }

private:
    struct RankState {
        std::atomic<bool> connected{false};
        std::atomic<bool> finalized{false};
    };

    uint32_t num_ranks_;
    std::unique_ptr<RankState[]> ranks_;  // fixed size: upcalls index it concurrently
    // Spawned jobs: registered by the main thread, read by upcalls.
    struct SpawnedJob {
        uint32_t size = 0;
        std::unique_ptr<RankState[]> ranks;
    };
    struct Published {
        std::string value;
        std::string nspace;
        uint32_t rank = 0;
    };
    std::mutex names_mutex_;
    std::map<std::string, Published> names_;
    mutable std::mutex spawned_mutex_;
    std::map<std::string, SpawnedJob> spawned_;
    const RankState *spawned_rank(const std::string &nspace, uint32_t rank) const;
    bool register_nspace(const std::string &nspace, const JobMap &map, uint32_t node, const std::string &tmpdir,
                         std::string &error);
    std::string nspace_;
    bool started_ = false;
    bool registered_ = false;
    UniqueFd wakeup_;
    std::mutex abort_mutex_;  // guards aborts_, events_, callbacks_, next_id_
    std::vector<AbortRequest> aborts_;
    std::vector<HostEvent> events_;
    struct Callback {
        void *function = nullptr;  // a pmix_modex_cbfunc_t
        void *cbdata = nullptr;
    };
    std::map<uint64_t, Callback> callbacks_;
    uint64_t next_id_ = 1;
    bool multi_node_ = false;
    void wake();
    Callback take_callback(uint64_t id);
};

}  // namespace axon::launcher
