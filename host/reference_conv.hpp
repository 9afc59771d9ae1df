// Reference for the host conv ops: the operands of conv2d and depthwise_conv2d (NHWC
// activations, HWIO / [R][S][C] weights, conv_space.hpp), filled from a seed, and the
// double-precision reference that checks a kernel's output. operands.hpp dispatches here
// for conv workloads, so the runner, the benchmark and the tests check the same way.
#pragma once

#include <cstdint>

#include "core/workload.hpp"
#include "host/operands.hpp"

namespace atvoss::host {

// a (input N x H x W x C), b (weights), residual uniform in [-1, 1]; bias in [-1, 1];
// scale in [0.5, 1.5]; c (output N x OH x OW x Kout) zeroed. Kout = K, or C for depthwise.
Operands make_conv_operands(const Workload& w, std::uint64_t seed);

// Max over checked output elements of |c - ref| / max(|ref|, 1). Every output pixel is
// checked for small problems; above 2^26 MACs, 48 pixels (the first and last 8 and 32
// drawn from seed). INFINITY on a non-finite output.
double conv_max_relative_error(const Workload& w, const Operands& o, std::uint64_t seed);

}  // namespace atvoss::host
