// Knob names: the one place that spells the schedule knobs of the built-in op
// templates (docs/knobs.md says what each one does). Lowering, the cost model, the
// search and the tools use these constants instead of string literals.
#pragma once

#include <array>
#include <string_view>

namespace atvoss::knobs {

inline constexpr std::string_view tile_m = "tile_m";
inline constexpr std::string_view tile_n = "tile_n";
inline constexpr std::string_view tile_k = "tile_k";
inline constexpr std::string_view tile_h = "tile_h";
inline constexpr std::string_view tile_w = "tile_w";
inline constexpr std::string_view tile_c = "tile_c";
inline constexpr std::string_view k_steps = "k_steps";
inline constexpr std::string_view async_copy_depth = "async_copy_depth";
inline constexpr std::string_view tile_order = "tile_order";
inline constexpr std::string_view fusion_level = "fusion_level";
// Conv only: the activations' data layout (lowering/layout.hpp). Not in `all` below: the
// cost model sees it through the plan (copy row lengths, the reformat work).
inline constexpr std::string_view layout = "layout";
// NPU matmul with a reduction far longer than its output (a conv's weight gradient): the K
// loop in this many parts on as many cores, each adding its fp32 partial sums to the output
// (docs/knobs.md). Not in `all` below: the cost model sees it through the plan (the tile
// count, each tile's K and its fp32 store).
inline constexpr std::string_view split_k = "split_k";
// Host (CPU) only: the register micro-kernel's rows and columns (host/host_space.hpp).
inline constexpr std::string_view micro_m = "micro_m";
inline constexpr std::string_view micro_n = "micro_n";
// Host (CPU) only: the cores one kernel runs on (host/host_space.hpp).
inline constexpr std::string_view threads = "threads";
// Host (CPU) only, int8 and bf16 matmuls on a CPU with AMX: 1 runs the micro-kernel on AMX
// tiles, 0 on AVX-512 dot products (host/host_space.hpp). Not a feature of its own: micro_m
// 16 and 32 are AMX's alone.
inline constexpr std::string_view amx_tiles = "amx_tiles";

// Every named knob of the NPU templates, in the order the cost model's feature layout uses
// (the host-only micro_m/micro_n/threads are not in it: the layout is versioned data).
inline constexpr std::array<std::string_view, 10> all = {tile_m, tile_n,  tile_k,           tile_h,     tile_w,
                                                         tile_c, k_steps, async_copy_depth, tile_order, fusion_level};

// The host-only knobs that the kernel plan does not describe, so the cost model takes them as
// named features after `all` (feature version 5).
inline constexpr std::array<std::string_view, 3> host_only = {micro_m, micro_n, threads};

}  // namespace atvoss::knobs
