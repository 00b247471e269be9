//! Runtime hygiene: the archive programs link (`dist/lib/libpathprof_rt.a`) defines nothing but the runtime's
//! own `__pathprof_*` entry points and needs nothing but the C library, so linking it never changes which
//! definition of a C-library or compiler-runtime function a program gets (autoconf's `AC_SEARCH_LIBS`, complex
//! arithmetic, bit builtins).

use pathprof_format::symbols;
use pathprof_test_suite::{dist, programs, run_ok, scratch, wrapper};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn runtime() -> PathBuf {
    dist().join("lib/libpathprof_rt.a")
}

/// The global (external: global or weak) symbols `nm` lists as defined in `file`.
fn defined_globals(nm: &str, file: &Path) -> BTreeSet<String> {
    let out = run_ok(Command::new(nm).args(["-g", "--defined-only"]).arg(file));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            // "ADDRESS TYPE NAME"; member headers ("x.o:") and blank lines have fewer fields.
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3).then(|| f[2].to_string())
        })
        .collect()
}

/// `__pathprof_*` symbols that `nm_args` make `llvm-nm-19` list for `file`.
fn pathprof_symbols(nm_args: &[&str], file: &Path) -> BTreeSet<String> {
    let out = run_ok(Command::new("llvm-nm-19").args(nm_args).arg(file));
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter(|s| s.starts_with("__pathprof_"))
        .map(str::to_string)
        .collect()
}

/// `__pathprof_*` symbols that `file` references without defining them.
fn runtime_references(file: &Path) -> BTreeSet<String> {
    pathprof_symbols(&["-u"], file)
}

