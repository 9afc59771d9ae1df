#include "core/constraint.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/error.hpp"

namespace atvoss {

struct Constraint::Node {
  enum class Kind { number, string, name, negate, plus, binary, compare, both, either, negation, call, list };
  Kind kind = Kind::number;
  double number = 0;
  std::string text;              // a string's value, an operator, a function name
  std::size_t index = 0;         // a name's parameter
  std::vector<std::string> ops;  // a comparison chain's operators
  std::vector<std::unique_ptr<Node>> kids;
};

namespace {

using Node = Constraint::Node;
using Kind = Node::Kind;
using Value = ConstraintValue;

struct Token {
  enum class Type { number, string, name, op, end };
  Type type = Type::end;
  std::string text;
  double number = 0;
  std::size_t at = 0;
};

[[noreturn]] void fail(const std::string& expr, std::size_t at, const std::string& what) {
  throw_bad_input("constraint '" + expr + "': " + what + " at character " + std::to_string(at + 1));
}

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::vector<Token> tokenize(const std::string& s) {
  static const char* const kOps[] = {"**", "//", "<=", ">=", "==", "!=", "&&", "||", "<", ">", "+",
                                     "-",  "*",  "/",  "%",  "(",  ")",  "[",  "]",  ",", "!"};
  std::vector<Token> out;
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++i;
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      const char* begin = s.c_str() + i;
      char* end = nullptr;
      const double v = std::strtod(begin, &end);
      if (end == begin || !std::isfinite(v)) fail(s, i, "a number out of range");
      if (name_char(*end)) fail(s, i, "a malformed number");
      out.push_back({Token::Type::number, std::string(begin, static_cast<std::size_t>(end - begin)), v, i});
      i += static_cast<std::size_t>(end - begin);
    } else if (c == '\'' || c == '"') {
      std::string text;
      std::size_t j = i + 1;
      for (; j < s.size() && s[j] != c; ++j) {
        if (s[j] == '\\' && j + 1 < s.size()) ++j;
        text += s[j];
      }
      if (j >= s.size()) fail(s, i, "a string without its closing quote");
      out.push_back({Token::Type::string, text, 0, i});
      i = j + 1;
    } else if (name_start(c)) {
      std::size_t j = i;
      while (j < s.size() && name_char(s[j])) ++j;
      out.push_back({Token::Type::name, s.substr(i, j - i), 0, i});
      i = j;
    } else {
      const auto op = std::find_if(std::begin(kOps), std::end(kOps),
                                   [&](const char* o) { return s.compare(i, std::strlen(o), o) == 0; });
      if (op == std::end(kOps)) fail(s, i, std::string("an unexpected character '") + c + "'");
      out.push_back({Token::Type::op, *op, 0, i});
      i += std::strlen(*op);
    }
  }
  out.push_back({Token::Type::end, "", 0, s.size()});
  return out;
}

std::unique_ptr<Node> node(Kind kind) {
  auto n = std::make_unique<Node>();
  n->kind = kind;
  return n;
}

// Recursive descent over the grammar in constraint.hpp.
class Parser {
 public:
  Parser(const std::string& text, std::span<const std::string> names)
      : text_(text), names_(names), tokens_(tokenize(text)) {}

  std::unique_ptr<Node> parse() {
    auto root = expr();
    if (peek().type != Token::Type::end) fail(text_, peek().at, "an operator or the end, not '" + peek().text + "'");
    return root;
  }

 private:
  const Token& peek() const { return tokens_[pos_]; }
  bool is(const char* text) const {
    return (peek().type == Token::Type::op || peek().type == Token::Type::name) && peek().text == text;
  }
  bool accept(const char* text) {
    if (!is(text)) return false;
    ++pos_;
    return true;
  }
  void expect(const char* text) {
    if (!accept(text)) fail(text_, peek().at, std::string("'") + text + "'");
  }

