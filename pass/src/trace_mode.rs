//! Mode `trace`: bit tracing (Ball & Larus, TOPLAS'94 §6.2) of every function of one module, with the call
//! markers of `pathprof_core::tracing::regenerate`'s model, so that the runtime's per-thread bit stream
//! regenerates into the exact block sequence.
//!
//! What each function gets (the plan is `pathprof_format::trace::function_tables`, shared with the reader):
//! - at its entry, [`symbols::TRACE_ENTER`]: `Enter(f)` = a 1 bit and the function's
//!   [`FUNC_ID_BITS`]-bit trace id (the module's base, assigned by the runtime at registration, + its index);
//!   a direct call site of a traced function of the module announces its callee (`TLS_CALLEE`), whose entry
//!   there is a single 1 bit (`pathprof_core::tracing::regenerate`, "Direct calls"; the sites travel in
//!   [`TraceModuleMeta::direct`]);
//! - before every call site the call-site state, after it [`symbols::TRACE_DONE`]: `Done` = a 0 bit (so after a
//!   block with k call sites come k groups "activations of traced callees, then Done"); at a direct call site
//!   [`symbols::TRACE_DONE_DIRECT`] writes nothing when the announced callee began there and returned (a callee
//!   without landing pads flags the state it restores: `pathprof_core::tracing::regenerate`, "Direct calls");
//! - a direct call of a straight-line leaf of the module (no decision, no call site: its entry determines its
//!   path) is *implicit*: it calls a copy of the leaf made before instrumentation and writes no marker at all;
//!   the reader walks the leaf there (`pathprof_core::tracing::regenerate`, "Implicit calls"; the sites travel in
//!   [`TraceModuleMeta::implicit`]). The copy is internal and marker-free, so the optimiser inlines it as in a
//!   build without tracing, and drops the instrumented original when only calls from outside could reach it;
//! - a direct call of any other traced function of the module that the call is sure to run (local, or a strong
//!   definition bound within its image: [`certain_sites`]) is implicit too, a *certain* call: the site announces
//!   its callee with [`CALLEE_CERTAIN`] and its state carries [`STATE_CERTAIN`]; the callee's entry then
//!   writes no marker (any other entry at such a site is abnormal), and the site's return
//!   ([`symbols::TRACE_DONE_CERTAIN`]) writes no Done;
//! - before the terminator of every predicate (≥ 2 traced out-edges), the taken out-edge's position among them
//!   in ⌈log2 N⌉ bits — for an `indirectbr` (computed goto) first thing in the target instead
//!   ([`Emitter::indirect_decisions`]); before every `ret`, the state the entry found (the caller's call site,
//!   restored).
//!
//! The thread state (`trace_layout`) makes abnormal transfers visible: an entry that finds the thread in a
//! function body (a signal handler) or a call site that returns to a state that is not its own (`longjmp`, an
//! exception) tells the runtime, which records where the trace stops being regenerable — unless the state is a
//! deeper activation's: untraced code the site called caught an exception or `longjmp` that left traced
//! activations, and the site writes an abandon marker with its depth instead (`ABANDON_ID`).
//!
//! Exceptions: an `invoke` is its block's last call site. Its Done goes on its normal edge (split when
//! critical, else at the start of the normal successor), so the `invoke` block is no predicate; every landing
//! pad starts with the unwind marker ([`symbols::TRACE_UNWIND`]: the reserved id [`UNWIND_ID`], the function's
//! id and its activation depth) and puts the thread state back to the activation's body — frames the
//! exception passed through leave no trace of their own, and `resume` restores the caller's call-site state as
//! `ret` does. Functions with `musttail` calls or `callbr` (and `indirectbr` in mode icache) are left
//! uninstrumented (a warning): their markers could not be placed yet. Their activations are then calls into
//! untraced code.
//!
//! Code layout: the helpers above are `alwaysinline` and hold each site's common path only (a call site's state
//! check and Done; an entry's state check, announced `1` or nothing, and shadow-stack slot; a decision's bits).
//! Every rarer path is one internal `noinline` function per module — the abandon, unwind and resync markers
//! ([`symbols::TRACE_DONE_MOVED`], [`symbols::TRACE_UNWIND`], [`symbols::TRACE_RESYNC_AGAIN`]), an entry with a
//! function id ([`symbols::TRACE_ENTER_SLOW`]) and a full word's spill ([`symbols::TRACE_PUT_FULL`], which hands
//! the new bits back for the caller to store, so loops keep them in registers). Inlined at every site they
//! multiplied a C++ file's code and compile time (README, "Tracing"). The entry's code goes after the entry
//! block's static allocas ([`ir::entry_insertion_point`]), and calls from `available_externally` bodies to
//! traced functions stay calls ([`keep_calls_from_external_copies`]).
//!
//! With `PATHPROF_TRACE_NAIVE=1` (`Config::trace_naive`) the module writes the second method instead: at the
//! start of every block one 64-bit item (the block, and the function's trace id above it), no decisions and no
//! markers (`trace_layout`, "Naive tracing"); the thread state is kept as in bit tracing.

use crate::cfg_build::{self, CallFacts, FunctionGraph};
use crate::config::Config;
use crate::globals::{append_to_global_list, function_once, internal_void_function, metadata_blob, runtime_function};
use crate::identity::ModuleIdentity;
use crate::ir;
use crate::module_emitter::{function_meta, LeftOut};
use crate::names::INSTRUMENTED_MARK;
use inkwell::llvm_sys::comdat::{LLVMGetOrInsertComdat, LLVMSetComdat};
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::{
    LLVMAtomicOrdering, LLVMIntPredicate, LLVMLinkage, LLVMOpcode, LLVMThreadLocalMode, LLVMVisibility,
};
use pathprof_core::tracing::{FuncTables, WitnessPlan};
use pathprof_core::{BlockId, EdgeKind};
use pathprof_format::meta::{Mode, ModuleMeta};
use pathprof_format::symbols;
use pathprof_format::trace::{function_tables, TraceModuleMeta};
use pathprof_format::trace_layout::{
    ABANDON_ID, CALLEE_CERTAIN, DESC_NAIVE, ENTRY_CACHE_BITS, ENTRY_CACHE_SLOTS, FUNC_ID_BITS, RESYNC_ID,
    SHADOW_ENTRIES, STATE_CERTAIN, TLS_ACC, TLS_CACHE, TLS_CALLEE, TLS_NACC, TLS_SHADOW, TLS_STATE, TLS_WORDS,
    TRACE_VERSION, UNWIND_ID,
};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// One function ready for instrumentation.
struct Planned {
    f: LLVMValueRef,
    graph: FunctionGraph,
    plan: WitnessPlan,
    tables: FuncTables,
    /// Per block, the call instructions that are call sites (in order).
    calls: Vec<Vec<LLVMValueRef>>,
    /// Per block and call site: a `returns_twice` call (`setjmp`), whose second return writes a resync marker.
    twice: Vec<Vec<bool>>,
    /// Blocks that end in an `invoke` (their last call site).
    invokes: Vec<u32>,
}

/// Whether `inst` is a call site: a call or `invoke` that may run traced code (not an intrinsic, not inline
/// asm).
fn is_call_site(inst: LLVMValueRef) -> bool {
    matches!(ir::opcode(inst), LLVMOpcode::LLVMCall | LLVMOpcode::LLVMInvoke)
        && !ir::calls_inline_asm(inst)
        && ir::called_function(inst).is_none_or(|f| ir::intrinsic_id(f) == 0)
}

/// Plans one function (no IR changes).
fn plan(f: LLVMValueRef, facts: &CallFacts, icache: bool) -> Result<Planned, String> {
    let graph = cfg_build::build(f, facts).map_err(|u| u.0)?;
    let mut calls = Vec::with_capacity(graph.blocks.len());
    let mut twice = Vec::with_capacity(graph.blocks.len());
    let mut invokes = Vec::new();
    for (bi, &bb) in graph.blocks.iter().enumerate() {
        let mut here = Vec::new();
        let mut here_twice = Vec::new();
        for inst in ir::instructions(bb) {
            match ir::opcode(inst) {
                LLVMOpcode::LLVMInvoke if !is_call_site(inst) => {
                    return Err("an `invoke` of an intrinsic or inline asm is not traced yet".into())
                }
                LLVMOpcode::LLVMCatchSwitch | LLVMOpcode::LLVMCatchPad | LLVMOpcode::LLVMCleanupPad => {
                    return Err("funclet-based exception handling is not traced".into())
                }
                LLVMOpcode::LLVMInvoke => {
                    invokes.push(bi as u32);
                    here.push(inst);
                    here_twice.push(facts.returns_twice(inst));
                }
                // Mode icache maps traced blocks onto machine blocks, which it cannot do across an indirect
                // jump yet.
                LLVMOpcode::LLVMIndirectBr if icache => {
                    return Err("`indirectbr` is not simulated yet (mode icache)".into())
                }
                LLVMOpcode::LLVMCall if ir::is_musttail(inst) => {
                    return Err("`musttail` calls are not traced yet".into())
                }
                _ if is_call_site(inst) => {
                    here.push(inst);
                    here_twice.push(facts.returns_twice(inst));
                }
                _ => {}
            }
        }
        calls.push(here);
        twice.push(here_twice);
    }
    let counts: Vec<u32> = calls.iter().map(|c| c.len() as u32).collect();
    let (plan, tables) = function_tables(&graph.cfg, &counts, &invokes)?;
    Ok(Planned { f, graph, plan, tables, calls, twice, invokes })
}

