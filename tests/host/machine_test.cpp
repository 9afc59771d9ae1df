// Machine description: cpuinfo and sysfs parsing from fake roots, the fingerprint, the
// calibration cache, and "host" resolving to this machine's target.
#include "host/machine.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "backend/targets.hpp"
#include "core/error.hpp"
#include "host/kernel_abi.hpp"
#include "host_test_util.hpp"

namespace atvoss::host {
namespace {

using testing::TempDir;

void write(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// Two processors on two cores, or more hyper-threads on the same cores; `identity` adds lines
// to each processor (cpu family, model, stepping).
std::string cpuinfo(const std::string& model, const std::string& flags, int cores, int threads_per_core = 1,
                    const std::string& identity = "") {
  std::string s;
  int n = 0;
  for (int c = 0; c < cores; ++c) {
    for (int t = 0; t < threads_per_core; ++t) {
      s += "processor\t: " + std::to_string(n++) + "\n" + identity + "model name\t: " + model +
           "\nphysical id\t: 0\ncore id\t\t: " + std::to_string(c) + "\nflags\t\t: " + flags + "\n\n";
    }
  }
  return s;
}

void write_cache(const std::filesystem::path& sys, int index, const std::string& level, const std::string& type,
                 const std::string& size) {
  const auto dir = sys / "cpu0" / "cache" / ("index" + std::to_string(index));
  write(dir / "level", level + "\n");
  write(dir / "type", type + "\n");
  write(dir / "size", size + "\n");
}

struct FakeMachine {
  TempDir dir;
  MachineRoots roots{(dir.path() / "proc").string(), (dir.path() / "sys").string()};
  explicit FakeMachine(const std::string& model, const std::string& flags = "fpu sse2 avx avx2 fma", int cores = 2,
                       int threads = 1, const std::string& identity = "", const std::string& l1d = "48K") {
    write(dir.path() / "proc" / "cpuinfo", cpuinfo(model, flags, cores, threads, identity));
    const auto sys = dir.path() / "sys";
    write_cache(sys, 0, "1", "Data", l1d);
    write_cache(sys, 1, "1", "Instruction", "32K");
    write_cache(sys, 2, "2", "Unified", "1024K");
    write_cache(sys, 3, "3", "Unified", "32768K");
  }
};

// Options that describe `roots` with a calibration cache in `cache`, measuring `c` and
// counting the measurements in `measured`.
DescribeOptions counting(const MachineRoots& roots, const TempDir& cache, Calibration c, int& measured) {
  return {roots, cache.str(), [c, &measured](const MachineInfo&) {
            ++measured;
            return c;
          }};
}

TEST(MachineTest, ReadsModelSimdCoresAndCachesFromTheRoots) {
  FakeMachine fake("Test CPU 9000", "fpu sse2 avx avx2 fma", 4, 2);
  const MachineInfo m = probe_machine(fake.roots);
  EXPECT_EQ(m.model, "Test CPU 9000");
  EXPECT_EQ(m.physical_cores, 4);  // hyper-threads share a core
  EXPECT_EQ(m.simd_bytes, 32);
  EXPECT_EQ(m.lanes(), 8);
  EXPECT_EQ(m.vector_registers, 16);
  EXPECT_TRUE(m.fma);
  EXPECT_EQ(m.l1d_bytes, 48 << 10);  // the data cache, not the instruction cache
  EXPECT_EQ(m.l2_bytes, 1 << 20);
  EXPECT_EQ(m.l3_bytes, 32 << 20);
  EXPECT_EQ(m.simd_flags, (std::vector<std::string>{"avx", "avx2", "fma", "sse2"}));
}

TEST(MachineTest, Avx512WidensTheVectorsAndRegisters) {
  FakeMachine fake("Wide", "sse2 avx avx2 fma avx512f");
  const MachineInfo m = probe_machine(fake.roots);
  EXPECT_EQ(m.simd_bytes, 64);
  EXPECT_EQ(m.vector_registers, 32);
}

TEST(MachineTest, FingerprintIsStableAndNamesTheCpu) {
  FakeMachine a("Model A"), a2("Model A"), b("Model B"), wide("Model A", "fpu sse2 avx avx2 fma avx512f"),
      more_cores("Model A", "fpu sse2 avx avx2 fma", 8), irrelevant("Model A", "fpu sse2 avx avx2 fma aes");
  const std::string fa = probe_machine(a.roots).fingerprint();
  EXPECT_EQ(fa.size(), 64u);
  EXPECT_EQ(fa, probe_machine(a.roots).fingerprint());
  EXPECT_EQ(fa, probe_machine(a2.roots).fingerprint());
  EXPECT_EQ(fa, probe_machine(irrelevant.roots).fingerprint());  // flags that change no code
  EXPECT_NE(fa, probe_machine(b.roots).fingerprint());
  EXPECT_NE(fa, probe_machine(wide.roots).fingerprint());
  EXPECT_NE(fa, probe_machine(more_cores.roots).fingerprint());
  EXPECT_EQ(probe_machine(a.roots).target_name(), "host-" + fa.substr(0, 12));
}

// A virtual machine names every AMD part "AMD EPYC": a Zen 4 (family 25, 32 KiB L1d) and a
// Zen 5 (family 26, 48 KiB L1d, AVX-VNNI) shared one legacy name. The fingerprint tells them
// apart by family, model, stepping, caches and the flags -march=native compiles for.
TEST(MachineTest, TheFingerprintNamesTheFamilyTheCachesAndTheIsa) {
  const std::string flags = "fpu sse2 avx avx2 fma avx512f avx512_vnni";
  FakeMachine zen4("AMD EPYC", flags, 2, 1, "cpu family\t: 25\nmodel\t\t: 17\nstepping\t: 1\n", "32K"),
      zen5("AMD EPYC", flags + " avx_vnni", 2, 1, "cpu family\t: 26\nmodel\t\t: 2\nstepping\t: 1\n", "48K"),
      zen4_stepping("AMD EPYC", flags, 2, 1, "cpu family\t: 25\nmodel\t\t: 17\nstepping\t: 2\n", "32K"),
      zen4_l1("AMD EPYC", flags, 2, 1, "cpu family\t: 25\nmodel\t\t: 17\nstepping\t: 1\n", "48K"),
      zen4_vnni("AMD EPYC", flags + " avx_vnni", 2, 1, "cpu family\t: 25\nmodel\t\t: 17\nstepping\t: 1\n", "32K");
  const MachineInfo a = probe_machine(zen4.roots), b = probe_machine(zen5.roots);
  EXPECT_EQ(a.family, "25");
  EXPECT_EQ(a.model_number, "17");  // "model", not "model name"
  EXPECT_EQ(a.stepping, "1");
  EXPECT_EQ(a.model, "AMD EPYC");
  EXPECT_EQ(a.legacy_target_name(), b.legacy_target_name());  // what the old fingerprint saw
  std::set<std::string> names;
  for (const FakeMachine* m : {&zen4, &zen5, &zen4_stepping, &zen4_l1, &zen4_vnni}) {
    names.insert(probe_machine(m->roots).target_name());
  }
  EXPECT_EQ(names.size(), 5u);
  EXPECT_EQ(a.target_name(), "host-" + a.fingerprint().substr(0, 12));
}

// Before the fingerprint named the family and the caches, this machine's target had its legacy
// name: the figures measured under it carry over (no measurement), and the former target is
// the same description under that name, so the records stored under its key are this CPU's.
TEST(MachineTest, TheLegacyCalibrationCarriesOverAndNamesTheFormerTarget) {
  FakeMachine fake("Model A");
  TempDir cache;
  const MachineInfo info = probe_machine(fake.roots);
  write(cache.path() / (info.legacy_target_name() + ".json"),
        Json{{"fingerprint", info.legacy_fingerprint()}, {"peak_gflops", 64}, {"bandwidth_gbs", 20}, {"fma_chains", 10}}
            .dump());
  int measured = 0;
  const DescribeOptions o = counting(fake.roots, cache, Calibration{99, 99, 1}, measured);
  const Target now = describe_machine(o);
  EXPECT_EQ(measured, 0);
  EXPECT_EQ(now.name, info.target_name());
  EXPECT_DOUBLE_EQ(now.hbm_bytes_per_second(), 20e9);
  Target former = former_host_target(o);
  EXPECT_EQ(former.name, info.legacy_target_name());
  EXPECT_NE(former.key(), now.key());
  former.name = now.name;
  EXPECT_EQ(former.key(), now.key());  // only the name differs
  EXPECT_EQ(measured, 0);
}

TEST(MachineTest, UnreadableCpuinfoIsAnIoErrorNamingTheFile) {
  MachineRoots roots{"/nonexistent-atvoss", "/nonexistent-atvoss"};
  try {
    probe_machine(roots);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-atvoss/cpuinfo"), std::string::npos);
  }
}

TEST(MachineTest, CalibrationIsMeasuredOncePerFingerprintAndCached) {
  FakeMachine a("Model A"), b("Model B");
  TempDir cache;
  int measured = 0;
  DescribeOptions o = counting(a.roots, cache, Calibration{64, 20, 10}, measured);
  const Target first = describe_machine(o);
  EXPECT_EQ(measured, 1);
  EXPECT_TRUE(std::filesystem::exists(cache.path() / (first.name + ".json")));
  const Target again = describe_machine(o);
  EXPECT_EQ(measured, 1);  // read from the cache file
  EXPECT_EQ(again.key(), first.key());
  EXPECT_EQ(first.organisation, "cpu");
  EXPECT_EQ(first.ai_cores, 2);
  EXPECT_DOUBLE_EQ(first.peak_flops(DType::float32), 64e9 * 2);  // per-core peak x cores
  EXPECT_DOUBLE_EQ(first.hbm_bytes_per_second(), 20e9);
  EXPECT_EQ(first.l1_bytes, 1 << 20);
  EXPECT_EQ(again.fma_chains, 10);  // stored with the others

  o.roots = b.roots;
  const Target other = describe_machine(o);
  EXPECT_EQ(measured, 2);  // another CPU is measured for itself
  EXPECT_NE(other.key(), first.key());
  EXPECT_NE(other.name, first.name);
}

// Processes starting at once on a cold cache: one measures, the others wait and read its
// figures, so they all describe the same target. Each child here would measure something
// else (its pid), as a busy machine does; without the lock their keys differed, and
// processes sharing a database stored under different targets.
TEST(MachineTest, ProcessesOnAColdCacheAgreeOnOneCalibration) {
  FakeMachine a("Model A");
  TempDir cache;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  constexpr int kChildren = 4;
  std::vector<pid_t> children;
  for (int i = 0; i < kChildren; ++i) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      DescribeOptions o{a.roots, cache.str(), [](const MachineInfo&) {
                          ::usleep(100000);  // a measurement takes a while: the others arrive
                          return Calibration{double(::getpid() % 1000 + 10), 20, 4};
                        }};
      const std::string key = describe_machine(o).key() + "\n";
      const ssize_t wrote = ::write(fds[1], key.data(), key.size());
      ::_exit(wrote == ssize_t(key.size()) ? 0 : 1);
    }
    children.push_back(pid);
  }
  ::close(fds[1]);
  for (const pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::string keys;
  char buf[256];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) keys.append(buf, std::size_t(n));
  ::close(fds[0]);
  std::set<std::string> distinct;
  std::istringstream lines(keys);
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count) distinct.insert(line);
  EXPECT_EQ(count, kChildren);
  EXPECT_EQ(distinct.size(), 1u) << keys;
}

