//! G*_fn's structure for interprocedural path profiling: every procedure's Ball–Larus DAG and the classified
//! call graph.
//!
//! Melski & Reps, "Interprocedural Path Profiling", CC 1999 / UW–Madison TR-1382, 1998, §3.2 builds G*_fn with
//! Transformation 1 (a GExit_P per procedure), Transformation 2 (each intraprocedural back edge w→v becomes the
//! surrogate edges Entry_P→v and w→GExit_P — exactly the Ball–Larus DAG of [`PathDag`], whose ENTRY is Entry_P,
//! whose EXIT is Exit_P for `Return` edges and GExit_P for the exit surrogates) and Transformation 3 (recursive
//! call sites become summary edges; see [`CallGraph`]). Numbering it is [`super::numbering`]'s job, as
//! [`crate::ball_larus::numbering`] numbers the DAG of [`crate::ball_larus::dag`].

use super::callgraph::CallGraph;
use super::program::{ProcId, Program};
use crate::ball_larus::dag::PathDag;
use crate::dfs::{depth_first, DfsInfo};

/// G*_fn's structure: the program, its classified call graph and every procedure's Ball–Larus DAG.
#[derive(Clone, Debug)]
pub struct Supergraph {
    program: Program,
    calls: CallGraph,
    dfs: Vec<DfsInfo>,
    dags: Vec<PathDag>,
}

impl Supergraph {
    /// Applies Transformations 1–3: per-procedure DFS and DAG (reusing [`depth_first`] and
    /// [`PathDag::build_with_cuts_and_resets`]: a procedure's cut vertices are treated like back edges' sources,
    /// and an edge entering a reset loop like its back edges), then the call-graph classification.
    pub fn build(program: Program) -> Supergraph {
        let mut dfs = Vec::with_capacity(program.num_procs());
        let mut dags = Vec::with_capacity(program.num_procs());
        for p in program.procs() {
            let adj = p.cfg.adjacency();
            let d = depth_first(&p.cfg, &adj);
            dags.push(PathDag::build_with_cuts_and_resets(&p.cfg, &adj, &d, &p.cut_vertices, &p.reset_headers));
            dfs.push(d);
        }
        let calls = CallGraph::compute(&program, &dfs);
        Supergraph { program, calls, dfs, dags }
    }

    /// The supergraph of the same program with calls cut as [`Program::with_cut`] says. A procedure's DFS and
    /// DAG depend on its CFG alone, so they are kept and only the call graph is classified again: the budget
    /// policy's rounds (a hundred for SQLite's amalgamation) each cost a numbering, not a rebuild.
    pub fn with_cut(self, cut: impl Fn(ProcId) -> bool) -> Supergraph {
        let program = self.program.with_cut(cut);
        let calls = CallGraph::compute(&program, &self.dfs);
        Supergraph { program, calls, dfs: self.dfs, dags: self.dags }
    }

    /// The supergraph of the same program with its procedures in `order` ([`Program::permuted`]). A
    /// procedure's DFS and DAG depend on its CFG alone, so they are moved, not rebuilt; only the call graph is
    /// classified again. `None` if `order` is not a permutation.
    pub fn permuted(self, order: &[ProcId]) -> Option<Supergraph> {
        let program = self.program.permuted(order)?;
        let (mut dfs, mut dags): (Vec<Option<DfsInfo>>, Vec<Option<PathDag>>) =
            (self.dfs.into_iter().map(Some).collect(), self.dags.into_iter().map(Some).collect());
        let dfs: Vec<DfsInfo> = order.iter().map(|p| dfs[p.index()].take()).collect::<Option<_>>()?;
        let dags = order.iter().map(|p| dags[p.index()].take()).collect::<Option<_>>()?;
        let calls = CallGraph::compute(&program, &dfs);
        Some(Supergraph { program, calls, dfs, dags })
    }

    /// The program.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The classified call graph.
    pub fn calls(&self) -> &CallGraph {
        &self.calls
    }

    /// The Ball–Larus DAG of `p` (Transformations 1 and 2). Panics on an id outside the program.
    pub fn dag(&self, p: ProcId) -> &PathDag {
        &self.dags[p.index()]
    }

    /// The intraprocedural DFS of `p`. Panics on an id outside the program.
    pub fn dfs(&self, p: ProcId) -> &DfsInfo {
        &self.dfs[p.index()]
    }
}
