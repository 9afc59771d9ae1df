// Knob values: the knobs and value lists the host spaces (host_space.hpp for matmul, rowops_space.hpp
// for the row ops) build their knobs from, spelled once — sizes clipped to a dimension,
// the fusion levels an epilogue needs, the thread counts of this machine — and the pick of
// the value nearest a preference that their default schedules make. Pure functions except
// thread_values, which reads $ATVOSS_HOST_MAX_THREADS.
#pragma once

#include <cstdint>
#include <vector>

#include "core/schedule_space.hpp"
#include "core/workload.hpp"
#include "host/machine.hpp"

namespace atvoss::host {

Knob knob(std::string_view name, std::vector<std::int64_t> values);

// The values below twice dim (larger ones only repeat the clamped block); the smallest always
// stays, so "tile > dim" is covered.
std::vector<std::int64_t> upto(std::int64_t dim, const std::vector<std::int64_t>& values);

// {0} without an epilogue, else {0, the lowest level that fuses every op} (lowering/epilogue.hpp).
std::vector<std::int64_t> fusion_values(const Workload& w);

// 1, 2, 4, ... up to the physical cores (the core count itself included), capped by
// $ATVOSS_HOST_MAX_THREADS; bad_input naming the variable if it is not a whole number >= 1.
std::vector<std::int64_t> thread_values(const MachineInfo& m);

// The value of values nearest want (the first of equals). REQUIRES: values not empty.
std::int64_t closest(const std::vector<std::int64_t>& values, std::int64_t want);

// For a default schedule on caches smaller than it assumes: the first schedule space accepts
// with each named knob lowered to a value <= its value in s, larger values first, the first
// name varied slowest. Sets s to it and returns true; false (s unchanged) if none passes.
// Names the space lacks are skipped. REQUIRES: every knob of space is set in s.
bool shrink_until_valid(const ScheduleSpace& space, Schedule& s, std::vector<std::string_view> names);

}  // namespace atvoss::host
