//! The Ball–Larus path-profiling DAG: the CFG with every back edge replaced by two surrogate edges.
//!
//! Ball & Larus, "Efficient Path Profiling", MICRO-29, 1996, §3.3 ("Cyclic graphs"): each back edge w→v is
//! removed and replaced by a dummy edge ENTRY→v and a dummy edge w→EXIT, which turns the reachable part of the
//! CFG into a DAG whose ENTRY→EXIT paths are exactly the acyclic *path segments* an execution is cut into at
//! back edges. The same transformation applied to ordinary edges ("cuts", as in old LLVM's `SPLITEDGE`) bounds
//! the number of paths when the acyclic path space is too large for a counter index.
//!
//! Invariant: with the ENTRY self-loops described below set aside, the path edges form a DAG in which ENTRY
//! (block 0) is a source, EXIT is the only sink that ends paths, every vertex of [`PathDag::topological_order`]
//! is reachable from ENTRY, and each vertex's successor order is fixed and recorded
//! ([`PathDag::out_edges`]): real (or cut-replacement) edges in `EdgeId` order (= terminator order), then
//! surrogate edges in the `EdgeId` order of the cfg edge they stand for, then — at ENTRY only — the surrogates
//! that point back at ENTRY. The numbering (and hence every path number in every profile) is a function of this
//! order.
//!
//! # Vertices and edges
//! The DAG's vertices are the cfg's vertices (ENTRY = block 0, EXIT = `BlockId(num_blocks)`); blocks unreachable
//! from the entry have no edges and are left out of the topological order. Edge ids ([`DagEdgeId`]) are grouped
//! by source vertex in vertex order, each group in the recorded successor order, and the single
//! [`DagEdgeKind::ExitToEntry`] edge (EXIT→ENTRY, used only to close the spanning tree) comes last.
//!
//! # Loops whose header is the entry block
//! LLVM forbids branches to the entry block, but [`Cfg::new`] accepts them. A back edge w→0 gets the surrogate
//! ENTRY→ENTRY, a self-loop: a path may start with it ("the path began by re-entering block 0 through the back
//! edge") and then continues as any other path from ENTRY. Such self-loops are placed last in ENTRY's successor
//! order so that the greedy decoder never picks one twice (see `numbering.rs`).
//!
//! # Cuts for huge path spaces
//! [`PathDag::build_with_budget`] bounds NumPaths of every vertex by a budget (default
//! [`DEFAULT_PATH_BUDGET`] = 2^63, so path numbers fit an `i64`/`u64` register). A *cut* vertex v has each
//! real out-edge v→s (s ≠ EXIT) replaced by [`DagEdgeKind::SplitExit`] v→EXIT and [`DagEdgeKind::SplitEntry`]
//! ENTRY→s — instrumented exactly like a back edge — so NumPaths(v) drops to its out-degree. See
//! [`PathDag::build_with_budget`] for the deterministic choice of cut vertices.

use crate::dfs::DfsInfo;
use crate::graph::{Adjacency, BlockId, Cfg, EdgeId, EdgeKind};
use super::numbering::Numbering;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// The default bound on NumPaths(ENTRY) used by the pass: path numbers then fit a signed 64-bit register.
pub const DEFAULT_PATH_BUDGET: u128 = 1 << 63;

/// At most this many cuts are made by the greedy phase of [`PathDag::build_with_budget`] (each costs one
/// O(V + E) rebuild), which bounds its time on huge functions.
pub const MAX_GREEDY_CUTS: usize = 256;

crate::graph::typed_index!(
    /// An edge of a [`PathDag`]; ids are dense `0..dag.num_edges()` (at most 2·|E| + 1 of them).
    DagEdgeId,
    "d"
);

