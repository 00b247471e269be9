#!/usr/bin/env bash
# Writes the IR the pass emits for every test-suite program, in every mode, to one directory, so a refactoring
# can show that it changed no instrumentation: run it before and after, then `diff -r BEFORE AFTER`.
#   scripts/ir-snapshot.sh OUT [DIST]      (DIST defaults to dist/)
# Per program and variant: OUT/<program>.<mode><opt>.ll, from `pathprof-clang <opt> -g -S -emit-llvm`, run in a
# fixed scratch directory with the same names each time (module names and paths must not differ between runs).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${1:?usage: scripts/ir-snapshot.sh OUT [DIST]}
dist=$(cd "${2:-dist}" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
# A fixed directory: the output path is part of the module's identity, and so of the IR.
scratch=/tmp/pathprof-ir-snapshot
rm -rf "$scratch"
mkdir -p "$scratch"
trap 'rm -rf "$scratch"' EXIT
cp "$root"/test-suite/programs/*.c "$root"/test-suite/programs/*.cpp "$root"/test-suite/programs/*.h "$scratch"/
cd "$scratch"
variants=("edge:" "path:" "context:" "piecewise:" "path:--pathprof-atomic" "context:--pathprof-atomic"
    "edge:--pathprof-fork-checks=0")
n=0
for src in *.c *.cpp; do
    case $src in *.cpp) cc=$dist/bin/pathprof-clang++ ;; *) cc=$dist/bin/pathprof-clang ;; esac
    for v in "${variants[@]}"; do
        mode=${v%%:*} flag=${v#*:}
        for opt in -O0 -O2; do
            name="${src%.*}.$mode${flag:+${flag#--pathprof}}$opt.ll"
            # shlib_variant.c wants its build step (-DSTEP=N); every other program ignores the define.
            if ! PATHPROF_MODE=$mode "$cc" $flag $opt -DSTEP=1 -g -S -emit-llvm "$src" -o "$name" 2>"$name.err"; then
                echo "ir-snapshot: $src ($mode $flag $opt) did not compile: $(head -1 "$name.err")" >&2
                exit 1
            fi
            mv "$name" "$out/"
            n=$((n + 1))
        done
    done
done
echo "ir-snapshot: $n files in $out"
