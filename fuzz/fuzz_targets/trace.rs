//! `pathprof_format::trace::TraceFile::parse_with_parents` on arbitrary bytes, every fork parent's file read
//! as the same bytes (a file that names itself its parent splices up to the depth bound), then, for a file
//! that parses, what `pathprof trace` does with it: the program of the file's modules (`TraceFile::program`),
//! each window's resume point (`TraceFile::resume_point`), and every thread's stream regenerated with
//! `pathprof_core::tracing::regenerate_from`, from the window's start to its end, under a block limit (a valid
//! but long stream must not time out). It must never panic, and a walk must stop at the block limit, with
//! `BlockLimit` saying so.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pathprof_core::tracing::{regenerate_from, FuncId, RegenError, ResumePoint, StepSink};
use pathprof_core::{BlockId, EdgeId};
use pathprof_format::trace::TraceFile;

/// Blocks regenerated per thread at most (a stream of a few KB can describe a loop run millions of times).
const MAX_BLOCKS: u64 = 100_000;

/// Counts blocks and edges, and checks each names a vertex or edge of a function the program has.
struct Count<'a> {
    program: &'a pathprof_core::tracing::Program,
    blocks: u64,
}

impl StepSink for Count<'_> {
    fn block(&mut self, f: FuncId, _b: BlockId) {
        assert!(self.program.func(f).is_some(), "a block of function {f:?}, which the program lacks");
        self.blocks += 1;
    }
    fn edge(&mut self, f: FuncId, _e: EdgeId) {
        assert!(self.program.func(f).is_some(), "an edge of function {f:?}, which the program lacks");
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(file) = TraceFile::parse_with_parents(data, &mut |_| Some(data.to_vec())) else { return };
    let Ok((program, owner)) = file.program() else { return };
    if file.naive {
        return; // naive items describe themselves: nothing to regenerate
    }
    for t in &file.threads {
        let resume = match &t.window {
            Some(w) if !w.opened => continue,
            Some(w) => match file.resume_point(w, &owner) {
                Ok(r) => r,
                Err(_) => continue,
            },
            None => ResumePoint::default(),
        };
        let bits = t.abnormal_at.unwrap_or(t.bits).min(t.bits);
        let mut reader = t.reader(bits);
        if !reader.skip(t.window.as_ref().map_or(0, |w| w.start)) {
            continue;
        }
        let mut sink = Count { program: &program, blocks: 0 };
        let Ok(r) = regenerate_from(&program, &resume, &mut reader, &mut sink, MAX_BLOCKS) else { continue };
        match r {
            Ok(n) => assert!(n <= MAX_BLOCKS, "{n} blocks, over the limit"),
            Err(RegenError::BlockLimit(n)) => assert_eq!(n, MAX_BLOCKS),
            Err(_) => {}
        }
    }
});
