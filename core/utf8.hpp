// UTF-8 at the boundaries: text from files atvoss does not write (an ONNX model's names, a
// compiler's messages) may hold bytes that are not UTF-8, which JSON, HTML declared UTF-8,
// PostgreSQL text and Python strings cannot carry. Such text is made valid once, where it
// enters (frontend/onnx_model_file.hpp for models), so every output downstream holds valid
// UTF-8 and none fails after the work is done. Pure functions, thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace atvoss {

// Whether s is well-formed UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF: what nlohmann::json and PostgreSQL accept). NUL is a valid character here.
bool is_valid_utf8(std::string_view s);

// s with each byte that begins no well-formed UTF-8 sequence written as the four characters
// \xHH (uppercase hex), the rest unchanged: valid UTF-8, readable, and two names that differ
// in such bytes stay different (a replacement character would make them one).
std::string escape_invalid_utf8(std::string_view s);

}  // namespace atvoss
