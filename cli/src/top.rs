//! `pathprof top FILE [--limit N] [--json] [--functions]`: the hottest paths of the whole program, like
//! `perf report` ranks symbols — every function of every module, hottest first, with each path's share of all
//! path executions of the program and its source lines.
//!
//! The paths are `decode`'s ([`crate::program_paths`]): path-mode functions' Ball–Larus paths, or context and
//! piecewise modules' interprocedural paths (ranked under the function their active suffix starts in). Only
//! paths with a positive count are executions; a path's share is its count over the sum of the counts of all
//! ranked paths. Ties go to profile order, then path number. The `--limit` hottest (default 10) are selected
//! before they are sorted ([`pathprof_analysis::hottest`]), so ranking millions of paths sorts only ten.
//!
//! Functions whose counts are not exact are left out — their paths are not ranked as numbers — and the output
//! says how many functions and executed paths that is. Edge and block profiles record no paths: an error.
//!
//! `--functions` ranks functions instead: by path executions, with their share and number of distinct executed
//! paths.
//!
//! Functions the pass left uninstrumented ran uncounted: the output says how many (`not_profiled`, as in `show`).
//!
//! JSON: `{"mode", "executions", "executed_paths", "left_out": {"functions", "paths", "names"}, "not_profiled",
//! "edge_modules",
//! "paths": [{"id",
//! "rank", "count", "percent", "function", "display_name", "module", "file", "context_steps", "steps"}]}`, steps
//! as in `decode --json`; with `--functions`, `"functions": [{"rank", "function", "display_name", "module",
//! "file", "start_line", "executions", "percent", "executed_paths"}]` instead of `paths`.

use crate::decode::report::{InterprocSteps, PathId, Steps};
use crate::not_profiled::NotProfiled;
use crate::program_paths::{self, share, shown_name, Decoded, Enumerated, FunctionPathsSummary, ProgramPath};
use crate::{files, output};
use anyhow::Result;
use pathprof_analysis::hottest;
use serde::Serialize;
use std::cmp::Reverse;
use std::io::{self, Write};
use std::path::PathBuf;

/// Paths (or functions) listed without `--limit`.
const DEFAULT_LIMIT: usize = 10;

/// Arguments of `pathprof top`.
#[derive(clap::Args)]
pub struct Args {
    /// The path profile (path, context or piecewise mode).
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// List the N hottest [default: 10].
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Rank functions by their path executions instead of paths.
    #[arg(long)]
    functions: bool,
}

#[derive(Serialize)]
struct Report<'a> {
    mode: &'static str,
    /// Sum of the counts of all ranked paths: what `percent` is relative to.
    executions: u128,
    /// Ranked paths with a positive count.
    executed_paths: usize,
    left_out: LeftOut<'a>,
    /// Functions the pass left uninstrumented: their executions are in no share.
    not_profiled: Vec<NotProfiled<'a>>,
    /// Modules of the profile in edge or block mode: they record no paths and are not ranked.
    edge_modules: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    paths: Option<Vec<PathEntry<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    functions: Option<Vec<FunctionEntry<'a>>>,
}

/// What the ranking leaves out because its counts are not exact.
#[derive(Serialize)]
pub(crate) struct LeftOut<'a> {
    /// Functions whose counts are not exact (or whose paths cross one that is not).
    pub functions: usize,
    /// Their executed paths.
    pub paths: usize,
    /// Their linkage names.
    pub names: Vec<&'a str>,
}

impl<'a> LeftOut<'a> {
    pub fn of(e: &Enumerated<'a>) -> LeftOut<'a> {
        LeftOut {
            functions: e.left_out_functions(),
            paths: e.left_out_paths,
            names: e.functions.iter().filter(|f| f.left_out).map(|f| f.function.name.as_str()).collect(),
        }
    }

    /// One line for text output, if anything is left out.
    pub fn write_text(&self, out: &mut impl Write) -> io::Result<()> {
        if self.functions == 0 {
            return Ok(());
        }
        let s = if self.functions == 1 { "" } else { "s" };
        let mut names = self.names.iter().take(5).copied().collect::<Vec<_>>().join(", ");
        if self.names.len() > 5 {
            names.push_str(", ...");
        }
        writeln!(
            out,
            "left out: {} function{s} whose counts are not exact, with {} executed paths ({names})",
            self.functions, self.paths
        )
    }
}

#[derive(Serialize)]
struct PathEntry<'a> {
    id: PathId,
    rank: usize,
    count: i64,
    /// Share of the program's path executions, percent.
    percent: f64,
    function: &'a str,
    display_name: &'a str,
    module: &'a str,
    file: &'a str,
    /// Interprocedural paths: the length of the context-prefix of `steps`.
    context_steps: u32,
    steps: Steps<'a>,
    #[serde(skip)]
    path: ProgramPath<'a>,
}

