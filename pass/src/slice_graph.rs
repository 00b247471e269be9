//! One function's IR as a [`ProgramGraph`] for slicing (issue #22; Ball's thesis ch. 6, the augmented CFG).
//!
//! - **Vertices**: every instruction of a block reachable from the entry, except lifetime markers and debug
//!   intrinsics (the rewriter drops those). Unreachable blocks are left out (and deleted by the rewriter).
//! - **Arcs**: straight-line `TRUE` arcs inside a block; a conditional `br` / `switch` is a predicate whose label
//!   `i` is its IR successor `i`; `ret` and `unreachable` go to EXIT. An unconditional `br` is a jump, a
//!   pseudo-predicate whose dummy `FALSE` arc goes to its *lexical successor*: the first instruction of the next
//!   reachable block in layout order (EXIT after the last block) — clang lays blocks out in source order, so that
//!   is where control would go were the `goto` / `break` / `continue` / `return` a no-op. A call that may not
//!   return ([`CallSummary::may_not_return`]) gets an executable `FALSE` arc to EXIT: it is a predicate too.
//!   With a profile, only the executed blocks and taken arcs ([`crate::slice_profile`]).
//! - **Data**: SSA operands are direct dependences; a phi also depends on the terminators of its incoming blocks
//!   (they choose its value). Memory goes through reaching definitions over abstract locations from a simple,
//!   sound alias analysis: each *non-escaping* alloca (every use, through `getelementptr`s, is the pointer of a
//!   load or store, or a memset/memcpy/memmove operand) is one location of its own; all other memory — globals,
//!   the heap, escaping allocas — is one location, HEAP. A store of the alloca's whole type straight into it is a
//!   strong definition; other stores and memory intrinsics are may-definitions.
//! - **Calls are summarised**: a call uses its arguments; it reads HEAP unless LLVM says it touches no memory;
//!   it may define HEAP unless it only reads memory or is an output function of the C library (`printf`, `puts`
//!   …, whose `%n` is ignored). Calls to defined functions are summarised the same way (their bodies are not
//!   sliced). The stdio streams' state (error and end-of-file flags, positions) is one more location, STREAM:
//!   output functions may define it, the other stdio functions (`ferror`, `ftell`, `fclose`, input …), indirect
//!   calls and defined functions that reach any of these read it and may define it. An external function of
//!   another library that does stdio itself is not seen to (a known gap: only the C library's names are known).
//!   The result of an output function is taken to depend on its arguments only.

use crate::ir;
use crate::shim;
use crate::slice_profile::Executed;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::LLVMOpcode;
use pathprof_core::slicing::{Label, Loc, ProgramGraph, StmtId, Vertex};
use std::collections::{HashMap, HashSet};

/// All memory but the non-escaping allocas and the stdio stream state.
pub const HEAP: Loc = Loc(0);
/// The state of the C library's streams (error and end-of-file flags, positions, buffers): written by output and
/// input functions, read by those that report it (`ferror`, `ftell`, `fclose` …).
pub const STREAM: Loc = Loc(1);
/// The first location of a non-escaping alloca.
const FIRST_ALLOCA: u32 = 2;

/// C library output functions: they read their arguments' memory and write only the output stream's state (`fflush`
/// also reads it: it is in [`STREAM_FUNCTIONS`] too).
const OUTPUT_FUNCTIONS: &[&str] =
    &["printf", "fprintf", "puts", "putchar", "fputs", "fputc", "putc", "fflush", "fwrite", "vprintf", "vfprintf"];

/// C library functions that read (and may change) a stream's state: input, positioning, flushing, closing,
/// error and end-of-file queries. Summarised like any unknown call, plus STREAM.
const STREAM_FUNCTIONS: &[&str] = &[
    "ferror",
    "feof",
    "clearerr",
    "fileno",
    "ftell",
    "ftello",
    "fgetpos",
    "fseek",
    "fseeko",
    "fsetpos",
    "rewind",
    "fflush",
    "fclose",
    "freopen",
    "setvbuf",
    "setbuf",
    "fgetc",
    "getc",
    "getchar",
    "fgets",
    "gets",
    "fread",
    "ungetc",
    "getline",
    "getdelim",
    "scanf",
    "fscanf",
    "vscanf",
    "vfscanf",
    "__isoc99_scanf",
    "__isoc99_fscanf",
    "__isoc99_vscanf",
    "__isoc99_vfscanf",
];

