//! `pathprof coverage FILE [--json] [--lcov OUT]`: per function, executed paths of possible paths, and line and
//! branch coverage derived exactly from the counts — the path coverage of a test suite, which line and branch
//! tools cannot give.
//!
//! - **Paths** (path mode): executed Ball–Larus paths of `num_paths`, the number of paths of the function's DAG
//!   (BL96: acyclic paths from the entry or a loop header to a return or a back edge; a function whose DAG the
//!   path budget cut counts path pieces between cuts, marked `cut`). A path is executed when it ran at least
//!   once (its count plus its fork re-entries is positive). Context and piecewise profiles give the same per
//!   module, of its module-wide Melski–Reps paths. Edge and block profiles measure no paths.
//! - **Lines**: the distinct source lines of a function's blocks; a line is covered when a block carrying it ran,
//!   and its count is the largest count of such a block.
//! - **Branches**: the outcomes of conditional branches, i.e. the edges out of a block with two or more
//!   successor edges (a switch's cases one by one); covered when the edge's count is positive. Block profiles
//!   do not determine edge counts: no branch coverage there.
//!
//! Functions whose counts are not exact are reported with their reasons and left out of every total and of the
//! lcov file: what cannot be vouched for is not counted as covered or uncovered.
//!
//! `--lcov OUT` writes an lcov tracefile (`TN`, `SF`, `FN`, `FNDA`, `FNF`, `FNH`, `BRDA`, `BRF`, `BRH`, `DA`,
//! `LF`, `LH`, `end_of_record`; see [`lcov`]) that `genhtml` renders. Source files are named as the debug info
//! names them — relative to the directory the compiler ran in when it was given a relative name;
//! `--source-root` finds them as `report` does ([`crate::sources`]): under the compilation directory a module
//! named by its absolute path reveals, or under a given `DIR`, or with an `OLD=NEW` prefix replaced.
//!
//! Functions the pass left uninstrumented are not in the totals either; they are listed as not profiled.
//!
//! JSON: `{"totals": TOTALS, "left_out": {"functions", "names"}, "not_profiled": [{"name", "display_name",
//! "module", "file", "start_line", "reason"}], "modules": [{"module", "mode", "executed_paths",
//! "possible_paths"}], "functions": [{"name", "display_name", "module", "mode", "file", "start_line",
//! "entry_count", "exact", "inexact_reasons", "paths": {"executed", "possible", "cut"} | null, "lines":
//! {"covered", "total"} | null, "branches": {"covered", "total"} | null, "line_counts": [{"line", "count"}],
//! "branch_counts": [{"block", "line", "succ", "to", "count"}], "uncovered_lines": [...]}]}` where TOTALS =
//! `{"functions", "lines", "branches", "paths"}`, each `{"covered", "total"}`.

mod lcov;

use crate::decode::report::PathId;
use crate::not_profiled::NotProfiled;
use crate::{files, output, sources};
use anyhow::{Context, Result};
use pathprof_analysis::{function_path_counts, module_path_counts, FunctionCounts, ModuleCounts};
use pathprof_core::dag::PathDag;
use pathprof_core::dfs::depth_first;
use pathprof_core::{BlockId, EdgeKind};
use pathprof_format::meta::{FunctionMeta, Mode};
use pathprof_format::profile::ModuleProfile;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::PathBuf;

/// Arguments of `pathprof coverage`.
#[derive(clap::Args)]
pub struct Args {
    /// The profile (any mode).
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Also write the line, branch and function counts as an lcov tracefile (for genhtml and coverage viewers).
    #[arg(long, value_name = "OUT")]
    lcov: Option<PathBuf>,
    /// With --lcov: where to find the sources, as for `report`: DIR is where relative names are relative to (the
    /// directory the compiler ran in), OLD=NEW reads names under OLD from NEW (repeatable; first match wins).
    #[arg(long = "source-root", value_name = "DIR|OLD=NEW", requires = "lcov",
          value_parser = sources::parse_source_root)]
    source_roots: Vec<sources::SourceRoot>,
}

