#!/usr/bin/env python3
"""PGO speed-up (issue 7): how much faster do real programs get with pathprof's profiles than without PGO, and
how does that compare with LLVM's own IR PGO?

    bench/pgo.sh [--quick] [--reps N] [--programs sqlite,lua,bzip2] [--dist DIR]

For each program, builds at -O2
  baseline       clang-19 -O2, no PGO
  ir-pgo         clang-19 -fprofile-generate, train, llvm-profdata merge, clang-19 -fprofile-use
  pp-sample      pathprof-clang --pathprof-mode=edge (-gline-tables-only), train, pathprof export
                 --format=sample-text, clang-19 -gline-tables-only -fdebug-info-for-profiling -fprofile-sample-use
  pp-use-edge    pathprof-clang --pathprof-mode=edge, train, pathprof-clang --pathprof-use=PROFILE
  pp-use-path    the same from a path-mode profile (--pathprof-mode=path)
trains every instrumented build on the same TRAINING runs, then measures on DIFFERENT inputs (TRAIN and MEASURE
below), checks every variant prints exactly what the baseline prints, runs the variants interleaved (order
rotated every repetition), and writes bench/results/pgo-latest.{md,json} (--quick: bench/work/pgo-quick.*).
Speed-up = baseline median / variant median. Timings are never asserted on.

The pathprof tools are copied from dist/ (or --dist) into bench/work/pgo/dist at the start and used from there,
so a rebuild of dist/ during the run cannot mix two builds.
"""

import argparse
import concurrent.futures as cf
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as R  # noqa: E402  (bench/run.py: sources, programs, inputs, timing, machine description)

BENCH = R.BENCH
WORK = R.WORK / "pgo"
WL = BENCH / "workloads"
OPT = ["-O2"]
VARIANTS = ["baseline", "ir-pgo", "pp-sample", "pp-use-edge", "pp-use-path"]
PP_ROUTES = ["pp-sample", "pp-use-edge", "pp-use-path"]

# Training runs and measured workloads per program; {train_input}, {train_bz2}, {input}, {bz2} are filled in.
# The training data differ from the measured data: another Lua script, a smaller SQLite database built from a
# different random sequence (the driver's data depend on SCALE), another generated file for bzip2.
TRAIN = {
    "sqlite": [["6000"]],
    "lua": [[f"{WL}/train.lua", "4"]],
    "bzip2": [["-c", "-9", "{train_input}"], ["-dc", "{train_bz2}"]],
}
MEASURE = [
    ("sqlite", "sqlite", ["30000"]),
    ("lua-recursion", "lua", [f"{WL}/recursion.lua", "20"]),
    ("lua-tables-strings", "lua", [f"{WL}/tables_strings.lua", "5"]),
    ("lua-interpreter", "lua", [f"{WL}/interp.lua", "1"]),
    ("bzip2-compress", "bzip2", ["-c", "-9", "{input}"]),
    ("bzip2-decompress", "bzip2", ["-dc", "{bz2}"]),
]
# Exact instruction counts (callgrind, with its branch predictor simulation) on smaller measured inputs, still
# different from the training inputs: wall times on a shared 2-core machine are too noisy for a 2% goal.
CALLGRIND = [
    ("sqlite", "sqlite", ["10000"]),
    ("lua-recursion", "lua", [f"{WL}/recursion.lua", "2"]),
    ("lua-tables-strings", "lua", [f"{WL}/tables_strings.lua", "1"]),
    ("lua-interpreter", "lua", [f"{WL}/interp.lua", "1", "0.2"]),
    ("bzip2-compress", "bzip2", ["-c", "-9", "{small}"]),
    ("bzip2-decompress", "bzip2", ["-dc", "{small_bz2}"]),
]
QUICK = ("lua", [("lua-recursion", "lua", [f"{WL}/recursion.lua", "2"])], {"lua": [[f"{WL}/train.lua", "1"]]})
TRAIN_SEED = 777  # the measured 20 MiB file uses run.py's default seed


def log(*a):
    R.log(*a)


