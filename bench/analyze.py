#!/usr/bin/env python3
"""Where pathprof's run-time overhead goes, with evidence: run after bench/run.sh (it uses its builds).

    python3 bench/analyze.py [--reps N] [--skip-callgrind] [--skip-attrs] [--report-only]
                             [--workloads LIST] [--atomic] [--out BASE]

1. callgrind: executed instructions (Ir) of the small workloads for baseline, LLVM IR PGO, pathprof edge,
   path, context and piecewise, in total and for each workload's hottest functions (valgrind --tool=callgrind).
2. The cost of counting calls that may not return, measured without touching the pass: the same sources are
   compiled to unoptimised bitcode and then through pathprof three ways —
     as-is        exactly what pathprof-clang does (the pass sees the front end's attributes);
     attrs-first  `opt -passes='inferattrs,cgscc(function-attrs)'` first, so calls that LLVM can prove return
                  (libc functions, leaf functions without loops) are known `willreturn` when the pass runs;
     all-return   every function that is not `noreturn` marked `willreturn` (an upper bound on what any
                  inference can give: no termination edges, no +1/-1 pairs at all; valid for these runs only
                  because their outputs are checked against the baseline's);
   each against a baseline built the same way, timed interleaved.
3. What one executed path costs in path mode: the path executions of each callgrind workload (one native run
   of the path-mode build, from its profile) against the instructions path mode and LLVM IR PGO add. Ball–Larus path profiling must update one
   counter per executed path, so "1 instruction per path" is the floor any path profiler pays.
Writes bench/results/analysis.{md,json} (or --out BASE.{md,json}); --report-only rewrites them from the JSON
(counting the path executions again, which takes seconds) without measuring the rest again.
--workloads: a comma-separated subset of run.py's workloads or groups (`kernels`, `programs`); default all.
--atomic: also callgrind the atomic variants (IR PGO -fprofile-update=atomic, pathprof edge and path --pathprof-atomic).
The kernels' counts, e.g.:  bench/analyze.py --workloads kernels --atomic --skip-attrs --out bench/results/kernels-before
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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as B  # noqa: E402

OUT = B.WORK / "analysis"
CG_VARIANTS = ["baseline", "llvm-ir-pgo", "pp-edge", "pp-path", "pp-context", "pp-piecewise"]
CG_ATOMIC = ["llvm-ir-pgo-atomic", "pp-edge-atomic", "pp-path-atomic"]  # with --atomic
TAIL_LIMIT = 1.15  # issue 18: no workload above this, pathprof ÷ LLVM IR PGO, in edge or path mode
DENSE_MAX = 1 << 22  # PATHPROF_PATH_ARRAY_MAX for the pp-path-dense build (default 4096)


def small_args(name):
    """(program, small args, full args) of one of run.py's workloads."""
    fill = dict(input=str(B.WORK / "inputs" / "mixed-20MiB.dat"), small=str(B.WORK / "inputs" / "mixed-4MiB.dat"),
                bz2=str(B.WORK / "inputs" / "mixed-20MiB.dat.bz2"),
                small_bz2=str(B.WORK / "inputs" / "mixed-4MiB.dat.bz2"))
    for n, prog, full, sm in B.WORKLOADS:
        if n == name:
            return prog, [x.format(**fill) for x in sm], [x.format(**fill) for x in full]
    raise KeyError(name)


def callgrind(binary, args, out_file):
    env = dict(os.environ, PATHPROF_FILE=f"{out_file}.pathprof", LLVM_PROFILE_FILE=f"{out_file}.profraw")
    Path(f"{out_file}.pathprof").unlink(missing_ok=True)  # one run per profile (the runtime merges into a file)
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}", "--dump-instr=no",
                    "--compress-strings=no", "--compress-pos=no", str(binary), *args], env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    ann = subprocess.run(["callgrind_annotate", "--threshold=99.9", str(out_file)], capture_output=True,
                         text=True, check=True).stdout
    total = int(re.search(r"^([\d,]+).*PROGRAM TOTALS", ann, re.M).group(1).replace(",", ""))
    per = {}
    for m in re.finditer(r"^\s*([\d,]+) \([^)]*\)\s+(?:\S*?:)?(\S+?)(?: \[.*\])?$", ann, re.M):
        per[m.group(2)] = per.get(m.group(2), 0) + int(m.group(1).replace(",", ""))
    return total, per


