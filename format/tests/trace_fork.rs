//! A fork child's trace file starts its threads' streams where its parent had written up to at the fork; its
//! `REC_PARENT` record names the parent's file, and `TraceFile::parse_with_parents` splices the inherited words
//! in — through any number of generations, and never from a file that is no longer the parent's. Also the other
//! records that relate one stream to another: a handler stream's `REC_HANDLERS`, a user context's `REC_CONTEXT`.
//! Files built by hand here: the words' values are arbitrary, only where they end up matters.

use pathprof_format::trace::TraceFile;
use pathprof_format::trace_layout::*;
use std::collections::BTreeMap;

const TOKEN: u64 = 0x5eed_0f7e_5700;

/// A file of process `pid` (runtime copy 0) holding `records`.
fn file(pid: u32, records: &[Vec<u8>]) -> Vec<u8> {
    let mut out = FileHeader { pid, copies: 1, token: TOKEN, next_id: 0 }.encode().to_vec();
    records.iter().for_each(|r| out.extend_from_slice(r));
    out
}

fn record(kind: u32, pid: u32, thread: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = record_header(kind, pid, 0, thread, payload.len() as u64).to_vec();
    out.extend_from_slice(payload);
    out
}

/// Thread 1's words from word `first` on, as the runtime writes them (first bit highest).
fn data(pid: u32, first: u64, words: &[u64]) -> Vec<u8> {
    let mut payload = first.to_le_bytes().to_vec();
    words.iter().for_each(|w| payload.extend_from_slice(&w.to_le_bytes()));
    record(REC_DATA, pid, 1, &payload)
}

/// Thread 1's end: `total` bits, the last partial word 0, and, for a fork child, the fork bit.
fn end(pid: u32, total: u64, fork_at: Option<u64>) -> Vec<u8> {
    let flags = END_COMPLETE | fork_at.map_or(0, |_| END_FORK_CHILD);
    let fields = [total, 0, flags, u64::MAX, fork_at.unwrap_or(0), 99];
    record(REC_END, pid, 1, &fields.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>())
}

/// Copy 0's parent: process `pid`'s copy 0, in file `path`, with `token`.
fn parent(child: u32, pid: u32, token: u64, path: &str) -> Vec<u8> {
    let mut payload = pid.to_le_bytes().to_vec();
    payload.extend_from_slice(&0u32.to_le_bytes());
    payload.extend_from_slice(&token.to_le_bytes());
    payload.extend_from_slice(path.as_bytes());
    record(REC_PARENT, child, 0, &payload)
}

/// The bytes a reader holds for `words` (the file's first bit highest, turned around).
fn read_as(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.reverse_bits().to_le_bytes()).collect()
}

/// Process 7 wrote words 0 and 1 before forking process 8, and words 2 and 3 of its own after; process 8 wrote
/// its words 2 and 3, then 5 bits, forked at bit 100, and forked process 9 when its stream was 4 words long.
fn family() -> BTreeMap<String, Vec<u8>> {
    let p = file(7, &[data(7, 0, &[10, 11]), data(7, 2, &[70, 71]), end(7, 4 * 64, None)]);
    let c = file(8, &[parent(8, 7, TOKEN, "/t/p"), data(8, 2, &[80, 81]), end(8, 4 * 64 + 5, Some(100))]);
    let g = file(9, &[parent(9, 8, TOKEN, "/t/c"), data(9, 4, &[90]), end(9, 5 * 64 + 3, Some(4 * 64 + 1))]);
    [("/t/p", p), ("/t/c", c), ("/t/g", g)].into_iter().map(|(n, b)| (n.to_string(), b)).collect()
}

fn parse(files: &BTreeMap<String, Vec<u8>>, name: &str) -> TraceFile {
    TraceFile::parse_with_parents(&files[name], &mut |path| files.get(path).cloned()).unwrap()
}

#[test]
fn a_fork_childs_stream_starts_with_the_words_its_parent_had_written() {
    let files = family();
    let t = &parse(&files, "/t/c").threads[0];
    let mut want = read_as(&[10, 11, 80, 81]);
    want.extend_from_slice(&[0; 8]); // the end's partial word
    assert_eq!((&t.bytes, t.bits, t.fork_at, t.gap, t.complete), (&want, 4 * 64 + 5, Some(100), false, true));
    assert_eq!(t.inherited_missing, None);
}

