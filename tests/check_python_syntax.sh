#!/usr/bin/env bash
# ctest atvoss_python_syntax: every Python file of the tree parses (bench/ and scripts/ hold
# programs no other test imports; a docstring mangled by a C++ formatter once broke
# scripts/demo_cpu.sh's model writer unseen). Usage: check_python_syntax.sh ROOT
set -euo pipefail
cd "$1"
if [ -d .git ]; then
  mapfile -t files < <(git ls-files '*.py')
else
  mapfile -t files < <(find . -path './build*' -prune -o -name '*.py' -print)
fi
python3 - "${files[@]}" <<'PY'
import ast
import sys
for f in sys.argv[1:]:
    with open(f, encoding="utf-8") as src:
        ast.parse(src.read(), f)
print("atvoss_python_syntax: %d files parse" % (len(sys.argv) - 1))
PY
