//! Storage units: runs of consecutive procedures that no interprocedural path leaves.
//!
//! Melski & Reps number every observable path of the program in one space, so a module whose paths are too many
//! for a counter array hashes every count — even where the budget policy (§8) cut every call site and each
//! function's paths stay within it. A path moves between procedures only over the call and return edges of
//! *interprocedural* sites ([`SiteRole::Interprocedural`]); every other site is a summary edge. So if the
//! procedure list is cut into intervals that no interprocedural site crosses, every path lies within one
//! interval, and [`Numbering`](super::Numbering) can lay out each interval's Entry_global successors together
//! (its roots, then — piecewise — its GEntry vertices, the paper's order within one unit): each unit's paths are
//! one range of numbers, which the pass counts in storage of its own, numbered from 0 within the unit — a counter
//! array for a unit with few paths, as path mode does per function.
//!
//! [`finest_units`] gives the finest such cut. Any coarser one is valid too (one unit is Melski & Reps's
//! numbering), and the pass records the cut it used, so the rule can change without a reader change.

use super::callgraph::SiteRole;
use super::numbering::NumberingError;
use super::program::{Callee, ProcId, Program};
use super::supergraph::Supergraph;

/// (caller, callee) of every interprocedural call site: the edges a path can cross procedures on.
fn interprocedural_calls(sg: &Supergraph) -> impl Iterator<Item = (ProcId, ProcId)> + '_ {
    sg.program().sites().iter().zip(sg.calls().roles()).filter_map(|(info, role)| match (role, info.callee) {
        (SiteRole::Interprocedural, Callee::Proc(callee)) => Some((info.proc, callee)),
        _ => None,
    })
}

/// The first procedure of each unit of the finest cut of `sg`'s procedure list into intervals that no
/// interprocedural call site crosses: `[ProcId(0), …]`, increasing (`[ProcId(0)]` for an empty program).
pub fn finest_units(sg: &Supergraph) -> Vec<ProcId> {
    let n = sg.program().num_procs();
    // crossing[k] > 0 after the prefix sum: some site joins a procedure before k with one at k or after it.
    let mut crossing = vec![0i64; n + 1];
    for (caller, callee) in interprocedural_calls(sg) {
        let (lo, hi) = (caller.index().min(callee.index()), caller.index().max(callee.index()));
        crossing[lo + 1] += 1;
        crossing[hi + 1] -= 1;
    }
    let mut open = 0;
    let mut starts = vec![ProcId(0)];
    for (k, c) in crossing.iter().enumerate().take(n).skip(1) {
        open += c;
        if open == 0 {
            starts.push(ProcId(k as u32));
        }
    }
    starts
}

/// An order of `program`'s procedures in which every group joined by calls that may be followed
/// ([`Callee::Proc`]: interprocedural or recursive sites; cut sites join nothing) is contiguous: groups by their
/// first procedure, each in id order. Numbered in this order
/// ([`Program::permuted`]), every such group is a run of procedures, so [`finest_units`] separates groups that
/// the module's own order interleaves (a helper defined between unrelated functions). Within a group the
/// relative order stays, and the call-graph classification only follows calls inside a group, so it classifies
/// every call site as before.
pub fn component_order(program: &Program) -> Vec<ProcId> {
    let n = program.num_procs();
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    for s in program.sites() {
        if let Callee::Proc(q) = s.callee {
            let (a, b) = (root(&mut parent, s.proc.index()), root(&mut parent, q.index()));
            // The smaller id is the representative, so a group's representative is its first procedure.
            parent[a.max(b)] = a.min(b);
        }
    }
    let mut order: Vec<(usize, usize)> = (0..n).map(|i| (root(&mut parent, i), i)).collect();
    order.sort_unstable();
    order.into_iter().map(|(_, i)| ProcId::from_index(i)).collect()
}

