//! `pathprof-clang` and `pathprof-clang++` (built as `pathprof-clangxx`, or `pathprof-clang` invoked under a
//! name ending in `++`): drop-in compiler drivers that build programs with pathprof
//! instrumentation. They exec `clang-19` / `clang++-19` (or `$PATHPROF_CC` / `$PATHPROF_CXX`, which may hold a
//! command with leading arguments such as `ccache clang-19`) with the user's arguments plus:
//!
//! - `-fpass-plugin=<libpathprof.so>`, the instrumentation pass;
//! - `-gline-tables-only`, unless the user chose debug info with any `-g…` option (`-g0` included), so the
//!   profile can name source lines;
//! - when the command links (no `-c`, `-S`, `-E`, `-M`, `-MM`, `-fsyntax-only`, and at least one input), the
//!   runtime archive `libpathprof_rt.a` after the user's arguments (preceded by `-x none` if the user used
//!   `-x`, so it is not taken for source), and `-Wl,--exclude-libs,libpathprof_rt.a`, which keeps the runtime's
//!   symbols local to each executable or shared object (one runtime copy per image, as with compiler-rt's
//!   profile runtime). The archive needs no other library.
//!
//! A command with no input at all (`pathprof-clang --version`, `-v`) is passed through unchanged.
//!
//! # Wrapper options
//! Consumed by the wrapper, never passed to clang; the pass reads them from the environment:
//!
//! | option | environment |
//! |--------|-------------|
//! | `--pathprof-mode=M` | `PATHPROF_MODE=M` |
//! | `--pathprof-weights=W` | `PATHPROF_WEIGHTS=W` |
//! | `--pathprof-use=FILE` | `PATHPROF_USE=FILE` (annotate branch weights instead of instrumenting) |
//! | `--pathprof-path-budget=N` | `PATHPROF_PATH_BUDGET=N` |
//! | `--pathprof-path-array-max=N` | `PATHPROF_PATH_ARRAY_MAX=N` |
//! | `--pathprof-path-sparse-max=N` | `PATHPROF_PATH_SPARSE_MAX=N` |
//! | `--pathprof-path-cache=N` | `PATHPROF_PATH_CACHE=N` |
//! | `--pathprof-atomic` | `PATHPROF_ATOMIC=1` |
//! | `--pathprof-fork-checks=0` | `PATHPROF_FORK_CHECKS=0` (no fork re-entry checks: cheaper calls, forked children make in-flight functions inexact) |
//! | `--pathprof-promote=0` | `PATHPROF_PROMOTE=0` (every in-loop counter update goes to memory; `early`: promoted at instrumentation only, not again after inlining; see README, counter promotion) |
//! | `--pathprof-loop-resets=0` | `PATHPROF_LOOP_RESETS=0` (path, context and piecewise mode: the papers' paths across loop entries; default 1 restarts paths where a loop's counts then fold, see README) |
//! | `--pathprof-ip-cut-leaves=1` | `PATHPROF_IP_CUT_LEAVES=1` (context and piecewise mode: cut the call sites of leaves with a loop; measured, off by default) |
//! | `--pathprof-stats` | `PATHPROF_STATS=1` |
//! | `--pathprof-slice=FILE:LINE[:VAR]` | `PATHPROF_SLICE=…` (build the executable slice instead of instrumenting) |
//! | `--pathprof-slice-json=OUT` | `PATHPROF_SLICE_JSON=OUT` (the slice's source lines) |
//! | `--pathprof-slice-profile=FILE` | `PATHPROF_SLICE_PROFILE=FILE` (slice only what the profile shows executed) |
//! | `--pathprof-slice-observe=slice\|whole` | `PATHPROF_SLICE_OBSERVE=…` (testing aid: observe the criterion's values) |
//! | `--pathprof-trace-naive` | `PATHPROF_TRACE_NAIVE=1` (trace mode writes every block, the second method) |
//! | `--pathprof-lto` | `PATHPROF_LTO=1`, plus `-flto` and, when linking, `-fuse-ld=lld`, `-Wl,--load-pass-plugin=<plugin>` and `-Wl,-u,…` for the runtime's entry points |
//!
//! `--pathprof-lto` is whole-program profiling: the compiles emit plain LTO bitcode, and lld's full-LTO
//! pipeline instruments the merged program once, so context and piecewise paths cross translation units.
//! (`-fpass-plugin` is not forwarded to the linker, and symbols the LTO code generator introduces do not pull
//! archive members by themselves: hence the extra linker flags.)
//!
//! `--pathprof-print-plugin` and `--pathprof-print-runtime` print the located paths and exit 0. Any other
//! `--pathprof-…` option is an error.
//!
//! Every command with an input also gets `PATHPROF_OUTPUT`: the file it writes as given (`-o FILE`, `-oFILE`,
//! `--output[=]FILE`; `a.out` for a link without one), or empty for a compile without one (so a value in the
//! wrapper's own environment never leaks in). The pass resolves it against the working directory and records it
//! as part of the module's identity, which keeps apart modules of one name in different outputs (see
//! `pathprof::identity`).
//!
//! # As a compiler launcher
//! `pathprof-clang [--pathprof-…] --pathprof-launcher COMPILER ARGS…` runs `COMPILER` (instead of `clang-19` or
//! `$PATHPROF_CC`) on the rewritten `ARGS`: the form of CMake's `<LANG>_COMPILER_LAUNCHER`, which puts the
//! launcher's own arguments before the compiler command. The CMake package (`cmake/PathProfConfig.cmake`)
//! instruments single targets this way, with exactly the flags and debug-info rule of the `CC=` route.
//!
//! # Finding the plugin and the runtime
//! Each file is taken from the first place that has it. The plugin: `$PATHPROF_PLUGIN` (if set, it must exist),
//! the wrapper's own directory, `<dir>/../lib`, `<dir>/../rt`. The runtime: `$PATHPROF_RUNTIME` (likewise),
//! the wrapper's own directory, `<dir>/../lib`; and only an archive that defines nothing but the runtime's
//! `__pathprof_*` entry points, as `scripts/build.sh` assembles it (see [`runtime_check`]). Cargo's own
//! `libpathprof_rt.a` outputs, `target/release/` (the crate built hosted, for its tests) and `target/rt/`
//! (freestanding, but with compiler-builtins bundled), define C-library and compiler-runtime symbols and are
//! refused, so a wrapper run from `target/release` says to run `scripts/build.sh` (and use
//! `dist/bin/pathprof-clang`) instead of linking one of them.
//!
//! # Exit status
//! clang's own (the wrapper `exec`s it); 2 for wrapper errors (unknown option, missing file, clang not
//! runnable), each reported as one line `pathprof-clang: error: …`.
//!
//! # Limits
//! Response files (`@file`) are not read: their contents cannot turn off linking, so a compile-only command
//! hidden in one still gets the archive appended (clang then warns that the linker input is unused).

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// File name of the pass plugin.
pub const PLUGIN_FILE: &str = "libpathprof.so";
/// File name of the runtime archive.
pub const RUNTIME_FILE: &str = "libpathprof_rt.a";

