//! The paper's examples as oracles (notes B.8; hand-derived there and re-derived in the comments here).

use super::stats::MeasurementStats;
use super::uppa::{per_block_uppa, small_uppa, MeasurementPoint, Uppa};
use super::verify::verify;
use crate::graph::{test_cfg, BlockId, Cfg};

fn paths_of(u: &Uppa) -> Vec<Vec<u32>> {
    let mut v: Vec<Vec<u32>> = u.paths().iter().map(|p| p.blocks.iter().map(|b| b.0).collect()).collect();
    v.sort();
    v
}

fn marks(u: &Uppa, n: usize) -> (Vec<u32>, Vec<u32>) {
    let (h, t) = u.marks(n);
    let pick = |m: Vec<bool>| m.iter().enumerate().filter(|(_, &x)| x).map(|(i, _)| i as u32).collect();
    (pick(h), pick(t))
}

/// Figure 1(b), lower graph, blocks 1..6 as 0..5: 1→2, 1→3, 2→4, 3→4, 2→5, 4→5, 4→6; 5 and 6 return.
/// Fork-after-join makes 4 a tail; propagation: 5, 6 heads, 2 tail, 4 head, 3 tail. Heads {1,4,5,6}, tails
/// {2,3,4,5,6}; UPs {1,2}, {1,3}, {4}, {5}, {6}.
fn figure_1b() -> Cfg {
    test_cfg(6, &[(0, 1), (0, 2), (1, 3), (2, 3), (1, 4), (3, 4), (3, 5)], &[4, 5])
}

#[test]
fn figure_1b_lower_graph_has_five_paths() {
    let g = figure_1b();
    let u = small_uppa(&g, &[false; 6]);
    assert_eq!(marks(&u, 6), (vec![0, 3, 4, 5], vec![1, 2, 3, 4, 5]));
    assert_eq!(paths_of(&u), vec![vec![0, 1], vec![0, 2], vec![3], vec![4], vec![5]]);
    verify(&g, &[false; 6], &u).unwrap();
}