/// Instruments `candidates` of `m` for tracing; returns whether the module changed.
pub fn instrument(
    m: LLVMModuleRef,
    candidates: &[LLVMValueRef],
    config: &Config,
    identity: ModuleIdentity,
) -> Result<bool, String> {
    if config.optimizer_last {
        // Mode icache: the traced blocks must be the machine blocks' (see `branch_split`).
        for &f in candidates {
            crate::branch_split::split_merged_conditions(f);
        }
    }
    let facts = CallFacts::new(m);
    let mut planned = Vec::new();
    let mut left_out = LeftOut::default();
    for &f in candidates {
        match catch_unwind(AssertUnwindSafe(|| plan(f, &facts, config.optimizer_last))) {
            Ok(Ok(p)) => planned.push(p),
            Ok(Err(why)) => left_out.record(&identity.name, f, &why),
            Err(_) => left_out.record_internal_error(&identity.name, f),
        }
    }
    if planned.is_empty() && left_out.is_empty() {
        return Ok(false);
    }
    if planned.len() as u64 >= u64::from(ABANDON_ID) {
        return Err(format!("{} functions: more than trace ids ({ABANDON_ID})", planned.len()));
    }
    let functions = planned.iter().map(|p| function_meta(p.f, &ir::name(p.f), &p.graph)).collect::<Vec<_>>();
    let direct = direct_callees(&planned, config.trace_naive);
    let implicit = implicit_sites(&planned, &direct, config);
    let certain = certain_sites(&planned, &direct, &implicit);
    let meta = TraceModuleMeta {
        module: ModuleMeta {
            module_name: identity.name.clone(),
            output: identity.output.clone(),
            mode: Mode::Trace,
            weighting: if config.trace_naive { "naive" } else { "bit-tracing" }.into(),
            atomic: false,
            functions,
            interproc: None,
            path_arrivals: false,
            fork_reentries: false,
            left_out: left_out.into_functions(),
        },
        calls: planned.iter().map(|p| p.calls.iter().map(|c| c.len() as u32).collect()).collect(),
        optimizer_last: config.optimizer_last,
        invokes: planned.iter().map(|p| p.invokes.clone()).collect(),
        kept_calls: kept_calls(&planned),
        direct: direct.iter().map(|f| site_list(f, |&g| g)).collect(),
        // For the reader both kinds of implicit call are one: no Enter, no Done, the callee runs there once.
        implicit: implicit
            .iter()
            .zip(&certain)
            .map(|(copies, certain)| {
                let mut sites: Vec<(u32, u32)> = [copies, certain]
                    .into_iter()
                    .flat_map(|f| site_list(f, |&on| on.then_some(())))
                    .map(|(b, k, ())| (b, k))
                    .collect();
                sites.sort_unstable();
                sites
            })
            .collect(),
    };
    // Before any instrumentation: the implicit sites call marker-free copies of their leaves.
    unsafe { call_leaf_copies(&planned, &direct, &implicit) };
    keep_calls_from_external_copies(m, &planned);
    let emitter = unsafe { Emitter::new(m, &meta, config.trace_naive) };
    let mut site = 0u64;
    let mut branches = 0usize;
    for (p, quiet) in planned.iter().zip(&implicit) {
        for (call, &q) in p.calls.iter().flatten().zip(quiet.iter().flatten()) {
            if !q {
                ir::withdraw_memory_promises(*call);
            }
        }
    }
    let resumes: Vec<bool> = planned.iter().map(|p| p.tables.may_resume()).collect();
    for (index, p) in planned.iter().enumerate() {
        let sites =
            Sites { direct: &direct[index], copy: &implicit[index], certain: &certain[index], resumes: &resumes };
        branches += unsafe { emitter.function(p, &sites, index as u64, &mut site) };
        ir::mark_instrumented(p.f, INSTRUMENTED_MARK);
    }
    ir::add_named_metadata(m, INSTRUMENTED_MARK);
    if config.stats {
        eprintln!(
            "pathprof: stats: module={} mode=trace functions={} call_sites={site} implicit_calls={} certain_calls={} predicates={branches}",
            identity.name,
            planned.len(),
            implicit.iter().flatten().flatten().filter(|&&q| q).count(),
            certain.iter().flatten().flatten().filter(|&&q| q).count()
        );
    }
    Ok(true)
}

/// Per planned function, block and call site: the index of the planned function it calls directly (its
/// entry is announced there, [`TraceModuleMeta::direct`]); none in naive tracing, which writes no markers.
fn direct_callees(planned: &[Planned], naive: bool) -> Vec<Vec<Vec<Option<u32>>>> {
    let index: std::collections::HashMap<LLVMValueRef, u32> =
        planned.iter().enumerate().map(|(i, p)| (p.f, i as u32)).collect();
    planned
        .iter()
        .map(|p| {
            p.calls
                .iter()
                .map(|calls| {
                    calls
                        .iter()
                        .map(|&call| {
                            if naive {
                                return None;
                            }
                            ir::called_function(call).and_then(|f| index.get(&f).copied())
                        })
                        .collect()
                })
                .collect()
        })
        .collect()
}

/// One function's call sites (per block, per call) as `(block, call index, what)`, for the sites `pick` keeps:
/// the metadata's lists of direct and implicit sites.
fn site_list<T, U>(sites: &[Vec<T>], pick: impl Fn(&T) -> Option<U>) -> Vec<(u32, u32, U)> {
    let pick = &pick;
    sites
        .iter()
        .enumerate()
        .flat_map(|(b, calls)| {
            calls.iter().enumerate().filter_map(move |(k, site)| pick(site).map(|u| (b as u32, k as u32, u)))
        })
        .collect()
}

/// Whether `p` is a straight-line leaf whose calls can be implicit (`pathprof_core::tracing::regenerate`,
/// "Implicit calls"): no call site and no decision (its tables are marker-free), every block with one way on,
/// reaching its return — and a definition every direct call of it may run a copy of, as LLVM's inliner would
/// (not interposable: no `weak` or non-ODR `linkonce` function a link may replace).
fn is_straight_leaf(p: &Planned) -> bool {
    let cfg = &p.graph.cfg;
    let adj = cfg.adjacency();
    let one_way = |v: BlockId| adj.out_edges(v).len() == 1;
    let mut v = cfg.entry();
    let mut steps = 0;
    while v != cfg.exit() && one_way(v) && steps <= cfg.num_blocks() {
        v = cfg.edge(adj.out_edges(v)[0]).to;
        steps += 1;
    }
    v == cfg.exit()
        && p.tables.is_marker_free()
        && cfg.vertices().filter(|&v| v != cfg.exit()).all(one_way)
        && unsafe { crate::shim::pathprof_shim_is_interposable(p.f) } == 0
        // A coroutine before splitting names itself in its intrinsics: a copy would not be one.
        && !ir::fn_has_attr(p.f, ir::attr_kind("presplitcoroutine"))
}

/// Per planned function, block and call site: whether the call is implicit — a direct call of a straight-line
/// leaf ([`is_straight_leaf`]) in bit tracing at the front end's blocks (not naive tracing, which is the second
/// method and writes every block; not mode icache, whose blocks must be the plain build's).
fn implicit_sites(planned: &[Planned], direct: &[Vec<Vec<Option<u32>>>], config: &Config) -> Vec<Vec<Vec<bool>>> {
    let on = !config.trace_naive && !config.optimizer_last;
    let leaves: Vec<bool> = planned.iter().map(|p| on && is_straight_leaf(p)).collect();
    // A `call` only: an `invoke` is its block's last call site, whose Done goes on its normal edge.
    let quiet = |call: LLVMValueRef, g: Option<u32>| {
        g.is_some_and(|g| leaves[g as usize]) && ir::opcode(call) == LLVMOpcode::LLVMCall
    };
    planned
        .iter()
        .zip(direct)
        .map(|(p, f)| {
            p.calls.iter().zip(f).map(|(calls, b)| calls.iter().zip(b).map(|(&c, &g)| quiet(c, g)).collect()).collect()
        })
        .collect()
}

/// Per planned function, block and call site: whether the call is *certain* — the other kind of implicit call
/// (`pathprof_core::tracing::regenerate`, "Implicit calls"): a direct call (or `invoke`) of a traced function of
/// the module that the call is sure to run once linked and loaded ([`ir::runs_own_definition`]: local, or a
/// strong definition bound within its image — not an inline or template function another module's copy may
/// replace, not one a shared library's caller may see interposed). The callee's entry writes no marker when the
/// site announces it as certain, and the site writes no Done. Not for the leaf copies' sites (implicit
/// already), `setjmp` calls (never direct) or naive tracing (no markers; `direct` is empty there), and not for
/// a callee with a `resume`: the reader takes its end as a return, after which a certain site is done, while
/// the exception goes on to a landing pad whose unwind marker the caller's site must read.
fn certain_sites(
    planned: &[Planned],
    direct: &[Vec<Vec<Option<u32>>>],
    copies: &[Vec<Vec<bool>>],
) -> Vec<Vec<Vec<bool>>> {
    let sure: Vec<bool> = planned.iter().map(|p| ir::runs_own_definition(p.f) && !resumes(p)).collect();
    planned
        .iter()
        .zip(direct.iter().zip(copies))
        .map(|(p, (fd, fc))| {
            (0..p.calls.len())
                .map(|b| {
                    (0..p.calls[b].len())
                        .map(|k| !fc[b][k] && !p.twice[b][k] && fd[b][k].is_some_and(|g| sure[g as usize]))
                        .collect()
                })
                .collect()
        })
        .collect()
}

/// Keeps traced functions out of the module's `available_externally` bodies (copies of functions another image
/// defines, such as libstdc++'s extern templates: `basic_ios::bad`, `basic_string`'s members). Inlined into
/// such a body, a traced callee runs traced only where the optimiser inlines that body into the module's code
/// as well; elsewhere the program calls the other image's definition, so whether its activations show up would
/// turn on inlining decisions that the tracing code itself sways (trace and edge mode of one run disagreed on
/// `std::operator&` in `basic_ios::bad` when tracing code became small enough to inline). A call there stays
/// a call.
fn keep_calls_from_external_copies(m: LLVMModuleRef, planned: &[Planned]) {
    let traced: std::collections::HashSet<LLVMValueRef> = planned.iter().map(|p| p.f).collect();
    let external_copies = ir::functions(m)
        .into_iter()
        .filter(|&f| unsafe { LLVMGetLinkage(f) } == LLVMLinkage::LLVMAvailableExternallyLinkage);
    for f in external_copies {
        for call in ir::blocks(f).into_iter().flat_map(ir::instructions) {
            let is_call = matches!(ir::opcode(call), LLVMOpcode::LLVMCall | LLVMOpcode::LLVMInvoke);
            if is_call && ir::called_function(call).is_some_and(|g| traced.contains(&g)) {
                ir::add_call_attr(call, "noinline");
            }
        }
    }
}

