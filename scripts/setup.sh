#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build and test pathprof: LLVM/clang 19, CMake, Chromium and
# Graphviz (Debian packages) and a Rust toolchain check. Idempotent: does nothing when everything is present.
set -euo pipefail

need_pkgs=()
command -v clang-19 >/dev/null 2>&1 || need_pkgs+=(clang-19)
command -v llvm-config-19 >/dev/null 2>&1 || need_pkgs+=(llvm-19-dev)
command -v ld.lld-19 >/dev/null 2>&1 || need_pkgs+=(lld-19)
[ -e /usr/lib/llvm-19/lib/clang/19/lib/linux/libclang_rt.profile-x86_64.a ] || need_pkgs+=(libclang-rt-19-dev)
command -v llvm-profdata-19 >/dev/null 2>&1 || need_pkgs+=(llvm-19)
# The CMake package's test (test-suite/tests/cmake.rs) configures and builds a project.
command -v cmake >/dev/null 2>&1 || need_pkgs+=(cmake)
command -v make >/dev/null 2>&1 || need_pkgs+=(make)
# `pathprof coverage --lcov` is checked against lcov's genhtml (test-suite/tests/views.rs).
command -v genhtml >/dev/null 2>&1 || need_pkgs+=(lcov)
# The HTML report's test (test-suite/tests/report_html.rs) loads pages in headless Chromium and renders dot.
command -v chromium >/dev/null 2>&1 || need_pkgs+=(chromium)
command -v dot >/dev/null 2>&1 || need_pkgs+=(graphviz)
# The icache check (test-suite/tests/icache.rs) compares with cachegrind.
command -v valgrind >/dev/null 2>&1 || need_pkgs+=(valgrind)
# The OpenMP test (test-suite/tests/reliability.rs) links LLVM's OpenMP runtime, whose workers idle at exit.
[ -e /usr/lib/llvm-19/lib/libomp.so ] || need_pkgs+=(libomp-19-dev)
# The certain-call test (test-suite/tests/trace.rs) enters traced code from gdb where a signal handler could.
command -v gdb >/dev/null 2>&1 || need_pkgs+=(gdb)

if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "setup: installing ${need_pkgs[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  [ -x "$HOME/.cargo/bin/cargo" ] || { echo "setup: cargo not found (install Rust with rustup)" >&2; exit 1; }
fi
