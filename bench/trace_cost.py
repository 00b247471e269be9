#!/usr/bin/env python3
"""What tracing costs on the loop kernels (issue 19), by exact instruction counts: a trace-mode build against an
uninstrumented one and against LLVM's IR PGO instrumentation (`-fprofile-generate`), all at -O2.

Instructions are counted with `valgrind --tool=cachegrind --cache-sim=no` (its `I refs`: every instruction the
program runs, the runtime's included; system calls' kernel time is not counted). Counts are exact and do not
depend on the machine's load, unlike run times on this shared machine. With `--baseline-dist DIR`, a second
trace build from another pathprof build is counted too (a change to the tracing code: before/after in one run).
Every build must print the same line. Builds use `-gdwarf-4`: valgrind 3.19 gives up on clang-19's DWARF 5.

    python3 bench/trace_cost.py [--dist DIR] [--baseline-dist DIR] [--out FILE.md]
"""

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
KDIR = BENCH / "programs" / "kernels"
# Smaller than trace_bits.py's sizes: valgrind runs each build 20-50 times slower.
KERNELS = [("daxpy", "1000"), ("sieve", "10"), ("matmul", "100"), ("heapsort", "60000"), ("nestloop", "9"),
           ("bubble", "1000"), ("fib", "25"), ("interp", "100000")]


def build(kernel, exe, cmd):
    srcs = [str(KDIR / "main.c"), str(KDIR / f"{kernel}.c")]
    flags = ["-O2", "-gdwarf-4", f"-DKERNEL=kernel_{kernel}", f"-I{KDIR}"]
    subprocess.run(cmd + flags + srcs + ["-o", str(exe)], check=True)


def instructions(exe, size, work):
    """The program's output and the instructions it ran."""
    env = dict(os.environ, PATHPROF_TRACE=str(work / "t.pathtrace"), LLVM_PROFILE_FILE=str(work / "t.profraw"))
    r = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                        str(exe), size], capture_output=True, env=env)
    if r.returncode != 0:
        sys.exit(f"{exe} {size}: exit {r.returncode}: {r.stderr.decode(errors='replace')[-400:]}")
    m = re.search(rb"I\s+refs:\s+([\d,]+)", r.stderr)
    if not m:
        sys.exit(f"{exe}: no instruction count from valgrind")
    return r.stdout, int(m.group(1).replace(b",", b""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dist", default=str(BENCH.parent / "dist"))
    ap.add_argument("--baseline-dist", help="also count a trace build of this pathprof build (before/after)")
    ap.add_argument("--out", default=str(BENCH / "work" / "trace-cost.md"))
    args = ap.parse_args()
    dist = Path(args.dist).resolve()
    base = Path(args.baseline_dist).resolve() if args.baseline_dist else None
    work = BENCH / "work" / "trace-cost"
    work.mkdir(parents=True, exist_ok=True)
    variants = {
        "plain": ["clang-19"],
        "ir-pgo": ["clang-19", "-fprofile-generate"],
        "trace": [str(dist / "bin" / "pathprof-clang"), "--pathprof-mode=trace"],
    }
    if base:
        variants["baseline"] = [str(base / "bin" / "pathprof-clang"), "--pathprof-mode=trace"]
    head = "| kernel | size | plain | IR PGO | trace | trace ÷ IR PGO | trace ÷ plain |"
    rule = "|---|---:|---:|---:|---:|---:|---:|"
    if base:
        head += " baseline trace | trace ÷ baseline |"
        rule += "---:|---:|"
    rows = [head, rule]
    ratios = []
    for kernel, size in KERNELS:
        counts, outs = {}, set()
        for v, cmd in variants.items():
            exe = work / f"{kernel}-{v}"
            build(kernel, exe, cmd)
            out, counts[v] = instructions(exe, size, work)
            outs.add(out)
        if len(outs) != 1:
            sys.exit(f"{kernel}: the builds print different lines: {outs}")
        ratio = counts["trace"] / counts["ir-pgo"]
        ratios.append(ratio)
        row = (f"| {kernel} | {size} | {counts['plain']:,} | {counts['ir-pgo']:,} | {counts['trace']:,} | "
               f"{ratio:.2f} | {counts['trace'] / counts['plain']:.2f} |")
        if base:
            row += f" {counts['baseline']:,} | {counts['trace'] / counts['baseline']:.3f} |"
        rows.append(row)
        print(row, flush=True)
    geo = 1.0
    for r in ratios:
        geo *= r
    rows.append(f"| geomean | | | | | {geo ** (1 / len(ratios)):.2f} | |" + (" | |" if base else ""))
    Path(args.out).write_text("\n".join(rows) + "\n")
    print(rows[-1])


if __name__ == "__main__":
    main()
