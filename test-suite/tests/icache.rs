//! Mode icache end to end: programs built twice — plain with `-fbasic-block-address-map`, and with
//! `--pathprof-mode=icache` — and `pathprof icache TRACE --binary PLAIN` checked against cachegrind on the plain
//! binary (a second method: every fetch simulated by valgrind) and against counts derived by hand.
//!
//! The programs call no library function while they run (they return their result as the exit code), and
//! `-falign-functions=64` keeps the C runtime's code off their cache lines, so cachegrind's cache holds only
//! their lines after the first fetch of each: accesses and misses must then be equal, not close.

use pathprof_test_suite::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const GEOMETRIES: [&str; 2] = ["1024,1,32", "32768,8,64"];

/// Three functions that call each other in a loop, with branches whose outcome varies.
const CONFLICTS: &str = r#"
static int __attribute__((noinline)) leaf(int x) {
  int s = 0;
  for (int i = 0; i < x; i++)
    s += (i & 3) ? i : -i;
  return s;
}
static int __attribute__((noinline)) mid(int x) {
  int s = 1;
  for (int i = 0; i < x; i++) {
    if (i % 7 == 0)
      s = s * 3 + 1;
    else
      s += leaf(i & 15);
  }
  return s;
}
int main(int argc, char **argv) {
  (void)argv;
  int t = 0;
  for (int k = 0; k < 300; k++)
    t += mid(k % 40 + argc);
  return t & 0x7f;
}
"#;

/// One function of 60 one-byte nops, a 10-byte `movabs` that straddles the 64-byte line, and `ret`: 62
/// instructions per call, on 2 lines of 64 bytes (3 of 32: the `movabs` at offset 60 straddles 32..63/64..95).
const PADDED: &str = r#"
void __attribute__((noinline)) pad(void) {
  __asm__ volatile(".fill 60, 1, 0x90\n\tmovabs $0x1122334455667788, %%rax" ::: "rax");
}
int main(void) {
  for (int i = 0; i < 1000; i++)
    pad();
  return 0;
}
"#;

/// Builds `source` plain and in icache mode with `opt`, runs both; returns (plain binary, trace).
fn build(dir: &Path, source: &str, opt: &str) -> (PathBuf, PathBuf) {
    build_as(dir, source, opt, false)
}

/// `build` for C (`cxx` false) or C++.
fn build_as(dir: &Path, source: &str, opt: &str, cxx: bool) -> (PathBuf, PathBuf) {
    let src = dir.join(if cxx { "prog.cc" } else { "prog.c" });
    std::fs::write(&src, source).unwrap();
    let flags = [opt, "-no-pie", "-gdwarf-4", "-falign-functions=64"];
    let plain = dir.join("plain");
    let clang = if cxx { "clang++-19" } else { "clang-19" };
    run_ok(Command::new(clang).args(flags).arg("-fbasic-block-address-map").arg(&src).arg("-o").arg(&plain));
    let icache = dir.join("icache");
    run_ok(wrapper(cxx).arg("--pathprof-mode=icache").args(flags).arg(&src).arg("-o").arg(&icache));
    let trace = dir.join("out.pathtrace");
    let a = Command::new(&plain).output().unwrap();
    let b = Command::new(&icache).env("PATHPROF_TRACE", &trace).output().unwrap();
    assert_eq!(a.status.code(), b.status.code(), "the traced build must behave as the plain one");
    assert!(trace.exists(), "no trace written");
    (plain, trace)
}

fn simulate(trace: &Path, plain: &Path, geometry: &str) -> Value {
    simulate_with(trace, plain, geometry, &[])
}

/// `pathprof icache --json` with extra options (`--verify`, `--full`).
fn simulate_with(trace: &Path, plain: &Path, geometry: &str, extra: &[&str]) -> Value {
    let out = run_ok(
        Command::new(dist().join("bin/pathprof"))
            .args(["icache", "--json", "--I1", geometry])
            .args(extra)
            .arg("--binary")
            .arg(plain)
            .arg(trace),
    );
    serde_json::from_slice(&out.stdout).expect("icache --json prints JSON")
}

