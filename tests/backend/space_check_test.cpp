// SpaceCheck: a result is accepted only where measuring here could have produced it.
#include "backend/space_check.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "backend/backend.hpp"
#include "backend/targets.hpp"
#include "core/error.hpp"

namespace atvoss::backend {
namespace {

using ::testing::HasSubstr;

const Workload kCheckedMatmul =
    Workload::from_json(parse_json(R"({"op":"matmul","dims":{"M":256,"N":256,"K":256}})", "w"));

Measurement ok_us(double t) {
  Measurement m;
  m.time_us = t;
  m.repeats = {t};
  return m;
}

std::string refusal(SpaceCheck& check, const Workload& w, const Json& target, const Schedule& s, const Measurement& m) {
  try {
    check(w, target, s, m);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_input);
    return e.what();
  }
  return "";
}

TEST(SpaceCheckTest, ScheduleMustLieInTheWorkloadsSpace) {
  const Target t = load_target("ascend910");
  const Json desc = t.to_json();
  const Schedule def = *default_schedule(kCheckedMatmul, t);
  SpaceCheck check;
  EXPECT_EQ(refusal(check, kCheckedMatmul, desc, def, ok_us(5)), "");

  Json off = def.to_json();
  const std::string knob = off.begin().key();
  off[knob] = 999983;
  EXPECT_THAT(refusal(check, kCheckedMatmul, desc, Schedule::from_json(off), ok_us(5)), HasSubstr(knob));
  Json extra = def.to_json();
  extra["warp_count"] = 4;
  EXPECT_THAT(refusal(check, kCheckedMatmul, desc, Schedule::from_json(extra), ok_us(5)),
              HasSubstr("not in the space"));
}

TEST(SpaceCheckTest, OkResultOfAScheduleTheSpaceRefusesIsRefused) {
  const Target t = load_target("ascend910");
  const ScheduleSpace space = space_for(kCheckedMatmul, t);
  // The largest value of every knob overflows an on-chip buffer on this small matmul.
  std::map<std::string, std::int64_t> biggest;
  for (const Knob& k : space.knobs()) biggest[k.name] = k.values.back();
  const Schedule s(biggest);
  ASSERT_FALSE(space.check(s).ok);
  SpaceCheck check;
  EXPECT_THAT(refusal(check, kCheckedMatmul, t.to_json(), s, ok_us(5)), HasSubstr("measures as invalid"));
  EXPECT_EQ(refusal(check, kCheckedMatmul, t.to_json(), s, Measurement::failed(Status::invalid, "too big")), "");
}

TEST(SpaceCheckTest, NameOnlyTargetServesTablesOnly) {
  SpaceCheck check;
  const Json gpu{{"name", "NVIDIA GeForce RTX 3090"}};
  EXPECT_THAT(refusal(check, kCheckedMatmul, gpu, Schedule({{"tile_m", 16}}), ok_us(5)),
              HasSubstr("no hardware description"));
  const Workload table = Workload::from_json(
      Json{{"op", "recorded"}, {"table", std::string(ATVOSS_DATA_DIR) + "/recorded-spaces/pnpoly-RTX_3090.json.gz"}});
  const ScheduleSpace space = space_for(table, load_target("ascend910"));
  const Schedule first = space.schedule_at(Point(space.dimensions(), 0));
  EXPECT_EQ(refusal(check, table, gpu, first, Measurement::failed(Status::runtime_error, "x")), "");
  Json off = first.to_json();
  off[space.knobs()[0].name] = 999983;
  EXPECT_THAT(refusal(check, table, gpu, Schedule::from_json(off), ok_us(5)), HasSubstr("not in the space"));
}

}  // namespace
}  // namespace atvoss::backend