/// How a call is modelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallSummary {
    /// Reads HEAP.
    pub reads: bool,
    /// May define HEAP.
    pub writes: bool,
    /// May define STREAM (output, input and other stdio functions, and the defined functions that call them).
    pub writes_stream: bool,
    /// Reads STREAM (stdio functions other than output, and defined functions that call stdio functions).
    pub reads_stream: bool,
    /// Control may not come back (exit, abort, longjmp, an unknown function): an executable arc to EXIT.
    pub may_not_return: bool,
}

/// A call that is no statement of the slice: lifetime markers and debug intrinsics (dropped by the rewrite).
pub fn is_ignored(inst: LLVMValueRef) -> bool {
    if ir::opcode(inst) != LLVMOpcode::LLVMCall {
        return false;
    }
    let Some(f) = ir::called_function(inst) else { return false };
    let n = ir::name(f);
    n.starts_with("llvm.lifetime.") || n.starts_with("llvm.dbg.")
}

fn mem_intrinsic(call: LLVMValueRef) -> Option<&'static str> {
    let n = ir::name(ir::called_function(call)?);
    ["llvm.memcpy.", "llvm.memmove.", "llvm.memset."].into_iter().find(|p| n.starts_with(p))
}

/// What slicing assumes of the module's defined functions, whose calls are summarised (their bodies are not
/// sliced).
pub struct ModuleSummaries {
    /// They call, directly or through other defined functions, a `noreturn` function, an unknown external one
    /// (not `willreturn`, not a C output function) or a pointer. Recursion alone counts as returning (slicing is
    /// termination-insensitive, thesis Theorem 6.1).
    may_not_return: HashSet<LLVMValueRef>,
    /// They call, directly or through other defined functions, a stdio function or a pointer: they read and may
    /// write STREAM.
    use_streams: HashSet<LLVMValueRef>,
    /// They may write memory other than their own non-escaping allocas (directly, or through calls of functions
    /// that may): a call of any other defined function writes no HEAP.
    writes_memory: HashSet<LLVMValueRef>,
}

impl ModuleSummaries {
    /// The summaries of `m`'s defined functions, each a fixed point over the calls between them.
    pub fn of(m: LLVMModuleRef) -> ModuleSummaries {
        let defined: Vec<LLVMValueRef> = ir::functions(m).into_iter().filter(|&f| !ir::is_declaration(f)).collect();
        let closure = |direct: &dyn Fn(LLVMValueRef, &HashSet<LLVMValueRef>) -> bool, seed: HashSet<LLVMValueRef>| {
            let mut out = seed;
            loop {
                let before = out.len();
                for &f in &defined {
                    if !out.contains(&f) && calls(f).any(|c| direct(c, &out)) {
                        out.insert(f);
                    }
                }
                if out.len() == before {
                    return out;
                }
            }
        };
        let may_not_return = closure(&|c, out| !returns(c, out), HashSet::new());
        let use_streams = closure(
            &|c, out| {
                let callee = ir::called_function(c);
                let name = callee.map(ir::name).unwrap_or_default();
                (callee.is_none() && !ir::calls_inline_asm(c))
                    || OUTPUT_FUNCTIONS.contains(&name.as_str())
                    || STREAM_FUNCTIONS.contains(&name.as_str())
                    || callee.is_some_and(|f| out.contains(&f))
            },
            HashSet::new(),
        );
        let local_writers = defined.iter().copied().filter(|&f| writes_outside_locals(f)).collect();
        let writes_memory = closure(&|c, out| !is_ignored(c) && writes_heap(c, out), local_writers);
        ModuleSummaries { may_not_return, use_streams, writes_memory }
    }

