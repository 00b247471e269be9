//! Finding the source files the profile names: the file recorded in a function's debug info (`FunctionMeta::file`,
//! as the compiler saw it; a relative name is taken relative to the current directory), with `--source-root
//! OLD=NEW` prefixes replaced, the first that matches in the order given.

use std::path::{Path, PathBuf};

/// `--source-root OLD=NEW`: sources recorded under `OLD` are read from `NEW`.
#[derive(Clone, Debug)]
pub struct SourceRoot {
    old: PathBuf,
    new: PathBuf,
}

/// Parses `OLD=NEW` (the first `=` splits; both sides non-empty).
pub fn parse_source_root(s: &str) -> Result<SourceRoot, String> {
    match s.split_once('=') {
        Some((old, new)) if !old.is_empty() && !new.is_empty() => {
            Ok(SourceRoot { old: PathBuf::from(old), new: PathBuf::from(new) })
        }
        _ => Err(format!("'{s}' is not OLD=NEW")),
    }
}

/// Where to read the source recorded as `recorded`: the first root whose `OLD` is a path prefix of it (whole
/// components) maps it, otherwise it is read where it was recorded.
pub fn locate(recorded: &str, roots: &[SourceRoot]) -> PathBuf {
    let path = Path::new(recorded);
    for r in roots {
        if let Ok(rest) = path.strip_prefix(&r.old) {
            return r.new.join(rest);
        }
    }
    path.to_path_buf()
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
        assert_eq!(locate("/build/src/a/x.c", &roots), PathBuf::from("/home/me/src/a/x.c"));
        assert_eq!(locate("/build/srcx/y.c", &roots), PathBuf::from("/b/srcx/y.c"));
        assert_eq!(locate("/other/z.c", &roots), PathBuf::from("/other/z.c"));
        assert_eq!(locate("rel/z.c", &roots), PathBuf::from("rel/z.c"));
    }

    #[test]
    fn source_roots_need_both_sides() {
        assert!(parse_source_root("a=b=c").is_ok());
        for bad in ["ab", "=b", "a=", "="] {
            assert!(parse_source_root(bad).is_err(), "{bad}");
        }
    }
}
