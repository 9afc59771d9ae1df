#include "frontend/einsum_equation.hpp"

#include <algorithm>
#include <cctype>

#include "core/error.hpp"

namespace atvoss::frontend {
namespace {

using Labels = std::string;  // one label per dim (einsum_equation.hpp)

[[noreturn]] void refuse_equation(const std::string& equation, const std::string& why) {
  throw_bad_input("Einsum: field 'equation' ('" + equation + "'): " + why);
}

std::string without_spaces(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c != ' ') out += c;
  }
  return out;
}

std::vector<std::string> split_terms(const std::string& s, char by) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == by) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

// term's labels for an operand of `rank` dims, its "..." the digits of the last of the
// equation's `ellipsis` dims (right-aligned).
Labels expand_term(const std::string& eq, const std::string& term, std::size_t rank, std::size_t ellipsis) {
  const std::size_t dots = term.find("...");
  const std::string letters = dots == std::string::npos ? term : term.substr(0, dots) + term.substr(dots + 3);
  for (char c : letters) {
    if (!std::isalpha(static_cast<unsigned char>(c))) refuse_equation(eq, std::string("'") + c + "' is no label");
  }
  if (dots == std::string::npos) {
    if (letters.size() != rank)
      refuse_equation(eq,
                      "'" + term + "' names " + std::to_string(letters.size()) + " dims of " + std::to_string(rank));
    return letters;
  }
  if (letters.size() > rank) refuse_equation(eq, "'" + term + "' names more dims than its operand has");
  const std::size_t here = rank - letters.size();
  std::string digits;
  for (std::size_t i = ellipsis - here; i < ellipsis; ++i) digits += char('0' + i);
  return term.substr(0, dots) + digits + term.substr(dots + 3);
}

void refuse_repeated_labels(const std::string& eq, const Labels& l) {
  for (std::size_t i = 0; i < l.size(); ++i) {
    if (l.find(l[i], i + 1) != std::string::npos)
      refuse_equation(eq, std::string("label '") + l[i] + "' repeats in one term");
  }
}

}  // namespace

EinsumLabels einsum_labels(const std::string& equation, const std::vector<std::vector<std::int64_t>>& shapes) {
  const std::string eq = without_spaces(equation);
  const std::size_t arrow = eq.find("->");
  const std::vector<std::string> terms = split_terms(eq.substr(0, arrow), ',');
  if (terms.size() != shapes.size()) {
    refuse_equation(equation, std::to_string(terms.size()) + " terms for " + std::to_string(shapes.size()) + " inputs");
  }
  std::size_t ellipsis = 0;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    if (terms[i].find("...") == std::string::npos) continue;
    std::size_t letters = 0;
    for (char c : terms[i]) letters += std::isalpha(static_cast<unsigned char>(c)) ? 1 : 0;
    if (shapes[i].size() >= letters) ellipsis = std::max(ellipsis, shapes[i].size() - letters);
  }
  EinsumLabels l;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    l.inputs.push_back(expand_term(equation, terms[i], shapes[i].size(), ellipsis));
    refuse_repeated_labels(equation, l.inputs.back());
    for (std::size_t d = 0; d < l.inputs.back().size(); ++d) {
      const auto [it, fresh] = l.sizes.emplace(l.inputs.back()[d], shapes[i][d]);
      if (!fresh && it->second != shapes[i][d]) {
        refuse_equation(equation, std::string("label '") + l.inputs.back()[d] + "' of two sizes");
      }
    }
  }
  if (arrow != std::string::npos) {
    const std::string term = eq.substr(arrow + 2);
    const bool dots = term.find("...") != std::string::npos;
    l.output = expand_term(equation, term, dots ? term.size() - 3 + ellipsis : term.size(), ellipsis);
  } else {
    for (std::size_t i = 0; i < ellipsis; ++i) l.output += char('0' + i);
    for (const auto& [c, size] : l.sizes) {
      std::ptrdiff_t count = 0;
      for (const auto& term : l.inputs) count += std::count(term.begin(), term.end(), c);
      if (std::isalpha(static_cast<unsigned char>(c)) && count == 1) l.output += c;
    }
  }
  refuse_repeated_labels(equation, l.output);
  for (char c : l.output) {
    if (!l.sizes.count(c)) refuse_equation(equation, std::string("output label '") + c + "' is in no input");
  }
  return l;
}

std::vector<std::int64_t> einsum_output_shape(const EinsumLabels& labels) {
  std::vector<std::int64_t> shape;
  for (char c : labels.output) shape.push_back(labels.sizes.at(c));
  return shape;
}

}  // namespace atvoss::frontend