    /// The summary of `call`.
    pub fn summarise(&self, call: LLVMValueRef) -> CallSummary {
        let effects = unsafe { shim::pathprof_shim_call_effects(call) };
        let no_memory = effects & 2 != 0;
        let callee = ir::called_function(call);
        let name = callee.map(ir::name).unwrap_or_default();
        let output = OUTPUT_FUNCTIONS.contains(&name.as_str());
        let stdio = STREAM_FUNCTIONS.contains(&name.as_str())
            || (callee.is_none() && !ir::calls_inline_asm(call))
            || callee.is_some_and(|f| self.use_streams.contains(&f));
        CallSummary {
            reads: !no_memory,
            writes: writes_heap(call, &self.writes_memory),
            writes_stream: output || stdio,
            reads_stream: stdio,
            may_not_return: !returns(call, &self.may_not_return),
        }
    }
}

/// Whether `call` may write HEAP, given the defined functions that may (`writers`): not when LLVM says it only
/// reads or touches no memory, for C output functions (they write only STREAM), nor for a call of a defined,
/// non-interposable function outside `writers`.
fn writes_heap(call: LLVMValueRef, writers: &HashSet<LLVMValueRef>) -> bool {
    let effects = unsafe { shim::pathprof_shim_call_effects(call) };
    let (reads_only, no_memory) = (effects & 1 != 0, effects & 2 != 0);
    let callee = ir::called_function(call);
    let output = callee.is_some_and(|f| OUTPUT_FUNCTIONS.contains(&ir::name(f).as_str()));
    let defined_non_writer =
        callee.is_some_and(|f| !ir::is_declaration(f) && ir::definition_is_final(f) && !writers.contains(&f));
    !(reads_only || no_memory || output || defined_non_writer)
}

/// The calls and invokes of `f`.
fn calls(f: LLVMValueRef) -> impl Iterator<Item = LLVMValueRef> {
    ir::blocks(f)
        .into_iter()
        .flat_map(ir::instructions)
        .filter(|&i| matches!(ir::opcode(i), LLVMOpcode::LLVMCall | LLVMOpcode::LLVMInvoke))
}

/// Whether `f` itself (not its calls) may write memory other than its non-escaping allocas.
fn writes_outside_locals(f: LLVMValueRef) -> bool {
    let locs = AllocaLocations::of(f);
    let mut based = HashMap::new();
    ir::blocks(f).into_iter().flat_map(ir::instructions).any(|i| match ir::opcode(i) {
        LLVMOpcode::LLVMStore => locs.access(operand(i, 1), &mut based, i).0 == HEAP,
        LLVMOpcode::LLVMCall if mem_intrinsic(i).is_some() => locs.access(operand(i, 0), &mut based, i).0 == HEAP,
        LLVMOpcode::LLVMAtomicRMW | LLVMOpcode::LLVMAtomicCmpXchg | LLVMOpcode::LLVMFence | LLVMOpcode::LLVMVAArg => {
            true
        }
        _ => false,
    })
}

/// Whether control comes back from `call`, given the defined functions that may not return.
fn returns(call: LLVMValueRef, may_not_return: &HashSet<LLVMValueRef>) -> bool {
    let effects = unsafe { shim::pathprof_shim_call_effects(call) };
    let (will_return, no_return) = (effects & 4 != 0, effects & 8 != 0);
    let callee = ir::called_function(call);
    let output = callee.is_some_and(|f| OUTPUT_FUNCTIONS.contains(&ir::name(f).as_str()));
    !no_return
        && (will_return
            || output
            || ir::calls_inline_asm(call)
            || callee.is_some_and(|f| ir::intrinsic_id(f) != 0)
            || callee.is_some_and(|f| !ir::is_declaration(f) && !may_not_return.contains(&f)))
}

/// A function's slicing graph and the map between its vertices and instructions.
pub struct FunctionGraph {
    /// The augmented CFG with def/use sets.
    pub g: ProgramGraph,
    /// Per vertex its instruction (null for ENTRY and EXIT).
    pub inst: Vec<LLVMValueRef>,
    /// Per instruction its vertex.
    pub vertex: HashMap<LLVMValueRef, StmtId>,
    /// The blocks reachable from the entry, in layout order.
    pub reachable: Vec<LLVMBasicBlockRef>,
    /// Per call vertex, its summary.
    pub calls: HashMap<StmtId, CallSummary>,
    /// Per memory access, the alloca its pointer is based on (escaping or not), for `VAR` criteria.
    pub accessed_alloca: HashMap<LLVMValueRef, LLVMValueRef>,
}