#[derive(Serialize)]
struct Report<'a> {
    totals: Totals,
    left_out: LeftOut<'a>,
    /// Functions the pass left uninstrumented (no count covers them).
    not_profiled: Vec<NotProfiled<'a>>,
    /// Context and piecewise modules: their module-wide path coverage.
    modules: Vec<ModulePathCoverage<'a>>,
    functions: Vec<FunctionCoverage<'a>>,
}

/// Covered of total, for one measure.
#[derive(Serialize, Default, Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Ratio {
    pub covered: u128,
    pub total: u128,
}

impl Ratio {
    fn add(&mut self, other: Ratio) {
        self.covered = self.covered.saturating_add(other.covered);
        self.total = self.total.saturating_add(other.total);
    }

    /// `covered/total (P%)`, or `-` without a total.
    fn text(&self) -> String {
        if self.total == 0 {
            "-".into()
        } else {
            format!("{}/{} ({:.2}%)", self.covered, self.total, self.covered as f64 * 100.0 / self.total as f64)
        }
    }
}

/// Totals over the functions whose counts are exact.
#[derive(Serialize, Default)]
struct Totals {
    /// Functions entered at least once.
    functions: Ratio,
    lines: Ratio,
    branches: Ratio,
    /// Path-mode functions' executed of possible paths.
    paths: Ratio,
}

#[derive(Serialize)]
struct LeftOut<'a> {
    functions: usize,
    names: Vec<&'a str>,
}

#[derive(Serialize)]
struct ModulePathCoverage<'a> {
    module: &'a str,
    mode: &'static str,
    executed_paths: usize,
    possible_paths: PathId,
}

#[derive(Serialize)]
pub(crate) struct FunctionCoverage<'a> {
    pub name: &'a str,
    pub display_name: &'a str,
    pub module: &'a str,
    /// The module's `ModuleMeta::compilation_dirs`, where the lcov file looks for a relative `file` first.
    #[serde(skip)]
    pub compilation_dirs: &'a [String],
    pub mode: &'static str,
    pub file: &'a str,
    pub start_line: u32,
    pub entry_count: Option<u64>,
    pub exact: bool,
    pub inexact_reasons: Vec<String>,
    /// Path mode only.
    pub paths: Option<PathCoverage>,
    /// `None` when the counts are not exact.
    pub lines: Option<Ratio>,
    /// `None` when the counts are not exact, and in block mode.
    pub branches: Option<Ratio>,
    /// Per line, ascending: the largest count of a block carrying it (empty when not exact).
    pub line_counts: Vec<LineCount>,
    /// Per branch outcome, in edge order (empty when not exact or in block mode).
    pub branch_counts: Vec<BranchCount>,
    /// Lines with count 0.
    pub uncovered_lines: Vec<u32>,
}

#[derive(Serialize)]
pub(crate) struct PathCoverage {
    executed: usize,
    possible: PathId,
    /// The path budget cut the DAG: its paths are pieces between cuts.
    cut: bool,
    #[serde(skip)]
    possible_number: u128,
}

#[derive(Serialize, Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct LineCount {
    pub line: u32,
    pub count: u64,
}

#[derive(Serialize, Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct BranchCount {
    /// The block that branches.
    pub block: u32,
    /// Its last source line (where its terminator most likely is), if it has any.
    pub line: Option<u32>,
    /// The successor number in the terminator.
    pub succ: u32,
    /// The successor block.
    pub to: u32,
    pub count: u64,
    /// How often the branching block ran.
    pub block_count: u64,
}

