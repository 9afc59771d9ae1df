// Constraint (core/constraint.hpp): Kernel Tuner-style restrictions parsed by a closed
// grammar. Python's semantics where Kernel Tuner's restrictions are Python expressions (//,
// %, chained comparisons, "in"), refusals that name the position, bounds on length and
// depth, and a seeded mutation run over hostile text that must end in a result or a clear
// bad_input, never a crash.
#include "core/constraint.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace atvoss {
namespace {

const std::vector<std::string> kNames = {"block_x", "block_y", "unroll", "layout"};

bool holds(const std::string& text, double bx = 32, double by = 8, double unroll = 2, std::string layout = "nchw") {
  const std::vector<ConstraintValue> values = {bx, by, unroll, std::move(layout)};
  return Constraint::parse(text, kNames).holds(values);
}

std::string refusal(const std::string& text) {
  try {
    holds(text);
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input()) << text;
    return e.what();
  }
  return "";
}

TEST(ConstraintTest, ArithmeticAndComparisonsFollowPython) {
  EXPECT_TRUE(holds("block_x * block_y <= 256"));
  EXPECT_FALSE(holds("block_x * block_y < 256"));
  EXPECT_TRUE(holds("-7 // 2 == -4 and -7 % 3 == 2 and 7 % -3 == -2"));
  EXPECT_TRUE(holds("7 / 2 == 3.5 and 2 ** 3 ** 2 == 512 and -2 ** 2 == -4"));
  EXPECT_TRUE(holds("1 < unroll < 4 <= block_x"));
  EXPECT_FALSE(holds("1 < unroll < 2"));  // chained: both comparisons must hold
  EXPECT_TRUE(holds("min(block_x, block_y, 4) == 4 and max(block_x, 64) == 64 and abs(-3) == 3"));
  EXPECT_TRUE(holds("int(7 / 2) == 3 and round(2.5) == 2 and float(unroll) == 2"));
  EXPECT_TRUE(holds("not block_x == 16 and (block_x == 32 or False)"));
  EXPECT_TRUE(holds("block_x % 32 == 0 && !(unroll > 4) || block_y == 0"));
  EXPECT_TRUE(holds("True"));
  EXPECT_FALSE(holds("0"));
}

TEST(ConstraintTest, StringsAndMembership) {
  EXPECT_TRUE(holds("layout == 'nchw' and layout != \"nhwc\""));
  EXPECT_TRUE(holds("layout in ('nchw', 'nhwc') and unroll in [1, 2, 4]"));
  EXPECT_TRUE(holds("unroll not in (3, 5,)"));
  EXPECT_FALSE(holds("layout in ('nhwc',)"));
  EXPECT_FALSE(holds("layout == 2"));  // a string is never equal to a number
  EXPECT_TRUE(holds("layout + 'x' == 'nchwx'"));
  EXPECT_TRUE(holds("'a' < layout"));
}

TEST(ConstraintTest, RefusalsNameWhatWasExpected) {
  EXPECT_NE(refusal("blok_x > 1").find("a parameter of the space, not 'blok_x' at character 1"), std::string::npos);
  EXPECT_NE(refusal("__import__('os') == 0").find("a function among min, max"), std::string::npos);
  EXPECT_NE(refusal("() == 1").find("an operand, not ')'"), std::string::npos);
  EXPECT_NE(refusal("block_x.real > 0").find("unexpected character '.'"), std::string::npos);
  EXPECT_NE(refusal("block_x >").find("an operand before the end"), std::string::npos);
  EXPECT_NE(refusal("block_x in 3").find("a list or tuple after 'in'"), std::string::npos);
  EXPECT_NE(refusal("(block_x > 1").find("')'"), std::string::npos);
  EXPECT_NE(refusal("'open").find("closing quote"), std::string::npos);
  EXPECT_NE(refusal("block_x / (unroll - 2) > 1").find("division by zero"), std::string::npos);
  EXPECT_NE(refusal("layout > 1").find("between a number and a string"), std::string::npos);
  EXPECT_NE(refusal("layout * 2 > 1").find("needs numbers"), std::string::npos);
  EXPECT_NE(refusal("[1, 2]").find("a list outside 'in'"), std::string::npos);
  EXPECT_NE(refusal("1e999 > 1").find("out of range"), std::string::npos);
  EXPECT_NE(refusal(std::string(65, '(') + "1" + std::string(65, ')')).find("nesting deeper than 64"),
            std::string::npos);
  EXPECT_NE(refusal(std::string(2000, '-') + "1").find("nesting deeper"), std::string::npos);
  EXPECT_NE(refusal("1 +" + std::string(5000, ' ') + "1").find("more than 4096"), std::string::npos);
  EXPECT_NE(refusal(std::string("1 ==\0 1", 7)).find("NUL"), std::string::npos);
}

TEST(ConstraintTest, PointsSatisfyingEnumeratesInMixedRadix) {
  const std::vector<std::string> names = {"a", "b"};
  const std::vector<std::vector<ConstraintValue>> values = {{1.0, 2.0, 3.0}, {std::string("x"), std::string("y")}};
  const std::vector<std::string> constraints = {"a != 2", "b == 'y' or a == 1"};
  EXPECT_EQ(points_satisfying(constraints, names, values, 100), (std::vector<std::uint64_t>{0, 1, 5}));
  EXPECT_EQ(points_satisfying({}, names, values, 100).size(), 6u);
  EXPECT_THROW(points_satisfying(constraints, names, values, 5), Error);  // 6 points > 5
}

// Random edits of valid expressions (and random bytes): each ends in a verdict or a
// bad_input, never a crash or another exception.
TEST(ConstraintTest, MutatedExpressionsEndInAVerdictOrAClearRefusal) {
  const std::vector<std::string> seeds = {"block_x * block_y <= 1024 and unroll in (1, 2, 4)",
                                          "layout == 'nchw' or block_x // 2 % 4 == 0",
                                          "min(block_x, 64) ** 2 > -abs(unroll - 3) and not (block_y != 8)"};
  const std::string alphabet = "()[],'\"+-*/%<>=!&|. _ablockxyunrl0123456789inotandor\\\x01\xff";
  std::mt19937_64 rng(20261205);
  int verdicts = 0, refusals = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text = seeds[rng() % seeds.size()];
    for (int edits = 1 + static_cast<int>(rng() % 6); edits > 0; --edits) {
      const std::size_t at = text.empty() ? 0 : rng() % text.size();
      switch (rng() % 3) {
        case 0:
          text.insert(at, 1, alphabet[rng() % alphabet.size()]);
          break;
        case 1:
          if (!text.empty()) text.erase(at, 1);
          break;
        default:
          if (!text.empty()) text[at] = alphabet[rng() % alphabet.size()];
      }
    }
    try {
      holds(text);
      ++verdicts;
    } catch (const Error& e) {
      ASSERT_TRUE(e.is_bad_input()) << text;
      ++refusals;
    }
  }
  EXPECT_GT(verdicts, 100);
  EXPECT_GT(refusals, 100);
}

}  // namespace
}  // namespace atvoss
