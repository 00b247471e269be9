//! Fork re-entry checks: around every call that may be in flight when the program calls `fork()`, compare the
//! runtime's fork generation before and after, and record a re-entry when it changed.
//!
//! A `fork()`ed child starts with zeroed counters (the parent reports what ran before the fork) and moves the
//! generation `__pathprof_fork_gen` on, in its `pthread_atfork` child handler; nothing else changes it. So after a
//! call returns (normally, or into a landing pad), a changed generation means: the call was in flight at a fork
//! and this process is a child resuming the activation, which it never entered. The cold branch then calls
//! `__pathprof_fork_reentry(desc, function word, key)` once; calls made later read the new generation. The reader
//! turns each re-entry into a virtual edge EXIT→B (`pathprof_core::reentry`), which keeps every count exact.
//!
//! Which calls: those of [`crate::cfg_build::FunctionGraph::abnormal_calls`] — every call LLVM does not know to be
//! `nounwind willreturn` (or that the module's inference proves safe); a call that can reach `fork` is never
//! `willreturn`, as `fork` is not — that may *fork and return*, i.e. except:
//! - `returns_twice` calls (`setjmp`: its block's re-entries by `longjmp` are a separate case; `vfork` changes no
//!   generation) and `noreturn` calls (nothing of the caller runs after them, in any process);
//! - calls of intrinsics and inline assembly (a raw `fork` system call runs no fork handlers: see the README);
//! - calls of the C library functions in [`FORK_FREE_LIBRARY`], which neither fork nor call back into the
//!   program (memory, string, conversion, character-class, math and time functions; not stdio, whose cookie
//!   streams run program code, nor `qsort`/`bsearch`);
//! - calls of the module's *fork-free* functions: defined here with a final definition (not interposable),
//!   and calling only what is excepted here (an optimistic fixpoint: recursion stays fork-free). Most of an
//!   interpreter's or a library's internal calls may `longjmp` or `exit` but never fork.
//!
//! This relies on the program's `malloc` & co. not forking when they are replaced at link or load time.
//!
//! The key is what the block counted on arrival (the truncated path number: path, context and piecewise modes) or
//! the block itself (edge mode, and interprocedural call blocks, whose callee counts the path).
//!
//! Cost per checked call: a load before it (kept across the call, in a callee-saved register or a stack slot) and
//! a compare with memory and a branch after it, weighted unlikely; the cold block calls the runtime. The loads
//! are plain loads: the generation is written only in a child's `pthread_atfork` handler, while the child has
//! one thread.

use crate::cfg_build::FunctionGraph;
use crate::ir;
use crate::shim;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::{LLVMIntPredicate, LLVMOpcode};
use pathprof_format::layout::reentry_packed;
use pathprof_format::symbols;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::CString;

/// What a re-entry records: the block's arrival key (a truncated path number) or the block.
#[derive(Copy, Clone, Debug)]
pub enum Key {
    /// A number known at compile time (a block, or a constant path number).
    Const(u64),
    /// A path number computed at run time, available (dominating) at the call.
    Value(LLVMValueRef),
}

/// One call to check.
#[derive(Copy, Clone, Debug)]
pub struct Guard {
    /// The `call` or `invoke`.
    pub call: LLVMValueRef,
    /// The function and kind, `pathprof_format::layout::reentry_packed`.
    pub word: u64,
    /// What to record.
    pub key: Key,
}

impl Guard {
    /// A re-entry of the truncated path `key` of function `function`.
    pub fn path(call: LLVMValueRef, function: u64, key: Key) -> Guard {
        Guard { call, word: reentry_packed(function, false), key }
    }

    /// A re-entry of block `block` of function `function`.
    pub fn block(call: LLVMValueRef, function: u64, block: u32) -> Guard {
        Guard { call, word: reentry_packed(function, true), key: Key::Const(u64::from(block)) }
    }
}

/// How a call relates to forking (see [`ForkChecks::call_may_fork`]).
enum CallKind {
    /// It cannot be in flight at a fork and then return.
    Never,
    /// It may.
    Maybe,
    /// A direct call of this function defined in the module: it may iff the function is not fork-free.
    Defined(LLVMValueRef),
}

/// A guarded invoke into a landing pad: its block, the generation before it, the word and the key.
type Unwinding = (LLVMBasicBlockRef, LLVMValueRef, u64, Key);

