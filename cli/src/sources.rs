//! Finding the source files the profile names, for every command that reads or names them (`report --html`,
//! `coverage --lcov`): the file recorded in a function's debug info (`FunctionMeta::file`, as the compiler saw
//! it: relative to the compilation directory unless it was given as an absolute path; see [`candidates`]), with
//! `--source-root` applied: `OLD=NEW` replaces a prefix, a bare `DIR` is where relative names are relative to;
//! the first that matches, in the order given.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Per module, the directories its functions' recorded names are relative to, as each name and the module's
/// absolute name reveal them (`/src/proj/lib/x.c` and a function's `lib/x.c`: `/src/proj`). A file outside the
/// compilation directory is recorded relative to such a directory too, not to the compilation directory: from
/// `/src/proj/build`, clang records `/src/proj/lib/x.c` as `lib/x.c` and the header `/src/proj/lib/h.h` it
/// includes as `lib/h.h`, whose own name no module ends with (libarchive's headers were not found).
#[derive(Default)]
pub struct ModuleDirs(BTreeMap<String, Vec<PathBuf>>);

impl ModuleDirs {
    /// From every (module name, recorded file name) pair of the profile's functions.
    pub fn new<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> ModuleDirs {
        let mut dirs: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
        for (module, file) in pairs {
            let file = Path::new(file);
            if file.as_os_str().is_empty() || !file.is_relative() {
                continue;
            }
            if let Some(dir) = compilation_dir(Path::new(module), file) {
                let known = dirs.entry(module.to_string()).or_default();
                if !known.contains(&dir) {
                    known.push(dir);
                }
            }
        }
        ModuleDirs(dirs)
    }

    /// Adds the directories each module's names are relative to (`ModuleMeta::compilation_dirs`, in their order),
    /// looked in before the directories the names reveal: a project compiled with relative names in each of its
    /// directories (`cc -c adler32.c`) names no directory at all.
    pub fn with_compilation_dirs<'a>(mut self, dirs: impl IntoIterator<Item = (&'a str, &'a str)>) -> ModuleDirs {
        let mut recorded: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
        for (module, dir) in dirs.into_iter().filter(|(_, dir)| !dir.is_empty()) {
            let list = recorded.entry(module.to_string()).or_default();
            if !list.iter().any(|d| d.as_os_str() == dir) {
                list.push(PathBuf::from(dir));
            }
        }
        for (module, mut list) in recorded {
            let known = self.0.entry(module).or_default();
            known.retain(|d| !list.contains(d));
            list.append(known);
            *known = list;
        }
        self
    }

    fn of(&self, module: &str) -> &[PathBuf] {
        self.0.get(module).map_or(&[], Vec::as_slice)
    }
}

/// `--source-root OLD=NEW`: sources recorded under `OLD` are read from `NEW`; `--source-root DIR`: relative names
/// are relative to `DIR` (an empty `OLD`, which is a prefix of every relative path and which joining leaves
/// absolute paths alone).
#[derive(Clone, Debug)]
pub struct SourceRoot {
    old: PathBuf,
    new: PathBuf,
}

/// Parses `OLD=NEW` (the first `=` splits; both sides non-empty) or a bare, non-empty `DIR`.
pub fn parse_source_root(s: &str) -> Result<SourceRoot, String> {
    match s.split_once('=') {
        Some((old, new)) if !old.is_empty() && !new.is_empty() => {
            Ok(SourceRoot { old: PathBuf::from(old), new: PathBuf::from(new) })
        }
        None if !s.is_empty() => Ok(SourceRoot { old: PathBuf::new(), new: PathBuf::from(s) }),
        _ => Err(format!("'{s}' is neither OLD=NEW nor a directory")),
    }
}