  struct Depth {
    explicit Depth(Parser& p) : p_(p) {
      if (++p_.depth_ > Constraint::kMaxDepth) fail(p_.text_, p_.peek().at, "nesting deeper than 64");
    }
    ~Depth() { --p_.depth_; }
    Parser& p_;
  };

  std::unique_ptr<Node> expr() {
    Depth d(*this);
    return either();
  }
  std::unique_ptr<Node> chain(Kind kind, std::unique_ptr<Node> (Parser::*next)(), const char* word, const char* op) {
    auto first = (this->*next)();
    if (!is(word) && !is(op)) return first;
    auto n = node(kind);
    n->kids.push_back(std::move(first));
    while (accept(word) || accept(op)) n->kids.push_back((this->*next)());
    return n;
  }
  std::unique_ptr<Node> either() { return chain(Kind::either, &Parser::both, "or", "||"); }
  std::unique_ptr<Node> both() { return chain(Kind::both, &Parser::negation, "and", "&&"); }
  std::unique_ptr<Node> negation() {
    if (accept("not") || accept("!")) {
      Depth d(*this);
      auto n = node(Kind::negation);
      n->kids.push_back(negation());
      return n;
    }
    return compare();
  }
  std::string compare_op() {
    for (const char* op : {"<=", ">=", "==", "!=", "<", ">", "in"}) {
      if (accept(op)) return op;
    }
    if (is("not") && tokens_[pos_ + 1].type == Token::Type::name && tokens_[pos_ + 1].text == "in") {
      pos_ += 2;
      return "not in";
    }
    return "";
  }
  std::unique_ptr<Node> compare() {
    auto first = sum();
    std::string op = compare_op();
    if (op.empty()) return first;
    auto n = node(Kind::compare);
    n->kids.push_back(std::move(first));
    for (; !op.empty(); op = compare_op()) {
      const std::size_t at = peek().at;
      n->ops.push_back(op);
      n->kids.push_back(sum());
      if ((op == "in" || op == "not in") && n->kids.back()->kind != Kind::list) {
        fail(text_, at, "a list or tuple after '" + op + "'");
      }
    }
    return n;
  }
  std::unique_ptr<Node> binary_chain(std::unique_ptr<Node> (Parser::*next)(), std::initializer_list<const char*> ops) {
    auto left = (this->*next)();
    for (;;) {
      const char* hit = nullptr;
      for (const char* op : ops) {
        if (peek().type == Token::Type::op && peek().text == op) hit = op;
      }
      if (!hit) return left;
      ++pos_;
      auto n = node(Kind::binary);
      n->text = hit;
      n->kids.push_back(std::move(left));
      n->kids.push_back((this->*next)());
      left = std::move(n);
    }
  }
  std::unique_ptr<Node> sum() { return binary_chain(&Parser::product, {"+", "-"}); }
  std::unique_ptr<Node> product() { return binary_chain(&Parser::unary, {"*", "/", "//", "%"}); }
  std::unique_ptr<Node> unary() {
    if (is("-") || is("+")) {
      Depth d(*this);
      auto n = node(accept("-") ? Kind::negate : (expect("+"), Kind::plus));
      n->kids.push_back(unary());
      return n;
    }
    auto base = atom();
    if (!accept("**")) return base;
    Depth d(*this);
    auto n = node(Kind::binary);
    n->text = "**";
    n->kids.push_back(std::move(base));
    n->kids.push_back(unary());
    return n;
  }
  std::unique_ptr<Node> items(Kind kind, const char* close) {
    auto n = node(kind);
    do {
      if (is(close)) break;  // a trailing comma
      n->kids.push_back(expr());
    } while (accept(","));
    expect(close);
    return n;
  }
  std::unique_ptr<Node> atom() {
    const Token t = peek();
    if (t.type == Token::Type::number || t.type == Token::Type::string) {
      ++pos_;
      auto n = node(t.type == Token::Type::number ? Kind::number : Kind::string);
      n->number = t.number;
      n->text = t.text;
      return n;
    }
    if (accept("(")) {
      auto inner = expr();
      if (!is(",")) {
        expect(")");
        return inner;
      }
      accept(",");
      auto list = items(Kind::list, ")");
      list->kids.insert(list->kids.begin(), std::move(inner));
      return list;
    }
    if (accept("[")) return items(Kind::list, "]");
    if (t.type != Token::Type::name)
      fail(text_, t.at, t.type == Token::Type::end ? "an operand before the end" : "an operand, not '" + t.text + "'");
    ++pos_;
    if (t.text == "True" || t.text == "False") {
      auto n = node(Kind::number);
      n->number = t.text == "True" ? 1 : 0;
      return n;
    }
    static const char* const kFunctions[] = {"min", "max", "abs", "int", "float", "round"};
    if (is("(")) {
      if (std::none_of(std::begin(kFunctions), std::end(kFunctions), [&](const char* f) { return t.text == f; })) {
        fail(text_, t.at, "a function among min, max, abs, int, float, round, not '" + t.text + "'");
      }
      accept("(");
      auto n = items(Kind::call, ")");
      n->text = t.text;
      const bool unary = t.text != "min" && t.text != "max";
      if (n->kids.empty() || (unary && n->kids.size() != 1))
        fail(text_, t.at, t.text + "() with " + (unary ? "one argument" : "arguments"));
      return n;
    }
    const auto it = std::find(names_.begin(), names_.end(), t.text);
    if (it == names_.end()) fail(text_, t.at, "a parameter of the space, not '" + t.text + "'");
    auto n = node(Kind::name);
    n->index = static_cast<std::size_t>(it - names_.begin());
    n->text = t.text;
    return n;
  }