/// Reads the profile, computes every function's coverage, prints it, and writes the lcov file if asked.
pub fn run(args: &Args) -> Result<()> {
    let profile = files::read_profile(&args.file)?;
    let mut report = Report {
        totals: Totals::default(),
        left_out: LeftOut { functions: 0, names: Vec::new() },
        not_profiled: crate::not_profiled::of_profile(&profile, None),
        modules: Vec::new(),
        functions: Vec::new(),
    };
    let context = || format!("reading the counts of {}", args.file.display());
    for module in &profile.modules {
        let mode = module.meta.mode;
        let mut executed_per_function: Vec<Option<PathCoverage>> = Vec::new();
        let counts: Vec<FunctionCounts> = if mode.is_interprocedural() {
            let mp = module_path_counts(module).with_context(context)?;
            let executed = mp.paths.iter().filter(|p| p.count.saturating_add(p.fork_reentries) > 0).count();
            report.modules.push(ModulePathCoverage {
                module: &module.meta.module_name,
                mode: mode.name(),
                executed_paths: executed,
                possible_paths: PathId::new(mp.num_paths),
            });
            mp.functions
        } else if mode == Mode::Path {
            let mut counts = Vec::new();
            for (i, f) in module.meta.functions.iter().enumerate() {
                let fp = function_path_counts(module, i).with_context(context)?;
                let executed = fp.paths.iter().filter(|p| p.departures() > 0).count();
                executed_per_function.push(Some(PathCoverage {
                    executed,
                    possible: PathId::new(fp.num_paths),
                    cut: budget_cut(f, module.meta.path_loop_resets),
                    possible_number: fp.num_paths,
                }));
                counts.push(fp.counts);
            }
            counts
        } else {
            let mc = ModuleCounts::new(module);
            (0..module.meta.functions.len()).map(|i| mc.function(i)).collect::<Result<_, _>>().with_context(context)?
        };
        let mut paths = executed_per_function.into_iter();
        for (f, c) in module.meta.functions.iter().zip(&counts) {
            let fc = function_coverage(module, f, c, paths.next().flatten());
            if fc.exact {
                report.totals.functions.add(Ratio { covered: u128::from(fc.entry_count.unwrap_or(0) > 0), total: 1 });
                report.totals.lines.add(fc.lines.unwrap_or_default());
                report.totals.branches.add(fc.branches.unwrap_or_default());
                if let Some(p) = &fc.paths {
                    report.totals.paths.add(Ratio { covered: p.executed as u128, total: p.possible_number });
                }
            } else {
                report.left_out.functions += 1;
                report.left_out.names.push(&f.name);
            }
            report.functions.push(fc);
        }
    }
    if let Some(out) = &args.lcov {
        let text = lcov::tracefile(&report.functions, &args.source_roots);
        files::write_atomically(out, text.as_bytes()).context("cannot save the lcov file")?;
    }
    output::print(&report, args.json, write_text)
}

/// Whether the path budget cut the function's DAG (its paths are then pieces between cuts).
fn budget_cut(f: &FunctionMeta, resets: pathprof_core::ball_larus::ResetRule) -> bool {
    let Some(pm) = &f.path else { return false };
    let adj = f.cfg.adjacency();
    let dfs = depth_first(&f.cfg, &adj);
    PathDag::build_for_path_mode(&f.cfg, &adj, &dfs, pm.budget, resets)
        .is_ok_and(|dag| !dag.cut_edges().is_empty() || !dag.cut_vertices().is_empty())
}

/// The coverage of one function from its counts (`paths`: its path coverage, path mode only).
fn function_coverage<'a>(
    module: &'a ModuleProfile,
    f: &'a FunctionMeta,
    c: &FunctionCounts,
    paths: Option<PathCoverage>,
) -> FunctionCoverage<'a> {
    let mode = module.meta.mode;
    let blocks: Option<Vec<u64>> = c.blocks.iter().copied().collect();
    let exact = c.exact && blocks.is_some();
    let mut fc = FunctionCoverage {
        name: &f.name,
        display_name: &f.display_name,
        module: &module.meta.module_name,
        compilation_dirs: &module.meta.compilation_dirs,
        mode: mode.name(),
        file: &f.file,
        start_line: f.start_line,
        entry_count: c.entry,
        exact,
        inexact_reasons: c.inexact_reasons.iter().map(ToString::to_string).collect(),
        paths,
        lines: None,
        branches: None,
        line_counts: Vec::new(),
        branch_counts: Vec::new(),
        uncovered_lines: Vec::new(),
    };
    let Some(blocks) = blocks.filter(|_| exact) else { return fc };
    fc.line_counts = line_counts(f, &blocks);
    fc.uncovered_lines = fc.line_counts.iter().filter(|l| l.count == 0).map(|l| l.line).collect();
    fc.lines = Some(ratio(fc.line_counts.iter().map(|l| l.count)));
    if mode != Mode::Block {
        if let Some(b) = branch_counts(f, &c.edges, &blocks) {
            fc.branches = Some(ratio(b.iter().map(|b| b.count)));
            fc.branch_counts = b;
        }
    }
    fc
}