/// Where the plugin is searched, relative to the wrapper's directory ("" = that directory), after
/// `$PATHPROF_PLUGIN`.
pub const PLUGIN_DIRS: &[&str] = &["", "../lib", "../rt"];
/// Where the runtime is searched, after `$PATHPROF_RUNTIME` (only archives [`runtime_check::check_runtime`]
/// accepts count).
pub const RUNTIME_DIRS: &[&str] = &["", "../lib"];

/// Which driver this is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Driver {
    /// `pathprof-clang`, running `clang-19`.
    C,
    /// `pathprof-clang++`, running `clang++-19`.
    Cxx,
}

impl Driver {
    /// The driver a program invoked as `argv0` is: C++ if the file name ends in `++` (a `pathprof-clang++`
    /// link to `pathprof-clang`), else C.
    pub fn from_argv0(argv0: &OsStr) -> Driver {
        match Path::new(argv0).file_name() {
            Some(n) if n.as_bytes().ends_with(b"++") => Driver::Cxx,
            _ => Driver::C,
        }
    }

    /// The wrapper's name, used in diagnostics.
    pub fn name(self) -> &'static str {
        match self {
            Driver::C => "pathprof-clang",
            Driver::Cxx => "pathprof-clang++",
        }
    }

    /// The compiler run when the override variable is unset.
    pub fn default_compiler(self) -> &'static str {
        match self {
            Driver::C => "clang-19",
            Driver::Cxx => "clang++-19",
        }
    }

    /// The variable that overrides the compiler.
    pub fn override_var(self) -> &'static str {
        match self {
            Driver::C => "PATHPROF_CC",
            Driver::Cxx => "PATHPROF_CXX",
        }
    }
}

