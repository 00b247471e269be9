//! Slice(P, c), thesis §6.1.1: the backward closure over control and flow dependences of the augmented PDG from
//! the criterion, and the CFG of the slice — what a code rewriter needs to rebuild an executable program from the
//! kept vertices.
//!
//! The slice's CFG is the thesis's vertex elimination (§6.1.2.1 footnote: `a -L1-> x -L2-> b` becomes
//! `a -L1-> b`, then `x` goes). Because the kept set is closed under control dependence, eliminating every other
//! vertex gives each kept vertex exactly one successor per label (Lemma 6.4) and the result is the minimal
//! flow/path-projection containing the criterion (Theorem 6.2), whose kept vertices compute the same value
//! sequences as in the program (Theorem 6.1). That successor is the nearest kept vertex on the postdominator-tree
//! path from the original successor, inclusive ([`Slice::successors`], linear time); [`eliminate`] computes the
//! elimination by its definition, by search, and reports a vertex left with two L-successors — for checking, and
//! for sets that are not closed under control dependence.

use super::control::ControlDeps;
use super::flow::FlowDeps;
use super::postdom::Postdominators;
use super::program::{Arc, Label, ProgramGraph, ProgramGraphError, StmtId};

/// The program dependence graph of a [`ProgramGraph`] (thesis §5.2: control and flow dependences), with the
/// postdominator tree slices are repaired with.
#[derive(Clone, Debug)]
pub struct Pdg {
    /// Postdominators (with the virtual exit arcs of infinite loops).
    pub pd: Postdominators,
    /// Control dependences, dummy arcs included.
    pub cd: ControlDeps,
    /// Flow dependences, along executable arcs only.
    pub flow: FlowDeps,
    arcs: Vec<Arc>,
    num_vertices: usize,
}

/// One arc of a slice's CFG: kept vertex `from`'s `label` successor, after vertex elimination.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct SliceArc {
    /// The label of the original arc.
    pub label: Label,
    /// The kept vertex control reaches next (EXIT included).
    pub to: StmtId,
    /// The original arc is a jump's dummy continuation: keep it out of the emitted code.
    pub dummy: bool,
}

/// The result of [`Pdg::slice`]: the kept vertices and the slice's CFG over them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slice {
    kept: Vec<bool>,
    succs: Vec<Vec<SliceArc>>,
}

impl Pdg {
    /// Validates `g` and computes its postdominators, control and flow dependences.
    pub fn build(g: &ProgramGraph) -> Result<Pdg, ProgramGraphError> {
        g.validate()?;
        let pd = Postdominators::compute(g);
        let cd = ControlDeps::compute(g, &pd);
        let flow = FlowDeps::compute(g);
        Ok(Pdg { pd, cd, flow, arcs: g.arcs().to_vec(), num_vertices: g.num_vertices() })
    }

    /// The backward slice from `criteria` (all of them at once), with ENTRY and EXIT; criteria must be vertices.
    pub fn slice(&self, criteria: &[StmtId]) -> Slice {
        let n = self.num_vertices;
        let mut kept = vec![false; n];
        let mut work = Vec::new();
        for &c in criteria.iter().chain(&[ProgramGraph::ENTRY, ProgramGraph::EXIT]) {
            if !kept[c.index()] {
                kept[c.index()] = true;
                work.push(c);
            }
        }
        while let Some(w) = work.pop() {
            let cps = self.cd.parents(w).iter().map(|&(v, _)| v);
            for v in cps.chain(self.flow.preds(w).iter().copied()) {
                if !kept[v.index()] {
                    kept[v.index()] = true;
                    work.push(v);
                }
            }
        }
        self.project(kept)
    }