/// What a DAG edge stands for (old LLVM `PathNumbering.h`'s `EdgeType`, without the phony call edges).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DagEdgeKind {
    /// A cfg edge that is neither a back edge nor cut: `Branch`, `Return` or `Termination`.
    Real(EdgeId),
    /// BL96's dummy ENTRY→v for the back edge `back` = w→v: a path that starts at loop header v.
    EntrySurrogate {
        /// The back edge this surrogate replaces.
        back: EdgeId,
    },
    /// BL96's dummy w→EXIT for the back edge `back` = w→v: a path that ends by taking the back edge.
    ExitSurrogate {
        /// The back edge this surrogate replaces.
        back: EdgeId,
    },
    /// ENTRY→s for the cut edge `edge` = v→s: a path that starts after a cut (like a loop header).
    SplitEntry {
        /// The cut cfg edge.
        edge: EdgeId,
    },
    /// v→EXIT for the cut edge `edge` = v→s: a path that ends by taking the cut edge (like a back edge).
    SplitExit {
        /// The cut cfg edge.
        edge: EdgeId,
    },
    /// The DAG's EXIT→ENTRY edge; not a path edge, it only closes the spanning tree (forced into it).
    ExitToEntry,
}

impl DagEdgeKind {
    /// The cfg edge this DAG edge stands for (`None` for [`DagEdgeKind::ExitToEntry`]).
    pub fn cfg_edge(self) -> Option<EdgeId> {
        match self {
            DagEdgeKind::Real(e)
            | DagEdgeKind::EntrySurrogate { back: e }
            | DagEdgeKind::ExitSurrogate { back: e }
            | DagEdgeKind::SplitEntry { edge: e }
            | DagEdgeKind::SplitExit { edge: e } => Some(e),
            DagEdgeKind::ExitToEntry => None,
        }
    }

    /// Whether a path starting with this edge begins after a back edge or cut (EntrySurrogate or SplitEntry),
    /// i.e. in the middle of an invocation rather than at its start.
    pub fn starts_segment(self) -> bool {
        matches!(self, DagEdgeKind::EntrySurrogate { .. } | DagEdgeKind::SplitEntry { .. })
    }

    /// Whether a path ending with this edge ends by taking a back edge or cut (ExitSurrogate or SplitExit)
    /// rather than by leaving the function.
    pub fn ends_segment(self) -> bool {
        matches!(self, DagEdgeKind::ExitSurrogate { .. } | DagEdgeKind::SplitExit { .. })
    }
}

/// One directed DAG edge.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DagEdge {
    /// Source vertex.
    pub from: BlockId,
    /// Target vertex.
    pub to: BlockId,
    /// What the edge stands for.
    pub kind: DagEdgeKind,
}

/// How a cfg edge is represented in the DAG, i.e. what the instrumentation does when the edge executes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CfgEdgeRole {
    /// Not in the DAG: its source is unreachable from the entry. Never executes; needs no code.
    Unreachable,
    /// An ordinary DAG edge: `r += Inc(edge)`; if it enters EXIT, `count[r]++` afterwards.
    Real(DagEdgeId),
    /// A back edge: `count[r + Inc(exit)]++; r = Inc(entry)`.
    Back {
        /// Its [`DagEdgeKind::ExitSurrogate`] (w→EXIT).
        exit: DagEdgeId,
        /// Its [`DagEdgeKind::EntrySurrogate`] (ENTRY→v).
        entry: DagEdgeId,
    },
    /// A cut edge (see [`PathDag::build_with_budget`]): instrumented exactly like a back edge.
    Cut {
        /// Its [`DagEdgeKind::SplitExit`] (v→EXIT).
        exit: DagEdgeId,
        /// Its [`DagEdgeKind::SplitEntry`] (ENTRY→s).
        entry: DagEdgeId,
    },
    /// The cfg's EXIT→entry edge, represented by the DAG's [`DagEdgeKind::ExitToEntry`] edge.
    ExitToEntry(DagEdgeId),
}

impl CfgEdgeRole {
    /// For back and cut edges, the `(exit, entry)` surrogate pair that ends one path and starts the next.
    pub fn segment_break(self) -> Option<(DagEdgeId, DagEdgeId)> {
        match self {
            CfgEdgeRole::Back { exit, entry } | CfgEdgeRole::Cut { exit, entry } => Some((exit, entry)),
            _ => None,
        }
    }
}