/// The module's generation variable, runtime function and descriptor.
pub struct ForkChecks {
    b: LLVMBuilderRef,
    i64t: LLVMTypeRef,
    gen: LLVMValueRef,
    /// The module's thunk `void (i64 packed, i64 key)` that calls the runtime with the descriptor.
    record: LLVMValueRef,
    /// TBAA access tag of the generation: a type of its own under clang's "omnipotent char", so stores of
    /// other types do not clobber it.
    tbaa: LLVMValueRef,
    noreturn: u32,
    /// The module's functions whose calls can neither fork nor return from a fork (see the module docs).
    fork_free: HashSet<LLVMValueRef>,
}

/// C library functions that never call `fork` and never call back into the program: a call of one cannot be in
/// flight at a fork. (Allocation functions are included on the assumption that a replacement `malloc` does not
/// fork either.)
pub const FORK_FREE_LIBRARY: &[&str] = &[
    // memory and strings
    "memcpy",
    "memmove",
    "memset",
    "memcmp",
    "memchr",
    "memrchr",
    "bcmp",
    "strlen",
    "strnlen",
    "strcmp",
    "strncmp",
    "strcasecmp",
    "strncasecmp",
    "strcpy",
    "stpcpy",
    "strncpy",
    "strcat",
    "strncat",
    "strchr",
    "strrchr",
    "strstr",
    "strspn",
    "strcspn",
    "strpbrk",
    "strcoll",
    "strxfrm",
    "strdup",
    "strndup",
    "strerror",
    // conversions
    "strtol",
    "strtoul",
    "strtoll",
    "strtoull",
    "strtod",
    "strtof",
    "strtold",
    "atoi",
    "atol",
    "atoll",
    "atof",
    "abs",
    "labs",
    "llabs",
    // allocation
    "malloc",
    "calloc",
    "realloc",
    "free",
    "aligned_alloc",
    "posix_memalign",
    "memalign",
    "reallocarray",
    // character classes
    "isalnum",
    "isalpha",
    "isdigit",
    "isspace",
    "isupper",
    "islower",
    "isxdigit",
    "ispunct",
    "iscntrl",
    "isgraph",
    "isprint",
    "tolower",
    "toupper",
    "__ctype_b_loc",
    "__ctype_tolower_loc",
    "__ctype_toupper_loc",
    "__errno_location",
    // math
    "floor",
    "ceil",
    "round",
    "trunc",
    "fmod",
    "pow",
    "sqrt",
    "exp",
    "exp2",
    "log",
    "log2",
    "log10",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "sinh",
    "cosh",
    "tanh",
    "frexp",
    "ldexp",
    "modf",
    "fabs",
    "fmin",
    "fmax",
    "hypot",
    "cbrt",
    "floorf",
    "ceilf",
    "fmodf",
    "powf",
    "sqrtf",
    "expf",
    "logf",
    "sinf",
    "cosf",
    // time and locale
    "time",
    "clock",
    "clock_gettime",
    "gettimeofday",
    "difftime",
    "localeconv",
];

