//! Trace-file module metadata: the recording point (mode icache records at `OptimizerLast`), the `invoke`
//! blocks and the kept calls round-trip; plain trace mode's blob keeps its bytes; unknown tails are refused.

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
        invokes: Vec::new(),
        kept_calls: Vec::new(),
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

#[test]
fn kept_calls_round_trip_with_the_recording_point() {
    for optimizer_last in [false, true] {
        let mut m = meta(optimizer_last);
        m.kept_calls = vec!["gl_sockets_startup".into(), "gl_locale_name_default".into()];
        let back = TraceModuleMeta::decode(&m.encode()).unwrap();
        assert_eq!(back.kept_calls, m.kept_calls);
        assert_eq!(back.optimizer_last, optimizer_last);
        // Trailing bytes after the extras are refused.
        let mut bad = m.encode();
        bad.push(0);
        assert!(TraceModuleMeta::decode(&bad).is_err());
    }
}

#[test]
fn a_file_of_the_previous_layout_is_refused_not_misread() {
    use pathprof_format::trace::{TraceError, TraceFile};
    use pathprof_format::trace_layout::{TRACE_MAGIC, TRACE_VERSION};
    // Version 4 added the flight recorder's sync records and windows; version 3 files must be refused.
    assert_eq!(TRACE_VERSION, 4);
    for previous in [2u32, 3] {
        let mut old = TRACE_MAGIC.to_vec();
        old.extend_from_slice(&previous.to_le_bytes());
        assert!(matches!(TraceFile::parse(&old), Err(TraceError::Version(v)) if v == previous));
    }
    let mut now = TRACE_MAGIC.to_vec();
    now.extend_from_slice(&TRACE_VERSION.to_le_bytes());
    assert!(TraceFile::parse(&now).is_ok());
}