def sh(cmd, env=None, cwd=None):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, cwd=cwd)
    if r.returncode != 0:
        raise SystemExit(f"failed: {' '.join(map(str, cmd))}\n{r.stderr[-5000:]}")
    return r


def build(prog, pdef, variant, cc, flags, env=None):
    """Compiles every source and links; returns {binary, pathprof lines of stderr, seconds}. Objects go to
    WORK/build/PROG/VARIANT; always rebuilt (profiles change between runs)."""
    d = WORK / "build" / prog / variant
    shutil.rmtree(d, ignore_errors=True)
    (d / "obj").mkdir(parents=True)
    objs = [d / "obj" / (Path(s).stem + ".o") for s in pdef["srcs"]]
    msgs = []
    t0 = time.perf_counter()
    for s, o in zip(pdef["srcs"], objs):
        r = sh([cc, *OPT, *flags, *pdef["cflags"], "-w", "-c", s, "-o", o], env=env)
        msgs += [l for l in r.stderr.splitlines() if l.startswith("pathprof:")]
    sh([cc, *OPT, *flags, *objs, "-o", d / prog, *pdef["libs"]], env=env)
    return dict(binary=str(d / prog), messages=msgs, seconds=time.perf_counter() - t0)


def parallel(jobs):
    """jobs: {key: (fn, args)} -> {key: result}, NPROC at a time, largest program first."""
    out = {}
    order = sorted(jobs, key=lambda k: -sum(Path(s).stat().st_size for s in jobs[k][1][1]["srcs"]))
    with cf.ThreadPoolExecutor(max_workers=R.NPROC) as ex:
        futs = {ex.submit(jobs[k][0], *jobs[k][1]): k for k in order}
        for f in cf.as_completed(futs):
            out[futs[f]] = f.result()
            log(f"  built {futs[f][0]}/{futs[f][1]} ({out[futs[f]]['seconds']:.0f} s)")
    return out


