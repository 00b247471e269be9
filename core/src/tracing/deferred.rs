//! Deferred loops: a loop whose only decision is its exit test can write its bits when it exits, all at once.
//!
//! Under bit tracing a loop test writes one bit per iteration, so the writer's code — shift, or, add, a
//! compare for the full word — runs in every iteration and keeps the loop scalar. In a loop that is a
//! single cycle through one two-way test, with no call, no return and no other decision on it, nothing else
//! can be written between the loop's entry and its exit. The writer may then count the iterations in a
//! register and write, on the exit edge, the test's bit for staying that many times and then its bit for
//! leaving: exactly the bits the test would have written one by one, in the same order. The stream is
//! unchanged, so the reader needs nothing new.
//!
//! What a deferred loop gives up is the in-flight iterations of a loop that never exits: a crash, a fatal
//! signal or a signal handler's abnormal entry while it runs ends the trace before its bits, so the exact
//! prefix the reader shows stops at the last decision before the loop.

use super::placement::{Scheme, WitnessPlan};
use super::view::{CallSites, TracingView};
use crate::dfs::depth_first;
use crate::graph::{BlockId, Cfg, EdgeId, EdgeKind};
use crate::loops::natural_loops;

/// A loop whose bits the writer defers to its exit.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DeferredLoop {
    /// The loop's header (the target of its one back edge), where the writer's iteration count starts at 0.
    pub header: BlockId,
    /// The loop's one back edge, which carries the count to the next iteration.
    pub back: EdgeId,
    /// The loop's one decision: its exit test.
    pub test: BlockId,
    /// The test's out-edge that stays in the loop; each crossing is one bit `plan.value(stay)`.
    pub stay: EdgeId,
    /// The test's out-edge that leaves the loop, where the bits are written, then `plan.value(exit)`.
    pub exit: EdgeId,
}

