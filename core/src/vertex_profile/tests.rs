//! Vprof(Ecnt) placement and derivation: BL94's Figure 4 analogue and hand-derived runs, then random graphs
//! against brute force (every simple cycle of the uncounted edges; simulated executions).

use super::*;
use crate::graph::{
    ordered_cfg, test_cfg,
    Leave::{B, R},
};
use crate::spanning::SpanningTree;
use crate::test_rng::Rng;
use crate::weighting::{bl94, uniform};
use proptest::prelude::*;

const X: Option<i128> = None;

fn ids(v: &[u32]) -> Vec<EdgeId> {
    v.iter().map(|&i| EdgeId(i)).collect()
}

fn measured_of(cfg: &Cfg, counted: &[EdgeId], truth: &[u64]) -> Vec<Option<u64>> {
    let mut m = vec![None; cfg.num_edges()];
    for &e in counted {
        m[e.index()] = Some(truth[e.index()]);
    }
    m
}

/// BL94 Figure 4 analogue (checked notes, A.10.3): a repeat-until loop with a diamond body, skipped by a→f.
/// a0 b1 c2 d3 e4 f5 g6 h7, EXIT 8;
/// e0 a→b, e1 a→f, e2 b→c, e3 b→d, e4 c→e, e5 d→e, e6 e→b, e7 e→f, e8 f→g, e9 f→h, e10 g→X, e11 h→X, e12 X→a.
fn figure4() -> Cfg {
    test_cfg(8, &[(0, 1), (0, 5), (1, 2), (1, 3), (2, 4), (3, 4), (4, 1), (4, 5), (5, 6), (5, 7)], &[6, 7])
}

fn figure4_weights() -> Vec<f64> {
    vec![0.5, 0.5, 2.5, 2.5, 2.5, 2.5, 4.5, 0.5, 0.5, 0.5, 0.5, 0.5, 1.0]
}

#[test]
fn figure4_analogue_drops_the_counter_on_e_to_f() {
    let g = figure4();
    // The notes' §5 heuristic weights (bl94 computes them up to rounding; exact values keep the ties exact).
    let w = figure4_weights();
    assert!(bl94(&g, &g.adjacency()).iter().zip(&w).all(|(a, b)| (a - b).abs() < 1e-9));
    let plan = plan_block_counters(&g, &w, &[true; 13]).unwrap();
    // Eprof(Ecnt): |E| - |V| + 1 = 13 - 9 + 1 = 5 counters of cost 13/2; the tree (hand-run Kruskal) leaves
    // c->e, d->e, e->f, g->X, h->X as chords.
    assert_eq!(plan.edge_plan.chords, ids(&[4, 5, 7, 10, 11]));
    // Only e->f's cycle {e->f, a->f, a->b, e->b} is pipeless (c->e, d->e close directed cycles with e->b;
    // g->X, h->X with X->a, a->f, f->g/h): 4 counters of cost 6, the paper's optimum for Figure 4.
    assert_eq!(plan.removed, ids(&[7]));
    assert_eq!(plan.counted, ids(&[4, 5, 10, 11]));
    assert_eq!((plan.num_counters(), plan.edge_mode_counters()), (4, 5));
    let cost: f64 = plan.counted.iter().map(|e| w[e.index()]).sum();
    assert_eq!(cost, 6.0);
}

#[test]
fn figure4_run_derives_every_block_but_not_the_pipeless_cycle_edges() {
    let g = figure4();
    let plan = plan_block_counters(&g, &figure4_weights(), &[true; 13]).unwrap();
    // One run a b c e b d e f g EXIT: counters c->e 1, d->e 1, g->X 1, h->X 0.
    let d = derive_block_counts(&g, &g.adjacency(), &plan.measured(&[1, 1, 1, 0]), &[]).unwrap();
    //                     a        b        c        d        e        f        g        h        EXIT
    assert_eq!(d.vertices, [Some(1), Some(2), Some(1), Some(1), Some(2), Some(1), Some(1), Some(0), Some(1)]);
    // a->b, a->f, e->b, e->f lie on the uncounted pipeless cycle: not reported (Figure 8 would say 0, 1, 2, 0
    // where the run took 1, 0, 1, 1).
    assert_eq!(d.edges, [X, X, Some(1), Some(1), Some(1), Some(1), X, X, Some(1), Some(0), Some(1), Some(0), Some(1)]);
    assert!(d.conservation_violations.is_empty());
}

