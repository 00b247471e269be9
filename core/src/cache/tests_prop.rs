//! Property tests: Algorithm 1 meets Definition 1 on random CFGs, its UPs cut every walk exactly, and (below)
//! the static cache categories agree with a concrete cache simulation of random executions.

use super::stats::MeasurementStats;
use super::uppa::{per_block_uppa, small_uppa};
use super::verify::verify;
use crate::graph::BlockId;
use crate::random_cfg::{random_cfg, RandomCfg};
use crate::test_rng::Rng;
use proptest::prelude::*;

/// A random walk from the entry to EXIT: the blocks and edge ids taken (progress edges only after 40 steps).
fn walk(rc: &RandomCfg, rng: &mut Rng) -> (Vec<BlockId>, Vec<usize>) {
    let g = &rc.cfg;
    let adj = g.adjacency();
    let (mut blocks, mut edges) = (Vec::new(), vec![g.exit_to_entry().index()]);
    let mut v = g.entry();
    while v != g.exit() {
        blocks.push(v);
        let outs = adj.out_edges(v);
        let e = if blocks.len() > 40 { rc.progress[v.index()] } else { outs[rng.below(outs.len())] };
        edges.push(e.index());
        v = g.edge(e).to;
    }
    (blocks, edges)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn algorithm_1_meets_definition_1_and_cuts_walks_into_its_ups(
        rc in random_cfg(12, 16, true), calls in prop::collection::vec(prop::bool::weighted(0.2), 12), seed: u64
    ) {
        let g = &rc.cfg;
        let calls = &calls[..g.num_blocks()];
        let u = small_uppa(g, calls);
        prop_assert_eq!(verify(g, calls, &u), Ok(()));
        prop_assert_eq!(verify(g, calls, &per_block_uppa(g)), Ok(()));
        prop_assert!(u.paths().len() <= g.num_blocks());

        // A walk is a sequence of UP executions: cut after every tail; each piece is a UP.
        let (_, tails) = u.marks(g.num_blocks());
        let mut rng = Rng::new(seed);
        let mut counts = vec![0u64; g.num_edges()];
        let (mut ups, mut blocks) = (0u64, 0u64);
        for _ in 0..3 {
            let (walk, edges) = walk(&rc, &mut rng);
            for e in edges {
                counts[e] += 1;
            }
            blocks += walk.len() as u64;
            let mut piece = Vec::new();
            for b in walk {
                piece.push(b);
                if tails[b.index()] {
                    prop_assert!(u.find(&piece).is_some(), "{:?} is no UP", piece);
                    ups += 1;
                    piece.clear();
                }
            }
            prop_assert!(piece.is_empty(), "a walk ends at a tail");
        }
        // Counting each UP at its measurement point (from edge counts) counts exactly its executions.
        let s = MeasurementStats::executed(g, &u, &counts);
        prop_assert_eq!((s.executed_points, s.executed_blocks), (ups, blocks));
        prop_assert!(s.executed_points <= s.executed_blocks);
    }
}

use super::classify::classify;
use super::instances::DEFAULT_INSTANCE_BUDGET;
use super::onthefly::OnTheFly;
use super::replay::StaticRun;
use super::tests_sim::{execute, random_program, Step};

/// Classifies a random program, runs it `runs` times and checks every claim: always-hit fetches hit, always-miss
/// fetches miss, each first-miss line misses exactly once, and the on-the-fly count equals the full simulation
/// per function, with at most `budget` instances. Returns (fetches, fetches classified statically, UP executions, block executions).
fn check_program(cfgs: &[RandomCfg], seed: u64, runs: usize, budget: usize) -> (u64, u64, u64, u64) {
    let mut rng = Rng::new(seed);
    let (program, geometry) = random_program(cfgs, &mut rng);
    let plan = classify(&program, &geometry, budget);
    let mut totals = (0, 0, 0, 0);
    for r in 0..runs {
        let x = execute(&program, &plan, seed ^ ((r as u64 + 1) * 0x9E37));
        for (line, (ran, missed)) in &x.first_miss {
            assert!(*ran > 0);
            assert_eq!(*missed, 1, "first-miss line {line} missed {missed} times");
        }
        let mut rt = OnTheFly::new(&plan);
        for &e in &x.events {
            rt.up(e);
        }
        let (per, total) = rt.report();
        // The same run replayed block by block (cut into UPs at the tails, instances from the calls) counts the same.
        let mut run = StaticRun::new(&plan);
        let mut stack = vec![run.entry()];
        for s in &x.steps {
            match *s {
                Step::Block(b) => {
                    run.block(stack.last_mut().expect("an activation"), b).expect("a UP walk");
                }
                Step::Call(b, q) => {
                    let a = run.call(stack.last().expect("a caller"), b, q).expect("an instance");
                    stack.push(a);
                }
                Step::Callback(q) => stack.push(run.callback(q).expect("a callback instance")),
                Step::Return => assert!(stack.pop().expect("an activation").between_ups()),
            }
        }
        assert!(stack.is_empty());
        assert_eq!(run.report(), rt.report());
        let got: Vec<(u64, u64)> = per.iter().map(|c| (c.accesses, c.misses)).collect();
        assert_eq!(got, x.per_function, "on-the-fly vs simulation, {geometry:?}");
        for (k, c) in total.categories.iter().enumerate() {
            assert_eq!(*c, x.by_category[k].0);
        }
        totals.0 += total.accesses;
        totals.1 += total.accesses - total.categories[3];
        totals.2 += x.events.len() as u64;
        totals.3 += x.blocks;
    }
    totals
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn categories_and_on_the_fly_counts_agree_with_a_full_simulation(
        cfgs in prop::collection::vec(random_cfg(8, 8, false), 1..5), seed: u64,
        budget in prop::sample::select(vec![1usize, 3, DEFAULT_INSTANCE_BUDGET])
    ) {
        // Small budgets force summary instances (shared contexts).
        check_program(&cfgs, seed, 3, budget);
    }
}

/// The numbers for the report: over 500 fixed random programs (3 runs each), the share of fetches classified
/// statically and UP executions against block executions. Checks everything `check_program` checks on each.
#[test]
fn share_classified_statically_on_random_programs() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = prop::collection::vec(random_cfg(8, 8, false), 1..5);
    let (mut fetches, mut stat, mut ups, mut blocks) = (0, 0, 0, 0);
    for seed in 0..500u64 {
        let cfgs = strategy.new_tree(&mut runner).unwrap().current();
        let t = check_program(&cfgs, seed, 3, DEFAULT_INSTANCE_BUDGET);
        fetches += t.0;
        stat += t.1;
        ups += t.2;
        blocks += t.3;
    }
    eprintln!(
        "static share {stat}/{fetches} = {:.1}%; UP executions {ups} / block executions {blocks} = {:.1}%",
        100.0 * stat as f64 / fetches as f64,
        100.0 * ups as f64 / blocks as f64
    );
    assert!(ups <= blocks && stat <= fetches && fetches > 0);
}
