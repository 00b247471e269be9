//! `pathprof decode --hot-regions [--coverage P] [--top N] [--function NAME] [--json] FILE`: the hand-off to
//! path-based optimisation (superblock/trace formation).
//!
//! Per path-mode function, the paths are taken hottest first (by count, ties by path number) until their counts
//! add up to at least P percent (default 90) of the function's *path executions* — the sum of its positive path
//! counts; a `setjmp` re-entry correction (a negative count) is not an execution and never a region. `--top N`
//! caps the number of regions per function. Each region is one Ball–Larus path: its block sequence with source
//! lines (the `steps` of `pathprof decode --json`), its count, its share of the function's path executions
//! (`percent`) and the running share of the regions so far (`cumulative_percent`), how it starts and ends (as in
//! `decode`), and whether it is a **loop body**: the path ends by taking a back edge into the block it starts
//! at (`header`), so it is one complete iteration of that loop, the natural unit for a superblock or for
//! unrolling. Functions without path executions are listed only when `--function` names them.
//!
//! JSON (`--json`): `{"mode": "path", "coverage": P, "functions": [{"name", "display_name", "module", "file",
//! "start_line", "executed_paths", "executions", "covered", "covered_percent", "entry_count", "exact",
//! "inexact_reasons", "regions": [PATH + {"cumulative_percent", "loop_body", "header"}]}]}` where PATH has the
//! fields of a path in `decode --json` (`percent` relative to `executions`). Counts of inexact functions are
//! listed with `"exact": false` (`INEXACT` in text), as in `decode`.

use super::report::PathReport;
use super::{decode_functions, marks, path_report, Args};
use crate::output;
use anyhow::{bail, Result};
use pathprof_analysis::FunctionPaths;
use pathprof_core::regenerate::PathEnd;
use pathprof_format::meta::{FunctionMeta, Mode};
use pathprof_format::profile::{ModuleProfile, Profile};
use serde::Serialize;
use std::io::{self, Write};

/// The default `--coverage`.
const DEFAULT_COVERAGE: f64 = 90.0;

/// `--coverage P`: a percentage with 0 < P <= 100.
pub(super) fn parse_coverage(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => Ok(p),
        _ => Err(format!("'{s}' is not a percentage above 0 and at most 100")),
    }
}

#[derive(Serialize)]
struct Report<'a> {
    mode: &'static str,
    /// The coverage target, percent.
    coverage: f64,
    functions: Vec<FunctionRegions<'a>>,
}

#[derive(Serialize)]
struct FunctionRegions<'a> {
    name: &'a str,
    display_name: &'a str,
    module: &'a str,
    file: &'a str,
    start_line: u32,
    /// Paths with a nonzero net count.
    executed_paths: usize,
    /// Sum of the positive path counts.
    executions: u128,
    /// Sum of the counts of the regions.
    covered: u128,
    /// `covered` as a percentage of `executions` (0 without executions).
    covered_percent: f64,
    entry_count: Option<u64>,
    exact: bool,
    inexact_reasons: Vec<String>,
    regions: Vec<Region<'a>>,
}

#[derive(Serialize)]
struct Region<'a> {
    #[serde(flatten)]
    path: PathReport<'a>,
    /// Share of the function's path executions of this region and all hotter ones, percent.
    cumulative_percent: f64,
    /// The path ends by taking a back edge into its first block: one full iteration of that loop.
    loop_body: bool,
    /// For a loop body: its header (the first block).
    #[serde(skip_serializing_if = "Option::is_none")]
    header: Option<u32>,
}

/// Prints the hot regions of every (selected) path-mode function of `profile`.
pub(super) fn run(args: &Args, profile: &Profile) -> Result<()> {
    let coverage = args.coverage.unwrap_or(DEFAULT_COVERAGE);
    let decoded = decode_functions(&profile.modules, args.function.as_deref(), &args.file)?;
    if let (Some(name), true) = (&args.function, decoded.is_empty()) {
        bail!("no function named {name} in {}", args.file.display());
    }
    let mut report = Report { mode: Mode::Path.name(), coverage, functions: Vec::new() };
    for (module, f, paths) in &decoded {
        let fr = regions(module, f, paths, coverage, args.top);
        if fr.executions > 0 || args.function.is_some() {
            report.functions.push(fr);
        }
    }
    output::print(&report, args.json, write_text)
}

