// The CPU's compute unit for the lowering templates (lowering/compute_unit.hpp): how the
// host backend's generated code computes, so that the shared templates plan it without a
// branch on the kind of machine. A GEMM-like kernel runs a micro_m x micro_n register block
// (host/host_space.hpp) that tiles pad to; K pads to a 32-byte vector granule; a kernel
// runs on as many cores as its threads knob asks for; and its cache blocks follow BLIS.
// Its memory levels are the CPU's: registers, L1d, L2, L3 (the host target's l0c_bytes,
// l0a_bytes, l1_bytes and l2_bytes, host/machine.hpp). The register block lives in the
// registers; a micro-panel of A and of B stream through L1d (async_copy_depth is a prefetch
// distance there, not a buffer count) with the epilogue's tile as it is written back; the
// mc x kc block of A is packed into L2 and the kc x nc panel of B into L3.
#pragma once

namespace atvoss::host {

// Registers the unit for targets of organisation "cpu", once per process: at start-up in every
// program that links the host library's machine description (host/machine.hpp), and by
// whoever calls it first otherwise. Thread-safe.
void register_cpu_unit();

}  // namespace atvoss::host
