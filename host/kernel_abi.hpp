// Kernel ABI: the one argument struct every generated host kernel takes,
//   extern "C" void atvoss_kernel(const AtvossArgs*);
// shared by the code generator (which pastes kKernelAbiText into each source), the kernel
// runner and the runtime, so the layout is spelled once. Shapes are compiled into the kernel;
// operands are dense fp32, row-major, batches back to back. Epilogue operands are null when
// the workload has no such op: bias/scale/shift hold N values, residual is shaped like C.
// Row ops (reference_rowops.hpp): b only for elementwise; layernorm's gamma and beta come in
// scale and shift.
#pragma once

#define ATVOSS_KERNEL_ARGS_FIELDS                                                          \
  const float* a; const float* b; float* c; const float* bias; const float* scale;        \
  const float* shift; const float* residual;
#define ATVOSS_STRINGIFY2(x) #x
#define ATVOSS_STRINGIFY(x) ATVOSS_STRINGIFY2(x)

namespace atvoss::host {

struct AtvossArgs {
  ATVOSS_KERNEL_ARGS_FIELDS
};

using KernelFn = void (*)(const AtvossArgs*);
inline constexpr const char* kKernelSymbol = "atvoss_kernel";
// `extern "C" const int`: the threads the kernel runs on (its `threads` knob), so the runner
// pins it to that many cores; a kernel without the symbol runs on one.
inline constexpr const char* kThreadsSymbol = "atvoss_kernel_threads";
inline constexpr const char* kKernelAbiText =
    "struct AtvossArgs { " ATVOSS_STRINGIFY(ATVOSS_KERNEL_ARGS_FIELDS) " };\n";

}  // namespace atvoss::host
