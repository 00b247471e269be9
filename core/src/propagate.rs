//! Deriving every edge and vertex count from the chord counts (BL94 Figure 6, made iterative).
//!
//! Ball & Larus, "Optimally Profiling and Tracing Programs", TOPLAS 16(3), 1994, §3.2, Figure 6
//! (`propagate_counts`): if v is a leaf of the tree of unmeasured edges, every other edge at v is known and the
//! flow equation at v fixes the one tree edge; remove it and repeat. Figure 6 does this as a recursive post-order
//! walk from the root and computes max(in, out) − min(in, out); pathprof peels leaves with a work list (no
//! recursion, so no stack overflow on huge functions), handles every tree of a forest, and computes the *signed*
//! difference, so inconsistent input shows up as negative counts instead of being hidden.
//!
//! Invariant: when the unmeasured edges form a forest, the result is the unique edge function that agrees with
//! the measured edges and satisfies Kirchhoff's law at every vertex whose unmeasured tree is a whole connected
//! component of the graph; any vertex where it fails is listed in `conservation_violations`. When the input comes
//! from a real execution (including EXIT→entry once per invocation and each `Termination` edge once per abnormal
//! departure), every count is exact.
//!
//! Fork re-entries ([`derive_counts_with_reentries`]): a `fork()`ed child resumes the activations that were on
//! the stack at the fork after their in-flight call, without having entered them (its counters start at zero).
//! Each such resumption is a measured virtual edge EXIT→B into the block B of the call, so flow is conserved
//! again: B's count includes its re-entries, and its `Termination` edge counts only real abnormal departures.
//!
//! The input is untrusted (profile files): every failure is an `Err` or a reported violation, never a panic, and
//! counts are `i128`. Overflow is impossible: a derived count is the signed sum of the measured counts (re-entries
//! included) crossing one cut of its tree, and the derived counts at one vertex come from disjoint cuts, so every
//! intermediate sum is at most 3 · Σ measured, far below 2^127 for any input that fits in memory.

use crate::graph::{Adjacency, BlockId, Cfg, EdgeId};
use crate::spanning::UnionFind;

/// All edge and vertex counts derived from the measured ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DerivedCounts {
    /// Per edge: the measured count, or the derived one (negative only if the input is inconsistent, e.g. lost
    /// non-atomic increments).
    pub edges: Vec<i128>,
    /// Per vertex, EXIT included: the sum of its in-edge counts. For the entry this includes EXIT→entry, i.e. the
    /// number of invocations; for EXIT it is the number of departures (returns plus abnormal terminations).
    pub vertices: Vec<i128>,
    /// Vertices (in id order) where the in-sum differs from the out-sum; possible only when the unmeasured
    /// edges do not span a connected component, i.e. when over-measured counters disagree.
    pub conservation_violations: Vec<BlockId>,
}

impl DerivedCounts {
    /// Edges whose count came out negative (in `EdgeId` order): a sign of an inconsistent profile.
    pub fn negative_edges(&self) -> impl Iterator<Item = EdgeId> + '_ {
        self.edges.iter().enumerate().filter(|(_, &c)| c < 0).map(|(i, _)| EdgeId::from_index(i))
    }

    /// Whether the counts are a plausible execution: no negative edge and no conservation violation.
    pub fn is_consistent(&self) -> bool {
        self.conservation_violations.is_empty() && self.negative_edges().next().is_none()
    }
}

/// Why counts could not be derived.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PropagateError {
    /// `measured` does not have one entry per edge.
    #[error("{found} measurements given for {expected} edges")]
    MeasuredCountMismatch {
        /// Number of edges.
        expected: usize,
        /// Number of entries given.
        found: usize,
    },
    /// The unmeasured edges contain an undirected cycle (possibly a self-loop), so their counts are not
    /// determined by the measured ones.
    #[error("unmeasured edge {edge} closes a cycle of unmeasured edges; counts are underdetermined")]
    Underdetermined {
        /// The first unmeasured edge (in `EdgeId` order) that closes a cycle with lower-numbered unmeasured edges.
        edge: EdgeId,
    },
    /// A fork re-entry names a block that has no `Termination` edge: no call there can be in flight at a fork.
    #[error("fork re-entry into {block}, which has no call that may not return")]
    ReentryWithoutTermination {
        /// The block named.
        block: BlockId,
    },
}

