// Builder: compiles generated kernel sources into shared objects, apart from running them
// (as TVM separates builder and runner). Compiles run as parallel child processes
// (posix_spawn of the system compiler, at most `jobs` at a time); a compile cache under
// <cache dir>/kernels keys each .so by sha256(source + compiler + flags + CPU fingerprint),
// so a source built once is never compiled again. A compiler error is that candidate's
// compile_error. The cache is run from, so it is kept as a careful build cache keeps one:
// - its directories are created private (0700) and refused (bad_input) when owned by another
//   user or writable by group or others;
// - files are created with O_EXCL|O_NOFOLLOW (a planted symlink is never written through)
//   and renamed into place;
// - each object's SHA-256 is stored beside it and checked on every cache hit, with the object
//   being a whole ELF file (kernel_object.hpp): an object that fails either is rebuilt, never
//   handed out to be loaded or run; a FIFO planted at either name is skipped, never opened
//   blocking.
// Thread-safe: concurrent builds of one source race only on an atomic rename.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/cancel.hpp"
#include "core/measurement.hpp"

namespace atvoss::host {

struct BuildOptions {
  std::string cache_dir;  // empty: default_cache_dir() (machine.hpp)
  std::string compiler;   // empty: $ATVOSS_HOST_CXX, else "c++" (looked up in PATH)
  // -fopenmp for the threads knob (a kernel with threads 1 has no OpenMP pragma).
  std::vector<std::string> flags = {"-std=gnu++17", "-O3", "-march=native", "-fPIC", "-shared", "-fopenmp"};
  int jobs = 0;            // parallel compiles; 0: the physical cores
  double timeout_s = 120;  // a compile running longer is killed: compile_error
  // The CPU the objects are for (its fingerprint, machine.hpp), part of the key since they
  // are built with -march=native; empty: this machine's.
  std::string cpu;
  // Raised: running compiles are killed and the rest not started; their status is error.
  CancelFlag cancel = {};
};

struct BuildResult {
  Status status = Status::ok;  // ok, compile_error, or error when cancelled
  std::string so_path;
  std::string message;    // the compiler's first lines on compile_error
  double compile_us = 0;  // wall time of this build (0 on a cache hit)
  bool cached = false;
};

// One result per source, in order.
std::vector<BuildResult> build_all(const std::vector<std::string>& sources, const BuildOptions& options = {});

// The cache key of a source under options (64 hex digits).
std::string build_key(const std::string& source, const BuildOptions& options);

// Creates dir (and missing parents) private to this user, then bad_input unless dir is a
// directory owned by this user and not writable by group or others.
void require_private_dir(const std::string& dir);

// require_private_dir on the compile cache of options and its kernels directory, which it
// returns. build_all calls it first; the host backend's check_target too, so that a cache
// open to others is bad input before a tuning run starts, not a failure of every measurement.
std::filesystem::path require_private_cache(const BuildOptions& options);

}  // namespace atvoss::host
