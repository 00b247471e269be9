#!/usr/bin/env bash
# The README's second command: set up, build, run every test (unit, property, and end-to-end through the
# real clang-19 + plugin + runtime).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
export PATH="$HOME/.cargo/bin:$PATH"
export LLVM_SYS_191_PREFIX="${LLVM_SYS_191_PREFIX:-/usr/lib/llvm-19}"
export PATHPROF_DIST="$PWD/dist"
cargo test --release --workspace
