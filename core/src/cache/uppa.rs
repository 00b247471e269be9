//! Unique-path partitioning (UPPA): Mueller & Whalley, "Efficient On-the-fly Analysis of Program Behavior and
//! Static Cache Simulation", SAS 1995, §2.1, Algorithm 1.
//!
//! A UP is a head-to-tail path whose instructions run in sequence *iff* its unique feature (a vertex or an edge
//! no other UP has) runs: one counter on the feature counts the whole UP, and an on-the-fly analysis can process
//! the UP's instructions at that point in execution order. Algorithm 1 marks heads and tails (entries, returns,
//! calls, loop boundaries), splits at a fork that follows a join, propagates the marks (a head's predecessors
//! are tails, a tail's successors heads — the two rules apply independently; the paper's listing nests the
//! second inside the first by mistake, notes B.3) and enumerates every head-to-tail path.
//!
//! pathprof's adaptation to its [`Cfg`] (virtual EXIT, multigraph): only `Branch` edges are CFG edges here; a
//! block with an edge to EXIT (return, or a call that may not return) has "no successor" in the paper's sense and
//! is a tail; the entry is a head even when a back edge enters it (the caller enters it); every back-edge target
//! is a head (so every cycle holds a tail and the searches terminate on irreducible graphs too); blocks the entry
//! does not reach are each a UP of their own (they never run). A block with parallel edges to one successor (a
//! `switch` with two cases to one block) is a tail, so no two UPs differ only in a parallel edge and a UP is
//! identified by its blocks.

use crate::dfs::depth_first;
use crate::graph::{BlockId, Cfg, EdgeId, EdgeKind};
use crate::loops::natural_loops;
use std::collections::HashMap;

/// Where a UP's counter goes: a vertex or an edge that no other UP of the partition contains (Definition 1.3).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum MeasurementPoint {
    /// A block only this UP contains.
    Block(BlockId),
    /// An edge only this UP contains.
    Edge(EdgeId),
}

/// One unique path: blocks head..tail joined by `edges` (`edges[i]` goes from `blocks[i]` to `blocks[i + 1]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UniquePath {
    /// The blocks in execution order, head first, tail last.
    pub blocks: Vec<BlockId>,
    /// The `Branch` edges between consecutive blocks.
    pub edges: Vec<EdgeId>,
    /// The UP's unique feature, where its counter goes.
    pub point: MeasurementPoint,
}

impl UniquePath {
    /// The head (first block).
    pub fn head(&self) -> BlockId {
        self.blocks[0]
    }
    /// The tail (last block).
    pub fn tail(&self) -> BlockId {
        *self.blocks.last().expect("a UP has a block")
    }
}

/// A unique-path partitioning of one function; UPs are numbered by their position in [`Uppa::paths`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Uppa {
    paths: Vec<UniquePath>,
    by_blocks: HashMap<Vec<BlockId>, usize>,
    starting_at: Vec<Vec<usize>>,
}

impl Uppa {
    /// Builds a partition from paths given as block sequences (edges are looked up as the first `Branch` edge
    /// between consecutive blocks), choosing measurement points. For tests and hand-made partitions; returns
    /// `None` if consecutive blocks are not joined by an edge or a path has no unique feature.
    pub fn from_block_paths(cfg: &Cfg, paths: &[Vec<BlockId>]) -> Option<Uppa> {
        let adj = cfg.adjacency();
        let mut raw = Vec::new();
        for p in paths {
            let mut edges = Vec::new();
            for w in p.windows(2) {
                let e = adj.out_edges(w[0]).iter().copied().find(|&e| {
                    let ed = cfg.edge(e);
                    ed.to == w[1] && matches!(ed.kind, EdgeKind::Branch { .. })
                })?;
                edges.push(e);
            }
            raw.push((p.clone(), edges));
        }
        Uppa::with_points(cfg, raw)
    }

