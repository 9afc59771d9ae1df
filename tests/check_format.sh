#!/usr/bin/env bash
# ctest atvoss_format: every C and C++ file of the tree is as clang-format leaves it under the
# root's .clang-format (CONTRIBUTING.md, "Code format"). Usage: check_format.sh ROOT CLANG_FORMAT
set -euo pipefail
cd "$1"
if [ -d .git ]; then
  mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.cc' '*.c' | grep -v '^data/\|/fuzz/corpus/')
else
  mapfile -t files < <(find . -path ./data -prune -o -path './build*' -prune -o \
    \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.cc' -o -name '*.c' \) -print | grep -v '/fuzz/corpus/')
fi
"$2" --dry-run --Werror "${files[@]}"
echo "atvoss_format: ${#files[@]} files as .clang-format leaves them"
