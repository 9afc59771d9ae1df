// Data layouts of a convolution's activations: the values of the `layout` knob
// (docs/knobs.md) and the transpose that converts a tensor between two of them.
// A conv reads its input and writes its output in its layout; the KernelPlan shows
// what that costs (copy row lengths, the on-chip reformat to the matrix unit's
// fractal). Between two ops whose layouts differ, the model pays a transpose
// (plan/layout_choice.hpp decides where). Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/schedule.hpp"
#include "core/workload.hpp"

namespace atvoss::lowering {

// Knob values. fractal (NC1HWC0: channels in blocks of one 32 B granule) is what the
// matrix unit reads and what schedules stored before the knob existed used.
enum class Layout { fractal = 0, nhwc = 1, nchw = 2 };
inline constexpr Layout kDefaultLayout = Layout::fractal;

const char* layout_name(Layout l);

// Whether w's template has the layout knob (the conv family).
bool has_layout_knob(const Workload& w);

// The layout s runs w in; nullopt for an op without the knob.
std::optional<Layout> layout_of(const Workload& w, const Schedule& s);

// The transpose workload that converts w's input activation (N x C x H x W in w's
// dtype) from one layout to another; nullopt when from == to. NCHW <-> NHWC and
// fractal <-> NCHW move single elements; fractal <-> NHWC moves 32 B granules.
// REQUIRES: has_layout_knob(w).
std::optional<Workload> layout_change(const Workload& w, Layout from, Layout to);

}  // namespace atvoss::lowering
