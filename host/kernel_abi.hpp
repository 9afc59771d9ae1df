// Kernel ABI: the one argument struct every generated host kernel takes,
//   extern "C" void atvoss_kernel(const AtvossArgs*);
// shared by the code generator (which pastes kKernelAbiText into each source), the kernel
// runner and the runtime, so the layout is spelled once. Shapes are compiled into the kernel;
// operands are dense fp32, row-major, batches back to back. Epilogue operands are null when
// the workload has no such op: bias/scale/shift hold N values, residual is shaped like C.
// Low-precision matmuls (docs/host-backend.md "int8 and bf16") read qa and qb instead of a
// and b, and write fp32 C:
//   int8: qa u8 A with zero point z, qb s8 B; C = qscale[j] * (sum_k qa*qb - qcomp[b*N + j]),
//         the epilogue after, where qscale[j] = scale_A * scale_B[j] and qcomp = z * sum_k qb
//         (the compensation for A's zero point, computed once with the weights);
//   bf16: qa and qb hold bf16 bit patterns, accumulated in fp32; qscale and qcomp are null.
// int8 and bf16 conv2d read qa (NHWC) and qb (HWIO, the (R*S*C) x K matrix) the same way;
// int8 pads the image with qzero, A's zero point, so that padding adds nothing once qcomp
// (z times every tap's weights) is taken off.
// The "quantize" and "requantize" epilogue ops (a layer whose output feeds an int8 layer)
// round the output onto a u8 grid of qout = {scale, zero point} and keep it as the fp32
// value it represents, q = clamp(floor(x / scale + z + 0.5), 0, 255), x' = (q - z) * scale
// (quantise-dequantise, as ONNX QuantizeLinear + DequantizeLinear), so the next layer's
// input holds only what its u8 code can; "dequantize" (an int8 layer before a float one) is
// what every int8 kernel's write-back does already. qout holds one grid per such op, in order
// (a QDQ model's conv, its residual Add and that sum's QuantizeLinear:
// bias, requantize, add, requantize onto qout[0..1], then qout[2..3]); u8 codes are on the last.
// u8 output: a matmul, batch_matmul, conv2d or depthwise_conv2d whose epilogue ends in
// "quantize" or "requantize" writes the u8 codes q of its output to qc when qc is set (one
// byte per element, laid out as c), and not the values to c; c is then the kernel's scratch
// for partial sums over k blocks (its contents afterwards are unspecified), so the caller
// still passes it; unless qc_with_c is set: then c gets the values as well (a tensor that int8
// layers read as codes and others as values). qc null: c as above. The next int8 layer reads qc as its u8 input with
// zero point qout[1].
// Prepacked weights: a conv2d (fp32, int8, bf16; not depthwise) and a matmul or batch_matmul
// (fp32, int8, bf16: B packed, every batch) also export
//   extern "C" const long atvoss_packed_weight_bytes;
//   extern "C" void atvoss_pack_weights(const AtvossArgs*, void* out);
// which packs its weights (qb; fp32: b) into out (atvoss_packed_weight_bytes bytes, 64-byte
// aligned; 0 where the schedule reads its weights in place and packs none) as the kernel lays
// them out. A call with qb_packed set reads its weights from there and packs nothing (the
// weights argument is not read): an inference runtime packs constant weights once, at load, as
// oneDNN reorders them and TVM alters their layout. qb_packed null: packed in every call.
// "leaky_relu" reads each column's negative slope from slope (N values: ONNX LeakyRelu's alpha
// repeated, or PRelu's per-channel slopes).
// C's row stride: an fp32 conv2d with c_ld set writes each output pixel's K channels c_ld
// floats after the last (an image ROWS x c_ld floats after the last), leaving the floats in
// between as they were, so that it writes its channels into a wider tensor in place (a model's
// channel concat; the residual is still dense); 0: dense, K. Other kernels take 0 only.
// Row ops (reference_rowops.hpp): b only for elementwise; layernorm's gamma and beta come in
// scale and shift.
#pragma once

#define ATVOSS_KERNEL_ARGS_FIELDS \
  const float* a;                 \
  const float* b;                 \
  float* c;                       \
  const float* bias;              \
  const float* scale;             \
  const float* shift;             \
  const float* residual;          \
  const void* qa;                 \
  const void* qb;                 \
  const float* qscale;            \
  const int* qcomp;               \
  const float* qout;              \
  int qzero;                      \
  const void* qb_packed;          \
  unsigned char* qc;              \
  const float* slope;             \
  long c_ld;                      \
  int qc_with_c;
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
using PackWeightsFn = void (*)(const AtvossArgs*, void*);
inline constexpr const char* kPackWeightsSymbol = "atvoss_pack_weights";
inline constexpr const char* kPackedWeightBytesSymbol = "atvoss_packed_weight_bytes";
inline constexpr const char* kKernelAbiText =
    "struct AtvossArgs { " ATVOSS_STRINGIFY(ATVOSS_KERNEL_ARGS_FIELDS) " };\n";

}  // namespace atvoss::host
