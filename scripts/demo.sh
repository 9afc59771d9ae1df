#!/usr/bin/env bash
# Installs what is missing, builds, and runs atvoss's main job: tuning ResNet-50 on an
# Ascend 910 (examples/resnet50-ascend910.json), then says where the outputs are.
set -euo pipefail
# The demo builds what it runs and what its last lines point to: the programs, not the Python
# module (README "Python": `cmake --build build --target _atvoss`), the tests or the
# benchmarks, nor their packages. atvoss-kernel-runner runs host kernels.
ATVOSS_BUILD_TARGETS="${ATVOSS_BUILD_TARGETS:-atvoss-tune atvoss-sim atvoss-analyze atvoss-db atvoss-kernel-runner}"
ATVOSS_WITH_TESTS=0
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$ATVOSS_ROOT"
BIN="$BUILD_DIR/bin"
JOB=examples/resnet50-ascend910.json
mkdir -p out
echo "== atvoss-tune $JOB (rerun it to resume; delete out/ to start over)" >&2
"$BIN/atvoss-tune" "$JOB"
echo >&2
echo "report: $ATVOSS_ROOT/out/resnet50-ascend910-report.html" >&2
echo "table:  $ATVOSS_ROOT/out/resnet50-ascend910-table.json" >&2
echo "model plan: $ATVOSS_ROOT/out/resnet50-ascend910-model-plan.json (atvoss-analyze --plan recomputes its figure)" >&2
echo "database: $ATVOSS_ROOT/out/resnet50-ascend910.db" >&2