#[test]
fn a_piped_uncounted_cycle_leaves_its_pipes_underived() {
    // Figure 4 with the counter on e->f kept and c->e's dropped: the uncounted cycle c->e->b->c is directed.
    // Runs "a b c e b d e f g X" and "a b d e f g X" give the same counters (e->f 1, d->e 1, g->X 1, h->X 0)
    // but b ran 2 vs 1, c 1 vs 0, e 2 vs 1 times: those three are not derivable, the rest is.
    let g = figure4();
    let counted = ids(&[5, 7, 10, 11]);
    let mut mask = vec![false; 13];
    counted.iter().for_each(|e| mask[e.index()] = true);
    let det = determined(&g, &mask);
    assert_eq!(det.vertices, [true, false, false, true, false, true, true, true, true]);
    assert!(!det.all_vertices());
    let truth = [1, 0, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0, 1];
    let d = derive_block_counts(&g, &g.adjacency(), &measured_of(&g, &counted, &truth), &[]).unwrap();
    assert_eq!(d.vertices, [Some(1), X, X, Some(1), X, Some(1), Some(1), Some(0), Some(1)]);
}

/// Two pipeless cycles sharing the edge e->f: s0 a1 e2 h3 b4 f5 g6, EXIT 7;
/// e0 s→a, e1 s→e, e2 s→h, e3 a→b, e4 a→f, e5 e→b, e6 e→f, e7 e→g, e8 h→f, e9 h→g, e10 b→X, e11 f→X,
/// e12 g→X, e13 X→s. Weights put e→b, e→f, a→f, e→g, h→f, s→a in the tree.
fn shared_edge() -> (Cfg, Vec<f64>) {
    let g = ordered_cfg(
        7,
        &[
            (0, 1, B),
            (0, 2, B),
            (0, 3, B),
            (1, 4, B),
            (1, 5, B),
            (2, 4, B),
            (2, 5, B),
            (2, 6, B),
            (3, 5, B),
            (3, 6, B),
            (4, 7, R),
            (5, 7, R),
            (6, 7, R),
        ],
    );
    let mut w = vec![1.0; 14];
    for e in [0, 4, 5, 6, 7, 8] {
        w[e] = 10.0;
    }
    (g, w)
}

/// Figure 11 as printed: chords by decreasing weight (ties by id), a counter dropped when its cycle is pipeless
/// and has no vertex marked by an earlier drop. The reference pathprof's placement must dominate.
fn figure11(cfg: &Cfg, tree: &SpanningTree, weights: &[f64]) -> Vec<EdgeId> {
    let forest = Forest::new(cfg, tree.as_mask());
    let mut chords: Vec<EdgeId> = tree.chords().collect();
    chords.sort_by(|a, b| weights[b.index()].partial_cmp(&weights[a.index()]).unwrap().then(a.cmp(b)));
    let mut marked = vec![false; cfg.num_vertices()];
    let mut scratch = vec![0i64; cfg.num_vertices()];
    let mut removed = Vec::new();
    for e in chords {
        let cycle = forest.cycle(cfg, e);
        let vertices: Vec<BlockId> = cycle.iter().flat_map(|&(e, _)| [cfg.edge(e).from, cfg.edge(e).to]).collect();
        if forest.pipes(cfg, e, &mut scratch).is_empty() && vertices.iter().all(|v| !marked[v.index()]) {
            vertices.iter().for_each(|v| marked[v.index()] = true);
            removed.push(e);
        }
    }
    removed.sort();
    removed
}

