//! Optimal edge-counter placement, Eprof(Ecnt): counters on the chords of a maximum spanning tree.
//!
//! Ball & Larus, "Optimally Profiling and Tracing Programs", TOPLAS 16(3), 1994, §3.2 (after Knuth & Stevenson,
//! BIT 13, 1973): a set of counted edges Ecnt lets every edge frequency be derived iff E − Ecnt contains no
//! undirected cycle, and has minimum size and cost iff E − Ecnt is a maximum spanning tree under the weighting;
//! the tree is seeded with EXIT → root so that edge never needs code.
//!
//! Invariant: the uncounted edges form a spanning forest of the CFG (one tree per undirected component, EXIT and
//! all virtual edges included) that contains the EXIT→entry edge, every `Termination` edge and every edge the pass
//! cannot instrument, and has maximum weight among such forests; hence there are exactly
//! |E| − |V| + #components counters (|E| − |V| + 1 for a connected CFG), counter `i` is on `chords[i]`, and
//! [`crate::propagate::derive_counts`] recovers every edge count from them.
//!
//! # Termination edges in the entry block
//! A `Termination` edge entry → EXIT is parallel (undirected) to EXIT → entry; both are forced, so the forced set
//! has a cycle and [`plan_edge_counters`] returns [`PlacementError::Uninstrumentable`] for the Termination edge.
//! This is not an artefact: with neither edge counted, an invocation that dies in the entry block cannot be told
//! from no invocation (regression test `termination_in_the_entry_block_is_uninstrumentable`). The same holds for
//! two `Termination` edges out of one block. [`plan_edge_counters_with_entry_counter`] resolves the first case:
//! it lets EXIT → entry become a chord exactly when forced edges leave no other choice, and the pass realises
//! that counter as an increment at the top of the entry block (LLVM entry blocks have no predecessors, so that
//! counts invocations exactly).

use crate::graph::{Cfg, EdgeId, EdgeKind};
use crate::spanning::{count_components, max_spanning_tree, SpanningError, SpanningTree};

/// Where the edge counters go: counter `i` counts executions of `chords[i]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdgePlan {
    /// The maximum spanning forest of uncounted edges (BL94's E − Ecnt).
    pub tree: SpanningTree,
    /// The counted edges (BL94's Ecnt), in `EdgeId` order: counter `i` belongs to `chords[i]`.
    pub chords: Vec<EdgeId>,
}

impl EdgePlan {
    /// Number of counters.
    pub fn num_counters(&self) -> usize {
        self.chords.len()
    }

    /// The counter index of edge `e`, if `e` carries a counter.
    pub fn counter_of(&self, e: EdgeId) -> Option<usize> {
        self.chords.binary_search(&e).ok()
    }

    /// Per-edge measured values for [`crate::propagate::derive_counts`]: `Some(counters[i])` on `chords[i]`,
    /// `None` elsewhere. `counters` shorter than the plan leaves the missing chords `None`.
    pub fn measured(&self, counters: &[u64]) -> Vec<Option<u64>> {
        let mut m = vec![None; self.tree.num_edges()];
        for (&e, &c) in self.chords.iter().zip(counters) {
            m[e.index()] = Some(c);
        }
        m
    }

    /// Checks the module invariant against `cfg`: Termination edges uncounted, chords = tree complement in id
    /// order, and |chords| = |E| − |V| + #components (which, with the tree a forest, makes it spanning).
    pub fn check_invariants(&self, cfg: &Cfg) -> Result<(), PlacementError> {
        let bad = |what: &str| Err(PlacementError::InvariantViolation(what.to_string()));
        if self.tree.num_edges() != cfg.num_edges() {
            return bad("tree mask length differs from the edge count");
        }
        if !self.chords.iter().copied().eq(self.tree.chords()) {
            return bad("chords are not the tree complement in EdgeId order");
        }
        // EXIT->entry may be a chord (plan_edge_counters_with_entry_counter); a Termination edge never.
        if let Some(e) = self.chords.iter().find(|&&e| cfg.edge(e).kind == EdgeKind::Termination) {
            return Err(PlacementError::InvariantViolation(format!("termination edge {e} carries a counter")));
        }
        let expected = cfg.num_edges() + count_components(cfg) - cfg.num_vertices();
        if self.chords.len() != expected {
            return Err(PlacementError::InvariantViolation(format!(
                "{} chords, expected |E| - |V| + #components = {expected}",
                self.chords.len()
            )));
        }
        Ok(())
    }
}

