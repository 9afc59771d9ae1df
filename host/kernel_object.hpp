// Kernel objects: opening a compiled host kernel (.so) so that neither a damaged file nor a
// kernel built for another workload can crash the process that calls it.
//  - Before dlopen, the file must be a whole ELF object: every segment its program headers
//    map, and its section headers, lie inside the file. A truncated object is mapped past its
//    end, and the first touch of a missing page is SIGBUS.
//  - After, the kernel's workload key (kWorkloadSymbol, which kernel_preamble writes into
//    every generated source through workload_symbol_text) must be the caller's workload's:
//    shapes are compiled into a kernel, and one called with another workload's buffers
//    reads and writes past them (malloc aborts, SIGSEGV).
// Free functions; thread-safe as dlopen is.
#pragma once

#include <string>
#include <string_view>

#include "core/workload.hpp"
#include "host/kernel_abi.hpp"

namespace atvoss::host {

// `extern "C" const char atvoss_kernel_workload[]`: the key (Workload::key) of the workload
// the kernel was generated for, NUL-terminated.
inline constexpr const char* kWorkloadSymbol = "atvoss_kernel_workload";

// The C++ definition of kWorkloadSymbol for w, as bytes (any key is a valid initialiser).
std::string workload_symbol_text(const Workload& w);

// An empty string when path is a whole 64-bit ELF object, else why not ("its program headers
// reach past its end (a truncated file?)").
std::string elf_incompleteness(const std::string& path);

struct KernelObject {
  void* handle = nullptr;  // from dlopen; the caller dlcloses it
  KernelFn fn = nullptr;
};

// Opens the kernel at path for w, checked as above. bad_input starting with `what` (the flag
// or caller), naming what is wrong: not whole, not loadable, no kernel symbol, no workload
// key, or another workload's key (both labels named).
KernelObject open_kernel_object(const std::string& path, const Workload& w, std::string_view what);

}  // namespace atvoss::host
