#!/usr/bin/env python3
"""pathprof benchmarks on real programs, side by side with LLVM's and GCC's own instrumentation.

    bench/run.sh [--quick] [--reps N] [--workloads a,b] [--no-compile-time] [--no-callgrind]

Builds bzip2, zlib, Lua 5.4 and SQLite (C sources taken from their crates.io packages through cargo, see
bench/sources/Cargo.toml) and the self-written loop kernels (programs/kernels/, group `kernels`) in every variant at -O2, checks that every variant prints exactly what the baseline
prints and writes its profile, runs the variants interleaved, and writes bench/results/latest.{md,json}.
--quick: one repetition of one small workload (zlib on a 4 MiB input), results in bench/work/quick.{md,json};
CI may run it but must never assert on its timings.
"""

import argparse
import concurrent.futures as cf
import datetime
import hashlib
import json
import math
import os
import random
import re
import shutil
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
WORK = BENCH / "work"
DIST = ROOT / "dist"
PPCLANG = DIST / "bin" / "pathprof-clang"
PATHPROF = DIST / "bin" / "pathprof"
PROFDATA = "llvm-profdata-19"
NPROC = os.cpu_count() or 1

# --------------------------------------------------------------------------------------------------------------
# Variants: (name, compiler, extra compile+link flags, profile kind)
# --------------------------------------------------------------------------------------------------------------
VARIANTS = [
    ("baseline", "clang-19", [], None),
    ("llvm-ir-pgo", "clang-19", ["-fprofile-generate"], "llvm"),
    ("llvm-ir-pgo-atomic", "clang-19", ["-fprofile-generate", "-fprofile-update=atomic"], "llvm"),
    ("llvm-fe-pgo", "clang-19", ["-fprofile-instr-generate"], "llvm"),
    ("gcc", "gcc-12", [], None),
    ("gcc-arcs", "gcc-12", ["-fprofile-arcs"], "gcov"),
    ("pp-edge", str(PPCLANG), ["--pathprof-mode=edge", "--pathprof-stats"], "pathprof"),
    ("pp-edge-atomic", str(PPCLANG), ["--pathprof-mode=edge", "--pathprof-atomic", "--pathprof-stats"], "pathprof"),
    ("pp-block", str(PPCLANG), ["--pathprof-mode=block", "--pathprof-stats"], "pathprof"),
    ("pp-path", str(PPCLANG), ["--pathprof-mode=path", "--pathprof-stats"], "pathprof"),
    ("pp-path-atomic", str(PPCLANG), ["--pathprof-mode=path", "--pathprof-atomic", "--pathprof-stats"], "pathprof"),
    ("pp-context", str(PPCLANG), ["--pathprof-mode=context", "--pathprof-stats"], "pathprof"),
    ("pp-piecewise", str(PPCLANG), ["--pathprof-mode=piecewise", "--pathprof-stats"], "pathprof"),
]
VARIANT = {v[0]: v for v in VARIANTS}
# What each variant's overhead is measured against.
REFERENCE = {name: ("gcc" if name == "gcc-arcs" else "baseline") for name, *_ in VARIANTS}
PATHPROF_VARIANTS = [v[0] for v in VARIANTS if v[3] == "pathprof"]
# Head to head: pathprof variant -> the LLVM IR PGO variant of the same atomicity.
HEAD_TO_HEAD = {"pp-edge": "llvm-ir-pgo", "pp-path": "llvm-ir-pgo", "pp-context": "llvm-ir-pgo",
                "pp-piecewise": "llvm-ir-pgo", "pp-block": "llvm-ir-pgo",
                "pp-edge-atomic": "llvm-ir-pgo-atomic", "pp-path-atomic": "llvm-ir-pgo-atomic"}

OPT = ["-O2"]
BUILD_FORMAT = 2  # bump when build_one's result changes shape


def sources():
    """Unpacks the crates (cargo metadata downloads them) and returns {crate name: source root}."""
    out = subprocess.run(["cargo", "metadata", "--format-version", "1", "--locked",
                          "--manifest-path", str(BENCH / "sources" / "Cargo.toml")],
                         check=True, capture_output=True, text=True).stdout
    return {p["name"]: Path(p["manifest_path"]).parent for p in json.loads(out)["packages"]}


# Loop kernels (issue 18, the performance tail): self-written C in programs/kernels/, one program per kernel
# (main.c + the kernel's file, -DKERNEL=kernel_<name>) and one pthread program running most of them in parallel.
KDIR = BENCH / "programs" / "kernels"
KERNELS = ["daxpy", "sieve", "matmul", "heapsort", "nestloop", "bubble", "fib", "interp"]
MT_KERNELS = [k for k in KERNELS if k != "nestloop"]  # the nest would only dominate the threads' time


def kernel_programs():
    """{program name: definition} of the loop kernels; they need no downloaded sources."""
    progs = {f"kernel-{k}": dict(srcs=[KDIR / "main.c", KDIR / f"{k}.c"], headers=[KDIR / "kernels.h"],
                                 cflags=[f"-DKERNEL=kernel_{k}", f"-I{KDIR}"], libs=[], version="self-written")
             for k in KERNELS}
    progs["kernels-mt"] = dict(srcs=[KDIR / "mt.c", *(KDIR / f"{k}.c" for k in MT_KERNELS)],
                               headers=[KDIR / "kernels.h"], cflags=[f"-I{KDIR}", "-pthread"], libs=["-pthread"],
                               version="self-written")
    return progs


