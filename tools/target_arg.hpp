// The --target argument of the database tools (atvoss-db, atvoss-model): a preset name, a
// target file or inline JSON (backend::load_target), or the name or key of a target stored
// in the database (e.g. a recorded GPU such as "NVIDIA GeForce RTX 3090").
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>

#include "backend/targets.hpp"
#include "core/error.hpp"
#include "db/best_lookup.hpp"
#include "db/tuning_database.hpp"

namespace atvoss::tools {

inline bool is_preset(const std::string& arg) {
  const auto& names = backend::target_names();
  return std::find(names.begin(), names.end(), arg) != names.end();
}

// bad_input naming --target if arg matches nothing, or several stored targets by name.
inline db::TargetInfo resolve_target(const db::TuningDatabase& db, const std::string& arg) {
  if (arg.empty()) throw_bad_input("--target must not be empty");
  if (arg[0] == '{' || is_preset(arg) || std::filesystem::is_regular_file(arg)) {
    return db::TargetInfo::from_target(backend::load_target(arg));
  }
  try {
    return db::resolve_stored_target(db, arg);  // as /v1/best resolves it
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::not_found) throw;
  }
  std::string presets;
  for (const auto& n : backend::target_names()) presets += (presets.empty() ? "" : ", ") + n;
  throw_bad_input("--target '" + arg + "': not a preset (" + presets +
                  "), a target file, inline JSON, "
                  "or the name or key of a target stored in " +
                  db.path());
}

}  // namespace atvoss::tools