    fn with_points(cfg: &Cfg, raw: Vec<(Vec<BlockId>, Vec<EdgeId>)>) -> Option<Uppa> {
        let mut vcount = vec![0u32; cfg.num_vertices()];
        let mut ecount = vec![0u32; cfg.num_edges()];
        for (bs, es) in &raw {
            for b in bs {
                vcount[b.index()] += 1;
            }
            for e in es {
                ecount[e.index()] += 1;
            }
        }
        let mut paths = Vec::with_capacity(raw.len());
        for (blocks, edges) in raw {
            let point = match blocks.iter().find(|b| vcount[b.index()] == 1) {
                Some(&b) => MeasurementPoint::Block(b),
                None => MeasurementPoint::Edge(*edges.iter().find(|e| ecount[e.index()] == 1)?),
            };
            paths.push(UniquePath { blocks, edges, point });
        }
        let mut by_blocks = HashMap::new();
        let mut starting_at = vec![Vec::new(); cfg.num_blocks()];
        for (i, p) in paths.iter().enumerate() {
            by_blocks.insert(p.blocks.clone(), i);
            starting_at[p.head().index()].push(i);
        }
        Some(Uppa { paths, by_blocks, starting_at })
    }

    /// The UPs, in the order Algorithm 1 found them (heads in block order, then successor order).
    pub fn paths(&self) -> &[UniquePath] {
        &self.paths
    }

    /// The UP whose blocks are exactly `blocks` (how a walk of the CFG is cut into UP executions).
    pub fn find(&self, blocks: &[BlockId]) -> Option<usize> {
        self.by_blocks.get(blocks).copied()
    }

    /// The UPs whose head is `b` (empty unless `b` is a head).
    pub fn starting_at(&self, b: BlockId) -> &[usize] {
        self.starting_at.get(b.index()).map_or(&[], Vec::as_slice)
    }

    /// Heads and tails as per-block flags `(is_head, is_tail)`.
    pub fn marks(&self, num_blocks: usize) -> (Vec<bool>, Vec<bool>) {
        let mut h = vec![false; num_blocks];
        let mut t = vec![false; num_blocks];
        for p in &self.paths {
            h[p.head().index()] = true;
            t[p.tail().index()] = true;
        }
        (h, t)
    }
}

/// The per-block partition UPPA_b of Theorem 2 (one UP per block): the baseline of one point per block.
pub fn per_block_uppa(cfg: &Cfg) -> Uppa {
    let raw = (0..cfg.num_blocks()).map(|b| (vec![BlockId::from_index(b)], Vec::new())).collect();
    Uppa::with_points(cfg, raw).expect("singleton paths are unique")
}

/// Branch-edge adjacency of the real blocks (the graph Algorithm 1 sees).
struct Branches {
    succ: Vec<Vec<(EdgeId, BlockId)>>,
    pred: Vec<Vec<BlockId>>,
    leaves: Vec<bool>,
}

impl Branches {
    fn new(cfg: &Cfg) -> Branches {
        let n = cfg.num_blocks();
        let mut succ = vec![Vec::new(); n];
        let mut pred = vec![Vec::new(); n];
        let mut leaves = vec![false; n];
        for (i, e) in cfg.edges().iter().enumerate() {
            match e.kind {
                EdgeKind::Branch { .. } => {
                    succ[e.from.index()].push((EdgeId::from_index(i), e.to));
                    pred[e.to.index()].push(e.from);
                }
                EdgeKind::Return | EdgeKind::Termination => leaves[e.from.index()] = true,
                EdgeKind::ExitToEntry => {}
            }
        }
        Branches { succ, pred, leaves }
    }
}

