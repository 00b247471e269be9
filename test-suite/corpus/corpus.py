#!/usr/bin/env python3
"""Real-software corpus: builds Debian's upstream sources of real projects with plain clang-19 and through
pathprof-clang in every mode, runs each project's own test suite, and checks the profiles.

Per project and pathprof mode it checks
  (a) tests: every test has the same result as in the plain clang-19 build,
  (b) exact: every function of the merged profile is exact,
  (c) tools: `pathprof show --json`, `decode` and `export --format=sample-text` exit 0,
  (d) counts: segment counts (entries, branches and returns of straight-line block chains, segments.py) equal
      edge mode's (projects whose tests are deterministic).
See test-suite/corpus/README.md. Only the Python 3 standard library is used.
"""

import argparse
import fcntl
import fnmatch
import glob
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import segments

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
MODES = ["edge", "block", "path", "context", "piecewise", "lto-edge", "lto", "trace", "icache", "use"]
QUICK_MODES = ["edge", "block", "path", "context", "piecewise", "lto", "trace", "icache", "use"]
# What each mode passes to the wrapper; lto is whole-program context mode. lto-edge (whole-program edge mode)
# is only the baseline of lto's count check: the LTO pass sees the IR after the pre-link optimisations, so
# per-translation-unit edge counts are not comparable with it.
MODE_FLAGS = {
    "edge": ["--pathprof-mode=edge"],
    "block": ["--pathprof-mode=block"],
    "path": ["--pathprof-mode=path"],
    "context": ["--pathprof-mode=context"],
    "piecewise": ["--pathprof-mode=piecewise"],
    "lto-edge": ["--pathprof-mode=edge", "--pathprof-lto"],
    "lto": ["--pathprof-mode=context", "--pathprof-lto"],
    "trace": ["--pathprof-mode=trace"],
    "icache": ["--pathprof-mode=icache"],
    "use": [],  # --pathprof-use=<edge mode's profile of the test run>, added by run_variant
}
# Check (d) compares each mode's segment counts with those of its edge-mode baseline (block mode, which measures
# block counts only: every block's count).
BASELINE = {"block": "edge", "path": "edge", "context": "edge", "piecewise": "edge", "lto": "lto-edge",
            "trace": "edge", "use": "edge"}  # use: not a count baseline, the profile it builds with
CHECKS = ["build", "tests", "exact", "tools", "counts", "use"]
TRACE_MAX = "64M"  # trace mode: PATHPROF_TRACE_MAX of the test run (per process)
TOOL_TIMEOUT = 1200


def log(msg):
    print(f"[corpus {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---------------------------------------------------------------------------------------------------------
# Sources


def have_deb_src():
    """True when apt has a deb-src entry (one-line or deb822 format)."""
    files = glob.glob("/etc/apt/sources.list.d/*.sources") + glob.glob("/etc/apt/sources.list.d/*.list")
    files.append("/etc/apt/sources.list")
    for f in files:
        try:
            text = Path(f).read_text()
        except OSError:
            continue
        if re.search(r"^\s*deb-src\s", text, re.M) or re.search(r"^Types:.*\bdeb-src\b", text, re.M):
            return True
    return False


def sudo():
    return [] if os.geteuid() == 0 else ["sudo"]


def ensure_apt(manifest, projects):
    """Adds the deb-src twin of the machine's apt source if there is none, and installs the build
    dependencies the chosen projects list (only the missing ones)."""
    updated = False
    if not have_deb_src():
        src = Path("/etc/apt/sources.list.d/debian.sources")
        if not src.exists():
            sys.exit("corpus: no deb-src entry and no /etc/apt/sources.list.d/debian.sources to copy")
        text = re.sub(r"^Types: deb$", "Types: deb-src", src.read_text(), flags=re.M)
        log("adding /etc/apt/sources.list.d/pathprof-corpus-src.sources (deb-src twin of debian.sources)")
        subprocess.run(sudo() + ["tee", "/etc/apt/sources.list.d/pathprof-corpus-src.sources"], input=text,
                       text=True, stdout=subprocess.DEVNULL, check=True)
        subprocess.run(sudo() + ["apt-get", "update", "-qq"], check=True)
        updated = True
    want = sorted({p for name in projects for p in manifest[name].get("apt", [])} | {"lld-19", "llvm-19"})
    missing = []
    for pkg in want:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True)
        if "install ok installed" not in r.stdout:
            missing.append(pkg)
    if missing:
        if not updated:
            subprocess.run(sudo() + ["apt-get", "update", "-qq"], check=True)
            updated = True
        log(f"installing {' '.join(missing)}")
        subprocess.run(sudo() + ["apt-get", "install", "-y", "-qq", *missing], check=True,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}, stdout=subprocess.DEVNULL)
    return updated


def suite_apt_options(work, suite):
    """apt options and environment of a private apt state for another Debian suite's sources (`suite` in the
    manifest: a package bookworm does not have). Nothing of the machine's apt configuration changes: its own
    lists stay as they are; the one deb-src line uses the URI of debian.sources' first entry. TMPDIR is a
    directory of the state's own that apt's unprivileged `_apt` user can write: the signature check writes a
    temporary file there, and /tmp need not be world-writable (on this machine it was 0755 at times: "Couldn't
    create temporary file /tmp/apt.conf.… for passing config to apt-key", then "not signed")."""
    base = work / f"apt-{suite}"
    for d in ("lists/partial", "cache/archives/partial", "parts", "tmp"):
        (base / d).mkdir(parents=True, exist_ok=True)
    os.chmod(base / "tmp", 0o1777)
    uri = "http://deb.debian.org/debian"
    src = Path("/etc/apt/sources.list.d/debian.sources")
    if src.exists():
        m = re.search(r"^URIs:\s*(\S+)", src.read_text(), re.M)
        if m:
            uri = m.group(1)
    (base / "sources.list").write_text(f"deb-src {uri} {suite} main\n")
    return (["-o", f"Dir::Etc::SourceList={base / 'sources.list'}", "-o", f"Dir::Etc::SourceParts={base / 'parts'}",
             "-o", f"Dir::State::Lists={base / 'lists'}", "-o", f"Dir::Cache={base / 'cache'}"],
            {**os.environ, "TMPDIR": str(base / "tmp")})


def fetch_source(work, name, entry, apt_updated):
    """Downloads the Debian source package (release suite, or the manifest's `suite`) once; returns the
    upstream tarball."""
    dest = work / "sources" / entry["package"]
    dest.mkdir(parents=True, exist_ok=True)
    suite = entry.get("suite", "bookworm")

    def tarball():
        found = [p for p in dest.glob("*.orig.tar.*") if not p.name.endswith(".asc")]
        return found[0] if found else None

    if tarball() is None:
        os.chmod(dest, 0o777)  # apt's _apt user downloads into it when it can
        opts, env = ([], None) if suite == "bookworm" else suite_apt_options(work, suite)
        cmd = ["apt-get", *opts, "source", "--download-only", f"{entry['package']}/{suite}"]
        r = subprocess.run(cmd, cwd=dest, capture_output=True, text=True, env=env)
        if r.returncode != 0 and (opts or not apt_updated):
            update = sudo() + (["env", f"TMPDIR={env['TMPDIR']}"] if env and sudo() else []) + ["apt-get", *opts, "update", "-qq"]
            subprocess.run(update, check=False, env=env)
            r = subprocess.run(cmd, cwd=dest, capture_output=True, text=True, env=env)
        # Only the upstream tarball is used, and apt verified it against the .dsc before keeping it: a package
        # whose Debian diff the mirror no longer serves (pixman's 0.42.2-1.diff.gz) still builds.
        if tarball() is None:
            raise RuntimeError(f"apt-get source {entry['package']}/{suite} failed: {r.stderr.strip()[-400:]}")
        if r.returncode != 0:
            log(f"{name}: apt-get source failed after the upstream tarball was fetched; building from it")
    return tarball()


