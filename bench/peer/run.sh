#!/usr/bin/env bash
# Peer benchmark in one run: atvoss's strategies and Optuna on the nine recorded spaces, same
# seeds, budgets and accounting (absent configurations are not evaluations, failed ones are).
# It remakes the figures of search/README.md "Current figures" (the peer table, proposal time,
# warm start). Steps: install Optuna (setup.sh), build the two bench programs, then
#   1. bench_lofo: tpe defaults chosen leave-one-family-out, rotated report   -> lofo.csv
#   2. bench_lofo: the tuner's default (model alone or model + tpe), rotated   -> lofo_default.csv
#   3. bench_recorded_spaces: atvoss strategies with the shipped defaults     -> atvoss.csv
#   4. optuna_peer.py: Optuna TPE and random                                  -> optuna.csv
#   5. report.py: the merged tables; then proposal time at 1000 observed trials and the
#      warm start (TITAN RTX spaces with the RTX 3090 records) with and without the prior.
# The CSVs behind the current peer table are kept in bench/peer/results (report_r4.txt is
# report.py's output on them). Not called by scripts/test.sh (Optuna is a benchmark-only
# dependency). Takes several hours on 2 cores, almost all of it Optuna TPE (whose asks cost
# O(trials) in Python).
# Environment: BUILD_DIR (default build), OUT (default $BUILD_DIR/peer), SEEDS (default 5).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
OUT="${OUT:-$BUILD_DIR/peer}"
SEEDS="${SEEDS:-5}"
SPACES=convolution-RTX_3090,pnpoly-RTX_3090,gemm-RTX_3090,dedispersion_milo-A4000,convolution-RTX_Titan,pnpoly-RTX_Titan,gemm-RTX_Titan,convolution_milo-W6600,dedispersion_milo-W6600
GRID="tpe_local_wide=0,0.5;tpe_local_pair=0,0.5"  # the rotation that chose tpe_local_wide (search/README.md)
PY=/usr/bin/python3  # Debian's python3-optuna lives in the system interpreter

"$ROOT/bench/peer/setup.sh"
cmake --build "$BUILD_DIR" --target bench_lofo bench_recorded_spaces
mkdir -p "$OUT"
BIN="$BUILD_DIR/bin"

"$BIN/bench_lofo" --seeds "$SEEDS" --grid "$GRID" --csv "$OUT/lofo.csv" | tee "$OUT/lofo.txt"
"$BIN/bench_lofo" --strategy ensemble --grid "ensemble_tpe=0,1" --seeds "$SEEDS" --tune-seeds 3 \
  --csv "$OUT/lofo_default.csv" | tee "$OUT/lofo_default.txt"
"$BIN/bench_recorded_spaces" --seeds "$SEEDS" --strategies tpe,model-guided-xgboost,random \
  --csv "$OUT/atvoss.csv" | tee "$OUT/atvoss.txt"
"$PY" "$ROOT/bench/peer/optuna_peer.py" --spaces "$SPACES" --samplers tpe,random --seeds "$SEEDS" \
  --csv "$OUT/optuna.csv"
# Optuna's recommended setting for correlated parameters, with room for its repeats (slow:
# hours on 2 cores, most of it gemm, whose asks are mostly absent configurations).
"$PY" "$ROOT/bench/peer/optuna_peer.py" --spaces "$SPACES" --samplers tpe-mv --seeds "$SEEDS" \
  --csv "$OUT/optuna_mv.csv"
"$PY" "$ROOT/bench/peer/report.py" "$OUT/lofo.csv" "$OUT/lofo_default.csv" "$OUT/atvoss.csv" "$OUT/optuna.csv" \
  "$OUT/optuna_mv.csv" | tee "$OUT/report.txt"

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
