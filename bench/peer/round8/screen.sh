#!/usr/bin/env bash
# Round 8's screen of a search change (search/README.md, round 8): the default on the nine
# recorded spaces with tuning seeds 1001-1010, then convolution_milo with seeds 1011-1040 as
# well (40 in all). Prints the nine-space means at 10/25/50/100/200 and how many of the 40
# convolution_milo runs are within 5% of the optimum at 25, 50, 100 and 200 evaluations.
# Usage: bench/peer/round8/screen.sh LABEL [extra bench_recorded_spaces flags]
# (environment variables such as ATVOSS_FARTOP pass through to the patched builds).
set -euo pipefail
label=$1; shift
out=${TMPDIR:-/tmp}/round8_$label
bin=build/bin/bench_recorded_spaces
common=(--strategies model-guided-xgboost --budget 200 --model-threads 1 "$@")
"$bin" "${common[@]}" --seeds 10 --seed-base 1001 --csv "$out.all.csv" > "$out.all.log"
"$bin" "${common[@]}" --spaces convolution_milo-W6600 --seeds 30 --seed-base 1011 --csv "$out.milo.csv" > /dev/null
echo "$label: nine spaces @10/25/50/100/200 $(tail -1 "$out.all.log" | awk '{print $3,$4,$5,$6,$7}')"
cat "$out.all.csv" "$out.milo.csv" | awk -F, '$1=="convolution_milo-W6600"{n++; s+=$7
  for (k = 5; k <= 8; k++) if ($k >= 0.95) h[k]++}
  END{printf "  convolution_milo, 40 seeds: mean @100 %.3f, within 5%% @25/50/100/200 %d/%d/%d/%d of %d\n",
      s/n, h[5], h[6], h[7], h[8], n}'
