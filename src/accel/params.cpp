// The AXON_ACCEL_* parameters, declared in every build (also without CUDA)
// so that axon_info --params lists the same set everywhere.
#include "accel/params.h"

namespace axon::accel {

BoolParam enable_param{"AXON_ACCEL", true,
                       "Detect GPU (CUDA) buffers passed to MPI calls; 0: treat every buffer as host memory "
                       "and never load the CUDA driver"};
StringParam library_param{"AXON_ACCEL_CUDA_LIBRARY", "libcuda.so.1",
                          "The CUDA driver library dlopen'ed at the first MPI call that passes a buffer"};
BoolParam ipc_param{"AXON_ACCEL_IPC", true,
                    "Move device buffers between ranks of one node with CUDA IPC (0: always stage "
                    "through pinned host memory)"};
IntParam ipc_mappings_param{"AXON_ACCEL_IPC_MAPPINGS", 256, Range{1, 1 << 20},
                            "Most CUDA IPC mappings of peers' GPU allocations a process keeps open (the least "
                            "recently used is closed beyond it; an open mapping keeps a freed allocation's memory "
                            "alive in the peer)"};
SizeParam eager_param{"AXON_ACCEL_EAGER_LIMIT", 8192,
                      "Device messages up to this size go eager through one synchronous copy "
                      "(capped by the transport's eager limit)"};
SizeParam chunk_param{"AXON_ACCEL_STAGING_CHUNK", 256 * 1024,
                      "Chunk of the pipelined copy between device memory and pinned host memory when a "
                      "device message is staged"};
StringParam copy_wait_param{"AXON_ACCEL_COPY_WAIT", "sync",
                            "How Axon waits for each of its copies of device memory before it uses the data: "
                            "sync (cuStreamSynchronize) or event (an event recorded after the copy and polled; "
                            "the waiter yields its core after a short spin)"};
SizeParam bounce_param{"AXON_ACCEL_BOUNCE_LIMIT", 1024 * 1024,
                       "Copies between device memory and ordinary (pageable) host memory up to this size go "
                       "through a pinned bounce buffer instead of the driver's pageable path"};

SizeParam coll_kernel_min_param{"AXON_ACCEL_COLL_KERNEL_MIN", 1024 * 1024,
                                "Reducing collectives on GPU buffers combine with GPU kernels when the call "
                                "reduces at least this many bytes, else on the CPU: the schedules keep their data "
                                "in host memory, so each kernel combine adds copies to the GPU and back, which "
                                "cost more than the CPU's combine for small data (0: always the kernels)"};

// Read by axon_info --doctor (src/tools/doctor.cpp), declared here with the
// other GPU parameters because parameters live in the library.
StringParam doctor_root_param{"AXON_DOCTOR_ROOT", "",
                              "axon_info --doctor reads /sys and /proc under this folder instead (tests describe a "
                              "machine's GPUs, NICs and PCIe tree with it)"};

}  // namespace axon::accel