/// A loop kernel without library calls: a byte-array sieve on a static array, repeated (the first loop stores a
/// value that is not constant, so that -O2 does not turn it into a call of `memset`).
const SIEVE: &str = r#"
static unsigned char flags[4096];
static int __attribute__((noinline)) sieve(int n) {
  int count = 0;
  for (int i = 0; i < n; i++)
    flags[i] = (unsigned char)(1 + (i >> 30));
  for (int i = 2; i < n; i++)
    if (flags[i]) {
      count++;
      for (int k = i + i; k < n; k += i)
        flags[k] = 0;
    }
  return count;
}
int main(void) {
  int c = 0;
  for (int r = 0; r < 30; r++)
    c += sieve(4000 - r);
  return c & 0x7f;
}
"#;

/// Per simulated function: (accesses, misses).
fn simulated(v: &Value) -> BTreeMap<String, (u64, u64)> {
    v["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["simulated"].as_bool().unwrap())
        .map(|f| {
            (f["name"].as_str().unwrap().to_string(), (f["accesses"].as_u64().unwrap(), f["misses"].as_u64().unwrap()))
        })
        .collect()
}

/// cachegrind's Ir and I1mr per function name.
fn cachegrind(dir: &Path, plain: &Path, geometry: &str) -> BTreeMap<String, (u64, u64)> {
    let out = dir.join(format!("cg.{}", geometry.replace(',', "_")));
    Command::new("valgrind")
        // Without guest chasing: valgrind 3.19's cachegrind over-counts Ir when superblocks chase across jumps.
        // Symbols as the binary names them (C++: mangled), as `pathprof icache --json`'s `name`.
        .args(["--tool=cachegrind", "--cache-sim=yes", "--vex-guest-chase=no", "--demangle=no"])
        .arg(format!("--I1={geometry}"))
        .arg(format!("--cachegrind-out-file={}", out.display()))
        .arg(plain)
        .output()
        .expect("valgrind is installed (scripts/setup.sh)");
    let text = std::fs::read_to_string(&out).expect("cachegrind wrote its output");
    let mut events = Vec::new();
    let mut per_fn: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut fun = None;
    for line in text.lines() {
        if let Some(e) = line.strip_prefix("events: ") {
            events = e.split_whitespace().map(str::to_string).collect();
        } else if let Some(f) = line.strip_prefix("fn=") {
            fun = Some(f.to_string());
        } else if line.starts_with(|c: char| c.is_ascii_digit()) {
            let v: Vec<u64> = line.split_whitespace().skip(1).map(|x| x.parse().unwrap()).collect();
            let at = |name: &str| events.iter().position(|e| e == name).and_then(|i| v.get(i).copied()).unwrap_or(0);
            let e = per_fn.entry(fun.clone().unwrap()).or_default();
            e.0 += at("Ir");
            e.1 += at("I1mr");
        }
    }
    per_fn
}

/// Builds `source` at -O2 and checks, in both geometries, that `pathprof icache --verify` simulates at least
/// the functions `expect` names and that every simulated function's accesses and misses equal cachegrind's
/// (the programs call no library function while they run); returns each geometry's report.
fn simulated_at_o2_equal_cachegrind(name: &str, source: &str, expect: &[&str]) -> Vec<Value> {
    let dir = scratch(&format!("icache-{name}-O2"));
    let (plain, trace) = build(&dir, source, "-O2");
    let mut reports = Vec::new();
    for g in GEOMETRIES {
        let ours = simulate_with(&trace, &plain, g, &["--verify"]);
        let sim = simulated(&ours);
        assert!(expect.iter().all(|f| sim.contains_key(*f)), "{name} {g}: {ours}");
        let cg = cachegrind(&dir, &plain, g);
        for (f, v) in &sim {
            assert_eq!(Some(v), cg.get(f), "{name} {g} {f}: pathprof vs cachegrind");
        }
        reports.push(ours);
    }
    reports
}

#[test]
fn fetches_and_misses_equal_cachegrind() {
    for opt in ["-O0", "-O2"] {
        let dir = scratch(&format!("icache-cg{opt}"));
        let (plain, trace) = build(&dir, CONFLICTS, opt);
        for g in GEOMETRIES {
            let ours = simulate(&trace, &plain, g);
            let cg = cachegrind(&dir, &plain, g);
            let sim = simulated(&ours);
            if opt == "-O0" {
                // Unoptimised code keeps every IR block as a machine block with the same id (which is also
                // what the pass predicts there).
                let m = &ours["mapping"];
                let by_ids = m["identity"].as_u64().unwrap() + m["predicted"].as_u64().unwrap();
                assert_eq!(Some(by_ids), m["functions"].as_u64(), "{ours}");
                assert_eq!(sim.len(), 3, "{ours}");
            }
            for (name, &(accesses, misses)) in &sim {
                assert_eq!(Some(&(accesses, misses)), cg.get(name), "{opt} {g} {name}: pathprof vs cachegrind");
            }
            // What is not simulated says why and is left out of the totals.
            for f in ours["functions"].as_array().unwrap() {
                if !f["simulated"].as_bool().unwrap() {
                    assert!(f["reason"].as_str().is_some_and(|r| !r.is_empty()), "{f}");
                }
            }
            let total: u64 = sim.values().map(|v| v.0).sum();
            assert_eq!(ours["total"]["accesses"].as_u64(), Some(total));
        }
    }
}

#[test]
fn static_classification_equals_the_full_simulation_and_cachegrind() {
    for (name, source) in [("conflicts", CONFLICTS), ("sieve", SIEVE)] {
        for opt in ["-O0", "-O2"] {
            let dir = scratch(&format!("icache-static-{name}{opt}"));
            let (plain, trace) = build(&dir, source, opt);
            for g in GEOMETRIES {
                // --verify runs both methods and fails unless every function agrees.
                let ours = simulate_with(&trace, &plain, g, &["--verify"]);
                let what = format!("{name} {opt} {g}");
                assert_eq!(ours["classification"]["applied"], true, "{what}: {ours}");
                assert_eq!(ours["classification"]["verified"], true, "{what}: {ours}");
                let full = simulate_with(&trace, &plain, g, &["--full"]);
                assert_eq!(full["classification"]["applied"], false, "{what}");
                assert_eq!(simulated(&ours), simulated(&full), "{what}: static-driven vs full simulation");
                let cg = cachegrind(&dir, &plain, g);
                for (f, v) in simulated(&ours) {
                    assert_eq!(Some(&v), cg.get(&f), "{what} {f}: pathprof vs cachegrind");
                }
                // Each function's categories share out its accesses; some are charged without simulation.
                let mut classified = 0;
                for f in ours["functions"].as_array().unwrap().iter().filter(|f| f["simulated"] == true) {
                    let c = &f["categories"];
                    let by_cat: Vec<u64> = ["always_hit", "always_miss", "first_miss", "conflict"]
                        .iter()
                        .map(|k| c[k].as_u64().unwrap())
                        .collect();
                    assert_eq!(by_cat.iter().sum::<u64>(), f["accesses"].as_u64().unwrap(), "{what} {f}");
                    classified += by_cat[..3].iter().sum::<u64>();
                }
                assert_eq!(ours["total"]["classified_statically"].as_u64(), Some(classified), "{what}");
                assert!(classified > 0, "{what}: {ours}");
            }
        }
    }
}

/// A loop whose condition is an `||` of two compares: at -O2 the IR has one block ending in `br (or a, b)`,
/// which instruction selection splits into two machine branches (the second in a block codegen adds). Without
/// the same split in the traced IR the edge to the `then` block would not tell whether that block ran, and
/// `main` was refused ("a successor is reached by several machine paths").
const SPLIT_CONDITION: &str = r#"
static int __attribute__((noinline)) work(int x) {
  int s = 0;
  for (int i = 0; i < x; i++)
    s += (i & 1) ? i : 3;
  return s;
}
int main(int argc, char **argv) {
  (void)argv;
  int t = 0;
  for (int k = 0; k < 500; k++) {
    if ((k & 3) == argc || k % 5 == 1)
      t += work(k & 31);
    else
      t -= k;
  }
  return t & 0x7f;
}
"#;

#[test]
fn a_condition_codegen_splits_is_simulated_and_equals_cachegrind() {
    // --verify also checks the static-driven counts against a simulation of every fetch.
    simulated_at_o2_equal_cachegrind("split", SPLIT_CONDITION, &["main", "work"]);
}

/// Recursive functions (shapes of self_recursion.c, without the C library) whose -O2 code codegen's IR passes
/// reshape before instruction selection numbers the blocks (LoopStrengthReduce's loop canonicalisation adds
/// blocks, CodeGenPrepare removes some), and whose return block tail duplication copies into predecessors: the
/// ids of their IR blocks shift. The order-preserving alignment finds several candidates for both and refused
/// them; the pass's prediction (it runs those IR passes on a copy) fixes the ids.
const SHIFTED_IDS: &str = r#"
static long __attribute__((noinline)) ackermann(long m, long n) {
  if (m == 0)
    return n + 1;
  if (n == 0)
    return ackermann(m - 1, 1);
  return ackermann(m - 1, ackermann(m, n - 1));
}
/* Bits set along a heap-ordered tree's paths: a loop, then one or two recursive calls. */
static int __attribute__((noinline)) tree_bits(const unsigned *heap, int size, int at) {
  if (at >= size)
    return 0;
  int bits = 0;
  for (unsigned v = heap[at]; v != 0; v >>= 1)
    bits += (int)(v & 1);
  if (heap[at] % 4 == 1)
    return bits + tree_bits(heap, size, 2 * at + 2);
  return bits + tree_bits(heap, size, 2 * at + 1) + tree_bits(heap, size, 2 * at + 2);
}
static unsigned heap[255];
int main(int argc, char **argv) {
  (void)argv;
  for (int i = 0; i < 255; i++)
    heap[i] = (unsigned)(i * 37 + argc) % 101;
  long t = ackermann(2, 3 + argc) + tree_bits(heap, 255, 0);
  return (int)(t & 0x7f);
}
"#;

#[test]
fn ids_codegen_shifted_are_predicted_and_the_counts_equal_cachegrind() {
    for ours in simulated_at_o2_equal_cachegrind("shifted", SHIFTED_IDS, &["main", "ackermann", "tree_bits"]) {
        assert!(ours["mapping"]["predicted"].as_u64().unwrap() >= 2, "{ours}");
    }
}

/// A dense `switch` that codegen lowers into a jump table (`lea` of the table, `movsxd` of the entry, `add`,
/// `jmp` through a register): `pathprof icache` reads the table's entries from the binary's read-only data to
/// know where the jump goes; before, the function was refused ("ends in an indirect jump").
const JUMP_TABLE: &str = r#"
static int __attribute__((noinline)) classify(unsigned x) {
  switch (x % 11) {
  case 0: return 7;
  case 1: return x * 3;
  case 2: return x ^ 5;
  case 3: return (int)(x >> 2);
  case 4: return 11;
  case 5: return (int)(x * x);
  case 6: return (int)(x + 9);
  case 7: return (int)(x - 4);
  case 8: return (int)(x | 16);
  default: return 1;
  }
}
int main(int argc, char **argv) {
  (void)argv;
  int t = 0;
  for (unsigned i = 0; i < 5000; i++)
    t += classify(i * 7 + (unsigned)argc);
  return t & 0x7f;
}
"#;

#[test]
fn a_jump_table_is_read_from_the_binary_and_the_counts_equal_cachegrind() {
    simulated_at_o2_equal_cachegrind("jump-table", JUMP_TABLE, &["main", "classify"]);
}

/// longjmp out of callees (dropped without their returns) and within one activation, back to a `setjmp` that
/// returns again: each dropped activation ran its block up to the call that did not return, and the resumed
/// one goes on right after its setjmp call. Before, pathprof kept the dropped activations on its own stack and
/// charged what ran after the longjmp to them: `main` of longjmp.c was simulated with 57 of its 153 fetches.
#[test]
fn activations_a_longjmp_drops_and_resumes_equal_cachegrind() {
    for (name, source) in [
        ("longjmp", include_str!("../programs/longjmp.c")),
        ("setjmp_paths", include_str!("../programs/setjmp_paths.c")),
        ("inlined_loops", include_str!("../programs/inlined_loops.c")),
    ] {
        for opt in ["-O0", "-O2"] {
            let dir = scratch(&format!("icache-longjmp-{name}{opt}"));
            let (plain, trace) = build(&dir, source, opt);
            let g = GEOMETRIES[1];
            let ours = simulate(&trace, &plain, g);
            let cg = cachegrind(&dir, &plain, g);
            let sim = simulated(&ours);
            assert!(sim.contains_key("main"), "{name} {opt}: {ours}");
            for f in ["deep", "jump_loop"] {
                if source.contains(&format!(" {f}(")) {
                    assert!(sim.contains_key(f), "{name} {opt} {f}: {ours}");
                }
            }
            for (f, v) in &sim {
                assert_eq!(Some(v.0), cg.get(f).map(|c| c.0), "{name} {opt} {f}: accesses vs cachegrind's Ir");
            }
        }
    }
}

/// Two overloads and a member function that share the source name `f`, each run a different number of times.
const OVERLOADS: &str = r#"
int __attribute__((noinline)) f(int x) { return x * 3 + 1; }
int __attribute__((noinline)) f(double x) { return (int)(x * 0.5); }
struct S {
  int v;
  int __attribute__((noinline)) f() { return v ^ 5; }
};
int main(int argc, char **) {
  S s{argc};
  int t = 0;
  for (int i = 0; i < 10; i++) t += f(i);
  for (int i = 0; i < 20; i++) t += f((double)i);
  for (int i = 0; i < 30; i++) t += s.f();
  return t & 0x7f;
}
"#;

#[test]
fn cxx_functions_sharing_a_source_name_are_told_apart_by_symbol() {
    // Found on tinyxml2's xmltest (three `ParseDeep`s, four `Alloc`s): the report named each function by its
    // source name only, so the JSON rows of overloads and of members of several classes could not be told
    // apart nor matched with cachegrind's. `name` is now the symbol (as in the other commands' JSON), and
    // `display_name` the source name.
    let dir = scratch("icache-overloads");
    let (plain, trace) = build_as(&dir, OVERLOADS, "-O2", true);
    let g = "32768,8,64";
    let v = simulate(&trace, &plain, g);
    let cg = cachegrind(&dir, &plain, g);
    for symbol in ["_Z1fi", "_Z1fd", "_ZN1S1fEv"] {
        let f = v["functions"].as_array().unwrap().iter().find(|f| f["name"] == symbol);
        let f = f.unwrap_or_else(|| panic!("{symbol} listed: {v}"));
        assert_eq!(f["display_name"], "f", "{f}");
        assert!(f["simulated"].as_bool().unwrap(), "{f}");
        let ours = (f["accesses"].as_u64().unwrap(), f["misses"].as_u64().unwrap());
        assert_eq!(Some(&ours), cg.get(symbol), "{symbol}: pathprof vs cachegrind");
    }
    // The text report shows the source name with the symbol.
    let out = run_ok(Command::new(dist().join("bin/pathprof")).args(["icache", "--binary"]).arg(&plain).arg(&trace));
    let text = String::from_utf8_lossy(&out.stdout);
    for symbol in ["f [_Z1fi]", "f [_Z1fd]", "f [_ZN1S1fEv]"] {
        assert!(text.contains(symbol), "{symbol} in\n{text}");
    }
    assert!(text.contains("  main") && !text.contains("main ["), "main's symbol is its name, shown once:\n{text}");
}

#[test]
fn json_shape_and_categories_by_hand() {
    let dir = scratch("icache-json");
    let (plain, trace) = build(&dir, PADDED, "-O2");
    // pad() runs 1000 times: 60 nops (offsets 0..59), a movabs at 60..69, ret at 70. Its lines stay cached
    // once loaded (nothing else maps to their sets), so the first instruction of each line it enters is a
    // first miss and every other fetch an always-hit: 64-byte lines: the nop at 0 and the movabs (entering the
    // second line); 32-byte lines: the nops at 0 and 32 and the movabs (entering the third line).
    for (g, size, assoc, line, first_misses) in [("32768,8,64", 32768, 8, 64, 2u64), ("1024,1,32", 1024, 1, 32, 3)] {
        let v = simulate(&trace, &plain, g);
        assert_eq!(v["cache"], serde_json::json!({"size": size, "assoc": assoc, "line": line}), "{v}");
        for f in v["functions"].as_array().unwrap() {
            assert!(f["name"].is_string() && f["accesses"].is_u64() && f["misses"].is_u64(), "{f}");
            let keys: Vec<&String> = f["categories"].as_object().unwrap().keys().collect();
            assert_eq!(keys, ["always_hit", "always_miss", "conflict", "first_miss"], "{f}");
        }
        assert!(v["total"]["accesses"].is_u64() && v["total"]["misses"].is_u64(), "{v}");
        let pad = v["functions"].as_array().unwrap().iter().find(|f| f["name"] == "pad").expect("pad simulated");
        assert_eq!(
            pad["categories"],
            serde_json::json!({"always_hit": 62_000 - 1000 * first_misses, "always_miss": 0,
                               "first_miss": 1000 * first_misses, "conflict": 0}),
            "{g}: {pad}"
        );
        assert_eq!(pad["misses"].as_u64(), Some(first_misses), "{g}");
    }
}

#[test]
fn straddling_instruction_and_padding_by_hand() {
    let dir = scratch("icache-hand");
    let (plain, trace) = build(&dir, PADDED, "-O2");
    // 62 instructions per call; cold misses only: 2 lines of 64 bytes, 3 of 32 (the movabs is one access that
    // brings in two lines).
    for (g, misses) in [("32768,8,64", 2), ("1024,1,32", 3)] {
        let sim = simulated(&simulate(&trace, &plain, g));
        assert_eq!(sim.get("pad"), Some(&(62_000, misses)), "{g}");
    }
}

#[test]
fn plain_trace_files_and_binaries_without_a_block_map_are_refused() {
    let dir = scratch("icache-refuse");
    let src = dir.join("p.c");
    std::fs::write(&src, "int main(void) { return 0; }\n").unwrap();
    let exe = dir.join("traced");
    run_ok(wrapper(false).arg("--pathprof-mode=trace").arg(&src).arg("-o").arg(&exe));
    let trace = dir.join("t.pathtrace");
    run_ok(Command::new(&exe).env("PATHPROF_TRACE", &trace));
    let no_map = dir.join("plain");
    run_ok(Command::new("clang-19").arg(&src).arg("-o").arg(&no_map));
    for (t, b, says) in [(&trace, &no_map, "not icache mode"), (&trace, &exe, "not icache mode")] {
        let out =
            Command::new(dist().join("bin/pathprof")).arg("icache").arg(t).arg("--binary").arg(b).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(says) && err.lines().count() == 1, "{err}");
    }
    let build_dir = scratch("icache-refuse-build");
    let (_, icache_trace) = build(&build_dir, "int main(void) { return 0; }\n", "-O0");
    let out = Command::new(dist().join("bin/pathprof"))
        .arg("icache")
        .arg(&icache_trace)
        .arg("--binary")
        .arg(&no_map)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("-fbasic-block-address-map"), "{err}");
}