/// Why [`PathDag::build_with_budget`] could not bound the path count.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DagError {
    /// Even with every cuttable vertex cut, NumPaths(ENTRY) (or a vertex's out-degree) exceeds the budget;
    /// e.g. an entry block with three returning successors has three paths whatever is cut.
    #[error("cannot bound the number of paths by {budget}: at least {achieved} remain after cutting")]
    BudgetUnreachable {
        /// The requested bound.
        budget: u128,
        /// NumPaths(ENTRY) of the most-cut DAG tried (`u128::MAX` if it overflowed).
        achieved: u128,
    },
    /// The [`DfsInfo`] does not describe this [`Cfg`] (the DAG it induces has a cycle); a pathprof bug.
    #[error("the DFS information does not belong to this CFG")]
    DfsMismatch,
}

/// The Ball–Larus DAG of one function; see the module docs for its shape and invariants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathDag {
    /// Vertices, EXIT included (= the cfg's `num_vertices`).
    num_vertices: usize,
    /// All DAG edges, grouped by source in vertex order; the EXIT→ENTRY edge last.
    edges: Vec<DagEdge>,
    /// Path edges out of each vertex, in the recorded successor order (EXIT→ENTRY excluded).
    out: Vec<Vec<DagEdgeId>>,
    /// Path edges into each vertex, in `DagEdgeId` order (EXIT→ENTRY excluded).
    inc: Vec<Vec<DagEdgeId>>,
    /// The DAG's vertices, ENTRY first, EXIT last, every path edge forward (ENTRY self-loops aside).
    topo: Vec<BlockId>,
    /// Whether each vertex is in the DAG (reachable block, or EXIT).
    in_dag: Vec<bool>,
    /// The DAG's EXIT→ENTRY edge.
    exit_to_entry: DagEdgeId,
    /// Per cfg edge, its representation.
    roles: Vec<CfgEdgeRole>,
    /// Back edges of reachable blocks, sorted.
    back_edges: Vec<EdgeId>,
    /// Cut cfg edges, sorted.
    cut_edges: Vec<EdgeId>,
    /// Cut vertices, sorted.
    cut_vertices: Vec<BlockId>,
}

impl PathDag {
    /// Builds the uncut BL96 DAG. `adj` must be `cfg.adjacency()` and `dfs` must be
    /// `dfs::depth_first(cfg, adj)`. Its path count may be astronomically large (2^k for k sequential
    /// diamonds); [`Numbering::compute`] reports overflow, [`PathDag::build_with_budget`] avoids it.
    pub fn build(cfg: &Cfg, adj: &Adjacency, dfs: &DfsInfo) -> PathDag {
        let no_cuts = vec![false; cfg.num_vertices()];
        assemble(cfg, adj, dfs, &no_cuts)
    }