impl FunctionGraph {
    /// Builds the graph of `f`; `exit_uses_heap`: every `ret` reads HEAP and STREAM (a function whose callers
    /// run on after it returns must leave memory and the streams' state as the program would).
    /// With `executed` (a profile's, [`crate::slice_profile`]), only the blocks and branch arcs it shows
    /// executed are in the graph; a block that ran but was never left (a call ended the run) goes to EXIT.
    /// `exceptions`: model C++ exception control flow (for differencing; the slice rewriter does not handle it):
    /// an `invoke` is a call and a predicate — label 0 to its normal destination, 1 to its landing pad, 2 to
    /// EXIT when it may not return — a `landingpad` reads HEAP (the exception), and `resume` leaves like `ret`.
    pub fn build(
        f: LLVMValueRef,
        summaries: &ModuleSummaries,
        exit_uses_heap: bool,
        executed: Option<&Executed>,
        exceptions: bool,
    ) -> Result<FunctionGraph, String> {
        let taken = |bb: LLVMBasicBlockRef, l: usize| executed.is_none_or(|x| x.arcs.contains(&(bb, l as u32)));
        if executed.is_some_and(|x| !x.blocks.contains(&ir::blocks(f)[0])) {
            return Err("the profile shows the function never ran".into());
        }
        let reachable = reachable_blocks(f, &taken, exceptions)?;
        let locs = AllocaLocations::of(f);
        let mut g = ProgramGraph::new();
        let mut inst = vec![std::ptr::null_mut(), std::ptr::null_mut()];
        let mut vertex = HashMap::new();
        let mut first = HashMap::new();
        let mut calls = HashMap::new();
        let mut accessed_alloca = HashMap::new();
        for &bb in &reachable {
            for i in ir::instructions(bb) {
                if is_ignored(i) {
                    continue;
                }
                let mut v = Vertex::default();
                match ir::opcode(i) {
                    LLVMOpcode::LLVMLoad => v.uses.push(locs.access(operand(i, 0), &mut accessed_alloca, i).0),
                    LLVMOpcode::LLVMStore => {
                        let (loc, exact) = locs.access(operand(i, 1), &mut accessed_alloca, i);
                        let whole =
                            exact && unsafe { LLVMTypeOf(operand(i, 0)) == LLVMGetAllocatedType(operand(i, 1)) };
                        if whole {
                            v.defs.push(loc);
                        } else {
                            v.may_defs.push(loc);
                        }
                    }
                    LLVMOpcode::LLVMCall if mem_intrinsic(i).is_some() => {
                        v.may_defs.push(locs.access(operand(i, 0), &mut accessed_alloca, i).0);
                        if mem_intrinsic(i) != Some("llvm.memset.") {
                            v.uses.push(locs.access(operand(i, 1), &mut accessed_alloca, i).0);
                        }
                    }
                    LLVMOpcode::LLVMCall | LLVMOpcode::LLVMInvoke => {
                        if ir::returns_twice(i) {
                            return Err("cannot slice a function that calls setjmp (a call that returns twice)".into());
                        }
                        let s = summaries.summarise(i);
                        if s.reads {
                            v.uses.push(HEAP);
                        }
                        if s.writes {
                            v.may_defs.push(HEAP);
                        }
                        if s.reads_stream {
                            v.uses.push(STREAM);
                        }
                        if s.writes_stream {
                            v.may_defs.push(STREAM);
                        }
                        calls.insert(StmtId::from_index(inst.len()), s);
                    }
                    LLVMOpcode::LLVMRet | LLVMOpcode::LLVMResume if exit_uses_heap => v.uses.extend([HEAP, STREAM]),
                    LLVMOpcode::LLVMLandingPad => v.uses.push(HEAP),
                    // Read-modify-write accesses: their pointers make any alloca escape, so HEAP is theirs.
                    LLVMOpcode::LLVMAtomicRMW
                    | LLVMOpcode::LLVMAtomicCmpXchg
                    | LLVMOpcode::LLVMFence
                    | LLVMOpcode::LLVMVAArg => {
                        v.uses.push(HEAP);
                        v.may_defs.push(HEAP);
                    }
                    _ => {}
                }
                let id = g.add_vertex(v);
                debug_assert_eq!(id.index(), inst.len());
                inst.push(i);
                vertex.insert(i, id);
                first.entry(bb).or_insert(id);
            }
        }
        let start = |bb: LLVMBasicBlockRef| first[&bb];
        g.add_arc(ProgramGraph::ENTRY, Label::TRUE, start(reachable[0]), false);
        for (k, &bb) in reachable.iter().enumerate() {
            let vs: Vec<StmtId> =
                ir::instructions(bb).into_iter().filter(|i| !is_ignored(*i)).map(|i| vertex[&i]).collect();
            for w in vs.windows(2) {
                g.add_arc(w[0], Label::TRUE, w[1], false);
            }
            let term = *vs.last().expect("a block has a terminator");
            for &v in vs.iter().filter(|&&v| v != term || ir::opcode(inst[v.index()]) != LLVMOpcode::LLVMInvoke) {
                if calls.get(&v).is_some_and(|s| s.may_not_return) {
                    g.add_arc(v, Label::FALSE, ProgramGraph::EXIT, false);
                }
            }
            let t = inst[term.index()];
            let succs = ir::successors(t);
            match ir::opcode(t) {
                LLVMOpcode::LLVMRet | LLVMOpcode::LLVMUnreachable | LLVMOpcode::LLVMResume => {
                    g.add_arc(term, Label::TRUE, ProgramGraph::EXIT, false)
                }
                LLVMOpcode::LLVMInvoke => {
                    for (l, &s) in succs.iter().enumerate().filter(|&(l, _)| taken(bb, l)) {
                        g.add_arc(term, Label(l as u32), start(s), false);
                    }
                    if calls.get(&term).is_some_and(|s| s.may_not_return) {
                        g.add_arc(term, Label(2), ProgramGraph::EXIT, false);
                    } else if !(0..succs.len()).any(|l| taken(bb, l)) {
                        g.add_arc(term, Label::TRUE, ProgramGraph::EXIT, false);
                    }
                }
                LLVMOpcode::LLVMBr if succs.len() == 1 => {
                    let to = if taken(bb, 0) { start(succs[0]) } else { ProgramGraph::EXIT };
                    g.add_arc(term, Label::TRUE, to, false);
                    let lexical = reachable.get(k + 1).map_or(ProgramGraph::EXIT, |&n| start(n));
                    g.add_arc(term, Label::FALSE, lexical, true);
                }
                LLVMOpcode::LLVMBr | LLVMOpcode::LLVMSwitch => {
                    let mut any = false;
                    for (l, &s) in succs.iter().enumerate().filter(|&(l, _)| taken(bb, l)) {
                        g.add_arc(term, Label(l as u32), start(s), false);
                        any = true;
                    }
                    if !any {
                        g.add_arc(term, Label::TRUE, ProgramGraph::EXIT, false);
                    }
                }
                op => return Err(format!("cannot slice a function with a {op:?} terminator")),
            }
        }
        for (idx, &i) in inst.iter().enumerate().skip(2) {
            let user = StmtId::from_index(idx);
            for k in 0..unsafe { LLVMGetNumOperands(i) } {
                if let Some(&d) = vertex.get(&operand(i, k as u32)) {
                    g.add_direct_dependence(d, user);
                }
            }
            if ir::opcode(i) == LLVMOpcode::LLVMPHI {
                for k in 0..unsafe { LLVMCountIncoming(i) } {
                    let bb = unsafe { LLVMGetIncomingBlock(i, k) };
                    if let Some(t) = ir::terminator(bb).and_then(|t| vertex.get(&t)) {
                        g.add_direct_dependence(*t, user);
                    }
                }
            }
        }
        Ok(FunctionGraph { g, inst, vertex, reachable, calls, accessed_alloca })
    }
}

