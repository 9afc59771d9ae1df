// Internal: fast writers and readers for the small JSON texts a records row holds (schedule,
// repeats, profile). best() decodes up to k of them per call and insert() writes three per
// record; nlohmann's DOM costs several microseconds per text, these a few hundred ns.
// Each reader accepts only the compact form the writers produce (no whitespace, no escapes)
// and returns nullopt on anything else, so callers fall back to the full parser and keep
// its exact results and error messages. Each writer produces text the full parser reads
// back to the same values, and the schedule writer the very bytes of Schedule::to_json().dump()
// (the schedule key is a hash of them); where it cannot (non-finite numbers, keys that need
// escaping) it returns nullopt and the caller uses nlohmann.
// Threading: pure functions.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/measurement.hpp"
#include "core/schedule.hpp"

namespace atvoss::db {

std::optional<std::string> write_schedule(const Schedule& s);
std::optional<std::string> write_repeats(const std::vector<double>& repeats);
std::optional<std::string> write_profile(const Profile& p);

std::optional<Schedule> read_schedule(std::string_view text);
std::optional<std::vector<double>> read_repeats(std::string_view text);
std::optional<Profile> read_profile(std::string_view text);

}  // namespace atvoss::db
