//! Differencing two versions of a whole translation unit (issue #22, thesis ch. 7): the statement graphs the pass
//! writes for each version ([`ModuleStatements`]), the correspondence between their vertices, and [`diff_program`],
//! which runs [`super::diff`] on every function and carries changes across calls and initial memory.
//!
//! **The correspondence** is the thesis's "same statement": a NEW vertex corresponds to an OLD vertex on the
//! corresponding source line (line correspondence comes from a text diff of the two sources, given as
//! a [`LineMap`]) with the same [`Stmt::key`] — opcode, type and every non-vertex operand (constants, globals,
//! arguments) — the `n`-th such vertex of the line to the `n`-th. A pair whose vertex operands do not correspond
//! position by position (`a - b` against `b - a` from a changed macro) is dropped. So corresponding vertices
//! compute the same function of corresponding inputs, and the text diff only decides precision, never soundness.
//!
//! **Beyond one function** ([`super::diff`] is intraprocedural; calls are summarised): a function is *changed*
//! when any of its vertices may differ or it is new; a call that may reach a changed function of the unit
//! (directly, or through a pointer when the function's address is taken) has no correspondent, to a fixed point
//! over the call graph. A global whose initial value changed makes the vertices that name it lose their
//! correspondents; if its address is taken, so do all vertices that read memory through pointers. Functions of
//! other translation units and libraries are assumed unchanged.

use super::diff::{diff, Behaviour, DiffError};
use super::program::{ProgramGraph, StmtId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};

/// One version of a translation unit as the pass saw it (unoptimised IR): what `pathprof diff-program` compares.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleStatements {
    /// The unit's source file as the compiler was given it (`source_filename`): its main file.
    pub source: String,
    /// Source files named by the statements' positions ([`Stmt::file`] indexes this).
    pub files: Vec<String>,
    /// The unit's defined global variables.
    pub globals: Vec<GlobalState>,
    /// The unit's defined functions.
    pub functions: Vec<FunctionStatements>,
}

/// A global variable's initial state, so a changed initialiser counts as a change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobalState {
    /// Its name.
    pub name: String,
    /// Its type and initial value, as text.
    pub init: String,
    /// Some use of it is not the direct address of a load or store: pointers may read it.
    pub address_taken: bool,
}

/// One function's statement graph, or why the pass could not build it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionStatements {
    /// The function's (linkage) name: what the versions' functions are matched by.
    pub name: String,
    /// Its source-level name from debug info (C++: unmangled, without parameters), for people; may be empty.
    #[serde(default)]
    pub display_name: String,
    /// Set when there is no graph (a `setjmp` caller, say): the function is reported, not compared.
    pub error: Option<String>,
    /// The augmented CFG with def/use sets (empty with `error`).
    pub graph: ProgramGraph,
    /// Per vertex of `graph` (ENTRY and EXIT included), what it is and where.
    pub stmts: Vec<Stmt>,
}

/// What one vertex is, for the correspondence.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stmt {
    /// Index into [`ModuleStatements::files`]; `None` without a source position.
    pub file: Option<u32>,
    /// Source line (0: none).
    pub line: u32,
    /// Source column (0: none); not matched (re-indenting a line moves it).
    pub col: u32,
    /// Opcode, type and non-vertex operands as text: equal keys compute the same function of their vertex operands.
    pub key: String,
    /// Per operand position, the vertex computing it (`None`: a constant, global or argument, part of `key`).
    pub operands: Vec<Option<StmtId>>,
    /// The functions of the unit it may call: its direct callee, or for a call through a pointer every function
    /// of the unit whose address is taken.
    pub callees: Vec<String>,
    /// It reads memory other than the function's own unaliased variables (it could see any global).
    pub reads_memory: bool,
    /// The globals of the unit it names directly (operands, through constant expressions too).
    pub globals: Vec<String>,
}

/// Which OLD line a NEW line corresponds to, per NEW file.
#[derive(Clone, Debug, Default)]
pub struct LineMap {
    /// NEW file name → (OLD file name, per NEW line (index = line − 1) its OLD line).
    pub files: HashMap<String, (String, Vec<Option<u32>>)>,
}

impl LineMap {
    fn old_line(&self, new_file: &str, line: u32) -> Option<(&str, u32)> {
        let (old, lines) = self.files.get(new_file)?;
        let l = (*lines.get(line.checked_sub(1)? as usize)?)?;
        Some((old.as_str(), l))
    }
}

/// What [`diff_program`] says of one function of NEW.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FunctionDiff {
    /// Not in OLD (or OLD could not be read): all of it is new.
    New,
    /// One of the versions has no graph: why.
    NotCompared(String),
    /// Per vertex of NEW's graph, its behaviour.
    Compared(Vec<Behaviour>),
}

/// The result of [`diff_program`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramDiff {
    /// Per function of NEW (in NEW's order), its name and difference.
    pub functions: Vec<(String, FunctionDiff)>,
    /// Functions of OLD that NEW no longer defines.
    pub removed: Vec<String>,
    /// Globals whose initial state differs (or that are new), with address taken: they made every pointer read
    /// differ.
    pub changed_memory: Vec<String>,
}