    /// Builds the DAG and cuts it so that every vertex's NumPaths is at most `budget`.
    ///
    /// If the uncut DAG already fits, it is returned unchanged. Otherwise cut vertices are chosen in two
    /// deterministic phases, and the first cut set whose DAG fits is returned:
    ///
    /// 1. *Threshold passes* (old LLVM's rule, for large budgets): in reverse topological order, a vertex
    ///    v ≠ ENTRY whose NumPaths (over its already-decided successors) exceeds a threshold `t` and that has a
    ///    real out-edge to a block is cut, after which NumPaths(v) = out-degree(v). Each cut adds the NumPaths
    ///    of the cut edges' targets to ENTRY, so `t` starts at `budget` and is halved until ENTRY fits (at most
    ///    ~128 passes of O(V + E)). This keeps path segments as long as the budget allows.
    /// 2. *Greedy descent* (for small budgets, where phase 1 cuts too much): starting uncut, repeatedly cut the
    ///    vertex whose cut lowers NumPaths(ENTRY) the most — exactly `pf(v)·(NumPaths(v) − deg(v)) −
    ///    pf(ENTRY)·Σ NumPaths(cut targets)`, with `pf` the number of ENTRY→v prefixes — ties to the lower
    ///    vertex, at most [`MAX_GREEDY_CUTS`] cuts, stopping when no cut helps.
    ///
    /// The cuts are recorded in the DAG ([`PathDag::cut_edges`], [`PathDag::cut_vertices`],
    /// [`PathDag::cfg_edge_role`] = [`CfgEdgeRole::Cut`], edge kinds [`DagEdgeKind::SplitEntry`] /
    /// [`DagEdgeKind::SplitExit`]), so decoding stays exact and the CLI recomputes the same DAG from the cfg and
    /// the budget alone.
    ///
    /// Fails with [`DagError::BudgetUnreachable`] when neither phase reaches the budget. That is unavoidable
    /// for small budgets: the entry's own successors cannot be cut (three returning successors are three
    /// paths), and every segment boundary costs distinct path numbers. Fails with [`DagError::DfsMismatch`]
    /// if `dfs` does not belong to `cfg`.
    pub fn build_with_budget(cfg: &Cfg, adj: &Adjacency, dfs: &DfsInfo, budget: u128) -> Result<PathDag, DagError> {
        let base = PathDag::build(cfg, adj, dfs);
        let mut achieved = match fits(&base, budget) {
            Fit::Yes => return Ok(base),
            Fit::No(a) => a,
            Fit::NotADag => return Err(DagError::DfsMismatch),
        };
        let entry = base.entry();
        let exit = base.exit();
        let cuttable = |dag: &PathDag, v: BlockId| {
            v != entry
                && v != exit
                && dag.out_edges(v).iter().any(|&d| {
                    let e = dag.edges[d.index()];
                    matches!(e.kind, DagEdgeKind::Real(_)) && e.to != exit
                })
        };

        // Phase 1: threshold passes over the uncut DAG in reverse topological order. Cutting v only adds edges
        // out of ENTRY and into EXIT, so the uncut topological order stays valid for every cut DAG.
        let mut threshold = budget;
        let mut previous: Option<Vec<bool>> = None;
        loop {
            let mut cut = vec![false; base.num_vertices];
            let mut np: Vec<Option<u128>> = vec![Some(0); base.num_vertices];
            np[exit.index()] = Some(1);
            for &v in base.topo.iter().rev() {
                if v == exit || v == entry {
                    continue;
                }
                let outs = base.out_edges(v);
                let mut sum = Some(0u128);
                for &d in outs {
                    let to = base.edges[d.index()].to;
                    sum = sum.and_then(|s| np.get(to.index()).copied().flatten().and_then(|x| s.checked_add(x)));
                }
                if !matches!(sum, Some(s) if s <= threshold) && cuttable(&base, v) {
                    cut[v.index()] = true;
                    sum = Some(outs.len() as u128);
                }
                np[v.index()] = sum;
            }
            if previous.as_ref() != Some(&cut) {
                let dag = assemble(cfg, adj, dfs, &cut);
                match fits(&dag, budget) {
                    Fit::Yes => return Ok(dag),
                    Fit::No(a) => achieved = achieved.min(a),
                    Fit::NotADag => return Err(DagError::DfsMismatch),
                }
                previous = Some(cut);
            }
            if threshold <= 1 {
                break;
            }
            threshold /= 2;
        }

        // Phase 2: greedy descent on NumPaths(ENTRY), exact gains (saturating only beyond u128).
        let mut cut = vec![false; base.num_vertices];
        let mut dag = base;
        for _ in 0..MAX_GREEDY_CUTS {
            let (np, pf) = saturating_counts(&dag);
            let factor = pf[entry.index()];
            let mut best: Option<(u128, BlockId)> = None;
            for &v in &dag.topo {
                if cut[v.index()] || !cuttable(&dag, v) {
                    continue;
                }
                let outs = dag.out_edges(v);
                let saved = pf[v.index()].saturating_mul(np[v.index()].saturating_sub(outs.len() as u128));
                let restart: u128 = outs
                    .iter()
                    .map(|&d| dag.edges[d.index()])
                    .filter(|e| matches!(e.kind, DagEdgeKind::Real(_)) && e.to != exit)
                    .fold(0u128, |acc, e| acc.saturating_add(np[e.to.index()]));
                let cost = factor.saturating_mul(restart);
                if saved <= cost {
                    continue;
                }
                let gain = saved - cost;
                // Strictly better gain, ties to the lower vertex index.
                if !matches!(best, Some((g, w)) if g > gain || (g == gain && w < v)) {
                    best = Some((gain, v));
                }
            }
            let Some((_, v)) = best else { break };
            cut[v.index()] = true;
            dag = assemble(cfg, adj, dfs, &cut);
            match fits(&dag, budget) {
                Fit::Yes => return Ok(dag),
                Fit::No(a) => achieved = achieved.min(a),
                Fit::NotADag => return Err(DagError::DfsMismatch),
            }
        }
        Err(DagError::BudgetUnreachable { budget, achieved })
    }

