// The CPU's compute unit for the lowering templates (lowering/compute_unit.hpp): how the
// host backend's generated code computes, so that the shared templates plan it without a
// branch on the kind of machine. A GEMM-like kernel runs a micro_m x micro_n register block
// (host/host_space.hpp) that tiles pad to; K pads to a 32-byte vector granule; a kernel
// runs on as many cores as its threads knob asks for; and its cache blocks follow BLIS:
// the register block in vector registers (L0C on the target, host/machine.hpp), a
// micro-panel of A and of B streaming through L1d (L0A, L0B: async_copy_depth is a prefetch
// distance there, not a buffer count), the mc x kc block of A packed into L2 (L1), the
// epilogue on the register block as it is written back (UB).
#pragma once

namespace atvoss::host {

// Registers the unit for targets of organisation "cpu", once per process: at start-up in every
// program that links the host library's machine description (host/machine.hpp), and by
// whoever calls it first otherwise. Thread-safe.
void register_cpu_unit();

}  // namespace atvoss::host