/// Algorithm 1: a small UPPA of `cfg`, where `is_call[b]` says block `b` ends with a call (Definition 1.6:
/// calls end UPs). Deterministic; iterative (no recursion on deep graphs).
pub fn small_uppa(cfg: &Cfg, is_call: &[bool]) -> Uppa {
    let n = cfg.num_blocks();
    let g = Branches::new(cfg);
    let adj = cfg.adjacency();
    let dfs = depth_first(cfg, &adj);
    let loops = natural_loops(cfg, &adj, &dfs);
    let mut head = vec![false; n];
    let mut tail = vec![false; n];

    head[0] = true;
    for v in 0..n {
        let reachable = dfs.is_reachable(BlockId::from_index(v));
        if g.pred[v].is_empty() || !reachable {
            head[v] = true;
        }
        let mut targets: Vec<BlockId> = g.succ[v].iter().map(|&(_, w)| w).collect();
        targets.sort_unstable();
        let parallel = targets.windows(2).any(|w| w[0] == w[1]);
        if g.succ[v].is_empty() || g.leaves[v] || is_call.get(v).copied().unwrap_or(false) || !reachable || parallel {
            tail[v] = true;
        }
    }
    for &e in &dfs.back_edges {
        let t = cfg.edge(e).to;
        if t != cfg.exit() {
            head[t.index()] = true;
        }
    }
    for l in &loops.loops {
        for (v, outs) in g.succ.iter().enumerate() {
            let vin = l.contains(BlockId::from_index(v));
            for &(_, w) in outs {
                let win = l.contains(w);
                if !vin && win {
                    head[w.index()] = true; // loop header
                }
                if vin && !win {
                    tail[v] = true; // loop exit
                }
            }
        }
    }

    let mut done = vec![false; n];
    loop {
        propagate(&g, &mut head, &mut tail);
        let mut change = false;
        for v in 0..n {
            if head[v] && !done[v] && !tail[v] {
                change = true;
                done[v] = true;
                find_fork_after_join(&g, v, &mut tail);
            }
        }
        if !change {
            break;
        }
    }

    let mut raw = Vec::new();
    for (h, _) in head.iter().enumerate().filter(|(_, &is_head)| is_head) {
        find_paths(&g, BlockId::from_index(h), &tail, &mut raw);
    }
    Uppa::with_points(cfg, raw).expect("Algorithm 1 yields unique features (Theorem 4)")
}

/// `propagate_heads_and_tails` to a fixpoint: a head's predecessors become tails, a tail's successors heads.
fn propagate(g: &Branches, head: &mut [bool], tail: &mut [bool]) {
    let mut work: Vec<usize> = (0..head.len()).filter(|&v| head[v] || tail[v]).collect();
    while let Some(v) = work.pop() {
        if head[v] {
            for &u in &g.pred[v] {
                if !tail[u.index()] {
                    tail[u.index()] = true;
                    work.push(u.index());
                }
            }
        }
        if tail[v] {
            for &(_, w) in &g.succ[v] {
                if !head[w.index()] {
                    head[w.index()] = true;
                    work.push(w.index());
                }
            }
        }
    }
}

/// `recursive_find_fork_after_join` from every successor of head `h`, depth first in successor order: a vertex
/// reached after a join that forks becomes a tail. A vertex revisited with the same `joined` flag is skipped
/// (its visit can only repeat the first one's marks), which keeps the search linear.
fn find_fork_after_join(g: &Branches, h: usize, tail: &mut [bool]) {
    let mut seen = [vec![false; tail.len()], vec![false; tail.len()]];
    let mut stack: Vec<(usize, bool)> = g.succ[h].iter().rev().map(|&(_, w)| (w.index(), false)).collect();
    while let Some((v, joined)) = stack.pop() {
        if tail[v] || seen[joined as usize][v] {
            continue;
        }
        seen[joined as usize][v] = true;
        let joined = joined || g.pred[v].len() > 1;
        if joined && g.succ[v].len() > 1 {
            tail[v] = true;
            continue;
        }
        stack.extend(g.succ[v].iter().rev().map(|&(_, w)| (w.index(), joined)));
    }
}

/// `recursive_find_paths(h, {h})`: every path from head `h` to the first tail.
fn find_paths(g: &Branches, h: BlockId, tail: &[bool], out: &mut Vec<(Vec<BlockId>, Vec<EdgeId>)>) {
    let mut stack = vec![(vec![h], Vec::new())];
    while let Some((blocks, edges)) = stack.pop() {
        let v = *blocks.last().expect("nonempty");
        if tail[v.index()] {
            out.push((blocks, edges));
            continue;
        }
        for &(e, w) in g.succ[v.index()].iter().rev() {
            let mut b = blocks.clone();
            b.push(w);
            let mut es = edges.clone();
            es.push(e);
            stack.push((b, es));
        }
    }
}
