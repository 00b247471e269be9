//! End-to-end tests of `libpathprof_rt.a`: small C programs that define instrumented modules by hand (a
//! metadata blob from `ModuleMeta::encode`, a counter array, path tables mirroring `layout::PathTable` for
//! path-mode modules, a `ModuleDesc` mirroring `pathprof_format::layout::ModuleDesc`, a constructor that
//! registers it), built with clang-19 against the archive, run, and the profile they write parsed with the
//! `layout` headers.
//!
//! The archive is built once per test binary with `cargo build -p pathprof-rt --profile rt` into the target
//! directory this test runs from (or taken from `$PATHPROF_RUNTIME`). Tests fail, with a one-line hint, when
//! clang-19 is not installed. Each test works in its own directory under the system temp dir, removed when it passes.

use pathprof_core::graph::test_cfg;
use pathprof_format::layout::{
    fnv1a64, record_len, FileHeader, ModuleDesc, PathTable, RecordHeader, DESC_FLAG_ATOMIC, DESC_VERSION,
    FILE_HEADER_LEN, FILE_VERSION, PATH_HASH_MULTIPLIER, RECORD_FLAG_DROPPED, RECORD_FLAG_INCOMPLETE,
    RECORD_FLAG_THREADED_NONATOMIC, RECORD_FLAG_THREADS_IN_FLIGHT, RECORD_HEADER_LEN, SPARSE_ENTRY_LEN, SPARSE_REENTRY,
    SPARSE_REENTRY_BLOCK,
};
use pathprof_format::meta::{BlockMeta, FunctionMeta, Mode, ModuleMeta, PathMeta, PathStorage};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

// ---------------------------------------------------------------------------------------------------------------
// Harness

struct Tools {
    archive: PathBuf,
    include: PathBuf,
}

/// The archive and header. Panics with a one-line hint when clang-19 is missing, so a machine that cannot run
/// these tests fails them instead of passing them silently (as the test-suite crate does).
fn tools() -> &'static Tools {
    static TOOLS: OnceLock<Tools> = OnceLock::new();
    TOOLS.get_or_init(|| {
        if Command::new("clang-19").arg("--version").output().is_err() {
            panic!("clang-19 not found: the runtime tests compile C programs with it (install LLVM 19, see README)");
        }
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let include = manifest.join("../include");
        let archive = match std::env::var_os("PATHPROF_RUNTIME") {
            Some(p) if !p.is_empty() => PathBuf::from(p),
            _ => build_archive(manifest),
        };
        assert!(archive.is_file(), "runtime archive {} missing", archive.display());
        Tools { archive, include }
    })
}

/// Builds the archive with the rt profile into the target directory this test binary lives in
/// (`<target>/<profile>/deps/runtime-*`), which is `$CARGO_TARGET_DIR` when that is set, and assembles it as
/// `scripts/build.sh` does (`scripts/rt-archive.sh`, into `<target>/rt/assembled/`): the archive that ships.
fn build_archive(manifest: &Path) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .filter(|t| !t.is_empty())
        .map(PathBuf::from)
        .or_else(|| exe.ancestors().nth(3).map(Path::to_path_buf))
        .unwrap_or_else(|| manifest.join("../target"));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args(["build", "-p", "pathprof-rt", "--profile", "rt", "--target-dir"])
        .arg(&target)
        .current_dir(manifest)
        .output()
        .expect("running cargo");
    assert!(out.status.success(), "building the runtime archive failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let assembled = target.join("rt/assembled");
    std::fs::create_dir_all(&assembled).expect("create the assembled archive's directory");
    let out = Command::new(manifest.join("../scripts/rt-archive.sh"))
        .arg(target.join("rt/libpathprof_rt.a"))
        .arg(assembled.join("libpathprof_rt.a"))
        .output()
        .expect("running scripts/rt-archive.sh");
    assert!(out.status.success(), "assembling the runtime archive failed:\n{}", String::from_utf8_lossy(&out.stderr));
    assembled.join("libpathprof_rt.a")
}

/// A per-test scratch directory, deleted on success and kept (and named) on failure.
struct Dir {
    path: PathBuf,
}

