// Reading an ONNX model file: the one place a model's bytes become an onnx::ModelProto, for
// the importer (onnx_import.hpp) and the engine that runs the model (engine/onnx_file.hpp),
// so both see the same names. Names come from whoever wrote the file and may hold bytes
// that are not UTF-8; every name (graph, node, tensor, value, attribute and its strings) is
// made valid here, once (core/utf8.hpp escapes such bytes as \xHH), so the reports, the
// JSON and Python that quote them never fail on them. Thread-safe.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

namespace atvoss::frontend {

// The model at path, its functions expanded where it calls them (function_inlining.hpp), its
// names valid UTF-8, the data of its initializers stored outside it (external data, in
// files in the model's folder or below it) read in, and its quantized ops written as float
// ops (quantized_ops.hpp). bad_input for a path
// that is no regular file (core/user_paths.hpp), bytes that are no ONNX model with a graph, or
// external data that is not where its entries say (naming the constant and the entry).
onnx::ModelProto read_onnx_model(const std::string& path);

}  // namespace atvoss::frontend
