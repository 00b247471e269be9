//! Optimal control-flow tracing: an exact, ordered trace of the blocks a program ran, written only at
//! *witnesses*, and its regeneration (Ball & Larus, "Optimally Profiling and Tracing Programs", TOPLAS 16(3),
//! 1994, §4 and §6.2; Ball's thesis, 1993, §3.2 and §3.4.2).
//!
//! The modules follow the pipeline:
//! 1. [`view`]: the edges tracing follows, predicates, and the call sites a callee's trace interleaves with.
//! 2. [`placement`]: blocking witnesses, then the chords of a maximum spanning tree; or bit tracing.
//! 3. [`check`]: Trace(Ewit) and the blocking property, by the papers' definitions (negative answers included).
//! 4. [`tables`]: dense per-function rows, so that regenerating a block is one table lookup; [`deferred`]:
//!    the loops whose bits the writer may hold until the loop exits (the stream is the same).
//! 5. [`encode`]: what a traced thread did (entries, edges, returns of call sites) → symbols.
//! 6. [`regenerate`]: symbols → the exact block sequence, activations of callees in between their caller's
//!    blocks.
//! 7. Encodings, each a symbol sink and a decision source: [`tokens`] (the papers' token list), [`bits`]
//!    (⌈log2 n⌉ bits per witness, or per N-way predicate under bit tracing) and [`entropy`] (bit tracing's
//!    decisions range-coded ([`range_coder`]) with an earlier profile's branch probabilities).

pub mod bits;
pub mod check;
pub mod deferred;
pub mod encode;
pub mod entropy;
pub mod placement;
pub mod range_coder;
pub mod regenerate;
pub mod runs;
pub mod tables;
pub mod tokens;
pub mod view;

#[cfg(test)]
mod tests_abandon;
#[cfg(test)]
mod tests_endless_loop;
#[cfg(test)]
mod tests_paper;
#[cfg(test)]
mod tests_prop;
#[cfg(test)]
mod tests_tail_calls;
#[cfg(test)]
mod tests_unwind;

crate::graph::typed_index!(
    /// A traced function of a program: its index in [`Program`], and its id in a trace.
    FuncId,
    "f"
);

pub use bits::{BitReader, BitTrace, BitWriter, EntryCache};
pub use check::{check_blocking, check_trace, witness_set, TraceViolation, WitnessOf};
pub use encode::{encode, EncodeError, Event, SymbolSink};
pub use entropy::{EntropyModels, EntropySink, EntropySource, ModelError};
pub use placement::{
    bit_tracing, bit_tracing_with, blockers, place_witnesses, Blocking, PlacementError, Scheme, WitnessPlan,
};
pub use regenerate::{
    regenerate, regenerate_from, Abandon, BadResume, DecisionSource, RegenError, ResumePoint, Resync, StepSink,
    StreamError, Unwind, Waiting,
};
pub use runs::RunStep;
pub use tables::{FuncTables, Program, TablesError};
pub use tokens::{Token, TokenSink, TokenSource};
pub use view::{CallSites, CallSitesMismatch, InvokeMismatch};
