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

#include <algorithm>
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
    if (active_host && proc) active_host->note_connected(proc->nspace, proc->rank);
    return PMIX_OPERATION_SUCCEEDED;  // 4.2 passes no callback here
}

pmix_status_t on_client_finalized(const pmix_proc_t *proc, void *, pmix_op_cbfunc_t, void *) {
    if (active_host && proc) active_host->note_finalized(proc->nspace, proc->rank);
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

// PMIx_Spawn from a rank (MPI_Comm_spawn): the request is copied and handed
// to the main loop, which starts the job and answers through answer_spawn.
pmix_status_t on_spawn(const pmix_proc_t *proc, const pmix_info_t[], size_t, const pmix_app_t apps[], size_t napps,
                       pmix_spawn_cbfunc_t done, void *cbdata) {
    if (!active_host || !proc || napps == 0) return PMIX_ERR_BAD_PARAM;
    HostEvent event;
    event.kind = HostEvent::Kind::spawn;
    event.nspace = proc->nspace;
    event.rank = proc->rank;
    for (size_t a = 0; a < napps; ++a) {
        HostEvent::App app;
        app.command = apps[a].cmd ? apps[a].cmd : "";
        for (char **arg = apps[a].argv; arg && *arg; ++arg) app.argv.emplace_back(*arg);
        if (app.argv.empty()) app.argv.push_back(app.command);
        for (char **entry = apps[a].env; entry && *entry; ++entry) app.env.emplace_back(*entry);
        app.maxprocs = apps[a].maxprocs > 0 ? static_cast<uint32_t>(apps[a].maxprocs) : 0;
        for (size_t i = 0; i < apps[a].ninfo; ++i) {
            if (PMIX_CHECK_KEY(&apps[a].info[i], PMIX_WDIR) && apps[a].info[i].value.type == PMIX_STRING &&
                apps[a].info[i].value.data.string) {
                app.wdir = apps[a].info[i].value.data.string;
            }
        }
        if (apps[a].cwd && *apps[a].cwd) app.wdir = apps[a].cwd;
        event.apps.push_back(std::move(app));
    }
    event.id = active_host->remember_callback(reinterpret_cast<void *>(done), cbdata);
    active_host->queue_event(std::move(event));
    return PMIX_SUCCESS;
}

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

// The name service (MPI_Publish_name and friends): answered at once from a
// map guarded by a mutex, on libpmix's thread.
pmix_status_t on_publish(const pmix_proc_t *proc, const pmix_info_t info[], size_t ninfo, pmix_op_cbfunc_t,
                         void *) {
    if (!active_host || !proc) return PMIX_ERR_NOT_SUPPORTED;
    size_t published = 0;
    for (size_t i = 0; i < ninfo; ++i) {
        if (std::strncmp(info[i].key, "pmix.", 5) == 0) continue;  // directives (range, persistence)
        if (info[i].value.type != PMIX_STRING || !info[i].value.data.string) continue;
        if (!active_host->publish_name(info[i].key, info[i].value.data.string, proc->nspace, proc->rank))
            return PMIX_ERR_DUPLICATE_KEY;
        ++published;
    }
    return published ? PMIX_OPERATION_SUCCEEDED : PMIX_ERR_BAD_PARAM;
}

pmix_status_t on_lookup(const pmix_proc_t *, char **keys, const pmix_info_t[], size_t, pmix_lookup_cbfunc_t done,
                        void *cbdata) {
    if (!active_host || !keys) return PMIX_ERR_NOT_SUPPORTED;
    std::vector<pmix_pdata_t> found;
    for (char **key = keys; *key; ++key) {
        std::string value, nspace;
        uint32_t rank = 0;
        if (!active_host->lookup_name(*key, value, nspace, rank)) continue;
        pmix_pdata_t &data = found.emplace_back();
        PMIX_PDATA_CONSTRUCT(&data);
        PMIX_LOAD_PROCID(&data.proc, nspace.c_str(), rank);
        PMIX_LOAD_KEY(data.key, *key);
        PMIX_VALUE_LOAD(&data.value, value.c_str(), PMIX_STRING);
    }
    if (found.empty()) return PMIX_ERR_NOT_FOUND;
    if (done) done(PMIX_SUCCESS, found.data(), found.size(), cbdata);  // libpmix copies what it needs
    for (auto &data : found) PMIX_PDATA_DESTRUCT(&data);
    return PMIX_SUCCESS;
}

pmix_status_t on_unpublish(const pmix_proc_t *, char **keys, const pmix_info_t[], size_t, pmix_op_cbfunc_t,
                           void *) {
    if (!active_host || !keys) return PMIX_ERR_NOT_SUPPORTED;
    size_t removed = 0;
    for (char **key = keys; *key; ++key) {
        if (active_host->unpublish_name(*key)) ++removed;
    }
    return removed ? PMIX_OPERATION_SUCCEEDED : PMIX_ERR_NOT_FOUND;
}

pmix_server_module_t make_module() {
    pmix_server_module_t module;
    std::memset(&module, 0, sizeof module);
    module.client_connected2 = on_client_connected;
    module.client_finalized = on_client_finalized;
    module.abort = on_abort;
    module.fence_nb = on_fence;
    module.direct_modex = on_direct_modex;
    module.spawn = on_spawn;
    module.publish = on_publish;
    module.lookup = on_lookup;
    module.unpublish = on_unpublish;
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
    if (!register_nspace(nspace, map, node, tmpdir, error)) return false;
    registered_ = true;
    return true;
}

bool PmixHost::register_spawned_job(const std::string &nspace, const JobMap &map, const std::string &tmpdir,
                                    std::string &error) {
    {
        std::lock_guard<std::mutex> lock(spawned_mutex_);
        SpawnedJob &job = spawned_[nspace];
        job.size = map.size();
        job.ranks.reset(new RankState[map.size()]);
    }
    return register_nspace(nspace, map, 0, tmpdir, error);
}

bool PmixHost::register_nspace(const std::string &nspace, const JobMap &map, uint32_t node,
                               const std::string &tmpdir, std::string &error) {
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
    // Application contexts (MPMD): their sizes and first ranks; ranks of a
    // context are consecutive.
    const uint32_t num_apps = std::max<uint32_t>(map.num_apps, 1);
    std::vector<uint32_t> app_size(num_apps, 0), app_leader(num_apps, UINT32_MAX);
    for (const auto &plan : map.ranks) {
        uint32_t a = std::min(plan.app, num_apps - 1);
        ++app_size[a];
        app_leader[a] = std::min(app_leader[a], plan.rank);
    }
    job.add_u32(PMIX_JOB_NUM_APPS, num_apps);
    for (uint32_t a = 0; a < num_apps; ++a) {
        InfoList app;
        app.add_u32(PMIX_APPNUM, a);  // first: libpmix keys the array by it
        app.add_u32(PMIX_APP_SIZE, app_size[a]);
        app.add_rank(PMIX_APPLDR, app_leader[a] == UINT32_MAX ? PMIX_RANK_INVALID : app_leader[a]);
        job.add_array(PMIX_APP_INFO_ARRAY, app);
    }
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
        const uint32_t a = std::min(plan.app, num_apps - 1);
        proc.add_u32(PMIX_APPNUM, a);
        proc.add_rank(PMIX_APP_RANK, plan.rank - app_leader[a]);
        if (plan.bound && plan.node == node && plan.cpuset) {
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
    return true;
}

bool PmixHost::prepare_rank(uint32_t rank, std::vector<std::string> &env, std::string &error) {
    return prepare_rank(nspace_, rank, env, error);
}

bool PmixHost::prepare_rank(const std::string &nspace, uint32_t rank, std::vector<std::string> &env,
                            std::string &error) {
    pmix_proc_t proc;
    PMIX_LOAD_PROCID(&proc, nspace.c_str(), rank);
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

bool PmixHost::publish_name(const std::string &service, const std::string &value, const std::string &owner_nspace,
                            uint32_t owner_rank) {
    std::lock_guard<std::mutex> lock(names_mutex_);
    return names_.emplace(service, Published{value, owner_nspace, owner_rank}).second;
}

bool PmixHost::lookup_name(const std::string &service, std::string &value, std::string &owner_nspace,
                           uint32_t &owner_rank) {
    std::lock_guard<std::mutex> lock(names_mutex_);
    auto found = names_.find(service);
    if (found == names_.end()) return false;
    value = found->second.value;
    owner_nspace = found->second.nspace;
    owner_rank = found->second.rank;
    return true;
}

bool PmixHost::unpublish_name(const std::string &service) {
    std::lock_guard<std::mutex> lock(names_mutex_);
    return names_.erase(service) > 0;
}

void PmixHost::answer_spawn(uint64_t id, int status, const std::string &nspace) {
    Callback callback = take_callback(id);
    auto done = reinterpret_cast<pmix_spawn_cbfunc_t>(callback.function);
    if (done) done(status, const_cast<char *>(nspace.c_str()), callback.cbdata);
}

const PmixHost::RankState *PmixHost::spawned_rank(const std::string &nspace, uint32_t rank) const {
    std::lock_guard<std::mutex> lock(spawned_mutex_);
    auto found = spawned_.find(nspace);
    if (found == spawned_.end() || rank >= found->second.size) return nullptr;
    return &found->second.ranks[rank];  // the array never moves once registered
}

bool PmixHost::connected(const std::string &nspace, uint32_t rank) const {
    if (nspace == nspace_) return rank < num_ranks_ && connected(rank);
    const RankState *state = spawned_rank(nspace, rank);
    return state && state->connected.load();
}

bool PmixHost::finalized(const std::string &nspace, uint32_t rank) const {
    if (nspace == nspace_) return rank < num_ranks_ && finalized(rank);
    const RankState *state = spawned_rank(nspace, rank);
    return state && state->finalized.load();
}

void PmixHost::note_connected(const char *nspace, uint32_t rank) {
    if (nspace_ == nspace) return note_connected(rank);
    if (auto *state = const_cast<RankState *>(spawned_rank(nspace, rank))) state->connected = true;
}

void PmixHost::note_finalized(const char *nspace, uint32_t rank) {
    if (nspace_ == nspace) return note_finalized(rank);
    if (auto *state = const_cast<RankState *>(spawned_rank(nspace, rank))) state->finalized = true;
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
    std::vector<std::string> spawned;
    {
        std::lock_guard<std::mutex> lock(spawned_mutex_);
        for (const auto &[name, job] : spawned_) spawned.push_back(name);
    }
    for (const auto &name : spawned) {
        auto *done = new Completion;  // leaked on timeout, as below
        PMIx_server_deregister_nspace(name.c_str(), Completion::callback, done);
        pmix_status_t result;
        if (!done->wait_for(limit, result)) return false;
        delete done;
    }
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