/// The result of looking for the plugin and the runtime: a path, or the one-line reason it was not found. Only
/// the files a command needs are required, so compiling with `-c` works without a runtime archive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// `libpathprof.so`.
    pub plugin: Result<PathBuf, String>,
    /// `libpathprof_rt.a`.
    pub runtime: Result<PathBuf, String>,
}

/// What the wrapper does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Run the compiler with these arguments (after any leading ones from `$PATHPROF_CC`) and additional
    /// environment variables.
    Compile {
        /// The compiler's arguments.
        args: Vec<OsString>,
        /// Variables to set for the pass.
        env: Vec<(String, String)>,
    },
    /// Print these paths, one per line, and exit 0 (`--pathprof-print-*`).
    Print(Vec<PathBuf>),
}

/// A wrapper error (exit status 2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// A `--pathprof-` option the wrapper does not know.
    UnknownOption(String),
    /// A `--pathprof-` option that needs `=VALUE` and has none.
    MissingValue(String),
    /// A file the command needs was not found (the reason, one line).
    NotFound(String),
    /// `--pathprof-launcher` is the last argument: no compiler follows it.
    LauncherWithoutCompiler,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnknownOption(o) => write!(f, "unknown option {o}"),
            Error::MissingValue(o) => write!(f, "option {o} needs a value ({o}=VALUE)"),
            Error::NotFound(why) => f.write_str(why),
            Error::LauncherWithoutCompiler => f.write_str("--pathprof-launcher needs the compiler command after it"),
        }
    }
}

/// Clang options whose value is the next argument: the value is passed through without being looked at, so
/// `-o -c` or `-Xlinker -g` are not mistaken for mode or debug options, nor `-l m` for an input.
const SEPARATE_VALUE: &[&str] = &[
    "-o",
    "--output",
    "-x",
    "-I",
    "-D",
    "-U",
    "-L",
    "-l",
    "-u",
    "-z",
    "-T",
    "-B",
    "-F",
    "-include",
    "-imacros",
    "-include-pch",
    "-isystem",
    "-isystem-after",
    "-iquote",
    "-idirafter",
    "-isysroot",
    "-iprefix",
    "-iwithprefix",
    "-iwithprefixbefore",
    "-ivfsoverlay",
    "-MF",
    "-MT",
    "-MQ",
    "-MJ",
    "-Xclang",
    "-Xlinker",
    "-Xassembler",
    "-Xpreprocessor",
    "-Xopenmp-target",
    "-mllvm",
    "-target",
    "-arch",
    "--param",
    "-framework",
    "--sysroot",
    "-dependency-file",
    "-serialize-diagnostics",
    "-resource-dir",
    "-working-directory",
];

/// Options after which the driver does not link.
const NO_LINK: &[&str] = &["-c", "-S", "-E", "-M", "-MM", "-fsyntax-only"];

