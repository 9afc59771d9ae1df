// Quantized ops written as the float ops they stand for. Int8 models in ONNX's operator form
// (onnxruntime.quantization's QuantFormat.QOperator, the ONNX model zoo's int8 models) use
// QLinearConv, QLinearMatMul, MatMulInteger and ConvInteger, and ONNX Runtime's com.microsoft
// QLinearAdd, QLinearMul, QLinearGlobalAveragePool, QLinearAveragePool, QLinearSigmoid,
// QLinearLeakyRelu, QLinearConcat, QLinearSoftmax and QGemm, which ONNX's shape inference does
// not know. Each becomes its float op between DequantizeLinear of its inputs and QuantizeLinear
// of its output (the QDQ form quantization tools also write), before shape inference: the
// importer tunes the float op as any other and the engine runs it on its kernels. A constant
// quantized operand (weights, an int32 bias) is dequantized here once, into a float constant;
// the float op keeps the node's name, so a plan names the same task.
// Pure function of the model, thread-safe on distinct models.
#pragma once

#include <onnx/onnx_pb.h>

namespace atvoss::frontend {

// Rewrites every such node of model's graph in place (the order kept: each expansion where its
// node was). bad_input naming the node where an operand the rewrite must read is missing or of
// the wrong size (a per-channel scale of another length than the channels).
void expand_quantized_ops(onnx::ModelProto& model);

}  // namespace atvoss::frontend
