// Pinning: the CPUs a kernel of `threads` threads is timed on, and the pin itself. The
// CPUs come from this process's affinity set, one logical CPU per physical core first (the
// sysfs topology: package and core id), so that two threads never share one core's SMT
// siblings while another core idles. Used inside atvoss-kernel-runner (kernel_timing.hpp).
#pragma once

#include <string>
#include <vector>

namespace atvoss::host {

// `threads` CPUs of `allowed` (fewer if it has fewer): from the last allowed CPU down when
// first < 0, else from `first` up (wrapping round); distinct physical cores before siblings.
// cpu_sys is where cpuN/topology/{physical_package_id,core_id} are read (tests fake it); a
// CPU without them counts as a core of its own.
std::vector<int> choose_cpus(const std::vector<int>& allowed, int threads, int first,
                             const std::string& cpu_sys = "/sys/devices/system/cpu");

// cpus in their order, keeping the first CPU of each physical core (its siblings dropped).
std::vector<int> distinct_cores(const std::vector<int>& cpus, const std::string& cpu_sys = "/sys/devices/system/cpu");

// This process's affinity set, ascending.
std::vector<int> allowed_cpus();

// Pins the calling thread (and the threads it starts later) to cpus; false if refused.
bool pin_to(const std::vector<int>& cpus);

}  // namespace atvoss::host
