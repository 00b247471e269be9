//! Graphs that several crates' tests share (feature `fixtures`; core's own tests always have it), so that an
//! oracle derived by hand is written down once.

use crate::graph::{
    ordered_cfg, Cfg,
    Leave::{B, R, T},
};

/// A function that calls `setjmp` in bb1 (a re-entry block, Termination e5) and, in bb2, a function that may
/// `longjmp` (Termination e6): e0 0→1, e1 1→2, e2 1→3, e3 2→3, e4 3→EXIT (Return), e5 1→EXIT, e6 2→EXIT,
/// e7 EXIT→0. Ball–Larus paths: 0 [e0 e1 e3 e4], 1 [e0 e1 e6] (left from bb2), 2 [e0 e2 e4], 3 [e0 e5] (left
/// from bb1). [`setjmp_events`] runs it.
pub fn setjmp_cfg() -> Cfg {
    ordered_cfg(4, &[(0, 1, B), (1, 2, B), (1, 3, B), (2, 3, B), (3, 4, R), (1, 4, T), (2, 4, T)])
}

/// Five calls of [`setjmp_cfg`] as the +1/−1 counter updates of the retraction scheme, each `(delta, the cfg
/// edges of the path it counts)`: 3 calls return normally through bb2 (+1 −1 on path 3 at the setjmp, +1 −1
/// on path 1 around the call, then path 0); 2 calls longjmp from bb2 back into bb1 and return through bb3
/// (+1 −1 on path 3 at the first return from setjmp, +1 on path 1 before the call, −1 on path 3 when setjmp
/// returns again, then path 2). Net counts 0: 3, 1: 2, 2: 2, 3: −2 (the re-entries).
pub fn setjmp_events() -> Vec<(i64, Vec<u32>)> {
    let mut ev = Vec::new();
    for _ in 0..3 {
        ev.extend([(1, vec![0, 5]), (-1, vec![0, 5]), (1, vec![0, 1, 6]), (-1, vec![0, 1, 6]), (1, vec![0, 1, 3, 4])]);
    }
    for _ in 0..2 {
        ev.extend([(1, vec![0, 5]), (-1, vec![0, 5]), (1, vec![0, 1, 6]), (-1, vec![0, 5]), (1, vec![0, 2, 4])]);
    }
    ev
}

/// The Ball–Larus path-profiling lecture graph (BL96 notes C.2), written down once for every crate's oracle
/// tests: A→C, A→B, B→C, B→D, C→D, D→F, D→E, E→F in that `EdgeId` order (e0–e7; the successor order the slides
/// imply: A: C then B; B: C then D; D: F then E), F returns to the virtual EXIT (block 6, e8) and e9 is
/// EXIT→A. Blocks A..F are [`LECTURE_A`]..[`LECTURE_F`]. Paths: ACDF 0, ACDEF 1, ABCDF 2, ABCDEF 3, ABDF 4,
/// ABDEF 5. Path mode instruments e0, e2, e3, e5, e7 (notes C.4: r=0 on A→C, r=2 on B→C, r=4 on B→D, count on
/// D→F and E→F); [`lecture_events`] runs it.
pub fn lecture_cfg() -> Cfg {
    let (a, b, c, d, e, f) = (LECTURE_A, LECTURE_B, LECTURE_C, LECTURE_D, LECTURE_E, LECTURE_F);
    crate::graph::test_cfg(6, &[(a, c), (a, b), (b, c), (b, d), (c, d), (d, f), (d, e), (e, f)], &[f])
}

/// Block A of [`lecture_cfg`] (the entry).
pub const LECTURE_A: u32 = 0;
/// Block B of [`lecture_cfg`].
pub const LECTURE_B: u32 = 1;
/// Block C of [`lecture_cfg`].
pub const LECTURE_C: u32 = 2;
/// Block D of [`lecture_cfg`].
pub const LECTURE_D: u32 = 3;
/// Block E of [`lecture_cfg`].
pub const LECTURE_E: u32 = 4;
/// Block F of [`lecture_cfg`] (the one that returns).
pub const LECTURE_F: u32 = 5;

/// 11 calls of [`lecture_cfg`] as `(times, cfg edges walked)`: ABDEF ×7, ACDF ×3, ABCDF ×1, so path counts
/// 5: 7, 0: 3, 2: 1.
pub fn lecture_events() -> Vec<(i64, Vec<u32>)> {
    vec![(7, vec![1, 3, 6, 7, 8]), (3, vec![0, 4, 5, 8]), (1, vec![1, 2, 4, 5, 8])]
}

