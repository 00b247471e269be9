//! Program differencing (Ball's thesis ch. 7, Fig. 7.1): the vertices of NEW whose behaviour may differ from
//! their counterparts' in OLD.
//!
//! A vertex's behaviour is fixed by its minimal flow/path-projection FPP(G, v), the slice of [`Pdg::slice`]; two
//! versions' vertices behave alike when those projections are isomorphic, which the thesis shows is the same as
//! their *ordered* PDG slices being isomorphic: the PDG plus ordering edges between vertices with a common
//! control parent `(p, L)` — `a →or b` when `b` postdominates `a` (it comes after), else `b →or a` — restricted
//! to the slice's vertices. Here the isomorphism is the one the correspondence gives (a 1-1 partial map between
//! OLD's and NEW's vertices, e.g. by equal statement text): it must map the slice onto the slice and every
//! control (with its label), flow and ordering edge onto one. That is stricter than isomorphism in general, so
//! the result may report more vertices than the thesis's, never fewer — it is a sound "may differ" set.
//!
//! Fig. 7.1: DAV — vertices without a correspondent or whose incoming control or flow edges differ — and
//! everything reachable from them over control and flow edges differ; each remaining vertex is checked by
//! slice isomorphism, and if it differs it and its reachable set join.

use super::program::{Label, ProgramGraph, StmtId};
use super::slice::Pdg;
use std::collections::BTreeSet;

/// One version's ordered PDG.
struct Opdg {
    pdg: Pdg,
    /// Ordering edges (earlier, later) between siblings, sorted.
    order: BTreeSet<(StmtId, StmtId)>,
    n: usize,
}

impl Opdg {
    fn build(g: &ProgramGraph) -> Result<Opdg, super::ProgramGraphError> {
        let pdg = Pdg::build(g)?;
        let n = g.num_vertices();
        let mut order = BTreeSet::new();
        for p in g.vertex_ids() {
            let children = pdg.cd.children(p);
            for (i, &(la, a)) in children.iter().enumerate() {
                for &(lb, b) in &children[i + 1..] {
                    if la != lb || a == b {
                        continue;
                    }
                    if pdg.pd.postdominates(b, a) {
                        order.insert((a, b));
                    } else {
                        order.insert((b, a));
                    }
                }
            }
        }
        Ok(Opdg { pdg, order, n })
    }

    /// Incoming control edges `(parent, label)` and flow edges of `v`.
    fn incoming(&self, v: StmtId) -> (Vec<(StmtId, Label)>, Vec<StmtId>) {
        (self.pdg.cd.parents(v).to_vec(), self.pdg.flow.preds(v).to_vec())
    }

    /// Vertices reachable from `from` over control and flow edges, `from` included.
    fn forward(&self, from: &[StmtId], out: &mut [bool]) {
        let mut succ_flow: Vec<Vec<StmtId>> = vec![Vec::new(); self.n];
        for u in 0..self.n {
            for &d in self.pdg.flow.preds(StmtId::from_index(u)) {
                succ_flow[d.index()].push(StmtId::from_index(u));
            }
        }
        let mut work: Vec<StmtId> = from.iter().copied().filter(|v| !out[v.index()]).collect();
        for v in &work {
            out[v.index()] = true;
        }
        while let Some(v) = work.pop() {
            let ctrl = self.pdg.cd.children(v).iter().map(|&(_, w)| w);
            for w in ctrl.chain(succ_flow[v.index()].iter().copied()) {
                if !out[w.index()] {
                    out[w.index()] = true;
                    work.push(w);
                }
            }
        }
    }
}

/// Errors of [`diff`]: one of the graphs is malformed, or the correspondence is not 1-1.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DiffError {
    /// A graph failed [`ProgramGraph::validate`].
    #[error("{0}")]
    Graph(#[from] super::ProgramGraphError),
    /// Two NEW vertices correspond to one OLD vertex, or the map's length is not NEW's vertex count.
    #[error("the correspondence is not a 1-1 partial map over NEW's vertices")]
    NotOneToOne,
}

/// What [`diff`] says of one vertex of NEW; a reviewer reads `Changed` as "edited here" and `Affected` as "not
/// edited, but may compute something else because of an edit".
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Behaviour {
    /// Its ordered slice is isomorphic to its correspondent's: it behaves as in OLD.
    Same,
    /// It has no correspondent in OLD: an edited or new statement.
    Changed,
    /// It has a correspondent but may behave differently: its incoming control or flow edges differ, it depends
    /// on a differing vertex, or its ordered slice differs from its correspondent's.
    Affected,
}

impl Behaviour {
    /// Whether the vertex may behave differently from OLD (it is in Diff(NEW, OLD)).
    pub fn differs(self) -> bool {
        self != Behaviour::Same
    }
}

