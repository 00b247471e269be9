#!/usr/bin/env bash
# Assembles the runtime archive programs link from cargo's rt-profile staticlib:
#   scripts/rt-archive.sh <target>/rt/libpathprof_rt.a OUT.a
#
# A Rust staticlib also bundles the compiler-builtins crate: ~600 global (hidden) definitions such as
# __muldc3, __popcountdi2 or fmod, which a link would take from the runtime instead of the toolchain's own
# libgcc/compiler-rt/libm. So OUT.a holds one object: a relocatable link (`ld.lld -r`) of just the archive
# members that the runtime's entry points (`__pathprof_*`) need, the linker's own archive rule choosing them,
# with every other global definition made local. Its only global definitions are then the `__pathprof_*`
# entry points, and its undefined symbols are what it needs from the C library (test-suite/tests/hygiene.rs
# checks both). The wrapper refuses any `libpathprof_rt.a` whose symbol index names anything else.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 <rt-profile libpathprof_rt.a> <output .a>" >&2; exit 2; }
raw=$1 out=$2
llvm="${LLVM_SYS_191_PREFIX:-/usr/lib/llvm-19}/bin"

entries=$("$llvm/llvm-nm" -g --defined-only --format=just-symbols "$raw" 2>/dev/null | grep '^__pathprof_' | sort -u)
[ -n "$entries" ] || { echo "rt-archive: $raw defines no __pathprof_ entry point" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The C library functions the runtime brings itself (rt/src/own_libc.rs: a program may define its own memcpy or
# clock_gettime): every reference to NAME in the archive goes to the runtime's pathprof_libc_NAME.
renames=()
for s in $("$llvm/llvm-nm" -g --defined-only --format=just-symbols "$raw" 2>/dev/null | grep '^pathprof_libc_' | sort -u); do
  renames+=(--redefine-sym "${s#pathprof_libc_}=$s")
done
[ ${#renames[@]} -gt 0 ] || { echo "rt-archive: $raw defines no pathprof_libc_ function" >&2; exit 1; }
"$llvm/llvm-objcopy" "${renames[@]}" "$raw" "$tmp/renamed.a"
undefs=()
for s in $entries; do undefs+=(-u "$s"); done
"$llvm/ld.lld" -r "${undefs[@]}" "$tmp/renamed.a" -o "$tmp/pathprof_rt.o"
"$llvm/llvm-objcopy" --wildcard --keep-global-symbol='__pathprof_*' "$tmp/pathprof_rt.o"
rm -f "$out.tmp"
"$llvm/llvm-ar" rcsD "$out.tmp" "$tmp/pathprof_rt.o"

stray=$("$llvm/llvm-nm" -g --defined-only --format=just-symbols "$out.tmp" |
  grep -v -e '^__pathprof_' -e '^$' -e ':$' || true)
if [ -n "$stray" ]; then
  echo "rt-archive: the runtime archive would define $(echo "$stray" | head -3 | tr '\n' ' ')(not __pathprof_*)" >&2
  rm -f "$out.tmp"
  exit 1
fi
# Everything it needs must come from the C library: link it whole into an empty program with no library but
# libc (no libgcc, no libm, no unwinder). A hosted build of the crate (std, unwinding) fails here.
echo 'int main(void) { return 0; }' >"$tmp/main.c"
if ! "$llvm/clang" -nodefaultlibs "$tmp/main.c" -Wl,--whole-archive "$out.tmp" -Wl,--no-whole-archive -lc \
    -o "$tmp/libc-only" 2>"$tmp/link.err"; then
  echo "rt-archive: the runtime needs more than the C library ($raw is not the rt profile's freestanding build?):" >&2
  grep -m3 'undefined' "$tmp/link.err" >&2 || head -3 "$tmp/link.err" >&2
  rm -f "$out.tmp"
  exit 1
fi
mv -f "$out.tmp" "$out"