/// Why counters could not be placed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    /// An edge that must stay uncounted (virtual or uninstrumentable) closes an undirected cycle with the other
    /// such edges, so the counts on that cycle could not be derived.
    #[error("edge {edge} cannot carry a counter but closes a cycle of uncounted edges")]
    Uninstrumentable {
        /// The first forced edge (EXIT→entry, then Termination, then uninstrumentable, each in id order) that
        /// closes the cycle.
        edge: EdgeId,
    },
    /// `instrumentable` does not have one entry per edge.
    #[error("{found} instrumentable flags given for {expected} edges")]
    InstrumentableCountMismatch {
        /// Number of edges.
        expected: usize,
        /// Number of flags given.
        found: usize,
    },
    /// The spanning-tree computation rejected its input (weight count, NaN weight).
    #[error(transparent)]
    Spanning(SpanningError),
    /// [`EdgePlan::check_invariants`] found a broken invariant (a pathprof bug, or a plan not made for this CFG).
    #[error("edge plan invariant violated: {0}")]
    InvariantViolation(String),
}

/// BL94 Eprof(Ecnt): the maximum spanning tree under `weights`, seeded with (in this order) the EXIT→entry edge,
/// every `Termination` edge, and every real edge with `instrumentable[e] == false` (each group in `EdgeId`
/// order); the chords get counters. `instrumentable` is ignored for virtual edges.
pub fn plan_edge_counters(cfg: &Cfg, weights: &[f64], instrumentable: &[bool]) -> Result<EdgePlan, PlacementError> {
    if instrumentable.len() != cfg.num_edges() {
        return Err(PlacementError::InstrumentableCountMismatch {
            expected: cfg.num_edges(),
            found: instrumentable.len(),
        });
    }
    let mut forced = vec![cfg.exit_to_entry()];
    forced.extend(cfg.edge_ids().filter(|&e| cfg.edge(e).kind == EdgeKind::Termination));
    forced.extend(cfg.edge_ids().filter(|&e| !cfg.edge(e).kind.is_virtual() && !instrumentable[e.index()]));
    let tree = max_spanning_tree(cfg, weights, &forced).map_err(|err| match err {
        SpanningError::ForcedCycle { edge } => PlacementError::Uninstrumentable { edge },
        other => PlacementError::Spanning(other),
    })?;
    let chords = tree.chords().collect();
    Ok(EdgePlan { tree, chords })
}