def programs(src):
    bz = src["bzip2-sys"] / "bzip2-1.0.8"
    z = src["libz-sys"] / "src" / "zlib"
    lua = sorted((src["lua-src"]).glob("lua-5.4.*"))[-1]
    sq = src["libsqlite3-sys"] / "sqlite3"
    xz = src["lzma-sys"]
    lz = xz / "xz-5.2" / "src" / "liblzma"
    lz_dirs = ["common", "lzma", "lz", "check", "delta", "rangecoder", "simple"]
    return {
        "bzip2": dict(
            srcs=[bz / f"{n}.c" for n in
                  ["blocksort", "huffman", "crctable", "randtable", "compress", "decompress", "bzlib", "bzip2"]],
            cflags=["-D_FILE_OFFSET_BITS=64", f"-I{bz}"], libs=[], version=bz.parent.name),
        "zlib": dict(
            srcs=[z / f"{n}.c" for n in ["adler32", "compress", "crc32", "deflate", "infback", "inffast",
                                          "inflate", "inftrees", "trees", "uncompr", "zutil"]]
            + [BENCH / "programs" / "zlib_driver.c"],
            cflags=["-DSTDC", "-D_LARGEFILE64_SOURCE", f"-I{z}"], libs=[], version=z.parents[1].name),
        "lua": dict(
            srcs=sorted(lua.glob("*.c")) + [BENCH / "programs" / "lua_driver.c"],
            cflags=["-DLUA_USE_LINUX", f"-I{lua}"], libs=["-lm", "-ldl"], version=f"{lua.parent.name}/{lua.name}"),
        # The flags libsqlite3-sys's build script uses for its `bundled` feature.
        "sqlite": dict(
            srcs=[sq / "sqlite3.c", BENCH / "programs" / "sqlite_driver.c"],
            cflags=[f"-I{sq}", "-DSQLITE_CORE", "-DSQLITE_DEFAULT_FOREIGN_KEYS=1", "-DSQLITE_ENABLE_API_ARMOR",
                    "-DSQLITE_ENABLE_COLUMN_METADATA", "-DSQLITE_ENABLE_DBSTAT_VTAB", "-DSQLITE_ENABLE_FTS3",
                    "-DSQLITE_ENABLE_FTS3_PARENTHESIS", "-DSQLITE_ENABLE_FTS5", "-DSQLITE_ENABLE_JSON1",
                    "-DSQLITE_ENABLE_LOAD_EXTENSION=1", "-DSQLITE_ENABLE_RTREE", "-DSQLITE_ENABLE_STAT4",
                    "-DSQLITE_SOUNDEX", "-DSQLITE_THREADSAFE=1", "-DSQLITE_USE_URI", "-DHAVE_USLEEP=1",
                    "-DHAVE_ISNAN", "-D_POSIX_THREAD_SAFE_FUNCTIONS", "-DHAVE_LOCALTIME_R"],
            libs=["-lpthread", "-ldl", "-lm"], version=sq.parent.name),
        # liblzma 5.2.5 as lzma-sys's build script compiles it (its config.h: POSIX threads, every filter), the
        # tablegen programs and the small CRC variants left out as there.
        "xz": dict(
            srcs=sorted(f for d in lz_dirs for f in (lz / d).glob("*.c")
                        if not f.stem.endswith("tablegen") and f.stem not in ("crc32_small", "crc64_small"))
            + [xz / "xz-5.2" / "src" / "common" / n for n in ["tuklib_cpucores.c", "tuklib_physmem.c"]]
            + [BENCH / "programs" / "xz_driver.c"],
            cflags=["-DHAVE_CONFIG_H=1", "-std=c99", "-pthread", f"-I{xz}", f"-I{xz / 'xz-5.2' / 'src' / 'common'}",
                    *(f"-I{lz / d}" for d in ["api", *lz_dirs])],
            libs=["-pthread"], version=f"{xz.name} (liblzma 5.2.5)"),
        **kernel_programs(),
    }


# --------------------------------------------------------------------------------------------------------------
# Workloads: name, program, args (full), args (small: --quick and callgrind). {input}, {bz2}, {wl} are filled in.
# --------------------------------------------------------------------------------------------------------------
WL = BENCH / "workloads"
WORKLOADS = [
    ("bzip2-compress", "bzip2", ["-c", "-9", "{input}"], ["-c", "-9", "{small}"]),
    ("bzip2-decompress", "bzip2", ["-dc", "{bz2}"], ["-dc", "{small_bz2}"]),
    ("zlib", "zlib", ["{input}", "1", "6"], ["{small}", "1", "6"]),
    ("lua-recursion", "lua", [f"{WL}/recursion.lua", "20"], [f"{WL}/recursion.lua", "1"]),
    ("lua-tables-strings", "lua", [f"{WL}/tables_strings.lua", "5"], [f"{WL}/tables_strings.lua", "1"]),
    ("lua-interpreter", "lua", [f"{WL}/interp.lua", "1"], [f"{WL}/interp.lua", "1", "0.1"]),
    ("sqlite", "sqlite", ["30000"], ["3000"]),
    # Multi-threaded (issue 18): liblzma's threaded encoder, preset 1 (1 MiB dictionary, 3 MiB blocks: seven
    # blocks of the 20 MiB input to share between the threads), the same work in 1 and 2 threads.
    ("xz-T1", "xz", ["{input}", "1", "1"], ["{small}", "1", "1"]),
    ("xz-T2", "xz", ["{input}", "2", "1"], ["{small}", "2", "1"]),
]
PROGRAM_WORKLOADS = [w[0] for w in WORKLOADS]
# Kernel sizes: full ≈ 0.15–0.3 s of user time at -O2 on the 2-core benchmark machine (0.3–1 s wall while
# others build; the atomic builds run 3–20× longer), nestloop: the plain build folds the nest, so its size is
# chosen for the instrumented builds; small ≈ 1/10 of that (0.02–0.05 s), for callgrind.
# kernels-mt1/-mt2: the same work per thread in 1 and 2 threads (`mt THREADS ROUNDS`).
KERNEL_WORKLOADS = [
    ("kernel-daxpy", "kernel-daxpy", ["120000"], ["15000"]),
    ("kernel-sieve", "kernel-sieve", ["600"], ["60"]),
    ("kernel-matmul", "kernel-matmul", ["600"], ["300"]),
    ("kernel-heapsort", "kernel-heapsort", ["1200000"], ["150000"]),
    ("kernel-nestloop", "kernel-nestloop", ["25"], ["13"]),
    ("kernel-bubble", "kernel-bubble", ["17000"], ["5500"]),
    ("kernel-fib", "kernel-fib", ["39"], ["34"]),
    ("kernel-interp", "kernel-interp", ["4000000"], ["400000"]),
    ("kernels-mt1", "kernels-mt", ["1", "20"], ["1", "2"]),
    ("kernels-mt2", "kernels-mt", ["2", "20"], ["2", "2"]),
]
WORKLOADS += KERNEL_WORKLOADS
# Names that --workloads expands (bench/run.sh --workloads kernels).
WORKLOAD_GROUPS = {"kernels": [w[0] for w in KERNEL_WORKLOADS], "programs": PROGRAM_WORKLOADS}
QUICK_WORKLOAD = "zlib"


def select_workloads(spec):
    """The workloads named in a comma-separated list of workload and group names, in WORKLOADS order."""
    names = set()
    for n in spec.split(","):
        if n in WORKLOAD_GROUPS:
            names.update(WORKLOAD_GROUPS[n])
        elif any(w[0] == n for w in WORKLOADS):
            names.add(n)
        else:
            raise SystemExit(f"unknown workload {n!r} (workloads: {', '.join(w[0] for w in WORKLOADS)}; "
                             f"groups: {', '.join(WORKLOAD_GROUPS)})")
    return [w for w in WORKLOADS if w[0] in names]