def use_stats(messages):
    """Sums pathprof's use-mode summary lines (--pathprof-stats) and stale-profile warnings over the modules."""
    tot = dict(annotated=0, mismatched=0, missing=0, stale_warnings=0)
    for l in messages:
        m = re.match(r"pathprof: use: module=\S+ annotated=(\d+) mismatched=(\d+) missing=(\d+)", l)
        if m:
            for k, v in zip(["annotated", "mismatched", "missing"], m.groups()):
                tot[k] += int(v)
        m = re.search(r"(\d+) functions not annotated", l)
        if m:
            tot["stale_warnings"] += int(m.group(1))
    return tot


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="one repetition, Lua only, small training and run")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--programs", default="sqlite,lua,bzip2")
    ap.add_argument("--dist", default=str(R.DIST), help="pathprof build to copy and use (default dist/)")
    ap.add_argument("--out", help="results basename (default bench/results/pgo-latest, quick: bench/work/pgo-quick)")
    ap.add_argument("--no-callgrind", action="store_true", help="skip the callgrind instruction counts")
    ap.add_argument("--callgrind-only", metavar="JSON",
                    help="add callgrind counts to an earlier run's JSON, from its builds in bench/work/pgo/build")
    ap.add_argument("--report-only", metavar="JSON", help="rewrite the markdown of an earlier run's JSON")
    args = ap.parse_args()
    if args.report_only:
        res = json.loads(Path(args.report_only).read_text())
        summarize(res)
        md = markdown(res)
        Path(args.report_only).with_suffix(".md").write_text(md)
        print(md)
        return

    if args.callgrind_only:
        res = json.loads(Path(args.callgrind_only).read_text())
        progs = {w["program"] for w in res["workloads"].values()}
        builds = {(p, v): dict(binary=str(WORK / "build" / p / v / p)) for p in progs for v in VARIANTS}
        res["callgrind"] = callgrind(builds, small_inputs(progs), os.environ)
        summarize(res)
        md = markdown(res)
        Path(args.callgrind_only).write_text(json.dumps(res, indent=1, default=str) + "\n")
        Path(args.callgrind_only).with_suffix(".md").write_text(md)
        print(md)
        return

    for tool in ["clang-19", R.PROFDATA, "cargo"]:
        if not shutil.which(tool):
            raise SystemExit(f"missing tool: {tool}")
    # A private copy of the pathprof tools (the wrapper finds the plugin and runtime in ../lib).
    src_dist = Path(args.dist)
    if not (src_dist / "bin" / "pathprof-clang").exists():
        raise SystemExit(f"{src_dist} is not a pathprof build: run scripts/build.sh (bench/pgo.sh does)")
    dist = WORK / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    shutil.copytree(src_dist, dist)
    R.DIST, R.PPCLANG, R.PATHPROF = dist, dist / "bin" / "pathprof-clang", dist / "bin" / "pathprof"
    ppclang, pathprof = str(R.PPCLANG), str(R.PATHPROF)

    t_start = time.perf_counter()
    load_start = os.getloadavg()
    mach = R.machine()
    mach["dist"]["copied_from"] = str(src_dist)
    reps = 1 if args.quick else args.reps
    if args.quick:
        prog_names, measure, train = [QUICK[0]], QUICK[1], QUICK[2]
    else:
        prog_names = args.programs.split(",")
        measure = [m for m in MEASURE if m[1] in prog_names]
        train = {p: TRAIN[p] for p in prog_names}
    out_base = Path(args.out) if args.out else (R.WORK / "pgo-quick" if args.quick else BENCH / "results" / "pgo-latest")

    log("== sources (cargo metadata)")
    allp = R.programs(R.sources())
    progs = {p: allp[p] for p in prog_names}

    fill = {}
    if "bzip2" in progs:
        log("== inputs")
        fill["input"] = str(R.ensure_input(R.WORK / "inputs" / "mixed-20MiB.dat", 20 << 20))
        tin = WORK / "inputs" / "train-4MiB.dat"
        if not tin.exists() or tin.stat().st_size != 4 << 20:
            tin.parent.mkdir(parents=True, exist_ok=True)
            tin.write_bytes(R.generate_input(4 << 20, seed=TRAIN_SEED))
        fill["train_input"] = str(tin)
        fill["bz2"] = str(WORK / "inputs" / "mixed-20MiB.dat.bz2")
        fill["train_bz2"] = str(WORK / "inputs" / "train-4MiB.dat.bz2")
    env0 = dict(os.environ, LC_ALL="C")
    for k in ["PATHPROF_USE", "PATHPROF_MODE", "PATHPROF_FILE", "LLVM_PROFILE_FILE"]:
        env0.pop(k, None)
    prof = WORK / "profiles"
    shutil.rmtree(prof, ignore_errors=True)
    prof.mkdir(parents=True)
    scratch = WORK / "run"
    scratch.mkdir(parents=True, exist_ok=True)

    log("== phase 1: baseline and instrumented builds")
    instr = {
        "baseline": ("clang-19", []),
        "ir-gen": ("clang-19", ["-fprofile-generate"]),
        "pp-edge-gen": (ppclang, ["--pathprof-mode=edge"]),
        "pp-path-gen": (ppclang, ["--pathprof-mode=path"]),
    }
    builds = parallel({(p, v): (build, (p, progs[p], v, cc, fl)) for p in progs for v, (cc, fl) in instr.items()})

    if "bzip2" in progs:  # compressed inputs, made by the baseline build
        for src_f, dst in [(fill["input"], fill["bz2"]), (fill["train_input"], fill["train_bz2"])]:
            with open(dst + ".tmp", "wb") as f:
                subprocess.run([builds[("bzip2", "baseline")]["binary"], "-c", "-9", src_f], stdout=f, check=True)
            os.replace(dst + ".tmp", dst)

    log("== phase 2: training (every instrumented build, the same runs)")
    train_time = {}
    for p in progs:
        for v in ["ir-gen", "pp-edge-gen", "pp-path-gen"]:
            penv = {"ir-gen": {"LLVM_PROFILE_FILE": str(prof / f"{p}-ir" / "%p-%m.profraw")},
                    "pp-edge-gen": {"PATHPROF_FILE": str(prof / f"{p}.edge.pathprof")},
                    "pp-path-gen": {"PATHPROF_FILE": str(prof / f"{p}.path.pathprof")}}[v]
            t = 0.0
            for a in train[p]:
                wall, _, rc, err = R.run_timed([builds[(p, v)]["binary"], *[x.format(**fill) for x in a]],
                                               dict(env0, **penv), scratch / "train.out")
                if rc != 0:
                    raise SystemExit(f"training {p}/{v} {a}: exit status {rc}\n{err}")
                t += wall
            train_time[f"{p}/{v}"] = t
            log(f"  trained {p}/{v} ({t:.1f} s)")
        sh([R.PROFDATA, "merge", "-o", prof / f"{p}.profdata", *sorted((prof / f"{p}-ir").glob("*.profraw"))])
        r = sh([pathprof, "export", "--format=sample-text", prof / f"{p}.edge.pathprof", "-o", prof / f"{p}.prof"])
        if r.stderr.strip():
            log("  export: " + r.stderr.strip().replace("\n", "\n  export: "))

    log("== phase 3: PGO builds")
    use = {
        "ir-pgo": lambda p: ("clang-19", [f"-fprofile-use={prof / f'{p}.profdata'}"]),
        "pp-sample": lambda p: ("clang-19", ["-gline-tables-only", "-fdebug-info-for-profiling",
                                             f"-fprofile-sample-use={prof / f'{p}.prof'}"]),
        "pp-use-edge": lambda p: (ppclang, ["--pathprof-mode=edge", "--pathprof-stats",
                                            f"--pathprof-use={prof / f'{p}.edge.pathprof'}"]),
        "pp-use-path": lambda p: (ppclang, ["--pathprof-mode=path", "--pathprof-stats",
                                            f"--pathprof-use={prof / f'{p}.path.pathprof'}"]),
    }
    builds.update(parallel({(p, v): (build, (p, progs[p], v, *use[v](p))) for p in progs for v in use}))
    flags = {v: [*OPT, *(x.replace(str(R.ROOT) + "/", "") for x in use[v]("PROG")[1])] for v in use}
    flags["baseline"] = list(OPT)
    use_info = {}
    for p in progs:
        use_info[p] = {v: use_stats(builds[(p, v)]["messages"]) for v in ["pp-use-edge", "pp-use-path"]}
        same = R.sha256(builds[(p, "pp-use-edge")]["binary"]) == R.sha256(builds[(p, "pp-use-path")]["binary"])
        use_info[p]["edge_and_path_binaries_identical"] = same
        log(f"  {p}: use mode {use_info[p]}")
        for l in builds[(p, "pp-use-edge")]["messages"] + builds[(p, "pp-sample")]["messages"]:
            if "warning" in l:
                log(f"  {p}: {l}")

    log("== validating: every variant must print what the baseline prints")
    runs = [(n, p, [x.format(**fill) for x in a]) for n, p, a in measure]
    for n, p, a in runs:
        expected = None
        for v in VARIANTS:
            o = scratch / f"{n}.{v}.out"
            wall, _, rc, err = R.run_timed([builds[(p, v)]["binary"], *a], env0, o)
            if rc != 0:
                raise SystemExit(f"{n}/{v}: exit status {rc}\n{err}")
            d = R.sha256(o)
            expected = expected or d
            if d != expected:
                raise SystemExit(f"{n}/{v}: output differs from the baseline's (see {o})")
            log(f"  {n:20s} {v:12s} ok  {wall:.2f}s")

    log(f"== timing: {reps} interleaved repetitions")
    times = {n: {v: [] for v in VARIANTS} for n, *_ in runs}
    cpus = {n: {v: [] for v in VARIANTS} for n, *_ in runs}
    loads = []
    for rep in range(reps):
        for n, p, a in runs:
            k = rep % len(VARIANTS)
            for v in VARIANTS[k:] + VARIANTS[:k]:  # rotated, so no variant always runs first or last
                wall, cpu, rc, err = R.run_timed([builds[(p, v)]["binary"], *a], env0, scratch / "timed.out")
                if rc != 0:
                    raise SystemExit(f"{n}/{v}: exit status {rc} in a timed run\n{err}")
                times[n][v].append(wall)
                cpus[n][v].append(cpu)
            log(f"  rep {rep + 1}/{reps} {n}: " + " ".join(f"{v}={times[n][v][-1]:.3f}" for v in VARIANTS))
        loads.append(os.getloadavg()[0])

    res = dict(machine=mach, reps=reps, quick=args.quick, variants=VARIANTS, flags=flags,
               load=dict(start=load_start, per_rep_1min=loads, end=os.getloadavg()),
               sources={p: d["version"] for p, d in progs.items()},
               train={p: [[x.format(**fill).replace(str(R.ROOT) + "/", "") for x in a] for a in train[p]] for p in progs},
               train_seconds=train_time,
               workloads={n: dict(program=p, args=[x.replace(str(R.ROOT) + "/", "") for x in a]) for n, p, a in runs},
               use_mode=use_info, runs={})
    for n, *_ in runs:
        res["runs"][n] = {v: dict(median=statistics.median(times[n][v]), times=times[n][v],
                                  cpu_median=statistics.median(cpus[n][v]), cpus=cpus[n][v]) for v in VARIANTS}
    if not args.quick and not args.no_callgrind and shutil.which("valgrind"):
        res["callgrind"] = callgrind(builds, small_inputs(progs), env0)
    summarize(res)
    res["total_seconds"] = time.perf_counter() - t_start
    md = markdown(res)
    out_base.parent.mkdir(parents=True, exist_ok=True)
    Path(str(out_base) + ".md").write_text(md)
    Path(str(out_base) + ".json").write_text(json.dumps(res, indent=1, default=str) + "\n")
    print(md)
    log(f"== wrote {out_base}.md and {out_base}.json in {res['total_seconds']:.0f} s")