    /// Number of vertices, EXIT included (the cfg's `num_vertices`).
    pub fn num_vertices(&self) -> usize {
        self.num_vertices
    }

    /// Number of DAG edges, the EXIT→ENTRY edge included.
    pub fn num_edges(&self) -> usize {
        self.edges.len()
    }

    /// ENTRY: block 0.
    pub fn entry(&self) -> BlockId {
        BlockId(0)
    }

    /// EXIT: the cfg's virtual exit vertex.
    pub fn exit(&self) -> BlockId {
        BlockId::from_index(self.num_vertices - 1)
    }

    /// One edge; `None` for an id outside the DAG (ids may come from untrusted files).
    pub fn get_edge(&self, e: DagEdgeId) -> Option<&DagEdge> {
        self.edges.get(e.index())
    }

    /// One edge. Panics on an id outside the DAG (a caller bug; use [`PathDag::get_edge`] for untrusted ids).
    pub fn edge(&self, e: DagEdgeId) -> &DagEdge {
        &self.edges[e.index()]
    }

    /// All edges in `DagEdgeId` order.
    pub fn edges(&self) -> &[DagEdge] {
        &self.edges
    }

    /// Edge ids in order.
    pub fn edge_ids(&self) -> impl Iterator<Item = DagEdgeId> + '_ {
        (0..self.edges.len()).map(DagEdgeId::from_index)
    }

    /// Path edges out of `v` in the recorded successor order — the order NumPaths/Val are computed in. The
    /// EXIT→ENTRY edge is not a path edge and is not listed. Empty for vertices outside the DAG.
    pub fn out_edges(&self, v: BlockId) -> &[DagEdgeId] {
        self.out.get(v.index()).map_or(&[], Vec::as_slice)
    }

    /// Path edges into `v` in `DagEdgeId` order (EXIT→ENTRY not listed).
    pub fn in_edges(&self, v: BlockId) -> &[DagEdgeId] {
        self.inc.get(v.index()).map_or(&[], Vec::as_slice)
    }

    /// The DAG's vertices in topological order: ENTRY first, EXIT last, unreachable blocks absent. Every path
    /// edge goes forward in it, except ENTRY's self-loops (surrogates of back edges into block 0).
    pub fn topological_order(&self) -> &[BlockId] {
        &self.topo
    }

    /// Whether `v` is a DAG vertex (a block reachable from the entry, or EXIT).
    pub fn contains_vertex(&self, v: BlockId) -> bool {
        self.in_dag.get(v.index()).copied().unwrap_or(false)
    }

    /// The DAG's EXIT→ENTRY edge (forced into every spanning tree; Val = 0).
    pub fn exit_to_entry(&self) -> DagEdgeId {
        self.exit_to_entry
    }

    /// How cfg edge `e` is represented (`Unreachable` also for ids outside the cfg).
    pub fn cfg_edge_role(&self, e: EdgeId) -> CfgEdgeRole {
        self.roles.get(e.index()).copied().unwrap_or(CfgEdgeRole::Unreachable)
    }

    /// Number of edges of the cfg this DAG was built from.
    pub fn num_cfg_edges(&self) -> usize {
        self.roles.len()
    }

    /// The back edges (of reachable blocks) replaced by surrogates, sorted by `EdgeId`.
    pub fn back_edges(&self) -> &[EdgeId] {
        &self.back_edges
    }

    /// The cut cfg edges replaced by SplitExit/SplitEntry, sorted by `EdgeId`; empty for an uncut DAG.
    pub fn cut_edges(&self) -> &[EdgeId] {
        &self.cut_edges
    }

    /// The cut vertices, sorted; empty for an uncut DAG.
    pub fn cut_vertices(&self) -> &[BlockId] {
        &self.cut_vertices
    }

    /// The `(from, to)` pairs of all edges in id order, the edge list for `spanning::max_spanning_tree_of`.
    pub fn endpoint_pairs(&self) -> Vec<(BlockId, BlockId)> {
        self.edges.iter().map(|e| (e.from, e.to)).collect()
    }
}