impl Dir {
    fn new(name: &str) -> Dir {
        let path = std::env::temp_dir().join(format!("pathprof-rt-test-{}-{name}", std::process::id()));
        let _ = make_writable_recursively(&path);
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).unwrap();
        Dir { path }
    }

    fn join(&self, p: &str) -> PathBuf {
        self.path.join(p)
    }

    /// Entries of the directory, sorted.
    fn listing(&self) -> Vec<String> {
        let mut v: Vec<String> =
            fs::read_dir(&self.path).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("test directory kept: {}", self.path.display());
        } else {
            let _ = make_writable_recursively(&self.path);
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

fn make_writable_recursively(p: &Path) -> std::io::Result<()> {
    let md = fs::symlink_metadata(p)?;
    if md.is_dir() {
        fs::set_permissions(p, fs::Permissions::from_mode(0o755))?;
        for e in fs::read_dir(p)? {
            make_writable_recursively(&e?.path())?;
        }
    }
    Ok(())
}

/// A hand-made instrumented module.
#[derive(Clone)]
struct Module {
    meta: ModuleMeta,
    bytes: Vec<u8>,
    meta_hash: u64,
    name_hash: u64,
    num_counters: usize,
    flags: u32,
    /// Path-mode modules: the `function` of each `PathTable`.
    tables: Vec<u64>,
}

/// A module named `name` with one function; `variant` changes the metadata (another build of the module).
fn module(name: &str, variant: u32) -> Module {
    let cfg = test_cfg(4, &[(0, 1), (0, 2), (1, 3), (2, 3)], &[3]);
    let f = FunctionMeta {
        name: format!("work_v{variant}"),
        display_name: String::new(),
        file: name.to_string(),
        start_line: 1,
        blocks: vec![BlockMeta { lines: vec![] }; 4],
        // Four branch edges, one return, EXIT->entry: counters on three of the branch edges.
        edge_counters: vec![Some(0), Some(1), Some(2), None, None, None],
        cfg_hash: pathprof_format::profile::cfg_hash(&cfg),
        path: None,
        cfg,
        counter_base: 0,
        num_counters: 3,
        reentry_blocks: vec![],
    };
    finish_module(name, Mode::Edge, vec![f], 3, vec![])
}

/// The module named `name` of `functions` in `mode`, with `num_counters` dense counters and path tables for
/// the functions `tables` (validated: a broken fixture fails here, not in the runtime).
fn finish_module(
    name: &str,
    mode: Mode,
    functions: Vec<FunctionMeta>,
    num_counters: usize,
    tables: Vec<u64>,
) -> Module {
    let meta = ModuleMeta {
        interproc: None,
        path_arrivals: false,
        fork_reentries: false,
        left_out: Vec::new(),
        module_name: name.to_string(),
        output: String::new(),
        mode,
        weighting: "uniform".into(),
        atomic: false,
        functions,
        path_loop_resets: pathprof_core::ball_larus::ResetRule::None,
        compilation_dirs: Vec::new(),
    };
    meta.validate().unwrap();
    let bytes = meta.encode();
    Module {
        meta_hash: fnv1a64(&bytes),
        name_hash: fnv1a64(name.as_bytes()),
        num_counters,
        bytes,
        meta,
        flags: 0,
        tables,
    }
}

/// A path-mode module named `name`: function 0 counts its two paths densely (`C(i, 0..2)`), functions 1 and 2
/// count into hash tables 0 and 1 (`ADD(i, 0, path, delta)` and `ADD(i, 1, ...)`), so a table's index and its
/// function's index differ.
fn path_module(name: &str) -> Module {
    let cfg = test_cfg(4, &[(0, 1), (0, 2), (1, 3), (2, 3)], &[3]);
    let function = |i: u32, storage: PathStorage, num_counters: u32| FunctionMeta {
        name: format!("f{i}"),
        display_name: String::new(),
        file: name.to_string(),
        start_line: 1,
        blocks: vec![BlockMeta { lines: vec![] }; 4],
        edge_counters: vec![None; cfg.num_edges()],
        cfg_hash: pathprof_format::profile::cfg_hash(&cfg),
        path: Some(PathMeta { budget: 1 << 64, num_paths: 2, storage, instrumented_edges: vec![0, 1] }),
        cfg: cfg.clone(),
        counter_base: 0,
        num_counters,
        reentry_blocks: vec![],
    };
    let functions = vec![
        function(0, PathStorage::Dense, 2),
        function(1, PathStorage::Hashed { table: 0 }, 0),
        function(2, PathStorage::Hashed { table: 1 }, 0),
    ];
    finish_module(name, Mode::Path, functions, 2, vec![1, 2])
}

fn atomic(mut m: Module) -> Module {
    m.meta.atomic = true;
    m.bytes = m.meta.encode();
    m.meta_hash = fnv1a64(&m.bytes);
    m.flags = DESC_FLAG_ATOMIC;
    m
}

/// C source defining `modules` (module `i` has counters `ctr<i>[]`, reachable as `C(i, k)`) and registering
/// them from a constructor, followed by `rest` (which defines `main`).
fn c_source(modules: &[&Module], rest: &str) -> String {
    let mut s = String::new();
    s.push_str(
        "#define _GNU_SOURCE\n#include <stdint.h>\n#include <stddef.h>\n#include <stdio.h>\n#include <stdlib.h>\n\
         #include <string.h>\n#include <unistd.h>\n#include <pthread.h>\n#include <sys/wait.h>\n#include <dlfcn.h>\n\
         #include \"pathprof.h\"\n",
    );
    // The descriptor and path table, mirroring pathprof_format::layout::{ModuleDesc, PathTable}; the asserts tie
    // them to the Rust layout.
    s.push_str(
        "typedef struct PathTable { uint64_t function, lock; uint64_t *slots; uint64_t capacity, len;\n\
         uint64_t *cache; uint64_t cache_len; } PathTable;\n\
         typedef struct Desc { uint32_t version, flags; const unsigned char *meta; uint64_t meta_len, meta_hash,\n\
         name_hash; uint64_t *counters; uint64_t num_counters; struct Desc *next; PathTable *tables;\n\
         uint64_t num_tables; void *regions; uint64_t num_regions; void (*ip_swap)(uint64_t *); } Desc;\n\
         void __pathprof_register_module(Desc *);\nvoid __pathprof_unregister_module(Desc *);\n\
         void __pathprof_path_add(PathTable *, uint64_t, int64_t);\n\
         #define C(m, k) ctr##m[k]\n#define T(m, k) (&tbl##m[k])\n\
         #define ADD(m, k, path, delta) __pathprof_path_add(T(m, k), (path), (delta))\n\
         void __pathprof_path_cache_miss(PathTable *, uint64_t, int64_t);\n",
    );
    // What the pass emits inline for a non-atomic build (see `PathTable::cache`).
    writeln!(
        s,
        "static inline void pp_cached_add(PathTable *t, uint64_t path, int64_t delta) {{\n\
         \x20 uint64_t len = t->cache_len, i = len == 1 ? 0 : (path * {PATH_HASH_MULTIPLIER:#x}ull) >> (64 - __builtin_ctzll(len));\n\
         \x20 if (t->cache[i] == path) t->cache[len + i] += (uint64_t)delta; else __pathprof_path_cache_miss(t, path, delta);\n}}\n\
         #define CADD(m, k, path, delta) pp_cached_add(T(m, k), (path), (delta))"
    )
    .unwrap();
    writeln!(s, "_Static_assert(sizeof(Desc) == {}, \"desc size\");", std::mem::size_of::<ModuleDesc>()).unwrap();
    writeln!(s, "_Static_assert(sizeof(PathTable) == {}, \"table size\");", std::mem::size_of::<PathTable>()).unwrap();
    for (field, off) in [
        ("lock", std::mem::offset_of!(PathTable, lock)),
        ("slots", std::mem::offset_of!(PathTable, slots)),
        ("len", std::mem::offset_of!(PathTable, len)),
        ("cache", std::mem::offset_of!(PathTable, cache)),
        ("cache_len", std::mem::offset_of!(PathTable, cache_len)),
    ] {
        writeln!(s, "_Static_assert(offsetof(PathTable, {field}) == {off}, \"{field}\");").unwrap();
    }
    for (field, off) in [
        ("meta", std::mem::offset_of!(ModuleDesc, meta)),
        ("counters", std::mem::offset_of!(ModuleDesc, counters)),
        ("next", std::mem::offset_of!(ModuleDesc, next)),
        ("num_tables", std::mem::offset_of!(ModuleDesc, num_tables)),
        ("num_regions", std::mem::offset_of!(ModuleDesc, num_regions)),
        ("ip_swap", std::mem::offset_of!(ModuleDesc, ip_swap)),
    ] {
        writeln!(s, "_Static_assert(offsetof(Desc, {field}) == {off}, \"{field}\");").unwrap();
    }
    for (i, m) in modules.iter().enumerate() {
        write!(s, "static const unsigned char meta{i}[] = {{").unwrap();
        for b in &m.bytes {
            write!(s, "{b},").unwrap();
        }
        s.push_str("};\n");
        writeln!(s, "static uint64_t ctr{i}[{}];", m.num_counters.max(1)).unwrap();
        // Tables as the pass emits them for a non-atomic build: zero except `function` and a cache, here of
        // CACHE_PAIRS pairs so that tests evict often (ADD bypasses it, CADD goes through it).
        writeln!(s, "static uint64_t cch{i}[{}][{}];", m.tables.len().max(1), 2 * CACHE_PAIRS).unwrap();
        write!(s, "static PathTable tbl{i}[{}] = {{", m.tables.len().max(1)).unwrap();
        for (k, f) in m.tables.iter().enumerate() {
            write!(s, "{{ {f}u, 0, 0, 0, 0, cch{i}[{k}], {CACHE_PAIRS} }},").unwrap();
        }
        s.push_str("};\n");
        writeln!(
            s,
            "static Desc desc{i} = {{ {DESC_VERSION}u, {}u, meta{i}, sizeof meta{i}, {:#x}ull, {:#x}ull, ctr{i}, {}u, 0, {}, {}u, 0, 0u, 0 }};",
            m.flags,
            m.meta_hash,
            m.name_hash,
            m.num_counters,
            if m.tables.is_empty() { "0".to_string() } else { format!("tbl{i}") },
            m.tables.len()
        )
        .unwrap();
    }
    s.push_str("__attribute__((constructor)) static void pathprof_test_register(void) {\n");
    for i in 0..modules.len() {
        writeln!(s, "  __pathprof_register_module(&desc{i});").unwrap();
    }
    s.push_str("}\n");
    s.push_str(rest);
    s
}

/// Compiles `source` as `dir/name` with clang-19 and the runtime archive.
fn compile(dir: &Dir, name: &str, source: &str, extra: &[&str]) -> PathBuf {
    let t = tools();
    let src = dir.join(&format!("{name}.c"));
    fs::write(&src, source).unwrap();
    let exe = dir.join(name);
    let out = Command::new("clang-19")
        .args(["-O1", "-w", "-I"])
        .arg(&t.include)
        .arg(&src)
        .args(extra)
        .arg(&t.archive)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(out.status.success(), "clang-19 failed on {}:\n{}", src.display(), String::from_utf8_lossy(&out.stderr));
    exe
}

/// Runs `exe` in its directory with `PATHPROF_FILE=profile`.
fn run(exe: &Path, args: &[&str], profile: &Path) -> Output {
    command(exe, args, profile).output().unwrap()
}

fn command(exe: &Path, args: &[&str], profile: &Path) -> Command {
    let mut c = Command::new(exe);
    c.args(args)
        .current_dir(exe.parent().unwrap())
        .env("PATHPROF_FILE", profile)
        .env_remove("PATHPROF_VERBOSE")
        .stdin(Stdio::null());
    c
}

fn describe(out: &Output) -> String {
    format!(
        "status: {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Asserts a clean run: exit 0 and nothing on stderr.
fn ok(out: Output) -> Output {
    assert!(out.status.success() && out.stderr.is_empty(), "unexpected run result\n{}", describe(&out));
    out
}

/// Whether the tests run as root (who can write anywhere), judged by the owner of a file we create.
fn running_as_root(dir: &Dir) -> bool {
    let probe = dir.join("uid-probe");
    fs::write(&probe, b"").unwrap();
    let root = fs::metadata(&probe).unwrap().uid() == 0;
    fs::remove_file(probe).unwrap();
    root
}

/// A command for `exe` that runs without root privileges: directly, or as `nobody` through `setpriv` when the
/// tests run as root. `None` (after a message) if that is impossible here.
fn unprivileged(dir: &Dir, exe: &Path, args: &[&str], profile: &Path) -> Option<Command> {
    if !running_as_root(dir) {
        return Some(command(exe, args, profile));
    }
    if Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("skipping: running as root and setpriv is not available to drop privileges");
        return None;
    }
    // `nobody` must be able to reach the test directory and run the program.
    for p in exe.ancestors().skip(1).take_while(|p| p.starts_with(std::env::temp_dir())) {
        let _ = fs::set_permissions(p, fs::Permissions::from_mode(0o755));
    }
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(exe)
        .args(args)
        .current_dir(exe.parent().unwrap())
        .env("PATHPROF_FILE", profile)
        .env_remove("PATHPROF_VERBOSE")
        .stdin(Stdio::null());
    Some(c)
}

// ---------------------------------------------------------------------------------------------------------------
// A minimal profile parser (strict: any inconsistency is an error)

#[derive(Debug, Clone, PartialEq)]
struct Record {
    h: RecordHeader,
    meta: Vec<u8>,
    counters: Vec<u64>,
    sparse: Vec<u8>,
}

fn parse(bytes: &[u8]) -> Result<Vec<Record>, String> {
    let head: &[u8; FILE_HEADER_LEN] = bytes.get(..FILE_HEADER_LEN).ok_or("short")?.try_into().unwrap();
    let h = FileHeader::decode(head).ok_or("bad magic")?;
    if h.version != FILE_VERSION {
        return Err(format!("version {}", h.version));
    }
    let payload = &bytes[FILE_HEADER_LEN..];
    if payload.len() as u64 != h.payload_len {
        return Err("payload length".into());
    }
    if fnv1a64(payload) != h.checksum {
        return Err("checksum".into());
    }
    let mut rest = payload;
    let mut out = Vec::new();
    for _ in 0..h.num_modules {
        let rh: &[u8; RECORD_HEADER_LEN] = rest.get(..RECORD_HEADER_LEN).ok_or("record header")?.try_into().unwrap();
        let rh = RecordHeader::decode(rh);
        if record_len(rh.meta_len, rh.num_counters, rh.num_sparse) != Some(rh.record_len) {
            return Err("record_len".into());
        }
        let rec = rest.get(..rh.record_len as usize).ok_or("record truncated")?;
        let meta = rec[RECORD_HEADER_LEN..RECORD_HEADER_LEN + rh.meta_len as usize].to_vec();
        let c0 = RECORD_HEADER_LEN + (rh.meta_len as usize).next_multiple_of(8);
        let counters = (0..rh.num_counters as usize)
            .map(|i| u64::from_le_bytes(rec[c0 + 8 * i..c0 + 8 * i + 8].try_into().unwrap()))
            .collect();
        let s0 = c0 + 8 * rh.num_counters as usize;
        let sparse = rec[s0..s0 + SPARSE_ENTRY_LEN * rh.num_sparse as usize].to_vec();
        out.push(Record { h: rh, meta, counters, sparse });
        rest = &rest[rh.record_len as usize..];
    }
    if !rest.is_empty() {
        return Err("trailing bytes".into());
    }
    Ok(out)
}

/// Reads a profile with the strict parser above and cross-checks it with the format crate's reader (the one
/// the CLI uses), which also decodes and validates every module's metadata against its counters.
fn read_profile(path: &Path) -> Vec<Record> {
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let recs = parse(&bytes).unwrap_or_else(|e| panic!("{} is not a valid profile: {e}", path.display()));
    let p = pathprof_format::profile::read(&bytes)
        .unwrap_or_else(|e| panic!("pathprof_format::profile::read rejects {}: {e}", path.display()));
    assert_eq!(p.modules.len(), recs.len());
    for (m, r) in p.modules.iter().zip(&recs) {
        assert_eq!((m.meta_hash, m.name_hash, m.runs, m.flags), (r.h.meta_hash, r.h.name_hash, r.h.runs, r.h.flags));
        assert_eq!((&m.counters, &m.meta_bytes), (&r.counters, &r.meta));
        let theirs: Vec<(u64, u128, u64)> = m.sparse.iter().map(|e| (e.function, e.path, e.count)).collect();
        let ours: Vec<(u64, u128, u64)> = r
            .sparse
            .chunks_exact(SPARSE_ENTRY_LEN)
            .map(|e| {
                let w = |i: usize| u64::from_le_bytes(e[8 * i..8 * i + 8].try_into().unwrap());
                (w(0), u128::from(w(1)) | (u128::from(w(2)) << 64), w(3))
            })
            .collect();
        assert_eq!(theirs, ours);
    }
    recs
}

fn looks_valid(path: &Path) -> bool {
    fs::read(path).map(|b| parse(&b).is_ok()).unwrap_or(false)
}

/// Builds `main` with module `m` (compiler `flags`) and runs it once without arguments, writing `dir/profile`:
/// the profile's path and the run's output, which must be a success.
fn run_main(dir: &Dir, m: &Module, main: &str, flags: &[&str], profile: &str) -> (PathBuf, Output) {
    let exe = compile(dir, "prog", &c_source(&[m], main), flags);
    let prof = dir.join(profile);
    let out = ok(run(&exe, &[], &prof));
    (prof, out)
}

/// [`run_main`], checking that the program printed `stdout`: `m`'s record of the profile.
fn run_once(dir: &Dir, m: &Module, main: &str, flags: &[&str], profile: &str, stdout: &[u8]) -> Record {
    let (prof, out) = run_main(dir, m, main, flags, profile);
    assert_eq!(out.stdout, stdout);
    record(&read_profile(&prof), m).clone()
}

/// The record of module `m`, checked to carry its identity and metadata (and no sparse entries).
fn record<'a>(recs: &'a [Record], m: &Module) -> &'a Record {
    let r = path_record(recs, m);
    assert_eq!(r.h.num_sparse, 0);
    r
}