fn operand(i: LLVMValueRef, k: u32) -> LLVMValueRef {
    unsafe { LLVMGetOperand(i, k) }
}

/// The blocks reachable from the entry through `taken` arcs, in layout order; an error for terminators slicing
/// does not model.
fn reachable_blocks(
    f: LLVMValueRef,
    taken: &dyn Fn(LLVMBasicBlockRef, usize) -> bool,
    exceptions: bool,
) -> Result<Vec<LLVMBasicBlockRef>, String> {
    let all = ir::blocks(f);
    let mut seen: HashSet<LLVMBasicBlockRef> = HashSet::new();
    let mut work = vec![all[0]];
    seen.insert(all[0]);
    while let Some(bb) = work.pop() {
        let t = ir::terminator(bb).ok_or("a block without terminator")?;
        match ir::opcode(t) {
            LLVMOpcode::LLVMRet | LLVMOpcode::LLVMUnreachable | LLVMOpcode::LLVMBr | LLVMOpcode::LLVMSwitch => {}
            LLVMOpcode::LLVMInvoke | LLVMOpcode::LLVMResume if exceptions => {}
            op => return Err(format!("cannot slice a function with a {op:?} terminator (C control flow only)")),
        }
        for (l, s) in ir::successors(t).into_iter().enumerate() {
            if taken(bb, l) && seen.insert(s) {
                work.push(s);
            }
        }
    }
    Ok(all.into_iter().filter(|b| seen.contains(b)).collect())
}