enum Fit {
    Yes,
    /// Does not fit; NumPaths(ENTRY) or `u128::MAX` on overflow.
    No(u128),
    NotADag,
}

fn fits(dag: &PathDag, budget: u128) -> Fit {
    match Numbering::compute(dag) {
        Ok(n) => {
            let max = dag.topo.iter().map(|&v| n.num_paths_from(v)).max().unwrap_or(0);
            if max <= budget {
                Fit::Yes
            } else {
                Fit::No(n.num_paths())
            }
        }
        Err(crate::ball_larus::numbering::NumberingError::TooManyPaths { .. }) => Fit::No(u128::MAX),
        Err(crate::ball_larus::numbering::NumberingError::NotADag { .. }) => Fit::NotADag,
    }
}

/// NumPaths and forward path counts pf (ENTRY→v prefixes, a leading ENTRY self-loop included) per vertex,
/// saturating at `u128::MAX`; the heuristic of the greedy cut phase (validity is always rechecked exactly).
fn saturating_counts(dag: &PathDag) -> (Vec<u128>, Vec<u128>) {
    let nv = dag.num_vertices;
    let (entry, exit) = (dag.entry(), dag.exit());
    let mut np = vec![0u128; nv];
    for &v in dag.topo.iter().rev() {
        if v == exit {
            np[v.index()] = 1;
            continue;
        }
        let outs = dag.out_edges(v);
        let plain = outs
            .iter()
            .map(|&d| dag.edges[d.index()].to)
            .filter(|&w| w != v)
            .fold(0u128, |acc, w| acc.saturating_add(np[w.index()]));
        let loops = outs.iter().filter(|&&d| dag.edges[d.index()].to == v).count() as u128;
        np[v.index()] = plain.saturating_mul(loops.saturating_add(1));
    }
    let mut pf = vec![0u128; nv];
    let loops = dag.out_edges(entry).iter().filter(|&&d| dag.edges[d.index()].to == entry).count() as u128;
    pf[entry.index()] = loops.saturating_add(1);
    for &v in &dag.topo {
        for &d in dag.out_edges(v) {
            let w = dag.edges[d.index()].to;
            if w != v {
                pf[w.index()] = pf[w.index()].saturating_add(pf[v.index()]);
            }
        }
    }
    (np, pf)
}

/// Sort key of a surrogate-class out-edge: the cfg edge it stands for, then entry-side before exit-side.
type SurrogateKey = (EdgeId, u8);

