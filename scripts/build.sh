#!/usr/bin/env bash
# Builds every pathprof component in release mode and assembles an install tree in dist/:
#   dist/bin/{pathprof,pathprof-clang,pathprof-clang++}  dist/lib/{libpathprof.so,libpathprof_rt.a}
#   dist/include/pathprof.h  dist/lib/cmake/PathProf/ (the CMake package: find_package(PathProf))
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
export LLVM_SYS_191_PREFIX="${LLVM_SYS_191_PREFIX:-/usr/lib/llvm-19}"
target="${CARGO_TARGET_DIR:-target}"
cargo build --release --workspace --quiet
cargo build -p pathprof-rt --profile rt --quiet
mkdir -p dist/bin dist/lib dist/include
cp -f "$target/release/pathprof" "$target/release/pathprof-clang" dist/bin/
# Cargo cannot name a binary with '+'; the wrapper acts as the C++ driver when its name ends in "++".
cp -f "$target/release/pathprof-clangxx" dist/bin/pathprof-clang++
cp -f "$target/release/libpathprof.so" dist/lib/
# Only the runtime's own entry points, without the compiler-builtins crate cargo bundles (see rt-archive.sh).
scripts/rt-archive.sh "$target/rt/libpathprof_rt.a" dist/lib/libpathprof_rt.a
cp -f include/pathprof.h dist/include/
mkdir -p dist/lib/cmake/PathProf
cp -f cmake/PathProfConfig.cmake dist/lib/cmake/PathProf/
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
sed "s/@PATHPROF_VERSION@/$version/" cmake/PathProfConfigVersion.cmake.in >dist/lib/cmake/PathProf/PathProfConfigVersion.cmake
