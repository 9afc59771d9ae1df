#!/usr/bin/env bash
# atvoss's side of the search figures of search/README.md "Current figures", in one run, and
# the peer comparison beside them. Steps (build the two bench programs first):
#   1. bench_lofo: tpe defaults chosen leave-one-family-out, rotated report   -> lofo.csv
#   2. bench_lofo: the tuner's default (model alone or model + tpe), rotated   -> lofo_default.csv
#   3. bench_recorded_spaces: atvoss strategies with the shipped defaults     -> atvoss.csv
#   4. report.py: the merged atvoss tables
#   5. bench/peers_recorded_spaces.py: Kernel Tuner's strategies, atvoss's default and Optuna's
#      TPE and CMA-ES on the nine spaces, through Kernel Tuner's accounting -> peers.csv
#      (docs/decisions/peers-kernel-tuner-optuna.md); then proposal time at 1000 observed
#      trials (Optuna: optuna_peer.py --time-at) and the warm start.
# The CSVs behind the rotated atvoss figures are kept in bench/peer/results. The peers (Kernel
# Tuner, Optuna, pinned in scripts/peers-requirements.txt) live in $BUILD_DIR/peers, which
# `ATVOSS_WITH_PEERS=1 scripts/setup.sh` makes; not called by scripts/test.sh. Takes hours on
# 2 cores (steps 1-2).
# Environment: BUILD_DIR (default build), OUT (default $BUILD_DIR/peer), SEEDS (default 5).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
OUT="${OUT:-$BUILD_DIR/peer}"
SEEDS="${SEEDS:-5}"
GRID="tpe_local_wide=0,0.5;tpe_local_pair=0,0.5"  # the rotation that chose tpe_local_wide (search/README.md)
PY="$BUILD_DIR/peers/bin/python"  # the peers' environment (scripts/setup.sh install_peers)
if [ ! -x "$PY" ]; then
  echo "run.sh: $PY is missing: make the peers' environment with ATVOSS_WITH_PEERS=1 scripts/setup.sh" >&2
  exit 2
fi

cmake --build "$BUILD_DIR" --target bench_lofo bench_recorded_spaces _atvoss
mkdir -p "$OUT"
BIN="$BUILD_DIR/bin"

"$BIN/bench_lofo" --seeds "$SEEDS" --grid "$GRID" --csv "$OUT/lofo.csv" | tee "$OUT/lofo.txt"
"$BIN/bench_lofo" --strategy ensemble --grid "ensemble_tpe=0,1" --seeds "$SEEDS" --tune-seeds 3 \
  --csv "$OUT/lofo_default.csv" | tee "$OUT/lofo_default.txt"
"$BIN/bench_recorded_spaces" --seeds "$SEEDS" --strategies tpe,model-guided-xgboost,random \
  --csv "$OUT/atvoss.csv" | tee "$OUT/atvoss.txt"
"$PY" "$ROOT/bench/peer/report.py" "$OUT/lofo.csv" "$OUT/lofo_default.csv" "$OUT/atvoss.csv" | tee "$OUT/report.txt"
PYTHONPATH="$BUILD_DIR/python" "$PY" "$ROOT/bench/peers_recorded_spaces.py" --seeds "$SEEDS" --seed-base 2001 --jobs 2 \
  --csv "$OUT/peers.csv" | tee "$OUT/peers.txt"

TIMED=gemm-RTX_3090,convolution-RTX_3090,dedispersion_milo-A4000
"$BIN/bench_recorded_spaces" --time-at 1000 --spaces "$TIMED" --strategies tpe,model-guided-xgboost \
  | tee "$OUT/timing.txt"
"$PY" "$ROOT/bench/peer/optuna_peer.py" --time-at 1000 --spaces "$TIMED" --samplers tpe --csv "$OUT/timing_optuna.csv"
cat "$OUT/timing_optuna.csv"

TITAN=convolution-RTX_Titan,pnpoly-RTX_Titan,gemm-RTX_Titan
for prior in "" "--prior-from RTX_3090" "--prior-from RTX_3090 --prior-trials 200"; do
  # shellcheck disable=SC2086
  "$BIN/bench_recorded_spaces" --spaces "$TITAN" --strategies model-guided-xgboost,tpe --seeds "$SEEDS" \
    --budget 50 $prior | tail -2
done | tee "$OUT/warm_start.txt"