/// Diff(NEW, OLD) for every function of NEW, with changes carried across calls and initial memory (module docs).
pub fn diff_program(old: &ModuleStatements, new: &ModuleStatements, lines: &LineMap) -> Result<ProgramDiff, DiffError> {
    let old_fns: HashMap<&str, &FunctionStatements> = old.functions.iter().map(|f| (f.name.as_str(), f)).collect();
    let old_globals: HashMap<&str, &GlobalState> = old.globals.iter().map(|g| (g.name.as_str(), g)).collect();
    let changed_globals: BTreeSet<&str> = new
        .globals
        .iter()
        .filter(|g| old_globals.get(g.name.as_str()).is_none_or(|o| o.init != g.init))
        .map(|g| g.name.as_str())
        .collect();
    let changed_memory: Vec<String> = new
        .globals
        .iter()
        .filter(|g| changed_globals.contains(g.name.as_str()) && g.address_taken)
        .map(|g| g.name.clone())
        .collect();
    let base: Vec<Option<Vec<Option<StmtId>>>> = new
        .functions
        .iter()
        .map(|f| {
            let o = old_fns.get(f.name.as_str())?;
            let whole = |x: &FunctionStatements| x.error.is_none() && x.stmts.len() == x.graph.num_vertices();
            (whole(f) && whole(o)).then(|| correspond(old, o, new, f, lines))
        })
        .collect();
    let mut changed: BTreeSet<&str> = BTreeSet::new();
    let mut result: Vec<FunctionDiff>;
    loop {
        result = Vec::with_capacity(new.functions.len());
        for (f, corr) in new.functions.iter().zip(&base) {
            let d = match (old_fns.get(f.name.as_str()), corr) {
                (None, _) => FunctionDiff::New,
                (Some(o), None) => FunctionDiff::NotCompared(
                    f.error.clone().or_else(|| o.error.clone()).unwrap_or_else(|| "malformed statement graph".into()),
                ),
                (Some(o), Some(base)) => {
                    let mut corr = base.clone();
                    for (v, s) in f.stmts.iter().enumerate() {
                        let via_call = s.callees.iter().any(|c| changed.contains(c.as_str()));
                        let via_memory = s.reads_memory && !changed_memory.is_empty();
                        let via_global = s.globals.iter().any(|g| changed_globals.contains(g.as_str()));
                        if via_call || via_memory || via_global {
                            corr[v] = None;
                        }
                    }
                    let mut b = diff(&o.graph, &f.graph, &corr)?;
                    // A statement with a counterpart that lost it to a change elsewhere was not edited: affected.
                    for (b, c) in b.iter_mut().zip(base) {
                        if *b == Behaviour::Changed && c.is_some() {
                            *b = Behaviour::Affected;
                        }
                    }
                    FunctionDiff::Compared(b)
                }
            };
            result.push(d);
        }
        let before = changed.len();
        for (f, d) in new.functions.iter().zip(&result) {
            let differs = match d {
                FunctionDiff::Compared(b) => b.iter().any(|b| b.differs()),
                _ => true,
            };
            if differs {
                changed.insert(f.name.as_str());
            }
        }
        if changed.len() == before {
            break;
        }
    }
    let new_names: BTreeSet<&str> = new.functions.iter().map(|f| f.name.as_str()).collect();
    Ok(ProgramDiff {
        functions: new.functions.iter().map(|f| f.name.clone()).zip(result).collect(),
        removed: old
            .functions
            .iter()
            .filter(|f| !new_names.contains(f.name.as_str()))
            .map(|f| f.name.clone())
            .collect(),
        changed_memory,
    })
}

/// The source file of `s`, if it has a position.
fn file<'a>(unit: &'a ModuleStatements, s: &Stmt) -> Option<&'a str> {
    s.file.and_then(|f| unit.files.get(f as usize)).filter(|_| s.line != 0).map(String::as_str)
}

/// The 1-1 partial map from `new`'s vertices to `old`'s (module docs): same key on corresponding lines (or both
/// without a position), `n`-th to `n`-th, then pairs whose vertex operands do not correspond dropped.
pub fn correspond(
    old_unit: &ModuleStatements,
    old: &FunctionStatements,
    new_unit: &ModuleStatements,
    new: &FunctionStatements,
    lines: &LineMap,
) -> Vec<Option<StmtId>> {
    type Place<'a> = (Option<(&'a str, u32)>, &'a str);
    let mut old_at: HashMap<Place, Vec<StmtId>> = HashMap::new();
    for (v, s) in old.stmts.iter().enumerate().skip(2) {
        let at = file(old_unit, s).map(|f| (f, s.line));
        old_at.entry((at, s.key.as_str())).or_default().push(StmtId::from_index(v));
    }
    let mut used: HashMap<Place, usize> = HashMap::new();
    let mut corr = vec![None; new.stmts.len()];
    for (v, s) in new.stmts.iter().enumerate().skip(2) {
        let at = match file(new_unit, s) {
            None => None,
            Some(f) => match lines.old_line(f, s.line) {
                Some(l) => Some(l),
                None => continue,
            },
        };
        let place = (at, s.key.as_str());
        let n = used.entry(place).or_insert(0);
        corr[v] = old_at.get(&place).and_then(|vs| vs.get(*n)).copied();
        *n += 1;
    }
    let operands_correspond = |v: usize, c: StmtId| {
        let (a, b) = (&new.stmts[v].operands, &old.stmts[c.index()].operands);
        a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| match (x, y) {
                (None, None) => true,
                (Some(x), Some(y)) => corr.get(x.index()).copied().flatten() == Some(*y),
                _ => false,
            })
    };
    let keep: Vec<bool> = (0..corr.len()).map(|v| corr[v].is_some_and(|c| operands_correspond(v, c))).collect();
    for (c, k) in corr.iter_mut().zip(keep) {
        if !k {
            *c = None;
        }
    }
    corr
}
