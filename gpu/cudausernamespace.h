#pragma once

#include <string>

namespace ks {

// Whether CUDA runners of this process make a user namespace (mapping only the user) so that an
// ordinary user's candidates get the network, mount and PID namespaces a host runner gives them.
// Root needs none: it makes those namespaces directly. For anyone else a runner that made one and
// then found no device would fail every job, so the question is asked once per process, of the
// driver itself: `ksearch-runner --probe-confined DIR` makes the namespaces, narrows the
// filesystem to a scratch folder and copies a buffer to the device and back.
struct CudaUserNamespace {
    bool use = false;
    // Why not, when not (the probe's exit and stderr; "root makes the namespaces without one"),
    // for the log (each evaluation's confinement record names the gaps themselves). Empty when used.
    std::string why;
};

// Asked on the first call (one probe, about a second: a device context), the same answer after.
const CudaUserNamespace& cudaUserNamespace();

} // namespace ks