/// Like [`plan_edge_counters`], but EXIT→entry is only *preferred* in the tree: it is inserted right after the
/// `Termination` and uninstrumentable edges and becomes a chord when it would close a cycle with them (a
/// Termination edge out of the entry block, or a path of uninstrumentable edges from the entry to EXIT). A chord
/// on EXIT→entry counts invocations; the pass puts it at the top of the entry block. Whenever
/// [`plan_edge_counters`] succeeds, both functions return the same plan.
pub fn plan_edge_counters_with_entry_counter(
    cfg: &Cfg,
    weights: &[f64],
    instrumentable: &[bool],
) -> Result<EdgePlan, PlacementError> {
    if instrumentable.len() != cfg.num_edges() {
        return Err(PlacementError::InstrumentableCountMismatch {
            expected: cfg.num_edges(),
            found: instrumentable.len(),
        });
    }
    let e2e = cfg.exit_to_entry();
    let mut forced: Vec<EdgeId> = cfg.edge_ids().filter(|&e| cfg.edge(e).kind == EdgeKind::Termination).collect();
    forced.extend(cfg.edge_ids().filter(|&e| !cfg.edge(e).kind.is_virtual() && !instrumentable[e.index()]));
    let n_forced = forced.len();
    forced.push(e2e);
    // The union-find state after the forced edges does not depend on their order, so when EXIT->entry fits the
    // result equals plan_edge_counters'; when it does not, it is a chord of every tree containing the others.
    let tree = match max_spanning_tree(cfg, weights, &forced) {
        Err(SpanningError::ForcedCycle { edge }) if edge == e2e => max_spanning_tree(cfg, weights, &forced[..n_forced]),
        r => r,
    }
    .map_err(|err| match err {
        SpanningError::ForcedCycle { edge } => PlacementError::Uninstrumentable { edge },
        other => PlacementError::Spanning(other),
    })?;
    let chords = tree.chords().collect();
    Ok(EdgePlan { tree, chords })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{
        ordered_cfg, test_cfg, BlockId, Edge,
        Leave::{B, R, T},
    };
    use crate::weighting::{bl94, uniform};

    #[test]
    fn ball_larus_1994_g1_placement() {
        // P=0 Q=1 A=2 B=3 R=4 C=5, EXIT=6
        // e0 P->Q, e1 Q->A, e2 Q->B, e3 A->R, e4 B->R, e5 R->C, e6 C->P, e7 P->EXIT, e8 R->EXIT, e9 EXIT->P
        let g = test_cfg(6, &[(0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (4, 5), (5, 0)], &[0, 4]);
        let w = bl94(&g, &g.adjacency());
        let plan = plan_edge_counters(&g, &w, &[true; 10]).unwrap();
        // |E| - |V| + 1 = 10 - 7 + 1
        assert_eq!(plan.num_counters(), 4);
        let cost: f64 = plan.chords.iter().map(|e| w[e.index()]).sum();
        assert!((cost - 10.5).abs() < 1e-12, "chord cost {cost}");
        assert_eq!(plan.chords, vec![EdgeId(3), EdgeId(4), EdgeId(7), EdgeId(8)]);
        assert_eq!(plan.counter_of(EdgeId(7)), Some(2));
        assert_eq!(plan.counter_of(EdgeId(0)), None);
        plan.check_invariants(&g).unwrap();
    }

    #[test]
    fn uninstrumentable_edges_stay_in_the_tree() {
        let g = test_cfg(3, &[(0, 1), (0, 2), (1, 2)], &[2]);
        let mut inst = vec![true; g.num_edges()];
        inst[0] = false; // 0->1 cannot carry code
        let plan = plan_edge_counters(&g, &uniform(&g), &inst).unwrap();
        assert!(plan.tree.contains(EdgeId(0)));
        plan.check_invariants(&g).unwrap();
        // all three branch edges uninstrumentable: they form a cycle
        let plan = plan_edge_counters(&g, &uniform(&g), &[false, false, false, true, true]);
        assert_eq!(plan, Err(PlacementError::Uninstrumentable { edge: EdgeId(2) }));
        // an uninstrumentable self-loop
        let g = test_cfg(1, &[(0, 0)], &[0]);
        let plan = plan_edge_counters(&g, &uniform(&g), &[false, true, true]);
        assert_eq!(plan, Err(PlacementError::Uninstrumentable { edge: EdgeId(0) }));
    }

    #[test]
    fn termination_edges_are_forced_and_unreachable_blocks_form_components() {
        // 0 -> 1 (calls exit() maybe), 1 returns; 2 <-> 3 are dead code disconnected from the rest
        let g = ordered_cfg(4, &[(0, 1, B), (1, 4, R), (1, 4, T), (2, 3, B), (3, 2, B)]);
        let mut w = uniform(&g);
        w[2] = 0.0; // would lose against the Return edge if it were not forced
        let plan = plan_edge_counters(&g, &w, &[true; 6]).unwrap();
        assert!(plan.tree.contains(EdgeId(2)) && plan.tree.contains(EdgeId(5)));
        // |E| - |V| + #components = 6 - 5 + 2; 0->1 and the Return 1->EXIT each close a cycle with the forced
        // EXIT->0 and 1->EXIT (Termination), and 3->2 closes one with 2->3.
        assert_eq!(plan.chords, vec![EdgeId(0), EdgeId(1), EdgeId(4)]);
        plan.check_invariants(&g).unwrap();
    }

    #[test]
    fn termination_in_the_entry_block_is_uninstrumentable() {
        // The entry may die (e.g. `main` calls exit() in its first block): entry->EXIT (Termination) and
        // EXIT->entry form an undirected cycle of edges that cannot carry code, so an invocation that dies in the
        // entry is indistinguishable from no invocation. Reported, not panicked on; see the module docs.
        let e = |f: u32, t: u32, kind| Edge { from: BlockId(f), to: BlockId(t), kind };
        let g = Cfg::new(
            1,
            vec![e(0, 1, EdgeKind::Termination), e(0, 1, EdgeKind::Return), e(1, 0, EdgeKind::ExitToEntry)],
        )
        .unwrap();
        assert_eq!(
            plan_edge_counters(&g, &uniform(&g), &[true; 3]),
            Err(PlacementError::Uninstrumentable { edge: EdgeId(0) })
        );
        // Counting invocations at the top of the entry block resolves it: EXIT->entry becomes the chord.
        let plan = plan_edge_counters_with_entry_counter(&g, &uniform(&g), &[true; 3]).unwrap();
        assert_eq!(plan.chords, vec![EdgeId(1), EdgeId(2)]);
        plan.check_invariants(&g).unwrap();
        // one invocation that died in the entry: Return 0, EXIT->entry 1
        let d = crate::propagate::derive_counts(&g, &g.adjacency(), &plan.measured(&[0, 1])).unwrap();
        assert_eq!(d.edges, vec![1, 0, 1]);
        // two Termination edges out of one block stay an error
        let g = Cfg::new(
            2,
            vec![
                e(0, 1, EdgeKind::Branch { succ: 0 }),
                e(1, 2, EdgeKind::Termination),
                e(1, 2, EdgeKind::Termination),
                e(1, 2, EdgeKind::Return),
                e(2, 0, EdgeKind::ExitToEntry),
            ],
        )
        .unwrap();
        assert_eq!(
            plan_edge_counters_with_entry_counter(&g, &uniform(&g), &[true; 5]),
            Err(PlacementError::Uninstrumentable { edge: EdgeId(2) })
        );
    }

    #[test]
    fn bad_inputs_are_errors() {
        let g = test_cfg(1, &[], &[0]);
        assert!(matches!(
            plan_edge_counters(&g, &[1.0, 1.0], &[true]),
            Err(PlacementError::InstrumentableCountMismatch { .. })
        ));
        assert!(matches!(
            plan_edge_counters(&g, &[1.0], &[true, true]),
            Err(PlacementError::Spanning(SpanningError::WeightCountMismatch { .. }))
        ));
    }
}
