// pmix_host.cpp -- the embedded PMIx server: init, job registration, upcalls.
//
// Pitfalls of libpmix 4.2.2 this file works around (see docs/launcher.md):
// - pmix_server.h does not include pmix.h; both are needed.
// - PMIX_MCA_gds=hash must be in the environment before PMIx_server_init
//   (main sets it; the ranks inherit it).
// - Topology: handing libpmix our hwloc topology (PMIX_TOPOLOGY2) spares it a
//   second discovery; the info entry is built by hand because destructing a
//   loaded PMIX_TOPO value would destroy the topology we still own.
#include "launcher/pmix_host.hpp"

#include <pmix.h>
#include <pmix_server.h>

#include <sys/eventfd.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <cstring>

namespace axon::launcher {
namespace {

// libpmix allows one server per process; the C upcalls reach it through this.
PmixHost *active_host = nullptr;

// Completion of one asynchronous libpmix call, awaited by the main thread.
struct Completion {
    std::mutex mutex;
    std::condition_variable changed;
    bool done = false;
    pmix_status_t status = PMIX_SUCCESS;

    static void callback(pmix_status_t status, void *cbdata) {
        auto *self = static_cast<Completion *>(cbdata);
        std::lock_guard<std::mutex> lock(self->mutex);
        self->status = status;
        self->done = true;
        self->changed.notify_all();
    }
    pmix_status_t wait() {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait(lock, [this] { return done; });
        return status;
    }
    bool wait_for(std::chrono::milliseconds limit, pmix_status_t &result) {
        std::unique_lock<std::mutex> lock(mutex);
        if (!changed.wait_for(lock, limit, [this] { return done; })) return false;
        result = status;
        return true;
    }
};

// An owned array of pmix_info_t (each destructed at the end).
class InfoList {
public:
    InfoList() = default;
    InfoList(const InfoList &) = delete;
    InfoList &operator=(const InfoList &) = delete;
    ~InfoList() {
        for (auto &info : items_) PMIX_INFO_DESTRUCT(&info);
    }