/// The record of module `m`, checked to carry its identity and metadata.
fn path_record<'a>(recs: &'a [Record], m: &Module) -> &'a Record {
    let r = recs.iter().find(|r| r.h.meta_hash == m.meta_hash).expect("module record missing");
    assert_eq!(r.h.name_hash, m.name_hash);
    assert_eq!(r.meta, m.bytes);
    assert_eq!(ModuleMeta::decode(&r.meta).unwrap(), m.meta, "metadata must decode for the CLI");
    r
}

/// The sparse entries of a record as `(function, path) -> count`, checked to be sorted by (function, path),
/// unique, nonzero and with 64-bit paths.
fn sparse(r: &Record) -> BTreeMap<(u64, u64), u64> {
    let entries: Vec<[u64; 4]> = r
        .sparse
        .chunks_exact(SPARSE_ENTRY_LEN)
        .map(|e| std::array::from_fn(|i| u64::from_le_bytes(e[8 * i..8 * i + 8].try_into().unwrap())))
        .collect();
    assert!(entries.windows(2).all(|w| (w[0][0], w[0][1]) < (w[1][0], w[1][1])), "entries not sorted or repeated");
    assert!(entries.iter().all(|e| e[2] == 0 && e[3] != 0), "a 128-bit path or a zero count");
    entries.iter().map(|e| ((e[0], e[1]), e[3])).collect()
}

fn no_temp_files(dir: &Dir) {
    let l = dir.listing();
    assert!(!l.iter().any(|f| f.contains(".tmp.")), "temporary file left behind: {l:?}");
}

// ---------------------------------------------------------------------------------------------------------------
// Programs

/// `main`: adds argv[1] (default 1) × (5, 7, 0) to module 0's counters, prints a line, returns argv[2].
const COUNT_MAIN: &str = r#"
int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1;
  for (long r = 0; r < n; r++) {
    for (int i = 0; i < 5; i++) C(0, 0)++;
    for (int i = 0; i < 7; i++) C(0, 1)++;
  }
  printf("counted %ld\n", n);
  return argc > 2 ? atoi(argv[2]) : 0;
}
"#;

// ---------------------------------------------------------------------------------------------------------------
// Tests

#[test]
fn single_run_writes_exact_counts() {
    let dir = Dir::new("single");
    let m = module("single.c", 0);
    let exe = compile(&dir, "prog", &c_source(&[&m], COUNT_MAIN), &[]);
    let prof = dir.join("out.pathprof");
    let out = ok(run(&exe, &["3"], &prof));
    assert_eq!(out.stdout, b"counted 3\n");
    let recs = read_profile(&prof);
    assert_eq!(recs.len(), 1);
    let r = record(&recs, &m);
    assert_eq!(r.counters, vec![15, 21, 0]);
    assert_eq!((r.h.runs, r.h.flags), (1, 0));
    no_temp_files(&dir);
}

#[test]
fn a_module_registered_again_behind_another_is_ignored() {
    // A constructor run a second time after another module's (a function the optimiser emptied, called, runs
    // on into whatever code follows it: cmocka's test of a null-pointer store ran on into the module
    // constructor) linked the list into a cycle: the exit dump then never ended.
    let dir = Dir::new("registered-again");
    let (a, b) = (module("a.c", 0), module("b.c", 0));
    let main = COUNT_MAIN.replace("long n =", "__pathprof_register_module(&desc0);\n  long n =");
    let exe = compile(&dir, "prog", &c_source(&[&a, &b], &main), &[]);
    let prof = dir.join("p.pathprof");
    let mut c = command(Path::new("timeout"), &["20"], &prof);
    c.arg(&exe).arg("2").current_dir(&dir.path);
    let out = ok(c.output().unwrap());
    assert_eq!(out.stdout, b"counted 2\n");
    let recs = read_profile(&prof);
    assert_eq!(recs.len(), 2, "each module once");
    assert_eq!(record(&recs, &a).counters, vec![10, 14, 0]);
    assert_eq!(record(&recs, &b).counters, vec![0, 0, 0]);
}

#[test]
fn default_file_name_is_default_pathprof() {
    let dir = Dir::new("default-name");
    let m = module("d.c", 0);
    let exe = compile(&dir, "prog", &c_source(&[&m], COUNT_MAIN), &[]);
    // An empty PATHPROF_FILE counts as unset.
    ok(run(&exe, &[], Path::new("")));
    assert_eq!(record(&read_profile(&dir.join("default.pathprof")), &m).counters, vec![5, 7, 0]);
}

#[test]
fn second_run_merges() {
    let dir = Dir::new("merge");
    let (a, b) = (module("a.c", 0), module("b.c", 0));
    let src = c_source(&[&a, &b], &COUNT_MAIN.replace("printf", "C(1, 2) += n; printf"));
    let exe = compile(&dir, "prog", &src, &[]);
    let prof = dir.join("p.pathprof");
    ok(run(&exe, &["1"], &prof));
    ok(run(&exe, &["2"], &prof));
    let recs = read_profile(&prof);
    assert_eq!(recs.len(), 2);
    let (ra, rb) = (record(&recs, &a), record(&recs, &b));
    assert_eq!(ra.counters, vec![15, 21, 0]);
    assert_eq!(rb.counters, vec![0, 0, 3]);
    assert_eq!((ra.h.runs, rb.h.runs), (2, 2));
    // Registration order is file order.
    assert_eq!(recs[0].h.meta_hash, a.meta_hash);
}

#[test]
fn percent_p_gives_per_process_files() {
    let dir = Dir::new("percent-p");
    let m = module("p.c", 0);
    let exe = compile(&dir, "prog", &c_source(&[&m], COUNT_MAIN), &[]);
    let pattern = dir.join("prof-%p-%%.pathprof");
    let mut pids = Vec::new();
    for n in 1..=3 {
        let child = command(&exe, &[&n.to_string()], &pattern).stdout(Stdio::piped()).spawn().unwrap();
        pids.push((child.id(), n));
        ok(child.wait_with_output().unwrap());
    }
    for (pid, n) in pids {
        let f = dir.join(&format!("prof-{pid}-%.pathprof"));
        let r = read_profile(&f);
        assert_eq!((r.len(), r[0].h.runs), (1, 1));
        assert_eq!(record(&r, &m).counters, vec![5 * n, 7 * n, 0]);
    }
}

#[test]
fn percent_m_separates_binaries() {
    let dir = Dir::new("percent-m");
    let (a, b) = (module("one.c", 0), module("two.c", 0));
    let exe_a = compile(&dir, "a", &c_source(&[&a], COUNT_MAIN), &[]);
    let exe_b = compile(&dir, "b", &c_source(&[&b], COUNT_MAIN), &[]);
    let pattern = dir.join("%m.pathprof");
    ok(run(&exe_a, &[], &pattern));
    ok(run(&exe_a, &[], &pattern));
    ok(run(&exe_b, &[], &pattern));
    let files: Vec<String> = dir.listing().into_iter().filter(|f| f.ends_with(".pathprof")).collect();
    assert_eq!(files.len(), 2, "{files:?}");
    for f in &files {
        assert_eq!(f.len(), 16 + ".pathprof".len());
        let recs = read_profile(&dir.join(f));
        assert_eq!(recs.len(), 1);
        let want = if recs[0].h.meta_hash == a.meta_hash { 2 } else { 1 };
        assert_eq!(recs[0].h.runs, want);
    }
}

#[test]
fn sixteen_concurrent_processes_lose_nothing() {
    let dir = Dir::new("concurrent");
    let m = module("c.c", 0);
    let exe = compile(&dir, "prog", &c_source(&[&m], COUNT_MAIN), &[]);
    let prof = dir.join("shared.pathprof");
    let children: Vec<_> = (1..=16u64)
        .map(|n| command(&exe, &[&(n * 1000).to_string()], &prof).stdout(Stdio::piped()).spawn().unwrap())
        .collect();
    for c in children {
        ok(c.wait_with_output().unwrap());
    }
    let total: u64 = (1..=16u64).map(|n| n * 1000).sum();
    let recs = read_profile(&prof);
    let r = record(&recs, &m);
    assert_eq!(r.counters, vec![5 * total, 7 * total, 0]);
    assert_eq!(r.h.runs, 16);
    no_temp_files(&dir);
}

#[test]
fn fork_child_and_parent_merge_into_one_file() {
    let dir = Dir::new("fork");
    let m = module("f.c", 0);
    let main = r#"
int main(void) {
  C(0, 0) += 100;                      /* before the fork: reported once, by the parent */
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    C(0, 1) += 20;                     /* child only */
    return 0;                          /* exit() runs the child's dump */
  }
  int st;
  waitpid(pid, &st, 0);
  C(0, 2) += 3;                        /* parent after the fork */
  printf("child status %d\n", WEXITSTATUS(st));
  return 0;
}
"#;
    let r = run_once(&dir, &m, main, &[], "fork.pathprof", b"child status 0\n");
    assert_eq!(r.counters, vec![100, 20, 3]);
    assert_eq!(r.h.runs, 2);
}