impl ForkChecks {
    /// Declares `__pathprof_fork_gen` and `__pathprof_fork_reentry` in `m`; `desc` is the module's descriptor.
    pub fn new(m: LLVMModuleRef, desc: LLVMValueRef) -> ForkChecks {
        unsafe {
            let ctx = LLVMGetModuleContext(m);
            let i64t = LLVMInt64TypeInContext(ctx);
            let ptrt = LLVMPointerTypeInContext(ctx, 0);
            let gen_name = CString::new(symbols::FORK_GEN).expect("no NUL");
            let mut gen = LLVMGetNamedGlobal(m, gen_name.as_ptr());
            if gen.is_null() {
                gen = LLVMAddGlobal(m, i64t, gen_name.as_ptr());
                LLVMSetAlignment(gen, 8);
                // An executable links its own runtime copy (or gets a copy relocation): address the variable
                // directly instead of through the GOT, which costs a register or a load around every call.
                if builds_executable(m) {
                    shim::pathprof_shim_set_dso_local(gen);
                }
            }
            let attrs = |f: LLVMValueRef| {
                for a in ["cold", "nounwind", "noinline"] {
                    LLVMAddAttributeAtIndex(f, u32::MAX, LLVMCreateEnumAttribute(ctx, ir::attr_kind(a), 0));
                }
            };
            let fn_name = CString::new(symbols::FORK_REENTRY).expect("no NUL");
            let mut runtime = LLVMGetNamedFunction(m, fn_name.as_ptr());
            if runtime.is_null() {
                let mut params = [ptrt, i64t, i64t];
                let fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), params.as_mut_ptr(), 3, 0);
                runtime = LLVMAddFunction(m, fn_name.as_ptr(), fty);
                attrs(runtime);
            }
            // The cold path calls a module-local thunk that passes the descriptor: otherwise LLVM keeps the
            // descriptor's address in a register across loops that hold checks.
            let mut params = [i64t, i64t];
            let fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), params.as_mut_ptr(), 2, 0);
            let record_name = CString::new(symbols::FORK_REENTRY_HERE).expect("no NUL");
            let record = LLVMAddFunction(m, record_name.as_ptr(), fty);
            LLVMSetLinkage(record, inkwell::llvm_sys::LLVMLinkage::LLVMInternalLinkage);
            crate::ir::place_apart(m, record);
            attrs(record);
            let b = LLVMCreateBuilderInContext(ctx);
            LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, record, c"entry".as_ptr()));
            let mut args = [desc, LLVMGetParam(record, 0), LLVMGetParam(record, 1)];
            LLVMBuildCall2(b, LLVMGlobalGetValueType(runtime), runtime, args.as_mut_ptr(), 3, c"".as_ptr());
            LLVMBuildRetVoid(b);
            LLVMDisposeBuilder(b);
            let md = |ops: &mut [LLVMMetadataRef]| LLVMMDNodeInContext2(ctx, ops.as_mut_ptr(), ops.len());
            let s = |t: &str| LLVMMDStringInContext2(ctx, t.as_ptr() as *const _, t.len());
            let zero = LLVMValueAsMetadata(LLVMConstInt(i64t, 0, 0));
            let root = md(&mut [s("Simple C/C++ TBAA")]);
            let chr = md(&mut [s("omnipotent char"), root, zero]);
            let ty = md(&mut [s("pathprof fork generation"), chr, zero]);
            let tbaa = LLVMMetadataAsValue(ctx, md(&mut [ty, ty, zero]));
            ForkChecks {
                tbaa,
                b: LLVMCreateBuilderInContext(ctx),
                i64t,
                gen,
                record,
                noreturn: ir::attr_kind("noreturn"),
                fork_free: HashSet::new(),
            }
        }
        .with_fork_free_functions(m)
    }

    /// Computes [`ForkChecks::fork_free`]: every function with a final definition is fork-free unless it has a
    /// call that may fork and return on its own (see [`ForkChecks::call_may_fork`]) or calls a module function
    /// that is not fork-free — the greatest such set, found by propagating "may fork" backwards along direct
    /// calls from the functions that fork on their own (linear in the calls).
    fn with_fork_free_functions(mut self, m: LLVMModuleRef) -> ForkChecks {
        let defined: Vec<LLVMValueRef> =
            ir::functions(m).into_iter().filter(|&f| !ir::is_declaration(f) && ir::definition_is_final(f)).collect();
        let candidates: HashSet<LLVMValueRef> = defined.iter().copied().collect();
        let mut callers: HashMap<LLVMValueRef, Vec<LLVMValueRef>> = HashMap::new();
        let mut forking: Vec<LLVMValueRef> = Vec::new();
        for &f in &defined {
            let mut forks = false;
            for i in ir::blocks(f).into_iter().flat_map(ir::instructions) {
                if !matches!(ir::opcode(i), LLVMOpcode::LLVMCall | LLVMOpcode::LLVMInvoke | LLVMOpcode::LLVMCallBr) {
                    continue;
                }
                match self.call_may_fork(i) {
                    CallKind::Never => {}
                    CallKind::Maybe => forks = true,
                    CallKind::Defined(g) if candidates.contains(&g) => callers.entry(g).or_default().push(f),
                    CallKind::Defined(_) => forks = true,
                }
            }
            if forks {
                forking.push(f);
            }
        }
        self.fork_free = candidates;
        while let Some(f) = forking.pop() {
            if self.fork_free.remove(&f) {
                forking.extend(callers.get(&f).into_iter().flatten().copied());
            }
        }
        self
    }

    /// What a call means for forking, before the module's fork-free functions are known.
    fn call_may_fork(&self, call: LLVMValueRef) -> CallKind {
        if ir::calls_inline_asm(call) {
            return CallKind::Never;
        }
        let callee = ir::called_function(call);
        let has = |kind| ir::call_has_attr(call, kind) || callee.is_some_and(|f| ir::fn_has_attr(f, kind));
        if ir::returns_twice(call) || has(self.noreturn) || callee.is_some_and(ir::is_builtin_longjmp) {
            return CallKind::Never;
        }
        match callee {
            None => CallKind::Maybe,
            Some(f) if ir::intrinsic_id(f) != 0 && !ir::intrinsic_runs_program_code(f) => CallKind::Never,
            Some(f) if ir::is_declaration(f) => {
                if FORK_FREE_LIBRARY.contains(&ir::name(f).as_str()) {
                    CallKind::Never
                } else {
                    CallKind::Maybe
                }
            }
            Some(f) => CallKind::Defined(f),
        }
    }

    /// Whether a call needs a check: whether it may be in flight at a fork and then return (see the module docs).
    pub fn wants(&self, call: LLVMValueRef) -> bool {
        match self.call_may_fork(call) {
            CallKind::Never => false,
            CallKind::Maybe => true,
            CallKind::Defined(f) => !self.fork_free.contains(&f),
        }
    }

    /// The calls of `g` that get a check, with their blocks: every call that may not return
    /// ([`FunctionGraph::abnormal_calls`]) and [`ForkChecks::wants`] one, in a block that is not left by
    /// `unreachable` (a call there cannot come back). Every mode guards these; the key is the mode's.
    pub fn guarded_calls<'g>(&'g self, g: &'g FunctionGraph) -> impl Iterator<Item = (u32, LLVMValueRef)> + 'g {
        g.abnormal_calls.iter().enumerate().flat_map(move |(b, calls)| {
            let dead_end = ir::terminator(g.blocks[b]).is_some_and(|t| ir::opcode(t) == LLVMOpcode::LLVMUnreachable);
            calls.iter().copied().filter(move |&c| !dead_end && self.wants(c)).map(move |c| (b as u32, c))
        })
    }

    fn load_gen(&self, before: LLVMValueRef) -> LLVMValueRef {
        unsafe {
            LLVMPositionBuilderBefore(self.b, before);
            // A plain load: the generation is only ever written in a fork()ed child's child handler, while the
            // child has one thread, so no load races with the write; and a call that may fork may write memory,
            // so LLVM cannot merge the loads around it. (The backend folds the second into the compare.)
            let v = LLVMBuildLoad2(self.b, self.i64t, self.gen, c"pathprof.forkgen".as_ptr());
            LLVMSetAlignment(v, 8);
            LLVMSetMetadata(v, LLVMGetMDKindIDInContext(LLVMGetTypeContext(self.i64t), c"tbaa".as_ptr(), 4), self.tbaa);
            v
        }
    }

    fn key_value(&self, k: Key) -> LLVMValueRef {
        match k {
            Key::Const(c) => unsafe { LLVMConstInt(self.i64t, c, 0) },
            Key::Value(v) => v,
        }
    }

    /// After `before`'s position: if the generation differs from `before_gen`, record `word`/`key`.
    fn check(&self, at: LLVMValueRef, before_gen: LLVMValueRef, word: LLVMValueRef, key: LLVMValueRef) {
        unsafe {
            let now = self.load_gen(at);
            let changed =
                LLVMBuildICmp(self.b, LLVMIntPredicate::LLVMIntNE, before_gen, now, c"pathprof.forked".as_ptr());
            let then = shim::pathprof_shim_if_then_cold(changed, at);
            LLVMPositionBuilderBefore(self.b, then);
            let mut args = [word, key];
            let fty = LLVMGlobalGetValueType(self.record);
            LLVMBuildCall2(self.b, fty, self.record, args.as_mut_ptr(), 2, c"".as_ptr());
        }
    }

    /// Emits the checks of one function's `guards` (after all its other instrumentation: the checks split blocks).
    pub fn emit(&self, guards: &[Guard]) {
        // Landing pads: per pad, each guarded invoke that unwinds to it.
        let mut pads: BTreeMap<usize, (LLVMBasicBlockRef, Vec<Unwinding>)> = BTreeMap::new();
        for g in guards {
            let before = self.load_gen(g.call);
            let word = unsafe { LLVMConstInt(self.i64t, g.word, 0) };
            let key = self.key_value(g.key);
            if ir::opcode(g.call) == LLVMOpcode::LLVMInvoke {
                unsafe {
                    let normal = LLVMGetNormalDest(g.call);
                    let single_pred = predecessors(normal).len() == 1;
                    let bb = if single_pred { normal } else { shim::pathprof_shim_split_edge(g.call, 0) };
                    assert!(!bb.is_null(), "LLVM refused to split an invoke's normal edge");
                    let at = ir::first_insertion_point(bb).expect("a block has a terminator");
                    self.check(at, before, word, key);
                    let pad = LLVMGetUnwindDest(g.call);
                    let from = LLVMGetInstructionParent(g.call);
                    pads.entry(pad as usize).or_insert((pad, Vec::new())).1.push((from, before, g.word, g.key));
                }
            } else {
                let next = unsafe { LLVMGetNextInstruction(g.call) };
                assert!(!next.is_null(), "a call is not a terminator");
                self.check(next, before, word, key);
            }
        }
        for (_, (pad, guarded)) in pads {
            self.check_pad(pad, &guarded);
        }
    }

    /// A landing pad reached from guarded invokes: PHIs pick the generation, word and key of the invoke that
    /// unwound; other invokes into the pad (none can be in flight at a fork) pass a word that names nothing,
    /// which the runtime ignores.
    fn check_pad(&self, pad: LLVMBasicBlockRef, guarded: &[Unwinding]) {
        unsafe {
            let preds = predecessors(pad);
            let mut incoming: Vec<(LLVMBasicBlockRef, LLVMValueRef, LLVMValueRef, LLVMValueRef)> = Vec::new();
            for p in preds {
                let (gen, word, key) = match guarded.iter().find(|g| g.0 == p) {
                    Some(&(_, gen, word, key)) => (gen, LLVMConstInt(self.i64t, word, 0), self.key_value(key)),
                    None => {
                        let term = ir::terminator(p).expect("a block has a terminator");
                        (self.load_gen(term), LLVMConstInt(self.i64t, u64::MAX, 0), LLVMConstInt(self.i64t, 0, 0))
                    }
                };
                incoming.push((p, gen, word, key));
            }
            LLVMPositionBuilderBeforeInstrAndDbgRecords(self.b, LLVMGetFirstInstruction(pad));
            let phi = |name: &std::ffi::CStr, pick: fn(&(LLVMBasicBlockRef, LLVMValueRef, LLVMValueRef, LLVMValueRef)) -> LLVMValueRef| {
                let phi = LLVMBuildPhi(self.b, self.i64t, name.as_ptr());
                for i in &incoming {
                    let mut v = [pick(i)];
                    let mut bb = [i.0];
                    LLVMAddIncoming(phi, v.as_mut_ptr(), bb.as_mut_ptr(), 1);
                }
                phi
            };
            let gen = phi(c"pathprof.forkgen.pad", |i| i.1);
            let word = phi(c"pathprof.forkword.pad", |i| i.2);
            let key = phi(c"pathprof.forkkey.pad", |i| i.3);
            let at = ir::first_insertion_point(pad).expect("a block has a terminator");
            self.check(at, gen, word, key);
        }
    }
}

