//! Edge weightings that steer the maximum spanning tree: uniform, and the Ball–Larus static heuristic with its
//! nested-loop flow violation fixed.
//!
//! Ball & Larus, "Optimally Profiling and Tracing Programs", TOPLAS 16(3), 1994, §5 (heuristic); flow solving
//! after Wu & Larus, "Static Branch Frequency and Program Profile Analysis", MICRO-27, 1994, §4.
//!
//! Invariant: [`bl94`] returns finite, non-negative weights with weight(EXIT→entry) = 1 on every graph accepted by
//! [`Cfg::new`]; on every reducible CFG whose reachable blocks all reach EXIT it is a *weighting* in BL94's sense
//! (Kirchhoff's law holds at every vertex), and wherever the literal §5 rules already satisfy Kirchhoff
//! (e.g. single loops, the notes' G1 and Figure 4 analogue) it equals them.
//!
//! # The §5 heuristic ([`bl94_literal`])
//! DFS from the root finds back edges (EXIT→root excluded); loop-entries and natural loops come from
//! [`crate::loops`]; `LOOP_MULTIPLIER` = 10, branches are equally likely, weight(EXIT→root) = 1. In one
//! topological traversal of the back-edge-free graph, an edge gets its weight from the first rule that applies:
//! (1) a vertex's weight is the sum of its incoming non-back-edge weights; (2) if v is a loop-entry of weight W
//! with N = |loop-exits(v)|, each of its loop exits gets W/N; (3) with W = weight(v) · LOOP_MULTIPLIER for a
//! loop-entry (else weight(v)) and W_E the weight of v's outgoing loop-exit edges, each of v's N other outgoing
//! edges gets (W − W_E)/N. `Termination` edges are virtual: they get weight 0 and are not counted as loop exits
//! or branches.
//!
//! # The flaw, and the fix ([`bl94`])
//! Rule (2) fixes a loop's exit weights a priori. When one edge leaves several nested loops the outer
//! loop-entry assigns it first, the inner loop's remaining exits are sized for the inner loop alone, and the flow
//! that actually returns to the outer latch no longer matches what rule (3) sent around the outer loop: in the
//! notes' graph (S→O, O→I, I→X, X→I, X→L, X→EXIT, L→O, O→EXIT) flow fails at O (in 23/4, out 10) and at I
//! (in 397/4, out 95). Independently, rule (3) can yield W − W_E < 0 at a deeply nested branch, a negative
//! "weight". Tweaking which loop owns a multi-level exit cannot repair both, so pathprof keeps the heuristic only
//! for what it is good at — *local* branch preferences — and derives the flow from them:
//!
//! 1. Run the literal rules; at every vertex v turn the out-edge weights into branch probabilities
//!    p(e) = max(w(e), 0) / Σ max(w(·), 0). If that sum is 0, split equally over v's non-`Termination` edges;
//!    a block whose only out-edges are `Termination` edges (a block that can only die) splits over those, so it
//!    is not a sink.
//! 2. Solve the flow f(v) = [v = entry] + Σ_{e = u→v} f(u) · p(e) — expected visits per invocation of the Markov
//!    chain p, absorbed at EXIT — and set w(e) = f(src e) · p(e), w(EXIT→entry) = 1. It is solved exactly for
//!    reducible graphs by Wu & Larus's loop-by-loop elimination: innermost loop first, propagate a unit of flow
//!    from the header through the loop body in topological order (inner headers amplified by their already known
//!    factor), the flow returning along back edges is the header's cyclic probability cp, and the header's
//!    amplification is 1/(1 − cp); one final topological pass over the whole graph gives f.
//!
//! Why this is a weighting: at v ≠ entry, in(v) = f(v) by the definition of f, and out(v) = f(v) · Σ p = f(v); at
//! the entry the EXIT→entry weight 1 supplies the `[v = entry]` term; at EXIT, in(EXIT) is the probability of
//! absorption, which is 1 when every reachable block reaches EXIT — with positive probability, which holds
//! because the rules give every loop exit of a loop with positive weight a positive share and a vertex with no
//! positive out-weight splits equally. The elimination is exact on reducible graphs because every edge into a
//! loop body other than a back edge targets its header (the header dominates the body), so the flow inside a
//! loop is linear in the header's flow and the back edges into the header carry exactly cp · f(header). If the
//! literal weights already satisfy Kirchhoff, then f(v) = weight(v) solves the system, which has a unique
//! solution, so the result is unchanged.
//!
//! # Graphs outside the guarantee
//! - A loop that cannot be left (cp ≥ 1 − 1e-12: an infinite loop, or an irreducible region where cp is only
//!   approximated) gets amplification `LOOP_MULTIPLIER`, the heuristic's own assumption about a loop.
//! - Irreducible graphs: flow entering a loop body other than through its header is not amplified, so Kirchhoff
//!   may fail at those headers; weights stay finite and non-negative.
//! - Blocks unreachable from the entry, and their edges, get weight 0. A block with no out-edges at all is a sink
//!   and breaks Kirchhoff at itself and EXIT (`Cfg::new` allows it; the pass never builds it).
//! - Vertex flows are clamped to [`MAX_FLOW`] so deep nests of near-infinite loops stay finite.