/// How many of `counts` are positive, of how many.
fn ratio(counts: impl Iterator<Item = u64>) -> Ratio {
    let mut r = Ratio::default();
    for c in counts {
        r.add(Ratio { covered: u128::from(c > 0), total: 1 });
    }
    r
}

/// Per distinct source line of the function's blocks, ascending: the largest count of a block carrying it.
pub(crate) fn line_counts(f: &FunctionMeta, blocks: &[u64]) -> Vec<LineCount> {
    let mut lines: BTreeMap<u32, u64> = BTreeMap::new();
    for (meta, &count) in f.blocks.iter().zip(blocks) {
        for &line in meta.lines.iter().filter(|&&l| l != 0) {
            let slot = lines.entry(line).or_insert(0);
            *slot = (*slot).max(count);
        }
    }
    lines.into_iter().map(|(line, count)| LineCount { line, count }).collect()
}

/// Every outcome of every conditional branch: the `Branch` edges out of blocks with two or more of them, with
/// their counts; `None` if one of those counts is not known.
pub(crate) fn branch_counts(f: &FunctionMeta, edges: &[Option<u64>], blocks: &[u64]) -> Option<Vec<BranchCount>> {
    let cfg = &f.cfg;
    // Per block, its Branch edges in edge order.
    let mut per_block: Vec<Vec<(pathprof_core::EdgeId, u32)>> = vec![Vec::new(); cfg.num_blocks()];
    for e in cfg.edge_ids() {
        if let (EdgeKind::Branch { succ }, Some(v)) = (cfg.edge(e).kind, per_block.get_mut(cfg.edge(e).from.index())) {
            v.push((e, succ));
        }
    }
    let mut out = Vec::new();
    for (b, outcomes) in per_block.into_iter().enumerate() {
        let block = BlockId::from_index(b);
        if outcomes.len() < 2 {
            continue;
        }
        let line = f.blocks.get(b).and_then(|m| m.lines.iter().rev().find(|&&l| l != 0).copied());
        for (e, succ) in outcomes {
            out.push(BranchCount {
                block: block.0,
                line,
                succ,
                to: cfg.edge(e).to.0,
                count: (*edges.get(e.index())?)?,
                block_count: *blocks.get(b)?,
            });
        }
    }
    Some(out)
}