impl Drop for ForkChecks {
    fn drop(&mut self) {
        unsafe { LLVMDisposeBuilder(self.b) }
    }
}

/// Whether `m` is compiled for an executable: position-dependent, or `-fPIE` (LLVM's "PIE Level" module flag);
/// a shared object's code (`-fPIC` without PIE) reaches the runtime through the GOT.
fn builds_executable(m: LLVMModuleRef) -> bool {
    let flag = |name: &str| unsafe { !LLVMGetModuleFlag(m, name.as_ptr() as *const _, name.len()).is_null() };
    flag("PIE Level") || !flag("PIC Level")
}

/// The blocks whose terminator has `bb` as a successor (each once), from the block's uses.
fn predecessors(bb: LLVMBasicBlockRef) -> Vec<LLVMBasicBlockRef> {
    let mut out = Vec::new();
    unsafe {
        let mut u = LLVMGetFirstUse(LLVMBasicBlockAsValue(bb));
        while !u.is_null() {
            let user = LLVMGetUser(u);
            if !LLVMIsAInstruction(user).is_null() && !LLVMIsATerminatorInst(user).is_null() {
                let p = LLVMGetInstructionParent(user);
                if !out.contains(&p) {
                    out.push(p);
                }
            }
            u = LLVMGetNextUse(u);
        }
    }
    out
}