#[test]
fn two_pipeless_cycles_through_one_edge_both_lose_their_counters() {
    let (g, w) = shared_edge();
    let plan = plan_block_counters(&g, &w, &[true; 14]).unwrap();
    // 14 - 8 + 1 = 7 edge-mode counters: a->b, h->g, s->e, s->h and the three returns.
    assert_eq!(plan.edge_plan.chords, ids(&[1, 2, 3, 9, 10, 11, 12]));
    // a->b's cycle a->b<-e->f<-a and h->g's cycle h->g<-e->f<-h are pipeless; s->e, s->h and the returns close
    // cycles with pipes (s->e->f, s->h->f, b->X->s).
    assert_eq!(plan.removed, ids(&[3, 9]));
    assert_eq!(plan.num_counters(), 5);
    // Figure 11's marking keeps h->g's counter (its cycle meets a->b's at e and f).
    assert_eq!(figure11(&g, &plan.edge_plan.tree, &w), ids(&[3]));
    // Yet every block is derivable: the combined cycle a->b<-e->g<-h->f<-a is pipeless too. Two different
    // run sets with the same counters (s->e 2, s->h 1, b->X 1, f->X 1, g->X 2) and the same block counts:
    //   {s a b X, s e f X, s h g X, s e g X} and {s a f X, s e b X, s h g X, s e g X}.
    //                     s->a s->e s->h a->b a->f e->b e->f e->g h->f h->g b->X f->X g->X X->s
    let run1: [u64; 14] = [1, 2, 1, 1, 0, 0, 1, 1, 0, 1, 1, 1, 2, 4];
    let run2: [u64; 14] = [1, 2, 1, 0, 1, 1, 0, 1, 0, 1, 1, 1, 2, 4];
    for run in [run1, run2] {
        let d = derive_block_counts(&g, &g.adjacency(), &measured_of(&g, &plan.counted, &run), &[]).unwrap();
        //                     s        a        e        h        b        f        g        EXIT
        assert_eq!(d.vertices, [Some(4), Some(1), Some(2), Some(1), Some(1), Some(1), Some(2), Some(4)]);
    }
}

#[test]
fn parallel_switch_cases_need_one_counter_between_them() {
    // s0 switches to x1 twice (two cases) and to y2; x1 -> y2; y2 returns. e0 s->x, e1 s->x, e2 s->y, e3 x->y,
    // e4 y->X, e5 X->s. Edge mode: 6 - 4 + 1 = 3 counters (e1, e3, e4); the parallel pair is a pipeless
    // 2-cycle, so e1's counter goes.
    let g = test_cfg(3, &[(0, 1), (0, 1), (0, 2), (1, 2)], &[2]);
    let plan = plan_block_counters(&g, &uniform(&g), &[true; 6]).unwrap();
    assert_eq!(plan.edge_plan.chords, ids(&[1, 3, 4]));
    assert_eq!(plan.counted, ids(&[3, 4]));
    // Runs s x(case 0) y X, s x(case 1) y X, s y X: x->y 2, y->X 3.
    let d = derive_block_counts(&g, &g.adjacency(), &plan.measured(&[2, 3]), &[]).unwrap();
    assert_eq!(d.vertices, [Some(3), Some(2), Some(3), Some(3)]);
    assert_eq!(d.edges, [X, X, Some(1), Some(2), Some(3), Some(3)]);
}

#[test]
fn bad_inputs_are_errors_not_panics() {
    let g = figure4();
    assert_eq!(
        derive_block_counts(&g, &g.adjacency(), &[None; 3], &[]),
        Err(PropagateError::MeasuredCountMismatch { expected: 13, found: 3 })
    );
    assert!(matches!(
        plan_block_counters(&g, &[1.0; 13], &[true; 2]),
        Err(PlacementError::InstrumentableCountMismatch { .. })
    ));
}

// ---- random graphs ----

use crate::random_cfg::{random_cfg as random_cfg_of, simulate, RandomCfg};

/// Random graphs without Termination edges (block mode plans as edge mode does around them).
fn random_cfg(max_blocks: u32, max_extra: usize) -> impl Strategy<Value = RandomCfg> {
    random_cfg_of(max_blocks, max_extra, false)
}