/// The loops of `cfg` whose bits can be deferred under `plan` (bit tracing only): a single cycle through
/// blocks that have one out-edge each, a branch, except the one-bit test, whose other out-edge leaves the
/// loop; entered only at its header (the iteration count starts there: a jump from outside into the middle
/// of the cycle — irreducible flow, as in re2c's scanners, `goto L16` into `L16: c = *++p; L17: if (c == ' ')
/// goto L16;` — would run the cycle with a count nobody started); no block on it has a call site, may be left
/// abnormally or is `excluded` (blocks whose code the caller cannot account for, e.g. targets of computed
/// gotos, whose decision is written at the target).
pub fn deferred_loops(cfg: &Cfg, calls: &CallSites, plan: &WitnessPlan, excluded: &[bool]) -> Vec<DeferredLoop> {
    if plan.scheme() != Scheme::BitTracing {
        return Vec::new();
    }
    let view = TracingView::new(cfg, calls);
    let adj = cfg.adjacency();
    let loops = natural_loops(cfg, &adj, &depth_first(cfg, &adj));
    let mut found = Vec::new();
    'loops: for l in &loops.loops {
        let [back] = l.back_edges[..] else { continue };
        let mut test = None;
        for &v in &l.body {
            if view.is_blocked(v) || excluded.get(v.index()).copied().unwrap_or(true) {
                continue 'loops;
            }
            if v != l.header && adj.in_edges(v).iter().any(|&e| !l.contains(cfg.edge(e).from)) {
                continue 'loops;
            }
            let outs = adj.out_edges(v);
            if outs.iter().any(|&e| !matches!(cfg.edge(e).kind, EdgeKind::Branch { .. }) || calls.is_unwind(cfg, e)) {
                continue 'loops;
            }
            match outs {
                [e] if l.contains(cfg.edge(*e).to) && plan.value(*e).is_none() => {}
                [a, b] if test.is_none() => {
                    let (stay, exit) = if l.contains(cfg.edge(*a).to) { (*a, *b) } else { (*b, *a) };
                    let one_bit = |e: EdgeId| plan.value(e).is_some_and(|w| w <= 1);
                    if !l.contains(cfg.edge(stay).to)
                        || l.contains(cfg.edge(exit).to)
                        || !one_bit(stay)
                        || !one_bit(exit)
                    {
                        continue 'loops;
                    }
                    test = Some((v, stay, exit));
                }
                _ => continue 'loops,
            }
        }
        if let Some((test, stay, exit)) = test {
            found.push(DeferredLoop { header: l.header, back, test, stay, exit });
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::test_cfg;
    use crate::tracing::placement::bit_tracing_with;

    fn deferred(g: &Cfg, calls: &CallSites) -> Vec<DeferredLoop> {
        deferred_loops(g, calls, &bit_tracing_with(g, calls), &vec![false; g.num_vertices()])
    }

    /// 0 → 1 (header) → 2 → 3 (test) → 1 | 4 → EXIT: `for (…) x++` as clang emits it unrotated, plus a
    /// rotated copy 4 → 5 ⇄ 5 (a self-loop test) → 6.
    #[test]
    fn a_cycle_through_one_test_is_deferred() {
        let g = test_cfg(7, &[(0, 1), (1, 2), (2, 3), (3, 1), (3, 4), (4, 5), (5, 5), (5, 6)], &[6]);
        let got = deferred(&g, &CallSites::none(&g));
        assert_eq!(
            got,
            vec![
                DeferredLoop {
                    header: BlockId(1),
                    back: EdgeId(3),
                    test: BlockId(3),
                    stay: EdgeId(3),
                    exit: EdgeId(4)
                },
                DeferredLoop {
                    header: BlockId(5),
                    back: EdgeId(6),
                    test: BlockId(5),
                    stay: EdgeId(6),
                    exit: EdgeId(7)
                },
            ]
        );
    }

    /// A second decision in the body (1 → 2 | 3), a second exit (2 → EXIT side), an inner loop, or a call
    /// site on the cycle: the loop writes other things between its entry and its exit, so none is deferred
    /// — except the inner loop of the nest.
    #[test]
    fn loops_with_other_events_are_not_deferred() {
        // Two paths through the body.
        let diamond = test_cfg(6, &[(0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (4, 1), (4, 5)], &[5]);
        assert_eq!(deferred(&diamond, &CallSites::none(&diamond)), vec![]);
        // Two exits: the header's test and the latch's.
        let two_exits = test_cfg(5, &[(0, 1), (1, 2), (1, 4), (2, 1), (2, 4)], &[4]);
        assert_eq!(deferred(&two_exits, &CallSites::none(&two_exits)), vec![]);
        // A nest: only the inner loop 2 ⇄ 2.
        let nest = test_cfg(5, &[(0, 1), (1, 2), (2, 2), (2, 3), (3, 1), (3, 4)], &[4]);
        assert_eq!(
            deferred(&nest, &CallSites::none(&nest)),
            vec![DeferredLoop {
                header: BlockId(2),
                back: EdgeId(2),
                test: BlockId(2),
                stay: EdgeId(2),
                exit: EdgeId(3)
            }]
        );
        // A call site in the body.
        let g = test_cfg(5, &[(0, 1), (1, 2), (2, 1), (2, 3), (3, 4)], &[4]);
        let calls = CallSites::new(&g, vec![0, 1, 0, 0, 0]).expect("one count per vertex");
        assert_eq!(deferred(&g, &calls), vec![]);
        // An excluded block.
        let mut excluded = vec![false; g.num_vertices()];
        excluded[1] = true;
        let none = CallSites::none(&g);
        assert_eq!(deferred_loops(&g, &none, &bit_tracing_with(&g, &none), &excluded), vec![]);
        assert_eq!(deferred(&g, &none).len(), 1);
    }

    /// cmark's re2c scanner `_scan_setext_heading_line`: the cycle 4 (`L16: c = *++p`) → 5 (`L17: if (c == ' ')
    /// goto L16`) is entered at 5 from the '-' arm (1) and at 4 from the '=' arm (3). Whichever block the DFS
    /// makes the header, the other has an entry from outside, so the loop is not deferred: it used to be, and
    /// an entry at the body ran the cycle with a count nobody had started (1 GiB of trace for a 2-byte input,
    /// endless at -O0). Entered at its header only, the same cycle is deferred.
    #[test]
    fn a_cycle_entered_in_the_middle_is_not_deferred() {
        let edges = [(0, 1), (0, 2), (1, 5), (1, 6), (2, 3), (2, 6), (3, 4), (3, 6), (4, 5), (5, 4), (5, 6)];
        let g = test_cfg(7, &edges, &[6]);
        assert_eq!(deferred(&g, &CallSites::none(&g)), vec![]);
        // Without the '=' arm's jump into 4, the cycle is entered at 5 only: deferred.
        let single = [(0, 1), (0, 2), (1, 5), (1, 6), (2, 3), (2, 6), (3, 6), (4, 5), (5, 4), (5, 6)];
        let g = test_cfg(7, &single, &[6]);
        let got = deferred(&g, &CallSites::none(&g));
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].header, got[0].test), (BlockId(5), BlockId(5)));
    }
}
