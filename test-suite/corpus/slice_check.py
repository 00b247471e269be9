#!/usr/bin/env python3
"""Run-and-check of executable slicing on a real project (issue #22): bzip2 1.0.8, every `return` of every
function of every translation unit its Makefile builds (libbz2, bzip2, bzip2recover).

For each criterion FILE:LINE (a source line holding a `return` statement, found in the comment- and string-free
text; `#define` lines are not statements), two builds of the project differ only in FILE's object:
  whole   pathprof-clang --pathprof-slice=FILE:LINE --pathprof-slice-observe=whole  (FILE unsliced)
  slice   pathprof-clang --pathprof-slice=FILE:LINE --pathprof-slice-observe=slice  (FILE's function sliced)
With the observe flag the pass adds, *after* slicing, a call `pathprof_slice_observe(key, value)` for every value
computed at the criterion's line (integers; floating bits; pointers as null or not — see pass/src/slice_observe.rs);
the observer linked in here folds them into a hash and count and appends `HASH COUNT` to $PATHPROF_SLICE_LOG when
the process exits. Both builds run the project's own test (the 6 `bzip2` runs of `make test`; for bzip2recover,
which `make test` does not run, a driver: `bzip2recover` on sample1.bz2 and a damaged copy of it; for the
library's sources also the tarball's dlltest.c, which drives the BZ2_bzopen/bzread/bzwrite API bzip2 does not use,
on the sample files). Then:
  agree     the two logs are equal: every process saw the same value sequence at the criterion (Theorem 6.1);
  reached   the whole build's log has a non-zero count (the test executes the line);
  tests     the slice build's test outputs and exit codes equal the whole build's. Not implied by a correct
            slice: a slice drops output statements of the sliced function that the criterion does not need
            (reported, not failed).
Refused: the slicer's one-line error (e.g. setjmp), reported with its reason; dead-code: the line's instructions
are unreachable (a `return` after a call that never returns), so there is nothing to slice. Anything else is a
failure.

With --dynamic the same is done for dynamic slices: an edge-mode build runs the same tests first, and both builds
slice with that profile (--pathprof-slice-profile); the tests are the profiled inputs, so the slices must agree
(a kept branch's never-profiled arc traps). Criteria the tests never execute are "not-executed".

Usage: python3 test-suite/corpus/slice_check.py [--dynamic] [--limit N] [--files a.c,b.c] [--opt -O0] [--jobs 2]
Writes WORK/slice-check.json and prints the summary (WORK: test-suite/work/corpus/slice-check, or
slice-check-dynamic).
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
import corpus  # noqa: E402  (fetch_source, extract: the corpus's own download of the Debian source)

CFLAGS = ["-Wall", "-g", "-D_FILE_OFFSET_BITS=64"]  # the Makefile's, but -O2 comes from --opt
LIB = ["blocksort.c", "huffman.c", "crctable.c", "randtable.c", "compress.c", "decompress.c", "bzlib.c"]
PROGRAMS = {"bzip2": ["bzip2.c"] + LIB, "bzip2recover": ["bzip2recover.c"], "dlltest": ["dlltest.c"] + LIB}
# The sources whose return lines are criteria: what the Makefile builds (dlltest.c, the tarball's example of the
# library's stdio-like API, is only a driver).
CRITERIA_SOURCES = ["bzip2.c", "bzip2recover.c"] + LIB
# dlltest runs: the library's BZ2_bzopen/bzread/bzwrite API, which bzip2 itself does not use.
DLLTEST_TESTS = [["-1", "sample1.ref", "s1.bz2"], ["-d", "sample2.bz2", "s2.out"], ["-9", "sample3.ref", "s3.bz2"]]
# make test's bzip2 runs: (args, stdin file, stdout file).
BZIP2_TESTS = [(["-1"], "sample1.ref", "sample1.rb2"), (["-2"], "sample2.ref", "sample2.rb2"),
               (["-3"], "sample3.ref", "sample3.rb2"), (["-d"], "sample1.bz2", "sample1.tst"),
               (["-d"], "sample2.bz2", "sample2.tst"), (["-ds"], "sample3.bz2", "sample3.tst")]
RUN_TIMEOUT = 60

OBSERVER_C = r"""
#include <stdio.h>
#include <stdlib.h>
static unsigned long long h = 1469598103934665603ULL, n;
void pathprof_slice_observe(long long key, long long v) {
  h = (h ^ (unsigned long long)key) * 1099511628211ULL;
  h = (h ^ (unsigned long long)v) * 1099511628211ULL;
  n++;
}
__attribute__((destructor)) static void pathprof_slice_observe_done(void) {
  const char *p = getenv("PATHPROF_SLICE_LOG");
  FILE *f = p ? fopen(p, "a") : NULL;
  if (!f) return;
  fprintf(f, "%016llx %llu\n", h, n);
  fclose(f);
}
"""


def strip_comments_and_strings(text):
    """C source with comments, string and character literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else ""))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def return_lines(path):
    """Lines with a `return` statement (not in comments, strings or #define lines)."""
    lines = strip_comments_and_strings(path.read_text(errors="replace")).split("\n")
    found, in_define = [], False
    for k, line in enumerate(lines, 1):
        directive = in_define or line.lstrip().startswith("#")
        in_define = directive and line.rstrip().endswith("\\")
        if not directive and re.search(r"\breturn\b", line):
            found.append(k)
    return found


