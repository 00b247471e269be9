#!/usr/bin/env python3
"""Promotion after inlining, measured on its own (issue 18: "show each lever's effect separately").

    python3 bench/promotion.py [--workloads LIST] [--modes edge,path,...] [--out BASE]
    python3 bench/promotion.py --baseline-dist DIR --out BASE   # any change: an earlier build's dist/ against this one

With `--baseline-dist DIR` the two sides are DIR's `pathprof-clang` (a `dist/` built from an earlier commit, e.g.
in a worktree) and this checkout's, both with default flags: the same count check and callgrind table for any
change to the instrumentation.

Builds run.py's programs and kernels with LLVM IR PGO and with pathprof in each mode twice — promotion at
instrumentation only (`--pathprof-promote=early`, the behaviour before promotion after inlining) and the
default (also after inlining) — checks that both builds of a mode write the same profile counts (`pathprof show
--json`: every function's edge and path counts, for the deterministic workloads), and counts each run's
executed instructions with callgrind on analyze.py's small inputs. Results: bench/results/promotion.{md,json}
(or --out BASE). Exact instruction counts, not times: the shared machine spreads wall times by more than the
effect.
"""
import argparse
import concurrent.futures as cf
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as B  # noqa: E402
import analyze as A  # noqa: E402

OUT = B.WORK / "promotion"
MODES = ["edge", "path", "context", "piecewise", "edge-atomic", "path-atomic"]


# The two sides compared: (label, compiler, extra flags); `--baseline-dist` replaces the first.
SIDES = [("early", str(B.PPCLANG), ["--pathprof-promote=early"]), ("1", str(B.PPCLANG), [])]


def variant_name(mode, side):
    return f"pp-{mode}-{side}"


def add_variants(modes):
    """Registers the A/B variants with run.py's builder (its build cache then keeps them apart)."""
    names = []
    for mode in modes:
        base, _, atomic = mode.partition("-")
        for side, cc, extra in SIDES:
            flags = [f"--pathprof-mode={base}", *extra]
            if atomic:
                flags.append("--pathprof-atomic")
            v = (variant_name(mode, side), cc, flags, "pathprof")
            B.VARIANTS.append(v)
            B.VARIANT[v[0]] = v
            names.append(v[0])
    return names