/// Builds `source` plain and in icache mode at `opt` and runs both with `env` (the traced build's trace to
/// `out.pathtrace`); returns (plain binary, trace) after checking both ended alike (a signal included).
fn build_and_run_with(dir: &Path, source: &str, opt: &str, env: &[(&str, &str)]) -> (PathBuf, PathBuf) {
    let src = dir.join("prog.c");
    std::fs::write(&src, source).unwrap();
    let flags = [opt, "-no-pie", "-gdwarf-4", "-falign-functions=64"];
    let plain = dir.join("plain");
    run_ok(Command::new("clang-19").args(flags).arg("-fbasic-block-address-map").arg(&src).arg("-o").arg(&plain));
    let icache = dir.join("icache");
    run_ok(wrapper(false).arg("--pathprof-mode=icache").args(flags).arg(&src).arg("-o").arg(&icache));
    let trace = dir.join("out.pathtrace");
    let a = Command::new(&plain).output().unwrap();
    let b = Command::new(&icache).env("PATHPROF_TRACE", &trace).envs(env.iter().copied()).output().unwrap();
    assert_eq!(format!("{:?}", a.status), format!("{:?}", b.status), "the traced build must end as the plain one");
    assert!(trace.exists(), "no trace written");
    (plain, trace)
}

#[test]
fn a_crash_fetches_only_the_blocks_that_certainly_ran_and_equals_cachegrind() {
    // A fault in a function's body ends the trace after the last decision; the regenerator walks on through
    // the blocks that need no bits (the faulting block's return, each caller's rest after its call, main's
    // loop) — which never ran. `pathprof trace` stopped at the last certain block; `pathprof icache` fetched
    // them all: `down` 196 and `main` 49 instructions at -O0 where the plain program ran 172 and 43.
    for opt in ["-O0", "-O2"] {
        let dir = scratch(&format!("icache-crash{opt}"));
        let source = include_str!("../programs/trace_crash.c");
        let (plain, trace) = build_and_run_with(&dir, source, opt, &[("PATHPROF_SIGNALS", "1")]);
        for g in GEOMETRIES {
            let ours = simulate_with(&trace, &plain, g, &["--verify"]);
            assert_eq!(ours["total"]["incomplete_threads"], 1, "{opt} {g}: {ours}");
            let sim = simulated(&ours);
            if opt == "-O0" {
                assert!(sim.contains_key("down") && sim.contains_key("main"), "{opt}: {ours}");
            }
            let cg = cachegrind(&dir, &plain, g);
            for (f, v) in &sim {
                // The faulting block's fetches are not charged: how far into it the fault came is unknown;
                // cachegrind does not count the faulting superblock either.
                assert_eq!(Some(v.0), cg.get(f).map(|c| c.0), "{opt} {g} {f}: accesses vs cachegrind's Ir");
            }
        }
    }
}

