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
use std::collections::{BTreeSet, HashMap};

/// One version's ordered PDG. The ordering edges are kept implicit — per sibling group `(p, L)` its children in
/// order, plus postdominance in O(1) — because a group of k siblings has k² of them (straight-line code puts
/// thousands of statements under one parent: bzip2's compress.c took 15 minutes with explicit edges).
struct Opdg {
    pdg: Pdg,
    /// Per vertex, its interval in a depth-first walk of the postdominator tree: `w` postdominates `v` iff
    /// `w`'s interval strictly contains `v`'s.
    enter: Vec<u32>,
    leave: Vec<u32>,
    /// The sibling groups: each control parent's children under one label, in children order.
    groups: Vec<Vec<StmtId>>,
    /// `(parent, label)` → index into `groups`.
    group_of: HashMap<(StmtId, Label), usize>,
    n: usize,
}

impl Opdg {
    fn build(g: &ProgramGraph) -> Result<Opdg, super::ProgramGraphError> {
        let pdg = Pdg::build(g)?;
        let n = g.num_vertices();
        let mut tree: Vec<Vec<StmtId>> = vec![Vec::new(); n];
        let mut roots = Vec::new();
        for v in g.vertex_ids() {
            match pdg.pd.ipd(v) {
                Some(p) => tree[p.index()].push(v),
                None => roots.push(v),
            }
        }
        let (mut enter, mut leave) = (vec![0u32; n], vec![0u32; n]);
        let mut clock = 0u32;
        for r in roots {
            let mut stack = vec![(r, 0usize)];
            enter[r.index()] = clock;
            clock += 1;
            while let Some((v, k)) = stack.pop() {
                if let Some(&c) = tree[v.index()].get(k) {
                    stack.push((v, k + 1));
                    enter[c.index()] = clock;
                    clock += 1;
                    stack.push((c, 0));
                } else {
                    leave[v.index()] = clock;
                    clock += 1;
                }
            }
        }
        let mut groups = Vec::new();
        let mut group_of = HashMap::new();
        for p in g.vertex_ids() {
            for &(l, c) in pdg.cd.children(p) {
                let k = *group_of.entry((p, l)).or_insert_with(|| {
                    groups.push(Vec::new());
                    groups.len() - 1
                });
                if !groups[k].contains(&c) {
                    groups[k].push(c);
                }
            }
        }
        Ok(Opdg { pdg, enter, leave, groups, group_of, n })
    }

    /// Whether `w` postdominates `v` (`w != v`).
    fn pd(&self, w: StmtId, v: StmtId) -> bool {
        let (w, v) = (w.index(), v.index());
        w != v && self.enter[w] < self.enter[v] && self.leave[v] < self.leave[w]
    }

    /// The ordering edge between the siblings at positions `i < j` of a group, (earlier, later): `b` after `a`
    /// when it postdominates `a`, else before.
    fn ordered(&self, group: &[StmtId], i: usize, j: usize) -> (StmtId, StmtId) {
        let (a, b) = (group[i], group[j]);
        if self.pd(b, a) {
            (a, b)
        } else {
            (b, a)
        }
    }

    /// All ordering edges (quadratic: for the reference algorithm of the tests).
    #[cfg(test)]
    fn order_edges(&self) -> BTreeSet<(StmtId, StmtId)> {
        let mut out = BTreeSet::new();
        for group in &self.groups {
            for i in 0..group.len() {
                for j in i + 1..group.len() {
                    out.insert(self.ordered(group, i, j));
                }
            }
        }
        out
    }

    /// Incoming control edges `(parent, label)` and flow edges of `v`.
    fn incoming(&self, v: StmtId) -> (Vec<(StmtId, Label)>, Vec<StmtId>) {
        (self.pdg.cd.parents(v).to_vec(), self.pdg.flow.preds(v).to_vec())
    }

    /// Per vertex its control children and flow successors.
    fn successors(&self) -> Vec<Vec<StmtId>> {
        let mut succ: Vec<Vec<StmtId>> = vec![Vec::new(); self.n];
        for u in 0..self.n {
            let u = StmtId::from_index(u);
            for &d in self.pdg.flow.preds(u) {
                succ[d.index()].push(u);
            }
            succ[u.index()].extend(self.pdg.cd.children(u).iter().map(|&(_, w)| w));
        }
        succ
    }
}

