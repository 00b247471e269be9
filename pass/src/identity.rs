//! Module identity: the name and output (`ModuleMeta::module_name`, `ModuleMeta::output`) a module is known by
//! across builds. The runtime replaces the counts of a module with the same identity and other metadata (a
//! rebuild) and keeps every other module's; use mode finds a module's own record by it.
//!
//! - A translation unit (the pass at the compile): the source file as given to the compiler, in the file the
//!   command writes (`PATHPROF_OUTPUT`, which `pathprof-clang` sets from `-o`) or, when that is not known (a
//!   compile without `-o`, the plugin used without the wrapper), in the working directory.
//! - A program merged by LTO (the pass inside lld, where every merged module is called `ld-temp.o`): the file
//!   name of the executable or shared object being linked, in that file. The output is lld's own `-o` (from
//!   `/proc/self/cmdline`, response files expanded: exactly the file lld writes, however the link was
//!   driven), else `PATHPROF_OUTPUT`.
//!
//! Outputs are absolute, with the directory resolved to its physical path (symbolic links, `.` and `..` gone) and
//! the file name kept: the same for every rebuild of one output wherever the link or compile runs from (libtool's
//! `.libs/libfoo.so.0.0.0`, a relative `-o` in a sub-directory), and different for different outputs. The
//! image's run-time path (`dladdr`) would not do: an uninstalled library and its installed copy are one build.

use crate::config::Config;
use crate::ir;
use inkwell::llvm_sys::prelude::LLVMModuleRef;
use pathprof_format::meta::ModuleMeta;
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// A module's name and output, as recorded in its metadata, and for a translation unit its source file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleIdentity {
    /// `ModuleMeta::module_name`.
    pub name: String,
    /// `ModuleMeta::output`.
    pub output: String,
    /// A translation unit's source file as an absolute path (`name` in the directory the compiler ran in,
    /// `ModuleMeta::compilation_dirs[0]`, cleaned lexically): two sources of one file name in two directories
    /// (e2fsprogs' `misc/ismounted.c` and `lib/ext2fs/ismounted.c`) are two modules whatever their outputs.
    /// Empty for a whole output (LTO) and when the directory is not known (metadata before version 11).
    pub source: String,
}

impl ModuleIdentity {
    /// The identity a profile module was recorded with.
    pub fn of_meta(meta: &ModuleMeta) -> ModuleIdentity {
        let whole_output = meta.module_name == "ld-temp.o" || meta.output.rsplit('/').next() == Some(&meta.module_name);
        let source = match meta.compilation_dirs.first() {
            Some(dir) if !whole_output => source_path(Path::new(dir), &meta.module_name),
            _ => String::new(),
        };
        ModuleIdentity { name: meta.module_name.clone(), output: meta.output.clone(), source }
    }
}

/// Source file `name` as given to a compiler that ran in `cwd`, as an absolute path cleaned lexically (`.` gone,
/// `..` taking off the directory before it: the compiler's directory is a physical one).
fn source_path(cwd: &Path, name: &str) -> String {
    let mut clean = PathBuf::new();
    for c in cwd.join(name).components() {
        match c {
            std::path::Component::ParentDir => {
                clean.pop();
            }
            std::path::Component::CurDir => {}
            other => clean.push(other),
        }
    }
    clean.to_string_lossy().into_owned()
}

/// Deepest nesting of response files followed (lld's own limit is higher; real links use one level).
const MAX_RESPONSE_DEPTH: u32 = 8;

