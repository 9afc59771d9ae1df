// Copying a former target's records to its current key (adopt_records.hpp).
#include "db/adopt_records.hpp"

#include <vector>

namespace atvoss::db {

std::int64_t adopt_records(RecordStore& store, const std::string& from_key, const TargetInfo& to) {
  if (from_key == to.key) return 0;
  std::vector<Record> moved;
  store.for_each_record(from_key, [&](const Record& r) {
    if (!store.contains(r.workload.key(), to.key, r.schedule.key())) {
      Record copy = r;
      copy.id = 0;
      copy.target = to;
      moved.push_back(std::move(copy));
    }
    return true;
  });
  if (!moved.empty()) store.write_together([&] { store.insert(moved); });
  return std::int64_t(moved.size());
}

}  // namespace atvoss::db
