//! Flow dependence (thesis §5.2): `v →f w` iff `v` defines a location `x`, `w` uses `x`, and some path from `v`
//! to `w` has no intervening (strong) definition of `x`. Computed by reaching definitions — iterative dataflow
//! over bit sets of definition sites — along executable arcs only: dummy arcs are never traversed, so
//! dependences through them could never be realised (thesis §6.1.1, "dummy edges should be ignored when computing
//! flow dependences"). Weak definitions (`may_defs`) reach on but kill nothing. Direct dependences given by the
//! caller are added as they are.
//!
//! Memory is O(|vertices| · |definition sites| / 64) words: SSA values should come as direct dependences, so
//! that only variables and memory classes go through the dataflow.

use super::program::{ProgramGraph, StmtId};

/// Flow-dependence predecessors of every vertex (the definitions each vertex may read), sorted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowDeps {
    preds: Vec<Vec<StmtId>>,
}

impl FlowDeps {
    /// Computes the flow dependences of a validated graph.
    pub fn compute(g: &ProgramGraph) -> FlowDeps {
        let n = g.num_vertices();
        // Definition sites (vertex, location, strong), and per location its sites.
        let mut sites = Vec::new();
        let mut by_loc: std::collections::HashMap<_, Vec<usize>> = std::collections::HashMap::new();
        for v in g.vertex_ids() {
            let vx = g.vertex(v);
            for (&loc, strong) in vx.defs.iter().map(|l| (l, true)).chain(vx.may_defs.iter().map(|l| (l, false))) {
                by_loc.entry(loc).or_default().push(sites.len());
                sites.push((v, loc, strong));
            }
        }
        let words = sites.len().div_ceil(64).max(1);
        let mut gen = vec![vec![0u64; words]; n];
        let mut kill = vec![vec![0u64; words]; n];
        for (i, &(v, loc, strong)) in sites.iter().enumerate() {
            gen[v.index()][i / 64] |= 1 << (i % 64);
            if strong {
                for &j in &by_loc[&loc] {
                    kill[v.index()][j / 64] |= 1 << (j % 64);
                }
            }
        }
        // A vertex's own definitions are generated, not killed, by it.
        for v in 0..n {
            for w in 0..words {
                kill[v][w] &= !gen[v][w];
            }
        }
        let mut succs: Vec<Vec<StmtId>> = vec![Vec::new(); n];
        for a in g.arcs().iter().filter(|a| !a.dummy) {
            succs[a.from.index()].push(a.to);
        }
        let mut inn = vec![vec![0u64; words]; n];
        let mut queued = vec![true; n];
        let mut work: std::collections::VecDeque<usize> = (0..n).collect();
        let mut out = vec![0u64; words];
        while let Some(v) = work.pop_front() {
            queued[v] = false;
            for w in 0..words {
                out[w] = gen[v][w] | (inn[v][w] & !kill[v][w]);
            }
            for &s in &succs[v] {
                let s = s.index();
                let mut grew = false;
                for w in 0..words {
                    let next = inn[s][w] | out[w];
                    grew |= next != inn[s][w];
                    inn[s][w] = next;
                }
                if grew && !queued[s] {
                    queued[s] = true;
                    work.push_back(s);
                }
            }
        }
        let mut preds = vec![Vec::new(); n];
        for u in g.vertex_ids() {
            for loc in &g.vertex(u).uses {
                let Some(list) = by_loc.get(loc) else { continue };
                for &i in list {
                    if inn[u.index()][i / 64] & (1 << (i % 64)) != 0 {
                        preds[u.index()].push(sites[i].0);
                    }
                }
            }
        }
        for &(d, u) in g.direct_dependences() {
            preds[u.index()].push(d);
        }
        for l in preds.iter_mut() {
            l.sort_unstable();
            l.dedup();
        }
        FlowDeps { preds }
    }

    /// The vertices `v` with `v →f w`.
    pub fn preds(&self, w: StmtId) -> &[StmtId] {
        &self.preds[w.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slicing::program::{Label, Loc, Vertex};

    const X: Loc = Loc(0);

    /// ENTRY -> d1 (x := ...) -> d2 (*p := ..., may define x) -> j (jump, dummy arc to u2) -> u1 (uses x);
    /// u2 (uses x) is reached only through the dummy arc.
    fn graph(weak: bool) -> (ProgramGraph, [StmtId; 5]) {
        let mut g = ProgramGraph::new();
        let d1 = g.add_vertex(Vertex { defs: vec![X], ..Vertex::default() });
        let d2 = if weak {
            g.add_vertex(Vertex { may_defs: vec![X], ..Vertex::default() })
        } else {
            g.add_vertex(Vertex { defs: vec![X], ..Vertex::default() })
        };
        let j = g.add_vertex(Vertex::default());
        let u1 = g.add_vertex(Vertex { uses: vec![X], ..Vertex::default() });
        let u2 = g.add_vertex(Vertex { uses: vec![X], ..Vertex::default() });
        g.add_arc(ProgramGraph::ENTRY, Label::TRUE, d1, false);
        g.add_arc(d1, Label::TRUE, d2, false);
        g.add_arc(d2, Label::TRUE, j, false);
        g.add_arc(j, Label::TRUE, u1, false);
        g.add_arc(j, Label::FALSE, u2, true);
        g.add_arc(u1, Label::TRUE, ProgramGraph::EXIT, false);
        g.add_arc(u2, Label::TRUE, u1, false);
        g.validate().unwrap();
        (g, [d1, d2, j, u1, u2])
    }

    #[test]
    fn weak_definitions_kill_nothing_and_dummy_arcs_carry_nothing() {
        let (g, [d1, d2, _, u1, u2]) = graph(true);
        let f = FlowDeps::compute(&g);
        assert_eq!(f.preds(u1), &[d1, d2]);
        assert!(f.preds(u2).is_empty());
        let (g, [_, d2, _, u1, u2]) = graph(false);
        let f = FlowDeps::compute(&g);
        assert_eq!(f.preds(u1), &[d2]);
        assert!(f.preds(u2).is_empty());
    }

    #[test]
    fn direct_dependences_are_kept_as_given() {
        let (mut g, [d1, _, j, _, u2]) = graph(false);
        g.add_direct_dependence(d1, j);
        g.add_direct_dependence(d1, u2);
        let f = FlowDeps::compute(&g);
        assert_eq!(f.preds(j), &[d1]);
        assert_eq!(f.preds(u2), &[d1]);
    }
}