def run(cmd, cwd, env=None, stdin=None, stdout=None, timeout=600):
    return subprocess.run(cmd, cwd=cwd, env=env, stdin=stdin, stdout=stdout if stdout else subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout)


def compile_obj(tree, src, obj, opt, extra=(), compiler="clang-19"):
    r = run([compiler, "-c", opt, *CFLAGS, *extra, src, "-o", str(obj)], cwd=tree)
    return r.returncode, r.stderr.decode(errors="replace")


def link(tree, objs, exe):
    r = run(["clang-19", *map(str, objs), "-o", str(exe)], cwd=tree)
    if r.returncode != 0:
        raise RuntimeError(f"link {exe.name}: {r.stderr.decode(errors='replace')[-300:]}")


def run_tests(tree, program, exe, scratch, log, extra_env=None):
    """The project's test (or the driver), with the observer logging to `log`; returns what it did."""
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    env = {**os.environ, "PATHPROF_SLICE_LOG": str(log), **(extra_env or {})}
    results = []
    if program == "dlltest":
        for src in {a[1] for a in DLLTEST_TESTS}:
            shutil.copy(tree / src, scratch / src)
        for args in DLLTEST_TESTS:
            try:
                rc = run([str(exe), *args], cwd=scratch, env=env, timeout=RUN_TIMEOUT).returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
            results.append((" ".join(args), rc, digest(scratch / args[-1])))
    elif program == "bzip2":
        for args, src, dst in BZIP2_TESTS:
            with open(tree / src, "rb") as i, open(scratch / dst, "wb") as o:
                try:
                    r = run([str(exe), *args], cwd=scratch, env=env, stdin=i, stdout=o, timeout=RUN_TIMEOUT)
                    rc = r.returncode
                except subprocess.TimeoutExpired:
                    rc = "timeout"
            results.append((" ".join(args), rc, digest(scratch / dst)))
    else:
        shutil.copy(tree / "sample1.bz2", scratch / "good.bz2")
        data = bytearray((tree / "sample2.bz2").read_bytes())
        data[len(data) // 2] ^= 0x55  # a damaged block: bzip2recover's reason to exist
        (scratch / "bad.bz2").write_bytes(bytes(data))
        for name in ["good.bz2", "bad.bz2"]:
            try:
                rc = run([str(exe), name], cwd=scratch, env=env, timeout=RUN_TIMEOUT).returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
            outs = sorted(p.name for p in scratch.glob(f"rec*{name}"))
            results.append((name, rc, [(o, digest(scratch / o)) for o in outs]))
            for o in outs:
                (scratch / o).unlink()
    return results


def digest(p):
    return hashlib.sha256(p.read_bytes()).hexdigest()[:16] if p.exists() else None


def programs_of(src):
    """The programs a criterion in `src` is checked with: those linking it."""
    return [p for p, srcs in PROGRAMS.items() if src in srcs]


def check(ctx, src, line):
    """One criterion: build whole and slice, run, compare. Returns the result record."""
    tree, base, dist, opt = ctx["tree"], ctx["base"], ctx["dist"], ctx["opt"]
    d = ctx["work"] / "runs" / f"{src}-{line}"
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    rec = {"file": src, "line": line}
    logs, tests = {}, {}
    for variant in ["whole", "slice"]:
        obj = d / f"{variant}.o"
        flags = [f"--pathprof-slice={src}:{line}", f"--pathprof-slice-observe={variant}", "--pathprof-stats"]
        if ctx["profile"]:
            flags.append(f"--pathprof-slice-profile={ctx['profile']}")
        if variant == "slice":
            flags.append(f"--pathprof-slice-json={d / 'slice.json'}")
        rc, err = compile_obj(tree, src, obj, opt, flags, compiler=str(dist / "bin" / "pathprof-clang"))
        if rc != 0:
            msg = next((ln for ln in err.splitlines() if "pathprof" in ln and "error" in ln),
                       err.strip().splitlines()[-1] if err.strip() else f"exit {rc}")
            rec["status"] = "refused" if variant == "whole" or "cannot slice" in msg else "compile-failed"
            rec["reason"] = msg
            if variant == "whole":
                rec["status"] = "no-code" if "no instruction at" in msg else "refused"
            if "can never run" in msg:
                rec["status"] = "dead-code"
            if "never ran" in msg or "shows no execution" in msg:
                rec["status"] = "not-executed"
            return rec
        if variant == "slice":
            m = re.findall(r"function=(\S+) instructions=(\d+) kept=(\d+) lines=(\d+) of (\d+)", err)
            rec["functions"] = [{"name": f, "instructions": int(i), "kept": int(k), "lines": int(ln),
                                 "of": int(o)} for f, i, k, ln, o in m]
        log = d / f"{variant}.log"
        tests[variant] = []
        for program in programs_of(src):
            objs = [obj if s == src else base / (s[:-2] + ".o") for s in PROGRAMS[program]]
            exe = d / f"{program}-{variant}"
            link(tree, objs + [base / "observe.o"], exe)
            tests[variant] += run_tests(tree, program, exe, d / f"scratch-{variant}", log)
        logs[variant] = log.read_text() if log.exists() else ""
    counts = [int(ln.split()[1]) for ln in logs["whole"].splitlines()]
    rec["observed"] = sum(counts)
    rec["reached"] = rec["observed"] > 0
    rec["agree"] = logs["whole"] == logs["slice"]
    rec["tests_same"] = tests["whole"] == tests["slice"]
    rec["status"] = "agree" if rec["agree"] else "DISAGREE"
    if not rec["agree"]:
        rec["logs"] = logs
    if not rec["tests_same"]:
        rec["tests"] = tests
    if rec["agree"] and not ctx["keep"]:
        shutil.rmtree(d)
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default=str(ROOT / "test-suite" / "work" / "corpus"))
    ap.add_argument("--dist", default=str(ROOT / "dist"))
    ap.add_argument("--opt", default="-O2", help="optimisation level (the Makefile's: -O2)")
    ap.add_argument("--files", help="only these sources (comma-separated)")
    ap.add_argument("--limit", type=int, help="at most this many criteria (spread evenly)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep", action="store_true", help="keep every criterion's build directory")
    ap.add_argument("--dynamic", action="store_true",
                    help="dynamic slices: profile the same tests in edge mode first, slice with that profile")
    args = ap.parse_args()

    manifest = tomllib.loads((HERE / "manifest.toml").read_text())
    corpus_work = Path(args.work).resolve()
    dist = Path(args.dist).resolve()
    if not (dist / "bin" / "pathprof-clang").exists():
        sys.exit(f"slice_check: {dist}/bin/pathprof-clang missing: run scripts/build.sh")
    tarball = corpus.fetch_source(corpus_work, "bzip2", manifest["bzip2"], False)
    work = corpus_work / ("slice-check-dynamic" if args.dynamic else "slice-check")
    tree = work / "tree"
    corpus.extract(tarball, tree)
    base = work / "base"
    base.mkdir(parents=True, exist_ok=True)
    sources = sorted({s for v in PROGRAMS.values() for s in v})
    for s in sources:
        rc, err = compile_obj(tree, s, base / (s[:-2] + ".o"), args.opt)
        if rc != 0:
            sys.exit(f"slice_check: plain compile of {s} failed: {err[-300:]}")
    (base / "observe.c").write_text(OBSERVER_C)
    rc, err = compile_obj(base, "observe.c", base / "observe.o", "-O2")
    if rc != 0:
        sys.exit(f"slice_check: observer: {err}")

    profile = make_profile(tree, work, dist, sources, args.opt) if args.dynamic else None
    wanted = set(args.files.split(",")) if args.files else None
    criteria = [(s, ln) for s in CRITERIA_SOURCES if not wanted or s in wanted for ln in return_lines(tree / s)]
    if args.limit and args.limit < len(criteria):
        step = len(criteria) / args.limit
        criteria = [criteria[int(k * step)] for k in range(args.limit)]
    ctx = {"tree": tree, "base": base, "dist": dist, "opt": args.opt, "work": work, "keep": args.keep,
           "profile": profile}
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        futures = {ex.submit(check, ctx, s, ln): (s, ln) for s, ln in criteria}
        for k, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            s, ln = futures[fut]
            try:
                rec = fut.result()
            except Exception as e:  # a build or run problem of the harness itself
                rec = {"file": s, "line": ln, "status": "harness-error", "reason": str(e)[-300:]}
            results.append(rec)
            if rec["status"] not in ("agree",):
                print(f"[{k}/{len(criteria)}] {s}:{ln} {rec['status']} {rec.get('reason', '')}", flush=True)
    results.sort(key=lambda r: (r["file"], r["line"]))
    summary = summarise(results, args.opt)
    summary["dynamic"] = bool(profile)
    (work / "slice-check.json").write_text(json.dumps({"summary": summary, "criteria": results}, indent=1))
    print(json.dumps(summary, indent=1))
    bad = summary["by_status"].get("DISAGREE", 0) + summary["by_status"].get("compile-failed", 0) + \
        summary["by_status"].get("harness-error", 0)
    sys.exit(1 if bad else 0)


