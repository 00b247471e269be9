//! Mode `trace`: bit tracing (Ball & Larus, TOPLAS'94 §6.2) of every function of one module, with the call
//! markers of `pathprof_core::tracing::regenerate`'s model, so that the runtime's per-thread bit stream
//! regenerates into the exact block sequence.
//!
//! What each function gets (the plan is `pathprof_format::trace::function_tables`, shared with the reader):
//! - at its entry, [`symbols::TRACE_ENTER`]: `Enter(f)` = a 1 bit and the function's
//!   [`FUNC_ID_BITS`](pathprof_format::trace_layout::FUNC_ID_BITS)-bit trace id (the module's base, assigned by the runtime at registration, + its index);
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
//! - on the out-edges of every predicate (≥ 2 traced out-edges), the taken out-edge's position among them in
//!   ⌈log2 N⌉ bits, a constant on each edge ([`Emitter::decision_on_edges`]) — for an `indirectbr` (computed
//!   goto) first thing in the target, selected by predecessor ([`Emitter::indirect_decisions`]); before every
//!   `ret`, the state the entry found (the caller's call site, restored).
//!
//! The thread state (`trace_layout`) makes abnormal transfers visible: an entry that finds the thread in a
//! function body (a signal handler) or a call site that returns to a state that is not its own (`longjmp`, an
//! exception) tells the runtime, which records where the trace stops being regenerable — unless the state is a
//! deeper activation's: untraced code the site called caught an exception or `longjmp` that left traced
//! activations, and the site writes an abandon marker with its depth instead (`ABANDON_ID`).
//!
//! Exceptions: an `invoke` is its block's last call site. Its Done goes on its normal edge (split when
//! critical, else at the start of the normal successor), so the `invoke` block is no predicate; every landing
//! pad starts with the unwind marker ([`symbols::TRACE_UNWIND`]: the reserved id [`UNWIND_ID`](pathprof_format::trace_layout::UNWIND_ID), the function's
//! id and its activation depth) and puts the thread state back to the activation's body — frames the
//! exception passed through leave no trace of their own, and `resume` restores the caller's call-site state as
//! `ret` does. Functions with `callbr` (and `indirectbr` or `musttail` calls in mode icache) are left
//! uninstrumented (a warning): their markers could not be placed yet. Their activations are then calls into
//! untraced code.
//!
//! Tail calls: a `musttail` call is no call site. Its block is a return block, whose restore of the caller's
//! call-site state goes before the call (`ir::source_end_insertion_point`), so the callee begins at the
//! caller's caller's site, an activation there of its own when it is traced
//! (`pathprof_core::tracing::regenerate`, "Tail calls"; the blocks travel in [`TraceModuleMeta::tail_calls`]).
//! Such a function's announced entry never binds its site, and its calls are never implicit.
//!
//! The helpers these markers are written by are defined once per module by [`crate::trace_helpers`], which
//! keeps each site's common path inline and shares every rarer path out of line. The entry's code goes after the
//! entry block's static allocas ([`ir::entry_insertion_point`]), and calls from `available_externally` bodies to
//! traced functions stay calls ([`keep_calls_from_external_copies`]).
//!
//! With `PATHPROF_TRACE_NAIVE=1` (`Config::trace_naive`) the module writes the second method instead: at the
//! start of every block one 64-bit item (the block, and the function's trace id above it), no decisions and no
//! markers (`trace_layout`, "Naive tracing"); the thread state is kept as in bit tracing.

use crate::cfg_build::{self, CallFacts, FunctionGraph};
use crate::config::Config;
use crate::globals::{append_to_global_list, metadata_blob, module_init_function, runtime_function, InitKind};
use crate::identity::ModuleIdentity;
use crate::ir;
use crate::module_emitter::{function_meta, LeftOut};
use crate::names::INSTRUMENTED_MARK;
use crate::trace_helpers;
use inkwell::llvm_sys::comdat::{LLVMGetOrInsertComdat, LLVMSetComdat};
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::{LLVMAtomicOrdering, LLVMLinkage, LLVMOpcode, LLVMThreadLocalMode, LLVMVisibility};
use pathprof_core::tracing::deferred::{deferred_loops, DeferredLoop};
use pathprof_core::tracing::view::CallSites;
use pathprof_core::tracing::{FuncTables, WitnessPlan};
use pathprof_core::{BlockId, EdgeKind};
use pathprof_format::meta::{Mode, ModuleMeta};
use pathprof_format::symbols;
use pathprof_format::trace::{function_tables, TraceModuleMeta};
use pathprof_format::trace_layout::{
    stream_order, ABANDON_ID, CALLEE_CERTAIN, DESC_NAIVE, STATE_CERTAIN, TLS_CALLEE, TLS_STATE, TLS_WORDS,
    TRACE_VERSION,
};
use std::collections::{BTreeMap, HashMap};
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
    /// Blocks that end in a `musttail` call (no call site: the activation ends there, [`TraceModuleMeta::tail_calls`]).
    tail_calls: Vec<u32>,
    /// Loops whose test's bits are written at the loop's exit (none in naive tracing and mode icache).
    deferred: Vec<DeferredLoop>,
}

