#include "backend/space_check.hpp"

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "core/target.hpp"

namespace atvoss::backend {
namespace {

bool name_only(const Json& description) {
  return description.is_object() && description.size() == 1 && description.contains("name");
}

}  // namespace

const ScheduleSpace& SpaceCheck::space(const Workload& w, const Json& target_description) {
  const std::string key = w.key() + " " + target_description.dump();
  auto it = spaces_.find(key);
  if (it != spaces_.end()) return it->second;
  Target t;
  if (name_only(target_description)) {
    // A name is all a recorded GPU target carries; only a table knows its space.
    if (!w.is_table()) {
      throw_bad_input("record: the target " + target_description.dump() + " has no hardware description, so op '" +
                      w.op() + "' has no schedule space on it (only recorded tables do)");
    }
    t.name = target_description["name"].get<std::string>();
  } else {
    t = Target::from_json(target_description);
  }
  return spaces_.emplace(key, backend_for(w, t).space(w, t)).first->second;
}

void SpaceCheck::operator()(const Workload& w, const Json& target_description, const Schedule& s,
                            const Measurement& m) {
  if (w.is_objective()) return;  // the space is the user's: atvoss cannot check it
  const ScheduleSpace& sp = space(w, target_description);
  if (!sp.point_of(s)) {
    throw_bad_input("record: field 'schedule' " + s.to_json().dump() + " is not in the space of " + w.label() + ": " +
                    sp.check(s).reason);
  }
  if (!m.ok()) return;
  const Verdict v = sp.check(s);
  if (!v.ok) {
    throw_bad_input("record: status ok for a schedule the space refuses (" + v.reason +
                    "); such a schedule measures as invalid");
  }
}

}  // namespace atvoss::backend