def small_inputs(progs):
    fill = {}
    if "bzip2" in progs:
        fill["small"] = str(R.ensure_input(R.WORK / "inputs" / "mixed-4MiB.dat", 4 << 20))
        fill["small_bz2"] = str(WORK / "inputs" / "mixed-4MiB.dat.bz2")
        with open(fill["small_bz2"] + ".tmp", "wb") as f:
            subprocess.run([str(WORK / "build" / "bzip2" / "baseline" / "bzip2"), "-c", "-9", fill["small"]],
                           stdout=f, check=True)
        os.replace(fill["small_bz2"] + ".tmp", fill["small_bz2"])
    return fill


def callgrind(builds, fill, env):
    """Ir (instructions), Bc/Bcm (conditional branches, mispredicted), Bi/Bim (indirect) per workload and variant;
    identical binaries are measured once."""
    log("== callgrind (exact instruction counts and simulated branch mispredictions)")
    d = WORK / "callgrind"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    progs = {p for p, _ in builds}
    jobs, digest = {}, {}
    for n, p, a in CALLGRIND:
        if p not in progs:
            continue
        for v in VARIANTS:
            b = builds[(p, v)]["binary"]
            digest[(n, v)] = (n, R.sha256(b))
            if digest[(n, v)] not in jobs:
                jobs[digest[(n, v)]] = (v, [b, *[x.format(**fill) for x in a]], d / f"{n}.{v}.out")

    def one(job):
        v, cmd, out = job
        # valgrind 3.19 cannot read clang 19's DWARF 5: run a copy without debug info (same code).
        stripped = str(out) + ".bin"
        subprocess.run(["objcopy", "--strip-debug", cmd[0], stripped], check=True)
        cmd = [stripped, *cmd[1:]]
        subprocess.run(["valgrind", "--tool=callgrind", "--branch-sim=yes", f"--callgrind-out-file={out}", *cmd],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(env, LC_ALL="C"), check=True)
        ev, tot = None, None
        for l in open(out):
            if l.startswith("events:"):
                ev = l.split()[1:]
            if l.startswith("totals:") or l.startswith("summary:"):
                tot = [int(x) for x in l.split()[1:]]
        return dict(zip(ev, tot))

    with cf.ThreadPoolExecutor(max_workers=R.NPROC) as ex:
        res = dict(zip(jobs, ex.map(one, jobs.values())))
    out = {"workloads": {n: [x.format(**fill).replace(str(R.ROOT) + "/", "") for x in a]
                         for n, p, a in CALLGRIND if p in progs},
           "counts": {}}
    for (n, v), k in digest.items():
        out["counts"].setdefault(n, {})[v] = res[k]
        log(f"  {n:20s} {v:12s} {res[k]}")
    return out