/// Diff(NEW, OLD): per vertex of `new`, whether its behaviour may differ from OLD's. `corr[v]` is the OLD vertex
/// that NEW's vertex `v` corresponds to (ENTRY to ENTRY and EXIT to EXIT are implied).
pub fn diff(old: &ProgramGraph, new: &ProgramGraph, corr: &[Option<StmtId>]) -> Result<Vec<Behaviour>, DiffError> {
    let (o, n) = (Opdg::build(old)?, Opdg::build(new)?);
    if corr.len() != new.num_vertices() {
        return Err(DiffError::NotOneToOne);
    }
    let mut map = corr.to_vec();
    map[ProgramGraph::ENTRY.index()] = Some(ProgramGraph::ENTRY);
    map[ProgramGraph::EXIT.index()] = Some(ProgramGraph::EXIT);
    let mut back = vec![None; old.num_vertices()];
    for (v, c) in map.iter().enumerate() {
        if let Some(c) = *c {
            if c.index() >= back.len() || back[c.index()].is_some() {
                return Err(DiffError::NotOneToOne);
            }
            back[c.index()] = Some(StmtId::from_index(v));
        }
    }
    let mapped = |v: StmtId| map[v.index()];
    let same_incoming = |v: StmtId, c: StmtId| {
        let ((nc, nf), (oc, of)) = (n.incoming(v), o.incoming(c));
        let mut nc: Vec<_> = nc.iter().map(|&(p, l)| (mapped(p), l)).collect();
        let mut nf: Vec<_> = nf.iter().map(|&d| mapped(d)).collect();
        let mut oc: Vec<_> = oc.iter().map(|&(p, l)| (Some(p), l)).collect();
        let mut of: Vec<_> = of.iter().map(|&d| Some(d)).collect();
        for l in [&mut nc, &mut oc] {
            l.sort_unstable();
        }
        for l in [&mut nf, &mut of] {
            l.sort_unstable();
        }
        nc == oc && nf == of
    };
    let vertices = || (2..new.num_vertices()).map(StmtId::from_index);
    let dav: Vec<StmtId> = vertices().filter(|&v| mapped(v).is_none_or(|c| !same_incoming(v, c))).collect();
    let mut differs = vec![false; new.num_vertices()];
    n.forward(&dav, &mut differs);
    for v in vertices() {
        if !differs[v.index()] && !same_slice(&o, &n, v, &map) {
            n.forward(&[v], &mut differs);
        }
    }
    let mut out: Vec<Behaviour> =
        differs.iter().map(|&d| if d { Behaviour::Affected } else { Behaviour::Same }).collect();
    for v in dav.into_iter().filter(|&v| mapped(v).is_none()) {
        out[v.index()] = Behaviour::Changed;
    }
    out[ProgramGraph::ENTRY.index()] = Behaviour::Same;
    out[ProgramGraph::EXIT.index()] = Behaviour::Same;
    Ok(out)
}

/// Whether NEW's ordered slice on `v` maps onto OLD's on `map[v]`: same vertices, same control, flow and
/// ordering edges among them.
fn same_slice(o: &Opdg, n: &Opdg, v: StmtId, map: &[Option<StmtId>]) -> bool {
    let Some(c) = map[v.index()] else { return false };
    let ns = n.pdg.slice(&[v]);
    let os = o.pdg.slice(&[c]);
    let nk: Vec<StmtId> = ns.kept().collect();
    let mut image: Vec<StmtId> = Vec::with_capacity(nk.len());
    for &x in &nk {
        match map[x.index()] {
            Some(y) if os.contains(y) => image.push(y),
            _ => return false,
        }
    }
    if image.len() != os.len() {
        return false;
    }
    for &x in &nk {
        let y = map[x.index()].expect("mapped above");
        let (nc, nf) = n.incoming(x);
        let (oc, of) = o.incoming(y);
        // Within the slice every control and flow predecessor of a kept vertex is kept (it is a closure).
        let mut a: Vec<_> = nc.iter().map(|&(p, l)| (map[p.index()], l)).collect();
        let mut b: Vec<_> = oc.iter().map(|&(p, l)| (Some(p), l)).collect();
        a.sort_unstable();
        b.sort_unstable();
        let mut fa: Vec<_> = nf.iter().map(|&d| map[d.index()]).collect();
        let mut fb: Vec<_> = of.iter().map(|&d| Some(d)).collect();
        fa.sort_unstable();
        fb.sort_unstable();
        if a != b || fa != fb {
            return false;
        }
    }
    let in_n = |e: &&(StmtId, StmtId)| ns.contains(e.0) && ns.contains(e.1);
    let in_o = |e: &&(StmtId, StmtId)| os.contains(e.0) && os.contains(e.1);
    let mut na: Vec<_> = n.order.iter().filter(in_n).map(|&(a, b)| (map[a.index()], map[b.index()])).collect();
    let mut oa: Vec<_> = o.order.iter().filter(in_o).map(|&(a, b)| (Some(a), Some(b))).collect();
    na.sort_unstable();
    oa.sort_unstable();
    na == oa
}
