//! `pathprof show FILE [--json] [--function NAME]`: every function's entry, block and edge counts.
//!
//! Edge-mode counts are propagated from the chord counters; path-mode counts are derived from the path counts
//! (`pathprof decode` lists the paths themselves), with the same output shape and `"mode": "path"`. In path mode
//! an edge is `instrumented` when it carries path-register or path-count code.
//! Block mode (`"mode": "block"`) derives block and entry counts from fewer counters (Ball & Larus 1994,
//! §3.3); its edge counts are not all determined, so every edge count is `null` in JSON and `n/a` in text, and
//! abnormal exits and setjmp re-entries (counts of virtual edges) are not listed.
//!
//! Fork re-entries: a block whose call was in flight when the program called `fork()` and that a child resumed
//! lists them in `fork_reentries` (text: "re-entered by fork N"); its count includes them (the code after the call
//! ran in both processes), and the function stays exact.
//!
//! `--dot --function F [--path ID] [-o OUT]` draws one function's graph instead (see [`dot`]).
//!
//! Runs the runtime wrote apart (`FILE.<pid>.incomplete`, see `files::written_apart`) are named first (JSON:
//! `written_apart`), so that a profile missing them never reads as the whole story.
//!
//! One report model ([`Report`]) is built from the profile and rendered either as JSON (serde) or as text, so the
//! two outputs cannot disagree. Counts that are not exact and negative are `null` in JSON and `?` in text: a
//! negative "count" is evidence of a broken profile, not a number to act on.

mod dot;

use crate::not_profiled::{self, NotProfiled};
use crate::{files, output};
use anyhow::{bail, Context, Result};
use pathprof_analysis::{FunctionCounts, ModuleCounts};
use pathprof_core::interproc::Callee;
use pathprof_core::{EdgeId, EdgeKind};
use pathprof_format::meta::Mode;
use pathprof_format::profile::ModuleProfile;
use serde::Serialize;
use std::io::{self, Write};
use std::path::PathBuf;

/// Arguments of `pathprof show`.
#[derive(clap::Args)]
pub struct Args {
    /// The profile to show.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Show only the functions with this linkage or display name.
    #[arg(long, value_name = "NAME")]
    function: Option<String>,
    /// Print the --function's control-flow graph as Graphviz dot, with its counts.
    #[arg(long, requires = "function", conflicts_with = "json")]
    dot: bool,
    /// With --dot: highlight this executed path (a path number as `pathprof decode` lists it).
    #[arg(long, value_name = "ID", requires = "dot")]
    path: Option<String>,
    /// With --dot: write to OUT instead of stdout; an OUT ending in .svg is rendered with Graphviz (dot -Tsvg).
    #[arg(short = 'o', long = "output", value_name = "OUT", requires = "dot")]
    output: Option<PathBuf>,
}

/// The whole output: `{"functions": [...], "not_profiled": [...], "written_apart": [...]}`.
#[derive(Serialize)]
struct Report<'a> {
    functions: Vec<FunctionReport>,
    /// Functions the pass left uninstrumented: no count of the profile covers them.
    not_profiled: Vec<NotProfiled<'a>>,
    /// Files next to the profile holding runs it does not (`files::written_apart`).
    written_apart: Vec<String>,
}

#[derive(Serialize)]
pub(crate) struct FunctionReport {
    /// Linkage name.
    pub(crate) name: String,
    /// Source-level name (empty without debug info).
    pub(crate) display_name: String,
    /// The module's name (a source file, or the executable or shared object of an LTO program).
    pub(crate) module: String,
    /// Where the module's code went (absolute; empty in profiles before metadata version 4): with `module`, the
    /// module's identity.
    pub(crate) module_output: String,
    pub(crate) mode: &'static str,
    pub(crate) file: String,
    pub(crate) start_line: u32,
    /// Invocations (the EXIT→entry count).
    pub(crate) entry_count: Option<u64>,
    pub(crate) exact: bool,
    pub(crate) inexact_reasons: Vec<String>,
    pub(crate) blocks: Vec<BlockReport>,
    /// Real edges only (branches and returns); virtual edges are summarised in `abnormal_exits`.
    pub(crate) edges: Vec<EdgeReport>,
    /// Blocks left abnormally (exit, longjmp, exception through a call): Termination edges with a count > 0.
    pub(crate) abnormal_exits: Vec<BlockCount>,
    /// setjmp blocks re-entered more often than left abnormally: minus their (negative) Termination count.
    pub(crate) net_reentries: Vec<BlockCount>,
    /// Blocks resumed by fork()ed children after a call that was in flight at the fork: the re-entries, which
    /// the block's count includes.
    pub(crate) fork_reentries: Vec<BlockCount>,
}

