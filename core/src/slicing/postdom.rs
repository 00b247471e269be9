//! Postdominators of a [`ProgramGraph`]: the dominator tree of the reversed graph rooted at EXIT (Cooper–Harvey–
//! Kennedy, [`super::dominators`]), over every arc, dummy arcs included (thesis §5.2: postdominance is a property
//! of the augmented CFG).
//!
//! **Infinite loops.** A vertex the entry reaches but that cannot reach EXIT (a `for(;;)` without exit) has no
//! postdominator, which would leave control dependence undefined. As the thesis does for `loop-forever` (§6.4:
//! "treated as a while loop where the predicate is true … a dummy vertex with an outgoing false edge that is not
//! executable"), such a loop gets one never-taken virtual arc to EXIT, labelled [`Label::NEVER`], from its header:
//! the targets of depth-first back edges are visited outermost first (by preorder) and each one that still cannot
//! reach EXIT gets the arc. Every reachable vertex then reaches EXIT (each cycle of a sink region holds a back
//! edge), and nested loops inside an infinite loop get no arc of their own. The arcs are listed in
//! [`Postdominators::virtual_exits`]; they make the header a control-dependence parent of its loop body and make
//! slicing termination-insensitive there (thesis Theorem 6.1: a kept vertex may run longer in the slice, with the
//! program's values as a prefix). Vertices the entry does not reach and that cannot reach EXIT keep no
//! postdominator; they are never executed and take part in no control dependence.

use super::dominators::dominator_tree;
use super::program::{Label, ProgramGraph, StmtId};
use crate::dfs::depth_first;
use crate::graph::{BlockId, Cfg, Edge, EdgeKind};

/// Immediate postdominators of a [`ProgramGraph`], with the virtual exit arcs of its infinite loops.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Postdominators {
    ipd: Vec<Option<StmtId>>,
    virtual_exits: Vec<StmtId>,
}

impl Postdominators {
    /// Computes the postdominator tree of a validated graph ([`ProgramGraph::validate`]).
    pub fn compute(g: &ProgramGraph) -> Postdominators {
        let virtual_exits = virtual_exits(g);
        let n = g.num_vertices();
        // Reversed graph as a Cfg: EXIT -> block 0, ENTRY -> the Cfg's EXIT (block n-1), others v -> v-1.
        let rev = |v: StmtId| -> u32 {
            match v {
                ProgramGraph::EXIT => 0,
                ProgramGraph::ENTRY => (n - 1) as u32,
                v => v.0 - 1,
            }
        };
        let unrev = |b: BlockId| -> StmtId {
            match b.0 {
                0 => ProgramGraph::EXIT,
                x if x as usize == n - 1 => ProgramGraph::ENTRY,
                x => StmtId(x + 1),
            }
        };
        let mut edges = Vec::with_capacity(g.arcs().len() + virtual_exits.len() + 1);
        let reversed =
            g.arcs().iter().map(|a| (a.from, a.to)).chain(virtual_exits.iter().map(|&h| (h, ProgramGraph::EXIT)));
        for (i, (from, to)) in reversed.enumerate() {
            let kind = if from == ProgramGraph::ENTRY { EdgeKind::Return } else { EdgeKind::Branch { succ: i as u32 } };
            edges.push(Edge { from: BlockId(rev(to)), to: BlockId(rev(from)), kind });
        }
        edges.push(Edge { from: BlockId((n - 1) as u32), to: BlockId(0), kind: EdgeKind::ExitToEntry });
        let cfg = Cfg::new((n - 1) as u32, edges).expect("a validated ProgramGraph reverses into a valid Cfg");
        let dom = dominator_tree(&cfg, &cfg.adjacency());
        let mut ipd = vec![None; n];
        for b in cfg.vertices() {
            if let Some(d) = dom.idom(b) {
                ipd[unrev(b).index()] = Some(unrev(d));
            }
        }
        Postdominators { ipd, virtual_exits }
    }

    /// The immediate postdominator of `v`; `None` for EXIT and for vertices that reach EXIT by no path.
    pub fn ipd(&self, v: StmtId) -> Option<StmtId> {
        self.ipd[v.index()]
    }

