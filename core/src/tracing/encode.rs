//! The encoder side: from what a traced thread did to the decisions the regenerator will ask for.
//!
//! This is the model the runtime implements with instrumentation: an edge that writes a witness emits its
//! value; a function entry emits `Enter(f)` (announced at a fresh direct call site: `regenerate`, "Direct
//! calls"); the return of a call site emits `Done` (and so does the end of the thread), except where the
//! announced callee's return ended it; an implicit call site emits neither (`regenerate`, "Implicit calls"); a return of a function whose placement lets a predicate reach EXIT witness-free emits EOF.
//! Every encoding is a [`SymbolSink`] paired with a [`super::regenerate::DecisionSource`] that reads the same
//! symbols in the same contexts.

use super::tables::{FuncTables, Program, NONE};
use super::FuncId;
use crate::graph::{BlockId, EdgeId};

/// One thing a traced thread did, in execution order.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// An activation of a traced function began (at its entry block).
    Enter(FuncId),
    /// The current activation crossed this edge of its CFG (an edge into EXIT is its return).
    Edge(EdgeId),
    /// A call site of the current activation returned (after zero or more activations of traced functions).
    CallReturned,
}

/// Where an encoder writes symbols; the context arguments are the ones the decoder will have.
pub trait SymbolSink {
    /// A witness `value` of `f`; `v` is the source of the edge that wrote it (EXIT for EOF), `width` its
    /// token width there.
    fn witness(&mut self, f: FuncId, v: BlockId, width: u8, value: u32);
    /// An activation of `f` begins; `announced`: the callee of a fresh direct call site there
    /// (`regenerate`, "Direct calls").
    fn enter(&mut self, f: FuncId, announced: Option<FuncId>, func_bits: u8);
    /// The current call site (or, at the top level, the thread) is done; `announced` as for `enter`.
    fn done(&mut self, announced: Option<FuncId>, func_bits: u8);
}

/// Why events could not be encoded (they do not describe an execution of the program).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// An event at position `index` does not fit the activation stack or the CFG.
    #[error("event {index} does not fit the execution")]
    BadEvent {
        /// Position in the event list.
        index: usize,
    },
}

/// Encodes one thread's events into `sink` and ends the thread (top-level Done).
pub fn encode<S: SymbolSink>(program: &Program, events: &[Event], sink: &mut S) -> Result<(), EncodeError> {
    // Current activations, innermost last.
    let mut stack: Vec<Activation> = Vec::new();
    let calls = |f: FuncId, v: BlockId| program.funcs[f.index()].calls[v.index()];
    for (index, &ev) in events.iter().enumerate() {
        let bad = EncodeError::BadEvent { index };
        match ev {
            Event::Enter(f) => {
                let t = program.func(f).ok_or(bad.clone())?;
                let top = stack.last();
                let quiet = top.and_then(|a| a.implicit(program));
                let announced = top.and_then(|a| a.announced(program));
                if let Some(a) = top {
                    // An implicit site runs its callee once, and nothing else; a bound site nothing after it.
                    if a.done >= calls(a.func, a.vertex) || a.bound || quiet.is_some_and(|c| c != f || a.began) {
                        return Err(bad);
                    }
                }
                if quiet.is_none() {
                    sink.enter(f, announced, program.func_bits);
                }
                if let Some(top) = stack.last_mut() {
                    top.began = true;
                    top.bound = announced == Some(f) && t.binds_its_site();
                }
                stack.push(Activation { func: f, vertex: t.entry, done: 0, began: false, bound: false });
            }
            Event::CallReturned => {
                let top = stack.last().ok_or(bad.clone())?;
                let announced = top.announced(program);
                let quiet = top.implicit(program).is_some() || top.bound;
                if top.done >= calls(top.func, top.vertex) || (top.implicit(program).is_some() && !top.began) {
                    return Err(bad);
                }
                if !quiet {
                    sink.done(announced, program.func_bits);
                }
                let top = stack.last_mut().expect("checked above");
                top.done += 1;
                top.began = false;
                top.bound = false;
            }
            Event::Edge(e) => {
                let a = stack.last_mut().ok_or(bad.clone())?;
                let (f, v) = (a.func, a.vertex);
                let t: &FuncTables = &program.funcs[f.index()];
                if t.edge_from.get(e.index()) != Some(&v) || a.done != t.calls[v.index()] || !t.traces(e) {
                    return Err(bad);
                }
                a.done = 0;
                let w = t.edge_witness[e.index()];
                if w != NONE {
                    sink.witness(f, v, t.verts[v.index()].width, w);
                }
                a.vertex = t.edge_to[e.index()];
                if a.vertex == t.exit {
                    if t.eof != NONE {
                        sink.witness(f, t.exit, t.verts[t.exit.index()].width, t.eof);
                    }
                    stack.pop();
                }
            }
        }
    }
    if !stack.is_empty() {
        return Err(EncodeError::BadEvent { index: events.len() });
    }
    sink.done(None, program.func_bits);
    Ok(())
}

/// One activation of the encoder's stack.
struct Activation {
    func: FuncId,
    /// Its current vertex.
    vertex: BlockId,
    /// Call sites of the vertex already returned.
    done: u32,
    /// An activation began at the current call site.
    began: bool,
    /// That activation is the site's announced callee, which cannot resume: the site's Done is not written
    /// (`regenerate`, "Direct calls").
    bound: bool,
}

impl Activation {
    /// The callee announced where the next activation is read: a fresh direct call site's.
    fn announced(&self, program: &Program) -> Option<FuncId> {
        if self.began {
            return None;
        }
        program.funcs[self.func.index()].direct_callee(self.vertex, self.done)
    }

    /// The callee of the current call site if the call is implicit there.
    fn implicit(&self, program: &Program) -> Option<FuncId> {
        program.funcs[self.func.index()].implicit_callee(self.vertex, self.done)
    }
}