/// Whether `arg` is a debug-info option (`-g`, `-g0`, `-ggdb3`, `-gdwarf-4`, `-gline-tables-only`...), the
/// user's choice that the wrapper then leaves alone. `-gen-…` and `-gcc-…` driver options are not.
fn is_debug_option(arg: &[u8]) -> bool {
    arg.starts_with(b"-g") && !arg.starts_with(b"-gen-") && !arg.starts_with(b"-gcc-")
}

/// The file of a joined output option, `-oFILE` or `--output=FILE` (clang's other options that start with `-o`
/// all start with `-obj`).
fn joined_output(arg: &[u8]) -> Option<&[u8]> {
    let file = match arg.strip_prefix(b"--output=") {
        Some(f) => f,
        None => arg.strip_prefix(b"-o").filter(|f| !f.is_empty() && !f.starts_with(b"bj"))?,
    };
    Some(file)
}

/// Rewrites the user's arguments (without `argv[0]`) into the compiler's, given the located files.
pub fn rewrite(args: &[OsString], found: &Found) -> Result<Plan, Error> {
    let mut user: Vec<OsString> = Vec::with_capacity(args.len() + 4);
    let mut env: Vec<(String, String)> = Vec::new();
    let mut print: Vec<&Result<PathBuf, String>> = Vec::new();
    let (mut user_debug, mut no_link, mut lang_x, mut inputs, mut lto) = (false, false, false, 0usize, false);
    let mut output: Option<OsString> = None;

    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let a = arg.as_bytes();
        if let Some(opt) = a.strip_prefix(b"--pathprof-") {
            let text = arg.to_string_lossy().into_owned();
            let (name, value) = match opt.iter().position(|&c| c == b'=') {
                Some(eq) => (&opt[..eq], Some(String::from_utf8_lossy(&opt[eq + 1..]).into_owned())),
                None => (opt, None),
            };
            let var = match name {
                b"mode" => "PATHPROF_MODE",
                b"weights" => "PATHPROF_WEIGHTS",
                b"use" => "PATHPROF_USE",
                b"path-budget" => "PATHPROF_PATH_BUDGET",
                b"path-array-max" => "PATHPROF_PATH_ARRAY_MAX",
                b"path-sparse-max" => "PATHPROF_PATH_SPARSE_MAX",
                b"path-cache" => "PATHPROF_PATH_CACHE",
                b"fork-checks" => "PATHPROF_FORK_CHECKS",
                b"promote" => "PATHPROF_PROMOTE",
                b"loop-resets" => "PATHPROF_LOOP_RESETS",
                b"ip-cut-leaves" => "PATHPROF_IP_CUT_LEAVES",
                b"slice" => "PATHPROF_SLICE",
                b"slice-json" => "PATHPROF_SLICE_JSON",
                b"slice-observe" => "PATHPROF_SLICE_OBSERVE",
                b"slice-profile" => "PATHPROF_SLICE_PROFILE",
                b"atomic" | b"stats" | b"lto" | b"trace-naive" | b"print-plugin" | b"print-runtime"
                    if value.is_none() =>
                {
                    match name {
                        b"atomic" => env.push(("PATHPROF_ATOMIC".into(), "1".into())),
                        b"trace-naive" => env.push(("PATHPROF_TRACE_NAIVE".into(), "1".into())),
                        b"lto" => {
                            env.push(("PATHPROF_LTO".into(), "1".into()));
                            lto = true;
                        }
                        b"stats" => env.push(("PATHPROF_STATS".into(), "1".into())),
                        b"print-plugin" => print.push(&found.plugin),
                        _ => print.push(&found.runtime),
                    }
                    continue;
                }
                _ => return Err(Error::UnknownOption(text)),
            };
            match value {
                Some(v) if !v.is_empty() => env.push((var.into(), v)),
                _ => {
                    let name = String::from_utf8_lossy(name);
                    return Err(Error::MissingValue(format!("--pathprof-{name}")));
                }
            }
            continue;
        }
        user.push(arg.clone());
        if SEPARATE_VALUE.iter().any(|o| o.as_bytes() == a) {
            if let Some(v) = it.next() {
                user.push(v.clone());
                if a == b"-o" || a == b"--output" {
                    output = Some(v.clone());
                }
            }
            lang_x |= a == b"-x";
            continue;
        }
        if let Some(file) = joined_output(a) {
            output = Some(OsString::from_vec(file.to_vec()));
            continue;
        }
        if NO_LINK.iter().any(|o| o.as_bytes() == a) {
            no_link = true;
        } else if a == b"-" || !a.starts_with(b"-") {
            inputs += 1;
        } else if a.starts_with(b"-x") {
            lang_x = true;
        } else if is_debug_option(a) {
            user_debug = true;
        }
    }

    if !print.is_empty() {
        let paths = print.into_iter().map(|p| p.clone().map_err(Error::NotFound)).collect::<Result<_, _>>()?;
        return Ok(Plan::Print(paths));
    }
    if inputs == 0 {
        // `--version`, `-v`, `-print-search-dirs`...: nothing to instrument or link.
        return Ok(Plan::Compile { args: user, env });
    }

    let written = match output {
        Some(o) => o.to_string_lossy().into_owned(),
        None if no_link => String::new(),
        None => "a.out".into(),
    };
    env.push(("PATHPROF_OUTPUT".into(), written));

    let plugin = found.plugin.clone().map_err(Error::NotFound)?;
    let mut out: Vec<OsString> = Vec::with_capacity(user.len() + 6);
    let mut flag = OsString::from("-fpass-plugin=");
    flag.push(&plugin);
    out.push(flag);
    if !user_debug {
        out.push("-gline-tables-only".into());
    }
    if lto {
        out.push("-flto".into());
    }
    out.append(&mut user);
    if !no_link {
        let runtime = found.runtime.clone().map_err(Error::NotFound)?;
        if lang_x {
            out.extend(["-x".into(), "none".into()]);
        }
        let mut hide = OsString::from("-Wl,--exclude-libs,");
        hide.push(runtime.file_name().unwrap_or(OsStr::new(RUNTIME_FILE)));
        out.push(runtime.into_os_string());
        out.push(hide);
        if lto {
            let mut load = OsString::from("-Wl,--load-pass-plugin=");
            load.push(&plugin);
            out.extend(["-fuse-ld=lld".into(), load]);
            let (register, add) = (pathprof_format::symbols::REGISTER_MODULE, pathprof_format::symbols::PATH_ADD);
            out.push(format!("-Wl,-u,{register},-u,{add}").into());
        }
    }
    Ok(Plan::Compile { args: out, env })
}

