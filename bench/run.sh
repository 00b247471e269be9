#!/usr/bin/env bash
# Benchmarks pathprof against LLVM's and GCC's instrumentation on real programs; see bench/README.md.
#   bench/run.sh            full run (about 40 minutes on 2 cores), writes bench/results/latest.{md,json}
#   bench/run.sh --quick    one repetition of one small workload (< 3 minutes), writes bench/work/quick.{md,json}
#   bench/run.sh --workloads kernels --no-compile-time   only the loop kernels (issue 18), ~20 minutes
# Builds pathprof into dist/ first when dist/ is missing (scripts/build.sh; honours CARGO_TARGET_DIR).
exec "$(dirname "$0")/with-dist.sh" run.py "$@"
