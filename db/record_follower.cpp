#include "db/record_follower.hpp"

#include <algorithm>
#include <utility>

#include "core/error.hpp"

namespace atvoss::db {

RecordFollower::RecordFollower(const RecordStore& store, std::string workload_key, std::string target_key,
                               int whole_read_every)
    : store_(store),
      workload_key_(std::move(workload_key)),
      target_key_(std::move(target_key)),
      whole_read_every_(whole_read_every) {
  if (whole_read_every < 1) throw Error(ErrorKind::internal, "RecordFollower: whole_read_every must be >= 1");
}

std::vector<Record> RecordFollower::next() {
  const bool whole = !store_.commits_in_id_order() && ++reads_ % static_cast<std::uint64_t>(whole_read_every_) == 0;
  std::vector<Record> read =
      whole ? store_.history(workload_key_, target_key_) : store_.history_after(workload_key_, target_key_, last_id_);
  std::erase_if(read, [&](const Record& r) { return !seen_.insert(r.id).second; });
  std::stable_sort(read.begin(), read.end(), [](const Record& a, const Record& b) { return a.id < b.id; });
  for (const Record& r : read) last_id_ = std::max(last_id_, r.id);
  return read;
}

}  // namespace atvoss::db
