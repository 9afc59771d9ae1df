#!/usr/bin/env bash
# The budget goals of docs/job-spec.md ("The budget") on a DenseNet-121-shaped ONNX graph
# (make_densenet.py; DENSENET_BLOCKS=6,12,48,32 gives DenseNet-201's blocks, about 300
# tasks): atvoss-tune on ascend910 at 400 and 2000 trials, the default strategy,
# seeds given as arguments (default 1). Prints, per run: tasks, tasks measured, the vendor
# default, the zero-shot variant (b) and the tuned end-to-end figure (variant (d)), wall time
# and peak RSS. Usage: bench/graph/densenet_budget.sh [BUILD_DIR] [SEED...]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${1:-$here/../../build}"
shift || true
seeds=("${@:-1}")
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$here/make_densenet.py" "$work/densenet.onnx" "${DENSENET_BLOCKS:-6,12,24,16}" >/dev/null
printf "%-6s %-5s %6s %9s %12s %12s %12s %7s %8s %8s\n" seed trials tasks measured "default us" "zero-shot us" "tuned us" speedup "wall s" "RSS MB"
for seed in "${seeds[@]}"; do
  for trials in 400 2000; do
    name="dn-$trials-$seed"
    cat > "$work/$name.json" <<JSON
{"name": "$name", "target": "ascend910", "model": "$work/densenet.onnx", "trials": $trials, "seed": $seed,
 "database": "$work/$name.db", "export": "$work/$name-table.json", "report": "$work/$name.html"}
JSON
    /usr/bin/time -f "%e %M" -o "$work/$name.time" "$build/bin/atvoss-tune" "$work/$name.json" --quiet --json > "$work/$name.out"
    read -r wall rss < "$work/$name.time"
    /usr/bin/python3 - "$work/$name.out" "$seed" "$trials" "$wall" "$rss" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
v = {x["name"][:3]: x["end_to_end_us"] for x in j["variants"]}
print("%-6s %-5s %6d %9d %12.1f %12.1f %12.1f %6.2fx %8.1f %8.0f" % (
    sys.argv[2], sys.argv[3], len(j["tasks"]), j["tasks_tuned"], j["default_us"], v["(b)"], j["tuned_us"],
    j["default_us"] / j["tuned_us"], float(sys.argv[4]), int(sys.argv[5]) / 1024))
PY
  done
done