/// Derives every edge count of `cfg` from `measured` (`Some(count)` on edges that carried a counter, `None` on
/// edges to derive) by leaf peeling of the unmeasured forest. `adj` must be `cfg.adjacency()`. O(|V| + |E| α).
pub fn derive_counts(cfg: &Cfg, adj: &Adjacency, measured: &[Option<u64>]) -> Result<DerivedCounts, PropagateError> {
    derive_counts_with_reentries(cfg, adj, measured, &[])
}

/// [`derive_counts`] with measured fork re-entries `(block, count)` (see the module docs): each is a virtual
/// edge EXIT→block with a known count, so a block's vertex count includes its re-entries and its derived
/// `Termination` edge does not absorb them. Repeated blocks add up. Fails on a re-entry into a block without a
/// `Termination` edge (or outside the graph).
pub fn derive_counts_with_reentries(
    cfg: &Cfg,
    adj: &Adjacency,
    measured: &[Option<u64>],
    reentries: &[(BlockId, u64)],
) -> Result<DerivedCounts, PropagateError> {
    let m = cfg.num_edges();
    let n = cfg.num_vertices();
    if measured.len() != m {
        return Err(PropagateError::MeasuredCountMismatch { expected: m, found: measured.len() });
    }
    for &(block, _) in reentries {
        let terminates = block.index() < cfg.num_blocks()
            && adj.out_edges(block).iter().any(|&e| cfg.edge(e).kind == crate::graph::EdgeKind::Termination);
        if !terminates {
            return Err(PropagateError::ReentryWithoutTermination { block });
        }
    }

    // The unmeasured edges must be a forest.
    let mut uf = UnionFind::new(n);
    for e in cfg.edge_ids() {
        let edge = cfg.edge(e);
        if measured[e.index()].is_none() && !uf.union(edge.from.index(), edge.to.index()) {
            return Err(PropagateError::Underdetermined { edge: e });
        }
    }

    let mut count: Vec<Option<i128>> = measured.iter().map(|c| c.map(i128::from)).collect();
    let mut in_known = vec![0i128; n];
    let mut out_known = vec![0i128; n];
    let mut unknown_degree = vec![0usize; n];
    for &(block, c) in reentries {
        // The measured virtual edge EXIT→block.
        in_known[block.index()] += i128::from(c);
        out_known[cfg.exit().index()] += i128::from(c);
    }
    for (i, edge) in cfg.edges().iter().enumerate() {
        match count[i] {
            Some(c) => {
                out_known[edge.from.index()] += c;
                in_known[edge.to.index()] += c;
            }
            None => {
                // never a self-loop here: the forest check rejected those
                unknown_degree[edge.from.index()] += 1;
                unknown_degree[edge.to.index()] += 1;
            }
        }
    }

    // Each vertex enters the work list at most once: when its unknown degree is (or drops to) exactly 1.
    let mut leaves: Vec<BlockId> = cfg.vertices().filter(|v| unknown_degree[v.index()] == 1).collect();
    while let Some(v) = leaves.pop() {
        if unknown_degree[v.index()] != 1 {
            continue; // its last edge was derived from the other end
        }
        let unknown = adj.in_edges(v).iter().chain(adj.out_edges(v)).copied().find(|e| count[e.index()].is_none());
        let Some(e) = unknown else { continue };
        let edge = cfg.edge(e);
        let vi = v.index();
        // Kirchhoff at v: in(v) = out(v), with e the only unknown term.
        let c = if edge.to == v { out_known[vi] - in_known[vi] } else { in_known[vi] - out_known[vi] };
        count[e.index()] = Some(c);
        out_known[edge.from.index()] += c;
        in_known[edge.to.index()] += c;
        for w in [edge.from, edge.to] {
            let d = &mut unknown_degree[w.index()];
            *d -= 1;
            if *d == 1 {
                leaves.push(w);
            }
        }
    }

    // Every edge of a forest is peeled; `unwrap_or(0)` is unreachable but keeps this total.
    let edges: Vec<i128> = count.into_iter().map(|c| c.unwrap_or(0)).collect();
    let conservation_violations = cfg.vertices().filter(|v| in_known[v.index()] != out_known[v.index()]).collect();
    Ok(DerivedCounts { edges, vertices: in_known, conservation_violations })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{test_cfg, Edge, EdgeKind};
    use crate::placement::{plan_edge_counters, plan_edge_counters_with_entry_counter};
    use crate::spanning::{count_components, max_spanning_tree};
    use proptest::prelude::*;

    /// Notes A.10.2 G1: P=0 Q=1 A=2 B=3 R=4 C=5, EXIT=6.
    /// e0 P->Q, e1 Q->A, e2 Q->B, e3 A->R, e4 B->R, e5 R->C, e6 C->P, e7 P->EXIT, e8 R->EXIT, e9 EXIT->P
    fn g1() -> Cfg {
        test_cfg(6, &[(0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (4, 5), (5, 0)], &[0, 4])
    }

    fn measure(m: usize, chords: &[(usize, u64)]) -> Vec<Option<u64>> {
        let mut v = vec![None; m];
        for &(e, c) in chords {
            v[e] = Some(c);
        }
        v
    }

    #[test]
    fn ball_larus_1994_fig6_propagation_on_g1() {
        // execution P Q A R C P Q B R EXIT; chords P->EXIT 0, A->R 1, B->R 1, R->EXIT 1
        let g = g1();
        let d = derive_counts(&g, &g.adjacency(), &measure(10, &[(7, 0), (3, 1), (4, 1), (8, 1)])).unwrap();
        assert_eq!(d.edges, vec![2, 1, 1, 1, 1, 1, 1, 0, 1, 1]);
        assert_eq!(d.vertices, vec![2, 2, 1, 1, 2, 1, 1]);
        assert!(d.is_consistent());
    }

    #[test]
    fn ball_larus_1994_fig7_early_exit_naive_propagation_is_wrong() {
        // execution P Q A R C P Q A, then the program dies in A; chords P->Q 2, Q->A 2, P->EXIT 0, R->EXIT 0
        let g = g1();
        let d = derive_counts(&g, &g.adjacency(), &measure(10, &[(0, 2), (1, 2), (7, 0), (8, 0)])).unwrap();
        // A->R 2 (true 1), R->C 2 (true 1), C->P 2 (true 1), EXIT->P 0 (true 1)
        assert_eq!(d.edges[3], 2);
        assert_eq!(d.edges[5], 2);
        assert_eq!(d.edges[6], 2);
        assert_eq!(d.edges[9], 0);
        // ... and nothing flags it: the counters are consistent with a different execution.
        assert!(d.is_consistent());
    }

    /// G1 plus a Termination edge e10 A->EXIT (A may call exit()); EXIT->P is e9.
    fn g1_with_termination() -> Cfg {
        let mut edges = g1().edges().to_vec();
        edges.push(Edge { from: BlockId(2), to: BlockId(6), kind: EdgeKind::Termination });
        Cfg::new(6, edges).unwrap()
    }

    #[test]
    fn ball_larus_1994_fig7_early_exit_with_termination_edge_is_exact() {
        // Same execution P Q A R C P Q A †. The Termination edge A->EXIT is a tree edge, so one more chord is
        // needed (|E| - |V| + 1 = 11 - 7 + 1 = 5): chords P->Q 2, Q->A 2, P->EXIT 0, R->EXIT 0, C->P 1.
        let g = g1_with_termination();
        let d = derive_counts(&g, &g.adjacency(), &measure(11, &[(0, 2), (1, 2), (7, 0), (8, 0), (6, 1)])).unwrap();
        //                     P->Q Q->A Q->B A->R B->R R->C C->P P->X R->X X->P A->X
        assert_eq!(d.edges, vec![2, 2, 0, 1, 0, 1, 1, 0, 0, 1, 1]);
        assert!(d.is_consistent());
        assert_eq!(d.vertices[0], 2); // P entered once by invocation, once by C->P
        assert_eq!(d.vertices[6], 1); // one departure: the abnormal one

        // The same through the real placement: simulate the execution's true counts, keep only the chords.
        let truth: Vec<u64> = vec![2, 2, 0, 1, 0, 1, 1, 0, 0, 1, 1];
        let w = crate::weighting::bl94(&g, &g.adjacency());
        let plan = plan_edge_counters(&g, &w, &[true; 11]).unwrap();
        assert!(plan.tree.contains(EdgeId(10)));
        assert_eq!(plan.num_counters(), 5);
        let counters: Vec<u64> = plan.chords.iter().map(|e| truth[e.index()]).collect();
        let d = derive_counts(&g, &g.adjacency(), &plan.measured(&counters)).unwrap();
        assert_eq!(d.edges, truth.iter().map(|&c| i128::from(c)).collect::<Vec<_>>());
    }

    #[test]
    fn unmeasured_cycles_are_underdetermined() {
        let g = g1();
        let adj = g.adjacency();
        assert_eq!(derive_counts(&g, &adj, &[None; 10]), Err(PropagateError::Underdetermined { edge: EdgeId(4) }));
        let g = test_cfg(1, &[(0, 0)], &[0]);
        assert_eq!(
            derive_counts(&g, &g.adjacency(), &[None, Some(1), Some(1)]),
            Err(PropagateError::Underdetermined { edge: EdgeId(0) })
        );
        // parallel unmeasured edges
        let g = test_cfg(2, &[(0, 1), (0, 1)], &[1]);
        assert_eq!(
            derive_counts(&g, &g.adjacency(), &[None, None, Some(1), Some(1)]),
            Err(PropagateError::Underdetermined { edge: EdgeId(1) })
        );
        assert_eq!(
            derive_counts(&g, &g.adjacency(), &[None]),
            Err(PropagateError::MeasuredCountMismatch { expected: 4, found: 1 })
        );
    }

    #[test]
    fn inconsistent_input_gives_negative_counts_and_violations() {
        let g = g1();
        let adj = g.adjacency();
        // lost increments: A->R and B->R say 0 but R->EXIT says 5
        let d = derive_counts(&g, &adj, &measure(10, &[(7, 0), (3, 0), (4, 0), (8, 5)])).unwrap();
        assert!(d.conservation_violations.is_empty());
        assert_eq!(d.negative_edges().collect::<Vec<_>>(), vec![EdgeId(5), EdgeId(6)]); // R->C = C->P = -5
        assert!(!d.is_consistent());
        // everything measured and inconsistent at Q: the forest is empty, violations are reported
        let mut all: Vec<Option<u64>> = vec![Some(1); 10];
        all[0] = Some(7);
        let d = derive_counts(&g, &adj, &all).unwrap();
        assert_eq!(d.conservation_violations, vec![BlockId(0), BlockId(1), BlockId(6)]);
        // huge counts do not overflow
        let d = derive_counts(&g, &adj, &measure(10, &[(7, u64::MAX), (3, u64::MAX), (4, u64::MAX), (8, 0)])).unwrap();
        assert_eq!(d.edges[9], i128::from(u64::MAX));
    }

    // ---- random executions ----

    use crate::test_rng::Rng;

    use crate::random_cfg::{random_cfg as random_cfg_of, simulate, RandomCfg};

    fn random_cfg() -> impl Strategy<Value = RandomCfg> {
        random_cfg_of(7, 12, true)
    }

    #[test]
    fn fork_reentry_is_a_measured_virtual_edge() {
        // G1 with A (bb2) calling a function that forks: the parent runs P Q A R EXIT; the child resumes A after
        // the call (one re-entry) and goes A R C P Q B R EXIT. Merged true counts:
        //                 P->Q Q->A Q->B A->R B->R R->C C->P P->X R->X X->P A->X
        let truth: Vec<u64> = vec![2, 1, 1, 2, 1, 1, 1, 0, 2, 1, 0];
        let g = g1_with_termination();
        let adj = g.adjacency();
        let w = crate::weighting::bl94(&g, &adj);
        let plan = plan_edge_counters(&g, &w, &[true; 11]).unwrap();
        let counters: Vec<u64> = plan.chords.iter().map(|e| truth[e.index()]).collect();
        let d = derive_counts_with_reentries(&g, &adj, &plan.measured(&counters), &[(BlockId(2), 1)]).unwrap();
        assert_eq!(d.edges, truth.iter().map(|&c| i128::from(c)).collect::<Vec<_>>());
        assert!(d.is_consistent());
        // A was entered once and re-entered once; EXIT saw three departures for one invocation and one re-entry.
        assert_eq!(d.vertices[2], 2);
        assert_eq!(d.vertices[6], 2);
        assert_eq!(d.edges[9], 1);
        // Without the re-entry the same counters say A was left abnormally -1 times.
        let d = derive_counts(&g, &adj, &plan.measured(&counters)).unwrap();
        assert_eq!(d.edges[10], -1);
        assert!(!d.is_consistent());
        // A re-entry needs a block whose calls may not return.
        assert_eq!(
            derive_counts_with_reentries(&g, &adj, &plan.measured(&counters), &[(BlockId(1), 1)]),
            Err(PropagateError::ReentryWithoutTermination { block: BlockId(1) })
        );
        assert_eq!(
            derive_counts_with_reentries(&g, &adj, &plan.measured(&counters), &[(BlockId(6), 1)]),
            Err(PropagateError::ReentryWithoutTermination { block: BlockId(6) })
        );
    }

    /// One process of a forking execution: its edge counts and its re-entries per block.
    #[derive(Clone, Debug, Default)]
    struct Process {
        edges: Vec<u64>,
        reentries: Vec<u64>,
    }

    /// Like [`simulate`], with fork points: where a block has a `Termination` edge (its call may not return),
    /// the call may `fork()` (probability 1/5, at most 8 processes). The child's counters start at zero; it
    /// either dies inside the call (nothing of this activation is counted there) or resumes the activation
    /// after the call (one re-entry of the block, then any out-edge, `Termination` included), and then runs
    /// the rest of the program: the remaining runs. Children fork again. Returns every process's counts.
    fn simulate_forking(rc: &RandomCfg, rng: &mut Rng, runs: usize) -> Vec<Process> {
        let g = &rc.cfg;
        let adj = g.adjacency();
        let fresh = || Process { edges: vec![0; g.num_edges()], reentries: vec![0; g.num_blocks()] };
        // (resume block, runs left after the current one)
        let mut pending: Vec<(Option<BlockId>, usize)> = vec![(None, runs)];
        let mut done = Vec::new();
        while let Some((resume, mut runs_left)) = pending.pop() {
            let mut p = fresh();
            let mut current = resume;
            loop {
                let (mut v, mut resumed) = match current.take() {
                    Some(b) => {
                        p.reentries[b.index()] += 1;
                        (b, true)
                    }
                    None if runs_left == 0 => break,
                    None => {
                        runs_left -= 1;
                        p.edges[g.exit_to_entry().index()] += 1;
                        (g.entry(), false)
                    }
                };
                let mut steps = 0;
                while v != g.exit() {
                    let outs = adj.out_edges(v);
                    let term = outs.iter().copied().find(|&e| g.edge(e).kind == EdgeKind::Termination);
                    if term.is_some() && !resumed && done.len() + pending.len() < 7 && rng.below(5) == 0 {
                        // fork() inside the call; the child resumes with probability 3/4
                        if rng.below(4) != 0 {
                            pending.push((Some(v), runs_left));
                        }
                    }
                    resumed = false;
                    let real: Vec<EdgeId> =
                        outs.iter().copied().filter(|&e| g.edge(e).kind != EdgeKind::Termination).collect();
                    let e = match term {
                        Some(t) if rng.below(4) == 0 || real.is_empty() => t,
                        _ if steps > 40 => rc.progress[v.index()],
                        _ => real[rng.below(real.len())],
                    };
                    p.edges[e.index()] += 1;
                    v = g.edge(e).to;
                    steps += 1;
                }
            }
            done.push(p);
        }
        done
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn chord_counts_recover_every_edge_count(
            rc in random_cfg(),
            seed in any::<u64>(),
            runs in 0usize..6,
            weights in prop::collection::vec(0u8..6, 40),
            uninstrumentable in prop::collection::vec(0u8..8, 40),
        ) {
            let g = &rc.cfg;
            let adj = g.adjacency();
            let mut rng = Rng::new(seed);
            let truth = simulate(&rc, &mut rng, runs);
            let w: Vec<f64> = g.edge_ids().map(|e| f64::from(weights[e.index() % 40])).collect();
            let inst: Vec<bool> = g.edge_ids().map(|e| uninstrumentable[e.index() % 40] != 0).collect();
            // With a Termination edge in the entry block, EXIT->entry must be counted (see placement's docs).
            let entry_dies = adj.out_edges(g.entry()).iter().any(|&e| g.edge(e).kind == EdgeKind::Termination);
            let plan = match plan_edge_counters(g, &w, &inst) {
                Ok(p) => {
                    let same = plan_edge_counters_with_entry_counter(g, &w, &inst);
                    prop_assert_eq!(Ok(&p), same.as_ref());
                    p
                }
                Err(crate::placement::PlacementError::Uninstrumentable { .. }) => {
                    match plan_edge_counters(g, &w, &vec![true; g.num_edges()]) {
                        Ok(p) => p,
                        Err(err) => {
                            prop_assert!(entry_dies, "{}", err);
                            plan_edge_counters_with_entry_counter(g, &w, &vec![true; g.num_edges()]).unwrap()
                        }
                    }
                }
                Err(e) => panic!("{e}"),
            };
            prop_assert_eq!(plan.check_invariants(g), Ok(()));
            prop_assert_eq!(
                plan.num_counters(),
                g.num_edges() + count_components(g) - g.num_vertices()
            );
            let counters: Vec<u64> = plan.chords.iter().map(|e| truth[e.index()]).collect();
            let d = derive_counts(g, &adj, &plan.measured(&counters)).unwrap();
            let want: Vec<i128> = truth.iter().map(|&c| i128::from(c)).collect();
            prop_assert_eq!(&d.edges, &want);
            prop_assert!(d.conservation_violations.is_empty());
            for v in g.vertices() {
                let s: i128 = adj.in_edges(v).iter().map(|e| want[e.index()]).sum();
                prop_assert_eq!(d.vertices[v.index()], s);
            }
            prop_assert_eq!(d.vertices[g.entry().index()] >= runs as i128, true);
        }

        #[test]
        fn max_tree_beats_random_trees_with_the_same_forced_edges(
            rc in random_cfg(),
            weights in prop::collection::vec(0u8..6, 40),
            seeds in prop::collection::vec(any::<u64>(), 8),
        ) {
            let g = &rc.cfg;
            let w: Vec<f64> = g.edge_ids().map(|e| f64::from(weights[e.index() % 40])).collect();
            let plan = plan_edge_counters_with_entry_counter(g, &w, &vec![true; g.num_edges()]).unwrap();
            let best = plan.tree.cost(&w);
            let mut forced: Vec<EdgeId> =
                g.edge_ids().filter(|&e| g.edge(e).kind == EdgeKind::Termination).collect();
            if plan.tree.contains(g.exit_to_entry()) {
                forced.push(g.exit_to_entry());
            }
            for s in seeds {
                // a random spanning forest with the same forced edges: Kruskal under random weights
                let mut rng = Rng::new(s);
                let rw: Vec<f64> = g.edge_ids().map(|_| rng.below(1000) as f64).collect();
                let other = max_spanning_tree(g, &rw, &forced).unwrap();
                prop_assert_eq!(other.chords().count(), plan.num_counters());
                prop_assert!(best >= other.cost(&w), "max tree {} < random tree {}", best, other.cost(&w));
            }
        }

        /// Forking executions: each process's profile alone, and all of them summed (one merged file), give
        /// back every edge count exactly from the chords plus the measured re-entries, with flow conserved and
        /// no negative count.
        #[test]
        fn chord_counts_and_reentries_recover_forking_executions(
            rc in random_cfg(),
            seed in any::<u64>(),
            runs in 1usize..5,
            weights in prop::collection::vec(0u8..6, 40),
        ) {
            let g = &rc.cfg;
            let adj = g.adjacency();
            let w: Vec<f64> = g.edge_ids().map(|e| f64::from(weights[e.index() % 40])).collect();
            let plan = plan_edge_counters_with_entry_counter(g, &w, &vec![true; g.num_edges()]).unwrap();
            let procs = simulate_forking(&rc, &mut Rng::new(seed), runs);
            let mut merged = Process { edges: vec![0; g.num_edges()], reentries: vec![0; g.num_blocks()] };
            for p in &procs {
                for (m, c) in merged.edges.iter_mut().zip(&p.edges) {
                    *m += c;
                }
                for (m, c) in merged.reentries.iter_mut().zip(&p.reentries) {
                    *m += c;
                }
            }
            for p in procs.iter().chain([&merged]) {
                let counters: Vec<u64> = plan.chords.iter().map(|e| p.edges[e.index()]).collect();
                let re: Vec<(BlockId, u64)> = p
                    .reentries
                    .iter()
                    .enumerate()
                    .filter(|(_, &c)| c > 0)
                    .map(|(b, &c)| (BlockId::from_index(b), c))
                    .collect();
                let d = derive_counts_with_reentries(g, &adj, &plan.measured(&counters), &re).unwrap();
                let want: Vec<i128> = p.edges.iter().map(|&c| i128::from(c)).collect();
                prop_assert_eq!(&d.edges, &want);
                prop_assert!(d.is_consistent());
                for v in g.vertices() {
                    let mut s: i128 = adj.in_edges(v).iter().map(|e| want[e.index()]).sum();
                    if v.index() < g.num_blocks() {
                        s += i128::from(p.reentries[v.index()]);
                    }
                    prop_assert_eq!(d.vertices[v.index()], s);
                }
            }
        }

        #[test]
        fn never_panics_on_arbitrary_measurements(
            rc in random_cfg(),
            meas in prop::collection::vec(prop::option::of(any::<u64>()), 0..30),
        ) {
            let g = &rc.cfg;
            let _ = derive_counts(g, &g.adjacency(), &meas);
            let mut fitted = meas.clone();
            fitted.resize(g.num_edges(), Some(0));
            if let Ok(d) = derive_counts(g, &g.adjacency(), &fitted) {
                for (m, c) in fitted.iter().zip(&d.edges) {
                    if let Some(m) = m {
                        prop_assert_eq!(i128::from(*m), *c);
                    }
                }
            }
        }
    }
}
