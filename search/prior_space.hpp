// PriorSpace: the measured results of another table (another kernel, or the same kernel on
// another device), and how they carry over to the space being tuned. A model-guided search
// trains on them by knob name, the way TenSet and MetaSchedule transfer across workloads,
// applied to Kernel Tuner-style tables whose only features are the knob values: each prior
// configuration becomes a schedule of this space (each shared knob takes this space's value
// nearest to its own, on a log scale for positive values; knobs the prior lacks take seeded
// random values, so the prior says nothing about them). Only tables sharing enough varying
// knobs by name count (`shares_enough`), so nothing is learnt where nothing is similar.
// Why and on what data: docs/decisions/search-space-priors.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/schedule_space.hpp"
#include "costmodel/cost_model.hpp"

namespace atvoss::search {

struct PriorSpace {
  std::string name;                      // where the results come from (reports, logs)
  std::vector<Knob> knobs;               // that table's knobs
  std::vector<costmodel::Trial> trials;  // its results, failures included
};

// A table known only by its results: each knob's values are those the results hold.
PriorSpace prior_space_from_trials(std::string name, std::vector<costmodel::Trial> trials);

// The knobs of `to` with more than one value that `from` also varies, by name.
std::size_t shared_varying_knobs(const std::vector<Knob>& from, const std::vector<Knob>& to);

// Whether `from` may teach a search on `to`: it varies at least two of `to`'s varying knobs
// and at least half of them (a table sharing one block size with this one says nothing about
// the rest of it).
bool shares_enough(const std::vector<Knob>& from, const std::vector<Knob>& to);

// Indices, in the order given, of the tables of `tables` that share enough with `to`: at most
// max_tables of them, those sharing the most varying knobs (ties: the first given).
std::vector<std::size_t> related_tables(const std::vector<PriorSpace>& tables, const std::vector<Knob>& to,
                                        std::size_t max_tables);

// The value of `values` (ordered) nearest to v: by log distance when both are positive,
// else by difference; ties take the smaller.
std::int64_t nearest_value(const std::vector<std::int64_t>& values, std::int64_t v);

// `from`'s trials as schedules of `to`: at most `max_rows` of them (the best tenth of the
// cap first, then a seeded uniform sample), one per resulting schedule (the best result
// wins a collision). Empty unless shares_enough.
std::vector<costmodel::Trial> map_prior(const PriorSpace& from, const ScheduleSpace& to, std::uint64_t seed,
                                        std::size_t max_rows = 1024);

}  // namespace atvoss::search
