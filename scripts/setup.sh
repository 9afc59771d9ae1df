#!/usr/bin/env bash
# Shared set-up for demo.sh and test.sh: install the Debian packages atvoss needs
# (only those missing), then configure and build. Sourced, not run directly.
# BUILD_DIR (default build) and BUILD_TYPE (default Release) may be overridden;
# ATVOSS_BUILD_TARGETS (default: everything) limits what is built, e.g. the demo's tools.
# ATVOSS_WITH_TESTS=0 (demo.sh) installs and builds only the programs: no test or benchmark
# packages (GoogleTest, Google Benchmark, Chromium, the ONNX Python modules, clang).
# ATVOSS_WERROR=1 (CI, .ci/run) makes warnings in atvoss's own code errors.
# With the tests, the peers (scripts/peers-requirements.txt: ONNX Runtime, onnx, numpy, pytest)
# go into a virtual environment, $BUILD_DIR/peers, pinned; the product never needs them.
# ATVOSS_WITH_PEERS=1 installs them without the tests (scripts/demo_cpu.sh).
set -euo pipefail

ATVOSS_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ATVOSS_ROOT/build}"
BUILD_TYPE="${BUILD_TYPE:-Release}"
ATVOSS_WITH_TESTS="${ATVOSS_WITH_TESTS:-1}"

# What the programs need to build and run.
# xgboost (the CLI) is listed because libxgboost-dev's CMake config references /usr/bin/xgboost.
ATVOSS_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libxgboost-dev xgboost zlib1g-dev
  libsqlite3-dev libpq-dev
  libboost-dev libboost-system-dev
  nlohmann-json3-dev libcli11-dev libssl-dev
  libonnx-dev libprotobuf-dev
  pybind11-dev python3-dev python3-numpy python3-setuptools  # the Python package (python/)
)
# What only the tests and benchmarks need.
ATVOSS_TEST_PACKAGES=(
  libgtest-dev libgmock-dev libbenchmark-dev
  sqlite3                     # the kill -9 resume test reads the database mid-job
  postgresql                  # the store tests start a throwaway server (tests/db/pg_cluster.sh)
  python3-onnx                # the ONNX import tests build their models
  python3-pytest              # the Python package's suites
  python3-mypy                # the check that examples/python type-checks against the stubs
  python3-venv python3-pip    # the test that pip-installs the package into a venv
  python3-build python3-wheel # the test that builds the wheel (python3 -m build --wheel --no-isolation)
  chromium                    # the report test renders the HTML headless
  clang libclang-rt-14-dev    # the libFuzzer smoke test of the frame decoder (ctest)
  clang-format-14             # the format check (ctest atvoss_format, .clang-format)
  libopenblas-dev libblis-dev libdnnl-dev  # bench_host_gemm's peers (the host backend itself needs only c++)
  ocl-icd-opencl-dev          # libdnnl-dev's CMake config finds OpenCL; Debian only recommends it
)
if [ "$ATVOSS_WITH_TESTS" = 1 ]; then ATVOSS_PACKAGES+=("${ATVOSS_TEST_PACKAGES[@]}"); fi

install_missing_packages() {
  local missing=()
  for p in "${ATVOSS_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "atvoss: installing ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
}

# Runs a command with its output in the log $1 (appended), not on the screen; on failure the
# log's end is shown and the command's status returned.
logged() {
  local log="$1"
  shift
  if ! "$@" >>"$log" 2>&1; then
    tail -n 80 "$log" >&2
    echo "atvoss: '$*' failed; the whole log is $log" >&2
    return 1
  fi
}

configure_and_build() {
  local log="$BUILD_DIR/build.log"
  : >"$log"
  local gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  local with=OFF
  [ "$ATVOSS_WITH_TESTS" = 1 ] && with=ON
  # A configure that failed half-way leaves a cache but no build files: configure again.
  if [ ! -f "$BUILD_DIR/CMakeCache.txt" ] ||
     { [ ! -f "$BUILD_DIR/build.ninja" ] && [ ! -f "$BUILD_DIR/Makefile" ]; }; then
    logged "$log" cmake -S "$ATVOSS_ROOT" -B "$BUILD_DIR" "${gen[@]}" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
      -DATVOSS_BUILD_TESTS="$with" -DATVOSS_BUILD_BENCH="$with" \
      -DATVOSS_WERROR="$([ "${ATVOSS_WERROR:-0}" = 1 ] && echo ON || echo OFF)"
  elif ! grep -q "^ATVOSS_BUILD_TESTS:BOOL=$with\$" "$BUILD_DIR/CMakeCache.txt"; then
    # A build dir set up by the demo gains its tests here (and keeps them afterwards).
    if [ "$with" = ON ]; then
      logged "$log" cmake -S "$ATVOSS_ROOT" -B "$BUILD_DIR" -DATVOSS_BUILD_TESTS=ON -DATVOSS_BUILD_BENCH=ON
    fi
  fi
  local targets=()
  for t in ${ATVOSS_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
  # CMake's and the compiler's output go to the log, not the screen: a fresh build prints
  # screens of standard-library warnings that say nothing about atvoss.
  echo "atvoss: building in $BUILD_DIR (log: $log)" >&2
  logged "$log" cmake --build "$BUILD_DIR" -j "$(nproc)" "${targets[@]}"
}

# The peers' virtual environment, made once and refreshed when the pins change.
install_peers() {
  local venv="$BUILD_DIR/peers" pins="$ATVOSS_ROOT/scripts/peers-requirements.txt"
  if [ -f "$venv/pins.txt" ] && cmp -s "$pins" "$venv/pins.txt"; then return 0; fi
  echo "atvoss: installing the peers into $venv" >&2
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$pins" >&2
  cp "$pins" "$venv/pins.txt"
}

install_missing_packages
mkdir -p "$BUILD_DIR"
if [ "$ATVOSS_WITH_TESTS" = 1 ] || [ "${ATVOSS_WITH_PEERS:-0}" = 1 ]; then install_peers; fi
configure_and_build