/// The first of `recorded`'s [`candidates`] that is a file, else the first candidate: the name to give tools
/// that read the source themselves (genhtml).
pub fn locate<'m>(
    recorded: &str,
    modules: impl IntoIterator<Item = &'m str>,
    dirs: &ModuleDirs,
    roots: &[SourceRoot],
) -> PathBuf {
    let places = candidates(recorded, modules, dirs, roots);
    places.iter().find(|p| p.is_file()).unwrap_or(&places[0]).clone()
}

/// `path` with the first root whose `OLD` is a path prefix of it (whole components) replaced by its `NEW`.
fn map(path: &Path, roots: &[SourceRoot]) -> PathBuf {
    for r in roots {
        if let Ok(rest) = path.strip_prefix(&r.old) {
            return r.new.join(rest);
        }
    }
    path.to_path_buf()
}

/// The places to look for `recorded`, best first, each mapped by `roots`. Debug info records a file relative to
/// the compilation directory, which the profile does not keep; a module named by its absolute source path that
/// ends with `recorded` reveals it (`/src/proj/lib/x.c` and `lib/x.c`: `/src/proj`), so a relative name is
/// first looked for under the compilation directories of `modules` (the names of the modules its functions
/// are in) and the directories their other functions' names reveal ([`ModuleDirs`]), then where it was recorded
/// (relative to the current directory).
pub fn candidates<'m>(
    recorded: &str,
    modules: impl IntoIterator<Item = &'m str>,
    dirs: &ModuleDirs,
    roots: &[SourceRoot],
) -> Vec<PathBuf> {
    if recorded.is_empty() {
        return vec![PathBuf::new()];
    }
    let path = Path::new(recorded);
    let mut out: Vec<PathBuf> = Vec::new();
    if path.is_relative() {
        for m in modules {
            for dir in compilation_dir(Path::new(m), path).iter().chain(dirs.of(m)) {
                let c = map(&joined(dir, path), roots);
                if !out.contains(&c) {
                    out.push(c);
                }
            }
        }
    }
    let c = map(path, roots);
    if !out.contains(&c) {
        out.push(c);
    }
    out
}

/// `relative` under `dir`, without its `.` components: clang records an included `h.h` as `./h.h`, and lcov
/// names one file one way.
fn joined(dir: &Path, relative: &Path) -> PathBuf {
    let mut out = dir.to_path_buf();
    out.extend(relative.components().filter(|c| *c != std::path::Component::CurDir));
    out
}

/// `module` without its trailing components `relative`, when `module` is absolute and ends with them.
fn compilation_dir(module: &Path, relative: &Path) -> Option<PathBuf> {
    if !module.is_absolute() || !module.ends_with(relative) {
        return None;
    }
    let mut dir = module.to_path_buf();
    for _ in relative.components() {
        dir.pop();
    }
    Some(dir)
}