/// `ModuleMeta::compilation_dirs` of module `m`: the directory this compiler (or linker) process runs in, then
/// each other absolute directory the debug info of `m`'s functions names files relative to, in module order.
pub fn compilation_dirs(m: LLVMModuleRef) -> Vec<String> {
    let mut dirs: Vec<String> = std::env::current_dir().map(|d| d.to_string_lossy().into_owned()).into_iter().collect();
    for f in ir::functions(m) {
        let dir = ir::subprogram_directory(f);
        if dir.starts_with('/') && !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

/// The identity of module `source` (LLVM's source file name of the module) in this process: a translation unit,
/// or with `config.lto` the program lld is linking.
pub fn of_module(source: &str, config: &Config) -> ModuleIdentity {
    let cwd = std::env::current_dir().ok();
    let linked = if config.lto {
        let args = std::fs::read("/proc/self/cmdline").map(|b| split_nul(&b)).unwrap_or_default();
        linker_output(&args, cwd.as_deref(), 0)
    } else {
        None
    };
    identify(source, config.lto, linked.or_else(|| config.output.clone().map(OsString::from)), cwd.as_deref())
}

/// The identity of module `source` (a whole output when `whole_output`) written to `output` (as the command
/// gave it, relative to `cwd`), if known.
pub fn identify(source: &str, whole_output: bool, output: Option<OsString>, cwd: Option<&Path>) -> ModuleIdentity {
    let source_file = match cwd {
        Some(d) if !whole_output => source_path(d, source),
        _ => String::new(),
    };
    match output {
        Some(out) => {
            let abs = absolute(cwd, Path::new(&out));
            let name = match abs.file_name() {
                Some(f) if whole_output => f.to_string_lossy().into_owned(),
                _ => source.to_string(),
            };
            ModuleIdentity { name, output: abs.to_string_lossy().into_owned(), source: source_file }
        }
        None => {
            let output = cwd.map_or_else(String::new, |d| {
                let d = d.to_string_lossy();
                if d.ends_with('/') {
                    d.into_owned()
                } else {
                    format!("{d}/")
                }
            });
            ModuleIdentity { name: source.to_string(), output, source: source_file }
        }
    }
}

/// `p` (relative to `cwd`) as an absolute path: its directory canonicalised (it exists, the compile or link
/// writes into it), its file name kept; cleaned lexically (`.` and repeated `/` removed) when the directory
/// cannot be resolved.
pub fn absolute(cwd: Option<&Path>, p: &Path) -> PathBuf {
    let joined = match cwd {
        Some(c) if p.is_relative() => c.join(p),
        _ => p.to_path_buf(),
    };
    let physical = match (joined.parent(), joined.file_name()) {
        (Some(dir), Some(file)) if !dir.as_os_str().is_empty() => dir.canonicalize().ok().map(|d| d.join(file)),
        _ => None,
    };
    physical.unwrap_or_else(|| joined.components().collect())
}

/// The file a linker command line (`argv`, program name included) writes: its last `-o FILE`, `--output FILE`,
/// `--output=FILE` (or the single-dash spellings of the long option), looking into `@FILE` response files
/// (GNU quoting, relative to `cwd`).
pub fn linker_output(argv: &[OsString], cwd: Option<&Path>, depth: u32) -> Option<OsString> {
    let mut found = None;
    let mut it = argv.iter();
    while let Some(arg) = it.next() {
        let a = arg.as_bytes();
        if let Some(file) = a.strip_prefix(b"@") {
            if depth < MAX_RESPONSE_DEPTH {
                let path = absolute(cwd, Path::new(std::ffi::OsStr::from_bytes(file)));
                if let Ok(text) = std::fs::read(path) {
                    found = linker_output(&tokenize_gnu(&text), cwd, depth + 1).or(found);
                }
            }
            continue;
        }
        match a {
            b"-o" | b"--output" | b"-output" => found = it.next().cloned().or(found),
            _ => {
                if let Some(v) = a.strip_prefix(b"--output=").or_else(|| a.strip_prefix(b"-output=")) {
                    found = Some(OsString::from_vec(v.to_vec()));
                }
            }
        }
    }
    found.filter(|f| !f.is_empty())
}

/// Splits a response file the way lld does on Linux (LLVM's GNU tokenizer): blanks separate arguments, a
/// backslash takes the next character literally, and single or double quotes group (a backslash escapes inside
/// them too).
pub fn tokenize_gnu(text: &[u8]) -> Vec<OsString> {
    let mut out = Vec::new();
    let mut cur: Option<Vec<u8>> = None;
    let mut i = 0;
    while let Some(&c) = text.get(i) {
        i += 1;
        match c {
            b' ' | b'\t' | b'\r' | b'\n' => {
                if let Some(t) = cur.take() {
                    out.push(OsString::from_vec(t));
                }
            }
            b'\\' => {
                if let Some(&n) = text.get(i) {
                    cur.get_or_insert_with(Vec::new).push(n);
                    i += 1;
                }
            }
            b'\'' | b'"' => {
                let t = cur.get_or_insert_with(Vec::new);
                while let Some(&q) = text.get(i) {
                    i += 1;
                    if q == c {
                        break;
                    }
                    if q == b'\\' {
                        if let Some(&n) = text.get(i) {
                            t.push(n);
                            i += 1;
                        }
                        continue;
                    }
                    t.push(q);
                }
            }
            _ => cur.get_or_insert_with(Vec::new).push(c),
        }
    }
    if let Some(t) = cur {
        out.push(OsString::from_vec(t));
    }
    out
}

fn split_nul(b: &[u8]) -> Vec<OsString> {
    b.split(|&c| c == 0).filter(|a| !a.is_empty()).map(|a| OsString::from_vec(a.to_vec())).collect()
}

/// How alike two outputs are: the number of equal trailing components of their directories, then whether their
/// file names are equal (an output ending in `/` is a directory with no file name). A profile taken in one build
/// tree and used in another shares the trailing directories of an output, not its root.
pub fn closeness(a: &str, b: &str) -> (usize, bool) {
    fn split(s: &str) -> (Vec<&str>, &str) {
        let (dir, file) = s.rsplit_once('/').unwrap_or(("", s));
        (dir.split('/').filter(|c| !c.is_empty()).collect(), file)
    }
    let ((da, fa), (db, fb)) = (split(a), split(b));
    let common = da.iter().rev().zip(db.iter().rev()).take_while(|(x, y)| x == y).count();
    (common, !fa.is_empty() && fa == fb)
}

/// Which of a profile's `modules` is `me`'s own: among those of `me`'s name, the one whose output is nearest
/// ([`closeness`]) if no other is as near. A whole output (LTO) that no module is named after takes the
/// profile's only module when it has one (an executable linked under another name). A translation unit never
/// takes another's, nor one of another source file ([`same_source`]), nor one written to another file of its own
/// directory: that is another compile of the same source in this build (e2fsprogs compiles `ismounted.c` into
/// the library's `ismounted.o` and again, with `-DDEBUG`, into the test program `tst_ismounted`), whose counts are
/// not this compile's ([`weak_module`] may take it).
pub fn own_module(me: &ModuleIdentity, whole_output: bool, modules: &[ModuleIdentity]) -> Option<usize> {
    let root = source_root(modules);
    let mine = |other: &ModuleIdentity| {
        other.name == me.name && (whole_output || (!sibling(me, other) && same_source(me, other, &root)))
    };
    let named: Vec<usize> = (0..modules.len()).filter(|&i| mine(&modules[i])).collect();
    if named.is_empty() {
        return (whole_output && modules.len() == 1).then_some(0);
    }
    nearest(me, modules, named)
}

/// A translation unit's second-best record, when it has none of its own: a record of the same source file
/// (known for both; equal, or at the same place in a copy of the profile's tree) that [`own_module`] does not
/// take — another output of `me`'s directory (an instrumented `app-prof` beside `app`), or a compile that named
/// the file otherwise (CMake's absolute paths in another tree; e2fsprogs compiles `misc/e2freefrag.c` as
/// `e2freefrag.c` into the program and as `../misc/e2freefrag.c`, with `-DDEBUGFS`, into debugfs). Such a record
/// may come from other flags: its functions of the same CFG are worth taking, a difference says nothing stale.
/// The nearest output, if no other is as near.
pub fn weak_module(me: &ModuleIdentity, modules: &[ModuleIdentity]) -> Option<usize> {
    if me.source.is_empty() {
        return None;
    }
    let root = source_root(modules);
    let candidates: Vec<usize> = (0..modules.len())
        .filter(|&i| {
            let other = &modules[i];
            !other.source.is_empty() && same_source(me, other, &root) && (other.name != me.name || sibling(me, other))
        })
        .collect();
    nearest(me, modules, candidates)
}

/// Whether `other` was written to another file of `me`'s output's directory (both with a file name).
fn sibling(me: &ModuleIdentity, other: &ModuleIdentity) -> bool {
    match (me.output.rsplit_once('/'), other.output.rsplit_once('/')) {
        (Some((my_dir, my_file)), Some((dir, file))) => {
            my_dir == dir && !my_file.is_empty() && !file.is_empty() && my_file != file
        }
        _ => false,
    }
}

/// Of the `candidates`, the one whose output is nearest `me`'s ([`closeness`]), if no other is as near.
fn nearest(me: &ModuleIdentity, modules: &[ModuleIdentity], candidates: Vec<usize>) -> Option<usize> {
    let score = |i: usize| closeness(&me.output, &modules[i].output);
    let best = candidates.iter().map(|&i| score(i)).max()?;
    let mut at_best = candidates.into_iter().filter(|&i| score(i) == best);
    match (at_best.next(), at_best.next()) {
        (Some(i), None) => Some(i),
        _ => None,
    }
}

/// The deepest directory every known source file of a profile's `modules` is in, ending in `/`: the tree the
/// profile was taken in (`/` for a profile of several trees).
fn source_root(modules: &[ModuleIdentity]) -> String {
    let mut root: Option<Vec<&str>> = None;
    for m in modules.iter().filter(|m| !m.source.is_empty()) {
        let dir = m.source.rsplit_once('/').map_or("", |(d, _)| d);
        let dir: Vec<&str> = dir.split('/').filter(|c| !c.is_empty()).collect();
        root = Some(match root {
            None => dir,
            Some(r) => r.iter().zip(&dir).take_while(|(a, b)| a == b).map(|(a, _)| *a).collect(),
        });
    }
    root.map_or_else(|| "/".to_string(), |r| r.iter().map(|c| format!("/{c}")).collect::<String>() + "/")
}

/// Whether profile module `other` was compiled from `me`'s source file: the same file; or, when `me` is outside
/// the tree the profile was taken in (`root`, a PGO build of a copy of the tree), the file at the same place
/// under `root`. A source file in the profile's own tree that is not `me`'s is another file of the same name.
/// Unknown sources (a profile before version 11) match.
fn same_source(me: &ModuleIdentity, other: &ModuleIdentity, root: &str) -> bool {
    if me.source.is_empty() || other.source.is_empty() || me.source == other.source {
        return true;
    }
    if me.source.starts_with(root) {
        return false;
    }
    other.source.strip_prefix(root).is_some_and(|rel| me.source.ends_with(&format!("/{rel}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    fn id(name: &str, output: &str) -> ModuleIdentity {
        ModuleIdentity { name: name.into(), output: output.into(), source: String::new() }
    }

    /// A translation unit compiled from `source`.
    fn tu(name: &str, output: &str, source: &str) -> ModuleIdentity {
        ModuleIdentity { source: source.into(), ..id(name, output) }
    }

    /// A scratch directory with `sub` and a symbolic link `link` -> `sub`.
    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("pathprof-identity-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("sub/.libs")).unwrap();
        std::os::unix::fs::symlink(d.join("sub"), d.join("link")).unwrap();
        d.canonicalize().unwrap()
    }

    #[test]
    fn lto_modules_are_named_after_their_output_wherever_the_link_runs() {
        let d = scratch("lto");
        let want = id("libfoo.so.0.0.0", &format!("{}/sub/.libs/libfoo.so.0.0.0", d.display()));
        // libtool's relative output from the library's directory, the same from the top, through `..`, `.` and a
        // symbolic link, and as an absolute path: one identity.
        for (cwd, out) in [
            (d.join("sub"), ".libs/libfoo.so.0.0.0"),
            (d.clone(), "sub/.libs/libfoo.so.0.0.0"),
            (d.join("sub/.libs"), "../.libs/./libfoo.so.0.0.0"),
            (d.join("link"), ".libs//libfoo.so.0.0.0"),
            (PathBuf::from("/"), &format!("{}/sub/.libs/libfoo.so.0.0.0", d.display())),
        ] {
            assert_eq!(identify("ld-temp.o", true, Some(out.into()), Some(&cwd)), want, "{} {out}", cwd.display());
        }
        // Another output of the same file name in another directory is another module.
        let other = identify("ld-temp.o", true, Some("libfoo.so.0.0.0".into()), Some(&d));
        assert_eq!(other, id("libfoo.so.0.0.0", &format!("{}/libfoo.so.0.0.0", d.display())));
        // A directory that does not exist (yet) is cleaned lexically.
        assert_eq!(absolute(Some(Path::new("/no/such")), Path::new("./x//y/../z")), PathBuf::from("/no/such/x/y/../z"));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn translation_units_keep_their_source_name_in_their_output_or_directory() {
        let d = scratch("tu");
        // The same source compiled twice (say with different -D) into two objects: two modules.
        let a = identify("util.c", false, Some("sub/a.o".into()), Some(&d));
        let b = identify("util.c", false, Some("sub/.libs/a.o".into()), Some(&d));
        assert_eq!(a, tu("util.c", &format!("{}/sub/a.o", d.display()), &format!("{}/util.c", d.display())));
        assert_ne!(a.output, b.output);
        // No output known: `util.c` compiled in two directories (a recursive make) stays two modules.
        let here = identify("util.c", false, None, Some(&d.join("sub")));
        assert_eq!(here, tu("util.c", &format!("{}/sub/", d.display()), &format!("{}/sub/util.c", d.display())));
        // The source as given, relative to the compiler's directory.
        let up = identify("./../sub/./x.c", false, Some("o/x.o".into()), Some(&d.join("sub")));
        assert_eq!(up.source, format!("{}/sub/x.c", d.display()));
        assert_ne!(here, identify("util.c", false, None, Some(&d)));
        // Nothing known at all: the name alone (the identity of profiles before outputs were recorded).
        assert_eq!(identify("ld-temp.o", true, None, None), id("ld-temp.o", ""));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_linker_output_is_the_last_o_option_including_response_files() {
        let argv = os(&["ld.lld", "-pie", "-o", "first", "a.o", "-soname", "libx.so", "--output=second"]);
        assert_eq!(linker_output(&argv, None, 0), Some("second".into()));
        assert_eq!(linker_output(&os(&["ld.lld", "-output", "x", "--output", "y"]), None, 0), Some("y".into()));
        assert_eq!(linker_output(&os(&["ld.lld", "-o"]), None, 0), None);
        // `-omagic` is an option of its own, not `-o magic`.
        assert_eq!(linker_output(&os(&["ld.lld", "-omagic", "a.o"]), None, 0), None);
        let d = scratch("rsp");
        std::fs::write(d.join("inner.rsp"), "-o 'lib with space.so'").unwrap();
        std::fs::write(d.join("outer.rsp"), "a.o \"b.o\" @inner.rsp\n-lc").unwrap();
        let argv = os(&["ld.lld", "-o", "early", "@outer.rsp", "@missing.rsp"]);
        assert_eq!(linker_output(&argv, Some(&d), 0), Some("lib with space.so".into()));
        // A response file that includes itself ends at the depth limit.
        std::fs::write(d.join("loop.rsp"), "-o looped @loop.rsp").unwrap();
        assert_eq!(linker_output(&os(&["ld.lld", "@loop.rsp"]), Some(&d), 0), Some("looped".into()));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn response_files_split_like_gnu_tools() {
        let got = tokenize_gnu(b"  a\\ b 'c d' \"e\\\"f\" g'h'i \\\n j\t\r\nk ''");
        assert_eq!(got, os(&["a b", "c d", "e\"f", "ghi", "\n", "j", "k", ""]));
        assert_eq!(split_nul(b"ld.lld\0-o\0x\0"), os(&["ld.lld", "-o", "x"]));
    }

    #[test]
    fn closeness_counts_shared_trailing_directories_then_the_file_name() {
        assert_eq!(closeness("/b1/src/a/libfoo.so", "/b2/src/a/libfoo.so"), (2, true));
        assert_eq!(closeness("/b1/src/a/libfoo.so", "/b2/src/b/libfoo.so"), (0, true));
        assert_eq!(closeness("/b/x/util.o", "/b/x/"), (2, false));
        assert_eq!(closeness("", "/b/x/"), (0, false));
    }

    #[test]
    fn own_module_is_the_nearest_of_the_same_name_and_never_a_tie() {
        let profile = [
            id("libfoo.so", "/b1/src/a/libfoo.so"),
            id("libfoo.so", "/b1/src/b/libfoo.so"),
            id("prog", "/b1/prog"),
            id("util.c", "/b1/x/util.o"),
            id("util.c", "/b1/y/util.o"),
        ];
        // The same build tree, then another tree with the same layout.
        assert_eq!(own_module(&id("libfoo.so", "/b1/src/b/libfoo.so"), true, &profile), Some(1));
        assert_eq!(own_module(&id("libfoo.so", "/b2/src/a/libfoo.so"), true, &profile), Some(0));
        assert_eq!(own_module(&id("prog", "/elsewhere/prog"), true, &profile), Some(2));
        assert_eq!(own_module(&id("util.c", "/b2/y/util.ll"), false, &profile), Some(4));
        // Equally near: ambiguous, no module.
        assert_eq!(own_module(&id("libfoo.so", "/b2/libfoo.so"), true, &profile), None);
        assert_eq!(own_module(&id("util.c", "/b1/"), false, &profile), None);
        // Not named in the profile: an LTO program takes a one-module profile, a translation unit never does.
        let one = [id("prog-instrumented", "/b1/prog-instrumented")];
        assert_eq!(own_module(&id("prog", "/b2/prog"), true, &one), Some(0));
        assert_eq!(own_module(&id("other.c", "/b2/other.o"), false, &[id("util.c", "/b1/util.o")]), None);
        assert_eq!(own_module(&id("renamed", "/b2/renamed"), true, &profile), None);
        // Another output of the same directory is another compile of the source, not this one's record; in
        // another directory it is the nearest there is (a profile from another tree, an `-S -emit-llvm` look).
        let lib = [id("ismounted.c", "/b1/lib/ismounted.o")];
        assert_eq!(own_module(&id("ismounted.c", "/b1/lib/tst_ismounted"), false, &lib), None);
        assert_eq!(own_module(&id("ismounted.c", "/b1/lib/ismounted.o"), false, &lib), Some(0));
        assert_eq!(own_module(&id("ismounted.c", "/b2/lib/ismounted.ll"), false, &lib), Some(0));
        assert_eq!(own_module(&id("ismounted.c", "/b1/lib/"), false, &lib), Some(0));
    }

    #[test]
    fn a_translation_unit_takes_only_the_record_of_its_own_source_file() {
        // e2fsprogs: two sources named ismounted.c in one tree; only the library's ran.
        let b1 = [
            tu("ismounted.c", "/b1/lib/ext2fs/ismounted.o", "/b1/lib/ext2fs/ismounted.c"),
            tu("closefs.c", "/b1/lib/ext2fs/closefs.o", "/b1/lib/ext2fs/closefs.c"),
            tu("fsck.c", "/b1/misc/fsck.o", "/b1/misc/fsck.c"),
        ];
        assert_eq!(source_root(&b1), "/b1/");
        let misc = tu("ismounted.c", "/b1/misc/ismounted.o", "/b1/misc/ismounted.c");
        assert_eq!(own_module(&misc, false, &b1), None);
        let lib = tu("ismounted.c", "/b1/lib/ext2fs/ismounted.o", "/b1/lib/ext2fs/ismounted.c");
        assert_eq!(own_module(&lib, false, &b1), Some(0));
        // The same source built into another build directory (an out-of-tree PGO build): its own record.
        let out_of_tree = tu("ismounted.c", "/opt/lib/ext2fs/ismounted.o", "/b1/lib/ext2fs/ismounted.c");
        assert_eq!(own_module(&out_of_tree, false, &b1), Some(0));
        // A copy of the tree elsewhere, however its root is named: the file at the same place, not the other.
        for root in ["/b2", "/home/u/e2fsprogs-copy"] {
            let lib =
                tu("ismounted.c", &format!("{root}/lib/ext2fs/ismounted.o"), &format!("{root}/lib/ext2fs/ismounted.c"));
            let misc = tu("ismounted.c", &format!("{root}/misc/ismounted.o"), &format!("{root}/misc/ismounted.c"));
            assert_eq!(own_module(&lib, false, &b1), Some(0), "{root}");
            assert_eq!(own_module(&misc, false, &b1), None, "{root}");
        }
        // A flat project copied to a renamed directory.
        let flat = [tu("main.c", "/w/proj1/main.o", "/w/proj1/main.c")];
        assert_eq!(source_root(&flat), "/w/proj1/");
        assert_eq!(own_module(&tu("main.c", "/w/proj2/main.o", "/w/proj2/main.c"), false, &flat), Some(0));
        // A profile of two trees has no common root but `/`: only the very file matches.
        let two = [tu("a.c", "/x/a.o", "/x/a.c"), tu("a.c", "/y/a.o", "/y/a.c")];
        assert_eq!(source_root(&two), "/");
        assert_eq!(own_module(&tu("a.c", "/z/a.o", "/z/a.c"), false, &two), None);
        assert_eq!(own_module(&tu("a.c", "/z/a.o", "/y/a.c"), false, &two), Some(1));
        // CMake names each source by its absolute path: another tree's copy has another name, the same file.
        let cmake = [
            tu("/w/a/src/x.c", "/w/a/_build/CMakeFiles/l.dir/src/x.c.o", "/w/a/src/x.c"),
            tu("/w/a/src/y.c", "/w/a/_build/CMakeFiles/l.dir/src/y.c.o", "/w/a/src/y.c"),
        ];
        let copy = tu("/w/b/src/x.c", "/w/b/_build/CMakeFiles/l.dir/src/x.c.o", "/w/b/src/x.c");
        assert_eq!((own_module(&copy, false, &cmake), weak_module(&copy, &cmake)), (None, Some(0)));
        // One file named two ways (`cd src && cc -c x.c` and `cc -c src/x.c`): one source, maybe other flags.
        let here = tu("src/x.c", "/w/a/_build/CMakeFiles/l.dir/src/x.c.o", "/w/a/src/x.c");
        assert_eq!((own_module(&here, false, &cmake), weak_module(&here, &cmake)), (None, Some(0)));
        assert_eq!(weak_module(&tu("/w/a/src/z.c", "/w/a/z.o", "/w/a/src/z.c"), &cmake), None);
        // Sources not known (a profile before metadata version 11, or this compile's): names and outputs decide.
        let old = [id("ismounted.c", "/b1/lib/ext2fs/ismounted.o")];
        assert_eq!(own_module(&misc, false, &old), Some(0));
        assert_eq!(own_module(&id("ismounted.c", "/b1/misc/ismounted.o"), false, &b1), Some(0));
        // Another compile of the same source into the same directory is no record of mine, but a weak one.
        let tst = tu("ismounted.c", "/b1/lib/ext2fs/tst_ismounted", "/b1/lib/ext2fs/ismounted.c");
        assert_eq!(own_module(&tst, false, &b1), None);
        assert_eq!(weak_module(&tst, &b1), Some(0));
        assert_eq!(weak_module(&lib, &b1), None, "its own record is no weak one");
        assert_eq!(weak_module(&tu("ismounted.c", "/b1/misc/tst", "/b1/misc/ismounted.c"), &b1), None);
        assert_eq!(weak_module(&id("ismounted.c", "/b1/lib/ext2fs/tst_ismounted"), &b1), None, "source unknown");
        let two = [b1[0].clone(), tu("ismounted.c", "/b1/lib/ext2fs/other", "/b1/lib/ext2fs/ismounted.c")];
        assert_eq!(weak_module(&tst, &two), None, "two siblings as near: neither");
        // A whole output is matched by its output, whatever sources its profile's modules had.
        assert_eq!(own_module(&id("prog", "/b2/prog"), true, &[id("prog", "/b1/prog")]), Some(0));
    }

    #[test]
    fn profile_modules_know_their_source_unless_they_are_a_whole_output() {
        let meta = |name: &str, output: &str, dirs: &[&str]| ModuleMeta {
            module_name: name.into(),
            output: output.into(),
            mode: pathprof_format::meta::Mode::Edge,
            weighting: "uniform".into(),
            atomic: false,
            functions: Vec::new(),
            interproc: None,
            path_arrivals: true,
            fork_reentries: true,
            left_out: Vec::new(),
            path_loop_resets: pathprof_core::ball_larus::ResetRule::None,
            compilation_dirs: dirs.iter().map(|d| d.to_string()).collect(),
        };
        assert_eq!(
            ModuleIdentity::of_meta(&meta("../lib/x.c", "/b/misc/x.o", &["/b/misc", "/e"])).source,
            "/b/lib/x.c"
        );
        assert_eq!(ModuleIdentity::of_meta(&meta("../lib/x.c", "/b/misc/x.o", &[])).source, "");
        assert_eq!(ModuleIdentity::of_meta(&meta("prog", "/b/prog", &["/b"])), id("prog", "/b/prog"));
        assert_eq!(ModuleIdentity::of_meta(&meta("ld-temp.o", "", &["/b"])), id("ld-temp.o", ""));
    }
}
