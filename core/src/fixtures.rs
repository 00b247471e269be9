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