use crate::dfs::{depth_first, DfsInfo};
use crate::graph::{Adjacency, BlockId, Cfg, EdgeId, EdgeKind};
use crate::loops::{natural_loops, LoopInfo};

/// BL94 §5's `LOOP_MULTIPLIER`: a loop-entry's outgoing weight is this multiple of its incoming weight.
pub const LOOP_MULTIPLIER: f64 = 10.0;

/// Upper bound on any vertex flow in [`bl94`]; keeps the weights finite on pathological nests of infinite loops.
pub const MAX_FLOW: f64 = 1e200;

/// A loop whose cyclic probability is within this distance of 1 is treated as one that cannot be left.
const MIN_EXIT_PROBABILITY: f64 = 1e-12;

/// Every edge weighs 1.0 (virtual ones included): the spanning tree then only breaks ties by `EdgeId`.
pub fn uniform(cfg: &Cfg) -> Vec<f64> {
    vec![1.0; cfg.num_edges()]
}

/// The BL94 §5 heuristic turned into a flow-satisfying weighting (see the module docs for the fix and its proof).
/// `adj` must be `cfg.adjacency()`. O(L · (|V| + |E|)) for L loops; iterative; deterministic.
pub fn bl94(cfg: &Cfg, adj: &Adjacency) -> Vec<f64> {
    let dfs = depth_first(cfg, adj);
    let loops = natural_loops(cfg, adj, &dfs);
    let raw = literal_rules(cfg, adj, &dfs, &loops);
    let prob = branch_probabilities(cfg, adj, &dfs, &raw);
    solve_flow(cfg, adj, &dfs, &loops, &prob)
}

/// The BL94 §5 rules applied literally (see the module docs). Not a weighting in general: it may break
/// Kirchhoff's law at nested loops with multi-level exits and may be negative at deeply nested branches.
/// Kept public for comparison and for reports; placement uses [`bl94`]. Edges out of unreachable blocks get 0.
pub fn bl94_literal(cfg: &Cfg, adj: &Adjacency) -> Vec<f64> {
    let dfs = depth_first(cfg, adj);
    let loops = natural_loops(cfg, adj, &dfs);
    literal_rules(cfg, adj, &dfs, &loops)
}

/// A vertex where a weighting breaks Kirchhoff's law.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowViolation {
    /// The vertex.
    pub vertex: BlockId,
    /// Sum of the weights of its incoming edges.
    pub in_sum: f64,
    /// Sum of the weights of its outgoing edges.
    pub out_sum: f64,
}

/// Checks Kirchhoff's law at every vertex: |in − out| ≤ `rel_tol` · max(in, out, 1). Returns the first violating
/// vertex (by id). Also rejects negative or non-finite weights (reported with both sums set to that weight at
/// the edge's source). `weights` shorter than the edge list counts missing weights as 0.
pub fn check_flow(cfg: &Cfg, adj: &Adjacency, weights: &[f64], rel_tol: f64) -> Result<(), FlowViolation> {
    let w = |e: EdgeId| weights.get(e.index()).copied().unwrap_or(0.0);
    for e in cfg.edge_ids() {
        let x = w(e);
        if !(x.is_finite() && x >= 0.0) {
            return Err(FlowViolation { vertex: cfg.edge(e).from, in_sum: x, out_sum: x });
        }
    }
    for v in cfg.vertices() {
        let in_sum: f64 = adj.in_edges(v).iter().map(|&e| w(e)).sum();
        let out_sum: f64 = adj.out_edges(v).iter().map(|&e| w(e)).sum();
        if (in_sum - out_sum).abs() > rel_tol * in_sum.max(out_sum).max(1.0) {
            return Err(FlowViolation { vertex: v, in_sum, out_sum });
        }
    }
    Ok(())
}

