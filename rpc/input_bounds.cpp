#include "rpc/internal/input_bounds.hpp"

#include <string>
#include <vector>

#include "core/error.hpp"

namespace atvoss::rpc {

namespace {

// Reads MessagePack value headers; every read is checked against the end of the input.
class MsgpackCursor {
 public:
  MsgpackCursor(std::span<const std::uint8_t> bytes, std::string_view what) : bytes_(bytes), what_(what) {}

  std::size_t left() const { return bytes_.size() - pos_; }

  // Consumes one value's header and any string/bin/ext payload; returns how many child
  // values follow it (array elements, or keys plus values of a map).
  std::uint64_t consume_header() {
    const std::uint8_t b = take(1);
    if (b <= 0x7f || b >= 0xe0) return 0;    // fixint
    if (b <= 0x8f) return 2u * (b & 0x0fu);  // fixmap
    if (b <= 0x9f) return b & 0x0fu;         // fixarray
    if (b <= 0xbf) return skip(b & 0x1fu);   // fixstr
    switch (b) {
      case 0xc0:
      case 0xc2:
      case 0xc3:
        return 0;  // nil, false, true
      case 0xc4:
        return skip(take(1));  // bin 8
      case 0xc5:
        return skip(take(2));  // bin 16
      case 0xc6:
        return skip(take(4));  // bin 32
      case 0xc7:
        return skip(take(1) + 1);  // ext 8 (+ type byte)
      case 0xc8:
        return skip(take(2) + 1);
      case 0xc9:
        return skip(take(4) + 1);
      case 0xca:
      case 0xce:
      case 0xd2:
        return skip(4);
      case 0xcb:
      case 0xcf:
      case 0xd3:
        return skip(8);
      case 0xcc:
      case 0xd0:
        return skip(1);
      case 0xcd:
      case 0xd1:
        return skip(2);
      case 0xd4:
        return skip(2);  // fixext 1..16 (+ type byte)
      case 0xd5:
        return skip(3);
      case 0xd6:
        return skip(5);
      case 0xd7:
        return skip(9);
      case 0xd8:
        return skip(17);
      case 0xd9:
        return skip(take(1));  // str 8/16/32
      case 0xda:
        return skip(take(2));
      case 0xdb:
        return skip(take(4));
      case 0xdc:
        return take(2);  // array 16/32
      case 0xdd:
        return take(4);
      case 0xde:
        return 2 * take(2);  // map 16/32
      case 0xdf:
        return 2 * take(4);
      default:
        fail("not valid MessagePack: byte 0x" + hex(b) + " at offset " + std::to_string(pos_ - 1) + " is no type");
    }
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw Error(ErrorKind::protocol, std::string(what_) + ": " + why);
  }

 private:
  // A big-endian unsigned integer of n bytes.
  std::uint64_t take(std::size_t n) {
    if (left() < n) fail("not valid MessagePack: value truncated at offset " + std::to_string(pos_));
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v = (v << 8) | bytes_[pos_++];
    return v;
  }
  std::uint64_t skip(std::uint64_t n) {
    if (n > left()) {
      fail("not valid MessagePack: value at offset " + std::to_string(pos_) + " declares " + std::to_string(n) +
           " bytes but only " + std::to_string(left()) + " remain");
    }
    pos_ += static_cast<std::size_t>(n);
    return 0;
  }
  static std::string hex(std::uint8_t b) {
    static constexpr char kDigits[] = "0123456789abcdef";
    return {kDigits[b >> 4], kDigits[b & 0xf]};
  }

  std::span<const std::uint8_t> bytes_;
  std::string_view what_;
  std::size_t pos_ = 0;
};

}  // namespace

void check_msgpack_bounds(std::span<const std::uint8_t> bytes, std::string_view what, const InputLimits& limits) {
  MsgpackCursor cursor(bytes, what);
  // Values still to read in each open container; the bottom entry is the document itself.
  std::vector<std::uint64_t> open{1};
  std::size_t elements = 0;
  while (!open.empty()) {
    if (open.back() == 0) {
      open.pop_back();
      continue;
    }
    --open.back();
    if (++elements > limits.max_elements) {
      cursor.fail("more than " + std::to_string(limits.max_elements) + " values in one message");
    }
    const std::uint64_t children = cursor.consume_header();
    if (children == 0) continue;
    // Every value takes at least one byte: a count beyond the bytes left is a lie, and
    // refusing it here keeps a 5-byte header from reserving gigabytes downstream.
    if (children > cursor.left()) {
      cursor.fail("a container declares " + std::to_string(children) + " values but only " +
                  std::to_string(cursor.left()) + " bytes remain");
    }
    if (open.size() > limits.max_depth) {
      cursor.fail("nested deeper than " + std::to_string(limits.max_depth) + " levels");
    }
    open.push_back(children);
  }
  if (cursor.left() != 0) {
    cursor.fail("not valid MessagePack: " + std::to_string(cursor.left()) + " bytes after the end of the value");
  }
}

namespace {

// Thrown from the parser callback to stop at the first breach; converted below.
struct LimitBreach {
  std::string why;
};

}  // namespace

Json parse_json_bounded(std::string_view text, std::string_view what, const InputLimits& limits) {
  std::size_t elements = 0;
  // The callback sees every value as it is parsed, with the depth of its container, so a
  // deep or huge document is refused before the rest of it is read (nlohmann's parser
  // itself is iterative; the tree it would build is what later recursion walks).
  const Json::parser_callback_t bound = [&](int depth, Json::parse_event_t event, Json&) {
    using E = Json::parse_event_t;
    if (event == E::object_start || event == E::array_start) {
      if (static_cast<std::size_t>(depth) >= limits.max_depth) {
        throw LimitBreach{"nested deeper than " + std::to_string(limits.max_depth) + " levels"};
      }
    }
    if (event == E::object_start || event == E::array_start || event == E::value) {
      if (++elements > limits.max_elements) {
        throw LimitBreach{"more than " + std::to_string(limits.max_elements) + " values"};
      }
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), bound);
  } catch (const LimitBreach& breach) {
    throw Error(ErrorKind::bad_input, std::string(what) + ": " + breach.why);
  } catch (const Json::parse_error& e) {
    throw Error(ErrorKind::bad_input,
                std::string(what) + ": invalid JSON at byte " + std::to_string(e.byte) + ": " + e.what());
  } catch (const Json::exception& e) {
    // Well-formed text nlohmann still cannot hold, e.g. a number beyond double (1E01110).
    throw Error(ErrorKind::bad_input, std::string(what) + ": " + e.what());
  }
}

}  // namespace atvoss::rpc
