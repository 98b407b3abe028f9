// The node's CPU page (cpu_page.h) and progress::publish_cpu / peer_cpu.
//
// Local rank 0 creates the page "<job shm prefix>.cpu.<random>" exclusively
// with mode 0600 (base/shm_file.h) and publishes its name through PMIx (key
// axon.progress.cpu.<n>, n counting job starts: PMIx may answer a key it
// read before from its cache). The other local ranks map it after the
// start-up exchange, only after checking owner, mode, size and header, and
// the creator unlinks it as soon as all of them have: no file outlives the
// first steps of the job even if it is killed afterwards. It does not depend
// on any transport: with AXON_BTL=self,tcp the ranks of a node still see
// each other's CPUs.
//
// The others map it from a progress hook (and from the first publish_cpu /
// peer_cpu), not during start-up: the name is known only after the
// transports' exchange, which btl::init runs after progress::init.
#include "progress/cpu_page.h"

#include <unistd.h>

#include <string>
#include <vector>

#include "base/backoff.h"
#include "base/log.h"
#include "base/shm_file.h"
#include "btl/btl.h"
#include "progress/progress.h"
#include "rte/rte.h"

namespace axon::progress {

namespace {

constexpr const char* kPageKey = "axon.progress.cpu";

struct Page {
  shm::Mapping map;
  std::string name;
  bool linked = false;  // we created it and have not unlinked it yet
  ~Page() { unlink(); }
  void unlink() {
    if (linked) shm::unlink(name);
    linked = false;
  }
};

Page page;
int starts = 0;              // job starts in this process (the key's number)
std::string key;             // this start's PMIx key
bool settled = true;         // mapped (or given up on) and, on the creator, unlinked
CpuLine* lines = nullptr;    // nullptr until mapped
CpuLine* my_line = nullptr;
std::vector<int> local_of;   // world rank -> local index, -1 off this node

int page_hook() {
  if (connect_cpu_page()) remove_hook(page_hook);
  return 0;
}

// The page as another rank made it: mapped and checked, or an error reported
// (the page is then left alone: waits fall back to yielding).
void map_created_page() {
  const rte::Job& job = rte::job();
  std::vector<uint8_t> card;
  std::string name, why;
  settled = true;  // whatever happens below, not tried again
  if (rte::lookup(job.local_peers[0], key.c_str(), &card) != 0 ||
      !shm::parse_name(card.data(), card.size(), job.shm_prefix, &name)) {
    log::error("local rank %d published no usable name of the node's CPU page", job.local_peers[0]);
    return;
  }
  const auto ranks = static_cast<uint32_t>(job.local_size);
  if (shm::open_existing(name, cpu_page_bytes(ranks), &page.map, &why) != 0) {
    log::error("cannot map the node's CPU page: %s", why.c_str());
    return;
  }
  if (const char* wrong = check_cpu_page(page.map.base(), page.map.size(), ranks)) {
    log::error("the node's CPU page (/dev/shm%s) cannot be used: %s", name.c_str(), wrong);
    page.map.reset();
    return;
  }
  lines = cpu_lines_of(page.map.base());
  my_line = &lines[job.local_rank];
  my_line->cpu_plus_one.store(current_cpu_plus_one(), std::memory_order_relaxed);
  static_cast<CpuPageHeader*>(page.map.base())->attached.fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace

int open_cpu_page() {
  const rte::Job& job = rte::job();
  remove_hook(page_hook);  // a previous start's, if it never settled
  page.unlink();
  page.map.reset();
  lines = my_line = nullptr;
  settled = true;
  local_of.assign(size_t(job.size), -1);
  for (int i = 0; i < job.local_size; ++i) local_of[size_t(job.local_peers[size_t(i)])] = i;
  key = std::string(kPageKey) + "." + std::to_string(starts++);
  if (job.local_size < 2) return 0;  // nobody to tell
  settled = false;
  add_hook(page_hook);
  if (job.local_rank != 0) return 0;
  const auto ranks = static_cast<uint32_t>(job.local_size);
  std::string why;
  if (int err = shm::create(job.shm_prefix, "cpu", cpu_page_bytes(ranks), &page.name, &page.map, &why)) {
    log::error("cannot create the node's CPU page (%zu bytes): %s", cpu_page_bytes(ranks), why.c_str());
    settled = true;
    return err;
  }
  page.linked = true;
  auto* h = static_cast<CpuPageHeader*>(page.map.base());
  h->ranks = ranks;
  h->owner_pid = getpid();
  h->attached.store(0, std::memory_order_relaxed);
  lines = cpu_lines_of(page.map.base());
  my_line = &lines[0];
  my_line->cpu_plus_one.store(current_cpu_plus_one(), std::memory_order_relaxed);
  h->magic.store(kCpuPageMagic, std::memory_order_release);
  return rte::publish(key.c_str(), page.name.data(), page.name.size());
}

bool connect_cpu_page() {
  if (settled) return true;
  const rte::Job& job = rte::job();
  if (page.linked) {  // the creator: unlink once every other local rank mapped it
    const auto* h = static_cast<const CpuPageHeader*>(page.map.base());
    if (h->attached.load(std::memory_order_acquire) < uint32_t(job.local_size - 1)) return false;
    page.unlink();
    settled = true;
    return true;
  }
  // The name is readable once btl::init's exchange ran: it sets the routes
  // (every rank has one to itself) after that.
  if (btl::route(job.rank) == nullptr) return false;
  map_created_page();
  return true;
}

int32_t publish_cpu() {
  int32_t mine = current_cpu_plus_one();
  if (!my_line && !settled) connect_cpu_page();
  if (my_line && my_line->cpu_plus_one.load(std::memory_order_relaxed) != mine)
    my_line->cpu_plus_one.store(mine, std::memory_order_relaxed);
  return mine;
}

int32_t peer_cpu(int peer) {
  if (peer < 0 || size_t(peer) >= local_of.size() || local_of[size_t(peer)] < 0) return 0;
  if (!lines && !settled) connect_cpu_page();
  return lines ? lines[local_of[size_t(peer)]].cpu_plus_one.load(std::memory_order_relaxed) : 0;
}

}  // namespace axon::progress
