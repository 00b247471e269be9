#!/usr/bin/env bash
# Builds the fuzz targets with cargo-fuzz on the stable toolchain (RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass its
# -Z flags) and runs each for SECONDS (default 600), starting from fuzz/corpus/<target>/ (and fuzz/seeds/ if
# present: fuzz/make-seeds.sh).
# New inputs go to a scratch corpus; crashes to fuzz/artifacts/<target>/.
#   fuzz/run.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")"
secs="${1:-600}"; shift || true
targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=(read analysis merge trace)
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cargo fuzz build -s none >/dev/null
bin="$CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/release"
for t in "${targets[@]}"; do
  scratch="${FUZZ_SCRATCH:-/tmp/pathprof-fuzz}/$t"
  mkdir -p "$scratch" "artifacts/$t" "corpus/$t"
  inputs=("corpus/$t"); [ -d seeds ] && inputs+=(seeds)
  "$bin/$t" "$scratch" "${inputs[@]}" -max_total_time="$secs" -max_len=16384 -timeout=10 \
    -rss_limit_mb=2048 -use_value_profile=1 -print_final_stats=1 -artifact_prefix="artifacts/$t/" 2>&1 |
    grep -E '^(Done|stat::|==|SUMMARY|thread)|panicked' || true
done