/// Every simple cycle of the undirected multigraph of `edges` (self-loops included), each as its edge sequence
/// from its lowest vertex, in both directions.
fn simple_cycles(cfg: &Cfg, edges: &[EdgeId]) -> Vec<Vec<EdgeId>> {
    let n = cfg.num_vertices();
    let mut nbrs: Vec<Vec<(EdgeId, usize)>> = vec![Vec::new(); n];
    let mut cycles = Vec::new();
    for &e in edges {
        let (a, b) = (cfg.edge(e).from.index(), cfg.edge(e).to.index());
        if a == b {
            cycles.push(vec![e]);
        } else {
            nbrs[a].push((e, b));
            nbrs[b].push((e, a));
        }
    }
    fn walk(
        nbrs: &[Vec<(EdgeId, usize)>],
        start: usize,
        v: usize,
        path: &mut Vec<EdgeId>,
        on: &mut [bool],
        out: &mut Vec<Vec<EdgeId>>,
    ) {
        for &(e, w) in &nbrs[v] {
            if path.contains(&e) {
                continue;
            }
            if w == start {
                let mut c = path.clone();
                c.push(e);
                out.push(c);
            } else if w > start && !on[w] {
                on[w] = true;
                path.push(e);
                walk(nbrs, start, w, path, on, out);
                path.pop();
                on[w] = false;
            }
        }
    }
    for s in 0..n {
        let mut on = vec![false; n];
        on[s] = true;
        walk(&nbrs, s, s, &mut Vec::new(), &mut on, &mut cycles);
    }
    cycles
}

/// The pipes of a simple cycle given as its edge sequence from `start`: the vertices where one cycle edge
/// enters and the other leaves (BL94 §2). A self-loop's vertex is a pipe.
fn cycle_pipes(cfg: &Cfg, cycle: &[EdgeId]) -> Vec<BlockId> {
    if cycle.len() == 1 {
        return vec![cfg.edge(cycle[0]).from];
    }
    // Recover the vertex sequence: v0 is the vertex the first and last edges share.
    let (first, last) = (cfg.edge(cycle[0]), cfg.edge(*cycle.last().unwrap()));
    let mut v = if first.from == last.from || first.from == last.to { first.from } else { first.to };
    let mut pipes = Vec::new();
    for i in 0..cycle.len() {
        let arriving = cfg.edge(cycle[(i + cycle.len() - 1) % cycle.len()]);
        let leaving = cfg.edge(cycle[i]);
        if (arriving.to == v) == (leaving.from == v) {
            pipes.push(v);
        }
        v = if leaving.from == v { leaving.to } else { leaving.from };
    }
    pipes
}