#[derive(Serialize)]
pub(crate) struct BlockReport {
    pub(crate) id: u32,
    pub(crate) lines: Vec<u32>,
    pub(crate) count: Option<u64>,
    /// Context and piecewise modes: the function this block calls at its end (a call site; the next block is
    /// its return site, split off by the pass).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) calls: Option<String>,
}

#[derive(Serialize)]
pub(crate) struct EdgeReport {
    pub(crate) from: u32,
    /// For a return edge, the EXIT index (the number of blocks).
    pub(crate) to: u32,
    pub(crate) kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) succ: Option<u32>,
    pub(crate) count: Option<u64>,
    /// Edge mode: whether the count was measured by a counter on this edge (otherwise it was derived). Path
    /// mode: whether the edge carries path-register or path-count code (every count is derived from paths).
    pub(crate) instrumented: bool,
}

#[derive(Serialize)]
pub(crate) struct BlockCount {
    pub(crate) block: u32,
    pub(crate) count: u64,
}

/// Reads the profile, derives the counts of every (selected) function and prints them.
pub fn run(args: &Args) -> Result<()> {
    if args.dot {
        return dot::run(args);
    }
    let profile = files::read_profile(&args.file)?;
    let mut functions = Vec::new();
    for module in &profile.modules {
        let module_counts = ModuleCounts::new(module);
        for (index, f) in module.meta.functions.iter().enumerate() {
            if output::selects(args.function.as_deref(), f) {
                let counts =
                    module_counts.function(index).with_context(|| format!("showing {}", args.file.display()))?;
                functions.push(function_report(module, index, &counts));
            }
        }
    }
    let not_profiled = not_profiled::of_profile(&profile, args.function.as_deref());
    if let (Some(name), true) = (&args.function, functions.is_empty() && not_profiled.is_empty()) {
        bail!("no function named {name} in {}", args.file.display());
    }
    let written_apart = files::written_apart_names(&args.file);
    output::print(&Report { functions, not_profiled, written_apart }, args.json, write_text)
}

/// One function's counts as `show` reports them; also the HTML report's and `show --dot`'s model.
pub(crate) fn function_report(module: &ModuleProfile, index: usize, c: &FunctionCounts) -> FunctionReport {
    let f = &module.meta.functions[index];
    let cfg = &f.cfg;
    let mut blocks: Vec<BlockReport> = f
        .blocks
        .iter()
        .enumerate()
        .map(|(i, b)| BlockReport {
            id: i as u32,
            lines: b.lines.clone(),
            count: c.blocks.get(i).copied().flatten(),
            calls: None,
        })
        .collect();
    if let Some(ip) = module.meta.interproc.as_ref().and_then(|ip| ip.procs.get(index)) {
        for site in &ip.call_sites {
            let callee = match site.callee {
                Callee::Proc(q) | Callee::Cut(q) => module.meta.functions.get(q.index()).map(|g| g.name.clone()),
                Callee::External => None,
            };
            if let Some(b) = blocks.get_mut(site.block.index()) {
                b.calls = callee;
            }
        }
    }
    // Block mode counts blocks: its edge counts are not all derivable, so none are shown, nor the abnormal exits
    // and setjmp re-entries (Termination edge counts).
    let edge_counts = module.meta.mode != Mode::Block;
    let mut edges = Vec::new();
    let mut abnormal_exits = Vec::new();
    let mut net_reentries = Vec::new();
    for id in cfg.edge_ids() {
        let e = cfg.edge(id);
        let count = c.edges.get(id.index()).copied().flatten();
        let (kind, succ) = match e.kind {
            EdgeKind::Branch { succ } => ("branch", Some(succ)),
            EdgeKind::Return => ("return", None),
            // Abnormal exits are edge counts too: not shown in block mode.
            EdgeKind::Termination if !edge_counts => continue,
            EdgeKind::Termination => {
                match (count, raw(c, id)) {
                    (Some(n), _) if n > 0 => abnormal_exits.push(BlockCount { block: e.from.0, count: n }),
                    (None, r) if r < 0 && f.reentry_blocks.contains(&e.from.0) => {
                        net_reentries.push(BlockCount { block: e.from.0, count: r.unsigned_abs() as u64 })
                    }
                    _ => {}
                }
                continue;
            }
            EdgeKind::ExitToEntry => continue,
        };
        edges.push(EdgeReport {
            from: e.from.0,
            to: e.to.0,
            kind,
            succ,
            count: count.filter(|_| edge_counts),
            instrumented: c.measured.get(id.index()).copied().unwrap_or(false),
        });
    }
    let fork_reentries = c
        .fork_reentries
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(b, &n)| BlockCount { block: b as u32, count: n })
        .collect();
    FunctionReport {
        name: f.name.clone(),
        display_name: f.display_name.clone(),
        module: module.meta.module_name.clone(),
        module_output: module.meta.output.clone(),
        mode: module.meta.mode.name(),
        file: f.file.clone(),
        start_line: f.start_line,
        entry_count: c.entry,
        exact: c.exact,
        inexact_reasons: c.inexact_reasons.iter().map(ToString::to_string).collect(),
        blocks,
        edges,
        abnormal_exits,
        net_reentries,
        fork_reentries,
    }
}