/// Why an `ifunc` resolver, and what it calls in the module, is left untraced.
const WHILE_LOADING: &str = "an ifunc resolver or a function it calls: it runs while the program is being loaded, \
                             before its thread state exists (a static program crashed)";

/// The module's `ifunc` resolvers and the module functions they call, directly or not: they run during
/// relocation, before thread-local storage is set up in a static program and before the runtime is.
fn run_while_loading(m: LLVMModuleRef) -> std::collections::HashSet<LLVMValueRef> {
    let mut todo = Vec::new();
    // SAFETY: walking a live module's ifunc list.
    unsafe {
        let mut i = LLVMGetFirstGlobalIFunc(m);
        while !i.is_null() {
            let resolver = LLVMIsAFunction(LLVMGetGlobalIFuncResolver(i));
            if !resolver.is_null() {
                todo.push(resolver);
            }
            i = LLVMGetNextGlobalIFunc(i);
        }
    }
    let mut seen = std::collections::HashSet::new();
    while let Some(f) = todo.pop() {
        if ir::is_declaration(f) || !seen.insert(f) {
            continue;
        }
        for inst in ir::blocks(f).into_iter().flat_map(ir::instructions) {
            if matches!(ir::opcode(inst), LLVMOpcode::LLVMCall | LLVMOpcode::LLVMInvoke) {
                todo.extend(ir::called_function(inst));
            }
        }
    }
    seen
}

/// Whether `inst` is a call site: a call or `invoke` that may run traced code or jump (not inline asm, not an
/// intrinsic but a coroutine's resumption and `__builtin_setjmp`/`__builtin_longjmp`).
fn is_call_site(inst: LLVMValueRef) -> bool {
    matches!(ir::opcode(inst), LLVMOpcode::LLVMCall | LLVMOpcode::LLVMInvoke)
        && !ir::calls_inline_asm(inst)
        && ir::called_function(inst).is_none_or(|f| ir::intrinsic_id(f) == 0 || ir::intrinsic_is_call_site(f))
}

/// Plans one function (no IR changes); `defer`: look for deferred loops.
fn plan(f: LLVMValueRef, facts: &CallFacts, icache: bool, defer: bool) -> Result<Planned, String> {
    let graph = cfg_build::build(f, facts).map_err(|u| u.0)?;
    let mut calls = Vec::with_capacity(graph.blocks.len());
    let mut twice = Vec::with_capacity(graph.blocks.len());
    let mut invokes = Vec::new();
    let mut tail_calls = Vec::new();
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
                // Mode icache would have to follow the machine code's jump into the callee.
                LLVMOpcode::LLVMCall if ir::is_musttail(inst) && icache => {
                    return Err("`musttail` calls are not simulated yet (mode icache)".into())
                }
                // The activation ends before the call, which the callee's activation replaces: no call site.
                LLVMOpcode::LLVMCall if ir::is_musttail(inst) => tail_calls.push(bi as u32),
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
    let (plan, tables) = function_tables(&graph.cfg, &counts, &invokes, &tail_calls)?;
    let deferred = if defer { deferred_loops_of(&graph, &counts, &invokes, &plan)? } else { Vec::new() };
    Ok(Planned { f, graph, plan, tables, calls, twice, invokes, tail_calls, deferred })
}