/// The fork generation moves only in `fork()`ed children (a child's child moves it again), never in the parent or
/// a `vfork` child; each process writes the re-entries it recorded (summed per key) as flagged sparse entries,
/// and a child does not inherit its parent's. Re-entries the program records (as instrumented code does when
/// the generation changed across a call): the child resumes main's call (key 1) and the first fork (key 2); the
/// grandchild main's call (key 1) and the second fork (key 3); the child's second fork did not move the
/// child's generation. Merged: key 1 twice, keys 2 and 3 once.
#[test]
fn fork_children_record_reentries_and_vfork_changes_nothing() {
    let dir = Dir::new("fork-reentry");
    let mut m = module("r.c", 0);
    m.meta.fork_reentries = true;
    m.bytes = m.meta.encode();
    m.meta_hash = fnv1a64(&m.bytes);
    let main = r#"
extern uint64_t __pathprof_fork_gen;
void __pathprof_fork_reentry(Desc *, uint64_t, uint64_t);
#define GEN() __atomic_load_n(&__pathprof_fork_gen, __ATOMIC_RELAXED)
/* reentry_packed(function 0, block): 0 * 2 + 1 */
static void resumed(uint64_t before, uint64_t key) {
  if (GEN() != before) __pathprof_fork_reentry(&desc0, 1, key);
}
int main(void) {
  uint64_t g_main = GEN();
  C(0, 0) += 1;
  fflush(stdout);
  uint64_t g1 = GEN();
  pid_t a = fork();
  resumed(g1, 2);
  if (a == 0) {
    uint64_t g2 = GEN();
    fflush(stdout);
    pid_t b = fork();
    resumed(g2, 3);
    if (b == 0) {
      resumed(g_main, 1);
      printf("grandchild gen %llu\n", (unsigned long long)GEN());
      return 0;
    }
    int st;
    waitpid(b, &st, 0);
    resumed(g_main, 1);
    printf("child gen %llu\n", (unsigned long long)GEN());
    return 0;
  }
  int st;
  waitpid(a, &st, 0);
  resumed(g_main, 1);
  pid_t v = vfork();
  if (v == 0) _exit(GEN() == g_main ? 0 : 3);
  waitpid(v, &st, 0);
  printf("parent gen %llu vfork %d\n", (unsigned long long)GEN(), WEXITSTATUS(st));
  return 0;
}
"#;
    let exe = compile(&dir, "prog", &c_source(&[&m], main), &[]);
    let prof = dir.join("fork.pathprof");
    let out = ok(run(&exe, &[], &prof));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "grandchild gen 2\nchild gen 1\nparent gen 0 vfork 0\n");
    let recs = read_profile(&prof);
    let r = path_record(&recs, &m);
    assert_eq!(r.counters, vec![1, 0, 0]);
    assert_eq!(r.h.runs, 3);
    let re = SPARSE_REENTRY | SPARSE_REENTRY_BLOCK;
    assert_eq!(sparse(r), BTreeMap::from([((re, 1), 2), ((re, 2), 1), ((re, 3), 1)]));
    // Each process's own file (%p): the parent none, the child keys 1 and 2, the grandchild keys 1 and 3.
    let per = dir.join("fork-%p.pathprof");
    ok(run(&exe, &[], &per));
    let mut got: Vec<BTreeMap<(u64, u64), u64>> = dir
        .listing()
        .iter()
        .filter(|f| f.starts_with("fork-") && f.ends_with(".pathprof"))
        .map(|f| sparse(path_record(&read_profile(&dir.join(f)), &m)))
        .collect();
    got.sort();
    assert_eq!(
        got,
        [BTreeMap::new(), BTreeMap::from([((re, 1), 1), ((re, 2), 1)]), BTreeMap::from([((re, 1), 1), ((re, 3), 1)]),]
    );
}

#[test]
fn dump_mid_run_then_exit_reports_every_increment_once() {
    let dir = Dir::new("dump-mid-run");
    let m = module("d.c", 0);
    let main = r#"
int main(void) {
  C(0, 0) += 3;
  int a = __pathprof_dump();
  /* Keep the mid-run file: the next write renames a new inode over the name. */
  if (link(getenv("PATHPROF_FILE"), "mid.pathprof") != 0) return 9;
  int b = __pathprof_dump();           /* nothing new: no change, still success */
  C(0, 0) += 4;
  C(0, 1) += 1;
  printf("%d %d\n", a, b);
  return 0;
}
"#;
    let (prof, out) = run_main(&dir, &m, main, &[], "p.pathprof");
    assert_eq!(out.stdout, b"0 0\n");
    let mid = read_profile(&dir.join("mid.pathprof"));
    assert_eq!(record(&mid, &m).counters, vec![3, 0, 0]);
    let end = read_profile(&prof);
    let r = record(&end, &m);
    assert_eq!(r.counters, vec![7, 1, 0]);
    assert_eq!(r.h.runs, 1, "one process is one run, however often it dumps");
}

#[test]
fn reset_discards_counts() {
    let dir = Dir::new("reset");
    let m = module("r.c", 0);
    let main = r#"
int main(void) {
  C(0, 0) += 50; C(0, 1) += 60;
  __pathprof_reset();
  C(0, 1) += 2;
  return 0;
}
"#;
    let exe = compile(&dir, "prog", &c_source(&[&m], main), &[]);
    let prof = dir.join("p.pathprof");
    ok(run(&exe, &[], &prof));
    assert_eq!(record(&read_profile(&prof), &m).counters, vec![0, 2, 0]);
}

#[test]
fn atomic_counters_are_exact_under_threads_and_concurrent_dumps() {
    let dir = Dir::new("atomic");
    let m = atomic(module("t.c", 0));
    let main = r#"
static void *work(void *arg) {
  (void)arg;
  for (int i = 0; i < 1000000; i++) __atomic_fetch_add(&C(0, 0), 1, __ATOMIC_RELAXED);
  return 0;
}
int main(void) {
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], 0, work, 0);
  int fails = 0;
  for (int i = 0; i < 20; i++) { fails += __pathprof_dump() != 0; usleep(1000); }
  for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
  printf("%d\n", fails);
  return 0;
}
"#;
    let r = run_once(&dir, &m, main, &["-pthread"], "p.pathprof", b"0\n");
    assert_eq!(r.counters, vec![4_000_000, 0, 0]);
    assert_eq!(r.h.runs, 1);
}

#[test]
fn threads_still_running_at_exit_do_no_harm() {
    let dir = Dir::new("threads-at-exit");
    let m = module("x.c", 0);
    let main = r#"
static void *spin(void *arg) { (void)arg; for (;;) { C(0, 2)++; __pathprof_reset(); } return 0; }
int main(void) {
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, spin, 0);
  C(0, 0) += 1;
  usleep(20000);
  return 4;
}
"#;
    let exe = compile(&dir, "prog", &c_source(&[&m], main), &["-pthread"]);
    let prof = dir.join("p.pathprof");
    for _ in 0..5 {
        let out = run(&exe, &[], &prof);
        assert_eq!(out.status.code(), Some(4), "{}", describe(&out));
        assert!(out.stderr.is_empty(), "{}", describe(&out));
    }
    // Each run ended under running threads: written apart, one valid file per run, flagged.
    assert!(!prof.exists());
    let apart: Vec<PathBuf> = fs::read_dir(&dir.path)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".incomplete"))
        .collect();
    assert_eq!(apart.len(), 5, "{apart:?}");
    for file in &apart {
        let recs = read_profile(file);
        let r = record(&recs, &m);
        assert_eq!(r.h.runs, 1);
        assert_ne!(r.h.flags & RECORD_FLAG_THREADS_IN_FLIGHT, 0, "{}", file.display());
    }
}

/// Runs a program that prints and exits with status 3 in a failing setting; asserts that its output and status
/// are untouched, that stderr is exactly one `cannot write profile` warning with `reason`, and returns nothing.
fn assert_fails_politely(out: Output, profile: &Path, reason: &str) {
    assert_eq!(out.status.code(), Some(3), "{}", describe(&out));
    assert_eq!(out.stdout, b"counted 1\n", "{}", describe(&out));
    let err = String::from_utf8(out.stderr.clone()).unwrap();
    let want = format!("pathprof: warning: cannot write profile {}: {reason}\n", profile.display());
    assert_eq!(err, want, "{}", describe(&out));
}

#[test]
fn missing_directory_warns_once_and_changes_nothing() {
    let dir = Dir::new("missing-dir");
    let exe = compile(&dir, "prog", &c_source(&[&module("m.c", 0)], COUNT_MAIN), &[]);
    let prof = dir.join("no/such/dir/p.pathprof");
    assert_fails_politely(run(&exe, &["1", "3"], &prof), &prof, "No such file or directory");
    assert_eq!(dir.listing(), vec!["prog", "prog.c"]);
}

#[test]
fn unwritable_directory_warns_once_and_changes_nothing() {
    let dir = Dir::new("unwritable-dir");
    let exe = compile(&dir, "prog", &c_source(&[&module("m.c", 0)], COUNT_MAIN), &[]);
    let ro = dir.join("ro");
    fs::create_dir(&ro).unwrap();
    fs::set_permissions(&ro, fs::Permissions::from_mode(0o555)).unwrap();
    let prof = ro.join("p.pathprof");
    let Some(mut cmd) = unprivileged(&dir, &exe, &["1", "3"], &prof) else { return };
    assert_fails_politely(cmd.output().unwrap(), &prof, "Permission denied");
    assert_eq!(fs::read_dir(&ro).unwrap().count(), 0);
}

#[test]
fn profile_path_that_is_a_directory_warns_once() {
    let dir = Dir::new("path-is-dir");
    let exe = compile(&dir, "prog", &c_source(&[&module("m.c", 0)], COUNT_MAIN), &[]);
    let prof = dir.join("adir");
    fs::create_dir(&prof).unwrap();
    assert_fails_politely(run(&exe, &["1", "3"], &prof), &prof, "Is a directory");
    assert!(prof.is_dir());
    assert_eq!(dir.listing(), vec!["adir", "prog", "prog.c"]);
}

#[test]
fn read_only_existing_profile_is_left_alone() {
    let dir = Dir::new("read-only");
    let m = module("m.c", 0);
    let exe = compile(&dir, "prog", &c_source(&[&m], COUNT_MAIN), &[]);
    let sub = dir.join("w");
    fs::create_dir(&sub).unwrap();
    let prof = sub.join("p.pathprof");
    ok(run(&exe, &[], &prof));
    let before = fs::read(&prof).unwrap();
    fs::set_permissions(&prof, fs::Permissions::from_mode(0o444)).unwrap();
    // The directory stays writable (so only the file's mode protects it) and the lock file usable by anyone.
    fs::set_permissions(&sub, fs::Permissions::from_mode(0o777)).unwrap();
    fs::set_permissions(sub.join("p.pathprof.lock"), fs::Permissions::from_mode(0o666)).unwrap();
    let Some(mut cmd) = unprivileged(&dir, &exe, &["1", "3"], &prof) else { return };
    assert_fails_politely(cmd.output().unwrap(), &prof, "Permission denied");
    assert_eq!(fs::read(&prof).unwrap(), before, "a read-only profile must not change");
    let mut l: Vec<_> = fs::read_dir(&sub).unwrap().map(|e| e.unwrap().file_name()).collect();
    l.sort();
    assert_eq!(l, vec!["p.pathprof", "p.pathprof.lock"]);
}