    /// The slice's CFG for a kept set closed under control dependence (what [`Pdg::slice`] returns): each kept
    /// vertex's successors are the nearest kept postdominators of its original successors. `kept` has one entry
    /// per vertex and must hold ENTRY and EXIT; for other sets, check with [`eliminate`].
    pub fn project(&self, kept: Vec<bool>) -> Slice {
        let n = kept.len();
        // nearest[v]: the first kept vertex on v's postdominator-tree path, v included.
        let mut nearest: Vec<Option<StmtId>> = vec![None; n];
        let mut done = vec![false; n];
        let mut chain = Vec::new();
        for v in 0..n {
            let mut x = Some(StmtId::from_index(v));
            let mut found = None;
            while let Some(y) = x {
                if done[y.index()] {
                    found = nearest[y.index()];
                    break;
                }
                if kept[y.index()] {
                    found = Some(y);
                    break;
                }
                chain.push(y);
                x = self.pd.ipd(y);
            }
            if let Some(y) = x {
                done[y.index()] = true;
                nearest[y.index()] = found;
            }
            for y in chain.drain(..) {
                done[y.index()] = true;
                nearest[y.index()] = found;
            }
        }
        let mut succs = vec![Vec::new(); n];
        for a in &self.arcs {
            if kept[a.from.index()] {
                if let Some(to) = nearest[a.to.index()] {
                    succs[a.from.index()].push(SliceArc { label: a.label, to, dummy: a.dummy });
                }
            }
        }
        for l in succs.iter_mut() {
            l.sort_by_key(|s| s.label);
        }
        Slice { kept, succs }
    }
}

impl Slice {
    /// Whether `v` is in the slice.
    pub fn contains(&self, v: StmtId) -> bool {
        self.kept[v.index()]
    }

    /// The kept vertices, ENTRY and EXIT included, in id order.
    pub fn kept(&self) -> impl Iterator<Item = StmtId> + '_ {
        (0..self.kept.len()).filter(|&i| self.kept[i]).map(StmtId::from_index)
    }

    /// Number of kept vertices, ENTRY and EXIT included.
    pub fn len(&self) -> usize {
        self.kept.iter().filter(|&&k| k).count()
    }

    /// Never true: ENTRY and EXIT are always kept.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// A kept vertex's successors in the slice, one per original out-arc, by label (empty for unkept vertices).
    pub fn successors(&self, v: StmtId) -> &[SliceArc] {
        &self.succs[v.index()]
    }

    /// A kept vertex's `label` successor in the slice.
    pub fn successor(&self, v: StmtId, label: Label) -> Option<StmtId> {
        self.succs[v.index()].iter().find(|s| s.label == label).map(|s| s.to)
    }
}

/// A vertex that vertex elimination leaves with two successors under one label: the kept set is not closed
/// under control dependence (thesis Lemma 6.5), so it is no CFG.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("eliminating leaves {vertex} with {} successors labelled {label:?}", targets.len())]
pub struct NotACfg {
    /// The kept vertex.
    pub vertex: StmtId,
    /// The label with several successors.
    pub label: Label,
    /// The distinct kept vertices reached.
    pub targets: Vec<StmtId>,
}

/// Vertex elimination by its definition: for each kept vertex and out-arc, the kept vertices reached through
/// unkept ones (virtual exit arcs included). O(|kept| · |arcs|); the reference [`Pdg::project`] is checked
/// against. Returns per vertex its slice arcs, or the first vertex left with two L-successors.
pub fn eliminate(g: &ProgramGraph, pd: &Postdominators, kept: &[bool]) -> Result<Vec<Vec<SliceArc>>, NotACfg> {
    let n = g.num_vertices();
    let mut next: Vec<Vec<StmtId>> = vec![Vec::new(); n];
    for a in g.arcs() {
        next[a.from.index()].push(a.to);
    }
    for (h, _, x) in pd.virtual_arcs() {
        next[h.index()].push(x);
    }
    let mut out = vec![Vec::new(); n];
    let mut seen = vec![usize::MAX; n];
    for (stamp, a) in g.arcs().iter().enumerate() {
        if !kept[a.from.index()] {
            continue;
        }
        let mut found = Vec::new();
        let mut work = vec![a.to];
        seen[a.to.index()] = stamp;
        while let Some(x) = work.pop() {
            if kept[x.index()] {
                found.push(x);
                continue;
            }
            for &y in &next[x.index()] {
                if seen[y.index()] != stamp {
                    seen[y.index()] = stamp;
                    work.push(y);
                }
            }
        }
        found.sort_unstable();
        match found.len() {
            0 => {}
            1 => out[a.from.index()].push(SliceArc { label: a.label, to: found[0], dummy: a.dummy }),
            _ => return Err(NotACfg { vertex: a.from, label: a.label, targets: found }),
        }
    }
    for l in out.iter_mut() {
        l.sort_by_key(|s| s.label);
    }
    Ok(out)
}
