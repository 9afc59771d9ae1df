#!/usr/bin/env bash
# The package installs whole from the existing build dir (nothing is compiled again):
#   1. `pip install .` into a plain venv, as Python packages install: build isolation fetches
#      setuptools and numpy from PyPI (README "Python");
#   2. offline, with Debian's setuptools: `pip install --no-build-isolation .` into a venv
#      made with --system-site-packages (Debian's numpy serves the numpy dependency);
#   3. `python3 -m build --wheel --no-isolation` makes a wheel, installed into a third venv.
# None of them writes setuptools' folders into the CMake build dir.
# Each time atvoss is imported from outside the source tree, its host backend uses the kernel
# runner the package carries (no ATVOSS_KERNEL_RUNNER set), and one tiny tune runs on the
# NPU simulator and one on the host.
# Usage: pip_install_test.sh SOURCE_DIR BUILD_DIR PYTHON
# Fails (never skips) when python3-venv, pip or python3-build is missing: scripts/setup.sh
# installs them for the tests.
set -euo pipefail
src="$1" build="$2" python="$3"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# pip builds in the tree it installs from (setuptools' build/ and *.egg-info), so install
# from a copy of what the package is made of: the repo itself stays untouched.
mkdir -p "$tmp/src/python"
cp "$src/pyproject.toml" "$src/setup.py" "$tmp/src/"
cp -r "$src/python/atvoss" "$tmp/src/python/"
rm -rf "$tmp/src/python/atvoss/__pycache__"

make_venv() {
  "$python" -m venv ${2:---system-site-packages} "$1" || {
    echo "FAIL: '$python -m venv' does not work: install python3-venv (scripts/setup.sh does)" >&2
    exit 1
  }
  "$1/bin/python" -m pip --version >/dev/null || {
    echo "FAIL: no pip in the venv: install python3-pip (scripts/setup.sh does)" >&2
    exit 1
  }
}

# Imports atvoss from the venv $1 and tunes on the simulator and on the host.
check_installed() {
  env -u PYTHONPATH -u ATVOSS_KERNEL_RUNNER OMP_NUM_THREADS=1 XDG_CACHE_HOME="$tmp/cache" \
    "$1/bin/python" - "$1" <<'PY'
import os
import sys

import atvoss

venv = os.path.realpath(sys.argv[1])
where = os.path.realpath(atvoss.__file__)
assert where.startswith(venv + os.sep), f"imported atvoss from {where}, not from the venv {venv}"
runner = os.path.realpath(os.environ.get("ATVOSS_KERNEL_RUNNER", ""))
assert runner == os.path.join(os.path.dirname(where), "bin", "atvoss-kernel-runner"), runner
assert os.access(runner, os.X_OK), runner
r = atvoss.tune({"op": "matmul", "dims": {"M": 128, "N": 128, "K": 128}}, "ascend910b", trials=4,
                strategy="random", seed=1)
assert r.trials == 4 and r.best_us > 0, r
h = atvoss.tune({"op": "matmul", "dims": {"M": 32, "N": 32, "K": 32}}, "host", trials=2, strategy="random",
                seed=1)
assert h.trials == 2 and 0 < h.best_us < float("inf"), h
print(f"installed atvoss in {where}; runner {runner}; tune: {r.best_us:.2f} us on ascend910b, "
      f"{h.best_us:.2f} us on the host")
PY
}

export ATVOSS_BUILD_DIR="$build" PIP_DISABLE_PIP_VERSION_CHECK=1
cd "$tmp"

# setuptools' scratch folders (build_base) that once landed in the CMake build dir.
no_setuptools_folders() {
  if compgen -G "$build/bdist.*" >/dev/null || compgen -G "$build/temp.*" >/dev/null ||
     compgen -G "$build/lib.linux*" >/dev/null; then
    echo "FAIL: pip wrote setuptools folders into the CMake build dir $build" >&2
    exit 1
  fi
}

make_venv "$tmp/plain-venv" --clear  # no --system-site-packages: a plain venv
env -u PYTHONPATH "$tmp/plain-venv/bin/python" -c "import numpy" 2>/dev/null && {
  echo "FAIL: the plain venv sees numpy before the install: it is not plain" >&2
  exit 1
}
env -u PYTHONPATH "$tmp/plain-venv/bin/python" -m pip install -q "$tmp/src"
check_installed "$tmp/plain-venv"
no_setuptools_folders
rm -rf "$tmp/src/.setuptools"

# Offline: no index, nothing fetched; setuptools and numpy come from Debian's site-packages.
export PIP_NO_INDEX=1

make_venv "$tmp/venv"
env -u PYTHONPATH "$tmp/venv/bin/python" -m pip install -q --no-build-isolation "$tmp/src"
check_installed "$tmp/venv"

"$python" -c "import build" 2>/dev/null || {
  echo "FAIL: no python3 -m build: install python3-build (scripts/setup.sh does)" >&2
  exit 1
}
no_setuptools_folders
rm -rf "$tmp/src/.setuptools"
env -u PYTHONPATH "$python" -m build --wheel --no-isolation --outdir "$tmp/dist" "$tmp/src" >/dev/null
wheel=("$tmp"/dist/atvoss-*.whl)
# The listing first: `zipfile -l | grep -q` fails under pipefail when grep stops reading early.
listing="$("$python" -m zipfile -l "${wheel[0]}")"
grep -q "atvoss/bin/atvoss-kernel-runner" <<<"$listing" || {
  echo "FAIL: the wheel ${wheel[0]} does not carry atvoss/bin/atvoss-kernel-runner" >&2
  exit 1
}
make_venv "$tmp/wheel-venv"
env -u PYTHONPATH "$tmp/wheel-venv/bin/python" -m pip install -q "${wheel[0]}"
check_installed "$tmp/wheel-venv"
