//! The Ball–Larus path-profiling DAG: the CFG with every back edge replaced by two surrogate edges.
//!
//! Ball & Larus, "Efficient Path Profiling", MICRO-29, 1996, §3.3 ("Cyclic graphs"): each back edge w→v is
//! removed and replaced by a dummy edge ENTRY→v and a dummy edge w→EXIT, which turns the reachable part of the
//! CFG into a DAG whose ENTRY→EXIT paths are exactly the acyclic *path segments* an execution is cut into at
//! back edges. The same transformation applied to ordinary edges ("cuts", as in old LLVM's `SPLITEDGE`) bounds
//! the number of paths when the acyclic path space is too large for a counter index; [`super::budget`] chooses
//! them.
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

use crate::dfs::DfsInfo;
use crate::graph::{Adjacency, BlockId, Cfg, EdgeId, EdgeKind};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

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
    /// diamonds); [`Numbering::compute`](super::numbering::Numbering::compute) reports overflow,
    /// [`PathDag::build_with_budget`] avoids it.
    pub fn build(cfg: &Cfg, adj: &Adjacency, dfs: &DfsInfo) -> PathDag {
        let no_cuts = vec![false; cfg.num_vertices()];
        assemble(cfg, adj, dfs, &no_cuts, &no_cuts)
    }

    /// Builds the DAG cut at `cut_vertices` (out of range ones, ENTRY and EXIT are ignored): how a reader
    /// rebuilds a DAG whose cuts were chosen elsewhere ([`PathDag::build_with_budget_keeping`]) and recorded.
    pub fn build_with_cuts(cfg: &Cfg, adj: &Adjacency, dfs: &DfsInfo, cut_vertices: &[BlockId]) -> PathDag {
        PathDag::build_with_cuts_and_resets(cfg, adj, dfs, cut_vertices, &[])
    }

    /// [`PathDag::build_with_cuts`] with the loop headers `reset_headers` restarting every path that enters them
    /// (see `assemble`): how a reader rebuilds the DAG of an interprocedural procedure, whose resets the pass
    /// chose ([`super::resets::interproc_loop_resets`]) and recorded. Out-of-range vertices, ENTRY, EXIT and
    /// vertices no back edge enters change nothing, so any list from a file gives a DAG.
    pub fn build_with_cuts_and_resets(
        cfg: &Cfg,
        adj: &Adjacency,
        dfs: &DfsInfo,
        cut_vertices: &[BlockId],
        reset_headers: &[BlockId],
    ) -> PathDag {
        let mark = |vs: &[BlockId]| {
            let mut m = vec![false; cfg.num_vertices()];
            for v in vs {
                if let Some(c) = m.get_mut(v.index()) {
                    *c = true;
                }
            }
            m
        };
        assemble(cfg, adj, dfs, &mark(cut_vertices), &mark(reset_headers))
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

    /// Whether cfg edge `e` enters a reset loop ([`super::resets`]): it ends its path like a cut, but the next
    /// path starts with the loop's shared [`DagEdgeKind::EntrySurrogate`] rather than a cut's own `SplitEntry`.
    /// Reports tell the two apart, so that a reset loop's entry does not read as a cut of the path budget.
    pub fn enters_reset_loop(&self, e: EdgeId) -> bool {
        match self.cfg_edge_role(e) {
            CfgEdgeRole::Cut { entry, .. } => {
                self.get_edge(entry).is_some_and(|d| matches!(d.kind, DagEdgeKind::EntrySurrogate { .. }))
            }
            _ => false,
        }
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

/// Sort key of a surrogate-class out-edge: the cfg edge it stands for, then entry-side before exit-side.
type SurrogateKey = (EdgeId, u8);

/// Builds the DAG for a given set of cut vertices (`cut[v]`; ENTRY and EXIT are never cut).
/// Assembles the DAG cut at the vertices `cut` marks, with the loop headers `reset` marks restarting every path
/// that enters them ([`super::resets`]): each edge into such a header from outside its loop ends its path like
/// a cut (a [`DagEdgeKind::SplitExit`]), and it and every back edge into the header start the next path with
/// one shared [`DagEdgeKind::EntrySurrogate`] (the first back edge's), so every iteration starts at the same
/// path number.
pub(super) fn assemble(cfg: &Cfg, adj: &Adjacency, dfs: &DfsInfo, cut: &[bool], reset: &[bool]) -> PathDag {
    let nv = cfg.num_vertices();
    let ne = cfg.num_edges();
    let entry = cfg.entry();
    let exit = cfg.exit();
    let is_back = dfs.back_edge_mask(ne);
    let is_cut_vertex = |v: BlockId| v != entry && v != exit && cut.get(v.index()).copied().unwrap_or(false);
    // Per reset header, the back edge whose EntrySurrogate every path into it starts with.
    let mut shared_back: Vec<Option<EdgeId>> = vec![None; nv];
    for (i, e) in cfg.edges().iter().enumerate() {
        let to = e.to;
        if is_back[i] && to != entry && to != exit && reset.get(to.index()).copied().unwrap_or(false) {
            shared_back[to.index()].get_or_insert(EdgeId::from_index(i));
        }
    }
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
        /// An edge into a reset header from outside its loop: ends its path like a cut, starts none of its own.
        EntryCut,
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
            } else if e.kind != EdgeKind::Termination && shared_back[e.to.index()].is_some() {
                Class::EntryCut
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
                Class::Cut | Class::EntryCut => {
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
                    // Of the back edges into a reset header, only the shared one has a surrogate of its own.
                    Class::Back if shared_back[ce.to.index()].is_none_or(|s| s == e) => {
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
    // Every other path into a reset header starts with its shared surrogate.
    for (i, ce) in cfg.edges().iter().enumerate() {
        if matches!(class[i], Class::Back | Class::EntryCut) && entry_side[i].is_none() {
            if let Some(s) = shared_back[ce.to.index()] {
                entry_side[i] = entry_side[s.index()];
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
            (Class::Cut | Class::EntryCut, _, Some(exit), Some(entry)) => CfgEdgeRole::Cut { exit, entry },
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
