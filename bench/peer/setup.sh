#!/usr/bin/env bash
# Installs the peer benchmark's extra dependencies: Debian's python3-optuna (with numpy).
# Benchmark-only: atvoss itself never needs Optuna, and scripts/test.sh does not call this.
set -euo pipefail
missing=()
for p in python3 python3-numpy python3-optuna; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo apt-get update -q >&2
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
