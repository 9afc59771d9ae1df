#!/usr/bin/env bash
# Shared set-up for demo.sh and test.sh: install the Debian packages atvoss needs
# (only those missing), then configure and build. Sourced, not run directly.
# BUILD_DIR (default build) and BUILD_TYPE (default Release) may be overridden;
# ATVOSS_BUILD_TARGETS (default: everything) limits what is built, e.g. the demo's tools.
set -euo pipefail

ATVOSS_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ATVOSS_ROOT/build}"
BUILD_TYPE="${BUILD_TYPE:-Release}"

# xgboost (the CLI) is listed because libxgboost-dev's CMake config references /usr/bin/xgboost.
ATVOSS_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libxgboost-dev xgboost zlib1g-dev
  libsqlite3-dev sqlite3
  libboost-dev libboost-system-dev
  nlohmann-json3-dev libcli11-dev libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libonnx-dev libprotobuf-dev python3-onnx python3-numpy
  pybind11-dev python3-dev python3-pytest python3-setuptools  # the Python package (python/)
  chromium
  clang libclang-rt-14-dev  # the libFuzzer smoke test of the frame decoder (ctest)
)

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

configure_and_build() {
  local gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
    cmake -S "$ATVOSS_ROOT" -B "$BUILD_DIR" "${gen[@]}" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" >&2
  fi
  local targets=()
  for t in ${ATVOSS_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
  cmake --build "$BUILD_DIR" -j "$(nproc)" "${targets[@]}" >&2
}

install_missing_packages
configure_and_build