/// The loops of `graph` whose test's bits the writer holds until the loop exits
/// (`pathprof_core::tracing::deferred`). Besides core's conditions, each block on the loop must end in a `br`
/// (where the test's decision is a `select` on its condition) and hold no inline asm, and be no target of an
/// `indirectbr` (whose decision is written in the target).
fn deferred_loops_of(
    graph: &FunctionGraph,
    counts: &[u32],
    invokes: &[u32],
    plan: &WitnessPlan,
) -> Result<Vec<DeferredLoop>, String> {
    let mut excluded: Vec<bool> = graph
        .blocks
        .iter()
        .map(|&bb| {
            ir::terminator(bb).is_none_or(|t| ir::opcode(t) != LLVMOpcode::LLVMBr)
                || ir::instructions(bb)
                    .into_iter()
                    .any(|i| ir::opcode(i) == LLVMOpcode::LLVMCall && ir::calls_inline_asm(i))
        })
        .collect();
    excluded.resize(graph.cfg.num_vertices(), true);
    for &bb in &graph.blocks {
        if let Some(t) = ir::terminator(bb).filter(|&t| ir::opcode(t) == LLVMOpcode::LLVMIndirectBr) {
            for s in ir::successors(t) {
                if let Some(i) = graph.blocks.iter().position(|&x| x == s) {
                    excluded[i] = true;
                }
            }
        }
    }
    let sites = CallSites::new(&graph.cfg, counts.to_vec()).map_err(|e| e.to_string())?;
    let sites = sites.with_invokes(invokes).map_err(|e| e.to_string())?;
    Ok(deferred_loops(&graph.cfg, &sites, plan, &excluded))
}