fn raw(c: &FunctionCounts, id: EdgeId) -> i128 {
    c.raw_edges.get(id.index()).copied().unwrap_or(0)
}

/// A count for text output: `?` when it is not a count.
fn n(count: Option<u64>) -> String {
    count.map_or_else(|| "?".to_string(), |v| v.to_string())
}

fn write_text(out: &mut impl Write, report: &Report) -> io::Result<()> {
    files::write_apart_note(out, &report.written_apart)?;
    for (i, f) in report.functions.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        crate::text::function_header(out, &f.name, &f.display_name, &f.file, f.start_line, &f.module, f.mode)?;
        writeln!(out, "  entry count: {}", n(f.entry_count))?;
        if !f.exact {
            writeln!(out, "  INEXACT: {}", f.inexact_reasons.join("; "))?;
        }
        let resumed: u64 = f.fork_reentries.iter().map(|r| r.count).sum();
        if resumed > 0 {
            writeln!(
                out,
                "  re-entered by fork: {resumed} (activations resumed by fork()ed children; counts include them)"
            )?;
        }
        writeln!(out, "  blocks:")?;
        for b in &f.blocks {
            let lines = if b.lines.is_empty() {
                "-".to_string()
            } else {
                b.lines.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
            };
            write!(out, "    bb{:<4} lines {:<12} count {}", b.id, lines, n(b.count))?;
            if let Some(a) = f.abnormal_exits.iter().find(|a| a.block == b.id) {
                write!(out, "  abnormal exits {}", a.count)?;
            }
            if let Some(r) = f.net_reentries.iter().find(|r| r.block == b.id) {
                write!(out, "  net setjmp re-entries {}", r.count)?;
            }
            if let Some(r) = f.fork_reentries.iter().find(|r| r.block == b.id) {
                write!(out, "  re-entered by fork {}", r.count)?;
            }
            writeln!(out)?;
        }
        // Edge mode: the edge has a counter; path mode: it updates the path register or counts a path.
        let star = if f.mode == Mode::Path.name() { "instrumented" } else { "counter" };
        let block_mode = f.mode == Mode::Block.name();
        if block_mode {
            writeln!(out, "  edges (* = {star}; edge counts and abnormal exits not available in block mode):")?;
        } else {
            writeln!(out, "  edges (* = {star}):")?;
        }
        for e in &f.edges {
            let to = if e.kind == "return" { "EXIT".to_string() } else { format!("bb{}", e.to) };
            let kind = match e.succ {
                Some(s) => format!("branch {s}"),
                None => e.kind.to_string(),
            };
            let star = if e.instrumented { " *" } else { "" };
            let count = if block_mode { "n/a".to_string() } else { n(e.count) };
            writeln!(out, "    {:<16} {:<10} count {count}{star}", format!("bb{} -> {to}", e.from), kind)?;
        }
    }
    not_profiled::write_text(out, &report.not_profiled, !report.functions.is_empty())
}
