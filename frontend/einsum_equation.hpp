// Einsum equations: an ONNX Einsum's terms as one label per dim, and each label's size, for the
// shapes given. What the importer reads (the output shape that libonnx's inference leaves
// open) and what the engine plans its Einsum step from (engine/einsum.hpp), read one way.
// A label is a letter as the equation names it, or a digit for a dim of "..." (digits are never
// labels), right-aligned across the operands as numpy aligns them. Without "->" the output is
// "..." then the letters used once, in alphabetical order.
// Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace atvoss::frontend {

struct EinsumLabels {
  std::vector<std::string> inputs;  // one label per dim of each operand
  std::string output;
  std::map<char, std::int64_t> sizes;
};

// bad_input naming the field 'equation' when it is malformed, a label repeats within a term
// (a diagonal), a label has two sizes, an output label is in no input, or a term does not fit
// its operand's rank.
EinsumLabels einsum_labels(const std::string& equation, const std::vector<std::vector<std::int64_t>>& shapes);

// The output's shape.
std::vector<std::int64_t> einsum_output_shape(const EinsumLabels& labels);

}  // namespace atvoss::frontend