    void add(const char *key, const void *value, pmix_data_type_t type) {
        pmix_info_t &info = items_.emplace_back();
        PMIX_INFO_CONSTRUCT(&info);
        PMIX_INFO_LOAD(&info, key, value, type);
    }
    void add_string(const char *key, const std::string &value) { add(key, value.c_str(), PMIX_STRING); }
    void add_u32(const char *key, uint32_t value) { add(key, &value, PMIX_UINT32); }
    void add_u16(const char *key, uint16_t value) { add(key, &value, PMIX_UINT16); }
    void add_rank(const char *key, pmix_rank_t value) { add(key, &value, PMIX_PROC_RANK); }
    // Moves every entry of `inner` into one PMIX_DATA_ARRAY entry named `key`.
    void add_array(const char *key, InfoList &inner) {
        pmix_data_array_t *array = nullptr;
        PMIX_DATA_ARRAY_CREATE(array, inner.items_.size(), PMIX_INFO);
        std::memcpy(array->array, inner.items_.data(), inner.items_.size() * sizeof(pmix_info_t));
        inner.items_.clear();  // ownership of their contents went into the array
        pmix_info_t &info = items_.emplace_back();
        PMIX_INFO_CONSTRUCT(&info);
        PMIX_LOAD_KEY(info.key, key);
        info.value.type = PMIX_DATA_ARRAY;
        info.value.data.darray = array;
    }
    pmix_info_t *data() { return items_.data(); }
    size_t size() const { return items_.size(); }

private:
    std::vector<pmix_info_t> items_;
};

// Frees a malloc'ed string handed out by libpmix.
struct FreeDeleter {
    void operator()(char *text) const { std::free(text); }
};
using MallocString = std::unique_ptr<char, FreeDeleter>;

// ---- server module upcalls (libpmix progress thread) -------------------------

pmix_status_t on_client_connected(const pmix_proc_t *proc, void *, pmix_info_t[], size_t, pmix_op_cbfunc_t,
                                  void *) {
    if (active_host && proc) active_host->note_connected(proc->rank);
    return PMIX_OPERATION_SUCCEEDED;  // 4.2 passes no callback here
}

pmix_status_t on_client_finalized(const pmix_proc_t *proc, void *, pmix_op_cbfunc_t, void *) {
    if (active_host && proc) active_host->note_finalized(proc->rank);
    return PMIX_OPERATION_SUCCEEDED;  // releases the client from PMIx_Finalize
}

pmix_status_t on_abort(const pmix_proc_t *proc, void *, int status, const char message[], pmix_proc_t[],
                       size_t, pmix_op_cbfunc_t, void *) {
    // Whatever procs were named, MPI_Abort ends the whole job here (the
    // standard allows it); the main loop does the killing.
    if (active_host && proc) active_host->queue_abort({proc->rank, status, message ? message : ""});
    return PMIX_OPERATION_SUCCEEDED;
}

void free_blob(void *blob) { std::free(blob); }

// Called once every local participant has contributed. With one node the
// local contribution is everyone's: hand it straight back. With several, the
// main loop sends it to mpirun, which concatenates every node's and releases
// the fence (release_fence). We own `data`; what we hand back must stay
// valid until libpmix calls the release function.
pmix_status_t on_fence(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t[], size_t, char *data,
                       size_t size, pmix_modex_cbfunc_t done, void *cbdata) {
    if (!active_host || !active_host->multi_node()) {
        if (done) {
            done(PMIX_SUCCESS, data, size, cbdata, free_blob, data);
        } else {
            std::free(data);
        }
        return PMIX_SUCCESS;
    }
    HostEvent event;
    event.kind = HostEvent::Kind::fence;
    for (size_t i = 0; i < nprocs; ++i) {
        if (procs[i].rank == PMIX_RANK_WILDCARD) {
            event.wildcard = true;
        } else {
            event.ranks.push_back(procs[i].rank);
        }
    }
    if (nprocs == 0) event.wildcard = true;
    if (data && size) event.data.assign(data, size);
    std::free(data);
    event.id = active_host->remember_callback(reinterpret_cast<void *>(done), cbdata);
    active_host->queue_event(std::move(event));
    return PMIX_SUCCESS;
}

// A local rank asked for data of a rank on another node (libpmix never asks
// for local ones). Single node: there is no other node.
pmix_status_t on_direct_modex(const pmix_proc_t *proc, const pmix_info_t[], size_t, pmix_modex_cbfunc_t done,
                              void *cbdata) {
    if (!active_host || !active_host->multi_node() || !proc || proc->rank == PMIX_RANK_WILDCARD) {
        return PMIX_ERR_NOT_FOUND;
    }
    HostEvent event;
    event.kind = HostEvent::Kind::modex_request;
    event.rank = proc->rank;
    event.id = active_host->remember_callback(reinterpret_cast<void *>(done), cbdata);
    active_host->queue_event(std::move(event));
    return PMIX_SUCCESS;
}

// libpmix's answer to PMIx_server_dmodex_request (its thread); it frees `data`
// after we return, so it is copied.
void on_local_modex(pmix_status_t status, char *data, size_t size, void *cbdata) {
    auto token = reinterpret_cast<uintptr_t>(cbdata);
    if (!active_host) return;
    HostEvent event;
    event.kind = HostEvent::Kind::modex_answer;
    event.id = token;
    event.status = status;
    if (data && size) event.data.assign(data, size);
    active_host->queue_event(std::move(event));
}

pmix_server_module_t make_module() {
    pmix_server_module_t module;
    std::memset(&module, 0, sizeof module);
    module.client_connected2 = on_client_connected;
    module.client_finalized = on_client_finalized;
    module.abort = on_abort;
    module.fence_nb = on_fence;
    module.direct_modex = on_direct_modex;
    return module;
}

std::string describe(const char *call, pmix_status_t status) {
    return std::string(call) + " failed: " + PMIx_Error_string(status);
}

}  // namespace

PmixHost::PmixHost(uint32_t num_ranks) : num_ranks_(num_ranks), ranks_(new RankState[num_ranks]) {}

PmixHost::~PmixHost() {
    if (active_host == this) active_host = nullptr;
}

bool PmixHost::start(const std::string &tmpdir, const std::string &hostname, const Topology &topology,
                     std::string &error) {
    wakeup_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!wakeup_) {
        error = std::string("eventfd: ") + std::strerror(errno);
        return false;
    }
    active_host = this;