def callgrind_workloads(selected=None):
    """Workloads scaled for callgrind (~100x slower): about 0.1 s each uninstrumented (the kernels: their small
    size from run.py). `selected`: workload names (default all)."""
    wl = B.BENCH / "workloads"
    kernels = [(n, prog, list(sm)) for n, prog, _, sm in B.KERNEL_WORKLOADS]
    if selected is not None and not set(selected) & set(B.PROGRAM_WORKLOADS):
        return [k for k in kernels if k[0] in selected]  # no tiny input needed (nor a bzip2 build to make it)
    tiny = OUT / "mixed-512KiB.dat"
    tiny.write_bytes((B.WORK / "inputs" / "mixed-4MiB.dat").read_bytes()[:512 << 10])
    with open(str(tiny) + ".bz2", "wb") as f:
        subprocess.run([str(B.WORK / "build" / "bzip2" / "baseline" / "bzip2"), "-c", "-9", str(tiny)], stdout=f,
                       check=True)
    every = [("bzip2-compress", "bzip2", ["-c", "-9", str(tiny)]),
            ("bzip2-decompress", "bzip2", ["-dc", f"{tiny}.bz2"]),
            ("zlib", "zlib", [str(tiny), "1", "6"]),
            ("lua-recursion", "lua", [f"{wl}/recursion.lua", "1"]),
            ("lua-tables-strings", "lua", [f"{wl}/tables_strings.lua", "1"]),
            ("lua-interpreter", "lua", [f"{wl}/interp.lua", "1", "0.05"]),
            ("sqlite", "sqlite", ["1500"])] + kernels
    return [w for w in every if selected is None or w[0] in selected]


def run_callgrind(selected, variants):
    jobs = []
    for name, prog, args in callgrind_workloads(selected):
        for v in variants:
            # valgrind 3.19 cannot read clang-19's DWARF 5: run a copy without debug info (symbols kept).
            binary = OUT / f"{prog}.{v}.nodebug"
            built = B.WORK / "build" / prog / v / prog
            # Re-stripped whenever run.sh rebuilt the variant (a stale copy measured an old build once).
            if not binary.exists() or binary.stat().st_mtime < built.stat().st_mtime:
                subprocess.run(["strip", "--strip-debug", "-o", str(binary), str(built)], check=True)
            jobs.append((name, v, binary, args))

    def one(j):
        name, v, binary, args = j
        total, per = callgrind(binary, args, OUT / f"cg.{name}.{v}.out")
        B.log(f"  callgrind {name} {v}: {total:,} Ir")
        return name, v, args, dict(total=total, functions=per)

    res = {}
    with cf.ThreadPoolExecutor(max_workers=B.NPROC) as ex:
        for name, v, args, r in ex.map(one, jobs):
            res.setdefault(name, {})[v] = r
            res[name]["_args"] = [a.replace(str(B.ROOT) + "/", "") for a in args]
    return res