/// The alias analysis: non-escaping allocas and their locations.
struct AllocaLocations {
    loc: HashMap<LLVMValueRef, Loc>,
}

impl AllocaLocations {
    fn of(f: LLVMValueRef) -> AllocaLocations {
        let mut loc = HashMap::new();
        for bb in ir::blocks(f) {
            for i in ir::instructions(bb) {
                if ir::opcode(i) == LLVMOpcode::LLVMAlloca && !escapes(i) {
                    let n = loc.len() as u32 + FIRST_ALLOCA;
                    loc.insert(i, Loc(n));
                }
            }
        }
        AllocaLocations { loc }
    }

    /// The location `ptr` points into and whether it is the whole alloca itself; records the alloca `ptr` is
    /// based on (escaping or not) for `inst`.
    fn access(
        &self,
        ptr: LLVMValueRef,
        based: &mut HashMap<LLVMValueRef, LLVMValueRef>,
        inst: LLVMValueRef,
    ) -> (Loc, bool) {
        let mut p = ptr;
        loop {
            if unsafe { !LLVMIsAAllocaInst(p).is_null() } {
                based.insert(inst, p);
                return self.loc.get(&p).map_or((HEAP, false), |&l| (l, p == ptr));
            }
            if unsafe { LLVMIsAGetElementPtrInst(p).is_null() } {
                return (HEAP, false);
            }
            p = operand(p, 0);
        }
    }
}

/// Whether the alloca's address may reach anything but the pointer operand of loads, stores and memory
/// intrinsics (through `getelementptr`s): then other code may read or write it, and it joins HEAP.
fn escapes(alloca: LLVMValueRef) -> bool {
    let mut work = vec![alloca];
    while let Some(p) = work.pop() {
        let mut u = unsafe { LLVMGetFirstUse(p) };
        while !u.is_null() {
            let user = unsafe { LLVMGetUser(u) };
            u = unsafe { LLVMGetNextUse(u) };
            if unsafe { LLVMIsAInstruction(user).is_null() } {
                return true;
            }
            let fine = match ir::opcode(user) {
                LLVMOpcode::LLVMLoad => true,
                LLVMOpcode::LLVMStore => operand(user, 0) != p,
                LLVMOpcode::LLVMGetElementPtr if operand(user, 0) == p => {
                    work.push(user);
                    true
                }
                LLVMOpcode::LLVMCall if is_ignored(user) => true,
                LLVMOpcode::LLVMCall if mem_intrinsic(user).is_some() => {
                    (0..unsafe { LLVMGetNumArgOperands(user) }).all(|k| k < 2 || operand(user, k) != p)
                }
                _ => false,
            };
            if !fine {
                return true;
            }
        }
    }
    false
}