/// Builds the DAG for a given set of cut vertices (`cut[v]`; ENTRY and EXIT are never cut).
fn assemble(cfg: &Cfg, adj: &Adjacency, dfs: &DfsInfo, cut: &[bool]) -> PathDag {
    let nv = cfg.num_vertices();
    let ne = cfg.num_edges();
    let entry = cfg.entry();
    let exit = cfg.exit();
    let is_back = dfs.back_edge_mask(ne);
    let is_cut_vertex = |v: BlockId| v != entry && v != exit && cut.get(v.index()).copied().unwrap_or(false);
    let mut in_dag: Vec<bool> = (0..nv).map(|i| dfs.is_reachable(BlockId::from_index(i))).collect();
    in_dag[entry.index()] = true;
    in_dag[exit.index()] = true;

    // Classify every cfg edge.
    #[derive(Copy, Clone, PartialEq)]
    enum Class {
        Skip,
        ExitToEntry,
        Real,
        Back,
        Cut,
    }
    let class: Vec<Class> = cfg
        .edges()
        .iter()
        .enumerate()
        .map(|(i, e)| {
            if e.kind == EdgeKind::ExitToEntry {
                Class::ExitToEntry
            } else if !in_dag[e.from.index()] {
                Class::Skip
            } else if is_back[i] {
                Class::Back
            } else if is_cut_vertex(e.from) && e.to != exit {
                Class::Cut
            } else {
                Class::Real
            }
        })
        .collect();

    let mut edges: Vec<DagEdge> = Vec::with_capacity(ne + 2 * dfs.back_edges.len() + 1);
    let mut out: Vec<Vec<DagEdgeId>> = vec![Vec::new(); nv];
    let mut exit_side = vec![None; ne];
    let mut entry_side = vec![None; ne];
    let push = |edges: &mut Vec<DagEdge>, out: &mut Vec<Vec<DagEdgeId>>, e: DagEdge| -> DagEdgeId {
        let id = DagEdgeId::from_index(edges.len());
        out[e.from.index()].push(id);
        edges.push(e);
        id
    };

    for (vi, &present) in in_dag.iter().enumerate() {
        let v = BlockId::from_index(vi);
        if !present || v == exit {
            continue;
        }
        // Slot edges: real out-edges, or their SplitExit replacements, in EdgeId (terminator) order.
        let mut surrogates: Vec<(SurrogateKey, DagEdge)> = Vec::new();
        for &e in adj.out_edges(v) {
            let ce = cfg.edge(e);
            match class[e.index()] {
                Class::Real => {
                    push(&mut edges, &mut out, DagEdge { from: v, to: ce.to, kind: DagEdgeKind::Real(e) });
                }
                Class::Cut => {
                    let id = push(
                        &mut edges,
                        &mut out,
                        DagEdge { from: v, to: exit, kind: DagEdgeKind::SplitExit { edge: e } },
                    );
                    exit_side[e.index()] = Some(id);
                }
                Class::Back => {
                    surrogates
                        .push(((e, 1), DagEdge { from: v, to: exit, kind: DagEdgeKind::ExitSurrogate { back: e } }));
                }
                Class::Skip | Class::ExitToEntry => {}
            }
        }
        // ENTRY also gets every EntrySurrogate and SplitEntry; the self-loops go last.
        let mut self_loops: Vec<DagEdge> = Vec::new();
        if v == entry {
            for (i, ce) in cfg.edges().iter().enumerate() {
                let e = EdgeId::from_index(i);
                match class[i] {
                    Class::Back if ce.to == entry => {
                        self_loops.push(DagEdge {
                            from: entry,
                            to: entry,
                            kind: DagEdgeKind::EntrySurrogate { back: e },
                        });
                    }
                    Class::Back => {
                        surrogates.push((
                            (e, 0),
                            DagEdge { from: entry, to: ce.to, kind: DagEdgeKind::EntrySurrogate { back: e } },
                        ));
                    }
                    Class::Cut => {
                        surrogates.push((
                            (e, 0),
                            DagEdge { from: entry, to: ce.to, kind: DagEdgeKind::SplitEntry { edge: e } },
                        ));
                    }
                    _ => {}
                }
            }
        }
        surrogates.sort_by_key(|&(k, _)| k);
        for d in surrogates.into_iter().map(|(_, d)| d).chain(self_loops) {
            let id = push(&mut edges, &mut out, d);
            match d.kind {
                DagEdgeKind::ExitSurrogate { back: e } => exit_side[e.index()] = Some(id),
                DagEdgeKind::EntrySurrogate { back: e } | DagEdgeKind::SplitEntry { edge: e } => {
                    entry_side[e.index()] = Some(id)
                }
                _ => {}
            }
        }
    }
    let e2e = DagEdgeId::from_index(edges.len());
    edges.push(DagEdge { from: exit, to: entry, kind: DagEdgeKind::ExitToEntry });

    let mut inc: Vec<Vec<DagEdgeId>> = vec![Vec::new(); nv];
    let mut real_of = vec![None; ne];
    for (i, d) in edges.iter().enumerate() {
        let id = DagEdgeId::from_index(i);
        if d.kind != DagEdgeKind::ExitToEntry {
            inc[d.to.index()].push(id);
        }
        if let DagEdgeKind::Real(e) = d.kind {
            real_of[e.index()] = Some(id);
        }
    }

    let roles: Vec<CfgEdgeRole> = (0..ne)
        .map(|i| match (class[i], real_of[i], exit_side[i], entry_side[i]) {
            (Class::ExitToEntry, ..) => CfgEdgeRole::ExitToEntry(e2e),
            (Class::Real, Some(d), ..) => CfgEdgeRole::Real(d),
            (Class::Back, _, Some(exit), Some(entry)) => CfgEdgeRole::Back { exit, entry },
            (Class::Cut, _, Some(exit), Some(entry)) => CfgEdgeRole::Cut { exit, entry },
            _ => CfgEdgeRole::Unreachable,
        })
        .collect();
    let back_edges: Vec<EdgeId> = (0..ne).filter(|&i| class[i] == Class::Back).map(EdgeId::from_index).collect();
    let cut_edges: Vec<EdgeId> = (0..ne).filter(|&i| class[i] == Class::Cut).map(EdgeId::from_index).collect();
    let cut_vertices: Vec<BlockId> =
        (0..nv).map(BlockId::from_index).filter(|&v| in_dag[v.index()] && is_cut_vertex(v)).collect();

    let topo = topological_order(nv, entry, exit, &in_dag, &edges, &out);
    PathDag {
        num_vertices: nv,
        edges,
        out,
        inc,
        topo,
        in_dag,
        exit_to_entry: e2e,
        roles,
        back_edges,
        cut_edges,
        cut_vertices,
    }
}

