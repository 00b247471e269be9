//! Edge counts from counted interprocedural paths: what the decoder derives every function's counts from.
//!
//! Melski & Reps, "Interprocedural Path Profiling", CC 1999 / UW–Madison TR-1382, 1998, §3.4: a context path's
//! context-prefix ran in earlier paths; only its active suffix is what this count measures. So each edge of an
//! execution lies in exactly one path's active part: an intraprocedural edge where it is taken, an activation's
//! EXIT→entry edge at its entry step (a root entry or a call), the callee's `Return` edge and the caller's c→r edge
//! at the return step (or at the summary step for recursive, cut and external sites), and the edge a path ends
//! with (return to Exit_global, back edge, termination). A path that ends abnormally (`exit`, `longjmp`, an
//! exception) also ends every activation it has open calls in, through the first termination edge of each such
//! call block (as [`super::Simulator`] records it). Context paths name those calls (their prefix holds the
//! calling context); a piecewise piece does not name calls made before it began, so in piecewise mode these
//! departures are derived by flow instead: whatever entered a call block and neither returned through c→r nor
//! left through a counted termination edge left through its first termination edge.
//!
//! Invariant: for the paths of complete executions, the result conserves flow at every vertex of every
//! procedure, and equals the edge counts of the executions.
//!
//! Fork re-entries ([`signed_edge_counts_with_reentries`], see [`crate::reentry`]): every activation a
//! `fork()`ed child resumes is a virtual edge EXIT→B into the block B of its in-flight call, and the
//! instrumented code measures each one. A counted block records a re-entry of its truncated path T, whose net
//! count is one lower per re-entry ([`super::arrivals`]): the re-entry goes back onto T's termination edge and
//! into B. A caller waiting in an interprocedural call block records a re-entry of that block: in context mode
//! the truncated path's departures reached its first termination edge, so the re-entry goes back there too; in
//! piecewise mode that edge is derived by flow, which the re-entry now balances.

use super::numbering::Mode;
use super::path::{InterprocPath, PathEnd, Via};
use super::program::{CallSiteId, Callee, ProcId, Program};
use crate::graph::{BlockId, EdgeId, EdgeKind};

/// Per procedure and cfg edge (`[proc][edge]`), the signed sum of the counts of the paths whose active part
/// takes the edge. Ids outside the program are ignored (the paths come from [`super::decode`] of the same
/// program, which never produces them); sums saturate.
pub fn signed_edge_counts<'p>(
    program: &Program,
    mode: Mode,
    paths: impl IntoIterator<Item = (&'p InterprocPath, i128)>,
) -> Vec<Vec<i128>> {
    signed_edge_counts_with_reentries(program, mode, paths.into_iter().map(|(p, c)| (p, c, 0)), &[]).edges
}

/// Per-procedure edge counts with fork re-entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdgeCountsWithReentries {
    /// `[proc][edge]`, as [`signed_edge_counts`] returns them, with the re-entries' departures put back.
    pub edges: Vec<Vec<i128>>,
    /// `[proc][block]`: the re-entries of each block (virtual edges EXIT→block).
    pub reentries: Vec<Vec<i128>>,
}

/// [`signed_edge_counts`] of paths `(path, net count, fork re-entries)` and measured re-entries of
/// interprocedural call blocks `(proc, block, count)` (see the module docs). Ids outside the program, and
/// re-entries of blocks without a termination edge, are ignored (readers check them first); sums saturate.
pub fn signed_edge_counts_with_reentries<'p>(
    program: &Program,
    mode: Mode,
    paths: impl IntoIterator<Item = (&'p InterprocPath, i128, i128)>,
    block_reentries: &[(ProcId, BlockId, i128)],
) -> EdgeCountsWithReentries {
    let mut counter = EdgeCounter::new(program, mode);
    for (path, count, forked) in paths {
        counter.add(path, count, forked);
    }
    counter.finish(block_reentries)
}

/// [`signed_edge_counts_with_reentries`] one path at a time, so that a reader can add each path as it is decoded
/// and drop it (a module's paths together can be far larger than its counts).
pub struct EdgeCounter<'g> {
    program: &'g Program,
    mode: Mode,
    counts: EdgeCountsWithReentries,
}

impl<'g> EdgeCounter<'g> {
    /// No path added yet.
    pub fn new(program: &'g Program, mode: Mode) -> Self {
        let edges = program.procs().iter().map(|p| vec![0; p.cfg.num_edges()]).collect();
        let reentries = program.procs().iter().map(|p| vec![0; p.cfg.num_blocks()]).collect();
        EdgeCounter { program, mode, counts: EdgeCountsWithReentries { edges, reentries } }
    }

