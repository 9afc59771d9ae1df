// Builder and runner: the compile cache reuses builds, compile errors, crashes and hangs are
// the candidate's error, and the calling process survives all of them.
#include "host/builder.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.hpp"
#include "core/utf8.hpp"
#include "host/codegen.hpp"
#include "host/digest.hpp"
#include "host/host_space.hpp"
#include "host/kernel_abi.hpp"
#include "host/kernel_object.hpp"
#include "host/machine.hpp"
#include "host/measure.hpp"
#include "host/runner.hpp"
#include "host_test_util.hpp"

namespace atvoss::host {
namespace {

using testing::TempDir;
using testing::workload;

const Workload kSmall = workload(R"({"op":"matmul","dtype":"float32","dims":{"M":8,"N":8,"K":8}})");

std::string kernel_body(const std::string& body) {
  return std::string(kKernelAbiText) + workload_symbol_text(kSmall) +
         "extern \"C\" void atvoss_kernel(const AtvossArgs* g) {" + body + "}\n";
}

// A compiler wrapper that logs every invocation, so the test sees whether it was called.
std::string counting_compiler(const TempDir& dir) {
  const auto script = dir.path() / "cxx.sh";
  std::ofstream(script) << "#!/bin/sh\necho x >> " << (dir.path() / "calls").string() << "\nexec c++ \"$@\"\n";
  ::chmod(script.c_str(), 0755);
  return script.string();
}

int calls(const TempDir& dir) {
  std::ifstream f(dir.path() / "calls");
  int n = 0;
  for (std::string line; std::getline(f, line);) ++n;
  return n;
}

TEST(BuilderTest, TheCacheReusesABuildOfTheSameSource) {
  TempDir dir;
  BuildOptions o;
  o.cache_dir = dir.str();
  o.compiler = counting_compiler(dir);
  const std::string a = kernel_body("g->c[0] = 1;"), b = kernel_body("g->c[0] = 2;");
  const auto first = build_all({a, b}, o);
  ASSERT_EQ(first[0].status, Status::ok) << first[0].message;
  EXPECT_FALSE(first[0].cached);
  EXPECT_EQ(calls(dir), 2);
  const auto second = build_all({a, b, a}, o);
  EXPECT_EQ(calls(dir), 2);  // no compiler run the second time
  EXPECT_TRUE(second[0].cached);
  EXPECT_EQ(second[0].so_path, first[0].so_path);
  EXPECT_EQ(second[2].so_path, first[0].so_path);
  EXPECT_NE(second[1].so_path, second[0].so_path);
  EXPECT_EQ(second[0].compile_us, 0);

  o.flags.push_back("-DOTHER_FLAGS");  // the flags are part of the key
  EXPECT_NE(build_key(a, o), build_key(a, BuildOptions{}));
}

// The compile cache is run from: a .so swapped in the cache was
// run; a planted symlink made a compile overwrite the file it pointed to; a cache owned by
// another user or open to everyone was used; two CPUs could share objects built -march=native.
TEST(BuilderTest, ATamperedObjectIsBuiltAgainNeverHandedOut) {
  TempDir dir;
  BuildOptions o;
  o.cache_dir = dir.str();
  o.compiler = counting_compiler(dir);
  const std::string a = kernel_body("g->c[0] = 1;");
  const auto first = build_all({a}, o);
  ASSERT_EQ(first[0].status, Status::ok) << first[0].message;
  std::ofstream(first[0].so_path, std::ios::trunc) << "not the object that was built";
  const auto second = build_all({a}, o);
  EXPECT_FALSE(second[0].cached);
  EXPECT_EQ(calls(dir), 2);
  std::ifstream so(second[0].so_path, std::ios::binary);
  std::string head(4, '\0');
  so.read(head.data(), 4);
  EXPECT_EQ(head,
            "\x7f"
            "ELF");
  EXPECT_TRUE(build_all({a}, o)[0].cached);  // and the rebuilt one is trusted again
}

TEST(BuilderTest, APlantedSymlinkIsNeverWrittenThrough) {
  TempDir dir;
  BuildOptions o;
  o.cache_dir = dir.str();
  const std::string a = kernel_body("g->c[0] = 3;");
  const std::string victim = (dir.path() / "victim.txt").string();
  std::ofstream(victim) << "precious";
  const auto kernels = dir.path() / "kernels";
  std::filesystem::create_directories(kernels);
  ::chmod(kernels.c_str(), 0700);
  // Every source name this process can pick next (pid, counter) leads to the victim.
  for (int n = 0; n <= 800; ++n) {
    const auto name = kernels / (build_key(a, o) + "." + std::to_string(::getpid()) + "." + std::to_string(n) + ".cpp");
    std::filesystem::create_symlink(victim, name);
  }
  const auto built = build_all({a}, o);
  EXPECT_EQ(built[0].status, Status::ok) << built[0].message;
  std::ifstream in(victim);
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "precious");
}

TEST(BuilderTest, ACacheOfAnotherUserOrOpenToOthersIsRefused) {
  TempDir dir;
  const auto open_dir = dir.path() / "open";
  std::filesystem::create_directories(open_dir);
  ::chmod(open_dir.c_str(), 0777);
  auto refusal = [](const std::string& d) {
    try {
      require_private_dir(d);
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input());
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refusal(open_dir.string()).find("writable by group or others (mode 777)"), std::string::npos);
  BuildOptions o;
  o.cache_dir = open_dir.string();
  EXPECT_THROW(build_all({kernel_body("(void)g;")}, o), Error);
  // Owned by another user: as root, a directory given to nobody; otherwise a system one.
  std::string foreign = "/usr";
  if (::geteuid() == 0) {
    foreign = (dir.path() / "foreign").string();
    std::filesystem::create_directories(foreign);
    ASSERT_EQ(::chown(foreign.c_str(), 65534, 65534), 0);
  }
  EXPECT_NE(refusal(foreign).find("is owned by another user"), std::string::npos);
  // A fresh cache is created private.
  const auto fresh = dir.path() / "fresh" / "cache";
  EXPECT_EQ(refusal(fresh.string()), "accepted");
  struct stat st {};
  ASSERT_EQ(::stat(fresh.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST(BuilderTest, TheKeyNamesTheCpu) {
  BuildOptions x, y;
  x.cpu = "cpu-a";
  y.cpu = "cpu-b";
  EXPECT_NE(build_key("int x;", x), build_key("int x;", y));
  EXPECT_EQ(build_key("int x;", BuildOptions{}), build_key("int x;", [] {
              BuildOptions o;
              o.cpu = this_machine().fingerprint();
              return o;
            }()));
}

TEST(BuilderTest, ACompilerErrorIsThatCandidatesCompileError) {
  TempDir dir;
  BuildOptions o;
  o.cache_dir = dir.str();
  const auto r = build_all({kernel_body("this is not C++;"), kernel_body("g->c[0] = 0;")}, o);
  EXPECT_EQ(r[0].status, Status::compile_error);
  EXPECT_NE(r[0].message.find("error"), std::string::npos) << r[0].message;
  EXPECT_EQ(r[1].status, Status::ok);  // the batch goes on
}

// A compiler echoes the source's bytes as they are: a compile_error whose message held
// \xff\xfe made the record unfit for JSON. The message is escaped where it is made.
TEST(BuilderTest, ACompilerMessageThatIsNotUtf8IsEscaped) {
  TempDir dir;
  BuildOptions o;
  o.cache_dir = dir.str();
  const auto r = build_all({kernel_body("\n#error bad\xff\xfe\n")}, o);
  ASSERT_EQ(r[0].status, Status::compile_error) << r[0].message;
  EXPECT_TRUE(is_valid_utf8(r[0].message)) << r[0].message;
  EXPECT_NE(r[0].message.find("bad\\xFF\\xFE"), std::string::npos) << r[0].message;
  EXPECT_NO_THROW((void)Json(r[0].message).dump());
}

TEST(RunnerTest, CrashesAndHangsAreTheCandidatesErrorAndTheCallerLivesOn) {
  TempDir dir;
  HostConfig config;
  config.build.cache_dir = dir.str();
  config.run.timeout_s = 3;
  const std::string good = generate_source(kSmall, default_schedule(kSmall, this_machine()), this_machine());
  const auto m = measure_sources({{kSmall, kernel_body("volatile int* p = nullptr; *p = 1; (void)g;"), 1, 3},
                                  {kSmall, kernel_body("for (;;) { __asm__ volatile(\"\"); } (void)g;"), 1, 3},
                                  {kSmall, kernel_body("this does not compile"), 1, 3},
                                  {kSmall, good, 1, 3}},
                                 config);
  EXPECT_EQ(m[0].status, Status::runtime_error) << m[0].message;
  EXPECT_NE(m[0].message.find("signal"), std::string::npos) << m[0].message;
  EXPECT_EQ(m[1].status, Status::timeout) << m[1].message;
  EXPECT_EQ(m[2].status, Status::compile_error) << m[2].message;
  EXPECT_EQ(m[3].status, Status::ok) << m[3].message;
  EXPECT_EQ(m[3].repeats.size(), 3u);
}

// Ctrl-C in Python raises the flag: the hanging kernel in flight is killed long before its
// 60 s limit, the next one is never started, and neither is a result of its schedule.
TEST(RunnerTest, ACancelledBatchKillsTheKernelInFlightAndRunsNoMore) {
  TempDir dir;
  HostConfig config;
  config.build.cache_dir = dir.str();
  config.run.timeout_s = 60;
  auto flag = std::make_shared<std::atomic<bool>>(false);
  config.run.cancel = flag;
  const std::string good = generate_source(kSmall, default_schedule(kSmall, this_machine()), this_machine());
  const std::string hang = kernel_body("for (;;) { __asm__ volatile(\"\"); } (void)g;");
  build_all({hang, good}, config.build);  // cached: the flag is raised while the kernel runs
  std::thread raiser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    flag->store(true);
  });
  const auto started = std::chrono::steady_clock::now();
  const auto m = measure_sources({{kSmall, hang, 1, 3}, {kSmall, good, 1, 3}}, config);
  raiser.join();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(30));
  for (const auto& r : m) {
    EXPECT_EQ(r.status, Status::error) << r.message;
    EXPECT_EQ(r.message, kCancelledMessage);
  }
}

TEST(BuilderTest, ACancelledBuildStartsNoCompiler) {
  TempDir dir;
  BuildOptions o;
  o.cache_dir = dir.str();
  o.compiler = counting_compiler(dir);
  o.cancel = std::make_shared<std::atomic<bool>>(true);
  const auto r = build_all({kernel_body("g->c[0] = 1;"), kernel_body("g->c[0] = 2;")}, o);
  for (const auto& b : r) EXPECT_EQ(b.status, Status::error);
  EXPECT_EQ(calls(dir), 0);
}

// The real runner on a kernel that does not fit: exit status and stderr.
std::pair<int, std::string> run_runner(const TempDir& dir, const std::string& so, const std::string& workload_json) {
  const std::string err = (dir.path() / "runner.err").string();
  const std::string cmd = "timeout 60 " + find_runner() + " --so '" + so + "' --workload '" + workload_json +
                          "' --repeat 1 --min-repeat-us 1 >/dev/null 2>" + err;
  const int status = std::system(cmd.c_str());
  std::ifstream in(err);
  std::stringstream text;
  text << in.rdbuf();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), text.str()};
}