/// The runtime's entry points, derived without looking at the archive: every `__pathprof_*` name the public
/// header declares or names as exported, plus every one that instrumented code calls, collected from objects the
/// pass emits in each configuration that calls a different one (a path-mode function too large for an array:
/// hash table with its cache, without it, atomic; and edge mode; and a program calling `fork` through a
/// function that may fork, for the fork re-entry checks). Each object must define its own `__pathprof_*`
/// symbols module-locally, under the names of `pathprof_format::symbols::MODULE_LOCAL` (LLVM appends `.N` to
/// repeated ones).
fn entry_points(dir: &Path) -> BTreeSet<String> {
    let header = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../include/pathprof.h")).unwrap();
    let mut names: BTreeSet<String> = header
        .match_indices("__pathprof_")
        .map(|(i, _)| header[i..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect())
        .collect();
    for (i, flags) in [
        &[][..],
        &["--pathprof-path-cache=0"],
        &["--pathprof-atomic"],
        &["--pathprof-mode=edge"],
        &["--pathprof-mode=trace"],
    ]
    .iter()
    .enumerate()
    {
        let obj = dir.join(format!("instrumented{i}.o"));
        let source = programs().join("eighty_ifs.c");
        run_ok(wrapper(false).args(*flags).args(["-O1", "-c"]).arg(source).arg("-o").arg(&obj));
        names.extend(runtime_references(&obj));
        check_module_locals(&obj);
    }
    // A program that forks (fork checks), one that calls `_Fork`, one `clone`, one `syscall` (their calls go to the
    // runtime's), one that confines itself (`prctl`), one that installs signal handlers (its `sigaction` and
    // `signal` calls too), one that ends its image without exit handlers (`exec`, `_exit`), one with a sparse region
    // (the mapping asked for before registration), and in trace mode one
    // whose `setjmp` returns again (its landing) and one that switches user contexts (`makecontext`,
    // `swapcontext`, `setcontext`).
    for (name, source, mode) in [
        ("forking.o", "fork_main.c", "path"),
        ("raw_fork.o", "reliability/raw_fork.c", "path"),
        ("clone.o", "reliability/clone_child.c", "path"),
        ("syscall.o", "reliability/syscall_fork.c", "path"),
        ("sandboxed.o", "reliability/sandboxed.c", "path"),
        ("handlers.o", "reliability/handler_escape.c", "path"),
        ("image_end.o", "reliability/image_end.c", "path"),
        ("sparse.o", "early_sparse.c", "path"),
        ("landing.o", "trace_handlers.c", "trace"),
        ("contexts.o", "trace_contexts.c", "trace"),
    ] {
        let obj = dir.join(name);
        let mode = format!("--pathprof-mode={mode}");
        run_ok(wrapper(false).args([mode.as_str(), "-O1", "-c"]).arg(programs().join(source)).arg("-o").arg(&obj));
        names.extend(runtime_references(&obj));
        check_module_locals(&obj);
    }
    names
}

/// Asserts that instrumented object `obj` defines no `__pathprof_*` symbol globally (but trace mode's
/// image-wide thread state, which is hidden) and names each one it defines locally in `symbols::MODULE_LOCAL`.
fn check_module_locals(obj: &Path) {
    let global: BTreeSet<String> =
        pathprof_symbols(&["-g", "--defined-only"], obj).into_iter().filter(|s| s != symbols::TRACE_TLS).collect();
    assert!(global.is_empty(), "{}: instrumented code exports {global:?}", obj.display());
    if pathprof_symbols(&["-g", "--defined-only"], obj).contains(symbols::TRACE_TLS) {
        let out = Command::new("llvm-readelf-19").arg("--syms").arg(obj).output().expect("llvm-readelf-19");
        let syms = String::from_utf8_lossy(&out.stdout);
        let line = syms.lines().find(|l| l.ends_with(symbols::TRACE_TLS)).expect("the trace state symbol");
        assert!(
            line.contains("HIDDEN") && line.contains("WEAK"),
            "{}: trace state is not hidden and weak: {line}",
            obj.display()
        );
    }
    let local = pathprof_symbols(&["--defined-only"], obj);
    assert!(!local.is_empty(), "{}: no module-local __pathprof_* symbol at all", obj.display());
    for name in &local {
        let base = name.split('.').next().unwrap_or(name);
        if base == symbols::TRACE_TLS {
            continue;
        }
        assert!(symbols::MODULE_LOCAL.contains(&base), "{}: {name} is not in symbols::MODULE_LOCAL", obj.display());
    }
}

#[test]
fn archive_defines_only_the_runtime_entry_points() {
    let dir = scratch("hygiene-symbols");
    let expected = entry_points(&dir);
    // What the header and the pass name are the list the pass takes its names from (`RUNTIME` is sorted;
    // a change here is a change of the runtime's ABI).
    assert_eq!(expected.iter().map(String::as_str).collect::<Vec<_>>(), symbols::RUNTIME);
    // Both nm implementations: binutils' (what autoconf-era tooling sees) and LLVM's.
    for nm in ["nm", "llvm-nm-19"] {
        let defined = defined_globals(nm, &runtime());
        let extra: Vec<_> = defined.difference(&expected).collect();
        let missing: Vec<_> = expected.difference(&defined).collect();
        assert!(extra.is_empty(), "{nm}: the runtime archive defines symbols that are not its entry points: {extra:?}");
        assert!(missing.is_empty(), "{nm}: the runtime archive lacks entry points: {missing:?}");
    }
}

/// The archive, linked whole into an empty program with the C library alone (no libgcc, libm or unwinder).
#[test]
fn archive_needs_only_the_c_library() {
    let dir = scratch("hygiene-libc");
    let main = dir.join("main.c");
    std::fs::write(&main, "int main(void) { return 0; }\n").unwrap();
    let exe = dir.join("libc-only");
    run_ok(
        Command::new("clang-19")
            .arg("-nodefaultlibs")
            .arg(&main)
            .arg("-Wl,--whole-archive")
            .arg(runtime())
            .args(["-Wl,--no-whole-archive", "-lc", "-o"])
            .arg(&exe),
    );
    run_ok(&mut Command::new(&exe));
}

/// A static program links without a word from the linker in every mode, and still writes its profile or trace
/// when its runtime pins its image (`PATHPROF_SIGNALS=1`): the runtime's `dlopen` is a weak reference, so glibc's
/// static `dlopen` — and its warning that it needs the shared libraries at run time, which every static link
/// printed — stays out.
#[test]
fn a_static_program_links_without_warnings() {
    let dir = scratch("hygiene-static");
    let main = dir.join("main.c");
    std::fs::write(
        &main,
        "#include <stdio.h>\nint main(int argc, char **argv) {\n    if (argc > 1)\n        \
                           puts(argv[1]);\n    return 0;\n}\n",
    )
    .unwrap();
    for mode in ["edge", "path", "context", "trace"] {
        let exe = dir.join(format!("static-{mode}"));
        let out =
            run_ok(wrapper(false).args(["-O2", "-static"]).arg(&main).arg("-o").arg(&exe).env("PATHPROF_MODE", mode));
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{mode}");
        let (prof, trace) = (dir.join(format!("{mode}.pathprof")), dir.join(format!("{mode}.pathtrace")));
        let ran = run_ok(
            Command::new(&exe)
                .arg("hi")
                .env("PATHPROF_FILE", &prof)
                .env("PATHPROF_TRACE", &trace)
                .env("PATHPROF_SIGNALS", "1"),
        );
        assert_eq!(String::from_utf8_lossy(&ran.stdout), "hi\n", "{mode}");
        assert!(if mode == "trace" { trace.exists() } else { prof.exists() }, "{mode}: nothing written");
    }
}

/// The C library functions a program may define itself that the runtime must not call (rt/src/own_libc.rs): the
/// archive references none of them, whoever's call it was (the runtime's own, or the compiler's `memcpy` for a
/// struct copy), and still uses the C library for what it does not bring (threads, signals, the loader).
#[test]
fn archive_calls_no_library_function_a_program_may_replace() {
    let out = run_ok(Command::new("llvm-nm-19").args(["-u", "--format=just-symbols"]).arg(runtime()));
    let undefined: BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    let replaceable = [
        "memcpy",
        "memmove",
        "memset",
        "memcmp",
        "bcmp",
        "strlen",
        "read",
        "write",
        "pread",
        "pread64",
        "pwrite",
        "pwrite64",
        "open",
        "open64",
        "close",
        "stat",
        "fstat",
        "unlink",
        "rename",
        "getcwd",
        "gethostname",
        "flock",
        "fsync",
        "ftruncate",
        "fcntl",
        "mmap",
        "munmap",
        "mremap",
        "getpid",
        "nanosleep",
        "clock_gettime",
        "clock_nanosleep",
        "malloc",
        "free",
        "realloc",
        "calloc",
        "getenv",
    ];
    let called: Vec<_> = replaceable.iter().filter(|f| undefined.contains(**f)).collect();
    assert!(called.is_empty(), "the runtime calls {called:?}, which a program may define: {undefined:?}");
    assert!(undefined.contains("pthread_create") && undefined.contains("sigaction"), "{undefined:?}");
}

/// Whether `cc` links `source` with `libs` (the outcome a configure check reads).
fn links(cc: &mut Command, dir: &Path, source: &Path, libs: &[&str]) -> bool {
    let out = cc.arg(source).args(libs).arg("-o").arg(dir.join("conftest")).output().expect("run the compiler");
    out.status.success()
}

/// `AC_SEARCH_LIBS([fmod], [m])` links this program with no library, then with `-lm`. glibc keeps the maths
/// functions in libm, so without `-lm` the link fails with clang-19, and must fail through the wrapper too: an
/// archive defining `fmod` made configure answer "none required" and the build then fail on `exp`.
#[test]
fn configure_library_search_sees_what_clang_sees() {
    let dir = scratch("hygiene-configure");
    for func in ["fmod", "exp", "sqrt", "sin", "pow"] {
        let conftest = dir.join(format!("conftest_{func}.c"));
        // The program autoconf 2.71 writes for AC_SEARCH_LIBS (its own prototype, call, no headers).
        std::fs::write(&conftest, format!("char {func} ();\nint main (void) {{ return {func} (); }}\n")).unwrap();
        for libs in [&[][..], &["-lm"]] {
            let want = !libs.is_empty();
            let clang = links(Command::new("clang-19").arg("-w"), &dir, &conftest, libs);
            let ours = links(wrapper(false).arg("-w"), &dir, &conftest, libs);
            assert_eq!((clang, ours), (want, want), "{func} {libs:?}: links with clang-19, with pathprof-clang");
        }
    }
    // The real thing, where autoconf is installed: configure picks -lm, and the program using exp() builds.
    if Command::new("autoconf").arg("--version").output().is_err() {
        eprintln!("autoconf not installed: real configure run skipped");
        return;
    }
    std::fs::write(
        dir.join("configure.ac"),
        "AC_INIT([hygiene], [1])\nAC_PROG_CC\nAC_SEARCH_LIBS([fmod], [m])\nAC_CONFIG_FILES([Makefile])\nAC_OUTPUT\n",
    )
    .unwrap();
    std::fs::write(dir.join("Makefile.in"), "prog: prog.c\n\t@CC@ prog.c -o prog @LIBS@\n").unwrap();
    std::fs::write(
        dir.join("prog.c"),
        "#include <math.h>\n#include <stdio.h>\n\
         int main(int argc, char **argv) { (void)argv; printf(\"%g %g\\n\", fmod(7.5 * argc, 2.0), exp(argc - 1.0)); \
         return 0; }\n",
    )
    .unwrap();
    run_ok(Command::new("autoconf").current_dir(&dir));
    let cc = dist().join("bin/pathprof-clang");
    let conf = run_ok(Command::new("./configure").arg(format!("CC={}", cc.display())).current_dir(&dir));
    let text = String::from_utf8_lossy(&conf.stdout);
    assert!(text.contains("checking for library containing fmod... -lm"), "{text}");
    run_ok(Command::new("make").current_dir(&dir));
    // fmod(7.5, 2) = 1.5, exp(0) = 1.
    let out = run_ok(Command::new(dir.join("prog")).current_dir(&dir));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "1.5 1\n");
}