#[test]
fn corrupt_existing_file_is_replaced_with_a_warning() {
    let dir = Dir::new("corrupt");
    let m = module("m.c", 0);
    let exe = compile(&dir, "prog", &c_source(&[&m], COUNT_MAIN), &[]);
    let prof = dir.join("p.pathprof");
    // A valid profile with one flipped counter byte (checksum mismatch), then plain text, then a truncation.
    ok(run(&exe, &[], &prof));
    let mut good = fs::read(&prof).unwrap();
    let n = good.len();
    good[n - 1] ^= 1;
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (good.clone(), "checksum mismatch"),
        (b"this is a text file, not a profile; it is long enough for a header\n".to_vec(), "bad magic"),
        (good[..n - 8].to_vec(), "length does not match the header (truncated?)"),
    ];
    for (bytes, why) in cases {
        fs::write(&prof, &bytes).unwrap();
        let out = run(&exe, &["2"], &prof);
        assert!(out.status.success(), "{}", describe(&out));
        let want = format!("pathprof: warning: {} is not a valid profile ({why}); replacing it\n", prof.display());
        assert_eq!(String::from_utf8_lossy(&out.stderr), want);
        let recs = read_profile(&prof);
        let r = record(&recs, &m);
        assert_eq!((r.counters.clone(), r.h.runs), (vec![10, 14, 0], 1));
    }
}

/// A rebuild of a module replaces its own old record — silently: every rebuild does it, and the program's
/// stderr is not the runtime's to change in healthy use; `PATHPROF_VERBOSE=1` tells. Other records stay.
#[test]
fn stale_build_is_replaced_silently_and_other_modules_are_kept() {
    let dir = Dir::new("stale");
    let (v1, v2, other) = (module("m.c", 1), module("m.c", 2), module("lib.c", 0));
    assert_ne!(v1.meta_hash, v2.meta_hash);
    let exe1 = compile(&dir, "v1", &c_source(&[&v1, &other], COUNT_MAIN), &[]);
    let exe2 = compile(&dir, "v2", &c_source(&[&v2], COUNT_MAIN), &[]);
    let prof = dir.join("p.pathprof");
    ok(run(&exe1, &["4"], &prof));
    let other_before = record(&read_profile(&prof), &other).clone();
    let out = run(&exe2, &["1"], &prof);
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "a healthy rebuild prints nothing");
    let recs = read_profile(&prof);
    assert_eq!(recs.len(), 2);
    assert!(!recs.iter().any(|r| r.h.meta_hash == v1.meta_hash));
    assert_eq!(record(&recs, &other), &other_before, "unrelated records are kept unchanged");
    let r = record(&recs, &v2);
    assert_eq!((r.counters.clone(), r.h.runs), (vec![5, 7, 0], 1));

    // Verbose: the replacement is reported, once, naming the identity hash of "m.c".
    ok(run(&exe1, &["4"], &prof));
    let out = command(&exe2, &["1"], &prof).env("PATHPROF_VERBOSE", "1").output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    let want = format!(
        "pathprof: {}: replacing the counts of an older build of a module (name hash {:#018x})\n",
        prof.display(),
        fnv1a64(b"m.c")
    );
    assert_eq!(err.lines().filter(|l| l.contains("older build")).count(), 1, "{err}");
    assert!(err.contains(&want), "{err}");
}

#[test]
fn same_build_in_two_images_is_one_record() {
    let dir = Dir::new("two-copies");
    let m = module("shared.c", 0);
    // Two descriptors of one build in one program (as when one object is linked into two shared objects).
    let src = c_source(&[&m, &m], &COUNT_MAIN.replace("printf", "C(1, 0) += 1000; printf"));
    let exe = compile(&dir, "prog", &src, &[]);
    let prof = dir.join("p.pathprof");
    ok(run(&exe, &[], &prof));
    ok(run(&exe, &[], &prof));
    let recs = read_profile(&prof);
    assert_eq!(recs.len(), 1);
    let r = record(&recs, &m);
    assert_eq!((r.counters.clone(), r.h.runs), (vec![2010, 14, 0], 2));
}

#[test]
fn descriptor_of_another_version_is_ignored_with_a_warning() {
    let dir = Dir::new("desc-version");
    let m = module("m.c", 0);
    let src = c_source(&[&m], COUNT_MAIN).replace(&format!("{{ {DESC_VERSION}u,"), "{ 99u,");
    let exe = compile(&dir, "prog", &src, &[]);
    let prof = dir.join("p.pathprof");
    let out = run(&exe, &[], &prof);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("pathprof: warning: ignoring an instrumented module built for descriptor version 99"));
    assert!(!prof.exists(), "nothing registered, nothing written");
}

/// A shared library with its own module, `dlopen`ed, used and `dlclose`d: its destructor unregisters the
/// module, whose counts must reach the file although the library is gone at exit. Both link styles: the
/// library with a hidden copy of the runtime (`--exclude-libs`, as pathprof-clang links) and with an exported
/// copy that the executable's interposes.
#[test]
fn dlclosed_library_keeps_its_counts() {
    for hidden in [true, false] {
        let dir = Dir::new(if hidden { "dlclose-hidden" } else { "dlclose-exported" });
        let (main_m, lib_m) = (module("main.c", 0), module("plugin.c", 0));
        let lib_src = c_source(&[&lib_m], "").replace(
            "__attribute__((constructor)) static void pathprof_test_register(void) {",
            "__attribute__((destructor)) static void pathprof_test_unregister(void) {\n  \
             __pathprof_unregister_module(&desc0);\n}\n\
             void plugin_work(int n) { C(0, 1) += n; }\n\
             __attribute__((constructor)) static void pathprof_test_register(void) {",
        );
        let mut args = vec!["-shared", "-fPIC"];
        if hidden {
            args.push("-Wl,--exclude-libs,libpathprof_rt.a");
        }
        let lib = compile(&dir, "libplugin.so", &lib_src, &args);
        assert!(lib.is_file());
        let main = r#"
int main(void) {
  for (int round = 0; round < 2; round++) {
    void *h = dlopen("./libplugin.so", RTLD_NOW);
    if (!h) { printf("%s\n", dlerror()); return 1; }
    void (*work)(int) = (void (*)(int))dlsym(h, "plugin_work");
    work(21);
    dlclose(h);
  }
  C(0, 0) += 1;
  return 0;
}
"#;
        let exe = compile(&dir, "prog", &c_source(&[&main_m], main), &["-ldl", "-rdynamic"]);
        let prof = dir.join("p.pathprof");
        ok(run(&exe, &[], &prof));
        let recs = read_profile(&prof);
        assert_eq!(recs.len(), 2, "hidden={hidden}");
        assert_eq!(record(&recs, &main_m).counters, vec![1, 0, 0]);
        let l = record(&recs, &lib_m);
        assert_eq!(l.counters, vec![0, 42, 0], "hidden={hidden}");
        // An interposed runtime serves both loads: one process, one run. A hidden copy lives and dies with the
        // library, so each load counts as a run of the library's module.
        assert_eq!(l.h.runs, if hidden { 2 } else { 1 }, "hidden={hidden}");
    }
}

/// The archive needs no library beyond libc: plain C links with clang-19 and gcc, and exports only the API.
#[test]
fn archive_links_into_plain_c_with_clang_and_gcc() {
    let t = tools();
    let dir = Dir::new("link");
    let m = module("m.c", 0);
    let src = c_source(&[&m], COUNT_MAIN);
    fs::write(dir.join("prog.c"), &src).unwrap();
    let mut compilers = vec!["clang-19"];
    if Command::new("gcc").arg("--version").output().is_ok() {
        compilers.push("gcc");
    }
    for cc in compilers {
        let exe = dir.join(&format!("prog-{cc}"));
        let out = Command::new(cc)
            .arg("-I")
            .arg(&t.include)
            .arg(dir.join("prog.c"))
            .arg(&t.archive)
            .arg("-o")
            .arg(&exe)
            .output()
            .unwrap();
        assert!(out.status.success(), "{cc} failed to link:\n{}", String::from_utf8_lossy(&out.stderr));
        let prof = dir.join(&format!("{cc}.pathprof"));
        ok(run(&exe, &[], &prof));
        assert_eq!(record(&read_profile(&prof), &m).counters, vec![5, 7, 0]);
    }
    // The header compiles as C++ too.
    if Command::new("clang++-19").arg("--version").output().is_ok() {
        fs::write(
            dir.join("api.cc"),
            "#include <pathprof.h>\nint main() { __pathprof_reset(); return __pathprof_dump(); }\n",
        )
        .unwrap();
        let out = Command::new("clang++-19")
            .arg("-I")
            .arg(&t.include)
            .arg(dir.join("api.cc"))
            .arg(&t.archive)
            .arg("-o")
            .arg(dir.join("api"))
            .output()
            .unwrap();
        assert!(out.status.success(), "C++ use of the header:\n{}", String::from_utf8_lossy(&out.stderr));
        ok(Command::new(dir.join("api")).current_dir(&dir.path).output().unwrap());
    }
    // Only the __pathprof_ API is defined with default visibility by the runtime's own object.
    if let Ok(out) = Command::new("llvm-nm-19").args(["-g", "--defined-only"]).arg(&t.archive).output() {
        let text = String::from_utf8_lossy(&out.stdout);
        let mut own: Vec<&str> = text
            .split("\n\n")
            .filter(|block| block.contains("pathprof_rt"))
            .flat_map(|block| block.lines().skip(1))
            .filter_map(|l| l.split_whitespace().nth(2))
            .collect();
        own.sort();
        assert_eq!(own, pathprof_format::symbols::RUNTIME);
    }
    // The runtime's object carries no panic machinery and needs no unwinder: nothing it defines or references
    // mentions panics, unwinding or a personality routine, and it never calls abort (only the panic handler
    // would).
    if let Ok(out) = Command::new("llvm-nm-19").arg(&t.archive).output() {
        let text = String::from_utf8_lossy(&out.stdout);
        let own: Vec<&str> = text
            .split("\n\n")
            .filter(|block| block.contains("pathprof_rt"))
            .flat_map(|block| block.lines().skip(1))
            .collect();
        assert!(!own.is_empty());
        let bad: Vec<&&str> = own
            .iter()
            .filter(|l| {
                let l = l.to_ascii_lowercase();
                ["panic", "unwind", "personality", " abort"].iter().any(|w| l.contains(w))
            })
            .collect();
        assert!(bad.is_empty(), "panic/unwind symbols in the runtime object: {bad:?}");
    }
}