# --------------------------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------------------------
def generate_input(size, seed=20240605):
    """A deterministic mix of Zipf-distributed text, structured binary records, incompressible bytes,
    source-like repeated lines and byte runs."""
    rng = random.Random(seed)
    syl = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "an", "ex", "or", "ul", "ph", "qu", "st",
           "the", "and", "of", "in"]
    vocab = ["".join(rng.choice(syl) for _ in range(rng.randint(1, 4))) for _ in range(3000)]
    weights = [1.0 / (i + 1) for i in range(len(vocab))]
    out = bytearray()
    while len(out) < size:
        kind = rng.random()
        if kind < 0.55:
            words = rng.choices(vocab, weights, k=rng.randint(2000, 20000))
            out += " ".join(words).replace(" st ", ".\n").encode()
        elif kind < 0.75:
            n, base, t = rng.randint(2000, 20000), rng.randint(0, 1 << 20), 0
            recs = []
            for i in range(n):
                t += rng.randint(0, 16)
                recs.append(struct.pack("<IIHh", base + i, t, rng.randint(0, 255), rng.randint(-300, 300)))
            out += b"".join(recs)
        elif kind < 0.85:
            out += rng.randbytes(rng.randint(10000, 200000))
        elif kind < 0.95:
            line = "    for (int i = 0; i < n; i++) { sum += a[i] * %d; }\n"
            out += "".join(line % rng.randint(0, 99) for _ in range(rng.randint(500, 5000))).encode()
        else:
            out += bytes([rng.randint(0, 255)]) * rng.randint(100, 50000)
    return bytes(out[:size])


def ensure_input(path, size):
    if not path.exists() or path.stat().st_size != size:
        data = generate_input(size)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.rename(path)
    return path


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# --------------------------------------------------------------------------------------------------------------
# Building
# --------------------------------------------------------------------------------------------------------------
def log(*a):
    print(*a, file=sys.stderr, flush=True)


def build_one(prog, pdef, variant):
    """Compiles and links one program variant; returns {binary, stats lines, build seconds}. Skips the build
    when the commands and every input (sources, plugin, runtime) are unchanged since the last one."""
    name, cc, flags, _ = VARIANT[variant]
    d = WORK / "build" / prog / variant
    objdir = d / "obj"
    binary = d / prog
    cmds = []
    for s in pdef["srcs"]:
        obj = objdir / (s.stem + ".o")
        cmds.append([cc, *OPT, *flags, *pdef["cflags"], "-w", "-c", str(s), "-o", str(obj)])
    link = [cc, *OPT, *flags, *[str(objdir / (s.stem + ".o")) for s in pdef["srcs"]], "-o", str(binary),
            *pdef["libs"]]
    deps = [Path(p) for p in pdef["srcs"] + pdef.get("headers", [])]
    if Path(cc).name.startswith("pathprof-clang"):
        # Any pathprof build (also an A/B baseline's dist/, which may be rebuilt in place): its plugin and runtime.
        dist = Path(cc).resolve().parent.parent
        deps += [Path(cc), dist / "lib" / "libpathprof.so", dist / "lib" / "libpathprof_rt.a"]
    h = hashlib.sha256(json.dumps([BUILD_FORMAT, variant, cmds, link]).encode())
    for p in deps:
        st = p.stat()
        h.update(f"{p}:{st.st_size}:{st.st_mtime_ns}".encode())
    stamp = d / "stamp"
    if stamp.exists() and binary.exists():
        old = json.loads(stamp.read_text())
        if old["hash"] == h.hexdigest():
            return old
    shutil.rmtree(d, ignore_errors=True)
    objdir.mkdir(parents=True)
    stats = []
    term_blocks = {}
    # The edge build also dumps each function's graph, to find the blocks with a termination edge (a call that
    # may not return): path mode counts a +1/-1 pair around such calls, which no profile shows.
    env = dict(os.environ, PATHPROF_DEBUG="dump") if variant == "pp-edge" else None
    t0 = time.perf_counter()
    for c in cmds + [link]:
        r = subprocess.run(c, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            raise SystemExit(f"build failed: {' '.join(c)}\n{r.stderr[-5000:]}")
        stats += [l for l in r.stderr.splitlines() if l.startswith("pathprof: stats:")]
        if env is not None and c is not link:
            mod = term_blocks.setdefault(c[c.index("-c") + 1], {})
            fn = None
            for l in r.stderr.splitlines():
                m = re.match(r"pathprof: dump `(.*)`: \d+ blocks", l)
                if m:
                    fn = m.group(1)
                    continue
                m = re.match(r"\s*\*?\s*e\d+: bb(\d+) -> bb\d+ Termination", l)
                if m and fn is not None:
                    mod.setdefault(fn, []).append(int(m.group(1)))
    res = dict(hash=h.hexdigest(), binary=str(binary), stats=stats, seconds=time.perf_counter() - t0,
               term_blocks=term_blocks)
    stamp.write_text(json.dumps(res))
    return res


def build_all(progs, variants):
    jobs = [(p, v) for p in progs for v in variants]
    # Largest first, so the long sqlite3.c compiles do not end up last.
    jobs.sort(key=lambda j: -sum(Path(s).stat().st_size for s in progs[j[0]]["srcs"]))
    out = {}
    with cf.ThreadPoolExecutor(max_workers=NPROC) as ex:
        futs = {ex.submit(build_one, p, progs[p], v): (p, v) for p, v in jobs}
        for f in cf.as_completed(futs):
            out[futs[f]] = f.result()
            log(f"  built {futs[f][0]}/{futs[f][1]}")
    return out


def parse_stats(lines):
    tot = {}
    for l in lines:
        for k, v in re.findall(r"(\w+)=(\S+)", l):
            if v.isdigit():
                tot[k] = tot.get(k, 0) + int(v)
    return tot


# --------------------------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------------------------
def profile_env(variant, wl, profdir):
    kind = VARIANT[variant][3]
    base = profdir / f"{wl}.{variant}"
    if kind == "llvm":
        return {"LLVM_PROFILE_FILE": str(base) + ".profraw"}, Path(str(base) + ".profraw")
    if kind == "pathprof":
        return {"PATHPROF_FILE": str(base) + ".pathprof"}, Path(str(base) + ".pathprof")
    if kind == "gcov":
        return {"GCOV_PREFIX": str(base) + ".gcda", "GCOV_PREFIX_STRIP": "64"}, Path(str(base) + ".gcda")
    return {}, None


def remove(p):
    if p is None:
        return
    if p.is_dir():
        shutil.rmtree(p)
    elif p.exists():
        p.unlink()


def run_timed(cmd, env, stdout_path):
    """Runs cmd; returns (wall seconds, user+sys seconds, exit code, stderr)."""
    with open(stdout_path, "wb") as out, open(str(stdout_path) + ".err", "wb") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    return wall, ru.ru_utime + ru.ru_stime, p.returncode, Path(str(stdout_path) + ".err").read_text(errors="replace")


# The IR passes that add instrumentation: pathprof's plugin pass, LLVM's instrumentation and lowering passes.
INSTRUMENTATION_PASS = re.compile(r"PathprofPass|PGOInstrumentation|InstrProfiling|InstrOrderFile")


def instrumentation_pass_seconds(time_report):
    """User+sys seconds of each instrumentation pass in the first pass-execution table of -ftime-report."""
    found, in_table = {}, False
    for line in time_report.splitlines():
        if "Pass execution timing report" in line:
            if found or in_table:
                break  # the code generator's table follows; the IR passes are in the first one
            in_table = True
            continue
        cols = re.findall(r"([0-9.]+) \(\s*[0-9.]+%\)", line)
        name = line.rsplit(")", 1)[-1].strip().replace("{anonymous}::", "")
        if in_table and len(cols) >= 3 and INSTRUMENTATION_PASS.search(name):
            found[name] = found.get(name, 0.0) + float(cols[2])
    return found


def psize(p):
    if p is None or not p.exists():
        return 0
    if p.is_dir():
        return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
    return p.stat().st_size


def timed_cmd(cmd, reps=3):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


# --------------------------------------------------------------------------------------------------------------
# Counters: static (stats lines, counter-referencing instructions in the binary) and dynamic (profiles)
# --------------------------------------------------------------------------------------------------------------
def llvm_counters(profraw):
    out = subprocess.run([PROFDATA, "show", "--all-functions", "--counts", str(profraw)],
                         capture_output=True, text=True, check=True).stdout
    static = sum(int(x) for x in re.findall(r"^\s*Counters: (\d+)", out, re.M))
    dyn = sum(int(x) for x in re.findall(r"^\s*Function count: (\d+)", out, re.M))
    for lst in re.findall(r"^\s*Block counts: \[(.*)\]", out, re.M):
        dyn += sum(int(x) for x in lst.split(",") if x.strip())
    funcs = len(re.findall(r"^\s*Counters: ", out, re.M))
    return dict(static_counters=static, dynamic_increments=dyn, functions=funcs)


def pathprof_dynamic(prof, mode, term_blocks=None):
    """Edge mode: the sum of the counts of counted edges = executed counter increments.
    Path mode: the sum of the (net) path counts; the arrival updates before calls that may not return whose
    calls came back are netted out by the decoder, so they are estimated from the edge profile separately."""
    if mode == "edge":
        j = json.loads(subprocess.run([str(PATHPROF), "show", "--json", str(prof)], capture_output=True,
                                      check=True).stdout)
        dyn = 0
        pairs = 0
        for f in j["functions"]:
            for e in f["edges"]:
                if e.get("instrumented") and e.get("count") is not None:
                    dyn += e["count"]
            blocks = {b["id"]: b for b in f["blocks"]}
            for bid in (term_blocks or {}).get(f["module"], {}).get(f["name"], []):
                b = blocks.get(bid)
                if b is not None and b.get("count") is not None:
                    pairs += b["count"]
        return dict(dynamic_increments=dyn, executions_of_blocks_with_termination_edges=pairs)
    j = json.loads(subprocess.run([str(PATHPROF), "decode", "--json", str(prof)], capture_output=True,
                                  check=True).stdout)
    return dict(dynamic_increments=sum(int(p["count"]) for p in j["paths"]), executed_paths=len(j["paths"]))


def counter_ranges(binary, kind):
    """Address ranges of the counters in a linked binary."""
    ranges = []
    if kind == "llvm":
        out = subprocess.run(["readelf", "-SW", str(binary)], capture_output=True, text=True).stdout
        for m in re.finditer(r"\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", out):
            if m.group(1) == "__llvm_prf_cnts":
                a = int(m.group(2), 16)
                ranges.append((a, a + int(m.group(3), 16)))
        return ranges
    pat = {"pathprof": r"^__pathprof_counters$", "gcov": r"^__gcov0\."}[kind]
    out = subprocess.run(["nm", "-S", "--defined-only", str(binary)], capture_output=True, text=True).stdout
    for l in out.splitlines():
        f = l.split()
        if len(f) == 4 and re.match(pat, f[3]):
            a = int(f[0], 16)
            ranges.append((a, a + int(f[1], 16)))
    return ranges


def counter_refs(binary, kind):
    """Instructions in the final code that address a counter (rip-relative), total and per function."""
    rs = sorted(counter_ranges(binary, kind))
    if not rs:
        return dict(total=0, per_function={}, atomic=0)
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)], capture_output=True,
                         text=True).stdout
    import bisect
    starts = [r[0] for r in rs]
    per, total, atomic, fn = {}, 0, 0, "?"
    for l in out.splitlines():
        if l.endswith(">:"):
            fn = l[l.index("<") + 1:-2]
            continue
        m = re.search(r"#\s*([0-9a-f]+)\s*<", l)
        if not m:
            continue
        a = int(m.group(1), 16)
        i = bisect.bisect_right(starts, a) - 1
        if i >= 0 and rs[i][0] <= a < rs[i][1]:
            total += 1
            per[fn] = per.get(fn, 0) + 1
            atomic += "lock" in l
    return dict(total=total, per_function=per, atomic=atomic)


