// core/utf8.hpp: what is well-formed UTF-8 (what nlohmann::json and PostgreSQL accept), and
// escaping the rest so that names stay distinct and every JSON dump of them succeeds.
#include "core/utf8.hpp"

#include <gtest/gtest.h>

#include <string>

#include "core/json.hpp"

namespace atvoss {
namespace {

TEST(Utf8, WellFormedIsWhatJsonAccepts) {
  for (const std::string& s : {std::string("conv1"), std::string("\xC3\xA9t\xC3\xA9"), std::string("\xE2\x82\xAC"),
                               std::string("\xF0\x9F\x98\x80"), std::string("a\0b", 3), std::string()}) {
    EXPECT_TRUE(is_valid_utf8(s)) << s;
    EXPECT_NO_THROW((void)Json(s).dump());
  }
  // A lone byte, a cut sequence, an overlong form, a surrogate, past U+10FFFF.
  for (const std::string& s :
       {std::string("\xFF\xFE"), std::string("\xC3"), std::string("\xC0\xAF"), std::string("\xE0\x80\xAF"),
        std::string("\xED\xA0\x80"), std::string("\xF4\x90\x80\x80"), std::string("\xF5\x80\x80\x80")}) {
    EXPECT_FALSE(is_valid_utf8(s)) << s;
    EXPECT_THROW((void)Json(s).dump(), std::exception) << "json accepts what is_valid_utf8 refuses";
  }
}

TEST(Utf8, InvalidBytesAreEscapedAndNamesStayDistinct) {
  EXPECT_EQ(escape_invalid_utf8("conv\xFF\xFE"), "conv\\xFF\\xFE");
  EXPECT_EQ(escape_invalid_utf8("\xC3\xA9\xC3"), "\xC3\xA9\\xC3");  // the whole character kept, the cut one escaped
  EXPECT_EQ(escape_invalid_utf8("plain"), "plain");
  EXPECT_NE(escape_invalid_utf8("n\xFF"), escape_invalid_utf8("n\xFE"));
  for (int b = 0; b < 256; ++b) {
    const std::string s = "x" + std::string(1, static_cast<char>(b)) + "\xE2\x82";
    const std::string e = escape_invalid_utf8(s);
    EXPECT_TRUE(is_valid_utf8(e)) << b;
    EXPECT_NO_THROW((void)Json(e).dump()) << b;
  }
}

}  // namespace
}  // namespace atvoss