/// A weakly declared API lets code built without the runtime call it conditionally.
#[test]
fn weak_api_declarations_link_without_the_runtime() {
    let t = tools();
    let dir = Dir::new("weak-api");
    let src = "#define PATHPROF_WEAK_API\n#include <pathprof.h>\n#include <stdio.h>\n\
               int main(void) { pathprof_reset_if_linked(); printf(\"%d\\n\", pathprof_dump_if_linked()); return 0; }\n";
    fs::write(dir.join("w.c"), src).unwrap();
    let out = Command::new("clang-19")
        .arg("-I")
        .arg(&t.include)
        .arg(dir.join("w.c"))
        .arg("-o")
        .arg(dir.join("w"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = ok(Command::new(dir.join("w")).current_dir(&dir.path).output().unwrap());
    assert_eq!(out.stdout, b"0\n");
    assert!(!dir.join("default.pathprof").exists());
}

#[test]
fn verbose_mode_reports_the_write() {
    let dir = Dir::new("verbose");
    let exe = compile(&dir, "prog", &c_source(&[&module("v.c", 0)], COUNT_MAIN), &[]);
    let prof = dir.join("p.pathprof");
    let out = command(&exe, &[], &prof).env("PATHPROF_VERBOSE", "1").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err, format!("pathprof: wrote {}: 0 merged, 1 added, 0 kept, 0 dropped\n", prof.display()));
    assert!(looks_valid(&prof));
}

#[test]
fn failed_write_keeps_counts_for_a_later_dump() {
    let dir = Dir::new("retry");
    let m = module("m.c", 0);
    let main = r#"
int main(void) {
  C(0, 0) += 11;
  int a = __pathprof_dump();                 /* the profile path is a directory: fails, counts kept */
  if (rmdir(getenv("PATHPROF_FILE")) != 0) return 9;
  C(0, 0) += 1;
  printf("%d\n", a);
  return 0;                                  /* the exit dump now succeeds with everything */
}
"#;
    let exe = compile(&dir, "prog", &c_source(&[&m], main), &[]);
    let prof = dir.join("p.pathprof");
    fs::create_dir(&prof).unwrap();
    let out = run(&exe, &[], &prof);
    assert_eq!(out.stdout, b"-1\n", "{}", describe(&out));
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    let r = read_profile(&prof);
    assert_eq!(record(&r, &m).counters, vec![12, 0, 0]);
    assert!(!looks_valid(&dir.join("p.pathprof.lock")));
}

// ---------------------------------------------------------------------------------------------------------------
// Path-mode hash tables (`__pathprof_path_add`)

/// Pairs in each test table's cache: small, so that the cached tests evict all the time.
const CACHE_PAIRS: u64 = 4;

/// `main` with every table update going through the table's cache, as instrumented non-atomic code does.
fn cached(main: &str) -> String {
    format!("#undef ADD\n#define ADD(m, k, path, delta) CADD(m, k, path, delta)\n{main}")
}

/// The multiplier of the large path numbers the table tests use.
const K: u64 = 0x9E37_79B9_7F4A_7C15;

/// `main`: counts path `(i * K) >> 1` of table 0 (function 1) `i % 5 + 1` times for `i < argv[1]` (default
/// 3000), paths 0..10 of table 1 (function 2) twice each, and dense counter 0 three times; prints table 0's
/// `len` and `capacity` and what an update before registration left. That update (path 77 of table 1) runs in a
/// constructor with a higher priority than the module's, followed by a reset: had the module already been
/// registered, the reset would have cleared it.
const PATH_MAIN: &str = r#"
#define K 0x9E3779B97F4A7C15ull
static unsigned long long early_len;
__attribute__((constructor(101))) static void early(void) {
  ADD(0, 1, 77, 1);
  __pathprof_reset();
  early_len = T(0, 1)->len;
}
int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 3000;
  for (long i = 0; i < n; i++) {
    uint64_t p = ((uint64_t)i * K) >> 1;
    for (long r = 0; r <= i % 5; r++) ADD(0, 0, p, 1);
  }
  for (int i = 0; i < 10; i++) { ADD(0, 1, i, 1); ADD(0, 1, i, 1); }
  C(0, 0) += 3;
  printf("%llu %llu %llu\n", (unsigned long long)T(0, 0)->len, (unsigned long long)T(0, 0)->capacity, early_len);
  return 0;
}
"#;

/// The sparse entries `PATH_MAIN n` produces, `runs` times over.
fn path_main_expected(n: u64, runs: u64) -> BTreeMap<(u64, u64), u64> {
    let mut want = BTreeMap::new();
    for _ in 0..runs {
        for i in 0..n {
            *want.entry((1, i.wrapping_mul(K) >> 1)).or_insert(0u64) += i % 5 + 1;
        }
        for i in 0..10 {
            *want.entry((2, i)).or_insert(0) += 2;
        }
        *want.entry((2, 77)).or_insert(0) += 1;
    }
    want
}

#[test]
fn path_tables_count_exactly_in_one_thread() {
    let dir = Dir::new("path-single");
    let m = path_module("hashed.c");
    let (prof, out) = run_main(&dir, &m, PATH_MAIN, &[], "p.pathprof");
    // 3000 paths: grown from 64 pairs to the first power of two with a load of at most 70 %.
    assert_eq!(String::from_utf8_lossy(&out.stdout), "3000 8192 1\n");
    let recs = read_profile(&prof);
    let r = path_record(&recs, &m);
    assert_eq!((r.counters.clone(), r.h.runs, r.h.flags), (vec![3, 0], 1, 0));
    assert_eq!(r.h.num_sparse, 3000 + 11);
    assert_eq!(sparse(r), path_main_expected(3000, 1));
}

/// Through a 4-pair cache, 3011 paths evict each other all the time: every count still arrives exactly once,
/// including the update made before the module was registered (it waits in the cache).
#[test]
fn cached_path_updates_count_exactly_in_one_thread() {
    let dir = Dir::new("path-cached-single");
    let m = path_module("cached.c");
    let exe = compile(&dir, "prog", &c_source(&[&m], &cached(PATH_MAIN)), &[]);
    let prof = dir.join("p.pathprof");
    ok(run(&exe, &[], &prof));
    let recs = read_profile(&prof);
    let r = path_record(&recs, &m);
    assert_eq!((r.counters.clone(), r.h.runs, r.h.flags), (vec![3, 0], 1, 0));
    assert_eq!(sparse(r), path_main_expected(3000, 1));
}

/// A miss installs the path where the inline code looks for it (`layout::path_cache_slot`, path words first,
/// count words `cache_len` further on), so the second update of a path is a hit; a one-pair cache takes every
/// path in its only pair.
#[test]
fn cache_miss_installs_the_path_where_the_inline_code_looks() {
    let dir = Dir::new("path-cache-slot");
    let m = path_module("cache_slot.c");
    let paths = [0u64, 1, 2, 3, 77, 1 << 40, (1 << 62) + 12345];
    let list = paths.iter().map(|p| format!("{p}ull")).collect::<Vec<_>>().join(", ");
    let main = format!(
        "int main(void) {{\n\
         \x20 uint64_t paths[] = {{ {list} }};\n\
         \x20 for (unsigned i = 0; i < sizeof paths / sizeof *paths; i++) {{\n\
         \x20   __pathprof_path_cache_miss(T(0, 0), paths[i], 5);\n\
         \x20   for (uint64_t j = 0; j < {CACHE_PAIRS}; j++)\n\
         \x20     if (cch0[0][j] == paths[i] && cch0[0][{CACHE_PAIRS} + j] == 5) printf(\"%llu \", (unsigned long long)j);\n\
         \x20   printf(\"\\n\");\n\
         \x20 }}\n\
         \x20 return 0;\n}}\n"
    );
    let exe = compile(&dir, "prog", &c_source(&[&m], &main), &[]);
    let out = ok(run(&exe, &[], &dir.join("p.pathprof")));
    let want: String =
        paths.iter().map(|&p| format!("{} \n", pathprof_format::layout::path_cache_slot(p, CACHE_PAIRS))).collect();
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
    assert!(paths.iter().all(|&p| pathprof_format::layout::path_cache_slot(p, 1) == 0));
}

/// Cached counts are signed (see `path_retractions_are_exact_and_signed_and_zero_deltas_insert_nothing`), reach
/// a mid-run dump once (the dump moves them into the table, so the exit dump does not count them again), and a
/// path whose total returns to 0 leaves the file.
#[test]
fn cached_retractions_and_mid_run_dump_count_every_update_once() {
    let dir = Dir::new("path-cached-mid");
    let m = path_module("cached_mid.c");
    let main = r#"
int main(void) {
  for (int i = 0; i < 10; i++) ADD(0, 0, 5, 1);
  for (int i = 0; i < 3; i++) ADD(0, 0, 5, -1);   /* 7 */
  ADD(0, 0, 6, 1); ADD(0, 0, 6, -1);               /* 0: no entry */
  ADD(0, 0, 7, -1);                                /* -1 */
  ADD(0, 1, 1ull << 62, 1);
  int a = __pathprof_dump();
  if (link(getenv("PATHPROF_FILE"), "mid.pathprof") != 0) return 9;
  ADD(0, 0, 5, 1); ADD(0, 0, 5, 1);                /* 9 in all */
  ADD(0, 0, 7, 1);                                 /* 0 in all: leaves the file */
  printf("%d\n", a);
  return 0;
}
"#;
    let exe = compile(&dir, "prog", &c_source(&[&m], &cached(main)), &[]);
    let prof = dir.join("p.pathprof");
    let out = ok(run(&exe, &[], &prof));
    assert_eq!(out.stdout, b"0\n");
    let mid = read_profile(&dir.join("mid.pathprof"));
    assert_eq!(sparse(path_record(&mid, &m)), BTreeMap::from([((1, 5), 7), ((1, 7), u64::MAX), ((2, 1 << 62), 1)]));
    let end = read_profile(&prof);
    let r = path_record(&end, &m);
    assert_eq!(sparse(r), BTreeMap::from([((1, 5), 9), ((2, 1 << 62), 1)]));
    assert_eq!((r.h.runs, r.h.flags), (1, 0));
}

#[test]
fn path_counts_of_two_runs_merge() {
    let dir = Dir::new("path-two-runs");
    let m = path_module("hashed.c");
    let exe = compile(&dir, "prog", &c_source(&[&m], PATH_MAIN), &[]);
    let prof = dir.join("p.pathprof");
    ok(run(&exe, &["3000"], &prof));
    ok(run(&exe, &["2000"], &prof));
    let recs = read_profile(&prof);
    let r = path_record(&recs, &m);
    let mut want = path_main_expected(3000, 1);
    for (k, v) in path_main_expected(2000, 1) {
        *want.entry(k).or_insert(0) += v;
    }
    assert_eq!((r.counters.clone(), r.h.runs, r.h.flags), (vec![6, 0], 2, 0));
    assert_eq!(sparse(r), want);
}

