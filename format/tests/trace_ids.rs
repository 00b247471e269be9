//! Module trace ids the `trace` fuzz target (fuzz/fuzz_targets/trace.rs) found `TraceFile::program` panicking
//! on: ids no module claims get a placeholder function, and ids past the trace id space are refused before
//! anything is allocated for them. Never a panic; and a stream that enters an id no module claims is an
//! error, not a block of a function that does not exist.

use pathprof_core::tracing::{regenerate_from, FuncId, RegenError, ResumePoint, StepSink};
use pathprof_core::BlockId;
use pathprof_format::trace::{TraceError, TraceFile};
use pathprof_format::trace_layout::ABANDON_ID;

/// A trace file (minimised by hand from the fuzzer's input) whose one module starts at trace id 1: id 0 is
/// a gap. `pathprof trace` panicked on it ("a one-block CFG: ExitToEntryCount(0)").
#[rustfmt::skip]
const GAP_AT_ID_0: [u8; 103] = [
    // File header: "PPTR", version 9, process 7, 1 runtime copy, token 0, next id 0.
    0x50, 0x50, 0x54, 0x52, 0x09, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    // Record header: a module record of process 7, thread 0, copy 0, 47 bytes.
    0x01, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x2f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    // Its first trace id, 1 (id 0 is no module's), and 0 functions.
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    // The metadata blob: its length (30 bytes),
    0x1e, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    // `ModuleMeta` version 9: no name or output, mode trace, "bit-tracing", no functions,
    0x50, 0x50, 0x4d, 0x44, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x0b, 0x62, 0x69, 0x74, 0x2d,
    0x74, 0x72, 0x61, 0x63, 0x69, 0x6e, 0x67, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    // then no call sites.
    0x00,
];

/// Where [`GAP_AT_ID_0`] holds its module's first trace id.
const FIRST_ID: std::ops::Range<usize> = 56..60;

#[test]
fn a_gap_in_module_trace_ids_gets_a_placeholder_not_a_panic() {
    let file = TraceFile::parse(&GAP_AT_ID_0).unwrap();
    let (program, owner) = file.program().unwrap();
    assert_eq!(program.num_funcs(), 1, "id 0's placeholder");
    assert_eq!(owner, vec![None], "no module claims id 0");
}

#[test]
fn module_trace_ids_past_the_id_space_are_refused_before_allocating() {
    // From ABANDON_ID up the ids are the markers'; u32::MAX placeholders would not fit in memory.
    for first in [ABANDON_ID + 1, 1 << 24, u32::MAX] {
        let mut bytes = GAP_AT_ID_0;
        bytes[FIRST_ID].copy_from_slice(&first.to_le_bytes());
        let file = TraceFile::parse(&bytes).unwrap();
        let err = file.program().err();
        assert!(
            matches!(&err, Some(TraceError::Meta(m)) if m == "more functions than trace ids"),
            "first id {first}: {err:?}"
        );
    }
}

/// A thread's end record to follow [`GAP_AT_ID_0`]: its stream enters function id 0, which no module claims.
#[rustfmt::skip]
const ENTERS_ID_0: [u8; 72] = [
    // Record header: the end record of process 7, thread 1, copy 0, 48 bytes.
    0x03, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x30, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    // 23 bits, all in the last partial word: `1` (an activation), `0` (not in the entry cache), id 0 in 20
    // bits, then `0` (Done: the thread returns). Flags: complete. No stop, no fork, tid 9.
    0x17, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
];

/// Blocks regenerated, by function id and block.
struct Blocks(Vec<(u32, u32)>);

impl StepSink for Blocks {
    fn block(&mut self, f: FuncId, b: BlockId) {
        self.0.push((f.0, b.0));
    }
}

#[test]
fn a_stream_entering_an_id_no_module_claims_is_an_unknown_function() {
    let bytes = [&GAP_AT_ID_0[..], &ENTERS_ID_0[..]].concat();
    let file = TraceFile::parse(&bytes).unwrap();
    let (program, _) = file.program().unwrap();
    assert!(program.func(FuncId(0)).is_none(), "id 0 is a placeholder, no function");
    let t = &file.threads[0];
    assert_eq!((t.bits, t.complete), (23, true));
    let mut blocks = Blocks(Vec::new());
    let r = regenerate_from(&program, &ResumePoint::default(), &mut t.reader(t.bits), &mut blocks, 1000).unwrap();
    // Before the placeholder was marked unclaimed: a complete thread that ran block 0 of "<function 0>".
    assert_eq!(r, Err(RegenError::UnknownFunction(0)));
    assert!(blocks.0.is_empty(), "{:?}", blocks.0);
}
