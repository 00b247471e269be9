#!/usr/bin/env bash
# PGO speed-up benchmark (issue 7): no PGO vs LLVM IR PGO vs pathprof's sample export and use mode; see
# bench/README.md.
#   bench/pgo.sh            full run (SQLite, Lua, bzip2; 9 interleaved repetitions + callgrind, ~25 min), writes bench/results/pgo-latest.{md,json}
#   bench/pgo.sh --quick    one repetition of one small Lua workload, writes bench/work/pgo-quick.{md,json}
# Builds pathprof into dist/ first when dist/ is missing (scripts/build.sh; honours CARGO_TARGET_DIR).
exec "$(dirname "$0")/with-dist.sh" pgo.py "$@"
