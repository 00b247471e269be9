#!/usr/bin/env bash
# bench/with-dist.sh SCRIPT.py [ARGS]: runs bench/SCRIPT.py from the repository root with ~/.cargo/bin on PATH,
# building pathprof into dist/ first when dist/ is missing (scripts/build.sh; honours CARGO_TARGET_DIR). Shared by
# bench/run.sh and bench/pgo.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
if [[ ! -x dist/bin/pathprof-clang || ! -x dist/bin/pathprof || ! -f dist/lib/libpathprof.so || ! -f dist/lib/libpathprof_rt.a ]]; then
  scripts/build.sh
fi
script=$1
shift
exec python3 "bench/$script" "$@"
