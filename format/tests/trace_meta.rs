//! Trace-file module metadata: the recording point (mode icache records at `OptimizerLast`), the `invoke`
//! blocks, the kept calls and the direct call sites round-trip; plain trace mode's blob keeps its bytes;
//! unknown tails and direct call sites that do not fit the functions are refused.

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
            left_out: Vec::new(),
            path_loop_resets: pathprof_core::ball_larus::ResetRule::None,
            compilation_dirs: Vec::new(),
        },
        calls: Vec::new(),
        optimizer_last,
        invokes: Vec::new(),
        kept_calls: Vec::new(),
        direct: Vec::new(),
        implicit: Vec::new(),
        isel: Vec::new(),
        tail_calls: Vec::new(),
    }
}

/// A function of two blocks, `0 → 1 → return`, block 0 holding two call sites.
fn two_block_function(name: &str) -> pathprof_format::meta::FunctionMeta {
    use pathprof_core::{BlockId, Cfg, Edge, EdgeKind};
    let edges = vec![
        Edge { from: BlockId(0), to: BlockId(1), kind: EdgeKind::Branch { succ: 0 } },
        Edge { from: BlockId(1), to: BlockId(2), kind: EdgeKind::Return },
        Edge { from: BlockId(2), to: BlockId(0), kind: EdgeKind::ExitToEntry },
    ];
    pathprof_format::meta::FunctionMeta {
        name: name.into(),
        display_name: String::new(),
        file: String::new(),
        start_line: 0,
        cfg: Cfg::new(2, edges).unwrap(),
        blocks: vec![pathprof_format::meta::BlockMeta { lines: Vec::new() }; 2],
        edge_counters: vec![None; 3],
        counter_base: 0,
        num_counters: 0,
        reentry_blocks: Vec::new(),
        cfg_hash: 0,
        path: None,
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
    use pathprof_format::trace_layout::{FileHeader, TRACE_MAGIC, TRACE_READS_SINCE, TRACE_VERSION};
    // Version 8 reserves one more function id (abandon markers); version 7 wrote entries with a full id
    // through the entry cache (a hit flag before the id or slot); version 6 had the file header of runtime
    // copies; files of versions 2–7 must be refused (a version 6 stream read with the cache would be misread,
    // a version 7 one could name a function with the id version 8 reserves). Version 9 stores data words
    // first bit highest, its stream is version 8's: both are read (`a_trace_of_the_previous_layout_reads_the_same`
    // in the test suite); version 10 adds parent records to version 9, whose files read the same; version 11
    // adds handler-stream records to version 10, version 12 user-context records to version 11; version 13 is
    // not known yet.
    assert_eq!((TRACE_READS_SINCE, TRACE_VERSION), (8, 12));
    for previous in [2u32, 3, 4, 5, 6, 7, 13] {
        let mut old = TRACE_MAGIC.to_vec();
        old.extend_from_slice(&previous.to_le_bytes());
        assert!(matches!(TraceFile::parse(&old), Err(TraceError::Version(v)) if v == previous));
    }
    let now = FileHeader { pid: 7, copies: 1, token: 0x1234_5678_9abc_def0, next_id: 0 }.encode();
    assert!(TraceFile::parse(&now).is_ok());
    let mut eight = now;
    eight[4..8].copy_from_slice(&8u32.to_le_bytes());
    assert!(TraceFile::parse(&eight).is_ok());
    let mut nine = now;
    nine[4..8].copy_from_slice(&9u32.to_le_bytes());
    assert!(TraceFile::parse(&nine).is_ok());
    // Magic and version alone: a header cut short.
    assert!(matches!(TraceFile::parse(&now[..8]), Err(TraceError::BadHeader)));
}

#[test]
fn direct_call_sites_round_trip_and_must_fit_their_functions() {
    let mut m = meta(false);
    m.module.functions = vec![two_block_function("f"), two_block_function("g")];
    m.calls = vec![vec![2, 0], vec![2, 0]];
    m.invokes = vec![Vec::new(), Vec::new()];
    // f's second call site of block 0 calls g directly; g's first calls f.
    m.direct = vec![vec![(0, 1, 1)], vec![(0, 0, 0)]];
    let back = TraceModuleMeta::decode(&m.encode()).unwrap();
    assert_eq!(back.direct, m.direct);
    // No direct call sites: decoded as one empty list per function.
    let mut none = m.clone();
    none.direct = vec![Vec::new(); 2];
    assert_eq!(TraceModuleMeta::decode(&none.encode()).unwrap().direct, none.direct);
    // A call index past the block's call sites, a block without call sites, a callee the module does not
    // have, a list per function missing: refused.
    for direct in [
        vec![vec![(0, 2, 1)], vec![]],
        vec![vec![(1, 0, 1)], vec![]],
        vec![vec![(0, 0, 2)], vec![]],
        vec![vec![(0, 0, 1)]],
    ] {
        let mut bad = m.clone();
        bad.direct = direct;
        assert!(TraceModuleMeta::decode(&bad.encode()).is_err(), "{:?}", bad.direct);
    }
}

#[test]
fn the_predicted_isel_blocks_round_trip_with_and_without_extras_and_must_fit_their_functions() {
    use pathprof_format::trace::IselPrediction;
    let p = |ids: &[Option<u32>], split: &[u32]| IselPrediction { ids: ids.to_vec(), split: split.to_vec() };
    for kept in [false, true] {
        let mut m = meta(true);
        m.module.functions = vec![two_block_function("f"), two_block_function("g")];
        m.calls = vec![vec![0, 0], vec![0, 0]];
        if kept {
            m.kept_calls = vec!["h".into()];
        }
        // f: machine id 1 is a block codegen's IR passes add, id 2 is traced block 1; g: no prediction.
        m.isel = vec![p(&[Some(0), None, Some(1)], &[]), IselPrediction::default()];
        let back = TraceModuleMeta::decode(&m.encode()).unwrap();
        assert_eq!((back.isel.clone(), back.kept_calls.clone()), (m.isel.clone(), m.kept_calls.clone()));
        // A split block listed apart.
        let mut split = m.clone();
        split.isel[0] = p(&[Some(0)], &[1]);
        assert_eq!(TraceModuleMeta::decode(&split.encode()).unwrap().isel, split.isel);
        // Without any prediction the blob is the one without the field (one empty prediction per function back).
        let mut none = m.clone();
        none.isel = vec![IselPrediction::default(); 2];
        let mut older = m.clone();
        older.isel = Vec::new();
        assert_eq!(none.encode(), older.encode());
        assert_eq!(TraceModuleMeta::decode(&none.encode()).unwrap().isel, none.isel);
        // A traced block the function does not have, an entry that is not block 0, a block listed twice (among
        // the ids or as a split block too), split blocks without a prediction, a prediction per function
        // missing, trailing bytes: refused.
        for isel in [
            vec![p(&[Some(0), Some(2)], &[]), p(&[], &[])],
            vec![p(&[None, Some(0)], &[]), p(&[], &[])],
            vec![p(&[Some(1), Some(0)], &[]), p(&[], &[])],
            vec![p(&[Some(0), Some(1), Some(1)], &[]), p(&[], &[])],
            vec![p(&[Some(0), Some(1)], &[1]), p(&[], &[])],
            vec![p(&[Some(0)], &[2]), p(&[], &[])],
            vec![p(&[], &[1]), p(&[], &[])],
            vec![p(&[Some(0)], &[])],
        ] {
            let mut bad = m.clone();
            bad.isel = isel;
            assert!(TraceModuleMeta::decode(&bad.encode()).is_err(), "{:?}", bad.isel);
        }
        let mut trailing = m.encode();
        trailing.push(0);
        assert!(TraceModuleMeta::decode(&trailing).is_err());
    }
}

#[test]
fn tail_calls_round_trip_after_the_other_tails_and_must_end_activations() {
    for (optimizer_last, kept) in [(false, false), (false, true), (true, true)] {
        let mut m = meta(optimizer_last);
        m.module.functions = vec![two_block_function("f"), two_block_function("g")];
        m.calls = vec![vec![0, 0], vec![0, 0]];
        if kept {
            m.kept_calls = vec!["h".into()];
        }
        // f's block 1 returns through a tail call; g makes none.
        m.tail_calls = vec![vec![1], Vec::new()];
        let back = TraceModuleMeta::decode(&m.encode()).unwrap();
        assert_eq!((back.tail_calls.clone(), back.kept_calls.clone()), (m.tail_calls.clone(), m.kept_calls.clone()));
        // None: the blob is the one without the field, decoded as one empty list per function.
        let mut none = m.clone();
        none.tail_calls = vec![Vec::new(); 2];
        let mut older = m.clone();
        older.tail_calls = Vec::new();
        assert_eq!(none.encode(), older.encode());
        assert_eq!(TraceModuleMeta::decode(&none.encode()).unwrap().tail_calls, none.tail_calls);
        // A block that does not return (block 0 branches to block 1), a block the function does not have, a
        // list per function missing, trailing bytes: refused.
        for tail_calls in [vec![vec![0], vec![]], vec![vec![2], vec![]], vec![vec![1]]] {
            let mut bad = m.clone();
            bad.tail_calls = tail_calls;
            assert!(TraceModuleMeta::decode(&bad.encode()).is_err(), "{:?}", bad.tail_calls);
        }
        let mut trailing = m.encode();
        trailing.push(0);
        assert!(TraceModuleMeta::decode(&trailing).is_err());
    }
}

#[test]
fn records_of_another_process_are_left_out_and_named() {
    use pathprof_format::trace::TraceFile;
    use pathprof_format::trace_layout::{record_header, FileHeader, REC_DATA, REC_IMAGE};
    // A file started by process 7 (one runtime copy) that process 9 also wrote into: 9's data record is left
    // out (its trace ids and threads are its own), and 9 is named.
    let mut b = FileHeader { pid: 7, copies: 1, token: 1, next_id: 0 }.encode().to_vec();
    b.extend_from_slice(&record_header(REC_IMAGE, 7, 0, 0, 5));
    b.extend_from_slice(b"./app");
    b.extend_from_slice(&record_header(REC_DATA, 9, 0, 1, 16));
    b.extend_from_slice(&[0u8; 16]);
    let f = TraceFile::parse(&b).unwrap();
    assert_eq!((f.pid, f.other_processes.clone(), f.threads.len()), (7, vec![9], 0));
    assert_eq!(f.images.get(&0).map(String::as_str), Some("./app"));
    // A record of a copy the header does not count is refused, not misread.
    let mut bad = FileHeader { pid: 7, copies: 1, token: 1, next_id: 0 }.encode().to_vec();
    bad.extend_from_slice(&record_header(REC_IMAGE, 7, 1, 0, 0));
    assert!(TraceFile::parse(&bad).is_err());
}
