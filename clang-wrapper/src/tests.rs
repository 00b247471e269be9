use super::*;

fn os(v: &[&str]) -> Vec<OsString> {
    v.iter().map(OsString::from).collect()
}

fn found() -> Found {
    Found { plugin: Ok("/p/libpathprof.so".into()), runtime: Ok("/r/libpathprof_rt.a".into()) }
}

fn compile(args: &[&str]) -> (Vec<String>, Vec<(String, String)>) {
    match rewrite(&os(args), &found()).unwrap() {
        Plan::Compile { args, env } => (args.into_iter().map(|a| a.into_string().unwrap()).collect(), env),
        p => panic!("expected a compile plan, got {p:?}"),
    }
}

const PLUGIN: &str = "-fpass-plugin=/p/libpathprof.so";
const LINES: &str = "-gline-tables-only";
const RT: &str = "/r/libpathprof_rt.a";
const HIDE: &str = "-Wl,--exclude-libs,libpathprof_rt.a";

#[test]
fn compile_only_gets_plugin_and_line_tables_but_no_runtime() {
    let (args, env) = compile(&["-O2", "-c", "a.c", "-o", "a.o"]);
    assert_eq!(args, [PLUGIN, LINES, "-O2", "-c", "a.c", "-o", "a.o"]);
    assert_eq!(env, [("PATHPROF_OUTPUT".to_string(), "a.o".to_string())]);
}

#[test]
fn link_appends_the_runtime_after_user_arguments() {
    let (args, _) = compile(&["a.c", "b.o", "-lm", "-o", "prog"]);
    assert_eq!(args, [PLUGIN, LINES, "a.c", "b.o", "-lm", "-o", "prog", RT, HIDE]);
}

#[test]
fn modes_that_do_not_link() {
    for mode in ["-c", "-S", "-E", "-M", "-MM", "-fsyntax-only"] {
        let (args, _) = compile(&[mode, "a.c"]);
        assert!(!args.iter().any(|a| a == RT), "{mode}: {args:?}");
        assert_eq!(args[0], PLUGIN);
    }
    // Dependency output during a linking compile does not stop the link.
    for dep in ["-MD", "-MMD", "-MP"] {
        let (args, _) = compile(&[dep, "a.c"]);
        assert_eq!(args.last().unwrap(), HIDE, "{dep}");
    }
}

#[test]
fn any_user_debug_option_suppresses_line_tables() {
    for g in ["-g", "-g0", "-g3", "-ggdb", "-gdwarf-4", "-gline-tables-only", "-gline-directives-only"] {
        let (args, _) = compile(&[g, "-c", "a.c"]);
        assert_eq!(args, [PLUGIN, g, "-c", "a.c"], "{g}");
    }
    // Not debug options: driver flags that merely start with -g, and option values.
    let (args, _) = compile(&["-gen-reproducer", "-c", "a.c"]);
    assert_eq!(args[1], LINES);
    let (args, _) = compile(&["-Xlinker", "-g", "a.c"]);
    assert_eq!(args[1], LINES);
}

#[test]
fn wrapper_options_become_environment_and_are_not_passed_on() {
    let (args, env) = compile(&[
        "--pathprof-mode=path",
        "-c",
        "--pathprof-weights=profile:/tmp/x.pathprof",
        "a.c",
        "--pathprof-atomic",
        "--pathprof-stats",
        "--pathprof-fork-checks=0",
        "--pathprof-slice=a.c:12:x",
        "--pathprof-slice-json=s.json",
        "--pathprof-slice-profile=p.pathprof",
        "--pathprof-slice-observe=whole",
    ]);
    assert_eq!(args, [PLUGIN, LINES, "-c", "a.c"]);
    let want = [
        ("PATHPROF_MODE", "path"),
        ("PATHPROF_WEIGHTS", "profile:/tmp/x.pathprof"),
        ("PATHPROF_ATOMIC", "1"),
        ("PATHPROF_STATS", "1"),
        ("PATHPROF_FORK_CHECKS", "0"),
        ("PATHPROF_SLICE", "a.c:12:x"),
        ("PATHPROF_SLICE_JSON", "s.json"),
        ("PATHPROF_SLICE_PROFILE", "p.pathprof"),
        ("PATHPROF_SLICE_OBSERVE", "whole"),
        ("PATHPROF_OUTPUT", ""),
    ];
    assert_eq!(env, want.map(|(k, v)| (k.to_string(), v.to_string())));
}