/// Checks `starts` (see [`finest_units`]) against `sg` and gives each procedure's unit.
pub(super) fn check_unit_starts(sg: &Supergraph, starts: &[ProcId]) -> Result<Vec<usize>, NumberingError> {
    let bad = |m: String| Err(NumberingError::BadUnits(m));
    let n = sg.program().num_procs();
    if starts.first() != Some(&ProcId(0)) {
        return bad("the first unit does not start at procedure 0".into());
    }
    if starts.windows(2).any(|w| w[0] >= w[1]) || starts.iter().any(|s| s.index() >= n.max(1)) {
        return bad(format!("unit starts {starts:?} do not increase within {n} procedures"));
    }
    let mut unit_of = vec![0usize; n];
    for (u, s) in starts.iter().enumerate() {
        let end = starts.get(u + 1).map_or(n, |t| t.index());
        unit_of[s.index()..end].fill(u);
    }
    for (caller, callee) in interprocedural_calls(sg) {
        if unit_of.get(caller.index()) != unit_of.get(callee.index()) {
            return bad(format!("a call site crosses from {caller} to {callee}"));
        }
    }
    Ok(unit_of)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{BlockId, Cfg, Edge, EdgeKind};
    use crate::interproc::{CallSite, Callee, Mode, Procedure, Program};

    /// Entry block 0 → call block 1 → return site 2 → EXIT (3), with a call to `callee` at block 1; or the same
    /// line without a call.
    fn proc_calling(callee: Option<Callee>) -> Procedure {
        let e = |from, to, kind| Edge { from: BlockId(from), to: BlockId(to), kind };
        let br = EdgeKind::Branch { succ: 0 };
        let cfg =
            Cfg::new(3, vec![e(0, 1, br), e(1, 2, br), e(2, 3, EdgeKind::Return), e(3, 0, EdgeKind::ExitToEntry)])
                .unwrap();
        let sites = callee.map(|c| CallSite { block: BlockId(1), callee: c }).into_iter().collect();
        let mut p = Procedure::new(cfg, sites);
        p.external_entry = true;
        p
    }

    /// 0 calls 2, 1 calls nothing, 3 cut-calls 4, 4 calls nothing: 0..3 is one unit (the site 0→2 spans 1),
    /// 3 and 4 are units of their own (a cut site is a summary edge).
    #[test]
    fn a_unit_spans_every_interprocedural_site_and_cut_sites_split() {
        let program = Program::new(vec![
            proc_calling(Some(Callee::Proc(ProcId(2)))),
            proc_calling(None),
            proc_calling(None),
            proc_calling(Some(Callee::Cut(ProcId(4)))),
            proc_calling(Some(Callee::External)),
        ])
        .unwrap();
        let sg = Supergraph::build(program);
        let starts = finest_units(&sg);
        assert_eq!(starts, vec![ProcId(0), ProcId(3), ProcId(4)]);
        for mode in [Mode::Context, Mode::Piecewise] {
            let num = sg.number_in_units(mode, &starts).unwrap();
            num.check_invariants().unwrap();
            let units = num.units();
            assert_eq!(units.iter().map(|u| u.procs.clone()).collect::<Vec<_>>(), vec![0..3, 3..4, 4..5]);
            assert_eq!(units.iter().map(|u| u.num_paths).sum::<u128>(), num.num_paths());
            // Every entry lies in its procedure's unit, numbered from 0 there.
            for e in num.entries() {
                let u = &units[num.unit_of(e.kind.proc())];
                assert!(u.procs.contains(&e.kind.proc().index()));
                assert!(num.local_offset(e) + e.count <= u.num_paths);
            }
            // The same paths as one unit: the counts per mode agree.
            assert_eq!(sg.number(mode).unwrap().num_paths(), num.num_paths());
        }
        // A cut through the site 0→2 is refused.
        let crossing = sg.number_in_units(Mode::Context, &[ProcId(0), ProcId(1)]);
        assert!(matches!(crossing, Err(NumberingError::BadUnits(_))), "{crossing:?}");
        assert!(matches!(sg.number_in_units(Mode::Context, &[ProcId(1)]), Err(NumberingError::BadUnits(_))));
        assert!(matches!(sg.number_in_units(Mode::Context, &[ProcId(0), ProcId(9)]), Err(NumberingError::BadUnits(_))));
    }
}
