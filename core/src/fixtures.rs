//! Graphs that several crates' tests share (feature `fixtures`; core's own tests always have it), so that an
//! oracle derived by hand is written down once.

use crate::graph::{BlockId, Cfg, Edge, EdgeKind};

/// A function that calls `setjmp` in bb1 (a re-entry block, Termination e5) and, in bb2, a function that may
/// `longjmp` (Termination e6): e0 0→1, e1 1→2, e2 1→3, e3 2→3, e4 3→EXIT (Return), e5 1→EXIT, e6 2→EXIT,
/// e7 EXIT→0. Ball–Larus paths: 0 [e0 e1 e3 e4], 1 [e0 e1 e6] (left from bb2), 2 [e0 e2 e4], 3 [e0 e5] (left
/// from bb1). [`setjmp_events`] runs it.
pub fn setjmp_cfg() -> Cfg {
    let b = |f: u32, t: u32, kind| Edge { from: BlockId(f), to: BlockId(t), kind };
    Cfg::new(
        4,
        vec![
            b(0, 1, EdgeKind::Branch { succ: 0 }),
            b(1, 2, EdgeKind::Branch { succ: 0 }),
            b(1, 3, EdgeKind::Branch { succ: 1 }),
            b(2, 3, EdgeKind::Branch { succ: 0 }),
            b(3, 4, EdgeKind::Return),
            b(1, 4, EdgeKind::Termination),
            b(2, 4, EdgeKind::Termination),
            b(4, 0, EdgeKind::ExitToEntry),
        ],
    )
    .expect("a well-formed graph")
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
/// ABDEF 5.
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