#[derive(Serialize)]
struct FunctionEntry<'a> {
    rank: usize,
    function: &'a str,
    display_name: &'a str,
    module: &'a str,
    file: &'a str,
    start_line: u32,
    /// Sum of the counts of its executed paths.
    executions: u128,
    /// Share of the program's path executions, percent.
    percent: f64,
    /// Distinct paths with a positive count.
    executed_paths: usize,
}

/// Reads and decodes the profile and prints its hottest paths (or functions).
pub fn run(args: &Args) -> Result<()> {
    let profile = files::read_profile(&args.file)?;
    let decoded = Decoded::new(&profile, &args.file)?;
    let steps = InterprocSteps::default();
    let all = decoded.enumerate(&steps);
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
    let executions = all.executions();
    let mut report = Report {
        mode: decoded.mode,
        executions,
        executed_paths: all.paths.len(),
        left_out: LeftOut::of(&all),
        not_profiled: crate::not_profiled::of_profile(&profile, None),
        edge_modules: decoded.edge_modules,
        paths: None,
        functions: None,
    };
    if args.functions {
        report.functions = Some(
            ranked_functions(&all.functions, limit)
                .into_iter()
                .enumerate()
                .map(|(i, f)| FunctionEntry {
                    rank: i + 1,
                    function: &f.function.name,
                    display_name: &f.function.display_name,
                    module: &f.module.meta.module_name,
                    file: &f.function.file,
                    start_line: f.function.start_line,
                    executions: f.executions,
                    percent: share(f.executions, executions),
                    executed_paths: f.executed_paths,
                })
                .collect(),
        );
    } else {
        let ranked = hottest(all.paths.iter().collect(), Some(limit));
        report.paths = Some(
            ranked
                .into_iter()
                .enumerate()
                .map(|(i, p)| PathEntry {
                    id: p.id(),
                    rank: i + 1,
                    count: p.count,
                    percent: share(p.count.unsigned_abs().into(), executions),
                    function: &p.function.name,
                    display_name: &p.function.display_name,
                    module: &p.module.meta.module_name,
                    file: &p.function.file,
                    context_steps: p.steps.context_steps(),
                    steps: p.steps,
                    path: *p,
                })
                .collect(),
        );
    }
    output::print(&report, args.json, write_text)
}

/// The `limit` functions with the most path executions, most first (ties in profile order); functions without
/// executions and left-out functions are not ranked.
fn ranked_functions<'s, 'a>(
    functions: &'s [FunctionPathsSummary<'a>],
    limit: usize,
) -> Vec<&'s FunctionPathsSummary<'a>> {
    let mut ranked: Vec<(usize, &FunctionPathsSummary)> =
        functions.iter().enumerate().filter(|(_, f)| !f.left_out && f.executions > 0).collect();
    ranked.sort_by_key(|&(i, f)| (Reverse(f.executions), i));
    ranked.into_iter().take(limit).map(|(_, f)| f).collect()
}

fn write_text(out: &mut impl Write, r: &Report) -> io::Result<()> {
    let functions = r.functions.as_ref();
    let (what, listed) = match (&r.paths, functions) {
        (Some(p), _) => ("paths", p.len()),
        (None, Some(f)) => ("functions", f.len()),
        (None, None) => ("paths", 0),
    };
    writeln!(
        out,
        "hottest {what} ({} mode): {listed} listed; {} path executions in {} executed paths",
        r.mode, r.executions, r.executed_paths
    )?;
    r.left_out.write_text(out)?;
    if !r.not_profiled.is_empty() {
        let n = r.not_profiled.len();
        writeln!(out, "not ranked: {n} functions left uninstrumented when compiled (see pathprof show)")?;
    }
    if r.edge_modules > 0 {
        writeln!(out, "not ranked: {} edge- or block-mode modules, which record no paths", r.edge_modules)?;
    }
    if let Some(fs) = functions {
        for f in fs {
            let name = if f.display_name.is_empty() { f.function } else { f.display_name };
            let file = if f.file.is_empty() { "<unknown file>" } else { f.file };
            writeln!(
                out,
                "  #{:<3} executions {:<12} {:6.2}%  paths {:<6} {name}  {file}:{}  (module {})",
                f.rank, f.executions, f.percent, f.executed_paths, f.start_line, f.module
            )?;
        }
    }
    for p in r.paths.iter().flatten() {
        writeln!(
            out,
            "  #{:<3} count {:<12} {:6.2}%  {}  path {}  (module {})",
            p.rank,
            p.count,
            p.percent,
            shown_name(p.path.function),
            p.id,
            p.module
        )?;
        program_paths::write_steps(out, &p.path)?;
    }
    Ok(())
}