fn uncounted(cfg: &Cfg, counted: &[bool]) -> Vec<EdgeId> {
    cfg.edge_ids().filter(|e| !counted[e.index()]).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn block_plan_derives_every_simulated_block_count(
        rc in random_cfg(9, 14),
        seed in any::<u64>(),
        runs in 0usize..6,
        weights in prop::collection::vec(0u8..6, 40),
        uninstrumentable in prop::collection::vec(0u8..8, 40),
    ) {
        let g = &rc.cfg;
        let adj = g.adjacency();
        let w: Vec<f64> = g.edge_ids().map(|e| f64::from(weights[e.index() % 40])).collect();
        let inst: Vec<bool> = g.edge_ids().map(|e| uninstrumentable[e.index() % 40] != 0).collect();
        let plan = match plan_block_counters(g, &w, &inst) {
            Ok(p) => p,
            Err(PlacementError::Uninstrumentable { .. }) => plan_block_counters(g, &w, &vec![true; g.num_edges()]).unwrap(),
            Err(e) => panic!("{e}"),
        };
        // Never more counters than edge mode; counted and removed split the chords; Figure 11 dominated.
        prop_assert!(plan.num_counters() <= plan.edge_mode_counters());
        let mut all = plan.counted.clone();
        all.extend(&plan.removed);
        all.sort();
        prop_assert_eq!(&all, &plan.edge_plan.chords);
        let paper = figure11(g, &plan.edge_plan.tree, &w);
        prop_assert!(paper.iter().all(|e| plan.removed.contains(e)), "figure 11 {:?} vs {:?}", paper, plan.removed);
        let mut mask = vec![false; g.num_edges()];
        plan.counted.iter().for_each(|e| mask[e.index()] = true);
        prop_assert!(determined(g, &mask).all_vertices());
        // Maximal for its tree: dropping any remaining counter leaves some block underivable.
        for &e in &plan.counted {
            mask[e.index()] = false;
            prop_assert!(!determined(g, &mask).all_vertices(), "{} could go too", e);
            mask[e.index()] = true;
        }

        let mut rng = Rng::new(seed);
        let truth = simulate(&rc, &mut rng, runs);
        let counters: Vec<u64> = plan.counted.iter().map(|e| truth[e.index()]).collect();
        let d = derive_block_counts(g, &adj, &plan.measured(&counters), &[]).unwrap();
        prop_assert!(d.conservation_violations.is_empty());
        for v in g.vertices() {
            let s: u64 = adj.in_edges(v).iter().map(|e| truth[e.index()]).sum();
            prop_assert_eq!(d.vertices[v.index()], Some(i128::from(s)));
        }
        for e in g.edge_ids() {
            if let Some(c) = d.edges[e.index()] {
                prop_assert_eq!(c, i128::from(truth[e.index()]));
            }
        }
    }

    #[test]
    fn block_plan_leaves_no_simple_piped_cycle_uncounted(
        rc in random_cfg(6, 8),
        weights in prop::collection::vec(0u8..6, 40),
    ) {
        // The BL94 theorem's condition, checked by enumerating every simple cycle of E - Ecnt.
        let g = &rc.cfg;
        let w: Vec<f64> = g.edge_ids().map(|e| f64::from(weights[e.index() % 40])).collect();
        let plan = plan_block_counters(g, &w, &vec![true; g.num_edges()]).unwrap();
        let mut mask = vec![false; g.num_edges()];
        plan.counted.iter().for_each(|e| mask[e.index()] = true);
        for c in simple_cycles(g, &uncounted(g, &mask)) {
            prop_assert!(cycle_pipes(g, &c).is_empty(), "piped uncounted cycle {:?}", c);
        }
    }

    #[test]
    fn any_counter_set_derives_exactly_the_blocks_no_piped_cycle_passes_through(
        rc in random_cfg(6, 8),
        pick in prop::collection::vec(any::<bool>(), 40),
        seed in any::<u64>(),
        runs in 0usize..5,
    ) {
        // Arbitrary counted sets (a corrupt or foreign placement): a vertex is derivable iff no simple
        // uncounted cycle has a pipe at it (brute force), and every count reported is the simulated one.
        let g = &rc.cfg;
        let adj = g.adjacency();
        let counted: Vec<bool> = g.edge_ids().map(|e| pick[e.index() % 40]).collect();
        let mut want = vec![true; g.num_vertices()];
        for c in simple_cycles(g, &uncounted(g, &counted)) {
            for v in cycle_pipes(g, &c) {
                want[v.index()] = false;
            }
        }
        prop_assert_eq!(&determined(g, &counted).vertices, &want);
        let mut rng = Rng::new(seed);
        let truth = simulate(&rc, &mut rng, runs);
        let measured: Vec<Option<u64>> =
            g.edge_ids().map(|e| counted[e.index()].then(|| truth[e.index()])).collect();
        let d = derive_block_counts(g, &adj, &measured, &[]).unwrap();
        for v in g.vertices() {
            let s: u64 = adj.in_edges(v).iter().map(|e| truth[e.index()]).sum();
            prop_assert_eq!(d.vertices[v.index()], want[v.index()].then_some(i128::from(s)));
        }
        for e in g.edge_ids() {
            if let Some(c) = d.edges[e.index()] {
                prop_assert_eq!(c, i128::from(truth[e.index()]));
            }
        }
    }
}
