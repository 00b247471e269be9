//! Trace-file module metadata: the recording point (mode icache records at `OptimizerLast`) round-trips, and
//! plain trace mode's blob keeps its bytes.

use pathprof_format::meta::{Mode, ModuleMeta};
use pathprof_format::trace::TraceModuleMeta;

fn meta(optimizer_last: bool) -> TraceModuleMeta {
    TraceModuleMeta {
        module: ModuleMeta {
            module_name: "m.c".into(),
            output: "m.o".into(),
            mode: Mode::Trace,
            weighting: "bit-tracing".into(),
            atomic: false,
            functions: Vec::new(),
            interproc: None,
            path_arrivals: false,
            fork_reentries: false,
        },
        calls: Vec::new(),
        optimizer_last,
    }
}

#[test]
fn the_recording_point_round_trips_and_trace_mode_bytes_are_unchanged() {
    let plain = meta(false).encode();
    let icache = meta(true).encode();
    assert_eq!(icache.len(), plain.len() + 1);
    assert_eq!(&icache[..plain.len()], &plain[..]);
    assert!(!TraceModuleMeta::decode(&plain).unwrap().optimizer_last);
    assert!(TraceModuleMeta::decode(&icache).unwrap().optimizer_last);
    let mut bad = plain.clone();
    bad.push(7);
    assert!(TraceModuleMeta::decode(&bad).is_err());
}