def path_executions(workload, prog, args):
    """Net path executions of one native run of `workload` (callgrind's arguments) with its path-mode build,
    from the profile that run writes (a fresh file: the runtime adds to an existing one)."""
    profile = OUT / f"paths.{workload}.pathprof"
    profile.unlink(missing_ok=True)
    subprocess.run([str(B.WORK / "build" / prog / "pp-path" / prog), *args], env=dict(os.environ, PATHPROF_FILE=str(profile)),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    out = subprocess.run([str(B.PATHPROF), "decode", "--json", "--top", "1", str(profile)], capture_output=True,
                         text=True, check=True).stdout
    return sum(f["total_count"] for f in json.loads(out)["functions"])


def earlier_attrs():
    """The attribute experiment of the last report, with the machine it ran on, to keep in a report that skips
    it (`--skip-attrs`); nothing when there is none."""
    path = B.BENCH / "results" / "analysis.json"
    if not path.exists():
        return {}
    old = json.loads(path.read_text())
    if "attrs" not in old:
        return {}
    return {"attrs": old["attrs"], "attrs_machine": old.get("attrs_machine", old.get("machine"))}


def per_path_table(cg):
    """Markdown lines of section 3 (see the module docs); none without path executions."""
    rows, ratios, floors = [], [], []
    for w, r in cg.items():
        p = r.get("_path_executions")
        if not p:
            continue
        b, pgo, path = r["baseline"]["total"], r["llvm-ir-pgo"]["total"], r["pp-path"]["total"]
        ratios.append(path / pgo)
        floors.append((b + p) / pgo)
        rows.append(f"| {w} | {p:,} | {p / b * 1000:.0f} | {(pgo - b) / p:.2f} | {(path - b) / p:.2f} | "
                    f"{path / pgo:.3f} | {(b + p) / pgo:.3f} |")
    if not rows:
        return []
    rows.append(f"| geometric mean | | | | | {statistics.geometric_mean(ratios):.3f} | "
                f"{statistics.geometric_mean(floors):.3f} |")
    return ["## What one executed path costs (path mode)\n",
            "Path executions: net counts of the profile of a native run of the path-mode build. Extra instructions: the variant's Ir "
            "minus the baseline's. Floor: one counter update per executed path and nothing else. (Lua seeds its string "
            "hashes from addresses and the clock, so its path counts differ by tenths of a percent between runs.)\n",
            "| workload | path executions | per 1,000 baseline Ir | IR PGO extra Ir per path | pp-path extra Ir "
            "per path | pp-path ÷ IR PGO | floor ÷ IR PGO |",
            "|---|---|---|---|---|---|---|", *rows, ""]


# --------------------------------------------------------------------------------------------------------------
def all_return(ll_in, ll_out):
    """Adds `willreturn` to every attribute group with `nounwind` and without `noreturn`/`returns_twice`."""
    out = []
    for l in open(ll_in):
        if l.startswith("attributes #") and "nounwind" in l and "noreturn" not in l and "returns_twice" not in l \
                and "willreturn" not in l:
            l = l.replace("nounwind", "nounwind willreturn", 1)
        out.append(l)
    Path(ll_out).write_text("".join(out))


def build_attr_variants(prog, pdef):
    """Builds baseline and pathprof edge/path binaries of `prog` through unoptimised bitcode, three ways."""
    d = OUT / "attrs" / prog
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    bcs = {"as-is": [], "attrs-first": [], "all-return": []}
    for s in pdef["srcs"]:
        stem = d / s.stem
        subprocess.run(["clang-19", *B.OPT, "-gline-tables-only", "-Xclang", "-disable-llvm-passes", "-emit-llvm",
                        *pdef["cflags"], "-w", "-c", str(s), "-o", f"{stem}.bc"], check=True)
        subprocess.run(["opt-19", "-passes=inferattrs,cgscc(function-attrs)", f"{stem}.bc", "-o", f"{stem}.attrs.bc"],
                       check=True)
        subprocess.run(["llvm-dis-19", f"{stem}.bc", "-o", f"{stem}.ll"], check=True)
        all_return(f"{stem}.ll", f"{stem}.allret.ll")
        bcs["as-is"].append(f"{stem}.bc")
        bcs["attrs-first"].append(f"{stem}.attrs.bc")
        bcs["all-return"].append(f"{stem}.allret.ll")
    binaries, stats = {}, {}

    def one(how, v, cc, flags, env):
        files = bcs[how]
        objs, st = [], []
        for f in files:
            o = f"{f}.{v}.o"
            r = subprocess.run([cc, *B.OPT, *flags, "-w", "-c", f, "-o", o], capture_output=True, text=True,
                               env=dict(os.environ, **env))
            if r.returncode:
                raise SystemExit(r.stderr)
            st += [l for l in r.stderr.splitlines() if l.startswith("pathprof: stats:")]
            objs.append(o)
        exe = d / f"{prog}.{how}.{v}"
        subprocess.run([cc, *B.OPT, *flags, *objs, "-o", str(exe), *pdef["libs"]], check=True,
                       capture_output=True)
        B.log(f"  built {prog} {how} {v}")
        return (how, v), exe, B.parse_stats(st)

    jobs = []
    for how in bcs:
        for v, cc, flags, env in [("baseline", "clang-19", [], {}),
                                  ("pp-edge", str(B.PPCLANG), ["--pathprof-mode=edge", "--pathprof-stats"], {}),
                                  ("pp-path", str(B.PPCLANG), ["--pathprof-mode=path", "--pathprof-stats"], {}),
                                  ("pp-path-dense", str(B.PPCLANG), ["--pathprof-mode=path", "--pathprof-stats"],
                                   {"PATHPROF_PATH_ARRAY_MAX": str(DENSE_MAX)})]:
            if how == "attrs-first" and v == "baseline":
                continue  # attribute inference runs in the -O2 pipeline anyway: same code as as-is
            if v == "pp-path-dense" and how != "as-is":
                continue
            jobs.append((how, v, cc, flags, env))
    with cf.ThreadPoolExecutor(max_workers=B.NPROC) as ex:
        for key, exe, st in ex.map(lambda j: one(*j), jobs):
            binaries[key] = exe
            stats["/".join(key)] = st
    return binaries, stats


def run_attrs(reps, workloads):
    src = B.sources()
    progs = B.programs(src)
    res = {}
    for name in workloads:
        prog, _, full = small_args(name)
        bins, stats = build_attr_variants(prog, progs[prog]) if prog not in res.get("_built", {}) else \
            res["_built"][prog]
        res.setdefault("_built", {})[prog] = (bins, stats)
        keys = list(bins)
        env = dict(os.environ, LC_ALL="C", PATHPROF_FILE=str(OUT / "attrs.pathprof"))
        expected = None
        for k in keys:
            B.remove(OUT / "attrs.pathprof")
            o = OUT / f"attrs.{name}.out"
            wall, cpu, rc, err = B.run_timed([str(bins[k]), *full], env, o)
            if rc:
                raise SystemExit(f"{name} {k}: exit {rc}: {err}")
            dg = B.sha256(o)
            expected = expected or dg
            if dg != expected:
                raise SystemExit(f"{name} {k}: output differs")
        times = {k: [] for k in keys}
        for rep in range(reps):
            order = keys[rep % len(keys):] + keys[:rep % len(keys)]
            for k in order:
                B.remove(OUT / "attrs.pathprof")
                wall, cpu, rc, err = B.run_timed([str(bins[k]), *full], env, OUT / "attrs.timed.out")
                times[k].append(wall)
            B.log(f"  rep {rep + 1} {name}: " + " ".join(f"{'/'.join(k)}={times[k][-1]:.2f}" for k in keys))
        res[name] = {"/".join(k): dict(median=statistics.median(t), times=t) for k, t in times.items()}
        res[name]["_stats"] = stats
    res.pop("_built")
    return res


def head_to_head_columns(variants):
    """(pathprof variant, LLVM variant) pairs of the head-to-head table: each mode against IR PGO of the same
    atomicity (run.py's HEAD_TO_HEAD), for the variants that were measured."""
    order = ["pp-edge", "pp-path", "pp-context", "pp-piecewise", "pp-edge-atomic", "pp-path-atomic"]
    return [(p, B.HEAD_TO_HEAD[p]) for p in order if p in variants and B.HEAD_TO_HEAD[p] in variants]


def head_to_head_table(cg, variants):
    """Markdown lines: pathprof ÷ LLVM IR PGO by executed instructions, per workload and mode, the ratios above
    TAIL_LIMIT marked, their geomeans, and the list of workloads above the limit in edge or path mode."""
    cols = head_to_head_columns(variants)
    if not cols:
        return []
    L = ["## pathprof ÷ LLVM IR PGO, executed instructions\n",
         f"Each mode's Ir ÷ the Ir of LLVM IR PGO of the same atomicity (`-fprofile-generate`, atomic variants: "
         f"with `-fprofile-update=atomic`) on the same run; **bold**: above {TAIL_LIMIT} (issue 18's limit for edge "
         "and path mode, atomic or not).\n",
         "| workload | " + " | ".join(f"{p} ÷ {q}" for p, q in cols) + " |", "|---|" + "---|" * len(cols)]
    ratios = {c: [] for c in cols}
    above = []
    for w, r in cg.items():
        cells = []
        for p, q in cols:
            x = r[p]["total"] / r[q]["total"]
            ratios[(p, q)].append(x)
            cells.append(f"**{x:.3f}**" if x > TAIL_LIMIT else f"{x:.3f}")
            if x > TAIL_LIMIT and p in ("pp-edge", "pp-path", "pp-edge-atomic", "pp-path-atomic"):
                above.append(f"{w} {p} {x:.2f}")
        L.append(f"| {w} | " + " | ".join(cells) + " |")
    L.append("| geometric mean | " + " | ".join(f"{statistics.geometric_mean(ratios[c]):.3f}" for c in cols) + " |")
    L.append("")
    L.append(f"Above {TAIL_LIMIT} in edge or path mode: " + (", ".join(above) if above else "none") + ".\n")
    return L


def markdown(cg, at, at_machine=None, machine=None):
    L = ["# Where pathprof's overhead goes\n"]
    if machine:
        L.append(f"Date {machine.get('date')}; commit {machine.get('commit')}; {machine.get('clang')}.\n")
    if cg:
        variants = [v for v in CG_VARIANTS + CG_ATOMIC if all(v in r for r in cg.values())]
        L.append("## Executed instructions (callgrind, small workloads)\n")
        L.append("| workload | baseline Ir | " + " | ".join(variants[1:]) + " |")
        L.append("|---|---|" + "---|" * len(variants[1:]))
        for w, r in cg.items():
            b = r["baseline"]["total"]
            w = f"{w} (`{' '.join(Path(a).name for a in r['_args'])}`)"
            L.append(f"| {w} | {b:,} | " + " | ".join(f"{r[v]['total'] / b - 1:+.1%}" for v in variants[1:]) + " |")
        L.append("")
        L.extend(head_to_head_table(cg, variants))
        L.append("Hottest functions (self Ir of the baseline; extra instructions per variant, % of the baseline "
                 "function's Ir):\n")
        L.append("| workload | function | baseline Ir | " + " | ".join(variants[1:]) + " |")
        L.append("|---|---|---|" + "---|" * len(variants[1:]))
        for w, r in cg.items():
            top = sorted(r["baseline"]["functions"].items(), key=lambda x: -x[1])[:4]
            for fn, b in top:
                cells = []
                for v in variants[1:]:
                    x = r[v]["functions"].get(fn)
                    cells.append("—" if x is None else f"{x / b - 1:+.1%}")
                L.append(f"| {w} | `{fn}` | {b:,} | " + " | ".join(cells) + " |")
        L.append("")
        L.extend(per_path_table(cg))
    if at:
        L.append("## The cost of counting calls that may not return\n")
        if at_machine and machine and at_machine.get("date") != machine.get("date"):
            L.append(f"(Kept from the run of {at_machine.get('date')}, commit {at_machine.get('commit', '?')[:7]}; "
                     "`bench/analyze.py --skip-attrs` reran only the callgrind part.)\n")
        L.append("Median wall seconds (full workloads); overhead vs. the baseline built the same way.\n")
        L.append("| workload | baseline | pp-edge as-is | pp-edge attrs-first | pp-edge all-return | pp-path as-is | "
                 "pp-path attrs-first | pp-path all-return | pp-path as-is, dense arrays | baseline all-return |")
        L.append("|---|---|---|---|---|---|---|---|---|---|")
        for w, r in at.items():
            b = r["as-is/baseline"]["median"]
            br = r["all-return/baseline"]["median"]
            cell = lambda k, ref: f"{r[k]['median']:.2f} ({r[k]['median'] / ref - 1:+.1%})"
            L.append(f"| {w} | {b:.2f} | {cell('as-is/pp-edge', b)} | {cell('attrs-first/pp-edge', b)} | "
                     f"{cell('all-return/pp-edge', br)} | {cell('as-is/pp-path', b)} | {cell('attrs-first/pp-path', b)} | "
                     f"{cell('all-return/pp-path', br)} | {cell('as-is/pp-path-dense', b)} | {cell('all-return/baseline', b)} |")
        L.append("")
        L.append("Static effect (`--pathprof-stats` totals):\n")
        L.append("| program | build | virtual (termination) edges | edge counters | path increment chords | "
                 "hashed functions |")
        L.append("|---|---|---|---|---|---|")
        seen = set()
        for w, r in at.items():
            prog = small_args(w)[0]
            if prog in seen:
                continue
            seen.add(prog)
            for how in ["as-is", "attrs-first", "all-return"]:
                e, p = r["_stats"][f"{how}/pp-edge"], r["_stats"][f"{how}/pp-path"]
                L.append(f"| {prog} | {how} | {e.get('virtual_edges')} | {e.get('counters')} | "
                         f"{p.get('increment_chords')} | {p.get('hashed_functions')} |")
            p = r["_stats"]["as-is/pp-path-dense"]
            L.append(f"| {prog} | as-is, PATHPROF_PATH_ARRAY_MAX={DENSE_MAX} | | | {p.get('increment_chords')} | "
                     f"{p.get('hashed_functions')} |")
        L.append("")
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--skip-callgrind", action="store_true")
    ap.add_argument("--skip-attrs", action="store_true")
    ap.add_argument("--attrs-workloads", default="lua-recursion,lua-tables-strings,lua-interpreter,sqlite")
    ap.add_argument("--workloads", help="callgrind only these workloads or groups (run.py's names; default all)")
    ap.add_argument("--atomic", action="store_true", help="also callgrind the atomic variants")
    ap.add_argument("--out", default=str(B.BENCH / "results" / "analysis"), help="results basename")
    ap.add_argument("--report-only", action="store_true", help="rewrite the report from the JSON of --out")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    out = Path(args.out)
    default_out = out == B.BENCH / "results" / "analysis"
    if args.report_only:
        res = json.loads(Path(f"{out}.json").read_text())
    else:
        res = {"machine": B.machine()}
        if not args.skip_callgrind:
            B.log("== callgrind")
            selected = [w[0] for w in B.select_workloads(args.workloads)] if args.workloads else None
            res["callgrind"] = run_callgrind(selected, CG_VARIANTS + (CG_ATOMIC if args.atomic else []))
        if not args.skip_attrs:
            B.log("== attributes experiment")
            res["attrs"] = run_attrs(args.reps, args.attrs_workloads.split(","))
            res["attrs_machine"] = res["machine"]
        elif default_out:
            res.update(earlier_attrs())
    if res.get("callgrind"):
        for w, prog, cg_args in callgrind_workloads(list(res["callgrind"])):
            res["callgrind"][w]["_path_executions"] = path_executions(w, prog, cg_args)
    md = markdown(res.get("callgrind"), res.get("attrs"), res.get("attrs_machine"), res.get("machine"))
    out.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{out}.md").write_text(md)
    Path(f"{out}.json").write_text(json.dumps(res, indent=1, default=str) + "\n")
    print(md)


if __name__ == "__main__":
    main()