/// Instruments `candidates` of `m` for tracing; returns whether the module changed.
pub fn instrument(
    m: LLVMModuleRef,
    candidates: &[LLVMValueRef],
    fam: *mut std::os::raw::c_void,
    config: &Config,
    identity: ModuleIdentity,
) -> Result<bool, String> {
    // Mode icache: the blocks codegen will number, predicted on the plain IR (`isel_blocks`), then the traced
    // blocks made the machine blocks' (see `branch_split`).
    let mut isel_predicted = HashMap::new();
    if config.optimizer_last {
        for &f in candidates {
            if let Some(p) = crate::isel_blocks::predict(f, fam) {
                isel_predicted.insert(f, (p, ir::blocks(f)));
            }
        }
        for &f in candidates {
            crate::branch_split::split_merged_conditions(f);
        }
    }
    let facts = CallFacts::new(m).without_coroutines(crate::cfg_build::COROUTINE_TRACED);
    let mut planned = Vec::new();
    let mut left_out = LeftOut::default();
    let loading = run_while_loading(m);
    for &f in candidates {
        if loading.contains(&f) {
            left_out.record(&identity.name, f, WHILE_LOADING);
            continue;
        }
        // Deferred loops only where the bits are decisions (not the naive method's items) at the front end's
        // blocks (not mode icache, whose traced code stays as close to the plain build's as it can).
        let defer = !config.trace_naive && !config.optimizer_last;
        match catch_unwind(AssertUnwindSafe(|| plan(f, &facts, config.optimizer_last, defer))) {
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
    let untraced_calls = calls_in_untraced_bodies(m, &planned);
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
            path_loop_resets: pathprof_core::ball_larus::ResetRule::None,
            compilation_dirs: crate::identity::compilation_dirs(m),
        },
        calls: planned.iter().map(|p| p.calls.iter().map(|c| c.len() as u32).collect()).collect(),
        optimizer_last: config.optimizer_last,
        invokes: planned.iter().map(|p| p.invokes.clone()).collect(),
        kept_calls: kept_calls(&planned, &untraced_calls),
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
        isel: planned
            .iter()
            .map(|p| {
                isel_predicted.get(&p.f).map_or_else(Default::default, |(predicted, original)| {
                    crate::isel_blocks::machine_ids(predicted, original, &p.graph.blocks)
                })
            })
            .collect(),
        tail_calls: planned.iter().map(|p| p.tail_calls.clone()).collect(),
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
    for &call in &untraced_calls {
        ir::withdraw_memory_promises(call);
    }
    let binds: Vec<bool> = planned.iter().map(|p| p.tables.binds_its_site()).collect();
    for (index, p) in planned.iter().enumerate() {
        let sites = Sites { direct: &direct[index], copy: &implicit[index], certain: &certain[index], binds: &binds };
        branches += unsafe { emitter.function(p, &sites, index as u64, &mut site) };
        ir::mark_instrumented(p.f, INSTRUMENTED_MARK);
    }
    ir::add_named_metadata(m, INSTRUMENTED_MARK);
    if config.stats {
        eprintln!(
            "pathprof: stats: module={} mode=trace functions={} call_sites={site} implicit_calls={} certain_calls={} predicates={branches} deferred_loops={}",
            identity.name,
            planned.len(),
            implicit.iter().flatten().flatten().filter(|&&q| q).count(),
            certain.iter().flatten().flatten().filter(|&&q| q).count(),
            planned.iter().map(|p| p.deferred.len()).sum::<usize>()
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
/// the exception goes on to a landing pad whose unwind marker the caller's site must read — nor for one with a
/// tail call, whose callee's activation follows at the site.
fn certain_sites(
    planned: &[Planned],
    direct: &[Vec<Vec<Option<u32>>>],
    copies: &[Vec<Vec<bool>>],
) -> Vec<Vec<Vec<bool>>> {
    let sure: Vec<bool> =
        planned.iter().map(|p| ir::runs_own_definition(p.f) && !resumes(p) && p.tail_calls.is_empty()).collect();
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

/// The call sites in the module's function bodies that are not traced here — `available_externally` copies
/// (a header's `extern inline` function: GMP's `mpz_perfect_square_p` from `gmp.h`), functions left out — which
/// the optimiser may inline into traced code after instrumentation. Their calls lose their memory promises as
/// traced code's do: a `pure` callee in another module (`mpn_perfect_square_p`) is traced there and writes the
/// thread's trace state, and with its `memory(read)` kept, the traced caller that the copy was inlined into
/// kept its bit accumulator and call-site state in registers across the call — the callee's bits (and its
/// entry in the entry cache) were lost, or spliced into the stream when the callee filled a word, which the
/// reader then took for an entry of an empty cache slot (`activation of unknown function 4294967295`).
fn calls_in_untraced_bodies(m: LLVMModuleRef, planned: &[Planned]) -> Vec<LLVMValueRef> {
    let traced: std::collections::HashSet<LLVMValueRef> = planned.iter().map(|p| p.f).collect();
    ir::functions(m)
        .into_iter()
        .filter(|&f| {
            !ir::is_declaration(f)
                && !traced.contains(&f)
                && !ir::fn_has_string_attr(f, INSTRUMENTED_MARK)
                && !ir::name(f).starts_with(symbols::PREFIX)
        })
        .flat_map(ir::blocks)
        .flat_map(ir::instructions)
        .filter(|&i| is_call_site(i))
        .collect()
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
    /// Per planned function: whether its announced entry binds the site ([`FuncTables::binds_its_site`], the
    /// test `enter`'s `binds` makes): otherwise (an unwind edge, a tail call) its return never ends a direct
    /// call site, and the site's return is a plain `done`, without the test for a flagged state. (Not
    /// [`resumes`], which asks for a `resume` terminator.)
    binds: &'a [bool],
}

impl Sites<'_> {
    /// Whether call `k` of block `b` calls a traced function directly whose announced entry there binds the site
    /// (it cannot resume): only then may the site find its state flagged on return (`done_direct`).
    fn binding_callee(&self, b: usize, k: usize) -> bool {
        self.direct[b][k].is_some_and(|g| self.binds[g as usize])
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
fn kept_calls(planned: &[Planned], untraced_calls: &[LLVMValueRef]) -> Vec<String> {
    let mut names: Vec<String> = planned
        .iter()
        .flat_map(|p| p.calls.iter().flatten())
        .chain(untraced_calls)
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
    /// put_loop(stay, exit, count): a deferred loop's bits at its exit.
    put_loop: LLVMValueRef,
    tls: LLVMValueRef,
    builder: LLVMBuilderRef,
    /// The module descriptor (its `base` field is the module's first trace id) and its type.
    desc: LLVMValueRef,
    desc_ty: LLVMTypeRef,
    put_ty: LLVMTypeRef,
    /// Naive tracing: block items instead of decisions and markers.
    naive: bool,
    /// The optimiser runs after the instrumentation (it is not at OptimizerLast): see [`Emitter::fence_after`].
    optimised_after: bool,
}

impl Drop for Emitter {
    fn drop(&mut self) {
        unsafe { LLVMDisposeBuilder(self.builder) };
    }
}

impl Emitter {
    /// Emits the thread state, the descriptor with the metadata, its constructor and destructor, and the
    /// helpers.
    unsafe fn new(m: LLVMModuleRef, meta: &TraceModuleMeta, naive: bool) -> Emitter {
        let ctx = LLVMGetModuleContext(m);
        let i32t = LLVMInt32TypeInContext(ctx);
        let i64t = LLVMInt64TypeInContext(ctx);
        let ptrt = LLVMPointerTypeInContext(ctx, 0);
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
        for (fname, list, sym, kind) in [
            (symbols::MODULE_CTOR, "llvm.global_ctors", symbols::TRACE_REGISTER, InitKind::Constructor),
            (symbols::MODULE_DTOR, "llvm.global_dtors", symbols::TRACE_UNREGISTER, InitKind::Destructor),
        ] {
            let callee = runtime_function(m, sym, ptrt);
            let f = module_init_function(m, fname, kind);
            LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, f, c"entry".as_ptr()));
            let mut args = [desc];
            LLVMBuildCall2(b, LLVMGlobalGetValueType(callee), callee, args.as_mut_ptr(), 1, c"".as_ptr());
            LLVMBuildRetVoid(b);
            append_to_global_list(m, list, f, crate::globals::CTOR_PRIORITY);
        }

        let h = trace_helpers::build(m, b, tls, desc, desc_ty, naive);
        Emitter {
            m,
            ctx,
            i64t,
            put: h.put,
            enter: h.enter,
            done: h.done,
            done_direct: h.done_direct,
            done_certain: h.done_certain,
            resync: h.resync,
            unwind: h.unwind,
            put_loop: h.put_loop,
            tls,
            builder: b,
            desc,
            desc_ty,
            put_ty: h.put_ty,
            naive,
            optimised_after: !meta.optimizer_last,
        }
    }

    /// Before the code after call site `call`: a signal fence (a compiler barrier, no instruction) when the call
    /// is to a declaration. The optimiser takes a declaration with a C library name for that function (LLVM's
    /// `inferattrs`: `getenv`, `strlen` only read memory), and would carry the thread state's words across the
    /// call, from the stores before it to the loads after it — but a program may define the function itself,
    /// traced (bash's `getenv`), whose entry writes those words: every bash trace was corrupt (the caller's
    /// Done went on from the accumulator before the call, its callee's bits lost). The fence makes the loads
    /// read memory. Not needed when the instrumentation runs after the optimiser.
    unsafe fn fence_after(&self, call: LLVMValueRef) {
        let declared = ir::called_function(call).is_some_and(|f| LLVMIsDeclaration(f) != 0);
        if self.optimised_after && declared {
            LLVMBuildFence(self.builder, LLVMAtomicOrdering::LLVMAtomicOrderingSequentiallyConsistent, 1, c"".as_ptr());
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
                let value = stream_order(value, width);
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
        // A function that can neither resume nor tail-call (core's test, the reader's too): its return after an
        // announced entry ends the site.
        let binds = if p.tables.binds_its_site() { STATE_CERTAIN } else { 0 };
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
                let (block, id) =
                    (c(stream_order(bi as u64, 32)), trace_helpers::in_stream_order(self.m, b, id, c(32)));
                LLVMBuildCall2(b, self.put_ty, self.put, [block, c(32)].as_mut_ptr(), 2, c"".as_ptr());
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
            let (at, _) = on_edge(inst, 0);
            LLVMPositionBuilderBefore(b, at);
            self.fence_after(inst);
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
                self.fence_after(inst);
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
                // Before a `musttail` call too: its callee begins at the caller's call site.
                LLVMPositionBuilderBefore(b, ir::source_end_insertion_point(bb).expect("a block has a terminator"));
                LLVMBuildStore(b, saved, pstate);
            }
            if traced.len() < 2 || self.naive {
                continue;
            }
            predicates += 1;
            if p.deferred.iter().any(|l| l.test == v) {
                continue; // written at the loop's exit ([`Self::deferred_loops`])
            }
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
            let value: Vec<u64> = value.into_iter().map(|x| stream_order(x, width)).collect();
            match ir::opcode(term) {
                LLVMOpcode::LLVMBr | LLVMOpcode::LLVMSwitch => self.decision_on_edges(term, &value, width),
                _ => unreachable!("planning refused other multi-way terminators"),
            }
        }
        self.deferred_loops(p);
        predicates
    }

    /// A predicate's decision (`br` or `switch`), written on each of its edges: the constant bits `value[i]`
    /// (stream order, `width` bits) of successor slot `i` at the start of its target, or of a block split into
    /// the edge when the target has other predecessors. The same bits as a value selected before the
    /// terminator, without materialising the condition (a two-way decision: 3 instructions fewer) or a compare
    /// and select per case (an 11-way interpreter switch: 20 instructions fewer).
    unsafe fn decision_on_edges(&self, term: LLVMValueRef, value: &[u64], width: u64) {
        let b = self.builder;
        let c = |v: u64| LLVMConstInt(self.i64t, v, 0);
        LLVMPositionBuilderBefore(b, term);
        let location = LLVMGetCurrentDebugLocation2(b);
        for (slot, &v) in value.iter().enumerate() {
            let (at, _) = on_edge(term, slot as u32);
            LLVMPositionBuilderBefore(b, at);
            LLVMSetCurrentDebugLocation2(b, location);
            LLVMBuildCall2(b, self.put_ty, self.put, [c(v), c(width)].as_mut_ptr(), 2, c"".as_ptr());
        }
    }

    /// Each deferred loop counts its test's stay edges in a register — a PHI in the header, 0 on entry, one
    /// more per iteration — and writes them on its exit edge with the exit bit, through `put_loop`: the bits
    /// the test would have written one by one (`pathprof_core::tracing::deferred`).
    unsafe fn deferred_loops(&self, p: &Planned) {
        let b = self.builder;
        let c = |v: u64| LLVMConstInt(self.i64t, v, 0);
        let cfg = &p.graph.cfg;
        let bb = |v: BlockId| p.graph.blocks[v.index()];
        // Every block's predecessors, one entry per edge, found in one scan and kept up to date as exit edges
        // are split below (an inner loop's exit may enter an outer loop's header).
        let mut preds_of: HashMap<LLVMBasicBlockRef, Vec<LLVMBasicBlockRef>> = HashMap::new();
        for q in ir::blocks(p.f) {
            for s in ir::terminator(q).map(ir::successors).unwrap_or_default() {
                preds_of.entry(s).or_default().push(q);
            }
        }
        for l in &p.deferred {
            let (header, test) = (bb(l.header), bb(l.test));
            let term = ir::terminator(test).expect("a deferred loop's test ends in a br");
            let value = |e| c(u64::from(p.plan.value(e).expect("a deferred loop's test writes one bit")));
            let EdgeKind::Branch { succ } = cfg.edge(l.exit).kind else { unreachable!("core takes branches only") };
            // The header's predecessors now (earlier splits included): its latch brings the next count; every
            // other enters with 0.
            let latch = bb(cfg.edge(l.back).from);
            let preds = preds_of.get(&header).cloned().unwrap_or_default();
            // The writes get the test's source location.
            LLVMPositionBuilderBefore(b, term);
            let location = LLVMGetCurrentDebugLocation2(b);
            // PHIs go before the first instruction's debug records, without a location.
            LLVMPositionBuilderBeforeInstrAndDbgRecords(b, LLVMGetFirstInstruction(header));
            LLVMSetCurrentDebugLocation2(b, std::ptr::null_mut());
            let stays = LLVMBuildPhi(b, self.i64t, c"pathprof.stays".as_ptr());
            LLVMPositionBuilderBefore(b, term);
            let next = LLVMBuildAdd(b, stays, c(1), c"pathprof.stays.next".as_ptr());
            for &q in &preds {
                let mut v = [if q == latch { next } else { c(0) }];
                let mut from = [q];
                LLVMAddIncoming(stays, v.as_mut_ptr(), from.as_mut_ptr(), 1);
            }
            let target = LLVMGetSuccessor(term, succ);
            let (at, split) = on_edge(term, succ);
            if !split.is_null() {
                // The edge test→target is now test→split→target.
                if let Some(q) = preds_of.get_mut(&target).and_then(|v| v.iter_mut().find(|q| **q == test)) {
                    *q = split;
                }
                preds_of.entry(split).or_default().push(test);
            }
            LLVMPositionBuilderBefore(b, at);
            LLVMSetCurrentDebugLocation2(b, location);
            let mut args = [value(l.stay), value(l.exit), stays];
            LLVMBuildCall2(b, LLVMGlobalGetValueType(self.put_loop), self.put_loop, args.as_mut_ptr(), 3, c"".as_ptr());
        }
    }
}

/// Where code that runs on the edge to successor `succ` of `term` goes, and the block split into the edge
/// (null when the edge is not critical: its target has this edge as its only way in, and the code goes first
/// in the target).
unsafe fn on_edge(term: LLVMValueRef, succ: u32) -> (LLVMValueRef, LLVMBasicBlockRef) {
    let split = crate::shim::pathprof_shim_split_edge(term, succ);
    let at = if split.is_null() {
        ir::first_insertion_point(LLVMGetSuccessor(term, succ)).expect("a block has a terminator")
    } else {
        ir::terminator(split).expect("a split block branches on")
    };
    (at, split)
}
