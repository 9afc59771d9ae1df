#!/usr/bin/env bash
# Installs what is missing, builds, and runs atvoss's main job.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$ATVOSS_ROOT"
BIN="$BUILD_DIR/bin"
WL='{"op":"conv2d","dims":{"N":1,"C":64,"H":56,"W":56,"K":64,"R":3,"S":3,"stride":1,"pad":1},"epilogue":["batchnorm","relu"]}'
echo "== ResNet-50 conv layer (res2 3x3) on ascend910: space" >&2
"$BIN/atvoss-sim" space --target ascend910 --workload "$WL"
echo "== sweep of 2000 sampled schedules -> out/demo-sweep.csv" >&2
mkdir -p out
"$BIN/atvoss-sim" sweep --target ascend910 --workload "$WL" --limit 2000 --csv out/demo-sweep.csv
