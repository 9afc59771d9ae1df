// Bounds on untrusted MessagePack and JSON (rpc/internal/input_bounds.hpp): deep nesting, lying
// counts and too many values are refused with a protocol or bad_input error before
// nlohmann's recursive decoder sees them, and every shape the farm really sends passes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "rpc/frame.hpp"
#include "rpc/internal/input_bounds.hpp"
#include "rpc/protocol.hpp"

namespace atvoss::rpc {
namespace {

std::span<const std::uint8_t> frame_bytes(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// {"type":"x","a": [[[...depth...[1]...]]]} as MessagePack, built by hand: nlohmann could
// not encode it without recursing itself.
std::string deep_message(std::size_t depth) {
  std::string s;
  s += '\x82';  // map of 2
  s += '\xa4';
  s += "type";
  s += '\xa1';
  s += "x";
  s += '\xa1';
  s += "a";
  s.append(depth, '\x91');  // fixarray of 1, nested
  s += '\x01';
  return s;
}

std::string framed(const std::string& payload) {
  std::string frame(4, '\0');
  const auto n = static_cast<std::uint32_t>(payload.size());
  for (int i = 0; i < 4; ++i) frame[i] = static_cast<char>(n >> (24 - 8 * i));
  return frame + payload;
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return std::string(to_string(e.kind())) + ": " + e.what();
  }
  return "no error";
}

TEST(InputBounds, DeeplyNestedFrameIsAProtocolErrorNotACrash) {
  // The attack: one frame a few hundred thousand levels deep (here 1M, 1 MB),
  // sent before login. Unbounded, nlohmann's reader overflows the stack (SIGSEGV).
  const std::string frame = framed(deep_message(1'000'000));
  FrameDecoder decoder;  // 16 MiB bound: the length is fine, the nesting is not
  decoder.feed(frame.data(), frame.size());
  const std::string error = error_of([&] { decoder.next(); });
  EXPECT_THAT(error, testing::StartsWith("protocol"));
  EXPECT_THAT(error, testing::HasSubstr("nested deeper than 64"));
}

TEST(InputBounds, DepthLimitIsExact) {
  // The message map is level 1, so 63 arrays inside it are 64 levels: the most allowed.
  EXPECT_NO_THROW(check_msgpack_bounds(frame_bytes(deep_message(63)), "frame"));
  EXPECT_THAT(error_of([&] { check_msgpack_bounds(frame_bytes(deep_message(64)), "frame"); }),
              testing::HasSubstr("frame: nested deeper than 64"));
  std::string json63 = std::string(63, '[') + std::string(63, ']');
  EXPECT_NO_THROW(parse_json_bounded(json63, "body"));
  // Also right at the limit: the 64th level is allowed, the 65th is not.
  EXPECT_NO_THROW(parse_json_bounded("[" + json63 + "]", "body"));
  EXPECT_THAT(error_of([&] { parse_json_bounded("[[" + json63 + "]]", "body"); }),
              testing::HasSubstr("body: nested deeper than 64"));
}

// Found by fuzz_frame_decoder_smoke (corpus: regression-number-overflow): nlohmann's
// out_of_range for a number beyond double escaped the handler and aborted the process.
TEST(InputBounds, NumberBeyondDoubleIsBadInput) {
  EXPECT_THAT(error_of([] { parse_json_bounded("1111111111111110E01110", "body"); }), testing::HasSubstr("body"));
  EXPECT_THAT(error_of([] { parse_json_bounded(R"({"x": 1e400})", "body"); }), testing::HasSubstr("body"));
}

TEST(InputBounds, DeeplyNestedBodyIsRefused) {
  // Bodies are decoded by workers, clients and the farm's database writer.
  const std::string deep = std::string(200'000, '\x91') + '\x01';
  const Json body = Json::binary(std::vector<std::uint8_t>(deep.begin(), deep.end()));
  const std::string error = error_of([&] { decode_body(body, "task 'request'"); });
  EXPECT_THAT(error, testing::StartsWith("protocol"));
  EXPECT_THAT(error, testing::HasSubstr("task 'request': nested deeper"));
}

TEST(InputBounds, DeepJsonIsRefusedWithTheFieldName) {
  const std::string deep = std::string(300'000, '[') + std::string(300'000, ']');
  const std::string error = error_of([&] { parse_json_bounded(deep, "/v1/best request body"); });
  EXPECT_THAT(error, testing::StartsWith("bad_input"));
  EXPECT_THAT(error, testing::HasSubstr("/v1/best request body: nested deeper than 64"));
  EXPECT_THAT(error_of([&] { parse_json_bounded("{\"a\":", "body"); }),
              testing::HasSubstr("body: invalid JSON at byte"));
}

TEST(InputBounds, CountsBeyondTheBytesLeftAreRefused) {
  const struct {
    const char* name;
    std::string payload;
  } kCases[] = {
      {"array32 of 4G values", std::string("\xdd\xff\xff\xff\xff\x01", 6)},
      {"map32 of 4G entries", std::string("\xdf\xff\xff\xff\xff\xa1x\x01", 8)},
      {"str32 of 4 GB", std::string("\xdb\xff\xff\xff\xff"
                                    "abc",
                                    8)},
      {"bin32 of 4 GB", std::string("\xc6\xff\xff\xff\xff"
                                    "abc",
                                    8)},
      {"ext32 of 4 GB", std::string("\xc9\xff\xff\xff\xff\x01"
                                    "abc",
                                    9)},
      {"truncated header", std::string("\xdc\x00", 2)},
      {"truncated float", std::string("\xcb\x00\x00", 3)},
      {"reserved byte", std::string("\xc1", 1)},
      {"trailing bytes", std::string("\x01\x02", 2)},
      {"empty", std::string()},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    EXPECT_THAT(error_of([&] { check_msgpack_bounds(frame_bytes(c.payload), "frame"); }),
                testing::StartsWith("protocol: frame: "));
  }
}

TEST(InputBounds, ElementLimitCountsEveryValue) {
  const InputLimits limits{64, 10};
  const auto encode = [](const Json& j) {
    const std::vector<std::uint8_t> v = Json::to_msgpack(j);
    return std::string(v.begin(), v.end());
  };
  // The array itself and its values: 1 + 9 = 10 values pass, 1 + 10 do not.
  EXPECT_NO_THROW(check_msgpack_bounds(frame_bytes(encode(Json(std::vector<int>(9, 1)))), "frame", limits));
  EXPECT_THAT(
      error_of([&] { check_msgpack_bounds(frame_bytes(encode(Json(std::vector<int>(10, 1)))), "frame", limits); }),
      testing::HasSubstr("more than 10 values"));
  EXPECT_NO_THROW(parse_json_bounded(Json(std::vector<int>(9, 1)).dump(), "body", limits));
  EXPECT_THAT(error_of([&] { parse_json_bounded(Json(std::vector<int>(10, 1)).dump(), "body", limits); }),
              testing::HasSubstr("body: more than 10 values"));
}

TEST(InputBounds, EveryMessagePackTypeNlohmannWritesIsAccepted) {
  // The scanner must agree with the encoder on every header form, or real traffic breaks.
  Json j = Json::object();
  j["type"] = "submit";
  j["ints"] = {0,  1,   127, 128,  255,  256,    65535,  65536,         4294967295ull, 4294967296ull,
               -1, -32, -33, -128, -129, -32768, -32769, -2147483648ll, -2147483649ll};
  j["floats"] = {0.5, -1e300, 3.25};
  j["literals"] = {nullptr, true, false};
  j["strings"] = {"",
                  std::string(31, 's'),
                  std::string(32, 's'),
                  std::string(255, 's'),
                  std::string(256, 's'),
                  std::string(70000, 's')};
  j["bins"] = {Json::binary({}),
               Json::binary(std::vector<std::uint8_t>(255, 1)),
               Json::binary(std::vector<std::uint8_t>(256, 1)),
               Json::binary(std::vector<std::uint8_t>(70000, 1)),
               Json::binary({1, 2, 3, 4}, 5),
               Json::binary(std::vector<std::uint8_t>(300, 1), 7)};
  j["arrays"] = {Json::array(), Json(std::vector<int>(15, 1)), Json(std::vector<int>(16, 1)),
                 Json(std::vector<int>(70000, 1))};
  Json big_map = Json::object();
  for (int i = 0; i < 70000; ++i) big_map[std::to_string(i)] = i;
  j["maps"] = {Json::object(), Json{{"a", 1}}, std::move(big_map)};
  const std::vector<std::uint8_t> bytes = Json::to_msgpack(j);
  EXPECT_NO_THROW(check_msgpack_bounds(bytes, "frame"));
  EXPECT_EQ(decode_payload(bytes), j);
}

}  // namespace
}  // namespace atvoss::rpc