    InfoList settings;
    settings.add_string(PMIX_SERVER_TMPDIR, tmpdir);
    settings.add_string(PMIX_SYSTEM_TMPDIR, tmpdir);
    settings.add_string(PMIX_HOSTNAME, hostname);
    // The call's array: copies of the owned entries plus the borrowed topology.
    std::vector<pmix_info_t> call_info(settings.data(), settings.data() + settings.size());
    pmix_topology_t borrowed_topology;
    borrowed_topology.source = const_cast<char *>("hwloc");
    borrowed_topology.topology = topology.get();
    pmix_info_t &topology_info = call_info.emplace_back();
    PMIX_INFO_CONSTRUCT(&topology_info);
    PMIX_LOAD_KEY(topology_info.key, PMIX_TOPOLOGY2);
    topology_info.value.type = PMIX_TOPO;
    topology_info.value.data.topo = &borrowed_topology;

    static pmix_server_module_t module = make_module();
    pmix_status_t status = PMIx_server_init(&module, call_info.data(), call_info.size());
    if (status != PMIX_SUCCESS) {
        error = describe("PMIx_server_init", status);
        return false;
    }
    started_ = true;
    return true;
}

bool PmixHost::register_job(const std::string &nspace, const JobMap &map, uint32_t node,
                            const std::string &tmpdir, std::string &error) {
    nspace_ = nspace;
    const NodePlan &local = map.nodes.at(node);
    const uint32_t job_size = map.size();
    const uint32_t local_size = static_cast<uint32_t>(local.ranks.size());

    // Node and proc maps as libpmix regular expressions: "host0,host1" and
    // "ranks of node 0;ranks of node 1".
    std::string node_names, ranks_per_node;
    for (const auto &node : map.nodes) {
        if (!node_names.empty()) node_names += ',';
        node_names += node.name;
        if (!ranks_per_node.empty()) ranks_per_node += ';';
        ranks_per_node += rank_list(node.ranks);
    }
    char *raw = nullptr;
    pmix_status_t status = PMIx_generate_regex(node_names.c_str(), &raw);
    MallocString node_regex(raw);
    if (status != PMIX_SUCCESS) {
        error = describe("PMIx_generate_regex", status);
        return false;
    }
    raw = nullptr;
    status = PMIx_generate_ppn(ranks_per_node.c_str(), &raw);
    MallocString proc_regex(raw);
    if (status != PMIX_SUCCESS) {
        error = describe("PMIx_generate_ppn", status);
        return false;
    }

    InfoList job;
    job.add_u32(PMIX_UNIV_SIZE, job_size);
    job.add_u32(PMIX_JOB_SIZE, job_size);
    job.add_u32(PMIX_MAX_PROCS, job_size);
    job.add_string(PMIX_JOBID, nspace);
    job.add_u32(PMIX_NUM_NODES, static_cast<uint32_t>(map.nodes.size()));
    job.add_u32(PMIX_JOB_NUM_APPS, 1);
    job.add(PMIX_NODE_MAP, node_regex.get(), PMIX_REGEX);
    job.add(PMIX_PROC_MAP, proc_regex.get(), PMIX_REGEX);
    job.add_u32(PMIX_LOCAL_SIZE, local_size);
    job.add_u32(PMIX_NODE_SIZE, local_size);
    job.add_string(PMIX_LOCAL_PEERS, rank_list(local.ranks));
    job.add_rank(PMIX_LOCALLDR, local.ranks.empty() ? PMIX_RANK_INVALID : local.ranks.front());
    job.add_u32(PMIX_NODEID, node);
    job.add_string(PMIX_TMPDIR, tmpdir);

    for (const auto &plan : map.ranks) {
        InfoList proc;
        proc.add_rank(PMIX_RANK, plan.rank);
        proc.add_rank(PMIX_GLOBAL_RANK, plan.rank);
        proc.add_u16(PMIX_LOCAL_RANK, plan.local_rank);
        proc.add_u16(PMIX_NODE_RANK, plan.local_rank);  // one job per node: same as local rank
        proc.add_u32(PMIX_NODEID, plan.node);
        proc.add_string(PMIX_HOSTNAME, map.nodes[plan.node].name);
        proc.add_u32(PMIX_APPNUM, 0);
        if (plan.core >= 0 && plan.node == node && plan.cpuset) {
            // Lets the library find peers sharing caches or a NUMA node.
            pmix_cpuset_t cpuset;
            cpuset.source = const_cast<char *>("hwloc");
            cpuset.bitmap = plan.cpuset.get();
            raw = nullptr;
            if (PMIx_server_generate_locality_string(&cpuset, &raw) == PMIX_SUCCESS && raw) {
                MallocString locality(raw);
                proc.add_string(PMIX_LOCALITY_STRING, locality.get());
            }
            raw = nullptr;
            if (PMIx_server_generate_cpuset_string(&cpuset, &raw) == PMIX_SUCCESS && raw) {
                MallocString cpus(raw);
                proc.add_string(PMIX_CPUSET, cpus.get());
            }
        }
        job.add_array(PMIX_PROC_DATA, proc);
    }

    Completion done;
    status = PMIx_server_register_nspace(nspace.c_str(), static_cast<int>(local_size), job.data(), job.size(),
                                         Completion::callback, &done);
    if (status == PMIX_SUCCESS) status = done.wait();
    if (status != PMIX_SUCCESS && status != PMIX_OPERATION_SUCCEEDED) {
        error = describe("PMIx_server_register_nspace", status);
        return false;
    }
    registered_ = true;
    return true;
}