/// `__pathprof_path_add` with negative deltas: today's pass passes only +1 and 0 (truncated paths count
/// arrivals), but the runtime's contract is any signed delta, summed exactly; modules instrumented before
/// arrival counting retracted with −1.
#[test]
fn path_retractions_are_exact_and_signed_and_zero_deltas_insert_nothing() {
    let dir = Dir::new("path-retract");
    let m = path_module("retract.c");
    let main = r#"
int main(void) {
  for (int i = 0; i < 100; i++) ADD(0, 1, i, 0);
  int untouched = T(0, 1)->slots == 0 && T(0, 1)->len == 0 && T(0, 1)->lock == 0;
  for (int i = 0; i < 10; i++) ADD(0, 0, 5, 1);
  for (int i = 0; i < 3; i++) ADD(0, 0, 5, -1);                      /* 7 */
  ADD(0, 0, 6, 1); ADD(0, 0, 6, -1);                                  /* 0: no entry */
  ADD(0, 0, 7, -1);                                                   /* only retracted: -1 */
  ADD(0, 0, 1ull << 62, -1); ADD(0, 0, 1ull << 62, -1); ADD(0, 0, 1ull << 62, 1);  /* -1 */
  ADD(0, 0, 8, 0); ADD(0, 0, 5, 0);                                   /* no-ops */
  printf("%d %llu\n", untouched, (unsigned long long)T(0, 0)->len);
  return 0;
}
"#;
    let exe = compile(&dir, "prog", &c_source(&[&m], main), &[]);
    let prof = dir.join("p.pathprof");
    let out = ok(run(&exe, &[], &prof));
    assert_eq!(out.stdout, b"1 4\n", "delta 0 neither allocates nor inserts; path 6 keeps its slot");
    let r = path_record(&read_profile(&prof), &m).clone();
    assert_eq!(sparse(&r), BTreeMap::from([((1, 5), 7), ((1, 7), u64::MAX), ((1, 1 << 62), u64::MAX)]));
    assert_eq!(sparse(&r)[&(1, 7)] as i64, -1);
    // A second run adds with wrapping arithmetic: -1 + -1 = -2.
    ok(run(&exe, &[], &prof));
    let r = path_record(&read_profile(&prof), &m).clone();
    assert_eq!(sparse(&r), BTreeMap::from([((1, 5), 14), ((1, 7), -2i64 as u64), ((1, 1 << 62), -2i64 as u64)]));
    assert_eq!(r.h.runs, 2);
}

#[test]
fn path_table_is_exact_under_eight_threads_and_concurrent_dumps() {
    let dir = Dir::new("path-threads");
    let m = path_module("threads.c");
    let main = r#"
#define K 0x9E3779B97F4A7C15ull
static void *work(void *arg) {
  long t = (long)arg;
  for (long j = 0; j < 1000000; j++) {
    uint64_t p = ((uint64_t)((j * 31 + t) % 4096) * K) >> 1;
    ADD(0, 0, p, (j & 3) == 3 ? -1 : 1);
  }
  return 0;
}
int main(void) {
  pthread_t t[8];
  for (long i = 0; i < 8; i++) pthread_create(&t[i], 0, work, (void *)i);
  int fails = 0;
  for (int i = 0; i < 20; i++) { fails += __pathprof_dump() != 0; usleep(1000); }
  for (int i = 0; i < 8; i++) pthread_join(t[i], 0);
  printf("%d\n", fails);
  return 0;
}
"#;
    let (prof, out) = run_main(&dir, &m, main, &["-pthread"], "p.pathprof");
    assert_eq!(out.stdout, b"0\n");
    let mut want: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for t in 0..8u64 {
        for j in 0..1_000_000u64 {
            let p = ((j * 31 + t) % 4096).wrapping_mul(K) >> 1;
            let c = want.entry((1, p)).or_insert(0);
            *c = c.wrapping_add(if j & 3 == 3 { u64::MAX } else { 1 });
        }
    }
    want.retain(|_, c| *c != 0);
    let recs = read_profile(&prof);
    let r = path_record(&recs, &m);
    // The tables are exact (locked); the module's dense counters are non-atomic in a multi-threaded process.
    assert_eq!((r.h.runs, r.h.flags), (1, RECORD_FLAG_THREADED_NONATOMIC));
    assert_eq!(sparse(r), want);
}

#[test]
fn path_dump_mid_run_then_exit_reports_every_update_once() {
    let dir = Dir::new("path-dump-mid-run");
    let m = path_module("mid.c");
    let main = r#"
#include <sys/stat.h>
int main(void) {
  for (int i = 0; i < 3; i++) ADD(0, 0, 10, 1);
  ADD(0, 1, 20, 1);
  int a = __pathprof_dump();
  if (link(getenv("PATHPROF_FILE"), "mid.pathprof") != 0) return 9;
  int b = __pathprof_dump();      /* the keys stay in the tables with count 0: nothing new, nothing written */
  struct stat s1, s2;
  stat(getenv("PATHPROF_FILE"), &s1);
  stat("mid.pathprof", &s2);
  ADD(0, 0, 10, 1);
  ADD(0, 0, 11, 1);
  ADD(0, 1, 20, -1);              /* its total becomes 0: the entry leaves the file */
  printf("%d %d %d\n", a, b, s1.st_ino == s2.st_ino);
  return 0;
}
"#;
    let (prof, out) = run_main(&dir, &m, main, &[], "p.pathprof");
    assert_eq!(out.stdout, b"0 0 1\n");
    let mid = read_profile(&dir.join("mid.pathprof"));
    assert_eq!(sparse(path_record(&mid, &m)), BTreeMap::from([((1, 10), 3), ((2, 20), 1)]));
    let end = read_profile(&prof);
    let r = path_record(&end, &m);
    assert_eq!(sparse(r), BTreeMap::from([((1, 10), 4), ((1, 11), 1)]));
    assert_eq!(r.h.runs, 1);
}

/// Also through the tables' caches: a reset discards cached counts too.
#[test]
fn path_reset_discards_table_counts() {
    for (kind, through_cache) in [("direct", false), ("cached", true)] {
        let dir = Dir::new(&format!("path-reset-{kind}"));
        let m = path_module("reset.c");
        let main = r#"
int main(void) {
  for (int i = 0; i < 50; i++) ADD(0, 0, 1, 1);
  ADD(0, 1, 9, -1);
  __pathprof_reset();
  ADD(0, 0, 1, 1); ADD(0, 0, 1, 1); ADD(0, 0, 2, 1);
  return 0;
}
"#;
        let main = if through_cache { cached(main) } else { main.to_string() };
        let exe = compile(&dir, "prog", &c_source(&[&m], &main), &[]);
        let prof = dir.join("p.pathprof");
        ok(run(&exe, &[], &prof));
        let want = BTreeMap::from([((1, 1), 2), ((1, 2), 1)]);
        assert_eq!(sparse(path_record(&read_profile(&prof), &m)), want, "{kind}");
    }
}

#[test]
fn failed_write_keeps_path_counts_for_a_later_dump() {
    let dir = Dir::new("path-retry");
    let m = path_module("retry.c");
    let main = r#"
int main(void) {
  for (int i = 0; i < 11; i++) ADD(0, 0, 1, 1);
  ADD(0, 1, 3, -1);
  int a = __pathprof_dump();                 /* the profile path is a directory: fails, counts put back */
  if (rmdir(getenv("PATHPROF_FILE")) != 0) return 9;
  ADD(0, 0, 1, 1);
  ADD(0, 0, 2, 1);
  printf("%d\n", a);
  return 0;
}
"#;
    let exe = compile(&dir, "prog", &c_source(&[&m], main), &[]);
    let prof = dir.join("p.pathprof");
    fs::create_dir(&prof).unwrap();
    let out = run(&exe, &[], &prof);
    assert_eq!(out.stdout, b"-1\n", "{}", describe(&out));
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    let want = BTreeMap::from([((1, 1), 12), ((1, 2), 1), ((2, 3), u64::MAX)]);
    assert_eq!(sparse(path_record(&read_profile(&prof), &m)), want);
}

#[test]
fn path_table_cap_drops_new_paths_and_flags_the_record() {
    let dir = Dir::new("path-cap");
    let m = path_module("cap.c");
    let main = r#"
int main(void) {
  for (uint64_t i = 0; i < 100; i++)
    for (uint64_t r = 0; r <= i % 3; r++) ADD(0, 0, i * 1000, 1);
  int a = __pathprof_dump();
  for (uint64_t i = 0; i < 100; i++) ADD(0, 0, i * 1000, 1);   /* kept paths still count, new ones drop */
  ADD(0, 1, 5, 1);
  printf("%d %llu\n", a, (unsigned long long)T(0, 0)->len);
  return 0;
}
"#;
    let exe = compile(&dir, "prog", &c_source(&[&m], main), &[]);
    let prof = dir.join("p.pathprof");
    let warning = format!(
        "pathprof: warning: path counts of function 1 of module {:#018x} were dropped (a table holds at most 16 \
         paths); the profile is marked incomplete\n",
        m.meta_hash
    );
    let mut want: BTreeMap<(u64, u64), u64> = (0..16).map(|i| ((1, i * 1000), i % 3 + 2)).collect();
    want.insert((2, 5), 1);
    for runs in 1..=2u64 {
        let out = command(&exe, &[], &prof).env("PATHPROF_TABLE_CAP_LOG2", "4").output().unwrap();
        assert!(out.status.success(), "{}", describe(&out));
        assert_eq!(out.stdout, b"0 16\n");
        // Both dumps of the process saw dropped updates; the warning is printed once per table and process.
        assert_eq!(String::from_utf8_lossy(&out.stderr), warning);
        let recs = read_profile(&prof);
        let r = path_record(&recs, &m);
        assert_eq!((r.h.flags, r.h.runs), (RECORD_FLAG_DROPPED, runs));
        let scaled: BTreeMap<(u64, u64), u64> = want.iter().map(|(k, v)| (*k, v * runs)).collect();
        assert_eq!(sparse(r), scaled, "the kept paths are exact");
    }
    // Values outside 0..=26 are ignored: the default cap keeps everything.
    let other = dir.join("q.pathprof");
    let out = ok(command(&exe, &[], &other).env("PATHPROF_TABLE_CAP_LOG2", "99").output().unwrap());
    assert_eq!(out.stdout, b"0 100\n");
    let recs = read_profile(&other);
    let r = path_record(&recs, &m);
    assert_eq!(r.h.flags, 0);
    assert_eq!(sparse(r).len(), 101);
}