def summarize(res):
    """Speed-ups (baseline ÷ variant, by wall and by user+sys time), per workload and geomean."""
    for r in res["runs"].values():
        for v in VARIANTS:
            r[v]["min"] = min(r[v]["times"])
    for key, field in [("speedup", "median"), ("speedup_cpu", "cpu_median"), ("speedup_min", "min")]:
        sp = {n: {v: r["baseline"][field] / r[v][field] for v in VARIANTS} for n, r in res["runs"].items()}
        res[key] = sp
        res[f"geomean_{key}"] = {v: R.geomean([sp[n][v] for n in sp]) for v in VARIANTS}
    if "callgrind" in res:
        c = res["callgrind"]["counts"]
        sp = {n: {v: c[n]["baseline"]["Ir"] / c[n][v]["Ir"] for v in VARIANTS} for n in c}
        res["speedup_ir"] = sp
        res["geomean_speedup_ir"] = {v: R.geomean([sp[n][v] for n in sp]) for v in VARIANTS}


def iqr_rel(xs):
    if len(xs) < 4:
        return float("nan")
    q = statistics.quantiles(xs, n=4)
    return (q[2] - q[0]) / statistics.median(xs)


def markdown(res):
    m = res["machine"]
    L = ["# PGO speed-up (bench/pgo.py)", ""]
    L.append(f"Date {m['date']}; machine: {m['nproc']} × {m['cpu']}, Linux {m['kernel']}; commit {m['commit']} "
             f"(\"{m['subject']}\"); {m['clang']}; {res['reps']} interleaved repetitions, medians. Load average "
             f"(1 min) at the start {res['load']['start'][0]:.1f}, after each repetition "
             + ", ".join(f"{x:.1f}" for x in res["load"]["per_rep_1min"])
             + " (2 cores, shared with other compiles).")
    L.append("")
    L.append("Training: " + "; ".join(f"{p}: " + ", ".join("`" + " ".join(a) + "`" for a in t)
                                      for p, t in res["train"].items())
             + ". Measured (different inputs): " + "; ".join(f"{n}: `{' '.join(w['args'])}`"
                                                           for n, w in res["workloads"].items()) + ".")
    L.append("")
    L.append("Variants, all `-O2`: " + "; ".join(f"**{v}** `{' '.join(f)}`" for v, f in res["flags"].items()) + ".")
    L.append("")
    L.append("**Speed-up** over the baseline (baseline median ÷ variant median, wall time; > 1 = faster); baseline "
             "in seconds\n")
    L.append("| workload | baseline (s) | " + " | ".join(VARIANTS[1:]) + " |")
    L.append("|---|---|" + "---|" * (len(VARIANTS) - 1))
    for n, r in res["runs"].items():
        L.append(f"| {n} | {r['baseline']['median']:.3f} | "
                 + " | ".join(f"{res['speedup'][n][v]:.3f}" for v in VARIANTS[1:]) + " |")
    g, gc, gm = res["geomean_speedup"], res["geomean_speedup_cpu"], res["geomean_speedup_min"]
    L.append("| **geomean** | | " + " | ".join(f"**{g[v]:.3f}**" for v in VARIANTS[1:]) + " |")
    L.append("| geomean (user+sys time) | | " + " | ".join(f"{gc[v]:.3f}" for v in VARIANTS[1:]) + " |")
    L.append("| geomean (fastest repetition) | | " + " | ".join(f"{gm[v]:.3f}" for v in VARIANTS[1:]) + " |")
    L.append("")
    L.append("**Each pathprof route against IR PGO**: pathprof speed-up ÷ IR PGO speed-up (= IR PGO time ÷ pathprof "
             "time; ≥ 0.98 meets the issue's goal)\n")
    L.append("| workload | " + " | ".join(PP_ROUTES) + " |")
    L.append("|---|" + "---|" * len(PP_ROUTES))
    for n in res["runs"]:
        L.append(f"| {n} | " + " | ".join(f"{res['speedup'][n][v] / res['speedup'][n]['ir-pgo']:.3f}"
                                          for v in PP_ROUTES) + " |")
    L.append("| **geomean** | " + " | ".join(f"**{g[v] / g['ir-pgo']:.3f}**" for v in PP_ROUTES) + " |")
    L.append("| geomean (user+sys time) | " + " | ".join(f"{gc[v] / gc['ir-pgo']:.3f}" for v in PP_ROUTES) + " |")
    L.append("| geomean (fastest repetition) | " + " | ".join(f"{gm[v] / gm['ir-pgo']:.3f}" for v in PP_ROUTES)
             + " |")
    L.append("")
    noise = sorted(iqr_rel(r[v]["times"]) for r in res["runs"].values() for v in VARIANTS)
    noise = [x for x in noise if x == x]
    if noise:
        L.append(f"Noise: the interquartile range of the repetitions is {statistics.median(noise) * 100:.1f}% of the "
                 f"median for the median workload/variant ({noise[-1] * 100:.1f}% at most).")
        L.append("")
    if "callgrind" in res:
        c, gi = res["callgrind"]["counts"], res["geomean_speedup_ir"]
        L.append("**Executed instructions** (callgrind Ir, exact and free of load noise; smaller measured inputs, still "
                 "different from the training ones: " + "; ".join(f"{n}: `{' '.join(a)}`" for n, a in
                                                                  res["callgrind"]["workloads"].items())
                 + "): baseline Ir ÷ variant Ir (> 1 = fewer instructions), and in brackets mispredicted branches "
                   "(conditional + indirect, callgrind's simple predictor), variant ÷ baseline (< 1 = fewer)\n")
        L.append("| workload | baseline Ir (M) | " + " | ".join(VARIANTS[1:]) + " |")
        L.append("|---|---|" + "---|" * (len(VARIANTS) - 1))
        mis = lambda x: x.get("Bcm", 0) + x.get("Bim", 0)
        for n, r in c.items():
            L.append(f"| {n} | {r['baseline']['Ir'] / 1e6:,.0f} | " + " | ".join(
                f"{res['speedup_ir'][n][v]:.3f} ({mis(r[v]) / max(mis(r['baseline']), 1):.2f})" for v in VARIANTS[1:])
                + " |")
        L.append("| **geomean** | | " + " | ".join(f"**{gi[v]:.3f}**" for v in VARIANTS[1:]) + " |")
        L.append("| **÷ IR PGO** | | — | " + " | ".join(f"**{gi[v] / gi['ir-pgo']:.3f}**" for v in PP_ROUTES) + " |")
        L.append("")
    L.append("**Use mode** (functions over all modules; *mismatched* = stale: name in the profile, CFG differs; "
             "*missing* = not in the profile or not exact)\n")
    L.append("| program | profile | annotated | mismatched (stale) | missing | edge and path builds identical |")
    L.append("|---|---|---|---|---|---|")
    for p, u in res["use_mode"].items():
        for v in ["pp-use-edge", "pp-use-path"]:
            s = u[v]
            L.append(f"| {p} | {v.split('-')[-1]} | {s['annotated']} | {s['mismatched']} | {s['missing']} | "
                     f"{'yes' if u['edge_and_path_binaries_identical'] else 'no'} |")
    L.append("")
    if any(not u["edge_and_path_binaries_identical"] for u in res["use_mode"].values()):
        L.append("Lua's edge- and path-profile builds differ because Lua seeds its string hashes from addresses and "
                 "the time (`luai_makeseed`), so two training runs differ slightly; for the deterministic programs "
                 "both profiles give byte-identical binaries, and their timing difference is pure noise.")
        L.append("")
    L.append("Median seconds (wall): " + "; ".join(
        f"{n}: " + ", ".join(f"{v} {r[v]['median']:.3f}" for v in VARIANTS) for n, r in res["runs"].items()) + ".")
    L.append("")
    return "\n".join(L)


if __name__ == "__main__":
    main()
