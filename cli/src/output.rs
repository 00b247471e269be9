//! What `show`, `decode` and `decode --hot-regions` do alike around their reports: choosing the functions
//! `--function` names, and printing the report as JSON or text.

use pathprof_format::meta::FunctionMeta;
use serde::Serialize;
use std::io::{self, BufWriter, StdoutLock, Write};

/// Whether `--function NAME` (`function`) selects `f`: by linkage or by source name; without it, every function.
pub fn selects(function: Option<&str>, f: &FunctionMeta) -> bool {
    match function {
        None => true,
        Some(n) => n == f.name || n == f.display_name,
    }
}

/// Prints `report` to stdout, as pretty JSON when `json`, else with `write_text`, and flushes: one place for
/// the JSON form every report shares.
pub fn print<R: Serialize>(
    report: &R,
    json: bool,
    write_text: impl FnOnce(&mut BufWriter<StdoutLock<'static>>, &R) -> io::Result<()>,
) -> anyhow::Result<()> {
    let mut out = BufWriter::new(io::stdout().lock());
    if json {
        serde_json::to_writer_pretty(&mut out, report).map_err(io::Error::from)?;
        writeln!(out)?;
    } else {
        write_text(&mut out, report)?;
    }
    out.flush()?;
    Ok(())
}
