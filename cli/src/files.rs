//! Reading profiles from disk and replacing files atomically.

use anyhow::{Context, Result};
use pathprof_format::profile::{self, Profile};
use pathprof_format::trace::TraceFile;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Reads and fully validates a profile; errors name the file. A profile that does not exist while runs were
/// written apart next to it (every run so far) says so, naming them, rather than only "no such file".
pub fn read_profile(path: &Path) -> Result<Profile> {
    let bytes = match fs::read(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !written_apart(path).is_empty() => {
            let apart = written_apart_names(path);
            anyhow::bail!(
                "reading {}: no such file, but {} written apart next to it (every run so far: {}); read one, or \
                 add them with `pathprof merge`",
                path.display(),
                if apart.len() == 1 { "1 run was".to_string() } else { format!("{} runs were", apart.len()) },
                apart.join(", ")
            )
        }
        read => read.with_context(|| format!("reading {}", path.display()))?,
    };
    profile::read(&bytes).with_context(|| format!("reading {}", path.display()))
}

/// Reads a trace file, with what its fork children's threads inherited from their parents' files. A parent's
/// file is looked for where the runtime wrote it and, failing that, beside `path` under the same name (trace
/// files moved together to another directory). Also returns the warnings to give (one line each): processes
/// left out of the file, fork children that wrote no trace, a file that ends inside a record — for
/// [`with_warnings`], so that a command failing later still says everything on its one error line.
pub fn read_trace(path: &Path) -> Result<(TraceFile, Vec<String>)> {
    let what = || format!("reading {}", path.display());
    let bytes = fs::read(path).with_context(what)?;
    let beside = path.parent().unwrap_or(Path::new("."));
    let mut load = |recorded: &str| {
        let recorded = Path::new(recorded);
        fs::read(recorded).ok().or_else(|| fs::read(beside.join(recorded.file_name()?)).ok())
    };
    let file = TraceFile::parse_with_parents(&bytes, &mut load).with_context(what)?;
    let mut warnings = Vec::new();
    if !file.other_processes.is_empty() {
        let pids: Vec<String> = file.other_processes.iter().map(u32::to_string).collect();
        warnings.push(format!(
            "{}: left out the records of process {}, which wrote this file while process {} started it anew (its \
             trace was cut); give each process its own file with %p in PATHPROF_TRACE",
            path.display(),
            pids.join(", "),
            file.pid
        ));
    }
    if let Some(at) = file.cut_at {
        warnings.push(format!(
            "{}: the file ends inside a record at byte {at} (a write failed part-way, as on a full disk, or the \
             file was cut short): its threads are read up to there",
            path.display()
        ));
    }
    if let n @ 1.. = file.untraced_forks.len() {
        warnings.push(format!(
            "{}: {n} {} forked from process {} (or from its forked children) ran traced code but wrote no trace \
             (PATHPROF_TRACE has no %p): what {} after the fork is in no trace",
            path.display(),
            if n == 1 { "process" } else { "processes" },
            file.pid,
            if n == 1 { "it ran" } else { "they ran" },
        ));
    }
    Ok((file, warnings))
}

/// Gives `warnings` (one line each) once `result` succeeded; a failure carries them on its one error line.
pub fn with_warnings(result: Result<()>, warnings: Vec<String>) -> Result<()> {
    match result {
        Ok(()) => {
            for w in warnings {
                eprintln!("pathprof: warning: {w}");
            }
            Ok(())
        }
        Err(e) if warnings.is_empty() => Err(e),
        Err(e) => Err(e.context(warnings.join("; "))),
    }
}

/// The files the runtime wrote apart from `path` (`PATH.<pid>.incomplete`: a run whose signal handler did not
/// return, that ended while another thread was running, that found the file locked by a stopped process, or a
/// fatal-signal flush that found it locked),
/// sorted: runs `path` does not hold, which a reader names so that their absence is never silent.
pub fn written_apart(path: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return Vec::new();
    };
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let prefix = format!("{name}.");
    let mut apart: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            let file = e.file_name();
            let Some(rest) = file.to_str().and_then(|f| f.strip_prefix(&prefix)) else { return false };
            rest.strip_suffix(".incomplete")
                .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(|e| dir.join(e.file_name()))
        .collect();
    apart.sort();
    apart
}

/// The text readers print first about [`written_apart`]'s files (nothing when there are none).
pub fn write_apart_note(out: &mut impl Write, apart: &[String]) -> std::io::Result<()> {
    if apart.is_empty() {
        return Ok(());
    }
    let n = apart.len();
    writeln!(
        out,
        "NOTE: {n} file{} next to this profile hold{} runs it does not (a signal handler did not return, the \
         process ended while another thread was running, or the file was locked by a stopped process or at a fatal \
         signal); `pathprof merge` adds them, flagged inexact where they are:",
        if n == 1 { "" } else { "s" },
        if n == 1 { "s" } else { "" }
    )?;
    for f in apart {
        writeln!(out, "  {f}")?;
    }
    writeln!(out)
}

/// [`written_apart`]'s files as readers report them.
pub fn written_apart_names(path: &Path) -> Vec<String> {
    written_apart(path).iter().map(|p| p.display().to_string()).collect()
}

/// Replaces `path` with `bytes` so that readers see the old file or the new one, never a partial one: the bytes
/// go to a new temporary file in the same directory, are synced, and the file is renamed over `path`.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let what = || format!("writing {}", path.display());
    let name = path.file_name().with_context(|| format!("{} is not a file name", path.display())).with_context(what)?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let (tmp, mut file) = create_temp(&dir, name).with_context(what)?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all()).and_then(|()| {
        drop(file);
        fs::rename(&tmp, path)
    });
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e).with_context(what);
    }
    Ok(())
}

/// Creates `.NAME.PID.N.tmp` in `dir` with `create_new`, trying a few `N` in case of leftovers.
fn create_temp(dir: &Path, name: &std::ffi::OsStr) -> std::io::Result<(PathBuf, fs::File)> {
    let pid = std::process::id();
    let mut last = None;
    for n in 0..100 {
        let mut file_name = std::ffi::OsString::from(".");
        file_name.push(name);
        file_name.push(format!(".{pid}.{n}.tmp"));
        let tmp = dir.join(file_name);
        match fs::OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("cannot create a temporary file")))
}