def extract(tarball, tree):
    """Unpacks the upstream tarball into `tree` (its single top-level directory becomes `tree`)."""
    if tree.exists():
        shutil.rmtree(tree)
    tmp = tree.with_name(tree.name + ".unpack")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    subprocess.run(["tar", "-xf", str(tarball), "-C", str(tmp)], check=True)
    tops = list(tmp.iterdir())
    top = tops[0] if len(tops) == 1 and tops[0].is_dir() else tmp
    top.rename(tree)
    if tmp.exists():
        shutil.rmtree(tmp)


# ---------------------------------------------------------------------------------------------------------
# Compilers


def make_compilers(pdir, dist, variant, extra_flags):
    """Writes cc/c++ scripts for one project and variant, so every build system sees one compiler path
    (the mode flags and the project's own pathprof flags, e.g. --pathprof-atomic, baked in)."""
    d = pdir / "bin" / variant
    d.mkdir(parents=True, exist_ok=True)
    for name, plain, wrapped in [("cc", "clang-19", "pathprof-clang"), ("c++", "clang++-19", "pathprof-clang++")]:
        if variant == "plain":
            cmd = plain
        else:
            cmd = " ".join([str(dist / "bin" / wrapped)] + MODE_FLAGS[variant] + list(extra_flags))
        p = d / name
        p.write_text(f'#!/bin/sh\nexec {cmd} "$@"\n')
        p.chmod(0o755)
    return d


def build_env(bindir, jobs):
    cc, cxx = str(bindir / "cc"), str(bindir / "c++")
    tools = {"AR": "llvm-ar-19", "RANLIB": "llvm-ranlib-19", "NM": "llvm-nm-19"}
    cmake = (f"-DCMAKE_C_COMPILER={cc} -DCMAKE_CXX_COMPILER={cxx} -DCMAKE_AR=/usr/bin/llvm-ar-19 "
             f"-DCMAKE_RANLIB=/usr/bin/llvm-ranlib-19 -DCMAKE_BUILD_TYPE=Release")
    env = dict(os.environ)
    for var in ["PATHPROF_MODE", "PATHPROF_LTO", "PATHPROF_FILE", "CFLAGS", "CXXFLAGS", "LDFLAGS", "MAKEFLAGS"]:
        env.pop(var, None)
    env.update(tools)
    env.update({"CC": cc, "CXX": cxx, "JOBS": str(jobs), "CMAKE_ARGS": cmake, "LC_ALL": "C.UTF-8"})
    return env