/// Splits a launcher command line (see the crate docs): the compiler named after `--pathprof-launcher`, which
/// must come among the leading `--pathprof-…` options, and the other arguments in order. `None` when the
/// wrapper is the compiler itself.
pub fn split_launcher(mut args: Vec<OsString>) -> Result<(Option<OsString>, Vec<OsString>), Error> {
    let leading = args.iter().take_while(|a| a.as_bytes().starts_with(b"--pathprof-")).count();
    let Some(at) = args[..leading].iter().position(|a| a == "--pathprof-launcher") else {
        return Ok((None, args));
    };
    if at + 1 >= args.len() {
        return Err(Error::LauncherWithoutCompiler);
    }
    let compiler = args.remove(at + 1);
    args.remove(at);
    Ok((Some(compiler), args))
}

/// Finds `file`: in `explicit` (the value of `$PATHPROF_PLUGIN` / `$PATHPROF_RUNTIME`, `var`), else in the
/// first of `dirs` (relative to the wrapper's directory `exe_dir`: [`PLUGIN_DIRS`], [`RUNTIME_DIRS`]) that has
/// it and whose file `accept`s (which returns why not otherwise). The error is one line naming what was
/// searched and what was refused.
pub fn locate(
    file: &str,
    var: &str,
    explicit: Option<OsString>,
    exe_dir: Option<&Path>,
    dirs: &[&str],
    accept: &dyn Fn(&Path) -> Result<(), String>,
) -> Result<PathBuf, String> {
    let build = format!("build it with scripts/build.sh (dist/lib/{file})");
    if let Some(p) = explicit.filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        if !p.is_file() {
            return Err(format!("{var}={} is not a file", p.display()));
        }
        return match accept(&p) {
            Ok(()) => Ok(p),
            Err(why) => Err(format!("{var}={} {why}; {build}", p.display())),
        };
    }
    let candidates: Vec<PathBuf> = match exe_dir {
        Some(d) => dirs.iter().map(|rel| if rel.is_empty() { d.join(file) } else { d.join(rel).join(file) }).collect(),
        None => vec![],
    };
    let mut searched: Vec<String> = Vec::with_capacity(candidates.len());
    for c in candidates {
        if !c.is_file() {
            searched.push(c.display().to_string());
            continue;
        }
        match accept(&c) {
            Ok(()) => return Ok(c),
            Err(why) => searched.push(format!("{}: refused, it {why}", c.display())),
        }
    }
    Err(format!("cannot find {file} (searched {}); {build} or set {var} to its path", searched.join(", ")))
}