    /// Adds path `path` with net count `count` and `forked` fork re-entries.
    pub fn add(&mut self, path: &InterprocPath, count: i128, forked: i128) {
        let (program, mode) = (self.program, self.mode);
        let EdgeCountsWithReentries { edges, reentries } = &mut self.counts;
        if let (PathEnd::Termination { proc, edge }, true) = (path.end, forked != 0) {
            if let Some(e) = program.get_proc(proc).and_then(|p| p.cfg.edges().get(edge.index())) {
                bump(edges, proc, edge.index(), forked);
                bump(reentries, proc, e.from.index(), forked);
            }
        }
        let mut add = |p: ProcId, e: EdgeId| bump(edges, p, e.index(), count);
        let call_edge = |s: CallSiteId| program.site(s).map(|i| (i.proc, i.call_edge));
        for step in path.active_suffix() {
            match step.via {
                Via::RootEntry | Via::Call { .. } => {
                    if let Some(p) = program.get_proc(step.proc) {
                        add(step.proc, p.cfg.exit_to_entry());
                    }
                }
                Via::Edge(e) => add(step.proc, e),
                Via::Return { site, edge } => {
                    if let Some(Callee::Proc(q) | Callee::Cut(q)) = program.site(site).map(|i| i.callee) {
                        add(q, edge);
                    }
                    if let Some((p, e)) = call_edge(site) {
                        add(p, e);
                    }
                }
                Via::Summary { site } => {
                    if let Some((p, e)) = call_edge(site) {
                        add(p, e);
                    }
                }
                Via::LoopRestart { .. } | Via::MidEntry { .. } => {}
            }
        }
        if let (Mode::Context, PathEnd::Termination { .. }) = (mode, path.end) {
            let mut open: Vec<CallSiteId> = Vec::new();
            for step in &path.steps {
                match step.via {
                    Via::Call { site } => open.push(site),
                    Via::Return { .. } => {
                        open.pop();
                    }
                    _ => {}
                }
            }
            for site in open {
                let Some(info) = program.site(site) else { continue };
                if let Some(e) = first_termination(program, info.proc, info.block) {
                    add(info.proc, e);
                }
            }
        }
        let (proc, edge) = match path.end {
            PathEnd::RootReturn { proc, edge } | PathEnd::Termination { proc, edge } => (proc, edge),
            PathEnd::BackEdge { proc, back } => (proc, back),
        };
        add(proc, edge);
    }

    /// The counts of the paths added, with the measured re-entries of interprocedural call blocks
    /// `(proc, block, count)` (see the module docs).
    pub fn finish(self, block_reentries: &[(ProcId, BlockId, i128)]) -> EdgeCountsWithReentries {
        let (program, mode) = (self.program, self.mode);
        let EdgeCountsWithReentries { mut edges, mut reentries } = self.counts;
        for &(p, b, r) in block_reentries {
            if program.get_proc(p).is_none() || b.index() >= program.cfg(p).num_blocks() {
                continue;
            }
            let Some(t) = first_termination(program, p, b) else { continue };
            bump(&mut reentries, p, b.index(), r);
            if mode == Mode::Context {
                bump(&mut edges, p, t.index(), r);
            }
        }
        if mode == Mode::Piecewise {
            close_unfinished_calls(program, &mut edges, &reentries);
        }
        EdgeCountsWithReentries { edges, reentries }
    }
}

/// Adds `c` to `v[p][i]`, saturating; ids outside `v` are ignored.
fn bump(v: &mut [Vec<i128>], p: ProcId, i: usize, c: i128) {
    if let Some(x) = v.get_mut(p.index()).and_then(|v| v.get_mut(i)) {
        *x = x.saturating_add(c);
    }
}

/// The first termination edge of block `block` of `p`.
fn first_termination(program: &Program, p: ProcId, block: crate::graph::BlockId) -> Option<EdgeId> {
    let cfg = program.cfg(p);
    cfg.edge_ids().find(|&e| cfg.edge(e).from == block && cfg.edge(e).kind == EdgeKind::Termination)
}

/// Piecewise: every call block's in-flow (fork re-entries included) that is not accounted for by its out-edges
/// left through its first termination edge (a call that never returned). A negative difference is left alone:
/// flow conservation then reports it.
fn close_unfinished_calls(program: &Program, edges: &mut [Vec<i128>], reentries: &[Vec<i128>]) {
    for site in program.sites() {
        let cfg = program.cfg(site.proc);
        let Some(counts) = edges.get(site.proc.index()) else { continue };
        let reentered = reentries.get(site.proc.index()).and_then(|r| r.get(site.block.index())).copied().unwrap_or(0);
        let (mut inflow, mut outflow) = (reentered, 0i128);
        for (e, &c) in cfg.edges().iter().zip(counts) {
            if e.to == site.block {
                inflow = inflow.saturating_add(c);
            }
            if e.from == site.block {
                outflow = outflow.saturating_add(c);
            }
        }
        if let (true, Some(t)) = (inflow > outflow, first_termination(program, site.proc, site.block)) {
            edges[site.proc.index()][t.index()] += inflow - outflow;
        }
    }
}
