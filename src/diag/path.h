// Path explain (AXON_EXPLAIN=1, axon_info --explain): which protocol a
// point-to-point message takes to a peer and why, from the facts the pml
// decides by. Pure functions: the library (src/pml/explain.cpp) asks them
// with a live transport's capabilities, axon_info with the parameters and
// probes of this node, so both print the same words for the same case.
#pragma once

#include <cstddef>
#include <string>

namespace axon::diag {

enum class PeerClass : unsigned char { Self, SameNode, OtherNode };
const char* peer_class_name(PeerClass peer);  // "itself", "a rank on this node", ...

// What the pml knows of the transport that reaches the peer (btl::Caps).
struct TransportFacts {
  std::string name;              // "sm", "tcp", "verbs", "self"
  size_t eager_limit = 0;        // host memory
  bool can_get = false;          // the receiver reads the sender's buffer in one copy
  bool can_put = false;          // the sender writes the receiver's buffer in one copy
  bool registers = false;        // single copies register (pin) memory with a device
  size_t pack_segment = 0;       // non-contiguous single copies are packed this many bytes at a time (0: whole)
  // GPU memory: the eager limit for device buffers (0: every size goes by
  // handle), and whether CUDA IPC reaches the peer.
  size_t device_eager_limit = 0;
  bool device_ipc = false;
};

// The message being explained.
struct Message {
  size_t length = 0;
  bool device = false;       // GPU memory
  bool synchronous = false;  // MPI_Ssend / MPI_Issend
  bool contiguous = true;
};

// The size classes a line stands for: within the eager limit or above.
enum class SizeClass : unsigned char { Eager, Large };
SizeClass size_class(const TransportFacts& t, const Message& m);

struct PathExplained {
  std::string protocol;  // "eager", "rendezvous (receiver reads, one copy)", ...
  std::string why;       // the rule that chose it, with the parameter that moves it
};
PathExplained explain_path(const TransportFacts& t, const Message& m);

// The parameter that sets a transport's eager limit ("" for self).
std::string eager_limit_parameter(const std::string& transport);
// "8 B", "32 KiB", "1 MiB": sizes as the explain lines print them.
std::string size_text(size_t bytes);

}  // namespace axon::diag
