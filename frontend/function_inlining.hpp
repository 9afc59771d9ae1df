// Model-local functions (an ONNX model's FunctionProtos: torch's dynamo exporter and onnxscript
// write a module or a composite op as one) expanded where the graph calls them, so the importer
// and the engine see only the ops the functions are made of, as ONNX Runtime runs them.
// Thread-safe (a pure function of the model).
#pragma once

#include <onnx/onnx_pb.h>

namespace atvoss::frontend {

// Replaces every node of model's main graph that calls one of its functions (by domain, name
// and overload) with the function's nodes, again until no call is left: the function's inputs
// and outputs become the call's (an input the call leaves out, the empty name), its other
// tensors and its nodes are named after the call (`call/name`), and an attribute that refers
// to one of the function's (ref_attr_name) takes the call's value, else the function's
// default, else is left out (the op's own default). Then the functions are dropped.
// bad_input: a call nested deeper than 32 (a function that calls itself), a call with more
// inputs or outputs than its function has, or a function of another version of the default
// domain than the model's.
void inline_functions(onnx::ModelProto& model);

}  // namespace atvoss::frontend
