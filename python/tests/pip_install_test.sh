#!/usr/bin/env bash
# `pip install --no-build-isolation .` works offline with Debian's setuptools: installs the
# package into a fresh venv (made with --system-site-packages, so Debian's numpy serves the
# numpy dependency) from the existing build dir, so nothing is compiled again, then imports
# atvoss from outside the source tree and runs one tiny tune.
# Usage: pip_install_test.sh SOURCE_DIR BUILD_DIR PYTHON
# Fails (never skips) when python3-venv or pip is missing: scripts/setup.sh installs them
# for the tests.
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

"$python" -m venv --system-site-packages "$tmp/venv" || {
  echo "FAIL: '$python -m venv' does not work: install python3-venv (scripts/setup.sh does)" >&2
  exit 1
}
venv_python="$tmp/venv/bin/python"
"$venv_python" -m pip --version >/dev/null || {
  echo "FAIL: no pip in the venv: install python3-pip (scripts/setup.sh does)" >&2
  exit 1
}

# Offline: no index, nothing fetched; setuptools and numpy come from Debian's site-packages.
cd "$tmp"
env -u PYTHONPATH ATVOSS_BUILD_DIR="$build" PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
  "$venv_python" -m pip install -q --no-build-isolation "$tmp/src"

env -u PYTHONPATH OMP_NUM_THREADS=1 "$venv_python" - "$tmp/venv" <<'PY'
import os
import sys

import atvoss

venv = os.path.realpath(sys.argv[1])
where = os.path.realpath(atvoss.__file__)
assert where.startswith(venv + os.sep), f"imported atvoss from {where}, not from the venv {venv}"
r = atvoss.tune({"op": "matmul", "dims": {"M": 128, "N": 128, "K": 128}}, "ascend910b", trials=4,
                strategy="random", seed=1)
assert r.trials == 4 and r.best_us > 0, r
print(f"installed atvoss in {where}; tune: {r.trials} trials, best {r.best_us:.2f} us")
PY