bool PmixHost::prepare_rank(uint32_t rank, std::vector<std::string> &env, std::string &error) {
    pmix_proc_t proc;
    PMIX_LOAD_PROCID(&proc, nspace_.c_str(), rank);
    Completion done;
    pmix_status_t status = PMIx_server_register_client(&proc, geteuid(), getegid(), nullptr,
                                                       Completion::callback, &done);
    if (status == PMIX_SUCCESS) status = done.wait();
    if (status != PMIX_SUCCESS && status != PMIX_OPERATION_SUCCEEDED) {
        error = describe("PMIx_server_register_client", status);
        return false;
    }

    // setup_fork works on a NULL-terminated char** it may grow.
    char **block = nullptr;
    for (const auto &entry : env) {
        pmix_status_t appended;
        PMIX_ARGV_APPEND(appended, block, entry.c_str());
        (void)appended;
    }
    status = PMIx_server_setup_fork(&proc, &block);
    if (status == PMIX_SUCCESS) {
        env.clear();
        for (char **entry = block; entry && *entry; ++entry) env.emplace_back(*entry);
    }
    PMIX_ARGV_FREE(block);
    if (status != PMIX_SUCCESS) {
        error = describe("PMIx_server_setup_fork", status);
        return false;
    }
    return true;
}

void PmixHost::clear_wakeup() const {
    uint64_t count;
    while (read(wakeup_.get(), &count, sizeof count) > 0) {
    }
}