/// The default cap, 2^22 paths, keeps exactly that many of 2^22 + 10 distinct paths and flags the record; raised
/// to 2^23 (`PATHPROF_TABLE_CAP_LOG2=23`) it keeps them all, unflagged.
#[test]
fn path_table_cap_can_be_raised_past_the_default() {
    let dir = Dir::new("path-cap-raised");
    let m = path_module("capr.c");
    let main = r#"
int main(void) {
  for (uint64_t i = 0; i < (1u << 22) + 10; i++) ADD(0, 0, i * 7, 1);
  printf("%llu\n", (unsigned long long)T(0, 0)->len);
  return 0;
}
"#;
    let exe = compile(&dir, "prog", &c_source(&[&m], main), &[]);
    for (cap, kept, flags) in [(None, 1u64 << 22, RECORD_FLAG_DROPPED), (Some("23"), (1 << 22) + 10, 0)] {
        let prof = dir.join(&format!("p{}.pathprof", cap.unwrap_or("")));
        let mut c = command(&exe, &[], &prof);
        if let Some(k) = cap {
            c.env("PATHPROF_TABLE_CAP_LOG2", k);
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{}", describe(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{kept}\n"), "cap {cap:?}");
        let recs = read_profile(&prof);
        let r = path_record(&recs, &m);
        assert_eq!(r.h.flags, flags, "cap {cap:?}");
        let counts = sparse(r);
        assert_eq!(counts.len() as u64, kept, "cap {cap:?}");
        assert!(counts.iter().all(|(&(f, p), &c)| f == 1 && p % 7 == 0 && c == 1), "cap {cap:?}");
    }
}

/// Also through the tables' caches: the child starts with none of the parent's cached counts.
#[test]
fn path_tables_fork_child_and_parent_merge_into_one_file() {
    for (kind, through_cache) in [("direct", false), ("cached", true)] {
        let dir = Dir::new(&format!("path-fork-{kind}"));
        let m = path_module("fork.c");
        let main = r#"
int main(void) {
  for (int i = 0; i < 5; i++) ADD(0, 0, 1, 1);   /* before the fork: reported once, by the parent */
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    ADD(0, 0, 1, 1);
    ADD(0, 0, 2, 1);
    return 0;
  }
  int st;
  waitpid(pid, &st, 0);
  ADD(0, 0, 3, 1);
  printf("child status %d\n", WEXITSTATUS(st));
  return 0;
}
"#;
        let main = if through_cache { cached(main) } else { main.to_string() };
        let exe = compile(&dir, "prog", &c_source(&[&m], &main), &[]);
        let prof = dir.join("p.pathprof");
        let out = ok(run(&exe, &[], &prof));
        assert_eq!(out.stdout, b"child status 0\n");
        let recs = read_profile(&prof);
        let r = path_record(&recs, &m);
        assert_eq!(sparse(r), BTreeMap::from([((1, 1), 6), ((1, 2), 1), ((1, 3), 1)]), "{kind}");
        assert_eq!(r.h.runs, 2);
    }
}

/// Runs `cmd` and kills it if it has not finished within `secs` seconds (a deadlock), failing the test.
fn output_within(mut cmd: Command, secs: u64) -> Output {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed().as_secs() >= secs {
            child.kill().unwrap();
            panic!("the program did not finish within {secs} s (deadlock?)");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A signal handler that updates a table while the interrupted code was updating the same table must not
/// deadlock: the handler's update is dropped and the record flagged, and every other update stays exact.
#[test]
fn path_update_from_a_signal_handler_never_deadlocks() {
    let dir = Dir::new("path-signal");
    let m = path_module("signal.c");
    let main = r#"
#include <signal.h>
#include <sys/time.h>
static volatile sig_atomic_t fired;
static void on_alarm(int sig) { (void)sig; ADD(0, 0, 1, 1); fired++; }
int main(void) {
  for (int i = 0; i < 1024; i++) ADD(0, 0, 2 + i, 0 * i + 1);   /* insert everything up front: no allocation later */
  ADD(0, 0, 1, 1);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, 0);
  struct itimerval it = { { 0, 100 }, { 0, 100 } };
  setitimer(ITIMER_REAL, &it, 0);
  for (long i = 0; i < 20000000; i++) ADD(0, 0, 2 + (i & 1023), 1);
  struct itimerval off = { { 0, 0 }, { 0, 0 } };
  setitimer(ITIMER_REAL, &off, 0);
  printf("%d\n", (int)fired);
  return 0;
}
"#;
    let exe = compile(&dir, "prog", &c_source(&[&m], main), &[]);
    let prof = dir.join("p.pathprof");
    let out = output_within(command(&exe, &[], &prof), 120);
    assert!(out.status.success(), "{}", describe(&out));
    let fired: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let recs = read_profile(&prof);
    let r = path_record(&recs, &m);
    let s = sparse(r);
    for i in 0..1024u64 {
        assert_eq!(s[&(1, 2 + i)], 1 + 20_000_000 / 1024 + u64::from(i < 20_000_000 % 1024), "path {}", 2 + i);
    }
    let handled = s[&(1, 1)] - 1;
    assert!(handled <= fired);
    let dropped = handled < fired;
    assert_eq!(r.h.flags, if dropped { RECORD_FLAG_DROPPED } else { 0 }, "fired {fired}, counted {handled}");
    let warning = format!(
        "pathprof: warning: path counts of function 1 of module {:#018x} were dropped (out of memory, or updated \
         from a signal handler that interrupted an update); the profile is marked incomplete\n",
        m.meta_hash
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), if dropped { warning.as_str() } else { "" });
    eprintln!("signal handler updates: {fired}, dropped as re-entrant: {}", fired - handled);
}

/// A `dlopen`ed library with path tables: its destructor writes its counts and frees its tables, so every load
/// counts (each load of a library with a hidden runtime copy is one run).
#[test]
fn dlclosed_library_keeps_its_path_counts() {
    let dir = Dir::new("path-dlclose");
    let lib_m = path_module("plugin.c");
    let lib_src = c_source(&[&lib_m], "").replace(
        "__attribute__((constructor)) static void pathprof_test_register(void) {",
        "__attribute__((destructor)) static void pathprof_test_unregister(void) {\n  \
         __pathprof_unregister_module(&desc0);\n}\n\
         void plugin_work(int n) { for (int i = 0; i < n; i++) ADD(0, 0, (uint64_t)i << 40, 1); }\n\
         __attribute__((constructor)) static void pathprof_test_register(void) {",
    );
    compile(&dir, "libplugin.so", &lib_src, &["-shared", "-fPIC", "-Wl,--exclude-libs,libpathprof_rt.a"]);
    let main = r#"
int main(void) {
  for (int round = 0; round < 3; round++) {
    void *h = dlopen("./libplugin.so", RTLD_NOW);
    if (!h) { printf("%s\n", dlerror()); return 1; }
    void (*work)(int) = (void (*)(int))dlsym(h, "plugin_work");
    work(100 + round);
    dlclose(h);
  }
  return 0;
}
"#;
    let exe = compile(&dir, "prog", &c_source(&[], main), &["-ldl"]);
    let prof = dir.join("p.pathprof");
    ok(run(&exe, &[], &prof));
    let recs = read_profile(&prof);
    let r = path_record(&recs, &lib_m);
    let mut want: BTreeMap<(u64, u64), u64> = (0..100).map(|i| ((1, i << 40), 3)).collect();
    want.insert((1, 100 << 40), 2);
    want.insert((1, 101 << 40), 1);
    assert_eq!((sparse(r), r.h.runs), (want, 3));
}

/// Path-mode dense counters are signed too: a retraction drained by a later dump than its count (here: a net
/// -1 reaching a file that holds +1) must wrap back to the exact sum, not saturate. Today's pass only adds
/// (truncated paths count arrivals); modules instrumented before it retracted so, and the runtime still sums
/// any signed update exactly.
#[test]
fn dense_path_counters_add_with_wrapping_arithmetic() {
    let dir = Dir::new("dense-wrapping");
    let m = path_module("dense.c");
    let main = r#"
int main(void) {
  C(0, 0) += 1;                  /* a path counted before a call... */
  C(0, 1) += 2;
  int a = __pathprof_dump();
  C(0, 0) -= 1;                  /* ...and retracted after it returned: this dump drains -1 */
  C(0, 1) -= 3;
  printf("%d\n", a);
  return 0;
}
"#;
    let (prof, out) = run_main(&dir, &m, main, &[], "p.pathprof");
    assert_eq!(out.stdout, b"0\n");
    let recs = read_profile(&prof);
    assert_eq!(path_record(&recs, &m).counters, vec![0, u64::MAX]);
}

/// `PATHPROF_SIGNALS=1`: a SIGSEGV handler installed before the runtime registered (a higher-priority
/// constructor) is called after the flush; a signal ignored at registration (SIGTERM) stays ignored. The
/// flush merges into the profile of an earlier run (reading and rebuilding it in mmap memory) and flags the
/// record incomplete.
#[test]
fn fatal_flush_merges_then_chains_to_an_earlier_handler() {
    let dir = Dir::new("signal-chain");
    let m = module("chain.c", 0);
    let main = r#"
#include <signal.h>
static void prev(int sig) {
  static const char msg[] = "previous handler\n";
  write(2, msg, sizeof msg - 1);
  _exit(40 + sig);
}
__attribute__((constructor(101))) static void early(void) {
  signal(SIGSEGV, prev);
  signal(SIGTERM, SIG_IGN);
}
int main(int argc, char **argv) {
  C(0, 0) += 5;
  raise(SIGTERM);                      /* ignored before the runtime registered: still ignored */
  C(0, 1) += 1;
  if (argc > 1) {
    volatile int *p = (volatile int *)getenv("PATHPROF_TEST_NEVER_SET");
    *p = 1;
  }
  return 0;
}
"#;
    let exe = compile(&dir, "prog", &c_source(&[&m], main), &[]);
    let prof = dir.join("p.pathprof");
    ok(run(&exe, &[], &prof));
    let out = command(&exe, &["crash"], &prof).env("PATHPROF_SIGNALS", "1").output().unwrap();
    assert_eq!(out.status.code(), Some(40 + 11), "{}", describe(&out));
    assert_eq!(out.stderr, b"previous handler\n", "{}", describe(&out));
    let recs = read_profile(&prof);
    let r = record(&recs, &m);
    assert_eq!((r.counters.clone(), r.h.runs, r.h.flags), (vec![10, 2, 0], 2, RECORD_FLAG_INCOMPLETE));
    no_temp_files(&dir);
}

/// Without `PATHPROF_SIGNALS` nothing is installed: the same crash leaves the profile of the earlier run as it
/// was, and the program dies of SIGABRT as usual.
#[test]
fn without_the_opt_in_a_crash_writes_nothing() {
    let dir = Dir::new("signal-off");
    let m = module("off.c", 0);
    let main = r#"
int main(int argc, char **argv) {
  C(0, 0) += 5;
  if (argc > 1) abort();
  return 0;
}
"#;
    let exe = compile(&dir, "prog", &c_source(&[&m], main), &[]);
    let prof = dir.join("p.pathprof");
    ok(run(&exe, &[], &prof));
    let before = fs::read(&prof).unwrap();
    let out = run(&exe, &["crash"], &prof);
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&out.status), Some(6), "{}", describe(&out));
    assert_eq!(fs::read(&prof).unwrap(), before);
}