  const std::string& text_;
  std::span<const std::string> names_;
  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

class Evaluator {
 public:
  Evaluator(const std::string& text, std::span<const Value> values) : text_(text), values_(values) {}

  Value eval(const Node& n) const {
    switch (n.kind) {
      case Kind::number:
        return n.number;
      case Kind::string:
        return n.text;
      case Kind::name:
        return values_[n.index];
      case Kind::negate:
        return -number(eval(*n.kids[0]), "-");
      case Kind::plus:
        return number(eval(*n.kids[0]), "+");
      case Kind::binary:
        return binary(n.text, eval(*n.kids[0]), eval(*n.kids[1]));
      case Kind::compare:
        return compare(n) ? 1.0 : 0.0;
      case Kind::both:
        for (const auto& k : n.kids)
          if (!truth(eval(*k))) return 0.0;
        return 1.0;
      case Kind::either:
        for (const auto& k : n.kids)
          if (truth(eval(*k))) return 1.0;
        return 0.0;
      case Kind::negation:
        return truth(eval(*n.kids[0])) ? 0.0 : 1.0;
      case Kind::call:
        return call(n);
      case Kind::list:
        fail("a list outside 'in'");
    }
    fail("an unknown node");
  }

  static bool truth(const Value& v) {
    return std::holds_alternative<double>(v) ? std::get<double>(v) != 0 : !std::get<std::string>(v).empty();
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw_bad_input("constraint '" + text_ + "': " + what); }

  double number(const Value& v, const std::string& op) const {
    if (!std::holds_alternative<double>(v))
      fail("'" + op + "' needs numbers, got the string '" + std::get<std::string>(v) + "'");
    return std::get<double>(v);
  }

  Value binary(const std::string& op, const Value& a, const Value& b) const {
    if (op == "+" && std::holds_alternative<std::string>(a) && std::holds_alternative<std::string>(b)) {
      return std::get<std::string>(a) + std::get<std::string>(b);
    }
    const double x = number(a, op), y = number(b, op);
    if (op == "+") return x + y;
    if (op == "-") return x - y;
    if (op == "*") return x * y;
    if (op == "**") return std::pow(x, y);
    if (y == 0) fail("division by zero");
    if (op == "/") return x / y;
    if (op == "//") return std::floor(x / y);
    const double r = std::fmod(x, y);  // "%": Python's, with the divisor's sign
    return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
  }