std::vector<AbortRequest> PmixHost::take_aborts() {
    std::lock_guard<std::mutex> lock(abort_mutex_);
    return std::exchange(aborts_, {});
}

void PmixHost::wake() {
    uint64_t one = 1;
    ssize_t written = write(wakeup_.get(), &one, sizeof one);
    (void)written;  // a full counter is still readable: the wakeup is not lost
}

void PmixHost::queue_event(HostEvent event) {
    {
        std::lock_guard<std::mutex> lock(abort_mutex_);
        events_.push_back(std::move(event));
    }
    wake();
}

std::vector<HostEvent> PmixHost::take_events() {
    std::lock_guard<std::mutex> lock(abort_mutex_);
    return std::exchange(events_, {});
}

uint64_t PmixHost::remember_callback(void *callback, void *cbdata) {
    std::lock_guard<std::mutex> lock(abort_mutex_);
    uint64_t id = next_id_++;
    callbacks_[id] = Callback{callback, cbdata};
    return id;
}

PmixHost::Callback PmixHost::take_callback(uint64_t id) {
    std::lock_guard<std::mutex> lock(abort_mutex_);
    auto found = callbacks_.find(id);
    if (found == callbacks_.end()) return {};
    Callback callback = found->second;
    callbacks_.erase(found);
    return callback;
}

// Hands `data` to libpmix in a malloc'ed copy it releases through free_blob.
static void complete_modex_callback(void *function, void *cbdata, int status, const std::string &data) {
    auto done = reinterpret_cast<pmix_modex_cbfunc_t>(function);
    if (!done) return;
    char *copy = static_cast<char *>(std::malloc(data.size() + 1));
    if (!data.empty()) std::memcpy(copy, data.data(), data.size());
    done(status, copy, data.size(), cbdata, free_blob, copy);
}

void PmixHost::release_fence(uint64_t id, int status, const std::string &all_data) {
    Callback callback = take_callback(id);
    complete_modex_callback(callback.function, callback.cbdata, status, all_data);
}

void PmixHost::answer_modex(uint64_t id, int status, const std::string &data) {
    Callback callback = take_callback(id);
    complete_modex_callback(callback.function, callback.cbdata, status, data);
}

void PmixHost::request_local_modex(uint32_t rank, uint64_t token) {
    pmix_proc_t proc;
    PMIX_LOAD_PROCID(&proc, nspace_.c_str(), rank);
    void *cbdata = reinterpret_cast<void *>(static_cast<uintptr_t>(token));
    pmix_status_t status = PMIx_server_dmodex_request(&proc, on_local_modex, cbdata);
    if (status != PMIX_SUCCESS) on_local_modex(status, nullptr, 0, cbdata);
}

void PmixHost::note_connected(uint32_t rank) {
    if (rank < num_ranks_) ranks_[rank].connected = true;
}

void PmixHost::note_finalized(uint32_t rank) {
    if (rank < num_ranks_) ranks_[rank].finalized = true;
}

void PmixHost::queue_abort(AbortRequest request) {
    if (request.rank >= num_ranks_) return;
    {
        std::lock_guard<std::mutex> lock(abort_mutex_);
        aborts_.push_back(std::move(request));
    }
    wake();
}

bool PmixHost::shutdown(std::chrono::milliseconds limit) {
    if (!started_) return true;
    if (registered_) {
        // Heap-allocated: if libpmix never answers, the callback may still
        // fire later, so the completion is deliberately leaked on timeout.
        auto *done = new Completion;
        PMIx_server_deregister_nspace(nspace_.c_str(), Completion::callback, done);
        pmix_status_t result;
        if (!done->wait_for(limit, result)) return false;
        delete done;
        registered_ = false;
    }
    PMIx_server_finalize();
    started_ = false;
    active_host = nullptr;
    return true;
}

}  // namespace axon::launcher