fn write_text(out: &mut impl Write, r: &Report) -> io::Result<()> {
    for f in &r.functions {
        let name = if f.display_name.is_empty() { f.name } else { f.display_name };
        let file = if f.file.is_empty() { "<unknown file>" } else { f.file };
        writeln!(out, "{name}  {file}:{}  (module {}, {} mode)", f.start_line, f.module, f.mode)?;
        if !f.exact {
            writeln!(out, "  INEXACT, left out of the totals: {}", f.inexact_reasons.join("; "))?;
            continue;
        }
        let paths = match &f.paths {
            Some(p) if p.cut => format!("{} of {} (path pieces: the path budget cut the DAG)", p.executed, p.possible),
            Some(p) => format!("{} of {}", p.executed, p.possible),
            None if f.mode == Mode::Path.name() => "-".into(),
            None if f.mode == Mode::Context.name() || f.mode == Mode::Piecewise.name() => "module-wide (below)".into(),
            None => format!("not measured in {} mode", f.mode),
        };
        let branches = match f.branches {
            Some(b) => b.text(),
            None => "not measured in block mode".into(),
        };
        writeln!(
            out,
            "  entered {}  paths {paths}  lines {}  branches {branches}",
            f.entry_count.unwrap_or(0),
            f.lines.unwrap_or_default().text()
        )?;
        if !f.uncovered_lines.is_empty() {
            let lines: Vec<String> = f.uncovered_lines.iter().map(u32::to_string).collect();
            writeln!(out, "  uncovered lines: {}", lines.join(","))?;
        }
    }
    for m in &r.modules {
        writeln!(
            out,
            "module {} ({} mode): {} of {} interprocedural paths executed",
            m.module, m.mode, m.executed_paths, m.possible_paths
        )?;
    }
    if r.left_out.functions > 0 {
        writeln!(out, "left out of the totals: {} functions whose counts are not exact", r.left_out.functions)?;
    }
    crate::not_profiled::write_text(out, &r.not_profiled, false)?;
    let t = &r.totals;
    writeln!(
        out,
        "total: functions {}  lines {}  branches {}  paths {}",
        t.functions.text(),
        t.lines.text(),
        t.branches.text(),
        t.paths.text()
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathprof_core::{Cfg, Edge};
    use pathprof_format::meta::BlockMeta;

    /// A diamond 0 -> {1, 2} -> 3 -> EXIT with the given block lines.
    fn diamond(lines: [&[u32]; 4]) -> FunctionMeta {
        let e = |from: u32, to: u32, kind| Edge { from: BlockId(from), to: BlockId(to), kind };
        let edges = vec![
            e(0, 1, EdgeKind::Branch { succ: 0 }),
            e(0, 2, EdgeKind::Branch { succ: 1 }),
            e(1, 3, EdgeKind::Branch { succ: 0 }),
            e(2, 3, EdgeKind::Branch { succ: 0 }),
            e(3, 4, EdgeKind::Return),
            e(4, 0, EdgeKind::ExitToEntry),
        ];
        FunctionMeta {
            name: "f".into(),
            display_name: "f".into(),
            file: "f.c".into(),
            start_line: 1,
            cfg: Cfg::new(4, edges).unwrap(),
            blocks: lines.iter().map(|l| BlockMeta { lines: l.to_vec() }).collect(),
            edge_counters: vec![None; 6],
            counter_base: 0,
            num_counters: 0,
            reentry_blocks: Vec::new(),
            cfg_hash: 0,
            path: None,
        }
    }

    #[test]
    fn a_line_counts_as_often_as_its_busiest_block() {
        // Line 2 is in the condition block (ran 5 times) and in the then-block (ran 3 times).
        let f = diamond([&[2], &[2, 3], &[5], &[0, 7]]);
        let got = line_counts(&f, &[5, 3, 2, 5]);
        let want = [(2, 5), (3, 3), (5, 2), (7, 5)].map(|(line, count)| LineCount { line, count });
        assert_eq!(got, want);
        let none = line_counts(&f, &[1, 0, 1, 1]);
        assert_eq!(none.iter().filter(|l| l.count == 0).map(|l| l.line).collect::<Vec<_>>(), [3]);
    }

    #[test]
    fn branches_are_the_edges_of_blocks_with_two_successors() {
        let f = diamond([&[2], &[3], &[5], &[7, 8]]);
        let edges = [Some(4), Some(0), Some(4), Some(0), Some(4), Some(4)];
        let got = branch_counts(&f, &edges, &[4, 4, 0, 4]).unwrap();
        assert_eq!(got.len(), 2, "only block 0 branches");
        assert_eq!((got[0].block, got[0].line, got[0].succ, got[0].to, got[0].count), (0, Some(2), 0, 1, 4));
        assert_eq!((got[1].succ, got[1].to, got[1].count, got[1].block_count), (1, 2, 0, 4));
        assert_eq!(ratio(got.iter().map(|b| b.count)), Ratio { covered: 1, total: 2 });
        // An unknown edge count makes branch coverage unknown, not 0.
        assert!(branch_counts(&f, &[Some(4), None, Some(4), Some(0), Some(4), Some(4)], &[4, 4, 0, 4]).is_none());
    }
}
