//! The wrapper binaries as processes: `exec`, exit status, environment for the pass, diagnostics, which
//! runtime archive it accepts, and a real link of the runtime archive with clang-19 (the compiler is replaced
//! by a script that records its arguments and drops the plugin flag, so these tests need neither the pass
//! plugin nor, except the last, clang).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const WRAPPER: &str = env!("CARGO_BIN_EXE_pathprof-clang");
const WRAPPER_XX: &str = env!("CARGO_BIN_EXE_pathprof-clangxx");

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let p = std::env::temp_dir().join(format!("pathprof-wrapper-cli-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        Dir(p)
    }

    fn file(&self, name: &str, text: impl AsRef<[u8]>, exec: bool) -> PathBuf {
        let p = self.0.join(name);
        if let Some(parent) = p.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        fs::write(&p, text).unwrap();
        if exec {
            fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
        }
        p
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}

/// A fake compiler: prints each argument and the variables the wrapper sets for the pass on its own line
/// (other `PATHPROF_*` variables of the test's own environment are ignored), exits with `$FAKE_STATUS`.
const FAKE_CC: &str = r#"#!/bin/sh
for a in "$@"; do printf 'arg %s\n' "$a"; done
env | grep -E '^PATHPROF_(MODE|WEIGHTS|ATOMIC|STATS)=' | sort | sed 's/^/env /'
exit ${FAKE_STATUS:-0}
"#;

/// A GNU `ar` archive (one empty member) whose symbol index names `symbols`, or that has no index: all the
/// wrapper reads to recognise the runtime. Written by hand so that these tests need no LLVM tools.
fn archive(symbols: Option<&[&str]>) -> Vec<u8> {
    fn header(name: &str, size: usize) -> Vec<u8> {
        format!("{name:<16}{:<12}{:<6}{:<6}{:<8}{size:<10}`\n", 0, 0, 0, 644).into_bytes()
    }
    let mut a = b"!<arch>\n".to_vec();
    if let Some(symbols) = symbols {
        let names: Vec<u8> = symbols.iter().flat_map(|s| s.bytes().chain([0])).collect();
        let len = 4 + 4 * symbols.len() + names.len();
        let member = (8 + 60 + len + len % 2) as u32;
        a.extend(header("/", len));
        a.extend((symbols.len() as u32).to_be_bytes());
        symbols.iter().for_each(|_| a.extend(member.to_be_bytes()));
        a.extend(names);
        if len % 2 == 1 {
            a.push(b'\n');
        }
    }
    a.extend(header("rt.o/", 0));
    a
}

/// The symbol index of the runtime `scripts/build.sh` assembles.
const RUNTIME_SYMBOLS: &[&str] = &["__pathprof_dump", "__pathprof_register_module", "__pathprof_unregister_module"];

fn wrapper(exe: &str, dir: &Dir, args: &[&str]) -> Command {
    let mut c = Command::new(exe);
    c.args(args)
        .current_dir(&dir.0)
        .env("PATHPROF_PLUGIN", dir.file("libpathprof.so", "", false))
        .env("PATHPROF_RUNTIME", dir.file("libpathprof_rt.a", archive(Some(RUNTIME_SYMBOLS)), false))
        .env("PATHPROF_CC", dir.file("fakecc", FAKE_CC, true))
        .env("PATHPROF_CXX", format!("{} --cxx", dir.0.join("fakecc").display()));
    for v in ["PATHPROF_MODE", "PATHPROF_WEIGHTS", "PATHPROF_ATOMIC", "PATHPROF_STATS"] {
        c.env_remove(v);
    }
    c
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn lines(out: &Output) -> Vec<String> {
    text(&out.stdout).lines().map(str::to_string).collect()
}

#[test]
fn execs_the_compiler_with_rewritten_arguments_and_its_exit_status() {
    let dir = Dir::new("exec");
    let out = wrapper(WRAPPER, &dir, &["--pathprof-mode=edge", "--pathprof-atomic", "a.c", "-o", "a"])
        .env("FAKE_STATUS", "7")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7), "{}", text(&out.stderr));
    let d = dir.0.display();
    assert_eq!(
        lines(&out),
        [
            format!("arg -fpass-plugin={d}/libpathprof.so"),
            "arg -gline-tables-only".into(),
            "arg a.c".into(),
            "arg -o".into(),
            "arg a".into(),
            format!("arg {d}/libpathprof_rt.a"),
            "arg -Wl,--exclude-libs,libpathprof_rt.a".into(),
            "env PATHPROF_ATOMIC=1".into(),
            "env PATHPROF_MODE=edge".into(),
        ]
    );
}

