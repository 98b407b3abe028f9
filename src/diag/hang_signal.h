// The signal mpirun asks a rank's hang-doctor state with (src/diag/hang.h,
// src/launcher/hang_report.hpp): one definition for both sides.
#pragma once

#include <signal.h>

namespace axon::diag::hang {

// SIGRTMIN+5: NPTL takes the real-time signals below SIGRTMIN, and neither
// libpmix nor libevent use any. A process that has not armed the doctor
// would be ended by it (the default action), so mpirun signals only ranks
// that created their hang-armed.<rank> file.
inline int signal_number() { return SIGRTMIN + 5; }

}  // namespace axon::diag::hang