#[test]
fn threads_traced_in_windows_only_are_reported_not_simulated() {
    // A flight recorder's window starts inside activations the simulator never saw enter: before, such a
    // thread was replayed from the window's first word as if it were the thread's start and came out as no
    // fetch at all, silently.
    let source = SIEVE.replace("r < 30", "r < 3000").replace("4000 - r", "40 + (r & 7)");
    let dir = scratch("icache-window");
    let (plain, trace) = build_and_run_with(&dir, &source, "-O0", &[("PATHPROF_TRACE_RING", "1024")]);
    let listing = run_ok(Command::new(dist().join("bin/pathprof")).args(["trace", "--summary"]).arg(&trace));
    assert!(String::from_utf8_lossy(&listing.stdout).contains("partial from sync point"), "a window survived");
    let ours = simulate(&trace, &plain, GEOMETRIES[1]);
    assert_eq!(ours["total"]["windowed_threads"], 1, "{ours}");
    assert_eq!(ours["total"]["accesses"], 0, "{ours}");
    let text = run_ok(Command::new(dist().join("bin/pathprof")).args(["icache", "--binary"]).arg(&plain).arg(&trace));
    assert!(String::from_utf8_lossy(&text.stdout).contains("1 threads were traced in windows only"), "{text:?}");
}