/// Accepts any file (the plugin: clang reports a file that is not one itself).
pub fn any_file(_: &Path) -> Result<(), String> {
    Ok(())
}

/// Splits the compiler command (`$PATHPROF_CC` may be `ccache clang-19`) into program and leading arguments.
pub fn compiler_command(driver: Driver, value: Option<OsString>) -> (OsString, Vec<OsString>) {
    let value = value.filter(|v| !v.as_bytes().iter().all(u8::is_ascii_whitespace));
    let Some(v) = value else {
        return (driver.default_compiler().into(), vec![]);
    };
    let mut words =
        v.as_bytes().split(u8::is_ascii_whitespace).filter(|w| !w.is_empty()).map(|w| OsString::from_vec(w.to_vec()));
    let prog = words.next().unwrap_or_else(|| driver.default_compiler().into());
    (prog, words.collect())
}

/// The wrapper's `main`: rewrite, then `exec` the compiler (or print, or fail with status 2).
pub fn main(driver: Driver) -> ! {
    use std::os::unix::process::CommandExt;

    let fail = |msg: &dyn fmt::Display| -> ! {
        eprintln!("{}: error: {msg}", driver.name());
        std::process::exit(2)
    };
    let (launched, args) = split_launcher(std::env::args_os().skip(1).collect()).unwrap_or_else(|e| fail(&e));
    let exe = std::env::current_exe().ok();
    let exe_dir = exe.as_deref().and_then(Path::parent);
    let found = Found {
        plugin: locate(
            PLUGIN_FILE,
            "PATHPROF_PLUGIN",
            std::env::var_os("PATHPROF_PLUGIN"),
            exe_dir,
            PLUGIN_DIRS,
            &any_file,
        ),
        runtime: locate(
            RUNTIME_FILE,
            "PATHPROF_RUNTIME",
            std::env::var_os("PATHPROF_RUNTIME"),
            exe_dir,
            RUNTIME_DIRS,
            &runtime_check::check_runtime,
        ),
    };
    match rewrite(&args, &found) {
        Err(e) => fail(&e),
        Ok(Plan::Print(paths)) => {
            for p in paths {
                println!("{}", p.display());
            }
            std::process::exit(0)
        }
        Ok(Plan::Compile { args, env }) => {
            let (prog, lead) = match launched {
                Some(compiler) => (compiler, vec![]),
                None => compiler_command(driver, std::env::var_os(driver.override_var())),
            };
            let err = std::process::Command::new(&prog).args(lead).args(args).envs(env).exec();
            fail(&format_args!("cannot run {}: {err}", Path::new(&prog).display()))
        }
    }
}

pub mod runtime_check;

#[cfg(test)]
mod tests;
