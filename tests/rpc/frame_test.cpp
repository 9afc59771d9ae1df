// Frame codec: round trips, incremental feeding, and every way a frame can be bad.
#include <random>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "rpc/frame.hpp"

namespace atvoss::rpc {
namespace {

std::span<const std::uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

TEST(Frame, RoundTripsMessagesFedOneByteAtATime) {
  const Json a{{"type", "submit"}, {"items", Json::array({1, 2, 3})}};
  const Json b{{"type", "heartbeat"}};
  const std::string stream = encode_frame(a) + encode_frame(b);
  FrameDecoder decoder;
  std::vector<Json> got;
  for (char c : stream) {
    decoder.feed(&c, 1);
    while (auto m = decoder.next()) got.push_back(*m);
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], a);
  EXPECT_EQ(got[1], b);
  EXPECT_EQ(decoder.buffered(), 0u);
}

TEST(Frame, HeaderIsBigEndianPayloadLength) {
  const std::string frame = encode_frame(Json{{"type", "x"}});
  const std::uint32_t length = read_length(bytes_of(frame));
  EXPECT_EQ(length + kHeaderBytes, frame.size());
  EXPECT_EQ(static_cast<unsigned char>(frame[0]), 0u);  // small frames: high byte zero
}

TEST(Frame, OversizedLengthIsRejectedFromTheHeaderAlone) {
  FrameDecoder decoder(1024);
  const std::string header("\x00\x00\x04\x01", 4);  // 1025 > 1024, no payload sent
  decoder.feed(header.data(), header.size());
  try {
    decoder.next();
    FAIL() << "an oversized frame was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::protocol);
    EXPECT_THAT(e.what(), testing::HasSubstr("exceeds the maximum"));
  }
}

TEST(Frame, HugeLengthDoesNotAllocate) {
  // 4 GiB - 1 against the default 16 MiB limit: must fail at once, not try to buffer it.
  FrameDecoder decoder;
  const std::string header("\xff\xff\xff\xff", 4);
  decoder.feed(header.data(), header.size());
  EXPECT_THROW(decoder.next(), Error);
  EXPECT_EQ(decoder.buffered(), 4u);
}

TEST(Frame, TruncatedFrameWaitsForMoreBytes) {
  const std::string frame = encode_frame(Json{{"type", "x"}, {"pad", std::string(100, 'a')}});
  FrameDecoder decoder;
  decoder.feed(frame.data(), frame.size() - 1);
  EXPECT_FALSE(decoder.next().has_value());
  EXPECT_EQ(decoder.buffered(), frame.size() - 1);  // the caller sees a truncation at EOF
}

TEST(Frame, BadPayloadsAreProtocolErrors) {
  const struct {
    const char* name;
    std::string payload;
    const char* why;
  } kCases[] = {
      {"not_msgpack", std::string("\xc1\xc1\xc1", 3), "not valid MessagePack"},
      {"array_not_object", [] { std::string s; Json::to_msgpack(Json::array({1}), nlohmann::detail::output_adapter<char>(s)); return s; }(), "not an object"},
      {"no_type", [] { std::string s; Json::to_msgpack(Json{{"a", 1}}, nlohmann::detail::output_adapter<char>(s)); return s; }(), "'type'"},
      {"type_not_string", [] { std::string s; Json::to_msgpack(Json{{"type", 1}}, nlohmann::detail::output_adapter<char>(s)); return s; }(), "'type'"},
      {"trailing_garbage", [] { std::string s; Json::to_msgpack(Json{{"type", "x"}}, nlohmann::detail::output_adapter<char>(s)); return s + "zz"; }(), "MessagePack"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    std::string frame(4, '\0');
    const auto n = static_cast<std::uint32_t>(c.payload.size());
    frame[0] = static_cast<char>(n >> 24);
    frame[1] = static_cast<char>(n >> 16);
    frame[2] = static_cast<char>(n >> 8);
    frame[3] = static_cast<char>(n);
    frame += c.payload;
    FrameDecoder decoder;
    decoder.feed(frame.data(), frame.size());
    try {
      decoder.next();
      FAIL() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::protocol);
      EXPECT_THAT(e.what(), testing::HasSubstr(c.why));
    }
  }
}

TEST(Frame, EncodingAMessageWithoutTypeIsABug) {
  try {
    encode_frame(Json{{"a", 1}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::internal);
  }
}

TEST(Frame, RandomBytesNeverCrashTheDecoder) {
  std::mt19937_64 rng(42);  // seed printed by the name: rerun with the same value
  for (int round = 0; round < 2000; ++round) {
    std::string junk(rng() % 64, '\0');
    for (char& c : junk) c = static_cast<char>(rng() % 256);
    FrameDecoder decoder(4096);
    decoder.feed(junk.data(), junk.size());
    try {
      while (decoder.next()) {
      }
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::protocol);
    }
  }
}

}  // namespace
}  // namespace atvoss::rpc