/// Figure 1(a), blocks 1..8 as 0..7: if-then-else 1→2|3→4, 4→5, loop {5,6,7} (5→6, 5→7, 6→7, 7→5), exit 7→8.
/// Heads {1,5,8}, tails {4,7,8}; UPs 1-2-4, 1-3-4, 5-7, 5-6-7, 8: 5 UPs for 8 blocks. Paths 1 and 2 have two
/// unique transitions each, path 3 (5→7) one, path 4 two (Example 1).
fn figure_1a() -> Cfg {
    test_cfg(8, &[(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (4, 5), (4, 6), (5, 6), (6, 4), (6, 7)], &[7])
}

#[test]
fn figure_1a_has_five_paths_for_eight_blocks() {
    let g = figure_1a();
    let u = small_uppa(&g, &[false; 8]);
    assert_eq!(marks(&u, 8), (vec![0, 4, 7], vec![3, 6, 7]));
    assert_eq!(paths_of(&u), vec![vec![0, 1, 3], vec![0, 2, 3], vec![4, 5, 6], vec![4, 6], vec![7]]);
    verify(&g, &[false; 8], &u).unwrap();
    // Unique transitions per UP (edges on no other UP), as Example 1 counts them.
    let unique = |blocks: &[u32]| {
        let p = &u.paths()[u.find(&blocks.iter().map(|&b| BlockId(b)).collect::<Vec<_>>()).unwrap()];
        p.edges.iter().filter(|e| u.paths().iter().filter(|q| q.edges.contains(e)).count() == 1).count()
    };
    assert_eq!([unique(&[0, 1, 3]), unique(&[0, 2, 3]), unique(&[4, 6]), unique(&[4, 5, 6])], [2, 2, 1, 2]);
    assert_eq!(MeasurementStats::of(&g, &u).to_string(), "uppa: 5 points for 8 blocks (62.50%)");
}

/// Figure 2a: pre=0, h=1, x=2, e1=3, e2=4, y=5; pre→h, h→x, h→e1, x→h, e1→e2, e1→y, e2→h, e2→y; y returns.
/// Algorithm 1: {pre}, {h,x}, {h,e1}, {e2}, {y}; the loop part is Example 3's UPPA_s.
#[test]
fn figure_2a_loop_matches_uppa_s() {
    let g = test_cfg(6, &[(0, 1), (1, 2), (1, 3), (2, 1), (3, 4), (3, 5), (4, 1), (4, 5)], &[5]);
    let u = small_uppa(&g, &[false; 6]);
    assert_eq!(paths_of(&u), vec![vec![0], vec![1, 2], vec![1, 3], vec![4], vec![5]]);
    verify(&g, &[false; 6], &u).unwrap();
    // {h,x} and {h,e1} share h, so their points are x and e1 (their tails); singletons are their own points.
    let point = |b: &[u32]| u.paths()[u.find(&b.iter().map(|&x| BlockId(x)).collect::<Vec<_>>()).unwrap()].point;
    assert_eq!(point(&[1, 2]), MeasurementPoint::Block(BlockId(2)));
    assert_eq!(point(&[1, 3]), MeasurementPoint::Block(BlockId(3)));
    // Executed points, one loop trip through x then out through e1→e2→y: blocks pre h x h e1 e2 y = 7
    // executions; UPs {pre} {h,x} {h,e1} {e2} {y} = 5.
    let mut counts = vec![0u64; g.num_edges()];
    for e in [0, 1, 3, 2, 4, 7] {
        counts[e] += 1; // pre→h, h→x, x→h, h→e1, e1→e2, e2→y
    }
    counts[8] = 1; // y→EXIT
    counts[9] = 1; // EXIT→pre
    let s = MeasurementStats::executed(&g, &u, &counts);
    assert_eq!((s.points, s.blocks, s.executed_points, s.executed_blocks), (5, 6, 5, 7));
}

#[test]
fn a_call_ends_its_unique_path() {
    // Figure 1(a) with a call in block 2 (index 1): the path 1-2-4 must end at 2 (Definition 1.6).
    let g = figure_1a();
    let mut calls = [false; 8];
    calls[1] = true;
    let u = small_uppa(&g, &calls);
    verify(&g, &calls, &u).unwrap();
    assert!(paths_of(&u).contains(&vec![0, 1]));
    assert!(verify(&g, &calls, &small_uppa(&g, &[false; 8])).is_err_and(|v| v.property == 6));
}

#[test]
fn the_verifier_rejects_what_definition_1_forbids() {
    let g = figure_1b();
    let calls = [false; 6];
    verify(&g, &calls, &per_block_uppa(&g)).unwrap(); // Theorem 2
    let ids = |p: &[&[u32]]| p.iter().map(|q| q.iter().map(|&b| BlockId(b)).collect()).collect::<Vec<Vec<_>>>();
    // 4 is on no path.
    let u = Uppa::from_block_paths(&g, &ids(&[&[0, 1], &[0, 2], &[4], &[5]])).unwrap();
    assert_eq!(verify(&g, &calls, &u).unwrap_err().property, 1);
    // {1,2,4} and {1,3,4} (0-based 0-1-3, 0-2-3) leave 2→5 (1→4) on no UP with 2 internal, not a tail.
    let u = Uppa::from_block_paths(&g, &ids(&[&[0, 1, 3], &[0, 2, 3], &[4], &[5]])).unwrap();
    assert_eq!(verify(&g, &calls, &u).unwrap_err().property, 2);
    // Without the fork-after-join tail at 4 the paths 2-4-6 and 3-4-5 (0-based 1-3-5, 2-3-4) share 4 in the
    // middle (Figure 2c), with every edge on a path or tail-to-head.
    let u = Uppa::from_block_paths(&g, &ids(&[&[0], &[1, 3, 5], &[2, 3, 4], &[1, 4]]));
    let u = u.unwrap();
    assert_eq!(verify(&g, &calls, &u).unwrap_err().property, 4);
    // A UP that leaves the loop {1,2} through 1→3 (0→1, 1→2, 2→1, 1→3; 3 returns).
    let g = test_cfg(4, &[(0, 1), (1, 2), (2, 1), (1, 3)], &[3]);
    let u = Uppa::from_block_paths(&g, &ids(&[&[0], &[1, 2], &[1, 3]])).unwrap();
    assert_eq!(verify(&g, &[false; 4], &u).unwrap_err().property, 7);
    verify(&g, &[false; 4], &small_uppa(&g, &[false; 4])).unwrap();
}

use super::instances::{InstanceGraph, InstanceKind, LinkKind, DEFAULT_INSTANCE_BUDGET};
use super::program::{BlockCode, CallTarget, Function, Program};
use crate::melski_reps::program::ProcId;

/// A straight-line function: one block per call in `calls` (in order), then a block that returns.
fn chain(name: &str, calls: &[u32]) -> Function {
    let n = calls.len() as u32 + 1;
    let edges: Vec<(u32, u32)> = (0..n - 1).map(|i| (i, i + 1)).collect();
    let mut blocks: Vec<BlockCode> =
        calls.iter().map(|&c| BlockCode { insns: vec![], call: Some(CallTarget::direct(ProcId(c))) }).collect();
    blocks.push(BlockCode::default());
    Function { name: name.into(), cfg: test_cfg(n, &edges, &[n - 1]), blocks }
}

/// Figure 3 / Example 4: f calls g, then h twice; g calls i and k; h calls k; i calls g (indirect recursion).
/// Instances in depth-first order: f0, g0, i0 (whose call of g links back to g0), k0, h0, k1, h1, k2 — 8, with
/// two instances of h and three of k (from g0, h0, h1).
#[test]
fn figure_3_function_instance_graph() {
    let (f, g, h, i, k) = (0, 1, 2, 3, 4);
    let names = ["f", "g", "h", "i", "k"];
    let prog = Program::new(
        vec![chain("f", &[g, h, h]), chain("g", &[i, k]), chain("h", &[k]), chain("i", &[g]), chain("k", &[])],
        ProcId(f),
        vec![],
    )
    .unwrap();
    let ig = InstanceGraph::build(&prog, DEFAULT_INSTANCE_BUDGET);
    let order: Vec<String> =
        (0..ig.instances().len()).map(|x| ig.name(super::instances::InstanceId(x as u32), &names)).collect();
    assert_eq!(order, ["f0", "g0", "i0", "k0", "h0", "k1", "h1", "k2"]);
    let edges: Vec<(String, u32, String, LinkKind)> =
        ig.links().iter().map(|l| (ig.name(l.caller, &names), l.block.0, ig.name(l.callee, &names), l.kind)).collect();
    let t = |a: &str, b: u32, c: &str, kind| (a.to_string(), b, c.to_string(), kind);
    assert_eq!(
        edges,
        [
            t("f0", 0, "g0", LinkKind::Tree),
            t("g0", 0, "i0", LinkKind::Tree),
            t("i0", 0, "g0", LinkKind::Recursive),
            t("g0", 1, "k0", LinkKind::Tree),
            t("f0", 1, "h0", LinkKind::Tree),
            t("h0", 0, "k1", LinkKind::Tree),
            t("f0", 2, "h1", LinkKind::Tree),
            t("h1", 0, "k2", LinkKind::Tree),
        ]
    );
    assert_eq!(ig.instance(super::instances::InstanceId(0)).kind, InstanceKind::Entry);

    // With a budget of 4 instances the expansion stops after f0 g0 i0 k0: h and its k become summaries, shared by
    // both calls of h (and k's summary serves h's summary).
    let ig = InstanceGraph::build(&prog, 4);
    let order: Vec<String> =
        (0..ig.instances().len()).map(|x| ig.name(super::instances::InstanceId(x as u32), &names)).collect();
    assert_eq!(order, ["f0", "g0", "i0", "k0", "h0", "k1"]);
    assert_eq!(
        ig.callee(super::instances::InstanceId(0), BlockId(1), ProcId(h)),
        ig.callee(super::instances::InstanceId(0), BlockId(2), ProcId(h))
    );
    assert!(ig.instances()[4..].iter().all(|x| x.kind == InstanceKind::Summary));
}

#[test]
fn indirect_and_foreign_calls_get_instances() {
    // main (0) calls through a pointer that may reach a (1) or b (2) or foreign code; foreign code may call back
    // b. Instances: main0, a0, b0 (indirect candidates), b1 (the callback instance).
    let mut main = chain("main", &[1]);
    main.blocks[0].call = Some(CallTarget { procs: vec![ProcId(1), ProcId(2)], foreign: true });
    let prog = Program::new(vec![main, chain("a", &[]), chain("b", &[])], ProcId(0), vec![ProcId(2)]).unwrap();
    let ig = InstanceGraph::build(&prog, DEFAULT_INSTANCE_BUDGET);
    let names = ["main", "a", "b"];
    let order: Vec<String> =
        (0..ig.instances().len()).map(|x| ig.name(super::instances::InstanceId(x as u32), &names)).collect();
    assert_eq!(order, ["main0", "a0", "b0", "b1"]);
    assert_eq!(ig.callback(ProcId(2)), Some(super::instances::InstanceId(3)));
    assert_eq!(ig.instance(super::instances::InstanceId(3)).kind, InstanceKind::Callback);
    assert!(Program::new(vec![chain("main", &[7])], ProcId(0), vec![]).is_err());
}

use super::classify::{classify, Category};
use super::onthefly::OnTheFly;
use super::program::{Geometry, Insn};

/// Notes B.8.5: 4 lines of 4 instructions (16-byte lines, 4-byte instructions), direct-mapped. B1 = instructions
/// 0–3 (line 0), B2 = 4–7 (line 1), B3 = 8–11 (line 2), B4 = 12–19 (lines 3 and 4; 4 maps onto 0's cache line);
/// B1→B2, B2→B3, B3→B2, B3→B4, and with `b5`, B5 = 20–23 (line 5, onto 1's cache line) with B3→B5→B2.
fn synthetic(b5: bool) -> Program {
    let code = |first: u64, n: u64| BlockCode {
        insns: (first..first + n).map(|i| Insn { addr: 4 * i, size: 4 }).collect(),
        call: None,
    };
    let mut edges = vec![(0, 1), (1, 2), (2, 1), (2, 3)];
    let mut blocks = vec![code(0, 4), code(4, 4), code(8, 4), code(12, 8)];
    if b5 {
        edges.extend([(2, 4), (4, 1)]);
        blocks.push(code(20, 4));
    }
    let cfg = test_cfg(blocks.len() as u32, &edges, &[3]);
    Program::new(vec![Function { name: "main".into(), cfg, blocks }], ProcId(0), vec![]).unwrap()
}

/// Runs the walk `blocks` of main through the on-the-fly counter: (hits, misses).
fn run_walk(plan: &super::classify::CachePlan, blocks: &[u32]) -> (u64, u64) {
    let uppa = &plan.graph.uppas[0];
    let num_blocks = uppa.paths().iter().flat_map(|p| &p.blocks).map(|b| b.index() + 1).max().unwrap_or(0);
    let (_, tails) = uppa.marks(num_blocks);
    let mut rt = OnTheFly::new(plan);
    let mut piece = Vec::new();
    for &b in blocks {
        piece.push(BlockId(b));
        if tails[b as usize] {
            let up = uppa.find(&piece).expect("a UP") as u32;
            rt.up(plan.graph.up_node(super::instances::InstanceId(0), up).unwrap());
            piece.clear();
        }
    }
    assert!(piece.is_empty());
    let (_, t) = rt.report();
    (t.hits(), t.misses)
}

/// The first reference's category of the UP made of `blocks` (and of its instruction at `insn`).
fn category_at(plan: &super::classify::CachePlan, blocks: &[u32], insn: u32) -> Category {
    let up = plan.graph.uppas[0].find(&blocks.iter().map(|&b| BlockId(b)).collect::<Vec<_>>()).unwrap() as u32;
    let node = plan.graph.up_node(super::instances::InstanceId(0), up).unwrap() as usize;
    let k = plan.graph.nodes[node].refs.iter().position(|r| r.insn == insn).expect("a reference");
    plan.ref_categories[node][k]
}

#[test]
fn synthetic_cache_oracle_direct_mapped() {
    let plan = classify(&synthetic(false), &Geometry::new(64, 1, 16).unwrap(), DEFAULT_INSTANCE_BUDGET);
    // UPs: {B1}, {B2,B3} (the loop body), {B4}.
    assert_eq!(paths_of(&plan.graph.uppas[0]), vec![vec![0], vec![1, 2], vec![3]]);
    assert_eq!(category_at(&plan, &[0], 0), Category::AlwaysMiss);
    assert_eq!(category_at(&plan, &[1, 2], 0), Category::FirstMiss); // B2's first instruction
    assert_eq!(category_at(&plan, &[1, 2], 4), Category::FirstMiss); // B3's first instruction
    assert_eq!(category_at(&plan, &[3], 0), Category::AlwaysMiss); // instruction 12
    assert_eq!(category_at(&plan, &[3], 4), Category::AlwaysMiss); // instruction 16
    for (n, expect) in [(1, (15, 5)), (5, (47, 5)), (100, (807, 5))] {
        let mut walk = vec![0];
        for _ in 0..n {
            walk.extend([1, 2]);
        }
        walk.push(3);
        assert_eq!(run_walk(&plan, &walk), expect, "N = {n}");
    }
    // Nothing to simulate at run time.
    assert_eq!(plan.tracked_sets, 0);
}

#[test]
fn synthetic_cache_oracle_conflict_variant() {
    let plan = classify(&synthetic(true), &Geometry::new(64, 1, 16).unwrap(), DEFAULT_INSTANCE_BUDGET);
    assert_eq!(paths_of(&plan.graph.uppas[0]), vec![vec![0], vec![1, 2], vec![3], vec![4]]);
    assert_eq!(category_at(&plan, &[1, 2], 0), Category::Conflict); // line 1 vs the reachable line 5
    assert_eq!(category_at(&plan, &[4], 0), Category::AlwaysMiss); // B5
    assert_eq!(category_at(&plan, &[1, 2], 4), Category::FirstMiss); // line 2 has its cache line alone
                                                                     // B1 B2 B3 B5 B2 B3 B4: lines 0 1 2 5 1 2 3 4 miss, miss, miss, miss (5 evicts 1), miss (1 evicts 5), hit,
                                                                     // miss, miss: 7 misses of 32 fetches.
    assert_eq!(run_walk(&plan, &[0, 1, 2, 4, 1, 2, 3]), (25, 7));
    // Without B5 taken the conflict hits after its first miss: B1 (B2 B3)×3 B4: 5 misses of 36.
    assert_eq!(run_walk(&plan, &[0, 1, 2, 1, 2, 1, 2, 3]), (31, 5));
    assert_eq!(plan.tracked_sets, 1);
}

#[test]
fn geometry_parses_cachegrind_syntax() {
    assert_eq!(Geometry::parse("32768,8,64").unwrap(), Geometry::default());
    assert_eq!(Geometry::parse("1024, 1, 32").unwrap().sets(), 32);
    for bad in ["", "1024,1", "1024,0,32", "1000,1,32", "1024,1,24", "a,b,c", "1024,1,32,4"] {
        assert!(Geometry::parse(bad).is_err(), "{bad}");
    }
}
