// NPY files (NumPy's format, version 1.0 to 3.0, little-endian, C order) of fp32 arrays, and of
// integer (every width, signed and unsigned) and bool arrays read into floats and written from
// them (an integer input's values, engine/model.hpp): how atvoss-run takes a model's inputs and
// writes its outputs, so that numpy and ONNX Runtime read and write the same files. Pure
// functions of their files: thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace atvoss::engine {

struct NpyArray {
  std::vector<std::int64_t> shape;
  std::vector<float> data;
  std::string dtype = "float32";  // the file's, as NumPy names it: "float32", "int64" ... "uint8", "bool"
};

// bad_input naming the file: unreadable, not NPY, another dtype ('<f8', '<f2', ...), Fortran order, a
// header or data size that does not match its shape.
NpyArray read_npy(const std::string& path);
// Atomically (temporary file + rename). The values converted to dtype, an ONNX element type as
// TensorInfo names it ("float", "int64", "int32", "int16", "int8", "uint8" ... "uint64", "bool";
// float32 for any other), as ONNX Runtime would give that output.
void write_npy(const std::string& path, const std::vector<std::int64_t>& shape, const float* data,
               const std::string& dtype = "float");

// The file names (without ".npy") that tensors of these names are written to, one per name, in
// order, each inside the folder given: every character but a letter, a digit, '.', '_' or '-'
// becomes '_' (torch names outputs "/classifier/Gemm_output_0", TensorFlow "Identity:0": a '/'
// had written outside the folder), a leading '.' too, an empty name is "output", and a name
// taken already gets "_2", "_3", ....
std::vector<std::string> npy_file_names(const std::vector<std::string>& tensor_names);

}  // namespace atvoss::engine