def size_of(binary):
    out = subprocess.run(["size", str(binary)], capture_output=True, text=True, check=True).stdout.splitlines()[1]
    text, data, bss = (int(x) for x in out.split()[:3])
    return dict(text=text, data=data, bss=bss, file=Path(binary).stat().st_size)


# --------------------------------------------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------------------------------------------
def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def paired_head_to_head(runs, p, q, resamples=2000):
    """Head to head from paired repetitions: in each interleaved round, `p`'s time ÷ `q`'s time of the same round
    (both ran within seconds of each other, so slow phases of the machine cancel); the median over the rounds
    per workload, then the geomean over workloads. The 95% interval comes from resampling each workload's rounds
    with replacement (a fixed seed, so a report is reproducible); a goal is met with confidence only when the
    whole interval is below it. Returns (estimate, low, high)."""
    ratios = {w: [a / b for a, b in zip(row[p]["times"], row[q]["times"]) if a > 0 and b > 0]
              for w, row in runs.items()}
    ratios = {w: r for w, r in ratios.items() if r}
    if not ratios:
        return float("nan"), float("nan"), float("nan")
    estimate = geomean([statistics.median(r) for r in ratios.values()])
    rng = random.Random(0)
    samples = sorted(geomean([statistics.median(rng.choices(r, k=len(r))) for r in ratios.values()])
                     for _ in range(resamples))
    return estimate, samples[int(resamples * 0.025)], samples[int(resamples * 0.975) - 1]