// A kernel's shapes are compiled in: one built for a 32x64x32 matmul run with a 1x1x1 one
// aborted in malloc (SIGABRT), with a conv's workload too, and with a softmax's crashed
// (SIGSEGV); a truncated object was mapped past its end (SIGBUS). The runner now refuses each
// before any call, exit 2 naming why (seen failing with those signals before the checks).
TEST(RunnerTest, AKernelOfAnotherWorkloadOrATruncatedOneIsRefusedBeforeAnyCall) {
  TempDir dir;
  BuildOptions o;
  o.cache_dir = dir.str();
  const std::string mm = R"({"op":"matmul","dtype":"float32","dims":{"M":32,"N":64,"K":32}})";
  const Workload w = workload(mm);
  const auto built = build_all({generate_source(w, default_schedule(w, this_machine()), this_machine())}, o);
  ASSERT_EQ(built[0].status, Status::ok) << built[0].message;
  for (const std::string other :
       {R"({"op":"matmul","dtype":"float32","dims":{"M":1,"N":1,"K":1}})",
        R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":24,"H":7,"W":7,"K":40,"R":3,"S":3,"stride":1,"pad":1}})",
        R"({"op":"softmax","dtype":"float32","dims":{"M":1,"N":1}})"}) {
    const auto [code, err] = run_runner(dir, built[0].so_path, other);
    EXPECT_EQ(code, 2) << other << ": " << err;
    EXPECT_NE(err.find("--so: the kernel was built for workload '" + w.key() + "', not for " + workload(other).label()),
              std::string::npos)
        << err;
  }
  EXPECT_EQ(run_runner(dir, built[0].so_path, mm).first, 0);  // its own workload still runs
  const std::string cut = (dir.path() / "cut.so").string();
  std::filesystem::copy_file(built[0].so_path, cut);
  std::filesystem::resize_file(cut, std::filesystem::file_size(cut) / 2);
  const auto [code, err] = run_runner(dir, cut, mm);
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(err.find("--so: not a loadable kernel object:"), std::string::npos) << err;
  EXPECT_NE(err.find("(a truncated file?)"), std::string::npos) << err;
}