/// CMake's `<LANG>_COMPILER_LAUNCHER` form: the wrapper's options, `--pathprof-launcher`, then the compiler
/// command; the named compiler runs (not `$PATHPROF_CC`) with the same rewriting and environment.
#[test]
fn launcher_runs_the_compiler_it_is_given() {
    let dir = Dir::new("launcher");
    let cc = dir.file("othercc", FAKE_CC.replace("arg %s", "other %s"), true);
    let out = wrapper(WRAPPER, &dir, &["--pathprof-mode=context", "--pathprof-launcher", cc.to_str().unwrap()])
        .args(["-O2", "-g", "-c", "a.c", "-o", "a.o"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let d = dir.0.display();
    assert_eq!(
        lines(&out),
        [
            format!("other -fpass-plugin={d}/libpathprof.so"),
            "other -O2".into(),
            "other -g".into(),
            "other -c".into(),
            "other a.c".into(),
            "other -o".into(),
            "other a.o".into(),
            "env PATHPROF_MODE=context".into(),
        ]
    );
    let out = wrapper(WRAPPER, &dir, &["--pathprof-launcher"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stderr), "pathprof-clang: error: --pathprof-launcher needs the compiler command after it\n");
}

#[test]
fn cxx_driver_by_binary_and_by_name() {
    let dir = Dir::new("cxx");
    let out = wrapper(WRAPPER_XX, &dir, &["-c", "a.cc"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(lines(&out)[0], "arg --cxx", "PATHPROF_CXX (with its leading argument) runs for C++");
    let link = dir.0.join("pathprof-clang++");
    std::os::unix::fs::symlink(WRAPPER, &link).unwrap();
    let out = wrapper(link.to_str().unwrap(), &dir, &["-c", "a.cc"]).output().unwrap();
    assert_eq!(lines(&out)[0], "arg --cxx");
    let out = wrapper(link.to_str().unwrap(), &dir, &["--pathprof-bogus"]).output().unwrap();
    assert_eq!(text(&out.stderr), "pathprof-clang++: error: unknown option --pathprof-bogus\n");
}

#[test]
fn unknown_wrapper_option_is_one_line_and_status_2() {
    let dir = Dir::new("unknown");
    let out = wrapper(WRAPPER, &dir, &["a.c", "--pathprof-xyz"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert_eq!(text(&out.stderr), "pathprof-clang: error: unknown option --pathprof-xyz\n");
}

#[test]
fn print_paths_and_missing_files() {
    let dir = Dir::new("print");
    let out = wrapper(WRAPPER, &dir, &["--pathprof-print-plugin"]).output().unwrap();
    assert_eq!((out.status.code(), text(&out.stdout)), (Some(0), format!("{}/libpathprof.so\n", dir.0.display())));
    let out = wrapper(WRAPPER, &dir, &["--pathprof-print-runtime"]).output().unwrap();
    assert_eq!(text(&out.stdout), format!("{}/libpathprof_rt.a\n", dir.0.display()));
    let out =
        wrapper(WRAPPER, &dir, &["a.c"]).env("PATHPROF_RUNTIME", "/nonexistent/libpathprof_rt.a").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "pathprof-clang: error: PATHPROF_RUNTIME=/nonexistent/libpathprof_rt.a is not a file\n"
    );
}

#[test]
fn compiler_that_cannot_run_is_status_2() {
    let dir = Dir::new("no-cc");
    let out = wrapper(WRAPPER, &dir, &["-c", "a.c"]).env("PATHPROF_CC", "/nonexistent/cc").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.starts_with("pathprof-clang: error: cannot run /nonexistent/cc: "), "{err}");
    assert_eq!(err.lines().count(), 1);
}

#[test]
fn runtime_archive_is_recognised_by_its_symbol_index() {
    use pathprof_clang_wrapper::runtime_check::check_runtime;
    let dir = Dir::new("check");
    let check = |name: &str, bytes: Vec<u8>| check_runtime(&dir.file(name, bytes, false));
    assert_eq!(check("good.a", archive(Some(RUNTIME_SYMBOLS))), Ok(()));
    let hosted = check("hosted.a", archive(Some(&["__pathprof_register_module", "fmod", "__pathprof_dump"])));
    assert_eq!(hosted.unwrap_err(), "is a cargo build of the crate, not the runtime (it defines `fmod`)");
    assert!(check("builtins.a", archive(Some(&["__muldc3"]))).unwrap_err().ends_with("(it defines `__muldc3`)"));
    let no_entry = check("none.a", archive(Some(&["__pathprof_dump"])));
    assert_eq!(no_entry, Err("does not define __pathprof_register_module".into()));
    assert_eq!(check("noindex.a", archive(None)), Err("has no symbol index".into()));
    assert_eq!(check("empty.a", Vec::new()), Err("is not an archive".into()));
    assert_eq!(check("text.a", b"int x;\n".to_vec()), Err("is not an archive".into()));
}

/// A wrapper in a cargo target tree (`target/release/pathprof-clang` next to the hosted build of the crate)
/// refuses that archive with one line saying how to build the runtime, and links a real one in `../lib`.
#[test]
fn wrapper_in_a_cargo_tree_never_links_a_crate_build() {
    let dir = Dir::new("cargo-tree");
    let exe = dir.0.join("release/pathprof-clang");
    dir.file("release/pathprof-clang", fs::read(WRAPPER).unwrap(), true);
    dir.file("release/libpathprof.so", "", false);
    let hosted = dir.file("release/libpathprof_rt.a", archive(Some(&["__pathprof_register_module", "fmod"])), false);
    dir.file("rt/libpathprof_rt.a", archive(Some(&["__pathprof_register_module", "__muldc3"])), false);
    let run = |args: &[&str]| {
        let mut c = wrapper(exe.to_str().unwrap(), &dir, args);
        c.env_remove("PATHPROF_PLUGIN").env_remove("PATHPROF_RUNTIME");
        c.output().unwrap()
    };
    let out = run(&["a.c", "-o", "a"]);
    assert_eq!(out.status.code(), Some(2));
    let lib = dir.0.join("release/../lib/libpathprof_rt.a");
    assert_eq!(
        text(&out.stderr),
        format!(
            "pathprof-clang: error: cannot find libpathprof_rt.a (searched {}: refused, it is a cargo build of the \
             crate, not the runtime (it defines `fmod`), {}); build it with scripts/build.sh \
             (dist/lib/libpathprof_rt.a) or set PATHPROF_RUNTIME to its path\n",
            hosted.display(),
            lib.display()
        )
    );
    // Compiling without linking needs no runtime.
    assert!(run(&["-c", "a.c"]).status.success());
    dir.file("lib/libpathprof_rt.a", archive(Some(RUNTIME_SYMBOLS)), false);
    let out = run(&["a.c", "-o", "a"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(lines(&out).contains(&format!("arg {}", lib.display())), "{:?}", lines(&out));
}

/// The archives cargo itself leaves next to this very wrapper are refused (when the workspace build made them):
/// `target/release/libpathprof_rt.a` (hosted, `std`) and `target/rt/libpathprof_rt.a` (compiler-builtins).
#[test]
fn cargo_outputs_next_to_this_wrapper_are_refused() {
    use pathprof_clang_wrapper::runtime_check::check_runtime;
    let bin = Path::new(WRAPPER).parent().unwrap();
    let mut seen = 0;
    for archive in [bin.join("libpathprof_rt.a"), bin.join("../rt/libpathprof_rt.a")] {
        if !archive.is_file() {
            eprintln!("{} not built: not checked", archive.display());
            continue;
        }
        seen += 1;
        let why = check_runtime(&archive).unwrap_err();
        assert!(why.starts_with("is a cargo build of the crate") && !why.contains("`__pathprof_"), "{why}");
    }
    if bin.join("libpathprof_rt.a").is_file() {
        let dir = Dir::new("real-cargo-tree");
        let mut c = wrapper(WRAPPER, &dir, &["a.c", "-o", "a"]);
        let out = c.env_remove("PATHPROF_RUNTIME").output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.starts_with("pathprof-clang: error: cannot find libpathprof_rt.a (searched "), "{err}");
        assert!(err.contains("build it with scripts/build.sh") && err.lines().count() == 1, "{err}");
    }
    eprintln!("{seen} cargo archive(s) checked");
}

/// The link the wrapper builds really links: clang-19 with the runtime archive (`$PATHPROF_RUNTIME`, or built
/// here with `cargo build -p pathprof-rt --profile rt` into this test's target directory and assembled by
/// `scripts/rt-archive.sh`) and `--exclude-libs`, for an executable that calls the public API and for a shared
/// object.
#[test]
fn real_link_with_clang_19() {
    if Command::new("clang-19").arg("--version").output().is_err() {
        eprintln!("skipping: clang-19 not found");
        return;
    }
    let dir = Dir::new("real-link");
    let target = Path::new(WRAPPER).ancestors().nth(2).unwrap().to_path_buf();
    let archive = match std::env::var_os("PATHPROF_RUNTIME").filter(|p| !p.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => {
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let st = Command::new(cargo)
                .args(["build", "-q", "-p", "pathprof-rt", "--profile", "rt", "--target-dir"])
                .arg(&target)
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .unwrap();
            assert!(st.success(), "building the runtime archive failed");
            let out = dir.0.join("libpathprof_rt.a");
            let st = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/rt-archive.sh"))
                .arg(target.join("rt/libpathprof_rt.a"))
                .arg(&out)
                .status()
                .unwrap();
            assert!(st.success(), "assembling the runtime archive failed");
            out
        }
    };
    // clang-19 minus the plugin flag (no pass plugin needed to test linking).
    let cc = dir.file(
        "cc-no-plugin",
        "#!/bin/sh\nfor a; do shift; case \"$a\" in -fpass-plugin=*) ;; *) set -- \"$@\" \"$a\";; esac; done\nexec clang-19 \"$@\"\n",
        true,
    );
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("../include");
    let main = dir.file(
        "main.c",
        "#include <pathprof.h>\n#include <stdio.h>\nint main(void) { printf(\"%d\\n\", __pathprof_dump()); return 0; }\n",
        false,
    );
    let lib = dir.file("lib.c", "int __pathprof_dump(void);\nint lib_fn(void) { return __pathprof_dump(); }\n", false);
    for (args, out) in [
        (vec![main.to_str().unwrap(), "-I", include.to_str().unwrap(), "-o", "prog"], "prog"),
        (vec!["-shared", "-fPIC", lib.to_str().unwrap(), "-o", "lib.so"], "lib.so"),
    ] {
        let o = Command::new(WRAPPER)
            .args(&args)
            .current_dir(&dir.0)
            .env("PATHPROF_CC", &cc)
            .env("PATHPROF_PLUGIN", dir.file("libpathprof.so", "", false))
            .env("PATHPROF_RUNTIME", &archive)
            .output()
            .unwrap();
        assert!(o.status.success(), "linking {out}: {}", text(&o.stderr));
    }
    let run = Command::new(dir.0.join("prog")).current_dir(&dir.0).output().unwrap();
    assert_eq!(text(&run.stdout), "0\n", "no module registered: the dump succeeds without writing");
    // --exclude-libs: the shared object does not export the runtime.
    if let Ok(nm) = Command::new("llvm-nm-19").args(["-D", "--defined-only"]).arg(dir.0.join("lib.so")).output() {
        let syms = text(&nm.stdout);
        assert!(syms.contains("lib_fn") && !syms.contains("__pathprof"), "{syms}");
    }
}