#[test]
fn unknown_or_malformed_wrapper_options_are_errors() {
    for bad in ["--pathprof-xyz", "--pathprof-atomic=1", "--pathprof-", "--pathprof-modes=edge"] {
        let e = rewrite(&os(&["a.c", bad]), &found()).unwrap_err();
        assert_eq!(e, Error::UnknownOption(bad.into()));
        assert_eq!(e.to_string(), format!("unknown option {bad}"));
    }
    for bad in ["--pathprof-mode", "--pathprof-weights="] {
        let e = rewrite(&os(&[bad, "a.c"]), &found()).unwrap_err();
        assert!(matches!(e, Error::MissingValue(_)), "{bad}: {e:?}");
    }
}

#[test]
fn separate_values_are_not_inputs_or_modes() {
    // `-o -c` names an output file "-c"; `-MF x.d` a dependency file; `-l m` a library.
    let (args, _) = compile(&["a.c", "-o", "-c", "-MF", "x.d", "-l", "m"]);
    assert_eq!(args.last().unwrap(), HIDE);
    // Only option values, no input: nothing to instrument.
    let (args, _) = compile(&["-o", "x.c"]);
    assert_eq!(args, ["-o", "x.c"]);
}

/// The output the pass records as part of the module identity: `-o` in every spelling (the last one counts),
/// `a.out` for a link without one, empty (never inherited) for a compile without one.
#[test]
fn the_output_is_handed_to_the_pass() {
    let output = |cmd: &[&str]| -> String {
        let (_, env) = compile(cmd);
        let values: Vec<&String> = env.iter().filter(|(k, _)| k == "PATHPROF_OUTPUT").map(|(_, v)| v).collect();
        assert_eq!(values.len(), 1, "{cmd:?}: {env:?}");
        values[0].clone()
    };
    assert_eq!(output(&["-shared", "-fPIC", "a.c", "-o", ".libs/libfoo.so.0.0.0"]), ".libs/libfoo.so.0.0.0");
    assert_eq!(output(&["a.c", "-oprog"]), "prog");
    assert_eq!(output(&["a.c", "--output=prog"]), "prog");
    assert_eq!(output(&["a.c", "--output", "prog"]), "prog");
    assert_eq!(output(&["a.c", "-o", "first", "-o", "second"]), "second");
    assert_eq!(output(&["a.c", "b.c"]), "a.out");
    assert_eq!(output(&["-c", "a.c"]), "");
    assert_eq!(output(&["-S", "a.c", "-o", "a.s"]), "a.s");
    // `-objcmt-…` options are not `-o bjcmt-…`; `--output X` is not an input (nothing to do without one).
    assert_eq!(output(&["-c", "-objcmt-migrate-literals", "a.c"]), "");
    let (args, env) = compile(&["--output", "x.c"]);
    assert_eq!((args.len(), env.len()), (2, 0));
    // The joined spellings are passed on to clang unchanged.
    let (args, _) = compile(&["a.c", "-oprog"]);
    assert!(args.contains(&"-oprog".to_string()), "{args:?}");
}

#[test]
fn language_override_is_reset_before_the_archive() {
    let (args, _) = compile(&["-x", "c", "prog.txt"]);
    assert_eq!(args, [PLUGIN, LINES, "-x", "c", "prog.txt", "-x", "none", RT, HIDE]);
    let (args, _) = compile(&["-xc++", "-", "-o", "p"]);
    assert_eq!(&args[args.len() - 4..], ["-x", "none", RT, HIDE]);
}

#[test]
fn commands_without_inputs_pass_through() {
    for cmd in [&["--version"][..], &["-v"], &["-print-search-dirs"], &[]] {
        let (args, env) = compile(cmd);
        assert_eq!(args, cmd, "{cmd:?}");
        assert!(env.is_empty());
    }
}

