// A host database from before the fingerprint named the CPU's family and caches: records of w,
// one per time given, on the first valid points of its space, stored under this machine's
// former target (backend::former_targets). Returns that target.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/targets.hpp"
#include "db/tuning_database.hpp"

namespace atvoss::tuner::fixtures {

inline Target store_under_former_host_target(const std::string& db_path, const Workload& w,
                                             const std::vector<double>& times_us) {
  const Target host = backend::load_target("host");
  const std::vector<Target> former = backend::former_targets(host);
  EXPECT_EQ(former.size(), 1u);
  EXPECT_NE(former.at(0).key(), host.key());
  auto db = db::TuningDatabase::open(db_path);
  const ScheduleSpace space = backend::space_for(w, host);
  std::vector<db::Record> stored;
  for (std::uint64_t i = 0; stored.size() < times_us.size() && i < space.size(); ++i) {
    const Schedule s = space.schedule_at(space.point_at(i));
    if (!space.check(s).ok) continue;
    Measurement m;
    m.status = Status::ok;
    m.time_us = m.repeats.emplace_back(times_us[stored.size()]);
    stored.emplace_back(w, db::TargetInfo::from_target(former.at(0)), s, m);
  }
  db.records().insert(stored);
  return former.at(0);
}

}  // namespace atvoss::tuner::fixtures