def machine():
    cpu = "?"
    try:
        for l in open("/proc/cpuinfo"):
            if l.startswith("model name"):
                cpu = l.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "?"
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    ver = lambda c: subprocess.run([c, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    subject = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%s"], capture_output=True,
                             text=True).stdout.strip()
    return dict(date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                nproc=NPROC, cpu=cpu, commit=commit + (" (with uncommitted changes)" if dirty else ""),
                subject=subject, clang=ver("clang-19"), gcc=ver("gcc-12"), kernel=os.uname().release,
                dist=dist_identity())


def dist_identity():
    """Which pathprof build is in dist/: modification time and hash prefix of the plugin and the runtime."""
    out = {}
    for f in [DIST / "lib" / "libpathprof.so", DIST / "lib" / "libpathprof_rt.a"]:
        if f.exists():
            out[f.name] = dict(mtime=datetime.datetime.fromtimestamp(f.stat().st_mtime, datetime.timezone.utc)
                               .strftime("%Y-%m-%d %H:%M:%S UTC"), sha256=sha256(f)[:16])
    return out


def pct(x):
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{(x - 1) * 100:+.1f}%"


def fmt_kib(n):
    return f"{n / 1024:.0f} KiB" if n < 10 << 20 else f"{n / (1 << 20):.1f} MiB"


def variant_table(L, first, vs, rows, value, cell):
    """Appends a table of one row per workload or program and one column per variant: `cell(measurement,
    growth)` renders a measurement, where `growth` is " (+x%)", the growth of `value` over the same compiler's
    uninstrumented build (REFERENCE), and empty for those builds themselves."""
    L.append(f"| {first} | " + " | ".join(vs) + " |")
    L.append("|---|" + "---|" * len(vs))
    for name, row in rows.items():
        cells = []
        for v in vs:
            growth = "" if v in ("baseline", "gcc") else f" ({pct(value(row[v]) / value(row[REFERENCE[v]]))})"
            cells.append(cell(row[v], growth))
        L.append(f"| {name} | " + " | ".join(cells) + " |")


def markdown(R):
    m = R["machine"]
    vs = [v for v in R["variants"]]
    L = []
    dist = m.get("dist", {}).get("libpathprof.so")
    L.append(f"Date {m['date']}; machine: {m['nproc']} × {m['cpu']}, Linux {m['kernel']}; commit {m['commit']}"
             + (f" (\"{m['subject']}\")" if m.get("subject") else "")
             + (f", plugin built {dist['mtime']} (sha256 {dist['sha256']}…)" if dist else "")
             + f"; {m['clang']}; {m['gcc']}; {R['reps']} interleaved repetitions, medians.\n")
    if m.get("dist_changed_during_run"):
        L.append("Note: `dist/` was rebuilt by someone else during this run. Every variant was built (at the start) "
                 "with the plugin named above; the compile-time measurement, which runs last, may have used the "
                 "newer build.\n")
    L.append("**Run time** (median seconds; in brackets the overhead vs. the uninstrumented build of the same "
             "compiler: clang-19 -O2, for gcc-arcs gcc-12 -O2)\n")
    variant_table(L, "workload", vs, R["runs"], lambda m: m["median"], lambda m, growth: f"{m['median']:.3f}{growth}")
    L.append("| **geomean overhead** | " + " | ".join(
        "" if v in ("baseline", "gcc") else f"**{pct(R['geomean_overhead'][v])}**" for v in vs) + " |")
    L.append("")
    L.append("Geomean overhead by user+sys CPU time instead of wall time (less sensitive to other load on the "
             "machine): " + ", ".join(f"{v} {pct(R['geomean_overhead_cpu'][v])}" for v in vs
                                      if v not in ("baseline", "gcc")) + "\n")
    gmin = {v: geomean([min(R["runs"][w][v]["times"]) / min(R["runs"][w][REFERENCE[v]]["times"]) for w in R["runs"]])
            for v in vs}
    L.append("Geomean overhead by the fastest repetition (other load only ever slows a run down): "
             + ", ".join(f"{v} {pct(gmin[v])}" for v in vs if v not in ("baseline", "gcc")) + "\n")
    spreads = sorted((sorted(d["times"])[len(d["times"]) * 3 // 4] - sorted(d["times"])[len(d["times"]) // 4])
                     / d["median"] for row in R["runs"].values() for d in row.values())
    L.append(f"Noise: the interquartile range of the repetitions is {spreads[len(spreads) // 2] * 100:.0f}% of the "
             f"median for the median workload/variant ({spreads[int(len(spreads) * .9)] * 100:.0f}% at the 90th "
             "percentile); per-workload differences smaller than that are not significant. The callgrind "
             "instruction counts in `analysis.md` are exact.\n")
    L.append("**Head to head** (pathprof run time ÷ LLVM IR PGO run time of the same workload; < 1 = pathprof "
             "faster; atomic variants also against IR PGO with `-fprofile-update=atomic`)\n")
    h2h_cols = [(p, "llvm-ir-pgo") for p in PATHPROF_VARIANTS] + \
               [(p, "llvm-ir-pgo-atomic") for p in PATHPROF_VARIANTS if p.endswith("atomic")]
    L.append("| workload | " + " | ".join(f"{p} ÷ {q}" for p, q in h2h_cols) + " |")
    L.append("|---|" + "---|" * len(h2h_cols))
    for w, row in R["runs"].items():
        L.append(f"| {w} | " + " | ".join(f"{row[p]['median'] / row[q]['median']:.3f}" for p, q in h2h_cols) + " |")
    L.append("| **geomean** | " + " | ".join(f"**{R['head_to_head'][f'{p}/{q}']:.3f}**" for p, q in h2h_cols) + " |")
    paired = {f"{p}/{q}": paired_head_to_head(R["runs"], p, q) for p, q in h2h_cols}
    L.append("| paired rounds, with 95% interval | " + " | ".join(
        "{:.3f} [{:.3f}, {:.3f}]".format(*paired[f"{p}/{q}"]) for p, q in h2h_cols) + " |")
    L.append("")
    L.append("The paired row divides each round's pathprof run by the IR PGO run of the same round, takes the "
             "median per workload and the geomean; the interval comes from resampling each workload's rounds "
             "(bootstrap, 2000 samples, fixed seed). A goal is met with confidence only when the whole interval "
             "is below it.\n")
    if R.get("compile_time"):
        ct = R["compile_time"]
        L.append(f"**Compile time** of `{ct['file']}` (`-O2 -c`, median of {ct['reps']} interleaved; wall and "
                 "user+sys seconds)\n")
        L.append("| compiler | wall | user+sys | user+sys vs. clang -O2 -gline-tables-only (what the wrapper adds) "
                 "| user+sys vs. the same build without instrumentation |")
        L.append("|---|---|---|---|---|")
        ref = ct["results"]["clang -O2 -gline-tables-only"]["cpu"]
        # pathprof's wrapper adds -gline-tables-only (decode needs lines); LLVM's PGO builds compile without -g.
        own = {k: ("clang -O2 -gline-tables-only" if k.startswith("pathprof") else "clang -O2")
               for k in ct["results"] if k.startswith(("pathprof", "llvm"))}
        for k, r in ct["results"].items():
            vs_own = pct(r["cpu"] / ct["results"][own[k]]["cpu"]) if k in own else ""
            L.append(f"| {k} | {r['wall']:.2f} | {r['cpu']:.2f} | {pct(r['cpu'] / ref)} | {vs_own} |")
        L.append("")
        if ct.get("instrumentation_passes"):
            L.append("**The instrumentation passes' own time** in one `-ftime-report` compile of the same file "
                     "(user+sys seconds of the passes that add the instrumentation, as a share of that compile's "
                     "user+sys time); the rest of each build's extra time is the optimiser and code generator "
                     "working on the code they added\n")
            L.append("| compiler | passes | own time | share of the compile |")
            L.append("|---|---|---|---|")
            for k, r in ct["instrumentation_passes"].items():
                t = sum(r["passes"].values())
                L.append(f"| {k} | {', '.join(r['passes']) or '—'} | {t:.3f} | {100 * t / r['cpu']:.1f}% |")
            L.append("")
    L.append("**Static counters** (pathprof: `--pathprof-stats` totals; LLVM: `llvm-profdata show` counters; "
             "*refs*: instructions in the linked binary that address a counter, a measure of the update code "
             "left after optimisation)\n")
    L.append("| program | pp-edge counters (optimum, virtual edges, split) | pp-path dense counters / increment "
             "chords / hashed fns | IR PGO counters | FE PGO counters | refs: IR PGO | refs: FE PGO | refs: gcc-arcs "
             "| refs: pp-edge | refs: pp-path |")
    L.append("|---|---|---|---|---|---|---|---|---|---|")
    for p, s in R["static"].items():
        e, pa = s["pp-edge"], s["pp-path"]
        L.append(f"| {p} | {e.get('counters', '?')} ({e.get('optimum', '?')}, {e.get('virtual_edges', '?')}, "
                 f"{e.get('split_edges', '?')}) | {pa.get('dense_counters', '?')} / {pa.get('increment_chords', '?')} / "
                 f"{pa.get('hashed_functions', '?')} | {s['llvm-ir-pgo'].get('static_counters', '?')} | "
                 f"{s['llvm-fe-pgo'].get('static_counters', '?')} | "
                 + " | ".join(str(s["refs"].get(v, "?")) for v in
                              ["llvm-ir-pgo", "llvm-fe-pgo", "gcc-arcs", "pp-edge", "pp-path"]) + " |")
    L.append("")
    if any("pp-block" in s for s in R["static"].values()):
        L.append("**Block mode** (vertex profiling, `--pathprof-mode=block`): counters against edge mode's, and run "
                 "time ÷ pp-edge run time (medians of the same workloads)\n")
        L.append("| program | pp-block counters | edge-mode counters | fewer | refs: pp-block | refs: pp-edge |")
        L.append("|---|---|---|---|---|---|")
        for p, s in R["static"].items():
            b = s.get("pp-block", {})
            L.append(f"| {p} | {b.get('counters', '?')} | {b.get('edge_mode_counters', '?')} | "
                     f"{b.get('edge_mode_counters', 0) - b.get('counters', 0)} | {s['refs'].get('pp-block', '?')} | "
                     f"{s['refs'].get('pp-edge', '?')} |")
        L.append("")
        L.append("| workload | pp-block ÷ pp-edge |")
        L.append("|---|---|")
        ratios = []
        for w, row in R["runs"].items():
            if "pp-block" in row:
                ratios.append(row["pp-block"]["median"] / row["pp-edge"]["median"])
                L.append(f"| {w} | {ratios[-1]:.3f} |")
        if ratios:
            L.append(f"| **geomean** | **{geomean(ratios):.3f}** |")
        L.append("")
    # Runs before arrival counting recorded the +1/−1 pairs (key pp-path-pairs); later ones the arrivals.
    arrivals = any("pp-path-arrivals" in d for d in R["dynamic"].values())
    extra_key, extra = (("pp-path-arrivals", "arrivals") if arrivals else ("pp-path-pairs", "pairs"))
    L.append("**Dynamic counter updates** per run (sum of all counter values: LLVM; sum of counted-edge counts: "
             "pp-edge; sum of path counts: pp-path, not including "
             + ("the arrival updates before calls that may not return that the decoder nets out"
                if arrivals else "the +1/−1 pairs around calls that may not return")
             + f", estimated by *{extra}* = executions of blocks with a termination edge)\n")
    L.append(f"| workload | IR PGO | FE PGO | pp-edge | pp-path | pp-path {extra} (est.) |")
    L.append("|---|---|---|---|---|---|")
    for w, d in R["dynamic"].items():
        L.append(f"| {w} | {d.get('llvm-ir-pgo', '?'):,} | {d.get('llvm-fe-pgo', '?'):,} | {d.get('pp-edge', '?'):,} | "
                 f"{d.get('pp-path', '?'):,} | {d.get(extra_key, '?'):,} |")
    L.append("")
    L.append("**Binary size**: text+data of the linked program (growth vs. the same compiler's -O2 build), "
             "and + bss (zero-initialised counters, no file space); debug info not included\n")
    variant_table(L, "program", vs, R["sizes"], lambda s: s["text"] + s["data"],
                  lambda s, growth: f"{fmt_kib(s['text'] + s['data'])}{growth} + {fmt_kib(s['bss'])}")
    L.append("")
    L.append("**Profiles**: file size after one run, and post-processing time (median of 3; pathprof: `decode` and "
             "`show` to /dev/null; LLVM: `llvm-profdata merge` of the raw profile)\n")
    L.append("| workload | IR PGO .profraw | FE PGO .profraw | gcc .gcda (all) | pp-edge | pp-path | "
             "llvm-profdata merge (IR) | pp-edge show | pp-path decode | pp-path show |")
    L.append("|---|---|---|---|---|---|---|---|---|---|")
    for w, d in R["profiles"].items():
        L.append(f"| {w} | {fmt_kib(d['size']['llvm-ir-pgo'])} | {fmt_kib(d['size']['llvm-fe-pgo'])} | "
                 f"{fmt_kib(d['size']['gcc-arcs'])} | {fmt_kib(d['size']['pp-edge'])} | {fmt_kib(d['size']['pp-path'])} | "
                 f"{d['time']['llvm-profdata merge']:.2f} s | {d['time']['pp-edge show']:.2f} s | "
                 f"{d['time']['pp-path decode']:.2f} s | {d['time']['pp-path show']:.2f} s |")
    L.append("")
    return "\n".join(L)


# --------------------------------------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="one repetition of one small workload (zlib)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--workloads", help="comma-separated subset of: " + ", ".join(w[0] for w in WORKLOADS)
                    + "; or a group: " + ", ".join(WORKLOAD_GROUPS))
    ap.add_argument("--no-compile-time", action="store_true")
    ap.add_argument("--compile-reps", type=int, default=3)
    ap.add_argument("--out", help="results basename (default bench/results/latest, quick: bench/work/quick)")
    ap.add_argument("--report-only", metavar="JSON", help="rewrite the markdown of an earlier run's JSON")
    args = ap.parse_args()
    if args.report_only:
        R = json.loads(Path(args.report_only).read_text())
        if "geomean_overhead_cpu" not in R:
            R["geomean_overhead_cpu"] = {
                v: geomean([R["runs"][w][v]["cpu_median"] / R["runs"][w][REFERENCE[v]]["cpu_median"]
                            for w in R["runs"]]) for v in R["variants"]}
        md = "# pathprof benchmark results\n\n" + markdown(R)
        Path(args.report_only).with_suffix(".md").write_text(md)
        print(md)
        return

    for tool in ["clang-19", "gcc-12", PROFDATA, "cargo", "objdump", "nm", "readelf", "size"]:
        if not shutil.which(tool):
            raise SystemExit(f"missing tool: {tool}")
    if not PPCLANG.exists() or not PATHPROF.exists():
        raise SystemExit("dist/ is not built: run scripts/build.sh (bench/run.sh does)")

    wls = WORKLOADS
    reps = args.reps
    if args.quick:
        wls = [w for w in WORKLOADS if w[0] == QUICK_WORKLOAD]
        reps = 1
    if args.workloads:
        wls = select_workloads(args.workloads)
    out_base = Path(args.out) if args.out else (WORK / "quick" if args.quick else BENCH / "results" / "latest")

    t_start = time.perf_counter()
    mach = machine()  # at the start: the commit and the pathprof build that the variants are built with
    log("== sources (cargo metadata)")
    src = sources()
    progs = programs(src)
    need = sorted({w[1] for w in wls})
    progs = {p: progs[p] for p in need}

    log("== inputs")
    # The generated inputs, only when a selected workload reads one (the kernels do not).
    files = any("{" in x for w in wls for x in w[2] + w[3])
    inp = ensure_input(WORK / "inputs" / "mixed-20MiB.dat", 20 << 20) if files and not args.quick else None
    small = ensure_input(WORK / "inputs" / "mixed-4MiB.dat", 4 << 20) if files else None

    log(f"== building {len(progs)} programs × {len(VARIANTS)} variants ({NPROC} jobs)")
    builds = build_all(progs, [v[0] for v in VARIANTS])

    # Compressed inputs for the decompression workload, made by the baseline build.
    bz2 = WORK / "inputs" / "mixed-20MiB.dat.bz2"
    small_bz2 = WORK / "inputs" / "mixed-4MiB.dat.bz2"
    if "bzip2" in progs:
        for src_f, dst in [(inp, bz2), (small, small_bz2)]:
            if src_f is not None and not dst.exists():
                with open(dst.with_suffix(".tmp"), "wb") as f:
                    subprocess.run([builds[("bzip2", "baseline")]["binary"], "-c", "-9", str(src_f)], stdout=f,
                                   check=True)
                dst.with_suffix(".tmp").rename(dst)
    fill = dict(input=str(inp), small=str(small), bz2=str(bz2), small_bz2=str(small_bz2))
    use_small = args.quick
    runs_def = []
    for name, prog, full, sm in wls:
        a = sm if use_small else full
        runs_def.append((name, prog, [x.format(**fill) for x in a]))

    profdir = WORK / "profiles"
    outdir = WORK / "out"
    shutil.rmtree(profdir, ignore_errors=True)
    profdir.mkdir(parents=True)
    outdir.mkdir(parents=True, exist_ok=True)
    env0 = dict(os.environ, LC_ALL="C")

    log("== validating: every variant must print what the baseline prints, and write its profile")
    expected = {}
    for name, prog, a in runs_def:
        for v, *_ in VARIANTS:
            penv, ppath = profile_env(v, name, profdir)
            remove(ppath)
            o = outdir / f"{name}.{v}.out"
            wall, cpu, rc, err = run_timed([builds[(prog, v)]["binary"], *a], dict(env0, **penv), o)
            if rc != 0:
                raise SystemExit(f"{name}/{v}: exit status {rc}\n{err}")
            digest = sha256(o)
            if v == "baseline":
                expected[name] = digest
            elif digest != expected[name]:
                raise SystemExit(f"{name}/{v}: output differs from the baseline's (see {o})")
            if ppath is not None and psize(ppath) == 0:
                raise SystemExit(f"{name}/{v}: no profile written at {ppath}")
            log(f"  {name:20s} {v:20s} ok  {wall:.2f}s")

    log(f"== timing: {reps} interleaved repetitions")
    times = {name: {v[0]: [] for v in VARIANTS} for name, *_ in runs_def}
    cpus = {name: {v[0]: [] for v in VARIANTS} for name, *_ in runs_def}
    scratch = outdir / "timed.out"
    for rep in range(reps):
        for name, prog, a in runs_def:
            order = [v[0] for v in VARIANTS]
            k = rep % len(order)
            order = order[k:] + order[:k]  # rotate, so no variant always runs first or last
            for v in order:
                penv, ppath = profile_env(v, name, WORK / "timed-profiles")
                (WORK / "timed-profiles").mkdir(exist_ok=True)
                remove(ppath)
                wall, cpu, rc, err = run_timed([builds[(prog, v)]["binary"], *a], dict(env0, **penv), scratch)
                if rc != 0:
                    raise SystemExit(f"{name}/{v}: exit status {rc} in a timed run\n{err}")
                times[name][v].append(wall)
                cpus[name][v].append(cpu)
                remove(ppath)
            log(f"  rep {rep + 1}/{reps} {name}: " + " ".join(f"{v}={times[name][v][-1]:.2f}" for v in times[name]))

    if dist_identity() != mach["dist"]:
        log("warning: dist/ changed during the run (rebuilt by someone else?); the pathprof variants were built "
            "with the one recorded at the start")
        mach["dist_changed_during_run"] = True
    R = dict(machine=mach, reps=reps, quick=args.quick, variants=[v[0] for v in VARIANTS],
             variant_flags={v[0]: [v[1].replace(str(ROOT) + "/", ""), *OPT, *v[2]] for v in VARIANTS},
             workloads={name: dict(program=prog, args=[x.replace(str(ROOT) + "/", "") for x in a])
                        for name, prog, a in runs_def},
             sources={p: d["version"] for p, d in progs.items()},
             input_sha256={"mixed": sha256(small if args.quick else inp)} if files else {}, runs={})
    for name, *_ in runs_def:
        R["runs"][name] = {v: dict(median=statistics.median(times[name][v]), times=times[name][v],
                                   cpu_median=statistics.median(cpus[name][v]))
                           for v in times[name]}
    R["geomean_overhead"] = {v: geomean([R["runs"][w][v]["median"] / R["runs"][w][REFERENCE[v]]["median"]
                                         for w in R["runs"]]) for v in R["variants"]}
    R["geomean_overhead_cpu"] = {v: geomean([R["runs"][w][v]["cpu_median"] / R["runs"][w][REFERENCE[v]]["cpu_median"]
                                             for w in R["runs"]]) for v in R["variants"]}
    R["head_to_head"] = {}
    for p in PATHPROF_VARIANTS:
        for q in {"llvm-ir-pgo", HEAD_TO_HEAD[p]}:
            R["head_to_head"][f"{p}/{q}"] = geomean([R["runs"][w][p]["median"] / R["runs"][w][q]["median"]
                                                     for w in R["runs"]])
    R["head_to_head_paired"] = {f"{p}/{q}": dict(zip(("estimate", "low", "high"), paired_head_to_head(R["runs"], p, q)))
                                for p in PATHPROF_VARIANTS for q in {"llvm-ir-pgo", HEAD_TO_HEAD[p]}}

    log("== static counters, sizes")
    R["static"], R["sizes"] = {}, {}
    for p in progs:
        s = {v: parse_stats(builds[(p, v)]["stats"]) for v in PATHPROF_VARIANTS}
        w0 = next(n for n, prog, _ in runs_def if prog == p)
        for v in ["llvm-ir-pgo", "llvm-fe-pgo"]:
            s[v] = llvm_counters(profdir / f"{w0}.{v}.profraw")
        s["refs"] = {}
        s["refs_hot"] = {}
        for v, _, _, kind in VARIANTS:
            if kind:
                r = counter_refs(builds[(p, v)]["binary"], kind)
                s["refs"][v] = r["total"]
                s["refs_hot"][v] = dict(sorted(r["per_function"].items(), key=lambda x: -x[1])[:15])
        R["static"][p] = s
        R["sizes"][p] = {v[0]: size_of(builds[(p, v[0])]["binary"]) for v in VARIANTS}

    log("== dynamic counts, profile sizes, post-processing times")
    R["dynamic"], R["profiles"] = {}, {}
    for name, prog, a in runs_def:
        d = {}
        for v in ["llvm-ir-pgo", "llvm-fe-pgo"]:
            d[v] = llvm_counters(profdir / f"{name}.{v}.profraw")["dynamic_increments"]
        e = pathprof_dynamic(profdir / f"{name}.pp-edge.pathprof", "edge", builds[(prog, "pp-edge")]["term_blocks"])
        d["pp-edge"] = e["dynamic_increments"]
        d["pp-path-arrivals"] = e["executions_of_blocks_with_termination_edges"]
        pth = pathprof_dynamic(profdir / f"{name}.pp-path.pathprof", "path")
        d["pp-path"] = pth["dynamic_increments"]
        d["pp-path-executed-paths"] = pth["executed_paths"]
        R["dynamic"][name] = d
        sizes = {v[0]: psize(profile_env(v[0], name, profdir)[1]) for v in VARIANTS if v[3]}
        tm = {
            "llvm-profdata merge": timed_cmd([PROFDATA, "merge", "-o", str(WORK / "tmp.profdata"),
                                              str(profdir / f"{name}.llvm-ir-pgo.profraw")]),
            "pp-edge show": timed_cmd([str(PATHPROF), "show", str(profdir / f"{name}.pp-edge.pathprof")]),
            "pp-path decode": timed_cmd([str(PATHPROF), "decode", str(profdir / f"{name}.pp-path.pathprof")]),
            "pp-path show": timed_cmd([str(PATHPROF), "show", str(profdir / f"{name}.pp-path.pathprof")]),
            "pp-path decode --json": timed_cmd([str(PATHPROF), "decode", "--json",
                                                str(profdir / f"{name}.pp-path.pathprof")]),
        }
        R["profiles"][name] = dict(size=sizes, time=tm)

    if not args.no_compile_time:
        if args.quick:
            cfile, cprog, creps = src["libz-sys"] / "src" / "zlib" / "deflate.c", "zlib", 1
        else:
            cfile, cprog, creps = src["libsqlite3-sys"] / "sqlite3" / "sqlite3.c", "sqlite", args.compile_reps
        allp = programs(src)
        cfl = allp[cprog]["cflags"]
        log(f"== compile time of {cfile.name} ({creps} interleaved)")
        variants_ct = {
            "clang -O2": ["clang-19", *OPT],
            "clang -O2 -gline-tables-only": ["clang-19", *OPT, "-gline-tables-only"],
            "pathprof edge": [str(PPCLANG), *OPT, "--pathprof-mode=edge"],
            "pathprof path": [str(PPCLANG), *OPT, "--pathprof-mode=path"],
            "llvm-ir-pgo": ["clang-19", *OPT, "-fprofile-generate"],
            "llvm-fe-pgo": ["clang-19", *OPT, "-fprofile-instr-generate"],
        }
        ct = {k: dict(wall=[], cpu=[]) for k in variants_ct}
        for rep in range(creps):
            for k, c in variants_ct.items():
                wall, cpu, rc, err = run_timed([*c, *cfl, "-w", "-c", str(cfile), "-o", str(WORK / "ct.o")], env0,
                                               WORK / "ct.out")
                if rc != 0:
                    raise SystemExit(f"compile-time run {k} failed:\n{err}")
                ct[k]["wall"].append(wall)
                ct[k]["cpu"].append(cpu)
            log(f"  rep {rep + 1}: " + " ".join(f"{k}={ct[k]['cpu'][-1]:.1f}" for k in ct))
        R["compile_time"] = dict(file=f"{cfile.parent.parent.name}/{cfile.parent.name}/{cfile.name}", reps=creps,
                                 results={k: dict(wall=statistics.median(v["wall"]), cpu=statistics.median(v["cpu"]),
                                                  walls=v["wall"], cpus=v["cpu"]) for k, v in ct.items()})
        log("== instrumentation passes' own time (-ftime-report, one compile each)")
        own_variants = {
            "pathprof edge": variants_ct["pathprof edge"],
            "pathprof path": variants_ct["pathprof path"],
            "pathprof context": [str(PPCLANG), *OPT, "--pathprof-mode=context"],
            "llvm-ir-pgo": variants_ct["llvm-ir-pgo"],
            "llvm-fe-pgo": variants_ct["llvm-fe-pgo"],
        }
        own = {}
        for k, c in own_variants.items():
            wall, cpu, rc, err = run_timed([*c, *cfl, "-w", "-c", str(cfile), "-o", str(WORK / "ct.o"), "-ftime-report"],
                                           env0, WORK / "ct.out")
            if rc != 0:
                raise SystemExit(f"compile-time report {k} failed:\n{err}")
            own[k] = dict(cpu=cpu, passes=instrumentation_pass_seconds(err))
            log(f"  {k}: " + ", ".join(f"{n} {t:.2f} s" for n, t in own[k]["passes"].items()))
        R["compile_time"]["instrumentation_passes"] = own

    R["total_seconds"] = time.perf_counter() - t_start
    md = "# pathprof benchmark results\n\n" + markdown(R)
    out_base.parent.mkdir(parents=True, exist_ok=True)
    Path(str(out_base) + ".md").write_text(md)
    Path(str(out_base) + ".json").write_text(json.dumps(R, indent=1, default=str) + "\n")
    print(md)
    log(f"== wrote {out_base}.md and {out_base}.json in {R['total_seconds']:.0f} s")


if __name__ == "__main__":
    main()