/// Rules (1)–(3) in one pass over the reverse postorder.
fn literal_rules(cfg: &Cfg, adj: &Adjacency, dfs: &DfsInfo, loops: &LoopInfo) -> Vec<f64> {
    let m = cfg.num_edges();
    let back = dfs.back_edge_mask(m);
    let mut weight: Vec<Option<f64>> = vec![None; m];
    // Real loop exits (Termination edges are virtual and never exits for the heuristic).
    let mut is_exit = vec![false; m];
    for l in &loops.loops {
        for &e in &l.exits {
            if cfg.edge(e).kind != EdgeKind::Termination {
                is_exit[e.index()] = true;
            }
        }
    }
    for e in cfg.edge_ids() {
        match cfg.edge(e).kind {
            EdgeKind::ExitToEntry => weight[e.index()] = Some(1.0),
            EdgeKind::Termination => weight[e.index()] = Some(0.0),
            _ => {}
        }
    }

    for &v in dfs.reverse_postorder().iter() {
        // (1) vertex weight: incoming non-back edges (EXIT→entry included; unassigned edges from dead blocks = 0).
        let w_v: f64 =
            adj.in_edges(v).iter().filter(|&&e| !back[e.index()]).map(|&e| weight[e.index()].unwrap_or(0.0)).sum();
        // (2) a loop-entry hands each of its loop exits W/N unless an outer loop-entry got there first.
        let lp = loops.loop_of(v);
        if let Some(l) = lp {
            let real: Vec<EdgeId> =
                l.exits.iter().copied().filter(|&e| cfg.edge(e).kind != EdgeKind::Termination).collect();
            let n = real.len() as f64;
            for e in real {
                weight[e.index()].get_or_insert(w_v / n);
            }
        }
        // (3) the remaining out-edges share what the loop exits leave.
        let big_w = if lp.is_some() { w_v * LOOP_MULTIPLIER } else { w_v };
        let mut w_e = 0.0;
        let mut others = Vec::new();
        for &e in adj.out_edges(v) {
            match cfg.edge(e).kind {
                EdgeKind::Termination | EdgeKind::ExitToEntry => {}
                _ if is_exit[e.index()] => w_e += weight[e.index()].unwrap_or(0.0),
                _ => others.push(e),
            }
        }
        let share = (big_w - w_e) / others.len().max(1) as f64;
        for e in others {
            weight[e.index()].get_or_insert(share);
        }
    }
    weight.into_iter().map(|w| w.unwrap_or(0.0)).collect()
}

/// Per-edge branch probabilities from the literal weights (step 1 of the fix). Edges out of unreachable
/// vertices and the EXIT→entry edge get 0.
fn branch_probabilities(cfg: &Cfg, adj: &Adjacency, dfs: &DfsInfo, raw: &[f64]) -> Vec<f64> {
    let mut prob = vec![0.0; cfg.num_edges()];
    for v in cfg.vertices() {
        if v == cfg.exit() || !dfs.is_reachable(v) {
            continue;
        }
        let outs = adj.out_edges(v);
        let real: Vec<EdgeId> = outs.iter().copied().filter(|&e| cfg.edge(e).kind != EdgeKind::Termination).collect();
        let candidates: Vec<EdgeId> = if real.is_empty() { outs.to_vec() } else { real };
        if candidates.is_empty() {
            continue; // a sink; see the module docs
        }
        let pos = |e: EdgeId| {
            let x = raw[e.index()];
            if x > 0.0 {
                x
            } else {
                0.0
            }
        };
        // Normalise by the maximum first so huge (even infinite) literal weights cannot produce NaN.
        let max = candidates.iter().map(|&e| pos(e)).fold(0.0, f64::max);
        let scaled: Vec<f64> = if max.is_infinite() {
            candidates.iter().map(|&e| if pos(e).is_infinite() { 1.0 } else { 0.0 }).collect()
        } else if max > 0.0 {
            candidates.iter().map(|&e| pos(e) / max).collect()
        } else {
            vec![1.0; candidates.len()]
        };
        let total: f64 = scaled.iter().sum();
        for (&e, s) in candidates.iter().zip(scaled) {
            prob[e.index()] = s / total;
        }
    }
    prob
}

