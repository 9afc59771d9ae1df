// Constraint: a Kernel Tuner-style restriction over a space's parameters, such as
// "block_x * block_y <= 1024 and unroll in (1, 2, 4)", parsed by a closed grammar and
// evaluated without any interpreter. Constraints come from files (job specs, Kernel Tuner
// caches, shared spaces) as well as from users, so nothing but this grammar is accepted:
//
//   expr    := or
//   or      := and ("or" and)*                 also "||"
//   and     := not ("and" not)*                also "&&"
//   not     := "not" not | compare             also "!"
//   compare := sum ((< <= > >= == != | in | not in) sum)*   chained as in Python
//   sum     := product (("+" | "-") product)*
//   product := unary (("*" | "/" | "//" | "%") unary)*
//   unary   := ("-" | "+") unary | power
//   power   := atom ("**" unary)?
//   atom    := number | 'string' | "string" | True | False | name
//            | (min|max|abs|int|float|round)"(" expr ("," expr)* ")"
//            | "(" expr ")" | "(" expr ("," expr)+ ")" | "[" expr ("," expr)* "]"   (for "in")
//
// Names are the space's parameters (nothing else resolves). Arithmetic is Python's: "/" is
// true division, "//" floors and "%" takes the divisor's sign; a division by zero is an
// error naming the expression. Values are numbers (doubles: exact for integers up to 2^53)
// or strings; strings compare with == != < and "in", and never with numbers except by
// == (false) and != (true). A result is true when it is a non-zero number or a non-empty
// string. Bounds, checked while parsing: 4096 characters, nesting depth 64.
// Thread-safety: a parsed Constraint is immutable; evaluate() may run on many threads.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace atvoss {

// A parameter's value as constraints see it.
using ConstraintValue = std::variant<double, std::string>;

class Constraint {
 public:
  static constexpr std::size_t kMaxLength = 4096;
  static constexpr int kMaxDepth = 64;

  // bad_input naming the expression, the position and what was expected; a name that is not
  // one of `names` is refused the same way.
  static Constraint parse(const std::string& text, std::span<const std::string> names);

  // values[i] is the value of names[i] given to parse(). bad_input on a type error or a
  // division by zero, naming the expression.
  bool holds(std::span<const ConstraintValue> values) const;

  const std::string& text() const { return text_; }

  struct Node;  // the parsed tree (core/constraint.cpp)

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
};

// The flat indices (mixed radix, first parameter most significant) of the points of the
// space whose every constraint holds. values[i] lists parameter i's values. bad_input as
// parse()/holds(), or when the space has more than max_points points.
std::vector<std::uint64_t> points_satisfying(std::span<const std::string> constraints,
                                             std::span<const std::string> names,
                                             const std::vector<std::vector<ConstraintValue>>& values,
                                             std::uint64_t max_points);

}  // namespace atvoss