/// Marks the vertices reachable from `from` over `succ` (control and flow edges), `from` included.
fn forward(succ: &[Vec<StmtId>], from: &[StmtId], out: &mut [bool]) {
    let mut work: Vec<StmtId> = from.iter().copied().filter(|v| !out[v.index()]).collect();
    for v in &work {
        out[v.index()] = true;
    }
    while let Some(v) = work.pop() {
        for &w in &succ[v.index()] {
            if !out[w.index()] {
                out[w.index()] = true;
                work.push(w);
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
    let vertices = || (2..new.num_vertices()).map(StmtId::from_index);
    let dav: Vec<StmtId> =
        vertices().filter(|&v| mapped(v).is_none_or(|c| !same_incoming(&n, &o, &map, v, c))).collect();
    let succ = n.successors();
    let mut differs = vec![false; new.num_vertices()];
    forward(&succ, &dav, &mut differs);
    // Step 3 without a slice per vertex. A vertex left after step 2 has a slice free of DAV (else it would be
    // reachable from DAV), so the map takes its slice's vertices one to one onto OLD's slice of its counterpart
    // with the same control and flow edges (every vertex's incoming edges correspond, and the image of a
    // backward-closed set is backward closed). Only ordering edges can differ: its slices are isomorphic unless
    // the slice holds both ends of a *mismatched pair* — two clean vertices ordered one way in NEW and not the
    // same way in OLD. The vertices whose slices hold `a` and `b` are those reachable from both.
    let clean = |v: StmtId| !differs[v.index()] && mapped(v).is_some();
    let mut mismatched: BTreeSet<(StmtId, StmtId)> = BTreeSet::new();
    for (&(p, label), &k) in &n.group_of {
        let members: Vec<StmtId> = n.groups[k].iter().copied().filter(|&v| clean(v)).collect();
        if members.len() < 2 {
            continue;
        }
        // Clean vertices have their control parents' counterparts: their images share one OLD group.
        let Some(&ok) = map[p.index()].and_then(|q| o.group_of.get(&(q, label))) else { continue };
        let images: Vec<StmtId> = members.iter().map(|v| map[v.index()].expect("clean")).collect();
        if same_order(&n, &members, &o, &o.groups[ok], &images) {
            continue;
        }
        let position: HashMap<StmtId, usize> = o.groups[ok].iter().enumerate().map(|(i, &x)| (x, i)).collect();
        for i in 0..members.len() {
            for j in i + 1..members.len() {
                let (a, b) = n.ordered(&members, i, j);
                let (x, y) = (map[a.index()].expect("clean"), map[b.index()].expect("clean"));
                let (px, py) = (position[&x], position[&y]);
                let old_edge =
                    if px < py { o.ordered(&o.groups[ok], px, py) } else { o.ordered(&o.groups[ok], py, px) };
                if old_edge != (x, y) {
                    mismatched.insert((a, b));
                }
            }
        }
    }
    let mut reached: HashMap<StmtId, Vec<bool>> = HashMap::new();
    let mut from = |v: StmtId| {
        reached
            .entry(v)
            .or_insert_with(|| {
                let mut r = vec![false; new.num_vertices()];
                forward(&succ, &[v], &mut r);
                r
            })
            .clone()
    };
    let mut step3 = Vec::new();
    for (a, b) in mismatched {
        let (ra, rb) = (from(a), from(b));
        step3.extend((0..ra.len()).filter(|&v| ra[v] && rb[v]).map(StmtId::from_index));
    }
    forward(&succ, &step3, &mut differs);
    let mut out: Vec<Behaviour> =
        differs.iter().map(|&d| if d { Behaviour::Affected } else { Behaviour::Same }).collect();
    for v in dav.into_iter().filter(|&v| mapped(v).is_none()) {
        out[v.index()] = Behaviour::Changed;
    }
    out[ProgramGraph::ENTRY.index()] = Behaviour::Same;
    out[ProgramGraph::EXIT.index()] = Behaviour::Same;
    Ok(out)
}

/// Whether NEW's vertex `v` and OLD's `c` have the same incoming control edges (parent and label) and flow edges
/// under `map` (Fig. 7.1's test for DAV; also each vertex's test inside a slice comparison).
fn same_incoming(n: &Opdg, o: &Opdg, map: &[Option<StmtId>], v: StmtId, c: StmtId) -> bool {
    let ((nc, nf), (oc, of)) = (n.incoming(v), o.incoming(c));
    let mut nc: Vec<_> = nc.iter().map(|&(p, l)| (map[p.index()], l)).collect();
    let mut oc: Vec<_> = oc.iter().map(|&(p, l)| (Some(p), l)).collect();
    let mut nf: Vec<_> = nf.iter().map(|&d| map[d.index()]).collect();
    let mut of: Vec<_> = of.iter().map(|&d| Some(d)).collect();
    nc.sort_unstable();
    oc.sort_unstable();
    nf.sort_unstable();
    of.sort_unstable();
    nc == oc && nf == of
}

/// Whether the ordering edges among a NEW group's clean `members` are those among their `images` in OLD's group
/// `old_group`: the images come in the same order, and each member's nearest postdominating member corresponds
/// to its image's nearest postdominating image (the same relation restricted to the members, hence the same
/// edges). O(k log k); `false` only means "compare pair by pair".
fn same_order(n: &Opdg, members: &[StmtId], o: &Opdg, old_group: &[StmtId], images: &[StmtId]) -> bool {
    let position: HashMap<StmtId, usize> = old_group.iter().enumerate().map(|(i, &x)| (x, i)).collect();
    if !images.windows(2).all(|w| position.get(&w[0]) < position.get(&w[1])) {
        return false;
    }
    let image_of: HashMap<StmtId, StmtId> = members.iter().copied().zip(images.iter().copied()).collect();
    let member_of: HashMap<StmtId, StmtId> = images.iter().copied().zip(members.iter().copied()).collect();
    let (new_parents, old_parents) = (induced_parents(n, members), induced_parents(o, images));
    members.iter().all(|m| new_parents.get(m).copied() == old_parents.get(&image_of[m]).map(|x| member_of[x]))
}

/// Per vertex of `set`, the nearest vertex of `set` that postdominates it (the postdominator tree restricted to
/// `set`).
fn induced_parents(g: &Opdg, set: &[StmtId]) -> HashMap<StmtId, StmtId> {
    let mut sorted = set.to_vec();
    sorted.sort_by_key(|v| g.enter[v.index()]);
    let mut stack: Vec<StmtId> = Vec::new();
    let mut parent = HashMap::new();
    for v in sorted {
        while stack.last().is_some_and(|&t| g.leave[t.index()] < g.enter[v.index()]) {
            stack.pop();
        }
        if let Some(&t) = stack.last() {
            parent.insert(v, t);
        }
        stack.push(v);
    }
    parent
}

/// Fig. 7.1 as the thesis states it, one slice comparison per vertex: the oracle of [`diff`]'s faster step 3.
#[cfg(test)]
pub(crate) fn diff_by_slices(old: &ProgramGraph, new: &ProgramGraph, corr: &[Option<StmtId>]) -> Vec<bool> {
    let (o, n) = (Opdg::build(old).unwrap(), Opdg::build(new).unwrap());
    let mut map = corr.to_vec();
    map[ProgramGraph::ENTRY.index()] = Some(ProgramGraph::ENTRY);
    map[ProgramGraph::EXIT.index()] = Some(ProgramGraph::EXIT);
    let dav: Vec<StmtId> = (2..new.num_vertices())
        .map(StmtId::from_index)
        .filter(|&v| map[v.index()].is_none_or(|c| !same_incoming(&n, &o, &map, v, c)))
        .collect();
    let succ = n.successors();
    let mut differs = vec![false; new.num_vertices()];
    forward(&succ, &dav, &mut differs);
    for v in (2..new.num_vertices()).map(StmtId::from_index) {
        if !differs[v.index()] && !same_slice(&o, &n, v, &map) {
            forward(&succ, &[v], &mut differs);
        }
    }
    differs[0] = false;
    differs[1] = false;
    differs
}

/// Whether NEW's ordered slice on `v` maps onto OLD's on `map[v]`: same vertices, same control, flow and
/// ordering edges among them.
#[cfg(test)]
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
    // Within the slice every control and flow predecessor of a kept vertex is kept (it is a closure).
    if !nk.iter().all(|&x| same_incoming(n, o, map, x, map[x.index()].expect("mapped above"))) {
        return false;
    }
    let in_n = |e: &&(StmtId, StmtId)| ns.contains(e.0) && ns.contains(e.1);
    let in_o = |e: &&(StmtId, StmtId)| os.contains(e.0) && os.contains(e.1);
    let (n_order, o_order) = (n.order_edges(), o.order_edges());
    let mut na: Vec<_> = n_order.iter().filter(in_n).map(|&(a, b)| (map[a.index()], map[b.index()])).collect();
    let mut oa: Vec<_> = o_order.iter().filter(in_o).map(|&(a, b)| (Some(a), Some(b))).collect();
    na.sort_unstable();
    oa.sort_unstable();
    na == oa
}