#[test]
fn missing_files_are_errors_only_when_needed() {
    let no_rt = Found { runtime: Err("cannot find libpathprof_rt.a".into()), ..found() };
    assert!(rewrite(&os(&["-c", "a.c"]), &no_rt).is_ok());
    assert_eq!(rewrite(&os(&["a.c"]), &no_rt).unwrap_err(), Error::NotFound("cannot find libpathprof_rt.a".into()));
    let no_plugin = Found { plugin: Err("no plugin".into()), ..found() };
    assert_eq!(rewrite(&os(&["-c", "a.c"]), &no_plugin).unwrap_err(), Error::NotFound("no plugin".into()));
    assert!(rewrite(&os(&["--version"]), &no_plugin).is_ok());
}

#[test]
fn print_options() {
    let p = rewrite(&os(&["--pathprof-print-runtime", "--pathprof-print-plugin", "a.c"]), &found()).unwrap();
    assert_eq!(p, Plan::Print(vec!["/r/libpathprof_rt.a".into(), "/p/libpathprof.so".into()]));
    let no_rt = Found { runtime: Err("gone".into()), ..found() };
    assert_eq!(rewrite(&os(&["--pathprof-print-runtime"]), &no_rt).unwrap_err(), Error::NotFound("gone".into()));
}

#[test]
fn runtime_with_another_file_name_is_hidden_by_that_name() {
    let f = Found { runtime: Ok("/opt/x/librt-copy.a".into()), ..found() };
    let Plan::Compile { args, .. } = rewrite(&os(&["a.c"]), &f).unwrap() else { panic!() };
    assert_eq!(args.last().unwrap(), "-Wl,--exclude-libs,librt-copy.a");
}

