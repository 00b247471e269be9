#!/usr/bin/env bash
# Writes seed profiles for the fuzz targets into fuzz/seeds/: real profiles written by instrumented test
# programs (edge mode, path mode with dense arrays, path mode with every function hashed via
# PATHPROF_PATH_ARRAY_MAX=1, and atomic, and the interprocedural context and piecewise modes, whose truncated
# paths count arrivals), plus a two-module profile; and small trace files (`--pathprof-mode=trace`, for the
# `trace` target): straight calls, a loop with a switch, threads, longjmp, exceptions, a region, a flight
# recorder's window ended by SIGSEGV, naive items, and signal handlers' streams. Needs dist/ (scripts/build.sh), or PATHPROF_DIST.
#   fuzz/make-seeds.sh [profiles|traces|all]    (default all)
# The checked-in corpus (fuzz/corpus/<target>/) was started from these seeds and minimised with
# `cargo fuzz cmin`; rerun this script only to regenerate seeds.
set -euo pipefail
cd "$(dirname "$0")/.."
dist="${PATHPROF_DIST:-$PWD/dist}"
progs=test-suite/programs
out=fuzz/seeds
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
what="${1:-all}"
mkdir -p "$out"
build_run() { # name mode extra-env... -- sources...
  local name=$1 mode=$2; shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local cc="$dist/bin/pathprof-clang"
  case "$*" in *.cpp*) cc="$dist/bin/pathprof-clang++" ;; esac
  env PATHPROF_MODE="$mode" "${envs[@]}" "$cc" -O1 "$@" -o "$work/$name" -pthread
  (cd "$work" && PATHPROF_FILE="$work/$name.pathprof" "./$name" >/dev/null 2>&1 || true)
  cp "$work/$name.pathprof" "$out/$name.seed"
}
trace_run() { # name extra-env-or-ARGS=program-arguments... -- compile-flags-and-sources...
  local name=$1; shift
  local envs=() args=()
  while [ "$1" != "--" ]; do
    case "$1" in ARGS=*) read -r -a args <<<"${1#ARGS=}" ;; *) envs+=("$1") ;; esac
    shift
  done
  shift
  local cc="$dist/bin/pathprof-clang"
  case "$*" in *.cpp*) cc="$dist/bin/pathprof-clang++" ;; esac
  "$cc" --pathprof-mode=trace -O1 -I "$dist/include" "$@" -o "$work/$name" -pthread
  # PATHPROF_TRACE_MAX bounds a runaway trace; these programs write a few hundred bytes to a few KB.
  (cd "$work" && env PATHPROF_TRACE_MAX=64M PATHPROF_TRACE="$work/$name.pathtrace" "${envs[@]}" "./$name" \
    "${args[@]}" >/dev/null 2>&1 || true)
  cp "$work/$name.pathtrace" "$out/$name.seed"
}
if [ "$what" != traces ]; then
for p in loops switch recursion longjmp gotos exit_deep paths_mod; do
  build_run "$p-edge" edge -- "$progs/$p.c"
  build_run "$p-path" path -- "$progs/$p.c"
  build_run "$p-hashed" path PATHPROF_PATH_ARRAY_MAX=1 -- "$progs/$p.c"
done
build_run exception-path path -- "$progs/exception.cpp"
for p in exit_deep recursion mr_exit_in_loop; do
  build_run "$p-context" context -- "$progs/$p.c"
  build_run "$p-piecewise" piecewise -- "$progs/$p.c"
done
build_run exception-context context -- "$progs/exception.cpp"
# Storage units of mixed storage (three dense, one hashed) and a fork child's re-entry in the third.
build_run ip_units-context context PATHPROF_PATH_ARRAY_MAX=64 PATHPROF_PATH_SPARSE_MAX=64 -- "$progs/ip_units.c"
build_run ip_units-piecewise piecewise PATHPROF_PATH_ARRAY_MAX=64 PATHPROF_PATH_SPARSE_MAX=64 -- "$progs/ip_units.c"
build_run cxx_mix-edge edge -- "$progs/cxx_mix.cpp"
build_run threads-atomic-edge edge PATHPROF_ATOMIC=1 -- "$progs/threads.c"
build_run threads-atomic-hashed path PATHPROF_ATOMIC=1 PATHPROF_PATH_ARRAY_MAX=1 -- "$progs/threads.c"
build_run eighty_ifs-path path -- "$progs/eighty_ifs.c"
build_run two_tu-path path -- "$progs/two_tu_main.c" "$progs/two_tu_util.c"
fi
if [ "$what" != profiles ]; then
  for p in trace_tiny trace_mix switch trace_threads trace_longjmp trace_region; do
    trace_run "$p-trace" -- "$progs/$p.c"
  done
  trace_run trace_exceptions-trace -- "$progs/trace_exceptions.cpp"
  # A 512-byte flight recorder's window (sync point, shadow entries) cut by the program's SIGSEGV.
  trace_run trace_ring_crash-ring PATHPROF_TRACE_RING=512 PATHPROF_SIGNALS=1 -- "$progs/trace_ring_crash.c"
  trace_run trace_tiny-naive -- --pathprof-trace-naive "$progs/trace_tiny.c"
  # Mode icache (the later flag wins): recorded at OptimizerLast, with the predicted machine ids in the metadata.
  trace_run loops-icache -- --pathprof-mode=icache "$progs/loops.c"
  # Signal handlers in handler streams (REC_HANDLERS, one nested), the last left through siglongjmp: the thread
  # goes on in a stream read from a sync point at the landing (REC_RESUMED).
  trace_run trace_handlers-trace ARGS=escape -- "$progs/trace_handlers.c"
  # User contexts in streams of their own (REC_CONTEXT), three ending suspended (END_SUSPENDED).
  trace_run trace_contexts-trace -- "$progs/trace_contexts.c"
fi
ls -l "$out"
