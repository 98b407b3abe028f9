// progress: the node's CPU page, where each local rank records the CPU it
// last ran on (oversubscribed waits read it: progress.h "where ranks run").
// One shared-memory file per node and job start: a header line, then one
// cache line per local rank, so a rank that moves writes only its own line.
// The layout and its check are pure (no system calls) so the fuzz target can
// run the check on arbitrary bytes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace axon::progress {

constexpr uint64_t kCpuPageMagic = 0x41584f4e43505531ull;  // "AXONCPU1"
constexpr size_t kCpuPageLine = 64;

struct alignas(kCpuPageLine) CpuPageHeader {
  std::atomic<uint64_t> magic;      // written last by the creator
  uint32_t ranks;                   // local ranks, one line each after this one
  int32_t owner_pid;
  std::atomic<uint32_t> attached;   // local ranks other than the creator that mapped it
};

struct alignas(kCpuPageLine) CpuLine {
  std::atomic<int32_t> cpu_plus_one;  // 0: not known
};

inline size_t cpu_page_bytes(uint32_t ranks) { return sizeof(CpuPageHeader) + size_t(ranks) * sizeof(CpuLine); }

inline CpuLine* cpu_lines_of(void* page) {
  return reinterpret_cast<CpuLine*>(static_cast<uint8_t*>(page) + sizeof(CpuPageHeader));
}

// Whether the `size` mapped bytes at `base` are a CPU page made for a node
// of `ranks` local ranks: nullptr when they are, else what is wrong.
inline const char* check_cpu_page(const void* base, size_t size, uint32_t ranks) {
  if (size < sizeof(CpuPageHeader)) return "it is smaller than its header";
  const auto* h = static_cast<const CpuPageHeader*>(base);
  if (h->magic.load(std::memory_order_acquire) != kCpuPageMagic) return "it is not initialised";
  if (h->ranks != ranks) return "its rank count is not the node's";
  if (h->owner_pid <= 0) return "it names no creator process";
  if (cpu_page_bytes(h->ranks) > size) return "its lines extend past its end";
  return nullptr;
}

// Sets up this job start's page: local rank 0 creates and publishes it
// (before the transports' exchange, rte::exchange, which carries its name);
// the others map it on first use after that exchange (connect_cpu_page).
// Returns 0 or an error already reported.
int open_cpu_page();
// Maps the page once the exchange is done (and, on the creator, unlinks it
// once every local rank mapped it); true when nothing is left to do.
bool connect_cpu_page();

}  // namespace axon::progress
