//! Telling the runtime archive programs link from other files named `libpathprof_rt.a`.
//!
//! `scripts/build.sh` assembles `dist/lib/libpathprof_rt.a` so that its only global definitions are the
//! runtime's `__pathprof_*` entry points (`scripts/rt-archive.sh`). Cargo leaves other archives of that name
//! around: `target/release/libpathprof_rt.a` (the crate built hosted, with `std`, for its unit tests) and
//! `target/rt/libpathprof_rt.a` (freestanding, but bundling the compiler-builtins crate). Linked into a
//! program, their extra definitions (`fmod`, `__muldc3`, …) take the place of the C library's and the
//! toolchain's: configure scripts then conclude `fmod` needs no `-lm`, and the build fails later. The wrapper
//! links an archive only if its symbol index names `__pathprof_register_module` and nothing outside
//! `__pathprof_*`, the same guarantee `test-suite/tests/hygiene.rs` checks with `nm`.

use object::read::archive::ArchiveFile;
use object::read::ReadCache;
use std::path::Path;

/// The entry point every runtime defines: instrumented modules' constructors call it.
pub const REQUIRED_ENTRY: &str = pathprof_format::symbols::REGISTER_MODULE;
/// The prefix of every symbol the runtime defines for the program.
pub const ENTRY_PREFIX: &str = pathprof_format::symbols::PREFIX;

/// `Ok` if `path` is the runtime archive (see the module docs), else why not, as a phrase that completes
/// "<path> …" (one line).
pub fn check_runtime(path: &Path) -> Result<(), String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot be read ({e})"))?;
    let cache = ReadCache::new(file);
    let archive = ArchiveFile::parse(&cache).map_err(|_| "is not an archive".to_string())?;
    let symbols = match archive.symbols() {
        Ok(Some(symbols)) => symbols,
        Ok(None) => return Err("has no symbol index".into()),
        Err(_) => return Err("has an unreadable symbol index".into()),
    };
    let mut has_entry = false;
    for symbol in symbols {
        let name = symbol.map_err(|_| "has an unreadable symbol index".to_string())?.name();
        if !name.starts_with(ENTRY_PREFIX.as_bytes()) {
            let name = String::from_utf8_lossy(name);
            return Err(format!("is a cargo build of the crate, not the runtime (it defines `{name}`)"));
        }
        has_entry |= name == REQUIRED_ENTRY.as_bytes();
    }
    if has_entry {
        Ok(())
    } else {
        Err(format!("does not define {REQUIRED_ENTRY}"))
    }
}