def counts(binary, args, profile):
    """Every function's counts in one run's profile, as `pathprof show --json` gives them."""
    Path(profile).unlink(missing_ok=True)
    env = dict(os.environ, PATHPROF_FILE=str(profile))
    # One path for every variant: bzip2 and Lua read their own name (argv[0]) in main.
    same_name = OUT / "run" / Path(binary).name
    same_name.parent.mkdir(exist_ok=True)
    shutil.copy2(binary, same_name)
    subprocess.run([str(same_name), *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    shown = json.loads(subprocess.run([str(B.PATHPROF), "show", "--json", str(profile)], capture_output=True,
                                      text=True, check=True).stdout)
    # The object file's path names the variant's build directory, and `instrumented` says which edges carry
    # code (a change of placement moves it): neither is a count.
    def without_outputs(v):
        if isinstance(v, dict):
            return {k: without_outputs(x) for k, x in v.items() if k not in ("module_output", "instrumented")}
        return [without_outputs(x) for x in v] if isinstance(v, list) else v
    # The order of a module's functions is the numbering's (the interprocedural modes group functions joined by
    # calls), not a count: compare them in a fixed order.
    shown = without_outputs(shown)
    shown["functions"] = sorted(shown.get("functions", []), key=lambda f: json.dumps(f, sort_keys=True))
    return json.dumps(shown, sort_keys=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default="kernels,programs")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--out", default=str(B.BENCH / "results" / "promotion"))
    ap.add_argument("--check-only", action="store_true", help="only compare the counts (no callgrind)")
    ap.add_argument("--time", type=int, metavar="REPS",
                    help="instead of callgrind: CPU time (user+sys) of run.py's small inputs, REPS interleaved rounds")
    ap.add_argument("--baseline-dist", metavar="DIR",
                    help="compare DIR's pathprof-clang (an earlier build) with this checkout's, instead of "
                         "--pathprof-promote=early with the default")
    args = ap.parse_args()
    if args.baseline_dist:
        cc = Path(args.baseline_dist).resolve() / "bin" / "pathprof-clang"
        if not cc.exists():
            raise SystemExit(f"no {cc}")
        SIDES[0] = ("base", str(cc), [])
    modes = args.modes.split(",")
    selected = [w[0] for w in B.select_workloads(args.workloads)]
    OUT.mkdir(parents=True, exist_ok=True)
    A.OUT = OUT
    OUT.joinpath("analysis").mkdir(exist_ok=True)
    variants = ["llvm-ir-pgo", "llvm-ir-pgo-atomic"] + add_variants(modes)
    progs_all = B.programs(B.sources())
    if set(selected) & set(B.PROGRAM_WORKLOADS):
        # analyze.py's tiny inputs come from the 4 MiB one, compressed by the baseline bzip2.
        B.ensure_input(B.WORK / "inputs" / "mixed-4MiB.dat", 4 << 20)
        B.build_all({"bzip2": progs_all["bzip2"]}, ["baseline"])
    work = A.callgrind_workloads(selected)
    timed_progs = {w[1] for w in B.WORKLOADS if w[0] in selected} if args.time else set()
    progs = {p: progs_all[p] for p in sorted({w[1] for w in work} | timed_progs)}
    B.log(f"== building {len(progs)} programs x {len(variants)} variants")
    builds = B.build_all(progs, variants)

    # The same counts with and without promotion after inlining (deterministic single-threaded runs).
    B.log(f"== checking that both sides ({SIDES[0][0]}, {SIDES[1][0]}) write the same counts")
    same = {}
    for name, prog, wargs in work:
        # Threads, and Lua: its string cache and table hashing follow the addresses each build gives its data.
        if name.startswith("kernels-mt") or name.startswith("lua-"):
            continue
        for mode in modes:
            a, b = (builds[(prog, variant_name(mode, p[0]))]["binary"] for p in SIDES)
            ca = counts(a, wargs, OUT / f"{name}.{mode}.{SIDES[0][0]}.pathprof")
            cb = counts(b, wargs, OUT / f"{name}.{mode}.1.pathprof")
            same[f"{name} {mode}"] = ca == cb
            if ca != cb:
                B.log(f"  COUNTS DIFFER: {name} {mode}")
    if args.check_only:
        print(f"{sum(same.values())} of {len(same)} runs have equal counts")
        raise SystemExit(0 if all(same.values()) else 1)
    if args.time:
        timed = time_runs(selected, builds, modes, args.time)
        Path(args.out).with_suffix(".time.json").write_text(json.dumps(timed, indent=1))
        print(time_markdown(timed, modes))
        Path(args.out).with_suffix(".time.md").write_text(time_markdown(timed, modes))
        return
    res = A.run_callgrind(selected, variants)
    R = dict(machine=B.machine(), modes=modes, callgrind=res, same_counts=same)
    Path(args.out).with_suffix(".json").write_text(json.dumps(R, indent=1))
    Path(args.out).with_suffix(".md").write_text(markdown(R))
    print(markdown(R))
    if not all(same.values()):
        raise SystemExit("the two sides' counts differ")


def time_runs(selected, builds, modes, reps):
    """{workload: {variant: [cpu seconds]}}: every variant of a mode once per round, in a shuffled order."""
    import random
    fill = dict(small=str(B.WORK / "inputs" / "mixed-4MiB.dat"), small_bz2=str(B.WORK / "inputs" / "mixed-4MiB.dat.bz2"))
    if not Path(fill["small_bz2"]).exists():
        with open(fill["small_bz2"], "wb") as f:
            subprocess.run([builds.get(("bzip2", "baseline"), {}).get("binary") or
                            str(B.WORK / "build" / "bzip2" / "baseline" / "bzip2"), "-c", "-9", fill["small"]],
                           stdout=f, check=True)
    out = {}
    rnd = random.Random(7)
    for name, prog, _, small in B.WORKLOADS:
        if name not in selected:
            continue
        args = [x.format(**fill) for x in small]
        variants = [variant_name(m, p[0]) for m in modes for p in SIDES]
        res = {v: [] for v in variants}
        for _ in range(reps):
            rnd.shuffle(variants)
            for v in variants:
                env = dict(os.environ, PATHPROF_FILE=str(OUT / f"time.{v}.pathprof"))
                Path(env["PATHPROF_FILE"]).unlink(missing_ok=True)
                _, cpu, code, err = B.run_timed([builds[(prog, v)]["binary"], *args], env, OUT / "time.out")
                if code != 0:
                    raise SystemExit(f"{name} {v}: exit {code}: {err[-500:]}")
                res[v].append(cpu)
        out[name] = res
        B.log(f"  timed {name}")
    return out


def time_markdown(T, modes):
    import statistics
    L = ["# Promotion after inlining: CPU time, default ÷ promotion at instrumentation only", "",
         "Median user+sys seconds of interleaved rounds (run.py's small inputs); < 1: faster with it.", "",
         "| workload | " + " | ".join(modes) + " |", "|---|" + "---|" * len(modes)]
    geo = {m: [] for m in modes}
    for name, res in T.items():
        cells = []
        for m in modes:
            e, d = (statistics.median(res[variant_name(m, p[0])]) for p in SIDES)
            geo[m].append(d / e)
            cells.append(f"{d / e:.3f} ({e:.2f} s → {d:.2f} s)")
        L.append(f"| {name} | " + " | ".join(cells) + " |")
    L.append("| **geomean** | " + " | ".join(f"**{B.geomean(geo[m]):.3f}**" for m in modes) + " |")
    return "\n".join(L) + "\n"


def markdown(R):
    modes = R["modes"]
    what = ("the baseline build → this build" if SIDES[0][0] == "base"
            else "promotion at instrumentation only → also after inlining (the default)")
    L = [f"# {'A/B' if SIDES[0][0] == 'base' else 'Promotion after inlining'}: instructions (callgrind), "
         "pathprof ÷ LLVM IR PGO", "",
         f"Commit {R['machine'].get('commit', '?')}. Each cell: {what}. Atomic modes against IR PGO's atomic build.",
         "",
         "| workload | " + " | ".join(modes) + " |", "|---|" + "---|" * len(modes)]
    geo = {m: ([], []) for m in modes}
    for name, r in R["callgrind"].items():
        cells = []
        for m in modes:
            ref = r["llvm-ir-pgo-atomic" if m.endswith("atomic") else "llvm-ir-pgo"]["total"]
            e, d = (r[variant_name(m, p[0])]["total"] / ref for p in SIDES)
            geo[m][0].append(e)
            geo[m][1].append(d)
            cells.append(f"{e:.3f} → {d:.3f}")
        L.append(f"| {name} | " + " | ".join(cells) + " |")
    L.append("| **geomean** | " + " | ".join(f"**{B.geomean(geo[m][0]):.3f} → {B.geomean(geo[m][1]):.3f}**"
                                             for m in modes) + " |")
    differ = [k for k, v in R["same_counts"].items() if not v]
    L += ["", f"Counts compared (every function of every deterministic run, both builds of each mode; not Lua, whose "
          f"string cache follows addresses, nor the threads): "
          f"{len(R['same_counts'])} runs, {'all equal' if not differ else 'DIFFERENT: ' + ', '.join(differ)}."]
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