/// Loop around a diamond: e0 0→1, e1 1→2, e2 1→3, e3 2→4, e4 3→4, e5 4→1 (back edge), e6 4→5, e7 5→EXIT,
/// e8 EXIT→0. Edge mode with the spanning tree {e8, e0, e1, e3, e4, e7} puts counters on chords e2, e5, e6.
/// Path mode: 0 [0 1 2 4 5], 1 [0 1 2 4]↺, 2 [0 1 3 4 5], 3 [0 1 3 4]↺, 4 ↻[1 2 4 5], 5 ↻[1 2 4]↺,
/// 6 ↻[1 3 4 5], 7 ↻[1 3 4]↺ (↻ starts at header bb1, ↺ ends at back edge bb4->bb1).
pub fn loop_diamond_cfg() -> Cfg {
    crate::graph::test_cfg(6, &[(0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (4, 1), (4, 5)], &[5])
}

/// 0 → 1 → 2 → return, and bb1 may leave abnormally (a call to `exit`): e0 0→1, e1 1→2, e2 2→EXIT (Return),
/// e3 1→EXIT (Termination), e4 EXIT→0. Edge mode with the spanning tree {e4, e3, e1} puts counters on chords
/// e0, e2: 5 calls of which 1 exits give e0 = 5, e2 = 4, so e1 = 4, e3 = 1 and blocks 5, 5, 4.
pub fn early_exit_cfg() -> Cfg {
    ordered_cfg(3, &[(0, 1, B), (1, 2, B), (2, 3, R), (1, 3, T)])
}

/// The path counts path-mode instrumentation records for `events` (signed weight, walk of cfg edge ids from the
/// entry to an edge into EXIT) in a function numbered with `budget`: a path is counted (±weight) when it
/// reaches EXIT or takes a back or cut edge, after which the next path starts at the edge's target. A negative
/// weight models the −1 of a path retracted after a call returned. Zero counts are left out. Panics on a walk
/// that does not follow the graph (a broken fixture).
pub fn simulate(cfg: &Cfg, budget: u128, events: &[(i64, Vec<u32>)]) -> std::collections::BTreeMap<u128, i64> {
    use crate::dag::{CfgEdgeRole, PathDag};
    let adj = cfg.adjacency();
    let dag = PathDag::build_with_budget(cfg, &adj, &crate::dfs::depth_first(cfg, &adj), budget).expect("a path DAG");
    let n = crate::numbering::Numbering::compute(&dag).expect("a numbering");
    let mut counts = std::collections::BTreeMap::new();
    for (weight, walk) in events {
        let mut cur = Vec::new();
        let mut bump = |path: &[_]| {
            *counts.entry(crate::regenerate::encode(&dag, &n, path).expect("a DAG path")).or_insert(0) += weight
        };
        for &e in walk {
            match dag.cfg_edge_role(crate::graph::EdgeId(e)) {
                CfgEdgeRole::Real(d) => {
                    cur.push(d);
                    if dag.edge(d).to == dag.exit() {
                        bump(&cur);
                        cur.clear();
                    }
                }
                CfgEdgeRole::Back { exit, entry } | CfgEdgeRole::Cut { exit, entry } => {
                    cur.push(exit);
                    bump(&cur);
                    cur = vec![entry];
                }
                role => panic!("walk takes e{e} with role {role:?}"),
            }
        }
        assert!(cur.is_empty(), "walk {walk:?} does not end at EXIT");
    }
    counts.retain(|_, c| *c != 0);
    counts
}

/// The tests' one small deterministic generator (xorshift64*, Vigna 2016), so a randomised test is reproducible
/// from its seed without a dependency.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from any seed (0 included: the state is never 0).
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15 | 1)
    }

    /// The next 64 random bits.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `n` (0 for `n` = 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Edge mode's counter slot per edge of [`loop_diamond_cfg`] (chords e2, e5, e6 → counters 0, 1, 2), for
/// profiles built by hand.
pub fn loop_diamond_chords() -> Vec<Option<u32>> {
    vec![None, None, Some(0), None, None, Some(1), Some(2), None, None]
}

/// Edge mode's counter slot per edge of [`early_exit_cfg`] (chords e0, e2 → counters 0, 1).
pub fn early_exit_chords() -> Vec<Option<u32>> {
    vec![Some(0), None, Some(1), None, None]
}

/// Edge mode's `setjmp` example: bb1 holds a `setjmp` (a re-entry block), bb2 calls a function that may
/// `longjmp` back into bb1: e0 0→1, e1 1→2, e2 2→EXIT (Return), e3 1→EXIT (Termination), e4 2→EXIT
/// (Termination), e5 EXIT→0. With the spanning tree {e5, e3, e4} the chords e0, e1, e2 carry counters 0, 1, 2:
/// 5 calls of which 2 longjmp give e0 = 5, e1 = 7, e2 = 5, so e3 = −2 (bb1 re-entered twice, net) and e4 = 2
/// (bb2 left abnormally twice).
pub fn longjmp_cfg() -> Cfg {
    ordered_cfg(3, &[(0, 1, B), (1, 2, B), (2, 3, R), (1, 3, T), (2, 3, T)])
}

/// An interprocedural pair whose calls may not return, as `(main, f)`: main's bb0 calls f and may leave
/// abnormally through it (e0 0→1, e1 0→EXIT Termination, e2 1→EXIT Return, e3 EXIT→0); f's bb0 branches to
/// bb1, which may leave abnormally or returns, or to bb2, which returns (e0 0→1, e1 0→2, e2 1→EXIT Return,
/// e3 1→EXIT Termination, e4 2→EXIT Return, e5 EXIT→0).
pub fn may_not_return_pair_cfgs() -> (Cfg, Cfg) {
    let main = ordered_cfg(2, &[(0, 1, B), (0, 2, T), (1, 2, R)]);
    let f = ordered_cfg(3, &[(0, 1, B), (0, 2, B), (1, 3, R), (1, 3, T), (2, 3, R)]);
    (main, f)
}