#[test]
fn a_grandchilds_stream_starts_in_two_files() {
    let files = family();
    let t = &parse(&files, "/t/g").threads[0];
    let mut want = read_as(&[10, 11, 80, 81, 90]);
    want.extend_from_slice(&[0; 8]);
    assert_eq!((&t.bytes, t.bits, t.fork_at, t.gap), (&want, 5 * 64 + 3, Some(4 * 64 + 1), false));
}

#[test]
fn without_the_parents_words_the_thread_has_a_gap_and_says_why() {
    let mut files = family();
    let missing = |files: &BTreeMap<String, Vec<u8>>, name: &str| {
        let t = parse(files, name).threads[0].clone();
        assert!(t.gap, "{name}: a gap");
        t.inherited_missing.unwrap()
    };
    // On its own, or with a loader that finds nothing.
    let alone = TraceFile::parse(&files["/t/c"]).unwrap();
    assert_eq!(
        alone.threads[0].inherited_missing.as_deref(),
        Some("what it inherited from its parent is in /t/p (process 7), which could not be read")
    );
    // The parent's file is now another process's (a reused name): its words are not the child's.
    let other = file(7, &[data(7, 0, &[10, 11]), end(7, 2 * 64, None)]);
    let mut other_token = other.clone();
    other_token[16..24].copy_from_slice(&(TOKEN + 1).to_le_bytes());
    files.insert("/t/p".into(), other_token);
    assert!(missing(&files, "/t/c").ends_with("which is now another process's"));
    // The parent's file stops before the fork (cut by PATHPROF_TRACE_MAX, or a lost record).
    files.insert("/t/p".into(), file(7, &[data(7, 0, &[10]), end(7, 64, None)]));
    assert!(missing(&files, "/t/c").ends_with("which does not hold them (the first 2 words of thread 1)"));
    // A grandchild whose parent's own splice failed lacks its first words too.
    assert!(missing(&files, "/t/g").contains("/t/c (process 8), which does not hold them"));
    // A corrupt parent.
    files.insert("/t/p".into(), b"PPTR".to_vec());
    assert!(missing(&files, "/t/c").contains("which cannot be read ("));
}

#[test]
fn a_file_naming_itself_its_parent_ends_the_search() {
    // Crafted: process 8's file names itself (same pid and token). The reader stops after MAX forks.
    let c = file(8, &[parent(8, 8, TOKEN, "/t/c"), data(8, 2, &[80]), end(8, 3 * 64, Some(100))]);
    let files: BTreeMap<String, Vec<u8>> = [("/t/c".to_string(), c)].into();
    let t = &parse(&files, "/t/c").threads[0];
    assert!(t.gap);
    assert!(t.inherited_missing.as_deref().unwrap().contains("/t/c (process 8), which"), "{:?}", t.inherited_missing);
}

#[test]
fn a_second_parent_record_of_a_copy_is_corrupt() {
    let c = file(8, &[parent(8, 7, TOKEN, "/t/p"), parent(8, 7, TOKEN, "/t/q")]);
    assert!(TraceFile::parse(&c).is_err());
    let short = file(8, &[record(REC_PARENT, 8, 0, &[1, 2, 3])]);
    assert!(TraceFile::parse(&short).is_err());
}

#[test]
fn fork_children_that_wrote_no_trace_are_listed_not_taken_for_other_processes() {
    let p = file(7, &[data(7, 0, &[10]), record(REC_UNTRACED_FORK, 9, 0, &[]), record(REC_UNTRACED_FORK, 8, 0, &[])]);
    let mut twice = p.clone();
    twice.extend_from_slice(&record(REC_UNTRACED_FORK, 8, 0, &[])); // a second runtime copy of process 8
    for bytes in [p, twice] {
        let f = TraceFile::parse(&bytes).unwrap();
        assert_eq!((f.untraced_forks.as_slice(), f.other_processes.as_slice()), (&[8, 9][..], &[][..]));
        assert_eq!(f.threads.len(), 1);
    }
}