// The compile cache: a truncated object beside a digest rewritten to match it was loaded
// into the runtime's own process (SIGBUS), and a FIFO at the digest's name hung it. Both are
// rebuilt instead, at once.
TEST(BuilderTest, ATruncatedObjectWithAMatchingDigestOrAFifoDigestIsBuiltAgain) {
  TempDir dir;
  BuildOptions o;
  o.cache_dir = dir.str();
  o.compiler = counting_compiler(dir);
  const std::string source = generate_source(kSmall, default_schedule(kSmall, this_machine()), this_machine());
  const auto first = build_all({source}, o);
  ASSERT_EQ(first[0].status, Status::ok) << first[0].message;
  const std::string so = first[0].so_path;
  std::filesystem::resize_file(so, std::filesystem::file_size(so) / 2);
  std::string cut;
  {
    std::ifstream in(so, std::ios::binary);
    cut.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::filesystem::remove(so + ".sha256");
  std::ofstream(so + ".sha256") << sha256_hex(cut);
  const auto second = build_all({source}, o);
  EXPECT_FALSE(second[0].cached);
  EXPECT_EQ(calls(dir), 2);
  EXPECT_TRUE(elf_incompleteness(second[0].so_path).empty());
  std::filesystem::remove(so + ".sha256");
  ASSERT_EQ(::mkfifo((so + ".sha256").c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  const auto third = build_all({source}, o);  // once blocked for good opening the FIFO
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
  EXPECT_FALSE(third[0].cached);
  EXPECT_EQ(third[0].status, Status::ok) << third[0].message;
}

TEST(RunnerTest, AMissingRunnerIsAnInfrastructureErrorNotACandidateError) {
  TempDir dir;
  BuildOptions o;
  o.cache_dir = dir.str();
  const auto built = build_all({kernel_body("(void)g;")}, o);
  RunOptions r;
  r.runner = (dir.path() / "no-such-runner").string();
  EXPECT_THROW(run_kernel(built[0].so_path, kSmall, r), Error);
}

}  // namespace
}  // namespace atvoss::host