/// Whether `p` ends activations with `resume` (a cleanup that lets an exception go on).
fn resumes(p: &Planned) -> bool {
    p.graph.blocks.iter().any(|&bb| ir::terminator(bb).is_some_and(|t| ir::opcode(t) == LLVMOpcode::LLVMResume))
}

/// One function's call sites as the emitter needs them.
struct Sites<'a> {
    /// Per block and call: the planned function called directly (announced there).
    direct: &'a [Vec<Option<u32>>],
    /// Per block and call: an implicit call of a leaf's copy (no markers at all).
    copy: &'a [Vec<bool>],
    /// Per block and call: a certain call (announced as such; no Enter, no Done).
    certain: &'a [Vec<bool>],
    /// Per planned function: whether it may resume, so that its return never ends a direct call site (its
    /// saved state is not flagged, `enter`'s `binds`): the site's return is a plain `done`, without the test for
    /// a flagged state.
    resumes: &'a [bool],
}

impl Sites<'_> {
    /// Whether call `k` of block `b` calls a traced function directly whose announced entry there binds the site
    /// (it cannot resume): only then may the site find its state flagged on return (`done_direct`).
    fn binding_callee(&self, b: usize, k: usize) -> bool {
        self.direct[b][k].is_some_and(|g| !self.resumes[g as usize])
    }
}

/// Points every implicit call at a copy of its leaf made before instrumentation (internal, so the optimiser may
/// inline it and drop the instrumented original when nothing else calls it).
unsafe fn call_leaf_copies(planned: &[Planned], direct: &[Vec<Vec<Option<u32>>>], implicit: &[Vec<Vec<bool>>]) {
    let mut copies: std::collections::HashMap<u32, LLVMValueRef> = std::collections::HashMap::new();
    for (fi, p) in planned.iter().enumerate() {
        for (bi, calls) in p.calls.iter().enumerate() {
            for (ci, &call) in calls.iter().enumerate() {
                let (true, Some(g)) = (implicit[fi][bi][ci], direct[fi][bi][ci]) else { continue };
                let copy = *copies.entry(g).or_insert_with(|| {
                    let leaf = planned[g as usize].f;
                    let name = std::ffi::CString::new(format!("{}.pathprof.leaf", ir::name(leaf))).unwrap_or_default();
                    crate::shim::pathprof_shim_clone_function(leaf, name.as_ptr())
                });
                LLVMSetOperand(call, (LLVMGetNumOperands(call) - 1) as u32, copy);
            }
        }
    }
}

/// The functions whose calls from traced code lose a `const`/`pure` promise (sorted, once each): see
/// [`TraceModuleMeta::kept_calls`]. An implicit call keeps its promise (its copy touches no trace state), so the
/// optimiser may merge or drop it, yet the reader walks the leaf at every execution of its call site: the trace
/// shows such a callee at every call the source makes, as it shows the kept calls, and it is listed too.
fn kept_calls(planned: &[Planned]) -> Vec<String> {
    let mut names: Vec<String> = planned
        .iter()
        .flat_map(|p| p.calls.iter().flatten())
        .filter(|&&call| ir::has_memory_promise(call))
        .filter_map(|&call| ir::called_function(call).map(ir::name))
        .collect();
    names.sort();
    names.dedup();
    names
}

fn cstr(s: &str) -> CString {
    CString::new(s).expect("internal names contain no NUL")
}

/// The module's trace globals and helpers.
struct Emitter {
    m: LLVMModuleRef,
    ctx: LLVMContextRef,
    i64t: LLVMTypeRef,
    put: LLVMValueRef,
    enter: LLVMValueRef,
    done: LLVMValueRef,
    /// done_direct(expect, d): a direct call site's return (no Done after its announced callee's return).
    done_direct: LLVMValueRef,
    /// done_certain(expect, d): a certain call site's return (no marker).
    done_certain: LLVMValueRef,
    /// resync(expect, d, id, block, call): a `setjmp` call's return.
    resync: LLVMValueRef,
    /// unwind(d, id): a landing pad's start.
    unwind: LLVMValueRef,
    tls: LLVMValueRef,
    builder: LLVMBuilderRef,
    /// The module descriptor (its `base` field is the module's first trace id) and its type.
    desc: LLVMValueRef,
    desc_ty: LLVMTypeRef,
    put_ty: LLVMTypeRef,
    /// Naive tracing: block items instead of decisions and markers.
    naive: bool,
}

impl Drop for Emitter {
    fn drop(&mut self) {
        unsafe { LLVMDisposeBuilder(self.builder) };
    }
}

/// Adds an internal `nounwind` function of type `fty` with function attributes `attrs`.
unsafe fn internal_function(m: LLVMModuleRef, name: &str, fty: LLVMTypeRef, attrs: &[&str]) -> LLVMValueRef {
    let ctx = LLVMGetModuleContext(m);
    let f = LLVMAddFunction(m, cstr(name).as_ptr(), fty);
    LLVMSetLinkage(f, LLVMLinkage::LLVMInternalLinkage);
    for attr in attrs.iter().chain(&["nounwind"]) {
        LLVMAddAttributeAtIndex(f, u32::MAX, LLVMCreateEnumAttribute(ctx, ir::attr_kind(attr), 0));
    }
    f
}

/// An `alwaysinline` helper: the common path every site or entry runs.
unsafe fn helper(m: LLVMModuleRef, name: &str, fty: LLVMTypeRef) -> LLVMValueRef {
    internal_function(m, name, fty, &["alwaysinline"])
}

/// A `noinline` helper: a path all sites share out of line, so that what each site or entry inlines stays small.
/// Inlined everywhere, the rare transfers' markers (abandon, unwind, resync) cost about 0.7 KB of code per call
/// site and 3.5 KB per `invoke`, and an entry's marker made an instrumented one-line function too big for the
/// inliner: LLVM's optimiser then took most of a trace build's compile time.
unsafe fn outlined(m: LLVMModuleRef, name: &str, fty: LLVMTypeRef) -> LLVMValueRef {
    internal_function(m, name, fty, &["noinline"])
}

/// [`outlined`], and `cold`: the slow path of a rare event (its callers' branches to it are laid out as unlikely).
unsafe fn cold_helper(m: LLVMModuleRef, name: &str, fty: LLVMTypeRef) -> LLVMValueRef {
    internal_function(m, name, fty, &["noinline", "cold"])
}

/// Declares a runtime function of type `fty` (cold: the slow paths).
unsafe fn runtime(m: LLVMModuleRef, name: &str, fty: LLVMTypeRef) -> LLVMValueRef {
    function_once(m, name, |c| {
        let ctx = LLVMGetModuleContext(m);
        let f = LLVMAddFunction(m, c.as_ptr(), fty);
        for attr in ["nounwind", "cold"] {
            LLVMAddAttributeAtIndex(f, u32::MAX, LLVMCreateEnumAttribute(ctx, ir::attr_kind(attr), 0));
        }
        f
    })
}