def make_profile(tree, work, dist, sources, opt):
    """An edge profile of the same test runs (every program, every source instrumented), for dynamic slices."""
    pdir = work / "profile"
    if pdir.exists():
        shutil.rmtree(pdir)
    pdir.mkdir(parents=True)
    wrapper = str(dist / "bin" / "pathprof-clang")
    for s in sources:
        rc, err = compile_obj(tree, s, pdir / (s[:-2] + ".o"), opt, ["--pathprof-mode=edge"], compiler=wrapper)
        if rc != 0:
            sys.exit(f"slice_check: edge-mode compile of {s} failed: {err[-300:]}")
    profile = pdir / "tests.pathprof"
    env = {"PATHPROF_FILE": str(profile)}
    for program, srcs in PROGRAMS.items():
        exe = pdir / program
        r = run([wrapper, *[str(pdir / (s[:-2] + ".o")) for s in srcs], "-o", str(exe)], cwd=tree)
        if r.returncode != 0:
            sys.exit(f"slice_check: edge-mode link of {program} failed: {r.stderr.decode()[-300:]}")
        run_tests(tree, program, exe, pdir / f"scratch-{program}", pdir / "unused.log", env)
    return profile


def summarise(results, opt):
    by_status = {}
    for r in results:
        by_status[r["status"]] = by_status.get(r["status"], 0) + 1
    ok = [r for r in results if r["status"] in ("agree", "DISAGREE")]
    funcs = {(r["file"], f["name"]) for r in ok for f in r.get("functions", [])}
    kept = sum(f["lines"] for r in ok for f in r.get("functions", []))
    whole = sum(f["of"] for r in ok for f in r.get("functions", []))
    return {
        "project": "bzip2 1.0.8", "opt": opt, "criteria": len(results), "by_status": by_status,
        "compiled": len(ok), "agree": sum(r["agree"] for r in ok),
        "reached": sum(r["reached"] for r in ok), "reached_and_agree": sum(r["reached"] and r["agree"] for r in ok),
        "tests_same": sum(r["tests_same"] for r in ok), "functions": len(funcs),
        "slice_lines_vs_function_lines": f"{kept}/{whole}",
        "refused_reasons": sorted({r.get("reason", "") for r in results if r["status"] == "refused"}),
    }


if __name__ == "__main__":
    main()