/// Complex multiplication compiles to a call of `__muldc3` at -O0: the program must get the toolchain's
/// (libgcc's), never a copy from the runtime archive (compiler-builtins used to be bundled in it).
#[test]
fn compiler_runtime_calls_resolve_to_the_toolchain() {
    let dir = scratch("hygiene-builtins");
    let src = dir.join("cplx.c");
    std::fs::write(
        &src,
        "#include <complex.h>\n#include <stdio.h>\n\
         int main(int argc, char **argv) { (void)argv; double _Complex a = argc + 2.0 * I, b = 3.0 - argc * I;\n\
         double _Complex c = a * b; printf(\"%g %g\\n\", creal(c), cimag(c)); return 0; }\n",
    )
    .unwrap();
    let exe = dir.join("cplx");
    let out = run_ok(wrapper(false).arg("-O0").arg(&src).arg("-o").arg(&exe).arg("-Wl,--trace-symbol=__muldc3"));
    let trace = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let definitions: Vec<&str> = trace.lines().filter(|l| l.contains("definition of __muldc3")).collect();
    assert!(!definitions.is_empty(), "the link traced no definition of __muldc3:\n{trace}");
    assert!(definitions.iter().all(|l| !l.contains("libpathprof_rt.a")), "{definitions:?}");
    // (1 + 2i)(3 - i) = 3 - i + 6i - 2i² = 5 + 5i.
    let run = run_ok(Command::new(&exe).current_dir(&dir));
    assert_eq!(String::from_utf8_lossy(&run.stdout), "5 5\n");
}
