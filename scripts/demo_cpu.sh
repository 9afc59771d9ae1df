#!/usr/bin/env bash
# The loop on this CPU: writes a ResNet-50-shaped ONNX model (bench/graph/make_resnet50.py,
# seeded weights), tunes it for this CPU (a host job), runs it through atvoss with the default
# schedules and with the job's model plan, and prints both next to ONNX Runtime in one process
# (bench/engine_vs_ort.py). Installs what is missing first, ONNX Runtime into the build folder's
# peers environment (scripts/setup.sh). DEMO_TRIALS (default 400) sets the tuning budget.
set -euo pipefail
ATVOSS_BUILD_TARGETS="${ATVOSS_BUILD_TARGETS:-atvoss-tune atvoss-run atvoss-kernel-runner _atvoss}"
ATVOSS_WITH_TESTS=0
ATVOSS_WITH_PEERS=1
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$ATVOSS_ROOT"
PY="$BUILD_DIR/peers/bin/python"
OUT=out/cpu
mkdir -p "$OUT"
[ -f "$OUT/resnet50.onnx" ] || "$PY" bench/graph/make_resnet50.py "$OUT/resnet50.onnx" >&2
cat > "$OUT/resnet50-host.json" <<JOB
{"name": "resnet50-host", "target": "host", "model": "$OUT/resnet50.onnx", "trials": ${DEMO_TRIALS:-400},
 "seed": 1, "database": "$OUT/resnet50-host.db", "export": "$OUT/resnet50-host-table.json",
 "report": "$OUT/resnet50-host-report.html"}
JOB
echo "== atvoss-tune $OUT/resnet50-host.json (rerun to resume; delete $OUT/ to start over)" >&2
OMP_WAIT_POLICY=passive "$BUILD_DIR/bin/atvoss-tune" "$OUT/resnet50-host.json" --quiet
echo "== the model run on this CPU, beside ONNX Runtime" >&2
PYTHONPATH="$BUILD_DIR/python" "$PY" bench/engine_vs_ort.py "$OUT/resnet50.onnx" \
  "$OUT/resnet50.onnx:$OUT/resnet50-host-model-plan.json"