/// Kahn's algorithm over the path edges (ENTRY self-loops ignored) with a FIFO seeded in vertex order; EXIT is
/// appended last. If the edges have a cycle (only with a `DfsInfo` of another graph) the leftover vertices are
/// appended in index order and [`Numbering::compute`] reports the violation.
fn topological_order(
    nv: usize,
    entry: BlockId,
    exit: BlockId,
    in_dag: &[bool],
    edges: &[DagEdge],
    out: &[Vec<DagEdgeId>],
) -> Vec<BlockId> {
    let mut indeg = vec![0usize; nv];
    for d in edges {
        if d.kind != DagEdgeKind::ExitToEntry && d.from != d.to {
            indeg[d.to.index()] += 1;
        }
    }
    let mut order = Vec::with_capacity(nv);
    let mut placed = vec![false; nv];
    let mut queue: VecDeque<BlockId> = VecDeque::new();
    // ENTRY first even if a bogus DfsInfo left an edge into it.
    queue.push_back(entry);
    placed[entry.index()] = true;
    for v in (0..nv).map(BlockId::from_index) {
        if v != entry && v != exit && in_dag[v.index()] && indeg[v.index()] == 0 {
            queue.push_back(v);
            placed[v.index()] = true;
        }
    }
    while let Some(v) = queue.pop_front() {
        order.push(v);
        for &d in &out[v.index()] {
            let w = edges[d.index()].to;
            if w == v {
                continue;
            }
            indeg[w.index()] = indeg[w.index()].saturating_sub(1);
            if indeg[w.index()] == 0 && !placed[w.index()] && w != exit {
                placed[w.index()] = true;
                queue.push_back(w);
            }
        }
    }
    for v in (0..nv).map(BlockId::from_index) {
        if in_dag[v.index()] && !placed[v.index()] && v != exit {
            placed[v.index()] = true;
            order.push(v);
        }
    }
    order.push(exit);
    order
}

