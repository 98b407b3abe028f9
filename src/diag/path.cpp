// The words of path explain (see path.h). The rules mirror the pml's
// choices in src/pml/protocol.cpp (try_first_message, send_segment),
// src/pml/rndv.cpp (rndv_send_rts) and src/pml/device.cpp
// (device_eager_limit, device_send_rts); tests compare the two
// (test/diag/explain.sh runs a job with AXON_EXPLAIN=1 and checks each line
// against the counters of the protocol that ran).
#include "diag/path.h"

namespace axon::diag {

const char* peer_class_name(PeerClass peer) {
  switch (peer) {
    case PeerClass::Self:
      return "itself";
    case PeerClass::SameNode:
      return "a rank on this node";
    default:
      return "a rank on another node";
  }
}

std::string size_text(size_t bytes) {
  if (bytes >= (size_t(1) << 20) && bytes % (size_t(1) << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

std::string eager_limit_parameter(const std::string& transport) {
  if (transport == "sm") return "AXON_BTL_SM_EAGER_LIMIT";
  if (transport == "tcp") return "AXON_BTL_TCP_EAGER_LIMIT";
  if (transport == "verbs") return "AXON_BTL_VERBS_EAGER_LIMIT";
  return "";  // self: fixed
}

namespace {

size_t eager_limit_for(const TransportFacts& t, const Message& m) {
  return m.device ? t.device_eager_limit : t.eager_limit;
}

// "sm's eager limit of 32 KiB (AXON_BTL_SM_EAGER_LIMIT)"
std::string limit_text(const TransportFacts& t, const Message& m) {
  std::string s = t.name + "'s eager limit";
  if (m.device) s += " for GPU memory";
  s += " of " + size_text(eager_limit_for(t, m));
  const std::string param = m.device ? std::string("AXON_ACCEL_EAGER_LIMIT") : eager_limit_parameter(t.name);
  if (!param.empty()) s += " (" + param + ")";
  return s;
}

// How a transport moves a single copy.
std::string single_copy_how(const TransportFacts& t, bool read) {
  if (t.name == "sm") return read ? "with process_vm_readv (CMA)" : "with process_vm_writev (CMA)";
  if (t.name == "self") return "with memcpy";
  if (t.registers)
    return std::string(read ? "by RDMA read" : "by RDMA write") +
           ", the buffer registered with the NIC through the registration cache (AXON_RCACHE)";
  return read ? "by a read of the sender's memory" : "by a write into the receiver's memory";
}

}  // namespace

SizeClass size_class(const TransportFacts& t, const Message& m) {
  if (m.device && t.device_eager_limit == 0) return SizeClass::Large;
  return m.length <= eager_limit_for(t, m) ? SizeClass::Eager : SizeClass::Large;
}

PathExplained explain_path(const TransportFacts& t, const Message& m) {
  PathExplained e;
  if (m.device) {
    if (t.name == "self") {
      e.protocol = "one device copy";
      e.why = "a message to itself: the receive copies straight from the sender's GPU buffer, at every size";
      return e;
    }
    if (size_class(t, m) == SizeClass::Eager) {
      e.protocol = "eager from a pinned host copy";
      e.why = "within " + limit_text(t, m) +
              ": one copy from the GPU to a pinned host buffer, then the host eager path (the peer is not "
              "reached by CUDA IPC)";
      return e;
    }
    if (t.device_ipc) {
      e.protocol = "CUDA IPC (one device-to-device copy)";
      e.why = t.device_eager_limit == 0
                  ? "the peer maps this process's GPU allocation by its IPC handle (cached per allocation) "
                    "and copies once, at every size (AXON_ACCEL_IPC)"
                  : "above " + limit_text(t, m) + ": the peer maps the allocation by its IPC handle and copies once";
      return e;
    }
    e.protocol = "rendezvous staged through pinned host chunks";
    e.why = (t.device_eager_limit ? "above " + limit_text(t, m) + ": " : std::string()) +
            "CUDA IPC does not reach the peer (another node, AXON_ACCEL_IPC=0, or managed memory), so the "
            "sender copies the data down in pinned chunks while the previous chunk goes out";
    return e;
  }
  if (size_class(t, m) == SizeClass::Eager) {
    e.protocol = m.synchronous ? "eager, synchronous (the receiver acknowledges the match)" : "eager";
    e.why = "within " + limit_text(t, m) + ": the data goes with the match header";
    if (!m.contiguous) e.why += ", packed straight into the transport's buffer";
    if (m.synchronous) e.why += "; MPI_Ssend completes when the receiver's acknowledgement arrives";
    return e;
  }
  const std::string above = "above " + limit_text(t, m);
  if (t.can_get) {
    e.protocol = "rendezvous, the receiver reads (one copy)";
    e.why = above + ": the sender announces the buffer, the receiver copies it " + single_copy_how(t, true) +
            " and answers when done";
  } else if (t.can_put) {
    e.protocol = "rendezvous, the sender writes (one copy)";
    e.why = above + ": the receiver exposes its buffer, the sender writes it " + single_copy_how(t, false);
  } else {
    e.protocol = "rendezvous in fragments";
    e.why = above + ": " + t.name +
            " has no single copy, so after the receiver matched the message the sender streams it in "
            "fragments of the eager limit";
    if (t.name == "sm") e.why += " (CMA is not allowed here: ptrace scope, or AXON_BTL_SM_CMA=0)";
  }
  if (!m.contiguous && (t.can_get || t.can_put)) {
    e.why += t.pack_segment && m.length > 2 * t.pack_segment
                 ? "; the non-contiguous data is packed " + size_text(t.pack_segment) +
                       " at a time while the previous segment is read (AXON_PML_PACK_SEGMENT)"
                 : "; the non-contiguous data is packed whole first";
  }
  return e;
}

}  // namespace axon::diag
