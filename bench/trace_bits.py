#!/usr/bin/env python3
"""Trace mode on the loop kernels (issue 19): bits per executed conditional branch, counted with the second
method, and the cost of tracing.

Per kernel (bench/programs/kernels, -O2): a plain clang-19 build, a trace-mode build (bit tracing) and a naive
trace build (`--pathprof-trace-naive`: one 64-bit item per block entered). All three run on the same input and
must print the same line. The naive trace's blocks at predicates (two or more branch successors) are the
executed conditional branches; `pathprof trace --summary --json` of the bit trace gives its bits (Enter markers,
Done bits and decisions) and its own predicate count, which must equal the naive one (the regeneration is exact).
Reported: bits ÷ naive branches, run time ÷ plain (CPU time, user + system, the best of three runs each), and
regeneration speed (blocks per CPU second — user + system — of `pathprof trace --summary --json`, the best of three
runs, process start, parsing and output included; it counts every block and edge).

    python3 bench/trace_bits.py [--dist DIR] [--out FILE.md] [--baseline-dist DIR]
Sizes are chosen so the naive traces stay below a few hundred MB (8 bytes per block).
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
KDIR = BENCH / "programs" / "kernels"
# (kernel, size): smaller than run.py's callgrind sizes where a kernel runs many blocks.
# Large enough that regeneration takes a tenth of a second or more (process start is a few milliseconds).
KERNELS = [("daxpy", "3000"), ("sieve", "20"), ("matmul", "150"), ("heapsort", "60000"), ("nestloop", "12"),
           ("bubble", "2500"), ("fib", "29"), ("interp", "200000")]


def build(dist, kernel, variant, exe):
    srcs = [str(KDIR / "main.c"), str(KDIR / f"{kernel}.c")]
    flags = ["-O2", f"-DKERNEL=kernel_{kernel}", f"-I{KDIR}"]
    if variant == "plain":
        cmd = ["clang-19", *flags]
    else:
        cmd = [str(dist / "bin" / "pathprof-clang"), "--pathprof-mode=trace", *flags]
        if variant == "naive":
            cmd.append("--pathprof-trace-naive")
    subprocess.run(cmd + srcs + ["-o", str(exe)], check=True)


def best_cpu(cmd, runs, env=None):
    """`cmd`'s output and its CPU time (user + system), the best of `runs`: on this shared machine wall time
    mostly measures the other jobs. A non-zero exit ends the script."""
    secs = float("inf")
    for _ in range(runs):
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env) as p:
            out = p.stdout.read()
            _, status, usage = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            sys.exit(f"{' '.join(map(str, cmd))}: exit {p.returncode}")
        secs = min(secs, usage.ru_utime + usage.ru_stime)
    return out, secs


def run(exe, size, trace, runs=1):
    """The program's output and its CPU time, the best of `runs`."""
    return best_cpu([str(exe), size], runs, env={"PATHPROF_TRACE": str(trace)})


def summary(dist, trace, runs=1):
    """`pathprof trace --summary --json`'s totals and its CPU time, the best of `runs`."""
    stdout, secs = best_cpu([str(dist / "bin" / "pathprof"), "trace", "--summary", "--json", str(trace)], runs)
    r = subprocess.CompletedProcess([], 0, stdout=stdout)
    threads = json.loads(r.stdout)["threads"]
    assert all(t["status"] == "complete" for t in threads), [t["status"] for t in threads]
    return {k: sum(t[k] for t in threads) for k in ("bits", "branches", "blocks")}, secs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dist", default=str(BENCH.parent / "dist"))
    ap.add_argument("--out", default=str(BENCH / "work" / "trace-bits.md"))
    ap.add_argument("--baseline-dist", help="also regenerate every bit trace with this build's reader, "
                    "interleaved with the measured one, and report the speed ratio (a change to the reader)")
    args = ap.parse_args()
    dist = Path(args.dist).resolve()
    base = Path(args.baseline_dist).resolve() if args.baseline_dist else None
    work = BENCH / "work" / "trace-bits"
    work.mkdir(parents=True, exist_ok=True)
    rows = ["| kernel | size | blocks | branches (naive) | trace bits | bits/branch | trace bytes | naive bytes | "
            "time ÷ plain | regeneration |" + (" baseline's regeneration | speed-up |" if base else ""),
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if base else "")]
    total_bits = total_branches = 0
    for kernel, size in KERNELS:
        exes = {v: work / f"{kernel}-{v}" for v in ("plain", "trace", "naive")}
        for v, exe in exes.items():
            build(dist, kernel, v, exe)
        out_plain, t_plain = run(exes["plain"], size, work / "none", runs=3)
        out_trace, t_trace = run(exes["trace"], size, work / f"{kernel}.pathtrace", runs=3)
        out_naive, _ = run(exes["naive"], size, work / f"{kernel}-naive.pathtrace")
        if not out_plain == out_trace == out_naive:
            sys.exit(f"{kernel}: outputs differ: {out_plain!r} {out_trace!r} {out_naive!r}")
        if base:
            # Interleaved, best of five each: the two readers see the same machine load.
            regen_s = base_s = float("inf")
            for _ in range(5):
                opt, secs = summary(dist, work / f"{kernel}.pathtrace")
                regen_s = min(regen_s, secs)
                base_opt, secs = summary(base, work / f"{kernel}.pathtrace")
                base_s = min(base_s, secs)
            if base_opt != opt:
                sys.exit(f"{kernel}: the baseline's reader regenerates {base_opt}, this one {opt}")
        else:
            opt, regen_s = summary(dist, work / f"{kernel}.pathtrace", runs=3)
        naive, _ = summary(dist, work / f"{kernel}-naive.pathtrace")
        if (opt["branches"], opt["blocks"]) != (naive["branches"], naive["blocks"]):
            sys.exit(f"{kernel}: bit trace regenerates {opt} but the naive trace has {naive}")
        tb = (work / f"{kernel}.pathtrace").stat().st_size
        nb = (work / f"{kernel}-naive.pathtrace").stat().st_size
        total_bits += opt["bits"]
        total_branches += naive["branches"]
        rows.append(f"| {kernel} | {size} | {naive['blocks']:,} | {naive['branches']:,} | {opt['bits']:,} | "
                    f"{opt['bits'] / max(1, naive['branches']):.3f} | {tb:,} | {nb:,} | "
                    f"{t_trace / max(t_plain, 1e-3):.1f} | {naive['blocks'] / regen_s / 1e6:.0f} M blocks/s |"
                    + (f" {naive['blocks'] / base_s / 1e6:.0f} M blocks/s | {base_s / regen_s:.2f} |" if base else ""))
        for f in (work / f"{kernel}.pathtrace", work / f"{kernel}-naive.pathtrace"):
            f.unlink()
        print(rows[-1], flush=True)
    rows.append(f"| all | | | {total_branches:,} | {total_bits:,} | {total_bits / total_branches:.3f} | | | | |")
    Path(args.out).write_text("\n".join(rows) + "\n")
    print(rows[-1])


if __name__ == "__main__":
    main()
