//! The CMake package (`dist/lib/cmake/PathProf`): `test-suite/cmake-project` is configured with
//! `find_package(PathProf CONFIG REQUIRED)` against the install tree, built with clang-19, run, and its
//! profiles checked against counts derived by hand (`// expect: N` markers, comments in the sources): each
//! instrumented target in its own mode and with its own options, the uninstrumented targets absent, the
//! runtime reaching an uninstrumented executable through the instrumented static library it links, and kept
//! hidden in the instrumented shared library.

use pathprof_test_suite::{
    assert_markers, dist, entry_counts, expectations, marker_counts, run_ok, scratch, show_json,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn project() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("cmake-project")
}

/// `cmake` configuring the project into `build` with clang-19 and the install tree as the prefix path.
fn configure(build: &Path, extra: &[&str]) -> Output {
    let mut c = Command::new("cmake");
    c.arg("-S").arg(project()).arg("-B").arg(build);
    c.args(["-DCMAKE_C_COMPILER=clang-19", "-DCMAKE_CXX_COMPILER=clang++-19"]);
    c.arg(format!("-DCMAKE_PREFIX_PATH={}", dist().display())).args(extra);
    c.output().unwrap_or_else(|e| panic!("cannot run cmake ({e}): scripts/setup.sh installs it"))
}

/// Symbols of an object file (`llvm-nm-19`), one per line.
fn symbols(object: &Path) -> String {
    String::from_utf8_lossy(&run_ok(Command::new("llvm-nm-19").arg(object)).stdout).into_owned()
}

/// Disassembly of an object file.
fn disassembly(object: &Path) -> String {
    String::from_utf8_lossy(&run_ok(Command::new("llvm-objdump-19").arg("-d").arg(object)).stdout).into_owned()
}

/// How many variables the object's DWARF describes (none with `-gline-tables-only`).
fn debug_variables(object: &Path) -> usize {
    let out = run_ok(Command::new("llvm-dwarfdump-19").arg("--debug-info").arg(object));
    String::from_utf8_lossy(&out.stdout).matches("DW_TAG_variable").count()
}

/// Builds the project with `build_type`, runs both executables and checks their profiles.
fn build_and_check(build_type: &str) {
    let build = scratch(&format!("cmake-{}", if build_type.is_empty() { "default" } else { build_type }));
    let conf = configure(&build, &[&format!("-DCMAKE_BUILD_TYPE={build_type}")]);
    assert!(conf.status.success(), "configure failed:\n{}", String::from_utf8_lossy(&conf.stderr));
    run_ok(Command::new("cmake").arg("--build").arg(&build));
    let object = |target: &str, source: &str| build.join(format!("CMakeFiles/{target}.dir/{source}.o"));

    // app: count_multiples (path mode, in the static library), triangle (context mode, in the shared
    // library), main and scale (edge mode); plain_twice is uninstrumented. Output as without pathprof.
    let run = run_ok(Command::new(build.join("app")).env("PATHPROF_FILE", build.join("app.pathprof")));
    assert_eq!(String::from_utf8_lossy(&run.stdout), "302 15\n");
    let show = show_json(&build.join("app.pathprof"));
    let modes: BTreeMap<&str, &str> = show["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["name"].as_str().unwrap(), f["mode"].as_str().unwrap()))
        .collect();
    let want = [("count_multiples", "path"), ("main", "edge"), ("scale", "edge"), ("triangle", "context")];
    assert_eq!(modes, BTreeMap::from(want));
    assert!(show["functions"].as_array().unwrap().iter().all(|f| f["exact"] == true), "{show}");
    let entries = entry_counts(&show);
    assert_eq!(entries["count_multiples"], Some(4));
    assert_eq!((entries["main"], entries["scale"], entries["triangle"]), (Some(1), Some(1), Some(1)));
    for source in ["counting.c", "main.c", "scale.cpp", "triangle.c"] {
        assert_markers(&show, &project().join(source));
    }
    assert!(!symbols(&object("plain", "plain.c")).contains("__pathprof"), "plain.c was instrumented");
    // The shared library carries its own runtime copy, hidden (--exclude-libs): it exports only its code.
    let exported = run_ok(Command::new("llvm-nm-19").args(["-D", "--defined-only"]).arg(build.join("libtriangle.so")));
    let exported = String::from_utf8_lossy(&exported.stdout);
    assert!(exported.contains(" triangle") && !exported.contains("__pathprof"), "{exported}");

    // ATOMIC reached only the library's compile: its counter updates are locked instructions, app's are not.
    // (`\tlock`: the prefix as llvm-objdump prints it; the header names the object path, which may contain "lock".)
    assert!(disassembly(&object("counting", "counting.c")).contains("\tlock"), "counting.c: no atomic update");
    for (target, source) in [("app", "main.c"), ("app", "scale.cpp"), ("triangle", "triangle.c")] {
        assert!(!disassembly(&object(target, source)).contains("\tlock"), "{source}: atomic updates");
    }
    // Debug info: line tables when the build type has no -g (the profile above names lines); the user's -g kept.
    let variables = debug_variables(&object("app", "main.c"));
    match build_type {
        "RelWithDebInfo" => assert!(variables > 0, "RelWithDebInfo's -g was replaced"),
        _ => assert_eq!(variables, 0, "a build without -g got full debug info"),
    }

    // plain_app is not instrumented but links the instrumented library: the runtime came with it, and the
    // profile holds only count_multiples, called once as count_multiples(7, 2): loop body 7 times, 4 counting.
    let run = run_ok(Command::new(build.join("plain_app")).env("PATHPROF_FILE", build.join("plain.pathprof")));
    assert_eq!(String::from_utf8_lossy(&run.stdout), "4\n");
    let show = show_json(&build.join("plain.pathprof"));
    assert_eq!(entry_counts(&show), BTreeMap::from([("count_multiples".to_string(), Some(1))]));
    let counting = project().join("counting.c");
    let lines: Vec<u32> = expectations(&counting).into_keys().collect();
    // The markers are, in order: `int c = 0`, the `if`, `c++`, `return c`.
    let want: BTreeMap<u32, Option<u64>> = lines.into_iter().zip([Some(1), Some(7), Some(4), Some(1)]).collect();
    assert_eq!(marker_counts(&show, &counting), want);
}

#[test]
fn instrumented_targets_default_build() {
    build_and_check("");
}

#[test]
fn instrumented_targets_relwithdebinfo_build() {
    build_and_check("RelWithDebInfo");
}

#[test]
fn unknown_mode_is_a_configure_error() {
    let build = scratch("cmake-bad-mode");
    let out = configure(&build, &["-DPATHPROF_TEST_BAD_MODE=ON"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("pathprof_instrument(plain): unknown MODE 'bogus'"), "{err}");
}