/// The smallest hottest-first prefix of the positive paths whose counts reach `coverage` percent of the
/// function's path executions (capped at `top`).
fn regions<'a>(
    module: &'a ModuleProfile,
    f: &'a FunctionMeta,
    fp: &'a FunctionPaths,
    coverage: f64,
    top: Option<usize>,
) -> FunctionRegions<'a> {
    let hottest: Vec<_> = fp.hottest_first().into_iter().filter(|p| p.count > 0).collect();
    let executions: u128 = hottest.iter().map(|p| p.count as u128).sum();
    let percent = |n: u128| if executions > 0 { n as f64 * 100.0 / executions as f64 } else { 0.0 };
    let mut covered: u128 = 0;
    let mut regions = Vec::new();
    for p in hottest {
        if top.is_some_and(|t| regions.len() >= t) || (covered as f64) * 100.0 >= coverage * executions as f64 {
            break;
        }
        covered += p.count as u128;
        let header = match p.path.end {
            PathEnd::BackEdge { back } => {
                f.cfg.edges().get(back.index()).map(|e| e.to).filter(|h| p.path.blocks.first() == Some(h))
            }
            _ => None,
        };
        let rank = regions.len() + 1;
        regions.push(Region {
            path: path_report(module, f, p, rank, executions as i128),
            cumulative_percent: percent(covered),
            loop_body: header.is_some(),
            header: header.map(|h| h.0),
        });
    }
    let c = &fp.counts;
    FunctionRegions {
        name: &f.name,
        display_name: &f.display_name,
        module: &module.meta.module_name,
        file: &f.file,
        start_line: f.start_line,
        executed_paths: fp.paths.len(),
        executions,
        covered,
        covered_percent: percent(covered),
        entry_count: c.entry,
        exact: c.exact,
        inexact_reasons: c.inexact_reasons.iter().map(ToString::to_string).collect(),
        regions,
    }
}

fn write_text(out: &mut impl Write, report: &Report) -> io::Result<()> {
    for (i, f) in report.functions.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        let file = crate::text::function_header(out, f.name, f.display_name, f.file, f.start_line, f.module, "path")?;
        if f.executions == 0 {
            writeln!(out, "  no path executions")?;
        } else {
            writeln!(
                out,
                "  hot regions: {} of {} executed paths cover {} of {} path executions ({:.2}%, target {}%)",
                f.regions.len(),
                f.executed_paths,
                f.covered,
                f.executions,
                f.covered_percent,
                report.coverage
            )?;
        }
        if !f.exact {
            writeln!(out, "  INEXACT: {}", f.inexact_reasons.join("; "))?;
        }
        for r in &f.regions {
            let p = &r.path;
            let id = p.id.to_string();
            write!(
                out,
                "  #{:<3} count {:<10} {:6.2}%  cum {:6.2}%  path {id}",
                p.rank, p.count, p.percent, r.cumulative_percent
            )?;
            let m = match r.header {
                Some(h) => vec![format!("loop body, header bb{h}")],
                None => marks(p),
            };
            if !m.is_empty() {
                write!(out, "  ({})", m.join("; "))?;
            }
            writeln!(out)?;
            crate::text::path_steps(out, file, p.steps.iter().map(|s| (s.block, s.lines)))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_coverage;

    #[test]
    fn coverage_is_a_percentage() {
        assert_eq!(parse_coverage("90"), Ok(90.0));
        assert_eq!(parse_coverage("100"), Ok(100.0));
        assert_eq!(parse_coverage("0.5"), Ok(0.5));
        for bad in ["0", "-1", "100.5", "x", "", "NaN", "inf"] {
            assert!(parse_coverage(bad).is_err(), "{bad}");
        }
    }
}