def run_step(cmd, cwd, env, logfile, timeout):
    """Runs one manifest command under bash in a session of its own; returns (exit status, seconds). Never
    raises on failure. On a timeout, or when the corpus itself is interrupted, the step's whole process group
    is killed: a test program left running would go on writing into the next run's profile (seen: a 57 s
    test-regex of an interrupted sed lto run doubled the next run's counts of that program)."""
    start = time.monotonic()
    with open(logfile, "ab") as f:
        f.write(f"$ {cmd}\n".encode())
        f.flush()
        p = subprocess.Popen(["bash", "-c", cmd], cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        rc = None
        try:
            rc = wait_unreaped(p.pid, timeout)
            if rc is None:
                f.write(f"\n[corpus] timeout after {timeout} s\n".encode())
        finally:
            # What the step left behind (daemons; all of it on a timeout or an interrupt). The leader is not
            # reaped yet, so its pid, the group's id, cannot have been reused.
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            p.wait()
    return (124 if rc is None else p.returncode), time.monotonic() - start


def wait_unreaped(pid, timeout):
    """Waits until the child `pid` has exited, without reaping it; None on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return 0
        time.sleep(0.2)
    return None


# ---------------------------------------------------------------------------------------------------------
# Test results

AUTOMAKE = re.compile(r"^(PASS|FAIL|XFAIL|XPASS|SKIP|ERROR): (\S.*?)\s*$")
CTEST = re.compile(r"Test\s+#\d+: (\S+) \.*\s*(\*\*\*)?(Passed|Failed|Skipped|Not Run|Timeout|Exception|"
                   r"\*\*\*\w+)?")
TAP = re.compile(r"^(not ok|ok) \d+ - (.*?)(?:\s+#\s*(SKIP|TODO)\b.*)?$")
# GNU autotest's summary lines: "  7: name of the test   ok", "skipped (why)", "FAILED (file:line)",
# "expected failure (…)", "UNEXPECTED PASS".
AUTOTEST = re.compile(r"^\s*(\d+): (.*?)\s+(ok|skipped|FAILED|expected failure|UNEXPECTED PASS)(?: \(.*\))?\s*$")
# e2fsprogs' tests: "NAME: DESCRIPTION: ok", ": failed", ": skipped (why)" (a few without the description, one
# "…: skip"), run in parallel, so a line may follow another test's progress output (mke2fs's, ending in
# backspaces): searched, not matched at the line's start.
E2FSPROGS = re.compile(r"(?<![\w/.-])([a-z]_[A-Za-z0-9_]+): (?:.*: )?(ok|failed|skip)")


def parse_results(kind, text, tree, entry, rc):
    """Per-test status {name: status} from the test log (or the harness's own files)."""
    res = {}

    def add(name, status):
        key, n = name, 2
        while key in res:
            key, n = f"{name}#{n}", n + 1
        res[key] = status

    if isinstance(kind, list):
        for k in kind:
            res.update(parse_results(k, text, tree, entry, rc))
    elif kind == "automake":
        for line in text.splitlines():
            m = AUTOMAKE.match(line)
            if m:
                add(m.group(2), m.group(1))
    elif kind == "check-them":
        # m4's checks/check-them: "Checking ./NAME" per example, then "Skipped checks were:" and "Failed checks
        # were:" each followed by an indented line of names (a failure may carry a suffix: ./198.sysval:err).
        listed, section = {}, None
        for line in text.splitlines():
            if line.startswith("Checking ./"):
                listed[line.split()[1]] = "PASS"
            elif line in ("Skipped checks were:", "Failed checks were:"):
                section = "SKIP" if line.startswith("Skipped") else "FAIL"
            elif section and line.startswith("  "):
                for name in line.split():
                    listed[name.split(":")[0]] = section
            else:
                section = None
        for name, status in listed.items():
            add(f"checks/{name[2:]}", status)
    elif kind == "autotest":
        for line in text.splitlines():
            m = AUTOTEST.match(line)
            if m:
                add(f"{m.group(1)} {m.group(2)}", m.group(3).upper())
    elif kind == "ctest":
        for line in text.splitlines():
            m = CTEST.search(line)
            if m:
                status = (m.group(3) or "Failed").strip("*")
                add(m.group(1), status)
    elif kind == "tap":
        for line in text.splitlines():
            m = TAP.match(line.strip())
            if m:
                add(m.group(2), m.group(3) or ("PASS" if m.group(1) == "ok" else "FAIL"))
    elif kind == "meson":
        logfile = tree / entry.get("results_file", "_build/meson-logs/testlog.json")
        if logfile.exists():
            for line in logfile.read_text().splitlines():
                try:
                    t = json.loads(line)
                except ValueError:
                    continue
                add(t.get("name", "?"), t.get("result", "?"))
    elif kind == "gawk":
        # gawk's test/Makefile runs every test; a failing one leaves test/_NAME behind and is named in the log.
        names = re.findall(r"^([A-Za-z0-9_.+-]+)$", text, re.M)
        failed = {p.name[1:] for p in (tree / "test").glob("_*")}
        for n in names:
            add(n, "FAIL" if n in failed else "PASS")
        for n in sorted(failed - set(names)):
            add(n, "FAIL")
    elif kind == "e2fsprogs":
        for line in text.splitlines():
            m = E2FSPROGS.search(line)
            if m:
                add(m.group(1), {"ok": "PASS", "failed": "FAIL"}.get(m.group(2), "SKIP"))
    elif kind == "steps":
        pass  # filled in by the caller: one result per test command
    else:
        add("test-suite", "PASS" if rc == 0 else f"FAIL({rc})")
    return res


# ---------------------------------------------------------------------------------------------------------
# Profiles


def reason_class(text):
    """A reason with its numbers and quoted names blanked, so equal causes group together."""
    t = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", "'…'", text)
    return re.sub(r"-?\d+", "N", t)


def analyse_profile(show, tree):
    """Counts functions and inexact ones, groups the reasons, and derives each function's segment counts per
    module that holds a copy (inline copies, one copy per binary under LTO; see segments.py)."""
    funcs = show.get("functions", [])
    inexact = [f for f in funcs if not f.get("exact", True)]
    classes = {}
    for f in inexact:
        for r in f.get("inexact_reasons") or ["(no reason given)"]:
            c = classes.setdefault(reason_class(r), {"count": 0, "samples": []})
            c["count"] += 1
            c["samples"].append({"function": f.get("name"), "module": f.get("module"), "file": f.get("file"),
                                 "blocks": len(f.get("blocks", [])), "reason": r})
    for c in classes.values():  # keep the smallest functions: the easiest reproductions
        c["samples"] = sorted(c["samples"], key=lambda s: (s["blocks"], s["function"] or ""))[:5]
    agg = segments.aggregate(funcs, str(tree) + "/")
    return {"functions": len(funcs), "inexact": len(inexact), "reasons": classes,
            "inexact_functions": sorted({f"{f.get('module')}::{f.get('name')}" for f in inexact})[:200]}, agg


def is_system_header(key):
    """A function defined in a system header (`/usr/...`): libstdc++'s inline functions. How often they run
    depends on the build's inlining of libstdc++'s `extern template` bodies (available_externally: inlined, their
    calls run this build's instrumented copies; not inlined, the shared library's uninstrumented ones), and
    the instrumentation's size moves those decisions, so each mode's build runs them a different number of
    times. Every count is still exact for the build that ran; they are just not the same program's."""
    return key.startswith("/usr/")


def compare_counts(agg, edge, skip=(), kept_calls=(), apart=0):
    """Check (d): functions whose segment counts differ from the baseline's (segments.compare), functions of
    system headers counted apart (`system`, see `is_system_header`). `skip`: functions the manifest documents
    as behaving differently from run to run. `kept_calls` and `apart` (trace mode): see
    `kept_call_explanation` and `apart_explanation`."""
    kept, fewer = kept_call_explanation(set(kept_calls)), apart_explanation(apart)
    return segments.compare(agg, edge, skip, is_system_header, lambda k, a, e: kept(k, a, e) or fewer(k, a, e))


def apart_explanation(apart):
    """A counting-mode run whose signal handler did not return is written apart (`FILE.<pid>.incomplete`, not
    in the baseline's profile: its counts cannot be vouched for), while trace mode reads that run's trace
    exactly (m4's stack-overflow test: c-stack's handler `_exit`s). With `apart` such runs in the edge
    baseline, a function the traces saw entered more often than the baseline is explained by them; one with
    fewer or equal entries and other counts still fails."""
    def explain(key, a, e):
        if apart and (a.get("entry") or 0) > (e.get("entry") or 0):
            return f"the edge baseline lacks {apart} runs written apart (a signal handler did not return)"
        return None
    return explain


def kept_call_explanation(kept):
    """Trace mode withdraws the `const`/`pure` promise of every call from traced code (the callee writes the
    thread's trace state), so its build keeps each such call where the baseline's optimiser drops an unused
    one or merges repeated ones (sed's gnulib tests: `(void) gl_sockets_startup (…)` in 5 of 6 test programs,
    13 calls of `gl_locale_name_default` in test-localename: 6 vs 1 and 13 vs 1 entries). The traces name
    those callees (`trace --summary --json`, `kept_calls`). A function differing from the baseline is
    explained only when it is one of them and ran at least as often in the trace build — the optimiser only
    removes such calls — so a real miscount elsewhere, or fewer entries, still fails."""
    def explain(key, a, e):
        name = key.rsplit("::", 1)[-1]
        if name in kept and (a.get("entry") or 0) > (e.get("entry") or 0):
            return "a const/pure function: the trace build keeps every call, the baseline's merges or drops some"
        return None
    return explain


def counts_check(cmp_, base):
    """The verdict of check (d): failed when a function differs or cannot be compared (different code in the
    two builds: nothing says its counts agree)."""
    bad = []
    if cmp_["mismatched"]:
        bad.append(f"{cmp_['mismatched']} of {cmp_['compared']} functions differ from {base} mode")
    if cmp_.get("not_comparable"):
        bad.append(f"{cmp_['not_comparable']} not comparable (compiled to other code than in {base} mode)")
    return {"ok": not bad, "why": "; ".join(bad)}


def run_tool(args, timeout=TOOL_TIMEOUT, stdout=None):
    start = time.monotonic()
    try:
        r = subprocess.run(args, stdout=stdout or subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout)
        rc, err = r.returncode, r.stderr.decode(errors="replace").strip()
    except subprocess.TimeoutExpired:
        rc, err = 124, f"timeout after {timeout} s"
    return rc, round(time.monotonic() - start, 2), err[-600:]


# ---------------------------------------------------------------------------------------------------------
# One project in one variant


def run_variant(ctx, name, entry, variant):
    work, dist = ctx["work"], ctx["dist"]
    pdir = work / name
    vdir = pdir / variant
    if vdir.exists():
        shutil.rmtree(vdir)
    vdir.mkdir(parents=True)
    tree = pdir / "tree"  # the same path in every variant, so recorded source paths agree
    result = {"project": name, "variant": variant, "checks": {}, "notes": []}
    try:
        tarball = fetch_source(work, name, entry, ctx["apt_updated"])
    except RuntimeError as e:
        result["checks"]["build"] = {"ok": False, "why": str(e)}
        return result
    extract(tarball, tree)
    extra = entry.get("pathprof_flags", [])
    if variant == "use":
        # Use mode optimises with edge mode's profile of this project's test run: the same sources and flags,
        # so every function of the profile must match (none stale). The project's pathprof_flags are about
        # instrumenting, which a use build does not do.
        edge_profiles = test_profiles(pdir / "edge")
        if not edge_profiles:
            result["checks"]["build"] = {"ok": False, "why": "no edge-mode profile of the test run to use"}
            return result
        use_file = pdir / "use-input.pathprof"
        shutil.copyfile(edge_profiles[-1], use_file)
        extra = [f"--pathprof-use={use_file}"]
    env = build_env(make_compilers(pdir, dist, variant, extra), ctx["jobs"])
    env["PATHPROF_FILE"] = str(vdir / "build.pathprof")  # instrumented programs run while building
    env["PATHPROF_TRACE"] = "/dev/null"  # trace mode: the build's runs of instrumented programs trace nowhere
    t0 = time.monotonic()
    for step in ["configure", "build"]:
        cmd = entry.get(step)
        if not cmd:
            continue
        # Use mode's summary per module (`pathprof: use: module=… annotated=… mismatched=…`), in the build's log
        # only: configure scripts may take any compiler output for a failure.
        step_env = {**env, "PATHPROF_STATS": "1"} if variant == "use" and step == "build" else env
        rc, _ = run_step(cmd, tree, step_env, vdir / f"{step}.log", entry.get("build_timeout", 1800))
        if rc != 0:
            result["checks"]["build"] = {"ok": False, "why": f"{step} exited {rc} (see {vdir / (step + '.log')})"}
            result["build_s"] = round(time.monotonic() - t0, 1)
            finish_tree(ctx, tree, pdir, variant)
            return result
    result["build_s"] = round(time.monotonic() - t0, 1)
    result["checks"]["build"] = {"ok": True}

    # Whole-program builds write one file per program (%m): every program's merged module is named
    # ld-temp.o, so in one shared file each program's records replace the previous program's as a stale build.
    # The directory is new for each invocation: a process of an earlier run still alive (or a stray from
    # another invocation) has the earlier directory in its PATHPROF_FILE, gone with the earlier vdir, so it
    # cannot add its counts to this run's.
    per_program = variant.startswith("lto")
    run_dir = vdir / f"run-{os.getpid()}-{time.time_ns()}"
    run_dir.mkdir()
    result["profile_dir"] = run_dir.name
    profile = run_dir / ("test-%m.pathprof" if per_program else "test.pathprof")
    env["PATHPROF_FILE"] = str(profile)
    # Trace mode: one file per process (%p), so forked and exec'd processes each write their own.
    env["PATHPROF_TRACE"] = str(run_dir / "test-%p.pathtrace")
    # Disk stays bounded: sed's test-regex alone wrote a 4.7 GB trace. A capped process's trace is an exact
    # prefix, reported as such, and its functions are left out of the count check.
    env["PATHPROF_TRACE_MAX"] = TRACE_MAX
    env.update(entry.get("test_env", {}))
    tests = entry["test"] if isinstance(entry["test"], list) else [entry["test"]]
    test_log = vdir / "test.log"
    t0 = time.monotonic()
    status, rc = {}, 0
    for i, cmd in enumerate(tests):
        rc_i, _ = run_step(cmd, tree, env, test_log, entry.get("test_timeout", 1800))
        rc = rc or rc_i
        if entry["results"] == "steps":
            status[entry.get("step_names", [])[i] if i < len(entry.get("step_names", [])) else f"step{i + 1}"] = \
                "PASS" if rc_i == 0 else f"FAIL({rc_i})"
    result["test_s"] = round(time.monotonic() - t0, 1)
    result["test_exit"] = rc
    text = test_log.read_text(errors="replace")
    if entry["results"] != "steps":
        status = parse_results(entry["results"], text, tree, entry, rc)
    result["tests"] = status
    result["tests_summary"] = summarize_tests(status)
    save_test_logs(tree, vdir / "logs", entry.get("test_logs", []))
    (vdir / "tests.json").write_text(json.dumps(status, indent=1, sort_keys=True))
    profiles = [] if variant in ("plain", "trace", "icache", "use") else test_profiles(vdir)
    if not profiles:
        finish_tree(ctx, tree, pdir, variant)
    if variant == "plain":
        return result
    if variant in ("trace", "icache"):
        check_traces(ctx, name, entry, result, vdir, run_dir, tree)
        return result
    if variant == "use":
        check_use(result, vdir)
        return result

    if not profiles:
        result["checks"]["tools"] = {"ok": False, "why": "the test suite wrote no profile"}
        return result
    result["profile_files"] = len(profiles)
    result["profile_bytes"] = sum(p.stat().st_size for p in profiles)
    pp = str(dist / "bin" / "pathprof")
    show_json = vdir / "show.json"
    no_paths = variant in ("edge", "block", "lto-edge")  # profiles without paths: decode refuses them by design
    times = {"show_s": 0.0, "decode_s": None if no_paths else 0.0, "export_s": 0.0}
    errors, functions, not_profiled = [], [], {}
    for prof in profiles:
        with open(show_json, "wb") as out:
            rc, secs, err = run_tool([pp, "show", "--json", str(prof)], stdout=out)
        times["show_s"] += secs
        ran = True  # whether a function of this profile ran; unknown (so assumed) unless show says otherwise
        if rc != 0:
            errors.append(f"show exited {rc}: {last_line(err)}")
        else:
            try:
                shown = json.loads(show_json.read_text())
                ran = any(f.get("entry_count") != 0 for f in shown.get("functions", []))
                functions += shown.get("functions", [])
                for f in shown.get("not_profiled", []):
                    not_profiled[f"{f.get('module')}::{f.get('name')}"] = f.get("reason")
            except ValueError as e:
                errors.append(f"show --json printed invalid JSON: {e}")
        if not no_paths:
            rc, secs, err = run_tool([pp, "decode", str(prof)])
            times["decode_s"] += secs
            if rc != 0:
                errors.append(f"decode exited {rc}: {last_line(err)}")
        rc, secs, err = run_tool([pp, "export", "--format=sample-text", str(prof), "-o", str(vdir / "sample.prof")])
        times["export_s"] += secs
        # A profile in which no function ran (the whole-program variants write one per program: libzip's
        # preloaded nonrandomopen.so, whose one function only the encryption tests call, skipped without a
        # crypto library) has nothing to export, and export says so with exit status 2 by design (an empty
        # file is no sample profile).
        nothing_ran = rc == 2 and not ran and "nothing to export" in err
        if rc != 0 and not nothing_ran:
            errors.append(f"export exited {rc}: {last_line(err)}")
        errors += run_views(pp, prof, vdir, result)
    # The views read the project's sources: the tree stays until they ran.
    finish_tree(ctx, tree, pdir, variant)
    result["times"] = {k: (round(v, 2) if v is not None else None) for k, v in times.items()}
    result["checks"]["tools"] = {"ok": not errors, "why": "; ".join(dict.fromkeys(errors))}
    if not ctx["keep"]:
        show_json.unlink(missing_ok=True)
        (vdir / "sample.prof").unlink(missing_ok=True)
        (vdir / "coverage.info").unlink(missing_ok=True)
        shutil.rmtree(vdir / "report", ignore_errors=True)
    if not functions and errors:
        return result
    summary, agg = analyse_profile({"functions": functions}, tree)
    # Runs whose signal handler did not return, written apart (`FILE.<pid>.incomplete`): not in these counts.
    summary["written_apart"] = len(list(run_dir.glob("*.incomplete")))
    # Functions the pass left uninstrumented (with its reasons): listed, not a failure — nothing claims a count.
    summary["not_profiled"] = len(not_profiled)
    summary["not_profiled_functions"] = dict(sorted(not_profiled.items())[:200])
    result["profile"] = summary
    store_counts(vdir, agg)
    result["checks"]["exact"] = {
        "ok": summary["inexact"] == 0 and summary["functions"] > 0,
        "why": f"{summary['inexact']} of {summary['functions']} inexact" if summary["inexact"] else
        ("" if summary["functions"] else "no function in the profile")}
    if variant in BASELINE:
        base_file = pdir / BASELINE[variant] / "blocks.json.gz"
        result["counts_baseline"] = BASELINE[variant]
        # A baseline from an earlier invocation is used only when this one asked for single modes (--mode):
        # --quick builds no lto-edge, and an old one may come from another commit.
        fresh = (name, BASELINE[variant]) in ctx["ran"] or ctx["partial"]
        base = stored_counts(pdir / BASELINE[variant], dist) if base_file.exists() and fresh else None
        if base is not None:
            cmp_ = compare_counts(agg, base, set(entry.get("nondeterministic_functions", [])))
            result["counts"] = cmp_
            if entry.get("deterministic", False):
                result["checks"]["counts"] = counts_check(cmp_, BASELINE[variant])
    return result


def run_views(pp, prof, vdir, result):
    """The views users open first, on the real profile: `coverage --lcov` and `report --html` (both read the
    sources, which are still in the tree). Returns their failures; how many of the project's own sources the
    report could not find is recorded (`views.sources_not_found`), not a failure: some are generated and gone."""
    errors, views = [], result.setdefault("views", {"seconds": 0.0, "sources_not_found": 0, "not_found": []})
    for args in (["coverage", "--lcov", str(vdir / "coverage.info")], ["report", "--html", "-o", str(vdir / "report")]):
        rc, secs, err = run_tool([pp, *args, str(prof)])
        views["seconds"] = round(views["seconds"] + secs, 2)
        if rc != 0:
            errors.append(f"{args[0]} exited {rc}: {last_line(err)}")
        m = re.search(r"warning: (\d+) source files? not found \(.*?\): (.*)", err)
        if m and args[0] == "report":
            views["sources_not_found"] += int(m.group(1))
            views["not_found"] = (views["not_found"] + [m.group(2)[:300]])[:5]
    return errors


def check_use(result, vdir):
    """Use mode's check: the build annotated functions and found none stale (its modules' summaries in the
    build log), and the tests (checked above) behave as in the plain build."""
    totals = {"modules": 0, "annotated": 0, "mismatched": 0, "missing": 0}
    log_text = (vdir / "build.log").read_text(errors="replace")
    for m in re.finditer(r"pathprof: use: module=\S* annotated=(\d+) mismatched=(\d+) missing=(\d+)", log_text):
        totals["modules"] += 1
        for k, v in zip(["annotated", "mismatched", "missing"], m.groups()):
            totals[k] += int(v)
    result["use"] = totals
    why = []
    if not totals["annotated"]:
        why.append("no function annotated")
    if totals["mismatched"]:
        why.append(f"{totals['mismatched']} functions stale (their CFG differs from the profile's)")
    result["checks"]["use"] = {"ok": not why, "why": "; ".join(why)}


def read_trace(pp, f):
    """`pathprof trace --summary --json` of one trace file: (exit status, seconds, error, parsed JSON or None)."""
    rc, secs, err, out = 0, 0.0, "", None
    start = time.monotonic()
    try:
        r = subprocess.run([pp, "trace", "--summary", "--json", str(f)], capture_output=True, timeout=TOOL_TIMEOUT)
        rc, err = r.returncode, r.stderr.decode(errors="replace").strip()[-600:]
        if rc == 0:
            try:
                out = json.loads(r.stdout)
            except ValueError as e:
                rc, err = 1, f"trace --summary --json printed invalid JSON: {e}"
    except subprocess.TimeoutExpired:
        rc, err = 124, f"timeout after {TOOL_TIMEOUT} s"
    return rc, time.monotonic() - start, err, out


def trace_status_class(status):
    """A thread status's class: complete, cut short, or incomplete (with the reason, numbers blanked)."""
    if status == "complete" or status.startswith("complete (a fork child"):
        return "complete"
    if status.startswith("cut short"):
        return "cut short"
    if "going on where a signal handler left it through siglongjmp" in status:
        # A window from the landing (README, Tracing: signal handlers); how it ended follows the ';'.
        return "resumed after a signal handler's siglongjmp"
    return "incomplete: " + reason_class(status.split(";")[0].split(" inside ")[0].removeprefix("incomplete: "))


def check_traces(ctx, name, entry, result, vdir, run_dir, tree):
    """Trace mode's checks: (c) every trace file of the test run reads back (`pathprof trace --summary`), with
    its threads' statuses counted; (d) the block and edge counts derived from the traces, summed over the
    processes (each process writes its own file), equal edge mode's as segment counts — for functions of files
    whose every thread is complete or cut short (an incomplete thread may have run anything after its stop).
    The files are deleted once all are read (a fork child's file is read with its parent's; disk stays bounded
    by one test run's traces)."""
    from concurrent.futures import ThreadPoolExecutor

    pp = str(ctx["dist"] / "bin" / "pathprof")
    files = sorted(run_dir.glob("test-*.pathtrace*"))
    info = {"files": len(files), "bytes": 0, "largest": 0, "threads": {}, "bits": 0, "branches": 0,
            "blocks": 0, "read_s": 0.0, "inexact_files": 0}
    if not files:
        result["checks"]["tools"] = {"ok": False, "why": "the test suite wrote no trace"}
        result["trace"] = info
        return
    sizes = {f: f.stat().st_size for f in files}
    info["bytes"] = sum(sizes.values())
    info["largest"] = max(sizes.values())
    errors, traced, unvouched, kept, agg = [], set(), set(), set(), {}
    prefix = str(tree) + "/"

    def one(f):
        return f, read_trace(pp, f)

    with ThreadPoolExecutor(max_workers=max(1, ctx["jobs"])) as pool:
        for f, (rc, secs, err, out) in pool.map(one, files):
            info["read_s"] += secs
            if rc != 0 or out is None:
                errors.append(f"{f.name}: trace exited {rc}: {last_line(err)}")
                continue
            for t in out.get("threads", []):
                c = trace_status_class(t.get("status", "?"))
                info["threads"][c] = info["threads"].get(c, 0) + 1
                if "(a fork child" not in t.get("status", ""):
                    # A fork child's bits include its parents' (spliced from their files), its branches not.
                    info["bits"] += t.get("bits", 0)
                    info["branches"] += t.get("branches", 0)
                info["blocks"] += t.get("blocks", 0)
            kept |= set(out.get("kept_calls", []))
            file_traced = {f"{file.replace(prefix, '')}::{fname}" for file, fname in out.get("traced", [])}
            traced |= file_traced
            fs = out.get("functions", [])
            if any(not fn.get("exact", True) for fn in fs):
                info["inexact_files"] += 1
                # What ran after a thread's stop (or the size cap) is in no summary: every traced function of
                # this file may be short (sed's finish_program runs last, after the cap of test-regex's trace).
                unvouched |= file_traced
            for fn in fs:
                fn["entry_count"] = fn.get("entries")
            segments.aggregate(fs, prefix, agg)
    if not ctx["keep"]:
        for f in files:
            f.unlink(missing_ok=True)
    info["read_s"] = round(info["read_s"], 2)
    info["kept_calls"] = sorted(kept)
    result["trace"] = info
    result["profile_files"] = len(files)
    result["profile_bytes"] = info["bytes"]
    result["times"] = {"show_s": info["read_s"], "decode_s": None, "export_s": None}
    result["checks"]["tools"] = {"ok": not errors, "why": "; ".join(errors[:6]) + (" …" if len(errors) > 6 else "")}
    for k in unvouched:
        agg.setdefault(k, {"exact": True, "entry": 0, "copies": {}})["exact"] = False
    inexact = sorted(k for k, a in agg.items() if not a["exact"])
    result["profile"] = {"functions": len(agg), "inexact": len(inexact), "reasons": {},
                         "inexact_functions": inexact[:200]}
    store_counts(vdir, agg)
    if result["variant"] == "icache":
        # Mode icache traces the optimised IR (after inlining): its counts have no baseline to equal.
        return
    base_file = ctx["work"] / name / "edge" / "blocks.json.gz"
    result["counts_baseline"] = "edge"
    fresh = (name, "edge") in ctx["ran"] or ctx["partial"]
    base = stored_counts(ctx["work"] / name / "edge", ctx["dist"]) if base_file.exists() and fresh else None
    if base is None:
        return
    skip = set(entry.get("nondeterministic_functions", []))
    apart = len(list((ctx["work"] / name / "edge").glob("run-*/*.incomplete")))
    cmp_ = compare_counts(agg, base, skip, kept, apart)
    # Functions edge mode saw run that no trace shows: only telling when every trace is vouched for (an
    # incomplete thread's functions after its stop are in no summary).
    ran = [k for k, e in base.items() if k not in agg and k in traced and k not in skip and not is_system_header(k)
           and e["exact"] and any(seg[0] > 0 for c in e["copies"].values() for seg in c["counts"])]
    cmp_["untraced"] = len(set(base) - traced)
    cmp_["missing"] = len(ran)
    cmp_["missing_samples"] = ran[:10]
    result["counts"] = cmp_
    if entry.get("deterministic", False):
        verdict = counts_check(cmp_, "edge")
        if ran and not info["inexact_files"]:
            why = f"{len(ran)} functions ran in edge mode but in no trace (e.g. {', '.join(ran[:3])})"
            verdict = {"ok": False, "why": "; ".join(x for x in [verdict["why"], why] if x)}
        result["checks"]["counts"] = verdict


def test_profiles(vdir):
    """The test run's profile files of one variant (in the run directory; directly in vdir before it)."""
    found = []
    for d in sorted(vdir.glob("run-*")) + [vdir]:
        found += sorted(p for p in d.glob("test*.pathprof"))
    return found


def store_counts(vdir, agg):
    with gzip.open(vdir / "blocks.json.gz", "wt") as f:
        json.dump({"format": segments.FORMAT, "functions": agg}, f)


def stored_counts(vdir, dist):
    """The segment counts stored by a variant's run (blocks.json.gz); counts stored in an older format are
    derived anew from the variant's profiles (with this dist's `pathprof show`) and stored. None when
    neither is there."""
    f = vdir / "blocks.json.gz"
    if f.exists():
        with gzip.open(f, "rt") as fh:
            data = json.load(fh)
        if isinstance(data, dict) and data.get("format") == segments.FORMAT:
            return data["functions"]
    functions = []
    for prof in test_profiles(vdir):
        r = subprocess.run([str(dist / "bin" / "pathprof"), "show", "--json", str(prof)], capture_output=True)
        if r.returncode != 0:
            return None
        functions += json.loads(r.stdout).get("functions", [])
    if not functions:
        return None
    log(f"{vdir}: segment counts derived anew from the stored profiles")
    # The tree the profile recorded may lie elsewhere (a work directory moved or copied).
    pattern = rf"(/{re.escape(vdir.parent.name)}/tree/).*"
    prefixes = {re.sub(pattern, r"\1", x) for fn in functions
                for x in (fn.get("file") or "", fn.get("module_output") or "") if f"/{vdir.parent.name}/tree/" in x}
    agg = segments.aggregate(functions, sorted(prefixes, key=len)[0] if prefixes else str(vdir.parent / "tree") + "/")
    store_counts(vdir, agg)
    return agg


# The test harnesses' own logs, which hold the output of failed tests (the tree itself is deleted).
TEST_LOGS = ["test-suite.log", "*/test-suite.log", "_build/Testing/Temporary/LastTest.log",
             "_build/meson-logs/testlog.txt", "test/_*"]


def save_test_logs(tree, dest, extra=()):
    """Copies the harness's logs (and the manifest's `test_logs`, paths relative to the tree) into `dest`."""
    for pattern in [*TEST_LOGS, *extra]:
        for f in tree.glob(pattern):
            if f.is_file():
                dest.mkdir(parents=True, exist_ok=True)
                shutil.copy(f, dest / str(f.relative_to(tree)).replace("/", "__"))


def last_line(text):
    return text.splitlines()[-1] if text else ""


def finish_tree(ctx, tree, pdir, variant):
    if ctx["keep"]:
        dest = pdir / f"tree-{variant}"
        if dest.exists():
            shutil.rmtree(dest)
        tree.rename(dest)
    elif tree.exists():
        shutil.rmtree(tree)


def recheck_counts(result, entry, pdir, dist):
    """--report-only: redoes check (d) from the stored segment counts (derived anew from the stored profiles
    when stored in an older format) with the manifest as it is now."""
    result["checks"].pop("counts", None)
    result.pop("counts", None)
    base = BASELINE.get(result["variant"])
    if base is None:
        return
    here, there = stored_counts(pdir / result["variant"], dist), stored_counts(pdir / base, dist)
    if here is None or there is None:
        return
    apart = len(list((pdir / "edge").glob("run-*/*.incomplete"))) if result["variant"] == "trace" else 0
    cmp_ = compare_counts(here, there, set(entry.get("nondeterministic_functions", [])),
                          result.get("trace", {}).get("kept_calls", ()), apart)
    result["counts"] = cmp_
    if entry.get("deterministic", False):
        result["checks"]["counts"] = counts_check(cmp_, base)


def summarize_tests(status):
    out = {}
    for s in status.values():
        s = s.split("(")[0].upper()
        out[s] = out.get(s, 0) + 1
    return out


def compare_tests(result, plain):
    """Check (a): the same per-test results as the plain build."""
    if result["checks"].get("build", {}).get("ok") is not True:
        return
    if plain is None or "tests" not in plain:
        result["checks"]["tests"] = {"ok": False, "why": "no plain result to compare with"}
        return
    a, b = result.get("tests", {}), plain["tests"]
    if not a and not b:
        result["checks"]["tests"] = {"ok": False, "why": "no test result parsed"}
        return
    diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    result["tests_diff"] = [{"test": k, "plain": b.get(k), "here": a.get(k)} for k in diff[:50]]
    result["checks"]["tests"] = {
        "ok": not diff,
        "why": ", ".join(f"{k}: {b.get(k)} -> {a.get(k)}" for k in diff[:6]) + (" …" if len(diff) > 6 else "")}


# ---------------------------------------------------------------------------------------------------------
# Known failures and the report


def load_known(path):
    """Lines `project mode check  reason…` (`*` matches anything); returns [(p, m, c, reason)]."""
    out = []
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 3)
        if len(parts) < 3:
            continue
        out.append((parts[0], parts[1], parts[2], parts[3] if len(parts) > 3 else ""))
    return out


def match_known(known, project, mode, check, result=None):
    """The known-failures line that covers this failed check. CHECK `tests:NAME[,NAME…]` covers a failed tests
    check only when every test that differs from the plain build is one of the NAMEs (a racy test), so a
    difference in any other test still fails."""
    for p, m, c, reason in known:
        base, _, names = c.partition(":")
        if not (fnmatch.fnmatch(project, p) and fnmatch.fnmatch(mode, m) and fnmatch.fnmatch(check, base)):
            continue
        if names:
            differing = {d["test"] for d in (result or {}).get("tests_diff", [])}
            if not differing or not differing <= set(names.split(",")):
                continue
        return (p, m, c, reason)
    return None


def fmt_s(x):
    return "–" if x is None else f"{x} s"


def fmt_size(n):
    if n is None:
        return "–"
    for unit in ["B", "KiB", "MiB", "GiB"]:
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def counts_vs(here, base, n=8):
    """A segment's counts here and in the baseline, for the report; long ones from the first difference on."""
    if max(len(here), len(base)) <= n:
        return f"{here} vs {base}"
    j = next((i for i, (x, y) in enumerate(zip(here, base)) if x != y), min(len(here), len(base)))
    return f"counts {j}.. of {len(here)}: {here[j:j + 4]} vs {base[j:j + 4]}"


def report(results, manifest, known_hits, fixed_known, path_md, path_json, meta):
    rows = []
    rows.append("| project | mode | functions | inexact | tests | same as plain | counts = edge | "
                "profile | show | decode | build | result |")
    rows.append("|---|---|---:|---:|---|---|---|---:|---:|---:|---:|---|")
    for r in results:
        if r["variant"] == "plain":
            continue
        prof = r.get("profile", {})
        ch = r["checks"]
        t = r.get("tests_summary", {})
        ts = " ".join(f"{k.lower()} {v}" for k, v in sorted(t.items())) or "–"
        same = "–" if "tests" not in ch else ("yes" if ch["tests"]["ok"] else "**no**")
        cnt = r.get("counts")
        counts = "–" if cnt is None else (f"{cnt['compared'] - cnt['mismatched']}/{cnt['compared']}" +
                                          (f" +{cnt['not_comparable']} n/c" if cnt.get("not_comparable") else "") +
                                          ("" if manifest[r["project"]].get("deterministic") else " (nd)"))
        failed = [c for c in CHECKS if c in ch and not ch[c]["ok"]]
        verdict = "ok" if not failed else ", ".join(
            c + (" (known)" if (r["project"], r["variant"], c) in known_hits else "") for c in failed)
        times = r.get("times", {})
        functions = str(prof.get("functions", "–")) + (f" (+{prof['not_profiled']} not profiled)"
                                                        if prof.get("not_profiled") else "")
        rows.append(f"| {r['project']} | {r['variant']} | {functions} | "
                    f"{prof.get('inexact', '–')} | {ts} | {same} | {counts} | {fmt_size(r.get('profile_bytes'))} | "
                    f"{fmt_s(times.get('show_s'))} | {fmt_s(times.get('decode_s'))} | {fmt_s(r.get('build_s'))} | "
                    f"{verdict} |")
    md = [f"# Real-software corpus ({meta['when']}, commit {meta['commit']})", "",
          "functions / inexact: function records in the merged profile of the test run (summed over the per-program "
          "files in the lto modes; not profiled: functions the pass left uninstrumented, their reasons in the JSON); "
          "tests: this build's per-test results; same as plain: every test's result equals "
          "the plain clang-19 build's; counts = edge: functions whose segment counts equal those of "
          "edge mode (lto: of lto-edge, whole-program edge mode) / functions compared (n/c: not comparable, "
          "compiled to other code than in the baseline; (nd): tests not deterministic, not a failure); show/decode: "
          "wall time of `pathprof show --json` / `pathprof decode` on the profile.", ""] + rows
    md += ["", "Summary (inexact / functions; **T** tests differ from plain, **C** counts differ from the edge baseline "
           "on deterministic tests, **X** show/decode/export failed, **B** build failed, **U** use mode found stale "
           "functions or annotated none; ✓ all checks pass):", ""]
    variants = [m for m in MODES if any(r["variant"] == m for r in results)]
    md.append("| project | " + " | ".join(variants) + " |")
    md.append("|---|" + "---|" * len(variants))
    by = {(r["project"], r["variant"]): r for r in results}
    for name in dict.fromkeys(r["project"] for r in results):
        cells = []
        for m in variants:
            r = by.get((name, m))
            if r is None:
                cells.append("–")
                continue
            ch, prof = r["checks"], r.get("profile", {})
            flags = "".join(f for c, f in [("build", "B"), ("tests", "T"), ("counts", "C"), ("tools", "X"),
                                           ("use", "U")]
                            if c in ch and not ch[c]["ok"])
            base = f"{prof['inexact']}/{prof['functions']}" if prof else "–"
            ok = not any(not c["ok"] for c in ch.values())
            cells.append(base + (" ✓" if ok else (" **" + flags + "**" if flags else "")))
        md.append(f"| {name} | " + " | ".join(cells) + " |")
    plain_rows = [r for r in results if r["variant"] == "plain"]
    if plain_rows:
        md += ["", "Plain clang-19 builds:", "", "| project | tests | build | test run |", "|---|---|---:|---:|"]
        for r in plain_rows:
            t = r.get("tests_summary", {})
            ts = " ".join(f"{k.lower()} {v}" for k, v in sorted(t.items())) or "–"
            md.append(f"| {r['project']} | {ts} | {r.get('build_s', '–')} s | {r.get('test_s', '–')} s |")
    trace_rows = [r for r in results if r["variant"] in ("trace", "icache") and r.get("trace")]
    if trace_rows:
        md += ["", "Trace mode (one trace file per process; each read back with `pathprof trace --summary` and deleted; "
               "threads by status; files with an incomplete thread leave their functions out of the count check; bits "
               "per branch: the traces' bits over the conditional branches their regeneration executed):", "",
               "| project | files | disk (all traces of the test run) | largest file | threads | inexact files | "
               "blocks | bits/branch | read |", "|---|---:|---:|---:|---|---:|---:|---:|---:|"]
        for r in trace_rows:
            t = r["trace"]
            th = ", ".join(f"{k} {v}" for k, v in sorted(t["threads"].items()))
            bpb = f"{t['bits'] / t['branches']:.2f}" if t.get("branches") else "–"
            which = r["project"] + (" (icache)" if r["variant"] == "icache" else "")
            md.append(f"| {which} | {t['files']} | {fmt_size(t['bytes'])} | {fmt_size(t['largest'])} | {th} | "
                      f"{t['inexact_files']} | {t['blocks']:,} | {bpb} | {t['read_s']} s |")
    md += ["", "## Failures", ""]
    any_fail = False
    for r in results:
        for c in CHECKS:
            ch = r["checks"].get(c)
            if ch and not ch["ok"]:
                any_fail = True
                k = " (known)" if (r["project"], r["variant"], c) in known_hits else ""
                md.append(f"- {r['project']} {r['variant']} {c}{k}: {ch.get('why', '')}")
    if not any_fail:
        md.append("none")
    md += ["", "## Inexact functions by reason (smallest functions first)", ""]
    for r in results:
        for cls, c in sorted(r.get("profile", {}).get("reasons", {}).items(), key=lambda kv: -kv[1]["count"]):
            s = c["samples"][0]
            others = ", ".join(x["function"] for x in c["samples"][1:4])
            md.append(f"- {r['project']} {r['variant']}: {c['count']} × \"{cls}\" — e.g. `{s['function']}` "
                      f"({s['file']}, {s['blocks']} blocks): \"{s['reason']}\"" + (f"; also {others}" if others else ""))
    md += ["", "## Segment counts that differ from edge mode", "",
           "Per function the first differing segment (see the corpus README), its first source lines and its counts "
           "[entries, branch counts…, returns] here and in the baseline.", ""]
    for r in results:
        cnt = r.get("counts")
        if cnt and (cnt["mismatched"] or cnt.get("not_comparable")):
            nd = "" if manifest[r["project"]].get("deterministic") else " (tests not deterministic)"
            line = f"- {r['project']} {r['variant']}{nd}: {cnt['mismatched']} of {cnt['compared']}"
            if cnt["mismatched"]:
                line += "; e.g. " + "; ".join(
                    f"`{m['function']}` ({m['copy']}) segment {m['segment']} (lines {m['lines']}): " +
                    counts_vs(m["count"], m["edge"]) for m in cnt["samples"][:3])
            if cnt.get("not_comparable"):
                line += f"; not comparable: {cnt['not_comparable']}, e.g. " + "; ".join(
                    f"`{m['function']}`: {m['why']}" for m in cnt["not_comparable_samples"][:3])
            md.append(line)
    for r in results:
        cnt = r.get("counts")
        if cnt and cnt.get("explained"):
            md.append(f"- {r['project']} {r['variant']}: {cnt['explained']} functions differ for a known reason "
                      "(not failures): " + "; ".join(
                          f"`{m['function']}` {m['entries']} vs {m['edge']} entries ({m['why']})"
                          for m in cnt["explained_samples"][:5]))
    if fixed_known:
        md += ["", "## Known failures that no longer fail (remove them from known-failures)", ""]
        md += [f"- {' '.join(k[:3])}  {k[3]}" for k in fixed_known]
    path_md.write_text("\n".join(md) + "\n")
    path_json.write_text(json.dumps({"meta": meta, "results": results}, indent=1, default=str))


# ---------------------------------------------------------------------------------------------------------


def main():
    # SIGTERM and SIGHUP end the run as Ctrl-C does, through run_step's `finally`, which kills the running step's
    # process group: with their default actions Python died at once and left the step running (a bash test
    # script of an edge build went on forking for minutes after `kill` of the corpus, writing into its profile).
    # A signal the corpus was started with ignored (nohup) stays ignored.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) != signal.SIG_IGN:
            signal.signal(sig, lambda s, _f: sys.exit(128 + s))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="only the projects marked quick in the manifest")
    ap.add_argument("--project", action="append", help="only this project (repeatable, or comma-separated)")
    ap.add_argument("--mode", action="append", help=f"only these modes ({', '.join(MODES)}); plain and edge "
                    "run too when their results are missing")
    ap.add_argument("--keep", action="store_true", help="keep build trees (tree-MODE) and show --json output")
    ap.add_argument("--allow-known", action="store_true",
                    help="failures listed in known-failures are reported but do not fail the run")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--work", default=str(ROOT / "test-suite" / "work" / "corpus"))
    ap.add_argument("--dist", default=str(ROOT / "dist"))
    ap.add_argument("--out", help="results file stem (default WORK/results, or WORK/quick with --quick)")
    ap.add_argument("--report-only", action="store_true", help="rewrite the report from the stored results")
    args = ap.parse_args()

    manifest = tomllib.loads((HERE / "manifest.toml").read_text())
    names = list(manifest)
    if args.project:
        wanted = [p for a in args.project for p in a.split(",") if p]
        unknown = [p for p in wanted if p not in manifest]
        if unknown:
            print(f"corpus: error: unknown project {', '.join(unknown)} (known: {', '.join(names)})",
                  file=sys.stderr)
            sys.exit(2)
        names = wanted
    elif args.quick:
        names = [n for n in names if manifest[n].get("quick")]
    modes = QUICK_MODES if args.quick else MODES
    if args.mode:
        modes = [m for a in args.mode for m in a.split(",") if m]
        bad = [m for m in modes if m not in MODES]
        if bad:
            print(f"corpus: error: unknown mode {', '.join(bad)} (modes: {', '.join(MODES)})", file=sys.stderr)
            sys.exit(2)
    work = Path(args.work).resolve()
    dist = Path(args.dist).resolve()
    work.mkdir(parents=True, exist_ok=True)
    stem = Path(args.out) if args.out else work / ("quick" if args.quick and not args.project else "results")
    known = load_known(HERE / "known-failures")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip() or "?"
    meta = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit, "projects": names,
            "modes": modes, "clang": subprocess.run(["clang-19", "--version"], capture_output=True,
                                                     text=True).stdout.splitlines()[0]}

    results = []
    if args.report_only:
        for n in names:
            for v in ["plain"] + modes:
                f = work / n / v / "result.json"
                if f.exists():
                    r = json.loads(f.read_text())
                    recheck_counts(r, manifest[n], work / n, dist)  # the manifest may have learnt better
                    results.append(r)
    else:
        for tool in ["pathprof", "pathprof-clang", "pathprof-clang++"]:
            if not (dist / "bin" / tool).exists():
                sys.exit(f"corpus: {dist / 'bin' / tool} missing: run scripts/build.sh")
        # Two runs in one work directory would unpack, build and delete each other's trees.
        lock = open(work / ".lock", "w")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            sys.exit(f"corpus: error: another run is using {work} (wait for it, or give --work another directory)")
        ctx = {"work": work, "dist": dist, "jobs": args.jobs, "keep": args.keep, "ran": set(),
               "partial": bool(args.mode),
               "apt_updated": ensure_apt(manifest, names)}
        started = time.monotonic()
        for n in names:
            entry = manifest[n]
            variants = list(modes)
            if args.mode:  # a baseline this run does not rebuild must exist already
                for m in modes:
                    b = BASELINE.get(m)
                    if b and b not in variants and not (work / n / b / "blocks.json.gz").exists():
                        variants.insert(variants.index(m), b)
            plain_file = work / n / "plain" / "result.json"
            if args.mode is None or not plain_file.exists():
                variants.insert(0, "plain")
            plain = json.loads(plain_file.read_text()) if plain_file.exists() else None
            for v in variants:
                log(f"{n}: {v}")
                r = run_variant(ctx, n, entry, v)
                ctx["ran"].add((n, v))
                if v == "plain":
                    plain = r
                else:
                    compare_tests(r, plain)
                (work / n / v / "result.json").write_text(json.dumps(r, indent=1, default=str))
                results.append(r)
                failed = [c for c in CHECKS if c in r["checks"] and not r["checks"][c]["ok"]]
                log(f"{n}: {v}: {'ok' if not failed else 'FAILED ' + ', '.join(failed)} "
                    f"(build {r.get('build_s', '–')} s, tests {r.get('test_s', '–')} s, "
                    f"{r.get('profile', {}).get('functions', '–')} functions, "
                    f"{r.get('profile', {}).get('inexact', '–')} inexact)")
        meta["wall_s"] = round(time.monotonic() - started, 1)

    known_hits, new_failures = set(), []
    for r in results:
        for c in CHECKS:
            ch = r["checks"].get(c)
            if ch and not ch["ok"]:
                if match_known(known, r["project"], r["variant"], c, r):
                    known_hits.add((r["project"], r["variant"], c))
                else:
                    new_failures.append((r["project"], r["variant"], c, ch.get("why", "")))
    evaluated = {(r["project"], r["variant"], c) for r in results for c in r["checks"]}
    fixed = []
    for k in known:  # fixed: the check ran and passed (--quick, for one, never checks lto's counts)
        check = k[2].partition(":")[0]
        hit = any(fnmatch.fnmatch(p, k[0]) and fnmatch.fnmatch(v, k[1]) and fnmatch.fnmatch(c, check)
                  for p, v, c in evaluated)
        still = any(fnmatch.fnmatch(p, k[0]) and fnmatch.fnmatch(v, k[1]) and fnmatch.fnmatch(c, check)
                    for p, v, c in known_hits)
        if hit and not still:
            fixed.append(k)
    md, js = stem.with_suffix(".md"), stem.with_suffix(".json")
    report(results, manifest, known_hits, fixed, md, js, meta)
    print(md.read_text())
    n_checks = sum(len(r["checks"]) for r in results)
    n_fail = len(new_failures) + len(known_hits)
    log(f"report: {md} and {js}")
    if known_hits:
        log(f"{len(known_hits)} known failure(s) (listed in {HERE / 'known-failures'})")
    for k in fixed:
        log(f"known failure no longer fails: {' '.join(k[:3])} — remove it from known-failures")
    for p, v, c, why in new_failures:
        log(f"FAILED: {p} {v} {c}: {why}")
    print(f"corpus: {n_checks - n_fail} passed, {n_fail} failed" +
          (f" ({len(known_hits)} known)" if known_hits else ""))
    if new_failures or (known_hits and not args.allow_known):
        sys.exit(1)


if __name__ == "__main__":
    main()
