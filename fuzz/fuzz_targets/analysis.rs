//! Every function of every accepted profile through `function_edge_counts` and, in path mode,
//! `function_path_counts` (the code behind `pathprof show` and `decode`): no panic, no negative count reported
//! as a number, and a function whose counts are not all derivable is flagged inexact.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pathprof_format::meta::Mode;
use pathprof_analysis::{function_edge_counts, function_path_counts};
use pathprof_format::profile::read;

mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(p) = read(&common::fixup(data)) else { return };
    for m in &p.modules {
        for i in 0..m.meta.functions.len() {
            if let Ok(c) = function_edge_counts(m, i) {
                // Exact: every block count is known, and an edge count is withheld only when it is negative
                // (a setjmp block's re-entries, which are exact and labelled).
                let edges_ok = c.edges.iter().zip(&c.raw_edges).all(|(e, r)| e.is_some() || *r < 0);
                let blocks_ok = c.blocks.iter().all(Option::is_some);
                assert!(!c.exact || (edges_ok && blocks_ok), "a count is missing but the function is called exact");
                assert!(c.exact == c.inexact_reasons.is_empty());
            }
            if m.meta.mode == Mode::Path {
                let _ = function_path_counts(m, i);
            }
        }
        let _ = function_edge_counts(m, m.meta.functions.len());
    }
});
