#include "core/schedule_space.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.hpp"

namespace atvoss {
namespace {

ScheduleSpace small_space() {
  return ScheduleSpace({{"a", {1, 2, 4}}, {"b", {8, 16}}}, [](const Schedule& s) {
    return s.at("a") * s.at("b") > 32 ? Verdict::invalid("a*b too big") : Verdict::valid();
  });
}

TEST(ScheduleSpaceTest, FlatIndexRoundTrips) {
  auto space = small_space();
  EXPECT_EQ(space.size(), 6u);
  for (std::uint64_t i = 0; i < space.size(); ++i) {
    auto p = space.point_at(i);
    EXPECT_EQ(space.flat_index(p), i);
    EXPECT_EQ(space.point_of(space.schedule_at(p)), p);
  }
}

TEST(ScheduleSpaceTest, CheckExplainsEveryRejection) {
  auto space = small_space();
  const struct {
    const char* name;
    const char* json;
    const char* reject;
  } kCases[] = {
      {"valid", R"({"a":2,"b":16})", nullptr},
      {"own_check", R"({"a":4,"b":16})", "too big"},
      {"missing", R"({"a":2})", "missing knob 'b'"},
      {"extra", R"({"a":2,"b":8,"c":1})", "unknown knob 'c'"},
      {"outside", R"({"a":3,"b":8})", "knob 'a' = 3 is outside"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    auto v = space.check(Schedule::from_json(parse_json(c.json, "t")));
    EXPECT_EQ(v.ok, c.reject == nullptr);
    if (c.reject) {
      EXPECT_THAT(v.reason, testing::HasSubstr(c.reject));
    }
  }
}

TEST(ScheduleSpaceTest, AKnobAddedLaterTakesItsAbsentValueInOlderSchedules) {
  const ScheduleSpace space({{"a", {1, 2, 4}}, {"layout", {0, 1, 2}, 0}}, [](const Schedule& s) {
    return s.get_or("layout", 0) == 2 ? Verdict::invalid("layout 2 refused") : Verdict::valid();
  });
  const Schedule old({{"a", 2}});
  EXPECT_TRUE(space.check(old).ok) << space.check(old).reason;
  EXPECT_EQ(space.point_of(old), (Point{1, 0}));
  EXPECT_FALSE(space.point_of(Schedule({{"a", 2}, {"c", 1}})));  // extra knob, layout absent
  EXPECT_FALSE(space.point_of(Schedule({{"layout", 1}})));       // a has no absent value
  EXPECT_EQ(space.check(Schedule({{"layout", 1}})).reason, "missing knob 'a'");
  const ScheduleSpace refusing({{"a", {1, 2, 4}}, {"layout", {0, 1, 2}, 2}}, [](const Schedule& s) {
    return s.get_or("layout", 2) == 2 ? Verdict::invalid("layout 2 refused") : Verdict::valid();
  });
  EXPECT_EQ(refusing.point_of(old), (Point{1, 2}));
  EXPECT_FALSE(refusing.check(old).ok);
}

TEST(ScheduleSpaceTest, ParseRejectsNonMembers) {
  auto space = small_space();
  EXPECT_THROW(space.parse(parse_json(R"({"a":3,"b":8})", "t")), Error);
  EXPECT_THROW(space.parse(parse_json(R"({"a":1,"b":8,"z":0})", "t")), Error);
  EXPECT_THROW(space.parse(parse_json(R"({"a":1})", "t")), Error);
  EXPECT_EQ(space.parse(parse_json(R"({"a":1,"b":8})", "t")).at("b"), 8);
}

TEST(ScheduleSpaceTest, RandomValidPointIsSeededAndValid) {
  auto space = small_space();
  std::mt19937_64 r1(7), r2(7);
  for (int i = 0; i < 50; ++i) {
    auto p1 = space.random_valid_point(r1);
    auto p2 = space.random_valid_point(r2);
    ASSERT_TRUE(p1.has_value());
    EXPECT_EQ(p1, p2);
    EXPECT_TRUE(space.check(space.schedule_at(*p1)).ok);
  }
}

}  // namespace
}  // namespace atvoss
