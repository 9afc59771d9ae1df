// JSON helpers shared by every module: parsing with located errors, typed field
// access that names the field on failure, canonical text and the stable key hash.
//
// Canonical form: nlohmann::json objects keep keys sorted, so dump() with no
// indentation is canonical for the integer/string/array values atvoss stores.
// Keys are FNV-1a 64-bit over that text, printed as 16 lowercase hex digits.
// FNV-1a is fixed by its spec (offset 14695981039346656037, prime 1099511628211),
// so the same workload has the same key on every machine, compiler and run.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace atvoss {

using Json = nlohmann::json;

// Parses text; on failure throws bad_input "<what>: invalid JSON at byte N: ...". A key
// repeated within one object, or nesting deeper than 256 levels, is bad_input too: every
// job spec, target, workload and schedule is read through here.
Json parse_json(std::string_view text, std::string_view what);

// Reads and parses a file; bad_input naming `what` (the flag or field) if it is missing, not
// a regular file or malformed, io error if it cannot be read.
Json load_json_file(const std::string& path, std::string_view what = "file");

// An argument that is either inline JSON (starts with '{' or '[') or a file path.
Json json_from_arg(const std::string& arg, std::string_view what);

// Canonical compact text (sorted keys, no spaces).
std::string canonical_dump(const Json& j);

// FNV-1a 64 of the canonical text, as 16 hex digits.
std::string stable_key(const Json& j);
std::uint64_t fnv1a64(std::string_view bytes) noexcept;

// Typed access: throws bad_input "<context>: field '<name>' ..." naming what was expected.
const Json& require_field(const Json& obj, std::string_view name, std::string_view context);
std::int64_t require_int(const Json& obj, std::string_view name, std::string_view context);
double require_number(const Json& obj, std::string_view name, std::string_view context);
std::string require_string(const Json& obj, std::string_view name, std::string_view context);
void require_object(const Json& j, std::string_view context);

// The integer v as T, for a field named name: bad_input "<context>: field '<name>' must be an
// integer in LO..HI, got V" for a float, a bool or a value outside T, which nlohmann's
// get<T>() would truncate or wrap (a Python trials=2**32+4 ran 4 trials).
template <typename T>
T integer_as(const Json& v, std::string_view name, std::string_view context);

namespace detail {
[[noreturn]] void throw_integer_range(const Json& v, std::string_view name, std::string_view context,
                                      const std::string& lo, const std::string& hi);
}  // namespace detail

template <typename T>
T integer_as(const Json& v, std::string_view name, std::string_view context) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  using Limits = std::numeric_limits<T>;
  const bool fits = v.is_number_unsigned() ? v.get<std::uint64_t>() <= static_cast<std::uint64_t>(Limits::max())
                    : v.is_number_integer()
                        ? v.get<std::int64_t>() >= static_cast<std::int64_t>(Limits::min()) &&
                              (v.get<std::int64_t>() < 0 || static_cast<std::uint64_t>(v.get<std::int64_t>()) <=
                                                                static_cast<std::uint64_t>(Limits::max()))
                        : false;
  if (!fits)
    detail::throw_integer_range(v, name, context, std::to_string(Limits::min()), std::to_string(Limits::max()));
  return v.get<T>();
}

}  // namespace atvoss