/// Step 2 of the fix: Wu & Larus's loop-by-loop solution of the flow equations for the chain `prob`.
fn solve_flow(cfg: &Cfg, adj: &Adjacency, dfs: &DfsInfo, loops: &LoopInfo, prob: &[f64]) -> Vec<f64> {
    let n = cfg.num_vertices();
    let m = cfg.num_edges();
    let back = dfs.back_edge_mask(m);
    let rpo = dfs.reverse_postorder();
    let rpo_idx = dfs.rpo_index();
    let mut amp = vec![1.0f64; n];
    let mut acc = vec![0.0f64; n];
    let mut member = vec![usize::MAX; n];

    for li in loops.innermost_first() {
        let l = &loops.loops[li];
        let h = l.header;
        for &v in &l.body {
            member[v.index()] = li;
        }
        let mut body = l.body.clone();
        // Bodies hold reachable vertices only, so every rpo index exists.
        body.sort_by_key(|v| rpo_idx[v.index()]);
        let mut cp = 0.0f64;
        for &v in &body {
            let f = if v == h { 1.0 } else { (acc[v.index()] * amp[v.index()]).min(MAX_FLOW) };
            for &e in adj.out_edges(v) {
                let t = cfg.edge(e).to;
                let x = f * prob[e.index()];
                if back[e.index()] {
                    if t == h {
                        cp += x;
                    }
                } else if member[t.index()] == li && t != h {
                    acc[t.index()] += x;
                }
            }
        }
        for &v in &body {
            acc[v.index()] = 0.0;
        }
        amp[h.index()] = if cp < 1.0 - MIN_EXIT_PROBABILITY { 1.0 / (1.0 - cp) } else { LOOP_MULTIPLIER };
    }

    let mut weights = vec![0.0f64; m];
    let e2e = cfg.exit_to_entry();
    weights[e2e.index()] = 1.0;
    for &v in &rpo {
        let inflow: f64 = adj.in_edges(v).iter().filter(|&&e| !back[e.index()]).map(|&e| weights[e.index()]).sum();
        let f = (inflow * amp[v.index()]).min(MAX_FLOW);
        for &e in adj.out_edges(v) {
            if e != e2e {
                weights[e.index()] = f * prob[e.index()];
            }
        }
    }
    weights
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{
        ordered_cfg, test_cfg, Edge,
        Leave::{B, R, T},
    };
    use proptest::prelude::*;

    fn weights(g: &Cfg) -> Vec<f64> {
        bl94(g, &g.adjacency())
    }

    fn assert_weights(got: &[f64], want: &[f64]) {
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!((g - w).abs() <= 1e-12 * w.abs().max(1.0), "edge e{i}: got {g}, want {w}\n{got:?}");
        }
    }

    /// Notes A.10.2 G1: P=0 Q=1 A=2 B=3 R=4 C=5, EXIT=6.
    /// e0 P->Q, e1 Q->A, e2 Q->B, e3 A->R, e4 B->R, e5 R->C, e6 C->P, e7 P->EXIT, e8 R->EXIT, e9 EXIT->P
    fn g1() -> Cfg {
        test_cfg(6, &[(0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (4, 5), (5, 0)], &[0, 4])
    }

    #[test]
    fn ball_larus_1994_g1_weights() {
        let g = g1();
        let want = [9.5, 4.75, 4.75, 4.75, 4.75, 9.0, 9.0, 0.5, 0.5, 1.0];
        assert_weights(&bl94_literal(&g, &g.adjacency()), &want);
        let w = weights(&g);
        assert_weights(&w, &want);
        assert_eq!(check_flow(&g, &g.adjacency(), &w, 1e-12), Ok(()));
    }

    #[test]
    fn ball_larus_1994_fig4_analogue_weights() {
        // notes A.10.3: a=0 b=1 c=2 d=3 e=4 f=5 g=6 h=7, EXIT=8
        // e0 a->b, e1 a->f, e2 b->c, e3 b->d, e4 c->e, e5 d->e, e6 e->b, e7 e->f, e8 f->g, e9 f->h,
        // e10 g->EXIT, e11 h->EXIT, e12 EXIT->a
        let g = test_cfg(8, &[(0, 1), (0, 5), (1, 2), (1, 3), (2, 4), (3, 4), (4, 1), (4, 5), (5, 6), (5, 7)], &[6, 7]);
        let want = [0.5, 0.5, 2.5, 2.5, 2.5, 2.5, 4.5, 0.5, 0.5, 0.5, 0.5, 0.5, 1.0];
        assert_weights(&bl94_literal(&g, &g.adjacency()), &want);
        assert_weights(&weights(&g), &want);
    }

    /// Notes A.7 pitfall: S=0 O=1 I=2 X=3 L=4, EXIT=5.
    /// e0 S->O, e1 O->I, e2 I->X, e3 X->I, e4 X->L, e5 L->O, e6 X->EXIT, e7 O->EXIT, e8 EXIT->S
    fn nested() -> Cfg {
        test_cfg(5, &[(0, 1), (1, 2), (2, 3), (3, 2), (3, 4), (4, 1)], &[3, 1])
    }

    #[test]
    fn ball_larus_1994_nested_loop_pitfall_literal_rules_break_flow() {
        let g = nested();
        let adj = g.adjacency();
        let lit = bl94_literal(&g, &adj);
        assert_weights(&lit, &[1.0, 9.5, 95.0, 359.0 / 4.0, 4.75, 4.75, 0.5, 0.5, 1.0]);
        let v = check_flow(&g, &adj, &lit, 1e-9).unwrap_err();
        assert_eq!(v, FlowViolation { vertex: BlockId(1), in_sum: 23.0 / 4.0, out_sum: 10.0 });
    }

    #[test]
    fn ball_larus_1994_nested_loop_pitfall_fixed_weighting_is_a_flow() {
        let g = nested();
        let adj = g.adjacency();
        let w = weights(&g);
        assert_eq!(check_flow(&g, &adj, &w, 1e-12), Ok(()));
        // Hand solution of the chain with the literal branch probabilities:
        // p(O->I) = 19/20, p(X->I) = 359/380, p(X->L) = 19/380, p(X->EXIT) = 2/380.
        // amp(I) = 380/21; per unit at O, L gets 19/20 * 380/21 * 19/380 = 361/420, so f(O) = 420/59.
        let f_o = 420.0 / 59.0;
        let f_i_in = f_o * 19.0 / 20.0;
        let f_x = f_i_in * 380.0 / 21.0;
        let want = [
            1.0,
            f_i_in,
            f_x,
            f_x * 359.0 / 380.0,
            f_x * 19.0 / 380.0,
            f_x * 19.0 / 380.0,
            f_x * 2.0 / 380.0,
            f_o / 20.0,
            1.0,
        ];
        assert_weights(&w, &want);
        // Both exits together carry exactly the one invocation.
        assert!((w[6] + w[7] - 1.0).abs() < 1e-12);
    }

    #[test]
    fn termination_edges_weigh_zero_unless_the_block_can_only_die() {
        // 0 -> 1, 0 -> 2; 1 has a Termination edge and a Return; 2 only a Termination edge (calls exit()).
        let g = ordered_cfg(3, &[(0, 1, B), (0, 2, B), (1, 3, T), (1, 3, R), (2, 3, T)]);
        let adj = g.adjacency();
        assert_eq!(bl94_literal(&g, &adj), vec![0.5, 0.5, 0.0, 0.5, 0.0, 1.0]);
        let w = bl94(&g, &adj);
        assert_weights(&w, &[0.5, 0.5, 0.0, 0.5, 0.5, 1.0]);
        assert_eq!(check_flow(&g, &adj, &w, 1e-12), Ok(()));
    }

    #[test]
    fn infinite_loops_and_dead_code_get_finite_weights() {
        // 0 -> 1 -> 1 (infinite self-loop), 0 -> 2 -> 3 -> 2 (infinite loop), 4 dead, 0 returns
        let g = test_cfg(5, &[(0, 1), (1, 1), (0, 2), (2, 3), (3, 2), (4, 0), (4, 4)], &[0]);
        let w = weights(&g);
        assert!(w.iter().all(|x| x.is_finite() && *x >= 0.0), "{w:?}");
        assert_eq!(w[5], 0.0);
        assert_eq!(w[6], 0.0);
        assert_eq!(*w.last().unwrap(), 1.0);
    }

    #[test]
    fn uniform_is_all_ones() {
        assert_eq!(uniform(&g1()), vec![1.0; 10]);
    }

    // ---- random graphs ----

    use crate::test_rng::Rng;

    /// Random structured (hence reducible) programs: sequences, if/else, switches with parallel edges, while and
    /// do-while loops, conditional break/continue to any enclosing loop and return from anywhere (multi-level
    /// exits), self-loops, and blocks with Termination edges. Every block is reachable and reaches EXIT.
    struct Structured {
        rng: Rng,
        blocks: u32,
        budget: u32,
        branches: Vec<(u32, u32)>,
        rets: Vec<u32>,
        terms: Vec<u32>,
    }

    impl Structured {
        fn block(&mut self) -> u32 {
            self.blocks += 1;
            self.blocks - 1
        }
        fn edge(&mut self, a: u32, b: u32) {
            self.branches.push((a, b));
        }
        fn seq(&mut self, mut cur: u32, depth: u32, loops: &mut Vec<(u32, u32)>) -> u32 {
            for _ in 0..=self.rng.below(3) as u32 {
                cur = self.stmt(cur, depth, loops);
            }
            cur
        }
        fn stmt(&mut self, cur: u32, depth: u32, loops: &mut Vec<(u32, u32)>) -> u32 {
            let choice = if self.budget == 0 || depth > 5 { 0 } else { self.rng.below(11) as u32 };
            self.budget = self.budget.saturating_sub(1);
            let after = |s: &mut Self, cur: u32| {
                let n = s.block();
                s.edge(cur, n);
                n
            };
            match choice {
                1 => {
                    let (t, e, j) = (self.block(), self.block(), self.block());
                    self.edge(cur, t);
                    self.edge(cur, e);
                    let t2 = self.seq(t, depth + 1, loops);
                    let e2 = self.seq(e, depth + 1, loops);
                    self.edge(t2, j);
                    self.edge(e2, j);
                    j
                }
                2 | 8 => {
                    let (t, j) = (self.block(), self.block());
                    self.edge(cur, t);
                    if choice == 8 {
                        self.edge(cur, t); // a switch with two cases to one block
                    }
                    self.edge(cur, j);
                    let t2 = self.seq(t, depth + 1, loops);
                    self.edge(t2, j);
                    j
                }
                3 => {
                    let (h, b, x) = (self.block(), self.block(), self.block());
                    self.edge(cur, h);
                    self.edge(h, b);
                    self.edge(h, x);
                    loops.push((h, x));
                    let b2 = self.seq(b, depth + 1, loops);
                    loops.pop();
                    self.edge(b2, h);
                    x
                }
                4 => {
                    let (b, x) = (self.block(), self.block());
                    self.edge(cur, b);
                    loops.push((b, x));
                    let b2 = self.seq(b, depth + 1, loops);
                    loops.pop();
                    let l = self.block();
                    self.edge(b2, l);
                    self.edge(l, b);
                    self.edge(l, x);
                    x
                }
                5 | 6 if !loops.is_empty() => {
                    let i = self.rng.below(loops.len());
                    let target = if choice == 5 { loops[i].1 } else { loops[i].0 };
                    self.edge(cur, target);
                    after(self, cur)
                }
                7 => {
                    self.rets.push(cur);
                    after(self, cur)
                }
                9 => {
                    self.edge(cur, cur);
                    after(self, cur)
                }
                10 => {
                    self.terms.push(cur);
                    after(self, cur)
                }
                _ => after(self, cur),
            }
        }
    }

    fn build(blocks: u32, branches: &[(u32, u32)], rets: &[u32], terms: &[u32]) -> Cfg {
        let mut succ = vec![0u32; blocks as usize];
        let mut all = Vec::new();
        for &(f, t) in branches {
            all.push(Edge { from: BlockId(f), to: BlockId(t), kind: EdgeKind::Branch { succ: succ[f as usize] } });
            succ[f as usize] += 1;
        }
        for &r in rets {
            all.push(Edge { from: BlockId(r), to: BlockId(blocks), kind: EdgeKind::Return });
        }
        for &r in terms {
            all.push(Edge { from: BlockId(r), to: BlockId(blocks), kind: EdgeKind::Termination });
        }
        all.push(Edge { from: BlockId(blocks), to: BlockId(0), kind: EdgeKind::ExitToEntry });
        Cfg::new(blocks, all).unwrap()
    }

    fn structured(seed: u64, budget: u32) -> Cfg {
        let mut s = Structured {
            rng: Rng::new(seed),
            blocks: 1,
            budget,
            branches: Vec::new(),
            rets: Vec::new(),
            terms: Vec::new(),
        };
        let end = s.seq(0, 0, &mut Vec::new());
        s.rets.push(end);
        build(s.blocks, &s.branches, &s.rets, &s.terms)
    }

    /// Whether every DFS back edge's target dominates its source (the graph's reachable part is reducible).
    fn reducible(g: &Cfg) -> bool {
        let adj = g.adjacency();
        let d = depth_first(g, &adj);
        let n = g.num_vertices();
        // iterative dominator sets (dom[v][u] = u dominates v)
        let mut dom = vec![vec![true; n]; n];
        dom[0] = (0..n).map(|u| u == 0).collect();
        let mut changed = true;
        while changed {
            changed = false;
            for v in d.reverse_postorder().into_iter().skip(1) {
                let mut x = vec![true; n];
                for &e in adj.in_edges(v) {
                    let u = g.edge(e).from;
                    if d.is_reachable(u) && g.edge(e).kind != EdgeKind::ExitToEntry {
                        for (xi, &di) in x.iter_mut().zip(&dom[u.index()]) {
                            *xi &= di;
                        }
                    }
                }
                x[v.index()] = true;
                if x != dom[v.index()] {
                    dom[v.index()] = x;
                    changed = true;
                }
            }
        }
        d.back_edges.iter().all(|&e| dom[g.edge(e).from.index()][g.edge(e).to.index()])
    }

    /// Whether every reachable block reaches EXIT through edges that bl94 gives a positive share: real edges,
    /// or Termination edges of blocks that have nothing else.
    fn all_reach_exit(g: &Cfg) -> bool {
        let adj = g.adjacency();
        let d = depth_first(g, &adj);
        let mut ok = vec![false; g.num_vertices()];
        ok[g.exit().index()] = true;
        let mut work = vec![g.exit()];
        while let Some(w) = work.pop() {
            for &e in adj.in_edges(w) {
                let ed = g.edge(e);
                let only_term = adj.out_edges(ed.from).iter().all(|&o| g.edge(o).kind == EdgeKind::Termination);
                let usable = match ed.kind {
                    EdgeKind::ExitToEntry => false,
                    EdgeKind::Termination => only_term,
                    _ => true,
                };
                if usable && !ok[ed.from.index()] {
                    ok[ed.from.index()] = true;
                    work.push(ed.from);
                }
            }
        }
        g.vertices().all(|v| !d.is_reachable(v) || ok[v.index()])
    }

    fn arbitrary_cfg() -> impl Strategy<Value = Cfg> {
        (1u32..8)
            .prop_flat_map(|n| {
                (Just(n), prop::collection::vec((0..n, 0..=n), 0..16), prop::collection::vec(0..n, 0..3))
            })
            .prop_map(|(n, raw, terms)| {
                let branches: Vec<(u32, u32)> = raw.iter().copied().filter(|&(_, t)| t < n).collect();
                let rets: Vec<u32> = raw.iter().filter(|&&(_, t)| t == n).map(|&(f, _)| f).collect();
                build(n, &branches, &rets, &terms)
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn bl94_is_a_flow_on_random_structured_cfgs(seed in any::<u64>(), budget in 0u32..40) {
            let g = structured(seed, budget);
            prop_assert!(reducible(&g));
            let adj = g.adjacency();
            let w = bl94(&g, &adj);
            prop_assert_eq!(w[g.exit_to_entry().index()], 1.0);
            prop_assert_eq!(check_flow(&g, &adj, &w, 1e-9), Ok(()));
        }

        #[test]
        fn bl94_is_a_flow_on_random_reducible_cfgs(g in arbitrary_cfg()) {
            let adj = g.adjacency();
            let w = bl94(&g, &adj);
            prop_assert!(w.iter().all(|x| x.is_finite() && *x >= 0.0), "{:?}", w);
            prop_assert_eq!(w[g.exit_to_entry().index()], 1.0);
            if reducible(&g) && all_reach_exit(&g) {
                prop_assert_eq!(check_flow(&g, &adj, &w, 1e-9), Ok(()));
            }
        }
    }
}
