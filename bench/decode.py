#!/usr/bin/env python3
"""Decode throughput (issue 18): how fast `pathprof decode` turns the benchmark's path profiles into paths.

    bench/decode.sh [--reps N] [--workloads a,b] [--modes path,context,piecewise] [--pathprof BIN]
                    [--baseline BIN [--baseline-reps N]] [--profile FILE ...] [--no-bench-profiles] [--out BASE]

Builds the benchmark programs (bzip2, zlib, Lua, SQLite; `run.py`'s sources, flags and workloads, one build at a
time) in the path-profiling modes, runs every program workload once at its full size to write one profile per
workload and mode (bench/work/decode/profiles), then times `pathprof decode`, `decode --json` and `show` on each
profile (and on any `--profile FILE`, such as a corpus program's whole-program LTO profile): the median wall
time of N runs (default 5; output to /dev/null). Reported per profile: distinct executed paths (`executed_paths`
of `decode --json`), path executions (the sum of the net path counts), seconds, and two rates — distinct
paths per second (the work the decoder does: every distinct path is regenerated once) and path executions per
second (what the issue's "executed paths per second" counts; it grows with the run's length, not the decoder's
work). With `--baseline BIN` the same profiles are also timed with another `pathprof` (an older build) and every
output of the two is compared byte for byte; the report gives both and the speed-up.

Results: bench/results/decode.{md,json} (or --out BASE). Timings are never asserted on.
"""

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import run  # bench/run.py: sources, programs, workloads, inputs, builds

MODES = ["path", "context", "piecewise"]
COMMANDS = [["decode"], ["decode", "--json"], ["show"]]
DECODE_WORK = run.WORK / "decode"


def build_profiles(workloads, modes):
    """Builds each needed program in each mode (sequentially) and runs each workload once; returns the
    profiles as [(name, path)]."""
    progs = run.programs(run.sources())
    need = sorted({w[1] for w in workloads})
    files = any("{" in x for w in workloads for x in w[2])
    inp = run.ensure_input(run.WORK / "inputs" / "mixed-20MiB.dat", 20 << 20) if files else None
    builds = {}
    for prog in need:
        for variant in ["baseline"] * ("bzip2" in need and prog == "bzip2") + [f"pp-{m}" for m in modes]:
            run.log(f"  building {prog}/{variant}")
            builds[(prog, variant)] = run.build_one(prog, progs[prog], variant)
    bz2 = run.WORK / "inputs" / "mixed-20MiB.dat.bz2"
    if "bzip2" in need and not bz2.exists():
        with open(bz2.with_suffix(".tmp"), "wb") as f:
            subprocess.run([builds[("bzip2", "baseline")]["binary"], "-c", "-9", str(inp)], stdout=f, check=True)
        bz2.with_suffix(".tmp").rename(bz2)
    fill = dict(input=str(inp), bz2=str(bz2))
    profdir = DECODE_WORK / "profiles"
    profdir.mkdir(parents=True, exist_ok=True)
    out = []
    for name, prog, full, _small in workloads:
        for m in modes:
            prof = profdir / f"{name}.pp-{m}.pathprof"
            run.remove(prof)
            env = dict(run.os.environ, LC_ALL="C", PATHPROF_FILE=str(prof))
            run.log(f"  running {name} ({m})")
            subprocess.run([builds[(prog, f"pp-{m}")]["binary"], *[x.format(**fill) for x in full]], env=env,
                           stdout=subprocess.DEVNULL, check=True)
            out.append((f"{name} {m}", prof))
    return out


def path_stats(pathprof, prof):
    """Distinct executed paths and path executions of a profile, from the function summaries of `decode --json
    --top 0` (the paths themselves can be gigabytes of JSON): executed_paths and total_count, the net sum of the
    path counts (a setjmp/fork re-entry correction counts negative)."""
    j = json.loads(subprocess.run([pathprof, "decode", "--json", "--top", "0", str(prof)], capture_output=True,
                                  check=True).stdout)
    return dict(mode=j["mode"], paths=sum(f["executed_paths"] for f in j["functions"]),
                executions=sum(int(f["total_count"]) for f in j["functions"]))


def output_digest(cmd):
    """sha256 of what cmd prints (stdout, then stderr) and its exit status, read in pieces: `decode --json` of a
    large profile prints gigabytes."""
    h = hashlib.sha256()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as p:
        for chunk in iter(lambda: p.stdout.read(1 << 20), b""):
            h.update(chunk)
        h.update(p.stderr.read())
    h.update(str(p.returncode).encode())
    return h.hexdigest()


