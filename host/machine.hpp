// Machine: what atvoss knows about the CPU it runs on — model, SIMD width, FMA, physical
// cores, cache sizes (read from /proc/cpuinfo and sysfs), a measured single-core FMA peak and
// a measured memory bandwidth — and the Target the host backend tunes for.
//
// The fingerprint (CPU model, family, model number, stepping, the ISA flags the kernels are
// compiled for, physical cores, cache sizes) is the machine's identity: it goes into the Target's name ("host-<12 hex
// of sha256>"), so Target::key() differs across CPUs, results from different CPUs never mix in the database, and a
// lookup from another CPU is simply an unknown target.
//
// The measured figures (peak, bandwidth, and the FMA chains the peak needs) are taken once
// per fingerprint and cached in
// <cache dir>/host-<fingerprint>.json (cache dir: $XDG_CACHE_HOME/atvoss or ~/.cache/atvoss),
// peak and bandwidth rounded to two significant digits so that a re-measurement rarely
// changes the target key.
//
// Mapping onto Target (whose fields describe an NPU; docs/host-backend.md):
//   organisation "cpu"; clock_ghz 1, so a "cycle" is a nanosecond and per-cycle figures are
//   per-ns figures; ai_cores = vector_cores = physical cores;
//   cube_m = fp32 SIMD lanes, cube_n = cube_k = 1, fp32_rate = measured single-core FMA MACs
//   per ns / lanes (so peak_flops(float32) = measured peak x cores);
//   vector_bytes_per_cycle = measured MACs per ns x 4 bytes;
//   l0a = l0b = L1d (operand micro-panels), l0c = vector register file, ub = L1d, l1 = L2,
//   l2 = L3; hbm_bytes_per_cycle = mte2_bytes_per_cycle = measured bandwidth in bytes per ns;
//   fma_chains = measured peak / the rate of one dependent FMA chain;
//   the remaining copy-path figures are estimates marked "est." in Target::source.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/target.hpp"

namespace atvoss::host {

// Where to read the machine from; tests point these at fake directories.
struct MachineRoots {
  std::string proc = "/proc";                       // reads <proc>/cpuinfo
  std::string cpu_sys = "/sys/devices/system/cpu";  // reads <cpu_sys>/cpu0/cache/index*/
};

// Test-only: when set to a directory D, this process describes the machine found under
// D/proc/cpuinfo and D/sys/devices/system/cpu instead of its own, so a farm test can start a
// worker that announces another CPU's fingerprint (docs/host-backend.md "A host farm").
inline constexpr const char* kTestMachineRootEnv = "ATVOSS_TEST_MACHINE_ROOT";
// The roots this_machine() and describe_machine() read: the real ones, or those under
// $ATVOSS_TEST_MACHINE_ROOT.
MachineRoots process_roots();

struct MachineInfo {
  std::string model = "unknown";
  // The CPU's identity below its marketing name (which a virtual machine may blur: every AMD
  // part an "AMD EPYC"): x86 "cpu family", "model", "stepping"; Arm "CPU implementer",
  // "CPU variant", "CPU revision". Empty where /proc/cpuinfo gives none.
  std::string family, model_number, stepping;
  std::string arch;                     // "x86_64" or "aarch64"
  std::vector<std::string> simd_flags;  // sorted: the flags that change generated code
  int physical_cores = 1;
  int simd_bytes = 16;        // widest fp32 vector the code generator uses
  int vector_registers = 16;  // architectural vector registers
  bool fma = false;
  std::int64_t l1d_bytes = 32 << 10, l2_bytes = 256 << 10, l3_bytes = 0;

  int lanes() const { return simd_bytes / 4; }
  bool has_flag(std::string_view flag) const;  // one of simd_flags, e.g. "avx512_vnni"
  // 64 hex digits of sha256 over model, family, model number, stepping, simd_flags, physical
  // cores and the L1d, L2 and L3 sizes: the kernels are compiled with -march=native and
  // blocked for the caches, so a CPU that differs in any of these is another target.
  std::string fingerprint() const;
  // "host-" + the first 12 hex digits of the fingerprint.
  std::string target_name() const;
  // The fingerprint and name of versions before the family and caches were in it (model,
  // the flags of that time, cores): records stored under it on this machine are adopted
  // (former_host_target below).
  std::string legacy_fingerprint() const;
  std::string legacy_target_name() const;
};

// Reads /proc/cpuinfo and the cache sizes under roots; io error naming the file if cpuinfo
// is unreadable. Missing cache entries keep the defaults above.
MachineInfo probe_machine(const MachineRoots& roots = {});

// The measured figures, per core.
struct Calibration {
  double peak_gflops = 0;    // single-core fp32 FMA throughput
  double bandwidth_gbs = 0;  // single-core streaming read bandwidth
  int fma_chains = 0;        // peak / one dependent FMA chain's rate (0: not measured)
};

// Measures them on this machine (under a second).
Calibration measure_calibration(const MachineInfo& info);

struct DescribeOptions {
  MachineRoots roots;
  std::string cache_dir;  // empty: $XDG_CACHE_HOME/atvoss, else $HOME/.cache/atvoss
  // Called only when the cache holds no figures for the fingerprint; tests inject a counter.
  std::function<Calibration(const MachineInfo&)> measure = measure_calibration;
};

std::string default_cache_dir();

// The Target of this machine (see the mapping above). Memoised per process for the default
// options, since the host backend asks on every measurement.
Target describe_machine(const DescribeOptions& options);
const Target& describe_machine();
const MachineInfo& this_machine();

// This machine's target under its legacy name (MachineInfo::legacy_target_name), with the
// figures measured under that name where its cache file still holds them: the key its records
// were stored under before the fingerprint named the family and the caches. A CPU that shared
// the legacy name but differs in its caches or figures had another key, so its records are
// never taken for this machine's.
Target former_host_target(const DescribeOptions& options);

// Whether t is a host target (organisation "cpu"): identified by its fingerprint name.
bool is_host_target(const Target& t);
// bad_input naming both fingerprints unless t is this machine's host target: host results
// never mix across CPUs, so another CPU's target is refused wherever it would be measured.
void require_this_machine(const Target& t);
// The measured single-core fp32 peak a host target carries, in GFLOP/s (fp32_rate, above).
double core_peak_gflops(const Target& t);

}  // namespace atvoss::host
