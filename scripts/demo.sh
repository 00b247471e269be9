#!/usr/bin/env bash
# The README's first command: set up, build, instrument the bundled demo program (Ball-Larus path mode, the
# default), run it, and print its hot paths as source lines.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== compiling examples/demo.c with pathprof-clang -O2" >&2
dist/bin/pathprof-clang -O2 examples/demo.c -o "$work/demo"
echo "== running it" >&2
PATHPROF_FILE="$work/demo.pathprof" "$work/demo"
echo "== pathprof decode --top 3 (the hottest acyclic paths of each function)" >&2
dist/bin/pathprof decode --top 3 "$work/demo.pathprof"