  bool compare(const Node& n) const {
    Value left = eval(*n.kids[0]);
    for (std::size_t i = 0; i < n.ops.size(); ++i) {
      const std::string& op = n.ops[i];
      const Node& right_node = *n.kids[i + 1];
      if (op == "in" || op == "not in") {
        bool found = false;
        for (const auto& item : right_node.kids) found = found || left == eval(*item);
        if (found != (op == "in")) return false;
        continue;  // a list is not an operand of the next comparison
      }
      const Value right = eval(right_node);
      bool ok = false;
      if (op == "==") {
        ok = left == right;
      } else if (op == "!=") {
        ok = left != right;
      } else if (left.index() != right.index()) {
        fail("'" + op + "' between a number and a string");
      } else {
        const int c = left < right ? -1 : (right < left ? 1 : 0);
        ok = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
      }
      if (!ok) return false;
      left = right;
    }
    return true;
  }

  Value call(const Node& n) const {
    std::vector<double> args;
    for (const auto& k : n.kids) args.push_back(number(eval(*k), n.text + "()"));
    if (n.text == "min") return *std::min_element(args.begin(), args.end());
    if (n.text == "max") return *std::max_element(args.begin(), args.end());
    if (n.text == "abs") return std::fabs(args[0]);
    if (n.text == "int") return std::trunc(args[0]);
    if (n.text == "round") return std::nearbyint(args[0]);  // Python's: halves to even
    return args[0];                                         // float
  }

  const std::string& text_;
  std::span<const Value> values_;
};

}  // namespace

Constraint Constraint::parse(const std::string& text, std::span<const std::string> names) {
  if (text.size() > kMaxLength) {
    throw_bad_input("constraint: " + std::to_string(text.size()) + " characters, more than " +
                    std::to_string(kMaxLength));
  }
  if (text.find('\0') != std::string::npos) throw_bad_input("constraint: holds a NUL character");
  Constraint c;
  c.text_ = text;
  c.root_ = Parser(c.text_, names).parse();
  return c;
}

bool Constraint::holds(std::span<const ConstraintValue> values) const {
  return Evaluator::truth(Evaluator(text_, values).eval(*root_));
}

std::vector<std::uint64_t> points_satisfying(std::span<const std::string> constraints,
                                             std::span<const std::string> names,
                                             const std::vector<std::vector<ConstraintValue>>& values,
                                             std::uint64_t max_points) {
  if (names.size() != values.size()) throw_bad_input("constraints: one value list per parameter");
  std::uint64_t size = 1;
  for (const auto& list : values) {
    if (list.empty()) throw_bad_input("constraints: a parameter without values");
    if (size > max_points / list.size()) {
      throw_bad_input("constraints: the space has more than " + std::to_string(max_points) +
                      " points, too many to check up front; give fewer values");
    }
    size *= list.size();
  }
  std::vector<Constraint> parsed;
  for (const std::string& text : constraints) parsed.push_back(Constraint::parse(text, names));
  std::vector<std::uint64_t> out;
  std::vector<std::size_t> at(values.size(), 0);  // mixed radix, last parameter fastest
  std::vector<ConstraintValue> point(values.size());
  for (std::uint64_t flat = 0; flat < size; ++flat) {
    for (std::size_t i = 0; i < values.size(); ++i) point[i] = values[i][at[i]];
    if (std::all_of(parsed.begin(), parsed.end(), [&](const Constraint& c) { return c.holds(point); }))
      out.push_back(flat);
    for (std::size_t i = values.size(); i-- > 0;) {
      if (++at[i] < values[i].size()) break;
      at[i] = 0;
    }
  }
  return out;
}

}  // namespace atvoss