TEST(MachineTest, ADamagedCacheFileIsMeasuredAgain) {
  FakeMachine a("Model A");
  TempDir cache;
  int measured = 0;
  DescribeOptions o = counting(a.roots, cache, Calibration{10, 5}, measured);
  const Target t = describe_machine(o);
  std::ofstream(cache.path() / (t.name + ".json")) << "{not json";
  describe_machine(o);
  EXPECT_EQ(measured, 2);
}

// A cache file written before fma_chains was measured is measured again, not read as 0; so
// is one whose value is out of range (it would make a target Target::from_json refuses).
TEST(MachineTest, ACacheFileWithoutFmaChainsIsMeasuredAgain) {
  FakeMachine a("Model A");
  TempDir cache;
  int measured = 0;
  DescribeOptions o = counting(a.roots, cache, Calibration{10, 5, 8}, measured);
  const Target t = describe_machine(o);
  const auto file = cache.path() / (t.name + ".json");
  Json old = Json::parse(std::ifstream(file));
  old.erase("fma_chains");
  std::ofstream(file) << old.dump();
  EXPECT_EQ(describe_machine(o).fma_chains, 8);
  EXPECT_EQ(measured, 2);
  old["fma_chains"] = 5000;
  std::ofstream(file) << old.dump();
  EXPECT_EQ(describe_machine(o).fma_chains, 8);
  EXPECT_EQ(measured, 3);
}

TEST(MachineTest, HostResolvesToThisMachine) {
  const Target t = backend::load_target("host");
  EXPECT_EQ(t.organisation, "cpu");
  EXPECT_EQ(t.name, this_machine().target_name());
  EXPECT_GT(t.peak_flops(DType::float32), 0);
  EXPECT_GT(t.hbm_bytes_per_second(), 0);
  // Measured where an FMA loop is timed (x86-64 with FMA): every core since Haswell needs 8-10
  // chains, so the bounds leave a wide margin. Elsewhere not given.
  if (this_machine().arch == "x86_64" && this_machine().fma) {
    EXPECT_GE(t.fma_chains, 2);
    EXPECT_LE(t.fma_chains, 32);
  } else {
    EXPECT_EQ(t.fma_chains, 0);
  }
  EXPECT_EQ(Target::from_json(t.to_json()).key(), t.key());  // survives the database round trip
}

}  // namespace
}  // namespace atvoss::host
