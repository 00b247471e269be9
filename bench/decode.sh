#!/usr/bin/env bash
# Decode throughput (issue 18): times `pathprof decode`, `decode --json` and `show` on the benchmark programs'
# path, context and piecewise profiles; see bench/README.md and bench/decode.py.
#   bench/decode.sh                                   build, run, time with dist/bin/pathprof (~10 min the first time)
#   bench/decode.sh --baseline OLD/pathprof          also time an older build and compare every output
#   bench/decode.sh --no-bench-profiles --profile F  time only the given profiles
exec "$(dirname "$0")/with-dist.sh" decode.py "$@"
