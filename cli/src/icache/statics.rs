//! The static cache simulation of the simulated functions' machine code (`pathprof_core::cache::classify` over
//! `machine_model`), which lets the replay simulate only the conflict references.
//!
//! The model: every simulated function (mapped, not failed at run time) with its real machine blocks, cut at
//! calls, and its real addresses; a direct call to a simulated function is a call of the model, every other
//! call (libc, functions not simulated, indirect calls) is foreign code. Foreign code fetches nothing the cache
//! sees — exactly what the replay's cache sees too, which simulates the simulated functions' fetches only — and
//! may call the *callbacks*: the simulated functions the run entered other than by a direct call from a
//! simulated function (from the C runtime, a function not simulated, an indirect call, a library calling back).
//! The run starts in foreign code with a cold cache; threads and processes simulated one after another start
//! there too. The categories are computed for this model; the replay checks that the run stays in it (each
//! walk is a sequence of UPs, each entry has an instance) and otherwise falls back to simulating every fetch.

use super::binary::MachineFunction;
use pathprof_core::cache::classify::{classify, CachePlan};
use pathprof_core::cache::instances::DEFAULT_INSTANCE_BUDGET;
use pathprof_core::cache::machine_model::{foreign_start, model_function, MachineCode, Segments};
use pathprof_core::cache::program::{CallTarget, Geometry, Program};
use pathprof_core::melski_reps::program::ProcId;

/// The classified model and how the trace's functions map onto it.
pub struct Model {
    /// The static cache simulation.
    pub plan: CachePlan,
    /// Per traced function (`FuncId` index): its model function.
    pub proc_of: Vec<Option<ProcId>>,
    /// Per model function: the trace's function (`None` for the start).
    pub func_of: Vec<Option<usize>>,
    /// Per model function: where its machine blocks' segments are (the start's is empty).
    pub segments: Vec<Option<Segments>>,
    /// Per model function: per model block, whether it ends in a call into foreign code.
    pub foreign_call: Vec<Vec<bool>>,
}

/// Builds and classifies the model. `simulated[f]` is traced function `f`'s machine code when it is simulated;
/// `direct[f]` maps a call target address to the simulated function a direct call there enters;
/// `callbacks[f]` says whether `f` was entered other than by such a call.
pub fn build(
    simulated: &[Option<&MachineFunction>],
    names: &[String],
    direct: &dyn Fn(Option<u64>) -> Option<usize>,
    callbacks: &[bool],
    geometry: &Geometry,
) -> Model {
    let mut proc_of = vec![None; simulated.len()];
    let mut func_of = vec![None];
    for (f, m) in simulated.iter().enumerate() {
        if m.is_some() {
            proc_of[f] = Some(ProcId(func_of.len() as u32));
            func_of.push(Some(f));
        }
    }
    let mut functions = vec![foreign_start()];
    let mut segments = vec![None];
    for &f in func_of.iter().flatten() {
        let m = simulated[f].expect("numbered above");
        let code: Vec<MachineCode<'_>> = m
            .code
            .iter()
            .zip(&m.blocks)
            .map(|(c, b)| MachineCode {
                insns: &c.insns,
                calls: c
                    .calls
                    .iter()
                    .map(|k| {
                        let target = direct(k.target).and_then(|g| proc_of[g]);
                        (k.index, target.map_or_else(CallTarget::foreign, CallTarget::direct))
                    })
                    .collect(),
                succs: b.succs.as_deref(),
            })
            .collect();
        let (function, s) = model_function(&names[f], &code);
        functions.push(function);
        segments.push(Some(s));
    }
    let foreign_call = functions
        .iter()
        .map(|f| f.blocks.iter().map(|b| b.call.as_ref().is_some_and(|c| c.foreign)).collect())
        .collect();
    let cbs: Vec<ProcId> = (0..simulated.len()).filter(|&f| callbacks[f]).filter_map(|f| proc_of[f]).collect();
    let program = Program::new(functions, ProcId(0), cbs).expect("the model names only its own functions");
    let plan = classify(&program, geometry, DEFAULT_INSTANCE_BUDGET);
    Model { plan, proc_of, func_of, segments, foreign_call }
}

/// Direct-call targets: an address that is exactly one traced function's entry.
pub fn direct_targets(address: &[Option<u64>]) -> std::collections::HashMap<u64, Option<usize>> {
    let mut m: std::collections::HashMap<u64, Option<usize>> = std::collections::HashMap::new();
    for (f, a) in address.iter().enumerate() {
        if let Some(a) = *a {
            m.entry(a).and_modify(|x| *x = None).or_insert(Some(f));
        }
    }
    m
}