/// The lines of a source file (lossily decoded, without line terminators), or `None` if it cannot be read.
pub fn read_lines(path: &Path) -> Option<Vec<String>> {
    let bytes = std::fs::read(path).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    Some(text.lines().map(str::to_string).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_replace_whole_leading_components_first_match_wins() {
        let roots = [parse_source_root("/build/src=/home/me/src").unwrap(), parse_source_root("/build=/b").unwrap()];
        let locate = |p: &str| map(Path::new(p), &roots);
        assert_eq!(locate("/build/src/a/x.c"), PathBuf::from("/home/me/src/a/x.c"));
        assert_eq!(locate("/build/srcx/y.c"), PathBuf::from("/b/srcx/y.c"));
        assert_eq!(locate("/other/z.c"), PathBuf::from("/other/z.c"));
        assert_eq!(locate("rel/z.c"), PathBuf::from("rel/z.c"));
    }

    #[test]
    fn relative_names_are_looked_for_under_the_compilation_directory_first() {
        let roots = [parse_source_root("/build=/home/me").unwrap()];
        let none = ModuleDirs::default();
        let found = candidates("lib/x.c", ["/build/proj/lib/x.c", "/build/proj/main.c", "lib/x.c"], &none, &roots);
        assert_eq!(found, [PathBuf::from("/home/me/proj/lib/x.c"), PathBuf::from("lib/x.c")]);
        assert_eq!(candidates("/abs/x.c", ["/abs/x.c"], &none, &[]), [PathBuf::from("/abs/x.c")]);
        assert_eq!(candidates("x.c", ["/a/y.c"], &none, &[]), [PathBuf::from("x.c")]);
    }

    /// libarchive's layout: `/src/proj/lib/a.c` compiled from `/src/proj/build`, including `/src/proj/lib/h.h`;
    /// clang records `lib/a.c` and `lib/h.h`, relative to `/src/proj`, which only `a.c`'s name reveals.
    #[test]
    fn a_header_is_looked_for_where_its_modules_other_names_are_relative_to() {
        let dirs = ModuleDirs::new([("/src/proj/lib/a.c", "lib/a.c"), ("/src/proj/lib/a.c", "lib/h.h")]);
        let found = candidates("lib/h.h", ["/src/proj/lib/a.c"], &dirs, &[]);
        assert_eq!(found, [PathBuf::from("/src/proj/lib/h.h"), PathBuf::from("lib/h.h")]);
        let none = ModuleDirs::default();
        assert_eq!(candidates("lib/h.h", ["/src/proj/lib/a.c"], &none, &[]), [PathBuf::from("lib/h.h")]);
    }

    /// zlib's make build: `cc -c adler32.c` in `/src/zlib`, so the module is `adler32.c` and names no directory;
    /// the recorded compilation directory is looked in first, then the names' own directories, and `--source-root`
    /// maps it like any other place.
    #[test]
    fn a_module_compiled_with_a_relative_name_is_found_in_its_compilation_directory() {
        let none = ModuleDirs::default();
        assert_eq!(candidates("adler32.c", ["adler32.c"], &none, &[]), [PathBuf::from("adler32.c")]);
        let dirs = ModuleDirs::new([("adler32.c", "adler32.c"), ("adler32.c", "zutil.h")])
            .with_compilation_dirs([("adler32.c", "/src/zlib"), ("other.c", "")]);
        assert_eq!(
            candidates("zutil.h", ["adler32.c"], &dirs, &[]),
            [PathBuf::from("/src/zlib/zutil.h"), PathBuf::from("zutil.h")]
        );
        assert_eq!(candidates("./zutil.h", ["adler32.c"], &dirs, &[])[0], PathBuf::from("/src/zlib/zutil.h"));
        let roots = [parse_source_root("/src=/home/me").unwrap()];
        assert_eq!(
            candidates("adler32.c", ["adler32.c"], &dirs, &roots),
            [PathBuf::from("/home/me/zlib/adler32.c"), PathBuf::from("adler32.c")]
        );
        assert_eq!(candidates("x.c", ["other.c"], &dirs, &[]), [PathBuf::from("x.c")]);
        // A program merged by LTO: the link's directory, then each translation unit's, in their order.
        let lto =
            ModuleDirs::default().with_compilation_dirs([("prog", "/build"), ("prog", "/src/a"), ("prog", "/src/b")]);
        assert_eq!(
            candidates("b.c", ["prog"], &lto, &[]),
            ["/build/b.c", "/src/a/b.c", "/src/b/b.c", "b.c"].map(PathBuf::from)
        );
    }

    #[test]
    fn source_roots_need_both_sides_or_are_a_directory() {
        assert!(parse_source_root("a=b=c").is_ok());
        let dir = [parse_source_root("/src/proj").unwrap()];
        assert_eq!(map(Path::new("lib/x.c"), &dir), PathBuf::from("/src/proj/lib/x.c"));
        assert_eq!(map(Path::new("/abs/x.c"), &dir), PathBuf::from("/abs/x.c"));
        for bad in ["", "=b", "a=", "="] {
            assert!(parse_source_root(bad).is_err(), "{bad}");
        }
    }
}
