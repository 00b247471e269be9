//! Control dependence (thesis §5.2): `v →c^L w` iff `w` postdominates the L-branch of `v` (is its L-successor or
//! postdominates it) and `w` does not postdominate `v`.
//!
//! Computed arc by arc as in Ferrante–Ottenstein–Warren and Cytron et al. (the postdominance-frontier relation:
//! `v →c^L w` iff `v` is in the postdominance frontier of `w` through its L-arc): for the arc `v -L-> s`, the
//! vertices control dependent on `(v, L)` are `s` and its postdominator-tree ancestors up to, not including,
//! `ipd(v)` (which is always an ancestor of `s`). Dummy arcs count — that is what makes a jump a
//! control-dependence parent (thesis §6.1.1) — and so do the virtual exit arcs of infinite loops, which reach
//! EXIT directly and so add no dependence of their own. O(|arcs| + |dependences|).

use super::postdom::Postdominators;
use super::program::{Label, ProgramGraph, StmtId};

/// The control-dependence graph: per vertex, its parents `(v, L)` and children `(L, w)`, sorted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControlDeps {
    parents: Vec<Vec<(StmtId, Label)>>,
    children: Vec<Vec<(Label, StmtId)>>,
}

impl ControlDeps {
    /// Computes the control dependences of `g` from its postdominators `pd`.
    pub fn compute(g: &ProgramGraph, pd: &Postdominators) -> ControlDeps {
        let n = g.num_vertices();
        let mut parents = vec![Vec::new(); n];
        let mut children = vec![Vec::new(); n];
        for a in g.arcs() {
            if !pd.reaches_exit(a.from) || !pd.reaches_exit(a.to) {
                continue;
            }
            let stop = pd.ipd(a.from);
            let mut runner = Some(a.to);
            while runner != stop {
                let Some(w) = runner else { break };
                if w == ProgramGraph::EXIT {
                    break;
                }
                parents[w.index()].push((a.from, a.label));
                children[a.from.index()].push((a.label, w));
                runner = pd.ipd(w);
            }
        }
        for l in parents.iter_mut() {
            l.sort_unstable();
            l.dedup();
        }
        for l in children.iter_mut() {
            l.sort_unstable();
            l.dedup();
        }
        ControlDeps { parents, children }
    }

    /// The `(v, L)` with `v →c^L w`.
    pub fn parents(&self, w: StmtId) -> &[(StmtId, Label)] {
        &self.parents[w.index()]
    }

    /// The `(L, w)` with `v →c^L w`.
    pub fn children(&self, v: StmtId) -> &[(Label, StmtId)] {
        &self.children[v.index()]
    }

    /// Whether `v →c^L w` for some label.
    pub fn depends(&self, v: StmtId, w: StmtId) -> bool {
        self.parents[w.index()].iter().any(|&(p, _)| p == v)
    }

    /// transCD(v): the vertices reflexively and transitively control dependent on `v`, sorted.
    pub fn trans_cd(&self, v: StmtId) -> Vec<StmtId> {
        let mut seen = vec![false; self.children.len()];
        let mut work = vec![v];
        seen[v.index()] = true;
        while let Some(x) = work.pop() {
            for &(_, w) in &self.children[x.index()] {
                if !seen[w.index()] {
                    seen[w.index()] = true;
                    work.push(w);
                }
            }
        }
        (0..seen.len()).filter(|&i| seen[i]).map(StmtId::from_index).collect()
    }
}