def same_output(a, b, args):
    """Whether two pathprof binaries print the same bytes (and exit status) for `args`."""
    return output_digest([a, *args]) == output_digest([b, *args])


def measure(profiles, pathprof, baseline, reps, baseline_reps):
    rows = []
    for name, prof in profiles:
        row = dict(name=name, file=str(prof), size=prof.stat().st_size, **path_stats(pathprof, prof))
        for cmd in COMMANDS:
            key = " ".join(cmd)
            row[key] = run.timed_cmd([pathprof, *cmd, str(prof)], reps)
            if baseline:
                row[f"baseline {key}"] = run.timed_cmd([baseline, *cmd, str(prof)], baseline_reps)
                row[f"identical {key}"] = same_output(pathprof, baseline, [*cmd, str(prof)])
        run.log(f"  {name}: {row['paths']} paths, decode {row['decode']:.3f} s")
        rows.append(row)
    return rows


def rate(n, s):
    return f"{n / s / 1e6:.2f} M" if s > 0 else "—"


def markdown(R):
    L = [f"Commit {R['machine']['commit']}, {R['machine']['date']}, {R['machine']['cpu']} ({R['machine']['nproc']} "
         f"cores, shared); `{R['pathprof']}`; median of {R['reps']} runs, output to /dev/null.", ""]
    if R["baseline"]:
        L[0] += f" Baseline `{R['baseline']}`: median of {R['baseline_reps']} runs."
    base = R["baseline"] is not None
    head = "| profile | mode | size | distinct paths | path executions | decode s | paths/s | executions/s | " \
           "decode --json s | show s |"
    sep = "|---|---|---|---|---|---|---|---|---|---|"
    if base:
        head += " baseline decode s | baseline --json s | baseline show s | decode speed-up | identical |"
        sep += "---|---|---|---|---|"
    L += [head, sep]
    for r in R["rows"]:
        line = (f"| {r['name']} | {r['mode']} | {r['size'] / 1024:.0f} KiB | {r['paths']:,} | {r['executions']:,} | "
                f"{r['decode']:.3f} | {rate(r['paths'], r['decode'])} | {rate(r['executions'], r['decode'])} | "
                f"{r['decode --json']:.3f} | {r['show']:.3f} |")
        if base:
            same = all(r[f"identical {' '.join(c)}"] for c in COMMANDS)
            line += (f" {r['baseline decode']:.3f} | {r['baseline decode --json']:.3f} | {r['baseline show']:.3f} | "
                     f"{r['baseline decode'] / r['decode']:.1f}× | {'yes' if same else '**no**'} |")
        L.append(line)
    L.append("")
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--workloads", default="programs",
                    help="comma-separated program workloads or groups (default: programs)")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of " + ", ".join(MODES))
    ap.add_argument("--pathprof", default=str(run.PATHPROF), help="the pathprof to time (default: dist/bin)")
    ap.add_argument("--baseline", help="another pathprof to time and compare outputs with")
    ap.add_argument("--baseline-reps", type=int, help="runs of the baseline per command (default: --reps)")
    ap.add_argument("--profile", action="append", default=[], help="also time this profile (repeatable)")
    ap.add_argument("--no-bench-profiles", action="store_true", help="only the --profile files")
    ap.add_argument("--out", default=str(run.BENCH / "results" / "decode"), help="results basename")
    args = ap.parse_args()
    modes = args.modes.split(",")
    if any(m not in MODES for m in modes):
        raise SystemExit(f"unknown mode in {args.modes!r} (modes: {', '.join(MODES)})")
    machine = run.machine()
    profiles = [] if args.no_bench_profiles else build_profiles(run.select_workloads(args.workloads), modes)
    profiles += [(Path(p).name, Path(p)) for p in args.profile]
    run.log(f"== timing {len(profiles)} profiles")
    baseline_reps = args.baseline_reps or args.reps
    R = dict(machine=machine, pathprof=args.pathprof, baseline=args.baseline, reps=args.reps,
             baseline_reps=baseline_reps, rows=measure(profiles, args.pathprof, args.baseline, args.reps, baseline_reps))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(R, indent=1))
    md = "# pathprof decode throughput\n\n" + markdown(R)
    out.with_suffix(".md").write_text(md)
    print(md)
    if args.baseline and not all(r[f"identical {' '.join(c)}"] for r in R["rows"] for c in COMMANDS):
        sys.exit(1)


if __name__ == "__main__":
    main()