/// A handler stream (`REC_HANDLERS`: the signal handlers run on another thread) is a thread of its own that names
/// the thread it serves, as a stream a thread went on in after a handler's `siglongjmp` (`REC_RESUMED`) names
/// the one it continues; one naming itself, two different threads, or with a short payload is corrupt.
#[test]
fn a_handler_stream_names_the_thread_it_serves() {
    let handlers = |thread: u32, host: u32| {
        let payload = [host.to_le_bytes(), 0u32.to_le_bytes()].concat();
        record(REC_HANDLERS, 7, thread, &payload)
    };
    let two = |thread: u32| {
        let fields = [64, 0, END_COMPLETE, u64::MAX, 0, 99];
        let end = record(REC_END, 7, thread, &fields.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>());
        let words = [0u64.to_le_bytes(), 5u64.to_le_bytes()].concat();
        [record(REC_DATA, 7, thread, &words), end]
    };
    let [d1, e1] = two(1);
    let [d2, e2] = two(2);
    let resumed = record(REC_RESUMED, 7, 2, &[1u32.to_le_bytes(), 0u32.to_le_bytes()].concat());
    let f = TraceFile::parse(&file(7, &[d1.clone(), e1.clone(), resumed, d2.clone(), e2.clone()])).unwrap();
    assert_eq!(
        f.threads.iter().map(|t| (t.resumes, t.handlers_of)).collect::<Vec<_>>(),
        [(None, None), (Some(1), None)]
    );
    let f = TraceFile::parse(&file(7, &[d1, e1, handlers(2, 1), d2, e2, handlers(2, 1)])).unwrap();
    let serves: Vec<(u32, Option<u32>)> = f.threads.iter().map(|t| (t.thread, t.handlers_of)).collect();
    assert_eq!(serves, [(1, None), (2, Some(1))]);
    assert_eq!(f.threads[1].label(), "thread 2 (signal handlers of thread 1) of process 7");
    for bad in
        [vec![handlers(2, 2)], vec![handlers(2, 1), handlers(2, 3)], vec![record(REC_HANDLERS, 7, 2, &[1, 0, 0])]]
    {
        assert!(TraceFile::parse(&file(7, &bad)).is_err());
    }
}

/// A user context's stream (`REC_CONTEXT`) names the stream that made it; its end with `END_SUSPENDED` (a
/// context the program never switched back to) reads as a suspended stream, not a complete one. One naming
/// itself, two makers, or a short payload is corrupt.
#[test]
fn a_context_stream_names_its_maker_and_may_end_suspended() {
    let context = |thread: u32, maker: u32| record(REC_CONTEXT, 7, thread, &[maker.to_le_bytes(), [0; 4]].concat());
    let stream = |thread: u32, flags: u64| {
        let fields = [64, 0, flags, u64::MAX, 0, 99];
        let end = record(REC_END, 7, thread, &fields.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>());
        let words = [0u64.to_le_bytes(), 5u64.to_le_bytes()].concat();
        [record(REC_DATA, 7, thread, &words), end]
    };
    let [d1, e1] = stream(1, END_COMPLETE);
    let [d2, e2] = stream(2, END_SUSPENDED);
    let [d3, e3] = stream(3, END_SUSPENDED | END_AT_EXIT);
    let f = TraceFile::parse(&file(7, &[d1, e1, context(2, 1), d2, e2, context(3, 2), d3, e3])).unwrap();
    let made: Vec<_> = f.threads.iter().map(|t| (t.thread, t.context_of, t.complete, t.suspended, t.at_exit)).collect();
    assert_eq!(
        made,
        [(1, None, true, false, false), (2, Some(1), false, true, false), (3, Some(2), false, true, true)]
    );
    assert_eq!(f.threads[1].label(), "thread 2 (a user context thread 1 made) of process 7");
    for bad in [vec![context(2, 2)], vec![context(2, 1), context(2, 3)], vec![record(REC_CONTEXT, 7, 2, &[1, 0])]] {
        assert!(TraceFile::parse(&file(7, &bad)).is_err());
    }
}
