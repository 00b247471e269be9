#!/usr/bin/env bash
# Benchmarks pathprof against LLVM's and GCC's instrumentation on real programs; see bench/README.md.
#   bench/run.sh            full run (about 40 minutes on 2 cores), writes bench/results/latest.{md,json}
#   bench/run.sh --quick    one repetition of one small workload (< 3 minutes), writes bench/work/quick.{md,json}
#   bench/run.sh --workloads kernels --no-compile-time   only the loop kernels (issue 18), ~20 minutes
# Builds pathprof into dist/ first when dist/ is missing (scripts/build.sh; honours CARGO_TARGET_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
if [[ ! -x dist/bin/pathprof-clang || ! -x dist/bin/pathprof || ! -f dist/lib/libpathprof.so || ! -f dist/lib/libpathprof_rt.a ]]; then
  scripts/build.sh
fi
exec python3 bench/run.py "$@"