impl Emitter {
    /// Emits the thread state, the descriptor with the metadata, its constructor and destructor, and the
    /// helpers.
    unsafe fn new(m: LLVMModuleRef, meta: &TraceModuleMeta, naive: bool) -> Emitter {
        let ctx = LLVMGetModuleContext(m);
        let i32t = LLVMInt32TypeInContext(ctx);
        let i64t = LLVMInt64TypeInContext(ctx);
        let ptrt = LLVMPointerTypeInContext(ctx, 0);
        let voidt = LLVMVoidTypeInContext(ctx);
        let b = LLVMCreateBuilderInContext(ctx);

        // The thread state: one per image (hidden linkonce_odr), initial-exec TLS.
        let tls_ty = LLVMArrayType2(i64t, TLS_WORDS as u64);
        let name = cstr(symbols::TRACE_TLS);
        let mut tls = LLVMGetNamedGlobal(m, name.as_ptr());
        if tls.is_null() {
            tls = LLVMAddGlobal(m, tls_ty, name.as_ptr());
            LLVMSetInitializer(tls, LLVMConstNull(tls_ty));
            LLVMSetLinkage(tls, LLVMLinkage::LLVMLinkOnceODRLinkage);
            LLVMSetVisibility(tls, LLVMVisibility::LLVMHiddenVisibility);
            LLVMSetThreadLocalMode(tls, LLVMThreadLocalMode::LLVMInitialExecTLSModel);
            LLVMSetAlignment(tls, 8);
            let comdat = LLVMGetOrInsertComdat(m, name.as_ptr());
            LLVMSetComdat(tls, comdat);
        }

        let blob = meta.encode();
        let blob_global = metadata_blob(m, &blob);
        // TraceModuleDesc: { i32 version, i32 num_functions, ptr meta, i64 meta_len, i32 base, i32 written,
        // i32 flags, i32 reserved, ptr next }
        let mut field_types = [i32t, i32t, ptrt, i64t, i32t, i32t, i32t, i32t, ptrt];
        let desc_ty = LLVMStructTypeInContext(ctx, field_types.as_mut_ptr(), field_types.len() as u32, 0);
        let mut fields = [
            LLVMConstInt(i32t, u64::from(TRACE_VERSION), 0),
            LLVMConstInt(i32t, meta.module.functions.len() as u64, 0),
            blob_global,
            LLVMConstInt(i64t, blob.len() as u64, 0),
            LLVMConstInt(i32t, 0, 0),
            LLVMConstInt(i32t, 0, 0),
            LLVMConstInt(i32t, if naive { u64::from(DESC_NAIVE) } else { 0 }, 0),
            LLVMConstInt(i32t, 0, 0),
            LLVMConstNull(ptrt),
        ];
        let desc = LLVMAddGlobal(m, desc_ty, cstr(symbols::TRACE_DESC).as_ptr());
        LLVMSetInitializer(desc, LLVMConstStructInContext(ctx, fields.as_mut_ptr(), fields.len() as u32, 0));
        LLVMSetLinkage(desc, LLVMLinkage::LLVMInternalLinkage);
        LLVMSetAlignment(desc, 8);
        for (fname, list, sym) in [
            (symbols::MODULE_CTOR, "llvm.global_ctors", symbols::TRACE_REGISTER),
            (symbols::MODULE_DTOR, "llvm.global_dtors", symbols::TRACE_UNREGISTER),
        ] {
            let callee = runtime_function(m, sym, ptrt);
            let f = internal_void_function(m, fname);
            LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, f, c"entry".as_ptr()));
            let mut args = [desc];
            LLVMBuildCall2(b, LLVMGlobalGetValueType(callee), callee, args.as_mut_ptr(), 1, c"".as_ptr());
            LLVMBuildRetVoid(b);
            append_to_global_list(m, list, f, 101);
        }

        let gep = |b: LLVMBuilderRef, word: usize| {
            let mut ix = [LLVMConstInt(i64t, word as u64, 0)];
            LLVMBuildInBoundsGEP2(b, i64t, tls, ix.as_mut_ptr(), 1, c"".as_ptr())
        };
        let c = |v: u64| LLVMConstInt(i64t, v, 0);
        // cached(id) -> the id's payload after an activation's prefix, through the thread's entry cache
        // (format::trace_layout, TLS_CACHE): `1` + the slot when the slot holds the id, else `0` + the id (bit 0
        // tells which); the slot then holds the id. No cache (0): always the id.
        let mut params = [i64t];
        let cached = helper(m, symbols::TRACE_CACHED, LLVMFunctionType(i64t, params.as_mut_ptr(), 1, 0));
        {
            let id = LLVMGetParam(cached, 0);
            let entry = LLVMAppendBasicBlockInContext(ctx, cached, c"entry".as_ptr());
            let look = LLVMAppendBasicBlockInContext(ctx, cached, c"look".as_ptr());
            let hit = LLVMAppendBasicBlockInContext(ctx, cached, c"hit".as_ptr());
            let miss = LLVMAppendBasicBlockInContext(ctx, cached, c"miss".as_ptr());
            LLVMPositionBuilderAtEnd(b, entry);
            let p = LLVMBuildLoad2(b, i64t, gep(b, TLS_CACHE), c"".as_ptr());
            let none = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntEQ, p, c(0), c"".as_ptr());
            LLVMBuildCondBr(b, none, miss, look);
            LLVMPositionBuilderAtEnd(b, look);
            let slot = LLVMBuildAnd(b, id, c(ENTRY_CACHE_SLOTS as u64 - 1), c"".as_ptr());
            let base = LLVMBuildIntToPtr(b, p, ptrt, c"".as_ptr());
            let mut ix = [slot];
            let sp = LLVMBuildInBoundsGEP2(b, i32t, base, ix.as_mut_ptr(), 1, c"".as_ptr());
            let old = LLVMBuildZExt(b, LLVMBuildLoad2(b, i32t, sp, c"".as_ptr()), i64t, c"".as_ptr());
            LLVMBuildStore(b, LLVMBuildTrunc(b, id, i32t, c"".as_ptr()), sp);
            let same = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntEQ, old, id, c"".as_ptr());
            LLVMBuildCondBr(b, same, hit, miss);
            LLVMPositionBuilderAtEnd(b, hit);
            LLVMBuildRet(b, LLVMBuildOr(b, LLVMBuildShl(b, slot, c(1), c"".as_ptr()), c(1), c"".as_ptr()));
            LLVMPositionBuilderAtEnd(b, miss);
            LLVMBuildRet(b, LLVMBuildShl(b, id, c(1), c"".as_ptr()));
        }
        // An activation marker for `id`: `01` + its payload at a fresh direct call site (`other`), `1` + its
        // payload elsewhere; (value, width).
        let marker = |b: LLVMBuilderRef, other: LLVMValueRef, id: LLVMValueRef| {
            let payload = LLVMBuildCall2(b, LLVMGlobalGetValueType(cached), cached, [id].as_mut_ptr(), 1, c"".as_ptr());
            let hit = LLVMBuildTrunc(b, payload, LLVMInt1TypeInContext(ctx), c"".as_ptr());
            let pw = LLVMBuildSelect(
                b,
                hit,
                c(1 + u64::from(ENTRY_CACHE_BITS)),
                c(1 + u64::from(FUNC_ID_BITS)),
                c"".as_ptr(),
            );
            let plain = LLVMBuildOr(b, LLVMBuildShl(b, payload, c(1), c"".as_ptr()), c(1), c"".as_ptr());
            let escaped = LLVMBuildOr(b, LLVMBuildShl(b, payload, c(2), c"".as_ptr()), c(0b10), c"".as_ptr());
            let v = LLVMBuildSelect(b, other, escaped, plain, c"".as_ptr());
            let w = LLVMBuildAdd(b, pw, LLVMBuildSelect(b, other, c(2), c(1), c"".as_ptr()), c"".as_ptr());
            (v, w)
        };
        // Reads and clears the announced callee: whether the stream is at a fresh direct call site.
        let fresh_site = |b: LLVMBuilderRef| {
            let pcallee = gep(b, TLS_CALLEE);
            let announced = LLVMBuildLoad2(b, i64t, pcallee, c"".as_ptr());
            LLVMBuildStore(b, c(0), pcallee);
            LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntNE, announced, c(0), c"".as_ptr())
        };
        // The width of a Done here (`00` at a fresh direct call site, else `0`); clears the announced callee.
        let done_width = |b: LLVMBuilderRef| LLVMBuildSelect(b, fresh_site(b), c(2), c(1), c"".as_ptr());
        // A resync or unwind marker's reserved id, prefixed as the position calls for; clears the callee.
        let marker_here = |b: LLVMBuilderRef, reserved: u64| marker(b, fresh_site(b), c(reserved));

        // put(v, w): acc |= v << n; n += w; a full word goes to the runtime through `put_full(acc, n, v, w)`: out of
        // line (once every 64 bits, and its code at every decision and call site doubled theirs), it takes the
        // bits `put` loaded and returns the new (acc, n) for `put` to store, so that a loop keeps both in
        // registers from one iteration to the next.
        let mut params = [i64t, i64t];
        let put_ty = LLVMFunctionType(voidt, params.as_mut_ptr(), 2, 0);
        let put = helper(m, symbols::TRACE_PUT, put_ty);
        let mut pair = [i64t, i64t];
        let pair_ty = LLVMStructTypeInContext(ctx, pair.as_mut_ptr(), 2, 0);
        let mut full_params = [i64t, i64t, i64t, i64t];
        let put_full =
            cold_helper(m, symbols::TRACE_PUT_FULL, LLVMFunctionType(pair_ty, full_params.as_mut_ptr(), 4, 0));
        let mut sp = [ptrt, i64t];
        let spill = runtime(m, symbols::TRACE_SPILL, LLVMFunctionType(voidt, sp.as_mut_ptr(), 2, 0));
        // acc | v << n: the bits with `v` added.
        let added = |b: LLVMBuilderRef, acc: LLVMValueRef, n: LLVMValueRef, v: LLVMValueRef| {
            LLVMBuildOr(b, acc, LLVMBuildShl(b, v, n, c"".as_ptr()), c"".as_ptr())
        };
        {
            let arg = |i| LLVMGetParam(put_full, i);
            let (acc, n, v, w) = (arg(0), arg(1), arg(2), arg(3));
            LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, put_full, c"entry".as_ptr()));
            // Called with n + w ≥ 64, which with w ≤ 32 means n ≥ 32: 64 − n is in 1..=32, a defined shift.
            let mut args = [tls, added(b, acc, n, v)];
            LLVMBuildCall2(b, LLVMGlobalGetValueType(spill), spill, args.as_mut_ptr(), 2, c"".as_ptr());
            let rest = LLVMBuildLShr(b, v, LLVMBuildSub(b, c(64), n, c"".as_ptr()), c"".as_ptr());
            let t = LLVMBuildAdd(b, n, w, c"".as_ptr());
            let mut both = [rest, LLVMBuildSub(b, t, c(64), c"".as_ptr())];
            LLVMBuildAggregateRet(b, both.as_mut_ptr(), 2);
        }
        {
            let (v, w) = (LLVMGetParam(put, 0), LLVMGetParam(put, 1));
            let entry = LLVMAppendBasicBlockInContext(ctx, put, c"entry".as_ptr());
            let fast = LLVMAppendBasicBlockInContext(ctx, put, c"fast".as_ptr());
            let slow = LLVMAppendBasicBlockInContext(ctx, put, c"full".as_ptr());
            LLVMPositionBuilderAtEnd(b, entry);
            let (pacc, pn) = (gep(b, TLS_ACC), gep(b, TLS_NACC));
            let acc = LLVMBuildLoad2(b, i64t, pacc, c"".as_ptr());
            let n = LLVMBuildLoad2(b, i64t, pn, c"".as_ptr());
            let t = LLVMBuildAdd(b, n, w, c"".as_ptr());
            let fits = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntULT, t, c(64), c"".as_ptr());
            LLVMBuildCondBr(b, fits, fast, slow);
            LLVMPositionBuilderAtEnd(b, fast);
            LLVMBuildStore(b, added(b, acc, n, v), pacc);
            LLVMBuildStore(b, t, pn);
            LLVMBuildRetVoid(b);
            LLVMPositionBuilderAtEnd(b, slow);
            let mut args = [acc, n, v, w];
            let r = LLVMBuildCall2(b, LLVMGlobalGetValueType(put_full), put_full, args.as_mut_ptr(), 4, c"".as_ptr());
            LLVMBuildStore(b, LLVMBuildExtractValue(b, r, 0, c"".as_ptr()), pacc);
            LLVMBuildStore(b, LLVMBuildExtractValue(b, r, 1, c"".as_ptr()), pn);
            LLVMBuildRetVoid(b);
        }

        let mut fp = [ptrt];
        let abnormal = runtime(m, symbols::TRACE_ABNORMAL, LLVMFunctionType(voidt, fp.as_mut_ptr(), 1, 0));
        // enter_slow(s, announced, id, binds) -> saved state: an entry's marker where it is not a fresh direct
        // call site's announced `1` or a certain site's nothing (`enter` inlines those two): `01` + id if the site
        // announced another function, `1` + id elsewhere (format::trace_layout, TLS_CALLEE), through the entry
        // cache — only here, since the reader's copy of the cache sees only the entries written with an id. A
        // certain call site's state (STATE_CERTAIN) admits no other entry than its announced one: anything else
        // there is a signal handler's, an abnormal transfer. Out of line but not cold: entries from other modules
        // and indirect calls take it; inlined, it made an instrumented one-line function too big for the
        // inliner.
        let mut params = [i64t, i64t, i64t, i64t];
        let enter_slow = outlined(m, symbols::TRACE_ENTER_SLOW, LLVMFunctionType(i64t, params.as_mut_ptr(), 4, 0));
        {
            let arg = |i| LLVMGetParam(enter_slow, i);
            let (phi, announced, id, binds) = (arg(0), arg(1), arg(2), arg(3));
            let entry = LLVMAppendBasicBlockInContext(ctx, enter_slow, c"entry".as_ptr());
            LLVMPositionBuilderAtEnd(b, entry);
            let mine = LLVMBuildAdd(b, id, c(1), c"".as_ptr());
            let certain = LLVMBuildICmp(
                b,
                LLVMIntPredicate::LLVMIntEQ,
                announced,
                LLVMBuildOr(b, mine, c(CALLEE_CERTAIN), c"".as_ptr()),
                c"".as_ptr(),
            );
            let at_certain = LLVMBuildICmp(
                b,
                LLVMIntPredicate::LLVMIntNE,
                LLVMBuildAnd(b, phi, c(STATE_CERTAIN), c"".as_ptr()),
                c(0),
                c"".as_ptr(),
            );
            let mismatch = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntNE, certain, at_certain, c"".as_ptr());
            let bad = LLVMAppendBasicBlockInContext(ctx, enter_slow, c"uncertain".as_ptr());
            let check = LLVMAppendBasicBlockInContext(ctx, enter_slow, c"marker?".as_ptr());
            let write = LLVMAppendBasicBlockInContext(ctx, enter_slow, c"marker".as_ptr());
            let quiet = LLVMAppendBasicBlockInContext(ctx, enter_slow, c"certain".as_ptr());
            let full = LLVMAppendBasicBlockInContext(ctx, enter_slow, c"full".as_ptr());
            LLVMBuildCondBr(b, mismatch, bad, check);
            LLVMPositionBuilderAtEnd(b, bad);
            LLVMBuildCall2(b, LLVMGlobalGetValueType(abnormal), abnormal, [tls].as_mut_ptr(), 1, c"".as_ptr());
            LLVMBuildBr(b, check);
            LLVMPositionBuilderAtEnd(b, check);
            LLVMBuildCondBr(b, certain, quiet, write);
            // A certain announcement: no marker.
            LLVMPositionBuilderAtEnd(b, quiet);
            LLVMBuildRet(b, phi);
            // The announced callee: `1`. Anything else: its marker.
            LLVMPositionBuilderAtEnd(b, write);
            let is_mine = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntEQ, announced, mine, c"".as_ptr());
            let bit = LLVMAppendBasicBlockInContext(ctx, enter_slow, c"bit".as_ptr());
            LLVMBuildCondBr(b, is_mine, bit, full);
            LLVMPositionBuilderAtEnd(b, bit);
            LLVMBuildCall2(b, put_ty, put, [c(1), c(1)].as_mut_ptr(), 2, c"".as_ptr());
            LLVMBuildRet(b, LLVMBuildOr(b, phi, binds, c"".as_ptr()));
            LLVMPositionBuilderAtEnd(b, full);
            let other = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntNE, announced, c(0), c"".as_ptr());
            let (v, w) = marker(b, other, id);
            LLVMBuildCall2(b, put_ty, put, [v, w].as_mut_ptr(), 2, c"".as_ptr());
            LLVMBuildRet(b, phi);
        }

        // enter(id, binds) -> saved state: an even state means a new thread or an abnormal entry (runtime
        // decides). `binds` (STATE_CERTAIN for a function without landing pads, else 0) goes into the saved
        // state of an announced entry: the state the function restores on return says the site is done.
        let mut params = [i64t, i64t];
        let enter = helper(m, symbols::TRACE_ENTER, LLVMFunctionType(i64t, params.as_mut_ptr(), 2, 0));
        let first = runtime(m, symbols::TRACE_FIRST, LLVMFunctionType(i64t, fp.as_mut_ptr(), 1, 0));
        {
            let (local, binds) = (LLVMGetParam(enter, 0), LLVMGetParam(enter, 1));
            let entry = LLVMAppendBasicBlockInContext(ctx, enter, c"entry".as_ptr());
            let slow = LLVMAppendBasicBlockInContext(ctx, enter, c"even".as_ptr());
            let go = LLVMAppendBasicBlockInContext(ctx, enter, c"go".as_ptr());
            LLVMPositionBuilderAtEnd(b, entry);
            let pstate = gep(b, TLS_STATE);
            let s = LLVMBuildLoad2(b, i64t, pstate, c"".as_ptr());
            let odd = LLVMBuildAnd(b, s, c(1), c"".as_ptr());
            let is_odd = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntNE, odd, c(0), c"".as_ptr());
            LLVMBuildCondBr(b, is_odd, go, slow);
            LLVMPositionBuilderAtEnd(b, slow);
            let mut args = [tls];
            let s2 = LLVMBuildCall2(b, LLVMGlobalGetValueType(first), first, args.as_mut_ptr(), 1, c"".as_ptr());
            LLVMBuildBr(b, go);
            LLVMPositionBuilderAtEnd(b, go);
            let phi = LLVMBuildPhi(b, i64t, c"".as_ptr());
            let mut vals = [s, s2];
            let mut blocks = [entry, slow];
            LLVMAddIncoming(phi, vals.as_mut_ptr(), blocks.as_mut_ptr(), 2);
            let d = LLVMBuildAdd(b, LLVMBuildAnd(b, phi, c(0xffff_ffff), c"".as_ptr()), c(1), c"".as_ptr());
            LLVMBuildStore(b, d, pstate);
            let pbase = LLVMBuildStructGEP2(b, desc_ty, desc, 4, c"".as_ptr());
            let base = LLVMBuildZExt(b, LLVMBuildLoad2(b, i32t, pbase, c"".as_ptr()), i64t, c"".as_ptr());
            let id = LLVMBuildAdd(b, base, local, c"".as_ptr());
            // The state the activation restores on return (the site's, flagged after an announced entry).
            let mut saved = phi;
            if !naive {
                // The two common entries inline: a fresh direct call site's announced callee writes `1` (its
                // saved state flagged with `binds`), a certain site's announced callee nothing; any other in
                // `enter_slow`.
                let pcallee = gep(b, TLS_CALLEE);
                let announced = LLVMBuildLoad2(b, i64t, pcallee, c"".as_ptr());
                LLVMBuildStore(b, c(0), pcallee);
                let mine = LLVMBuildAdd(b, id, c(1), c"".as_ptr());
                let at_certain = LLVMBuildICmp(
                    b,
                    LLVMIntPredicate::LLVMIntNE,
                    LLVMBuildAnd(b, phi, c(STATE_CERTAIN), c"".as_ptr()),
                    c(0),
                    c"".as_ptr(),
                );
                let certain_call = LLVMBuildICmp(
                    b,
                    LLVMIntPredicate::LLVMIntEQ,
                    announced,
                    LLVMBuildOr(b, mine, c(CALLEE_CERTAIN), c"".as_ptr()),
                    c"".as_ptr(),
                );
                let quick = LLVMAppendBasicBlockInContext(ctx, enter, c"certain".as_ptr());
                let direct = LLVMAppendBasicBlockInContext(ctx, enter, c"direct?".as_ptr());
                let fresh = LLVMAppendBasicBlockInContext(ctx, enter, c"direct".as_ptr());
                let bit = LLVMAppendBasicBlockInContext(ctx, enter, c"bit".as_ptr());
                let other = LLVMAppendBasicBlockInContext(ctx, enter, c"other".as_ptr());
                let written = LLVMAppendBasicBlockInContext(ctx, enter, c"marked".as_ptr());
                LLVMBuildCondBr(b, certain_call, quick, direct);
                LLVMPositionBuilderAtEnd(b, quick);
                LLVMBuildCondBr(b, at_certain, written, other);
                LLVMPositionBuilderAtEnd(b, direct);
                let is_mine = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntEQ, announced, mine, c"".as_ptr());
                LLVMBuildCondBr(b, is_mine, fresh, other);
                LLVMPositionBuilderAtEnd(b, fresh);
                LLVMBuildCondBr(b, at_certain, other, bit);
                LLVMPositionBuilderAtEnd(b, bit);
                LLVMBuildCall2(b, put_ty, put, [c(1), c(1)].as_mut_ptr(), 2, c"".as_ptr());
                let bound = LLVMBuildOr(b, phi, binds, c"".as_ptr());
                LLVMBuildBr(b, written);
                LLVMPositionBuilderAtEnd(b, other);
                let mut args = [phi, announced, id, binds];
                let slow_saved = LLVMBuildCall2(
                    b,
                    LLVMGlobalGetValueType(enter_slow),
                    enter_slow,
                    args.as_mut_ptr(),
                    4,
                    c"".as_ptr(),
                );
                LLVMBuildBr(b, written);
                LLVMPositionBuilderAtEnd(b, written);
                let merged = LLVMBuildPhi(b, i64t, c"".as_ptr());
                let mut vals = [phi, bound, slow_saved];
                let mut blocks = [quick, bit, other];
                LLVMAddIncoming(merged, vals.as_mut_ptr(), blocks.as_mut_ptr(), 3);
                saved = merged;
            }
            // The shadow stack (every traced thread has one: flight recorder, regions, crash flush): this
            // activation's entry; a sync if one is wanted.
            let shadow = LLVMAppendBasicBlockInContext(ctx, enter, c"shadow".as_ptr());
            let want = LLVMAppendBasicBlockInContext(ctx, enter, c"sync".as_ptr());
            let out = LLVMAppendBasicBlockInContext(ctx, enter, c"out".as_ptr());
            let p = LLVMBuildLoad2(b, i64t, gep(b, TLS_SHADOW), c"".as_ptr());
            let has = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntNE, p, c(0), c"".as_ptr());
            LLVMBuildCondBr(b, has, shadow, out);
            LLVMPositionBuilderAtEnd(b, shadow);
            let base = LLVMBuildIntToPtr(b, LLVMBuildAnd(b, p, c(!1), c"".as_ptr()), ptrt, c"".as_ptr());
            let mut ix = [LLVMBuildAnd(b, d, c(SHADOW_ENTRIES - 1), c"".as_ptr())];
            let slot = LLVMBuildInBoundsGEP2(b, i64t, base, ix.as_mut_ptr(), 1, c"".as_ptr());
            // shadow_entry(saved, body state, id)
            let site = LLVMBuildAnd(b, saved, c(!0xffff_ffff), c"".as_ptr());
            let high = LLVMBuildAnd(b, d, c(0xfff0_0000), c"".as_ptr());
            let entry = LLVMBuildOr(b, LLVMBuildOr(b, site, high, c"".as_ptr()), id, c"".as_ptr());
            LLVMBuildStore(b, entry, slot);
            let wanted = LLVMBuildICmp(
                b,
                LLVMIntPredicate::LLVMIntNE,
                LLVMBuildAnd(b, p, c(1), c"".as_ptr()),
                c(0),
                c"".as_ptr(),
            );
            LLVMBuildCondBr(b, wanted, want, out);
            LLVMPositionBuilderAtEnd(b, want);
            let sync = runtime(m, symbols::TRACE_SYNC, LLVMFunctionType(voidt, fp.as_mut_ptr(), 1, 0));
            let mut args = [tls];
            LLVMBuildCall2(b, LLVMGlobalGetValueType(sync), sync, args.as_mut_ptr(), 1, c"".as_ptr());
            LLVMBuildBr(b, out);
            LLVMPositionBuilderAtEnd(b, out);
            LLVMBuildRet(b, saved);
        }

        // The site's return in its own state: the body state back, then Done — `00` at a fresh direct call
        // site (its callee never entered), else `0`.
        let done_here = |b: LLVMBuilderRef, pstate: LLVMValueRef, d: LLVMValueRef| {
            LLVMBuildStore(b, d, pstate);
            if !naive {
                let mut args = [c(0), done_width(b)];
                LLVMBuildCall2(b, put_ty, put, args.as_mut_ptr(), 2, c"".as_ptr());
            }
        };
        // done_moved(expect, d, s): a call site's return to a state `s` not its own. A deeper activation's state
        // means untraced code the site called caught an exception or `longjmp` that left traced activations: an
        // abandon marker (ABANDON_ID, the activation's depth, this site's number) is this site's return
        // (`pathprof_core::tracing::regenerate`, "Abandoned activations"). Any other state is abnormal.
        let mut params = [i64t, i64t, i64t];
        let done_moved = cold_helper(m, symbols::TRACE_DONE_MOVED, LLVMFunctionType(voidt, params.as_mut_ptr(), 3, 0));
        {
            let (expect, d, s) =
                (LLVMGetParam(done_moved, 0), LLVMGetParam(done_moved, 1), LLVMGetParam(done_moved, 2));
            let entry = LLVMAppendBasicBlockInContext(ctx, done_moved, c"entry".as_ptr());
            let left = LLVMAppendBasicBlockInContext(ctx, done_moved, c"abandoned".as_ptr());
            let odd = LLVMAppendBasicBlockInContext(ctx, done_moved, c"abnormal".as_ptr());
            LLVMPositionBuilderAtEnd(b, entry);
            let pstate = gep(b, TLS_STATE);
            // Deeper: the state's depth part (its low word) beyond this site's own state, d + 1.
            let low = LLVMBuildAnd(b, s, c(0xffff_ffff), c"".as_ptr());
            let deeper = LLVMBuildICmp(
                b,
                LLVMIntPredicate::LLVMIntUGT,
                low,
                LLVMBuildAdd(b, d, c(1), c"".as_ptr()),
                c"".as_ptr(),
            );
            LLVMBuildCondBr(b, deeper, left, odd);
            LLVMPositionBuilderAtEnd(b, left);
            LLVMBuildStore(b, d, pstate);
            if !naive {
                let depth = LLVMBuildLShr(b, d, c(1), c"".as_ptr());
                let site = LLVMBuildAnd(b, LLVMBuildLShr(b, expect, c(32), c"".as_ptr()), c(0x7fff_ffff), c"".as_ptr());
                let (mv, mw) = marker_here(b, u64::from(ABANDON_ID));
                for (v, w) in [(mv, mw), (depth, c(32)), (site, c(32))] {
                    LLVMBuildCall2(b, put_ty, put, [v, w].as_mut_ptr(), 2, c"".as_ptr());
                }
            }
            LLVMBuildRetVoid(b);
            LLVMPositionBuilderAtEnd(b, odd);
            let mut args = [tls];
            LLVMBuildCall2(b, LLVMGlobalGetValueType(abnormal), abnormal, args.as_mut_ptr(), 1, c"".as_ptr());
            done_here(b, pstate, d);
            LLVMBuildRetVoid(b);
        }
        // done(expect, d): the call site's state must still be there (else `done_moved`); Done = one 0 bit.
        let mut params = [i64t, i64t];
        let done = helper(m, symbols::TRACE_DONE, LLVMFunctionType(voidt, params.as_mut_ptr(), 2, 0));
        {
            let (expect, d) = (LLVMGetParam(done, 0), LLVMGetParam(done, 1));
            let entry = LLVMAppendBasicBlockInContext(ctx, done, c"entry".as_ptr());
            let slow = LLVMAppendBasicBlockInContext(ctx, done, c"moved".as_ptr());
            let go = LLVMAppendBasicBlockInContext(ctx, done, c"go".as_ptr());
            LLVMPositionBuilderAtEnd(b, entry);
            let pstate = gep(b, TLS_STATE);
            let s = LLVMBuildLoad2(b, i64t, pstate, c"".as_ptr());
            let same = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntEQ, s, expect, c"".as_ptr());
            LLVMBuildCondBr(b, same, go, slow);
            LLVMPositionBuilderAtEnd(b, slow);
            let mut args = [expect, d, s];
            LLVMBuildCall2(b, LLVMGlobalGetValueType(done_moved), done_moved, args.as_mut_ptr(), 3, c"".as_ptr());
            LLVMBuildRetVoid(b);
            LLVMPositionBuilderAtEnd(b, go);
            done_here(b, pstate, d);
            LLVMBuildRetVoid(b);
        }
        // done_direct(expect, d): a direct call site's return. Its announced callee began there and returned (it
        // flagged the state it restored): the site is done, no Done. Otherwise as `done`.
        let mut params = [i64t, i64t];
        let done_direct = helper(m, symbols::TRACE_DONE_DIRECT, LLVMFunctionType(voidt, params.as_mut_ptr(), 2, 0));
        {
            let (expect, d) = (LLVMGetParam(done_direct, 0), LLVMGetParam(done_direct, 1));
            let entry = LLVMAppendBasicBlockInContext(ctx, done_direct, c"entry".as_ptr());
            let quiet = LLVMAppendBasicBlockInContext(ctx, done_direct, c"bound".as_ptr());
            let other = LLVMAppendBasicBlockInContext(ctx, done_direct, c"done".as_ptr());
            LLVMPositionBuilderAtEnd(b, entry);
            let s = LLVMBuildLoad2(b, i64t, gep(b, TLS_STATE), c"".as_ptr());
            let flagged = LLVMBuildOr(b, expect, c(STATE_CERTAIN), c"".as_ptr());
            let bound = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntEQ, s, flagged, c"".as_ptr());
            LLVMBuildCondBr(b, bound, quiet, other);
            LLVMPositionBuilderAtEnd(b, quiet);
            LLVMBuildStore(b, d, gep(b, TLS_STATE));
            LLVMBuildRetVoid(b);
            LLVMPositionBuilderAtEnd(b, other);
            LLVMBuildCall2(b, LLVMGlobalGetValueType(done), done, [expect, d].as_mut_ptr(), 2, c"".as_ptr());
            LLVMBuildRetVoid(b);
        }
        // done_certain(expect, d): a certain call site's return: its state still there and its callee entered
        // (which took the announcement), else an abnormal transfer; no Done.
        let mut params = [i64t, i64t];
        let done_certain = helper(m, symbols::TRACE_DONE_CERTAIN, LLVMFunctionType(voidt, params.as_mut_ptr(), 2, 0));
        {
            let (expect, d) = (LLVMGetParam(done_certain, 0), LLVMGetParam(done_certain, 1));
            let entry = LLVMAppendBasicBlockInContext(ctx, done_certain, c"entry".as_ptr());
            let slow = LLVMAppendBasicBlockInContext(ctx, done_certain, c"moved".as_ptr());
            let go = LLVMAppendBasicBlockInContext(ctx, done_certain, c"go".as_ptr());
            LLVMPositionBuilderAtEnd(b, entry);
            let pstate = gep(b, TLS_STATE);
            let pcallee = gep(b, TLS_CALLEE);
            let s = LLVMBuildLoad2(b, i64t, pstate, c"".as_ptr());
            let announced = LLVMBuildLoad2(b, i64t, pcallee, c"".as_ptr());
            let same = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntEQ, s, expect, c"".as_ptr());
            let taken = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntEQ, announced, c(0), c"".as_ptr());
            LLVMBuildCondBr(b, LLVMBuildAnd(b, same, taken, c"".as_ptr()), go, slow);
            LLVMPositionBuilderAtEnd(b, slow);
            let mut args = [tls];
            LLVMBuildCall2(b, LLVMGlobalGetValueType(abnormal), abnormal, args.as_mut_ptr(), 1, c"".as_ptr());
            LLVMBuildStore(b, c(0), pcallee);
            LLVMBuildBr(b, go);
            LLVMPositionBuilderAtEnd(b, go);
            LLVMBuildStore(b, d, pstate);
            LLVMBuildRetVoid(b);
        }
        // resync(expect, d, id, block, call): the setjmp call's state still there is its first return (Done);
        // otherwise a longjmp came back: a resync marker (RESYNC_ID, id, depth, block, call) replaces the Done.
        // resync_again(d, id, block, call): the resync marker after a longjmp came back.
        let mut params = [i64t, i64t, i64t, i64t];
        let resync_again =
            cold_helper(m, symbols::TRACE_RESYNC_AGAIN, LLVMFunctionType(voidt, params.as_mut_ptr(), 4, 0));
        {
            let p = |i| LLVMGetParam(resync_again, i);
            LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, resync_again, c"entry".as_ptr()));
            let depth = LLVMBuildLShr(b, p(0), c(1), c"".as_ptr());
            let fb = u64::from(FUNC_ID_BITS);
            let (mv, mw) = marker_here(b, u64::from(RESYNC_ID));
            for (v, w) in [(mv, mw), (p(1), c(fb)), (depth, c(32)), (p(2), c(32)), (p(3), c(32))] {
                LLVMBuildCall2(b, put_ty, put, [v, w].as_mut_ptr(), 2, c"".as_ptr());
            }
            LLVMBuildRetVoid(b);
        }
        let mut params = [i64t, i64t, i64t, i64t, i64t];
        let resync = helper(m, symbols::TRACE_RESYNC, LLVMFunctionType(voidt, params.as_mut_ptr(), 5, 0));
        {
            let p = |i| LLVMGetParam(resync, i);
            let entry = LLVMAppendBasicBlockInContext(ctx, resync, c"entry".as_ptr());
            let again = LLVMAppendBasicBlockInContext(ctx, resync, c"again".as_ptr());
            let first = LLVMAppendBasicBlockInContext(ctx, resync, c"first".as_ptr());
            LLVMPositionBuilderAtEnd(b, entry);
            let pstate = gep(b, TLS_STATE);
            let s = LLVMBuildLoad2(b, i64t, pstate, c"".as_ptr());
            LLVMBuildStore(b, p(1), pstate);
            let same = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntEQ, s, p(0), c"".as_ptr());
            LLVMBuildCondBr(b, same, first, again);
            LLVMPositionBuilderAtEnd(b, first);
            if !naive {
                LLVMBuildCall2(b, put_ty, put, [c(0), done_width(b)].as_mut_ptr(), 2, c"".as_ptr());
            }
            LLVMBuildRetVoid(b);
            LLVMPositionBuilderAtEnd(b, again);
            if !naive {
                let mut args = [p(1), p(2), p(3), p(4)];
                LLVMBuildCall2(
                    b,
                    LLVMGlobalGetValueType(resync_again),
                    resync_again,
                    args.as_mut_ptr(),
                    4,
                    c"".as_ptr(),
                );
            }
            LLVMBuildRetVoid(b);
        }
        // unwind(d, id): a landing pad's start: the activation's body state back (the exception left deeper
        // activations inside their calls), then the unwind marker (UNWIND_ID, id, depth). Out of line: an
        // exception's unwinding costs microseconds, the call nothing.
        let mut params = [i64t, i64t];
        let unwind = cold_helper(m, symbols::TRACE_UNWIND, LLVMFunctionType(voidt, params.as_mut_ptr(), 2, 0));
        {
            let (d, id) = (LLVMGetParam(unwind, 0), LLVMGetParam(unwind, 1));
            LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, unwind, c"entry".as_ptr()));
            LLVMBuildStore(b, d, gep(b, TLS_STATE));
            if !naive {
                let depth = LLVMBuildLShr(b, d, c(1), c"".as_ptr());
                let fb = u64::from(FUNC_ID_BITS);
                let (mv, mw) = marker_here(b, u64::from(UNWIND_ID));
                for (v, w) in [(mv, mw), (id, c(fb)), (depth, c(32))] {
                    LLVMBuildCall2(b, put_ty, put, [v, w].as_mut_ptr(), 2, c"".as_ptr());
                }
            }
            LLVMBuildRetVoid(b);
        }
        Emitter {
            m,
            ctx,
            i64t,
            put,
            enter,
            done,
            done_direct,
            done_certain,
            resync,
            unwind,
            tls,
            builder: b,
            desc,
            desc_ty,
            put_ty,
            naive,
        }
    }

    /// Instruments one function; `site` numbers the module's call sites. Returns its predicates.
    /// The decisions of `indirectbr` predicates (computed gotos). The jump's address is no value a `select`
    /// could turn into the taken edge's token cheaply, so each target writes it first thing, before its own
    /// code: nothing runs between the jump and there, so the token lands where the reader expects it. A target
    /// that other edges enter too selects (token, width) by predecessor, with (0, 0) — no bits — on those edges.
    unsafe fn indirect_decisions(&self, p: &Planned) {
        let b = self.builder;
        let c = |v: u64| LLVMConstInt(self.i64t, v, 0);
        let cfg = &p.graph.cfg;
        let adj = cfg.adjacency();
        // Per target block: (predecessor, token, width) of each traced indirectbr edge into it.
        let mut tokens: BTreeMap<LLVMBasicBlockRef, Vec<(LLVMBasicBlockRef, u64, u64)>> = BTreeMap::new();
        for (bi, &bb) in p.graph.blocks.iter().enumerate() {
            let v = BlockId(bi as u32);
            if ir::terminator(bb).is_none_or(|t| ir::opcode(t) != LLVMOpcode::LLVMIndirectBr) {
                continue;
            }
            let out: Vec<_> = adj
                .out_edges(v)
                .iter()
                .copied()
                .filter(|&e| matches!(cfg.edge(e).kind, EdgeKind::Branch { .. }))
                .collect();
            if out.len() < 2 {
                continue;
            }
            let width = u64::from(p.tables.token_width(v));
            for e in out {
                let value = u64::from(p.plan.value(e).expect("bit tracing witnesses every out-edge"));
                tokens.entry(p.graph.blocks[cfg.edge(e).to.index()]).or_default().push((bb, value, width));
            }
        }
        // Every IR edge into each target, as its PHIs list them (an edge split earlier enters from its block):
        // one walk over the function's terminators.
        let mut preds_of: BTreeMap<LLVMBasicBlockRef, Vec<LLVMBasicBlockRef>> = BTreeMap::new();
        for q in ir::blocks(p.f) {
            for s in ir::terminator(q).map(ir::successors).unwrap_or_default() {
                if tokens.contains_key(&s) {
                    preds_of.entry(s).or_default().push(q);
                }
            }
        }
        for (target, entries) in tokens {
            let preds = preds_of.remove(&target).unwrap_or_default();
            let token_from = |q: LLVMBasicBlockRef| entries.iter().find(|x| x.0 == q).map_or((0, 0), |x| (x.1, x.2));
            // PHIs go before the first instruction's debug records too (the verifier refuses records on PHIs).
            LLVMPositionBuilderBeforeInstrAndDbgRecords(b, LLVMGetFirstInstruction(target));
            // A PHI carries no source location; the put gets the one the builder had.
            let location = LLVMGetCurrentDebugLocation2(b);
            LLVMSetCurrentDebugLocation2(b, std::ptr::null_mut());
            let (value, width) = if preds.iter().all(|&q| token_from(q) == token_from(preds[0])) {
                let (v, w) = token_from(preds[0]);
                (c(v), c(w))
            } else {
                let value = LLVMBuildPhi(b, self.i64t, c"pathprof.token".as_ptr());
                let width = LLVMBuildPhi(b, self.i64t, c"pathprof.token.width".as_ptr());
                for &q in &preds {
                    let (v, w) = token_from(q);
                    let mut from = [q];
                    LLVMAddIncoming(value, [c(v)].as_mut_ptr(), from.as_mut_ptr(), 1);
                    LLVMAddIncoming(width, [c(w)].as_mut_ptr(), from.as_mut_ptr(), 1);
                }
                (value, width)
            };
            LLVMSetCurrentDebugLocation2(b, location);
            LLVMPositionBuilderBefore(b, ir::first_insertion_point(target).expect("a block has a terminator"));
            LLVMBuildCall2(b, self.put_ty, self.put, [value, width].as_mut_ptr(), 2, c"".as_ptr());
        }
    }

    unsafe fn function(&self, p: &Planned, sites: &Sites<'_>, index: u64, site: &mut u64) -> usize {
        let _ = (self.m, self.ctx);
        let b = self.builder;
        let c = |v: u64| LLVMConstInt(self.i64t, v, 0);
        let call = |f: LLVMValueRef, args: &mut [LLVMValueRef]| {
            LLVMBuildCall2(b, LLVMGlobalGetValueType(f), f, args.as_mut_ptr(), args.len() as u32, c"".as_ptr())
        };
        let first = ir::entry_insertion_point(p.f);
        LLVMPositionBuilderBefore(b, first);
        // A function that cannot resume (core's test, the reader's too): its return after an announced entry
        // ends the site.
        let binds = if p.tables.may_resume() { 0 } else { STATE_CERTAIN };
        let saved = call(self.enter, &mut [c(index), c(binds)]);
        let d = LLVMBuildAdd(b, LLVMBuildAnd(b, saved, c(0xffff_ffff), c"".as_ptr()), c(1), c"pathprof.depth".as_ptr());
        let pstate = {
            let mut ix = [c(TLS_STATE as u64)];
            LLVMBuildInBoundsGEP2(b, self.i64t, self.tls, ix.as_mut_ptr(), 1, c"".as_ptr())
        };
        if self.naive {
            // Each block's item (block, function id) first in the block: the entry's right after enter, so the
            // thread is registered before its first item.
            let i32t = LLVMInt32TypeInContext(self.ctx);
            let pbase = LLVMBuildStructGEP2(b, self.desc_ty, self.desc, 4, c"".as_ptr());
            let base = LLVMBuildZExt(b, LLVMBuildLoad2(b, i32t, pbase, c"".as_ptr()), self.i64t, c"".as_ptr());
            let id = LLVMBuildAdd(b, base, c(index), c"pathprof.id".as_ptr());
            for (bi, &bb) in p.graph.blocks.iter().enumerate() {
                if bi > 0 {
                    LLVMPositionBuilderBefore(b, ir::first_insertion_point(bb).expect("a block has a terminator"));
                }
                LLVMBuildCall2(b, self.put_ty, self.put, [c(bi as u64), c(32)].as_mut_ptr(), 2, c"".as_ptr());
                LLVMBuildCall2(b, self.put_ty, self.put, [id, c(32)].as_mut_ptr(), 2, c"".as_ptr());
            }
        }
        let mut predicates = 0;
        let cfg = &p.graph.cfg;
        let adj = cfg.adjacency();
        let has_setjmp = p.twice.iter().flatten().any(|&t| t);
        let id = if has_setjmp || !p.invokes.is_empty() {
            let i32t = LLVMInt32TypeInContext(self.ctx);
            LLVMPositionBuilderBefore(b, first);
            let pbase = LLVMBuildStructGEP2(b, self.desc_ty, self.desc, 4, c"".as_ptr());
            let base = LLVMBuildZExt(b, LLVMBuildLoad2(b, i32t, pbase, c"".as_ptr()), self.i64t, c"".as_ptr());
            Some(LLVMBuildAdd(b, base, c(index), c"pathprof.id".as_ptr()))
        } else {
            None
        };
        // Exceptions first, so that the code they put at the start of a block runs before that block's own
        // (call-site states, decisions): each `invoke`'s return on its normal edge, each landing pad's marker.
        // The state inside call site k of the function is d + 1 + (site number << 32), numbered as below.
        let site_state = |k: u64| c(1 + (((*site + k) & 0x7fff_ffff) << 32));
        let mut numbered = 0u64;
        for (bi, calls) in p.calls.iter().enumerate() {
            numbered += calls.len() as u64;
            let Some(&inst) = calls.last().filter(|&&i| ir::opcode(i) == LLVMOpcode::LLVMInvoke) else { continue };
            let split = crate::shim::pathprof_shim_split_edge(inst, 0);
            let at = if split.is_null() {
                ir::first_insertion_point(LLVMGetNormalDest(inst)).expect("a block has a terminator")
            } else {
                ir::terminator(split).expect("a split block branches on")
            };
            LLVMPositionBuilderBefore(b, at);
            let expect_here = LLVMBuildAdd(b, d, site_state(numbered), c"".as_ptr());
            match id {
                Some(id) if p.twice[bi][calls.len() - 1] => {
                    call(self.resync, &mut [expect_here, d, id, c(bi as u64), c(calls.len() as u64 - 1)]);
                }
                _ if sites.certain[bi][calls.len() - 1] => {
                    let expect_here = LLVMBuildOr(b, expect_here, c(STATE_CERTAIN), c"".as_ptr());
                    call(self.done_certain, &mut [expect_here, d]);
                }
                _ if sites.binding_callee(bi, calls.len() - 1) => {
                    call(self.done_direct, &mut [expect_here, d]);
                }
                _ => {
                    call(self.done, &mut [expect_here, d]);
                }
            }
        }
        let mut pads: Vec<LLVMBasicBlockRef> =
            p.invokes.iter().map(|&bi| LLVMGetUnwindDest(*p.calls[bi as usize].last().expect("an invoke"))).collect();
        pads.sort();
        pads.dedup();
        for pad in pads {
            LLVMPositionBuilderBefore(b, ir::first_insertion_point(pad).expect("a block has a terminator"));
            call(self.unwind, &mut [d, id.expect("computed for functions with invokes")]);
        }
        if !self.naive {
            self.indirect_decisions(p);
        }
        for (bi, &bb) in p.graph.blocks.iter().enumerate() {
            for (ci, &inst) in p.calls[bi].iter().enumerate() {
                *site += 1;
                if sites.copy[bi][ci] {
                    continue; // no marker: the reader walks the leaf (module docs)
                }
                let certain = sites.certain[bi][ci];
                // The state inside this call site: odd, with the site's number above the depth (and
                // STATE_CERTAIN at a certain call site).
                LLVMPositionBuilderBefore(b, inst);
                if let Some(g) = sites.direct[bi][ci] {
                    // A direct call of a traced function of this module: announce it (1 + its trace id, with
                    // CALLEE_CERTAIN at a certain call site), before the call site's state, so that a signal
                    // handler entering in between finds a body state (an abnormal transfer), never a site state
                    // without its announcement.
                    let i32t = LLVMInt32TypeInContext(self.ctx);
                    let pbase = LLVMBuildStructGEP2(b, self.desc_ty, self.desc, 4, c"".as_ptr());
                    let base = LLVMBuildZExt(b, LLVMBuildLoad2(b, i32t, pbase, c"".as_ptr()), self.i64t, c"".as_ptr());
                    let flag = if certain { CALLEE_CERTAIN } else { 0 };
                    let announced = LLVMBuildAdd(b, base, c((1 + u64::from(g)) | flag), c"".as_ptr());
                    let mut ix = [c(TLS_CALLEE as u64)];
                    let pcallee = LLVMBuildInBoundsGEP2(b, self.i64t, self.tls, ix.as_mut_ptr(), 1, c"".as_ptr());
                    LLVMBuildStore(b, announced, pcallee);
                    // A signal fence: the optimiser keeps the two stores in this order.
                    LLVMBuildFence(b, LLVMAtomicOrdering::LLVMAtomicOrderingSequentiallyConsistent, 1, c"".as_ptr());
                }
                let flag = if certain { STATE_CERTAIN } else { 0 };
                let expect_here = LLVMBuildAdd(b, d, c((1 + ((*site & 0x7fff_ffff) << 32)) | flag), c"".as_ptr());
                LLVMBuildStore(b, expect_here, pstate);
                if ir::opcode(inst) == LLVMOpcode::LLVMInvoke {
                    continue; // its return is on its normal edge, above
                }
                let next = LLVMGetNextInstruction(inst);
                LLVMPositionBuilderBefore(b, next);
                match id {
                    Some(id) if p.twice[bi][ci] => {
                        call(self.resync, &mut [expect_here, d, id, c(bi as u64), c(ci as u64)]);
                    }
                    _ if certain => {
                        call(self.done_certain, &mut [expect_here, d]);
                    }
                    _ if sites.binding_callee(bi, ci) => {
                        call(self.done_direct, &mut [expect_here, d]);
                    }
                    _ => {
                        call(self.done, &mut [expect_here, d]);
                    }
                }
            }
            let Some(term) = ir::terminator(bb) else { continue };
            let v = BlockId(bi as u32);
            let traced: Vec<_> = adj
                .out_edges(v)
                .iter()
                .copied()
                .filter(|&e| matches!(cfg.edge(e).kind, EdgeKind::Branch { .. } | EdgeKind::Return))
                // An invoke's unwind edge is taken by the landing pad's marker, not by a decision.
                .filter(|&e| {
                    !(ir::opcode(term) == LLVMOpcode::LLVMInvoke && cfg.edge(e).kind == (EdgeKind::Branch { succ: 1 }))
                })
                .collect();
            if ir::opcode(term) == LLVMOpcode::LLVMRet || ir::opcode(term) == LLVMOpcode::LLVMResume {
                LLVMPositionBuilderBefore(b, term);
                LLVMBuildStore(b, saved, pstate);
            }
            if traced.len() < 2 || self.naive {
                continue;
            }
            predicates += 1;
            if ir::opcode(term) == LLVMOpcode::LLVMIndirectBr {
                continue; // written at the targets ([`Self::indirect_decisions`])
            }
            // The value of each successor slot (dead successors have no edge: 0, never taken when defined).
            let nsucc = ir::successors(term).len();
            let mut value = vec![0u64; nsucc];
            for &e in &traced {
                if let EdgeKind::Branch { succ } = cfg.edge(e).kind {
                    value[succ as usize] = u64::from(p.plan.value(e).expect("bit tracing witnesses every out-edge"));
                }
            }
            let width = u64::from(p.tables.token_width(v));
            LLVMPositionBuilderBefore(b, term);
            let idx = match ir::opcode(term) {
                LLVMOpcode::LLVMBr => {
                    let cond = LLVMGetCondition(term);
                    LLVMBuildSelect(b, cond, c(value[0]), c(value[1]), c"".as_ptr())
                }
                LLVMOpcode::LLVMSwitch => {
                    let cond = LLVMGetOperand(term, 0);
                    let mut idx = c(value[0]);
                    for (case, &v) in value.iter().enumerate().skip(1) {
                        let val = LLVMGetOperand(term, (2 * case) as u32);
                        let hit = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntEQ, cond, val, c"".as_ptr());
                        idx = LLVMBuildSelect(b, hit, c(v), idx, c"".as_ptr());
                    }
                    idx
                }
                _ => unreachable!("planning refused other multi-way terminators"),
            };
            call(self.put, &mut [idx, c(width)]);
        }
        predicates
    }
}
