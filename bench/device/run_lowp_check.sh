#!/usr/bin/env bash
# Builds and runs bench/device/lowp_check.cpp over the kernels export_lowp_kernels wrote to DIR
# (default device-kernels/), with nothing but a C++ compiler with OpenMP: on a machine lent for
# a feature this one lacks (AMX). Compiles the kernels as the host builder does (-O3
# -march=native -fopenmp), in parallel, then runs the checks and timings pinned to the last core.
# Usage: bash bench/device/run_lowp_check.sh [DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-device-kernels}
cxx=${CXX:-g++}
flags=(-std=gnu++17 -O3 -march=native -fPIC -shared -fopenmp)
ls "$dir"/*.cpp | xargs -P "$(nproc)" -I{} sh -c "$cxx ${flags[*]} {} -o \$(dirname {})/\$(basename {} .cpp).so"
"$cxx" -std=c++17 -O2 -I"$root" "$root/bench/device/lowp_check.cpp" -o "$dir/lowp_check" -ldl
grep -m1 "model name" /proc/cpuinfo
taskset -c $(($(nproc) - 1)) "$dir/lowp_check" "$dir"