#[test]
fn locate_search_order() {
    let root = std::env::temp_dir().join(format!("pathprof-wrapper-locate-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let bin = root.join("release");
    for d in ["release", "lib", "rt"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    let f = "libthing.a";
    let find =
        |explicit: Option<&str>, dirs| locate(f, "VAR", explicit.map(OsString::from), Some(&bin), dirs, &any_file);
    let err = find(None, PLUGIN_DIRS).unwrap_err();
    assert!(err.starts_with("cannot find libthing.a (searched "), "{err}");
    assert!(err.ends_with("; build it with scripts/build.sh (dist/lib/libthing.a) or set VAR to its path"), "{err}");
    assert!(!err.contains('\n'));
    // Plugin order: own directory, ../lib, ../rt.
    std::fs::write(root.join("rt").join(f), b"").unwrap();
    assert_eq!(find(None, PLUGIN_DIRS).unwrap(), bin.join("../rt").join(f));
    std::fs::write(root.join("lib").join(f), b"").unwrap();
    assert_eq!(find(None, PLUGIN_DIRS).unwrap(), bin.join("../lib").join(f));
    std::fs::write(bin.join(f), b"").unwrap();
    assert_eq!(find(None, PLUGIN_DIRS).unwrap(), bin.join(f));
    // Runtime order: own directory, ../lib; never cargo's ../rt output.
    assert_eq!(find(None, RUNTIME_DIRS).unwrap(), bin.join(f));
    std::fs::remove_file(bin.join(f)).unwrap();
    assert_eq!(find(None, RUNTIME_DIRS).unwrap(), bin.join("../lib").join(f));
    std::fs::remove_file(root.join("lib").join(f)).unwrap();
    assert!(find(None, RUNTIME_DIRS).is_err(), "../rt is not searched for the runtime");
    // The explicit variable wins, and must exist; empty counts as unset.
    let explicit = root.join("rt").join(f);
    assert_eq!(find(explicit.to_str(), PLUGIN_DIRS).unwrap(), explicit);
    assert_eq!(find(Some(""), PLUGIN_DIRS).unwrap(), bin.join("../rt").join(f));
    assert_eq!(find(Some("/nonexistent/x.a"), PLUGIN_DIRS).unwrap_err(), "VAR=/nonexistent/x.a is not a file");
    assert!(locate(f, "VAR", None, None, PLUGIN_DIRS, &any_file).is_err());
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn locate_skips_refused_files_and_says_why() {
    let root = std::env::temp_dir().join(format!("pathprof-wrapper-refuse-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let bin = root.join("release");
    for d in ["release", "lib"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    let f = "libthing.a";
    std::fs::write(bin.join(f), b"bad").unwrap();
    let accept = |p: &Path| if std::fs::read(p).unwrap() == b"good" { Ok(()) } else { Err("is bad".to_string()) };
    let find =
        |explicit: Option<&str>| locate(f, "VAR", explicit.map(OsString::from), Some(&bin), RUNTIME_DIRS, &accept);
    let err = find(None).unwrap_err();
    let own = bin.join(f);
    assert_eq!(
        err,
        format!(
            "cannot find libthing.a (searched {}: refused, it is bad, {}); build it with scripts/build.sh \
             (dist/lib/libthing.a) or set VAR to its path",
            own.display(),
            bin.join("../lib").join(f).display()
        )
    );
    std::fs::write(root.join("lib").join(f), b"good").unwrap();
    assert_eq!(find(None).unwrap(), bin.join("../lib").join(f), "a refused file does not stop the search");
    assert_eq!(
        find(own.to_str()).unwrap_err(),
        format!("VAR={} is bad; build it with scripts/build.sh (dist/lib/libthing.a)", own.display()),
        "the explicit variable is checked too"
    );
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn compiler_override_may_carry_leading_arguments() {
    assert_eq!(compiler_command(Driver::C, None), ("clang-19".into(), vec![]));
    assert_eq!(compiler_command(Driver::Cxx, Some("  ".into())), ("clang++-19".into(), vec![]));
    assert_eq!(
        compiler_command(Driver::C, Some("ccache  clang-19".into())),
        ("ccache".into(), vec![OsString::from("clang-19")])
    );
}

#[test]
fn driver_from_argv0() {
    assert_eq!(Driver::from_argv0(OsStr::new("/usr/bin/pathprof-clang++")), Driver::Cxx);
    assert_eq!(Driver::from_argv0(OsStr::new("pathprof-clang")), Driver::C);
    assert_eq!(Driver::from_argv0(OsStr::new("")), Driver::C);
}

#[test]
fn lto_flag_moves_instrumentation_to_the_link() {
    let (args, env) = compile(&["--pathprof-lto", "-c", "a.c"]);
    assert_eq!(args, [PLUGIN, LINES, "-flto", "-c", "a.c"]);
    let want = [("PATHPROF_LTO", "1"), ("PATHPROF_OUTPUT", "")];
    assert_eq!(env, want.map(|(k, v)| (k.to_string(), v.to_string())));
    let (args, _) = compile(&["--pathprof-lto", "a.o", "b.o"]);
    assert!(args.contains(&"-fuse-ld=lld".to_string()), "{args:?}");
    assert!(args.iter().any(|a| a.starts_with("-Wl,--load-pass-plugin=") && a.ends_with("libpathprof.so")), "{args:?}");
    assert!(args.iter().any(|a| a.contains("-u,__pathprof_register_module")), "{args:?}");
}

#[test]
fn launcher_takes_the_compiler_after_its_flag() {
    let cmd = os(&["--pathprof-mode=edge", "--pathprof-launcher", "/usr/bin/clang-19", "-c", "a.c"]);
    let (cc, rest) = split_launcher(cmd).unwrap();
    assert_eq!(cc, Some("/usr/bin/clang-19".into()));
    assert_eq!(rest, os(&["--pathprof-mode=edge", "-c", "a.c"]));
    // Not a launcher: no flag, or the flag only after the compiler's own arguments began.
    assert_eq!(split_launcher(os(&["-c", "a.c"])).unwrap(), (None, os(&["-c", "a.c"])));
    let late = os(&["-c", "--pathprof-launcher", "x"]);
    assert_eq!(split_launcher(late.clone()).unwrap(), (None, late));
    assert_eq!(split_launcher(os(&["--pathprof-atomic", "--pathprof-launcher"])), Err(Error::LauncherWithoutCompiler));
}