    /// Whether `w` postdominates `v` (`w != v`, on every path from `v` to EXIT); walks the tree, O(depth).
    pub fn postdominates(&self, w: StmtId, v: StmtId) -> bool {
        let mut x = self.ipd(v);
        while let Some(y) = x {
            if y == w {
                return true;
            }
            x = self.ipd(y);
        }
        false
    }

    /// Whether `v` takes part in postdominance (EXIT, or a vertex with a path to EXIT, virtual arcs included).
    pub fn reaches_exit(&self, v: StmtId) -> bool {
        v == ProgramGraph::EXIT || self.ipd(v).is_some()
    }

    /// Headers of infinite loops given a never-taken arc to EXIT, labelled [`Label::NEVER`] (module docs).
    pub fn virtual_exits(&self) -> &[StmtId] {
        &self.virtual_exits
    }

    /// The never-taken arcs to EXIT, as (header, label, EXIT) triples, for algorithms that follow arcs.
    pub fn virtual_arcs(&self) -> impl Iterator<Item = (StmtId, Label, StmtId)> + '_ {
        self.virtual_exits.iter().map(|&h| (h, Label::NEVER, ProgramGraph::EXIT))
    }
}

/// Loop headers that need a virtual arc to EXIT, outermost first (module docs).
fn virtual_exits(g: &ProgramGraph) -> Vec<StmtId> {
    let n = g.num_vertices();
    let mut preds: Vec<Vec<StmtId>> = vec![Vec::new(); n];
    for a in g.arcs() {
        preds[a.to.index()].push(a.from);
    }
    let mut reaches = vec![false; n];
    let mark = |reaches: &mut Vec<bool>, start: StmtId| {
        let mut work = vec![start];
        reaches[start.index()] = true;
        while let Some(w) = work.pop() {
            for &p in &preds[w.index()] {
                if !reaches[p.index()] {
                    reaches[p.index()] = true;
                    work.push(p);
                }
            }
        }
    };
    mark(&mut reaches, ProgramGraph::EXIT);
    if reaches.iter().all(|&r| r) {
        return Vec::new();
    }
    // Forward graph as a Cfg: ENTRY -> block 0, EXIT -> the Cfg's EXIT (block n-1), others v -> v-1.
    let fwd = |v: StmtId| -> u32 {
        match v {
            ProgramGraph::ENTRY => 0,
            ProgramGraph::EXIT => (n - 1) as u32,
            v => v.0 - 1,
        }
    };
    let unfwd = |b: BlockId| -> StmtId {
        match b.0 {
            0 => ProgramGraph::ENTRY,
            x if x as usize == n - 1 => ProgramGraph::EXIT,
            x => StmtId(x + 1),
        }
    };
    let mut edges: Vec<Edge> = g
        .arcs()
        .iter()
        .map(|a| {
            let kind = if a.to == ProgramGraph::EXIT { EdgeKind::Return } else { EdgeKind::Branch { succ: a.label.0 } };
            Edge { from: BlockId(fwd(a.from)), to: BlockId(fwd(a.to)), kind }
        })
        .collect();
    edges.push(Edge { from: BlockId((n - 1) as u32), to: BlockId(0), kind: EdgeKind::ExitToEntry });
    let cfg = Cfg::new((n - 1) as u32, edges).expect("a validated ProgramGraph is a valid Cfg");
    let dfs = depth_first(&cfg, &cfg.adjacency());
    let mut pre = vec![usize::MAX; n];
    for (i, &b) in dfs.preorder.iter().enumerate() {
        pre[unfwd(b).index()] = i;
    }
    let mut headers: Vec<StmtId> = dfs.back_edges.iter().map(|&e| unfwd(cfg.edge(e).to)).collect();
    headers.sort_by_key(|h| pre[h.index()]);
    headers.dedup();
    let mut out = Vec::new();
    for h in headers {
        if !reaches[h.index()] {
            out.push(h);
            mark(&mut reaches, h);
        }
    }
    out
}
