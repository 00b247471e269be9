//! Maps a function's IR blocks (as traced) onto the machine blocks of the binary, and proves the mapping before
//! anything is simulated with it.
//!
//! The candidate: IR block `i` is the machine block whose id (`.llvm_bb_addr_map`) is `i`. Machine ids follow
//! the IR block order at instruction selection, which equals the traced order only when codegen's IR passes
//! (CodeGenPrepare, LSR, …) kept the blocks; machine passes may also drop blocks (folded into a neighbour) and
//! add blocks (ids at or beyond the IR block count). So the candidate is verified, function by function:
//!
//! 1. the entry block (IR block 0) is the machine block at the function's address, id 0;
//! 2. an IR block without a machine block is *absent*: it must be transparent (its code folded away), and is
//!    replaced by its successors wherever it is one;
//! 3. for every present IR block `A`, the set of places control reaches from `A`'s machine block through
//!    *added* blocks only — present blocks, or EXIT through a return or tail call — equals `A`'s IR successors
//!    (with absent ones replaced, `Return` edges as EXIT), and each is reached by exactly one machine path, so the
//!    added blocks an IR edge runs through are forced;
//! 4. no added block on such a path has successors the code does not show (an indirect jump).
//!
//! Conditions instruction selection splits into several branches (`&&`, `||`) reach this module already split
//! alike in the traced IR (mode icache, the pass's `branch_split`): their temporaries are ordinary IR blocks.
//!
//! A function that fails any of these is refused with the reason; its fetches are then not simulated. What this
//! does not prove: that the machine block numbered `i` holds the code of IR block `i` when a CFG automorphism
//! could swap two ids (e.g. the two arms of a symmetric diamond after codegen inserted and removed blocks). The
//! simulation adds a run-time check (each traced callee is entered from a call instruction of the current
//! machine block) that catches such swaps whenever calls tell the blocks apart.

use crate::graph::{BlockId, Cfg, EdgeKind};
use std::collections::{BTreeMap, BTreeSet};

/// The id of a block that is not in `.llvm_bb_addr_map`: alignment padding that runs on a fall-through edge.
/// Never an IR block's.
pub const PADDING_ID: u32 = u32::MAX;

/// Where control goes from a machine block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MachineSucc {
    /// Another machine block of the function (index in layout order).
    Block(usize),
    /// Leaves the function (return, tail call).
    Exit,
}

/// One machine block as the binary shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineBlock {
    /// Its `.llvm_bb_addr_map` id.
    pub id: u32,
    /// Successors, or `None` when the code does not tell them (an indirect jump).
    pub succs: Option<Vec<MachineSucc>>,
}

/// Where an IR step goes: an IR block or EXIT.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IrTarget {
    /// A real IR block.
    Block(u32),
    /// The function's EXIT.
    Exit,
}

/// A verified mapping of one function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockMapping {
    /// Per IR block: its machine block (layout index), or `None` if absent (no code of its own).
    pub machine: Vec<Option<usize>>,
    /// Per present IR block's machine block and IR target: the added machine blocks control runs through, in
    /// order (empty for a direct edge).
    pub via: BTreeMap<(usize, IrTarget), Vec<usize>>,
    /// Machine blocks that carry a copy of the one IR block their own block always goes on to (tail
    /// duplication): machine block → that IR block. Control stays in the machine block across that IR step, and
    /// `via` holds the copied block's targets from there.
    pub absorbed: BTreeMap<usize, u32>,
}

/// Why a function's blocks cannot be mapped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The entry block is not id 0 at the function's address.
    Entry,
    /// Added blocks form a cycle reachable from a present block.
    AddedCycle,
    /// An indirect jump whose targets the code does not tell.
    IndirectJump(u32),
    /// The successors of IR block `block` differ from its machine block's.
    Successors {
        /// The IR block.
        block: u32,
        /// Its IR successors (absent blocks replaced).
        ir: Vec<IrTarget>,
        /// What its machine block reaches through added blocks.
        machine: Vec<IrTarget>,
    },
    /// IR block `block` reaches a successor by more than one machine path: the IR edge does not decide the
    /// added blocks that run.
    Ambiguous {
        /// The IR block.
        block: u32,
    },
}

impl Refusal {
    /// A short name of the reason, for statistics.
    pub fn kind(&self) -> &'static str {
        match self {
            Refusal::Entry => "entry",
            Refusal::AddedCycle => "added-cycle",
            Refusal::IndirectJump(_) => "indirect-jump",
            Refusal::Successors { .. } => "successors",
            Refusal::Ambiguous { .. } => "ambiguous",
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Entry => write!(f, "the entry is not machine block 0"),
            Refusal::AddedCycle => write!(f, "codegen-added blocks form a cycle"),
            Refusal::IndirectJump(id) => write!(f, "machine block {id} ends in an indirect jump"),
            Refusal::Successors { block, ir, machine } => {
                let list = |ts: &[IrTarget]| {
                    ts.iter()
                        .map(|t| match t {
                            IrTarget::Block(b) => b.to_string(),
                            IrTarget::Exit => "exit".into(),
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                write!(
                    f,
                    "block {block}: machine successors differ from the IR's (IR: {}; machine: {})",
                    list(ir),
                    list(machine)
                )
            }
            Refusal::Ambiguous { block } => write!(f, "block {block}: a successor is reached by several machine paths"),
        }
    }
}

/// IR successors of `b` per the rules above (absent blocks replaced by theirs, transitively).
fn ir_succs(cfg: &Cfg, present: &[bool], b: u32) -> BTreeSet<IrTarget> {
    let n = cfg.num_blocks() as u32;
    let mut out = BTreeSet::new();
    let mut seen = BTreeSet::new();
    let mut stack = vec![b];
    while let Some(v) = stack.pop() {
        for e in cfg.edges().iter().filter(|e| e.from == BlockId(v)) {
            match e.kind {
                EdgeKind::Branch { .. } if e.to.0 < n && !present[e.to.index()] && seen.insert(e.to.0) => {
                    stack.push(e.to.0);
                }
                EdgeKind::Branch { .. } if e.to.0 < n && !present[e.to.index()] => {}
                EdgeKind::Branch { .. } if e.to.0 < n => {
                    out.insert(IrTarget::Block(e.to.0));
                }
                EdgeKind::Return => {
                    out.insert(IrTarget::Exit);
                }
                _ => {}
            }
        }
    }
    out
}

/// Verifies the id mapping of one function (see the module documentation). `blocks` are in layout order, the
/// first at the function's address.
pub fn map_blocks(cfg: &Cfg, blocks: &[MachineBlock]) -> Result<BlockMapping, Refusal> {
    let n = cfg.num_blocks();
    let mut machine = vec![None; n];
    for (i, m) in blocks.iter().enumerate() {
        if (m.id as usize) < n {
            machine[m.id as usize] = Some(i);
        }
    }
    if blocks.first().map(|b| b.id) != Some(0) {
        return Err(Refusal::Entry);
    }
    let present: Vec<bool> = machine.iter().map(Option::is_some).collect();
    let target_of = |i: usize| -> Option<IrTarget> {
        let id = blocks[i].id as usize;
        (id < n).then_some(IrTarget::Block(id as u32))
    };
    let mut via = BTreeMap::new();
    let mut absorbed = BTreeMap::new();
    for (a, &ma) in machine.iter().enumerate() {
        let Some(ma) = ma else { continue };
        let mut want = ir_succs(cfg, &present, a as u32);
        // All machine paths from `ma` through added blocks, to present blocks or EXIT.
        let mut found: BTreeMap<IrTarget, Vec<Vec<usize>>> = BTreeMap::new();
        let mut stack: Vec<(usize, Vec<usize>)> = vec![(ma, Vec::new())];
        while let Some((m, path)) = stack.pop() {
            let succs = blocks[m].succs.as_ref().ok_or(Refusal::IndirectJump(blocks[m].id))?;
            for &s in succs {
                match s {
                    MachineSucc::Exit => found.entry(IrTarget::Exit).or_default().push(path.clone()),
                    MachineSucc::Block(j) => match target_of(j) {
                        Some(t) if found.get(&t).is_some_and(|p| !p.is_empty()) => {
                            // A second path to one target: ambiguous whatever else is found (and stopping here
                            // keeps the enumeration to one path per target).
                            return Err(Refusal::Ambiguous { block: a as u32 });
                        }
                        Some(t) => found.entry(t).or_default().push(path.clone()),
                        None => {
                            if path.contains(&j) || path.len() > blocks.len() {
                                return Err(Refusal::AddedCycle);
                            }
                            let mut p = path.clone();
                            p.push(j);
                            stack.push((j, p));
                        }
                    },
                }
            }
        }
        let got: BTreeSet<IrTarget> = found.keys().copied().collect();
        if got != want {
            // Tail duplication: `a` always goes on to one block `b`, whose code codegen copied into `a`'s
            // machine block, which then leads where `b` does (`b` keeps its own machine block for its other
            // predecessors). Not when `b` may go on to itself: a step from the copy would not tell which.
            if let Some(&IrTarget::Block(b)) = want.iter().next().filter(|_| want.len() == 1) {
                let copied = ir_succs(cfg, &present, b);
                if b as usize != a && !copied.contains(&IrTarget::Block(b)) && got == copied {
                    absorbed.insert(ma, b);
                    want = copied;
                }
            }
        }
        if got != want {
            return Err(Refusal::Successors {
                block: a as u32,
                ir: want.into_iter().collect(),
                machine: got.into_iter().collect(),
            });
        }
        for (t, mut paths) in found {
            if paths.len() != 1 {
                return Err(Refusal::Ambiguous { block: a as u32 });
            }
            via.insert((ma, t), paths.pop().expect("one path"));
        }
    }
    Ok(BlockMapping { machine, via, absorbed })
}

/// [`map_blocks`] with the ids the pass predicted (mode icache: it ran codegen's IR passes on a copy of the
/// function, `pathprof_format::trace::IselPrediction`): machine id `k` is traced block `ids[k]`, a block
/// codegen added where that is `None`; the traced blocks `split` (conditions the pass cut as instruction
/// selection will) have ids after those, in that order — or, when instruction selection created blocks of its
/// own in between (switch lowering), each is the one new block its IR predecessor's machine block leads to. The
/// checks are [`map_blocks`]'s: a prediction is trusted only as far as the binary bears it out.
///
/// Tail duplication also copies a return block into predecessors that branch elsewhere too (a loop guard that
/// returns): such a predecessor's machine block returns where the IR goes on to the return block. Where a
/// block's successors differ only so, the return block is taken as absent — its machine block then runs as an
/// added block on the edges that still reach it — and the checks run again.
pub fn map_predicted_blocks(
    cfg: &Cfg,
    blocks: &[MachineBlock],
    ids: &[Option<u32>],
    split: &[u32],
) -> Result<BlockMapping, Refusal> {
    let in_order: Vec<Option<u32>> = ids.iter().copied().chain(split.iter().map(|&s| Some(s))).collect();
    let first = map_with_copied_returns(cfg, blocks, in_order);
    if first.is_ok() || split.is_empty() {
        return first;
    }
    match locate_split_blocks(cfg, blocks, ids, split) {
        Some(located) => map_with_copied_returns(cfg, blocks, located).or(first),
        None => first,
    }
}

/// [`map_blocks`] over `blocks` renumbered by `table` (machine id → traced block), taking return blocks that
/// tail duplication copied into predecessors as absent (see [`map_predicted_blocks`]).
fn map_with_copied_returns(
    cfg: &Cfg,
    blocks: &[MachineBlock],
    mut table: Vec<Option<u32>>,
) -> Result<BlockMapping, Refusal> {
    loop {
        let refusal = match map_blocks(cfg, &renumbered(cfg, blocks, &table)) {
            Ok(map) => return Ok(map),
            Err(refusal) => refusal,
        };
        let Refusal::Successors { ir, machine, .. } = &refusal else { return Err(refusal) };
        let copied_return = ir.iter().find_map(|t| match *t {
            IrTarget::Block(r) if !machine.contains(t) && only_returns(cfg, r) && table.contains(&Some(r)) => Some(r),
            _ => None,
        });
        match copied_return {
            Some(r) if machine.contains(&IrTarget::Exit) => {
                table.iter_mut().filter(|t| **t == Some(r)).for_each(|t| *t = None);
            }
            _ => return Err(refusal),
        }
    }
}

/// Whether IR block `b` only returns (its one way on is EXIT).
fn only_returns(cfg: &Cfg, b: u32) -> bool {
    let mut out = cfg.edges().iter().filter(|e| e.from == BlockId(b));
    matches!((out.next(), out.next()), (Some(e), None) if e.kind == EdgeKind::Return)
}

/// The id table with each split block at the machine block its IR predecessor's machine block leads to, when
/// that is the only successor with an id past `ids` not taken yet (split blocks in order: a chain's later
/// blocks follow the earlier ones), and absent when there is none (codegen kept the conditions together).
/// `None` when one cannot be placed so.
fn locate_split_blocks(
    cfg: &Cfg,
    blocks: &[MachineBlock],
    ids: &[Option<u32>],
    split: &[u32],
) -> Option<Vec<Option<u32>>> {
    let mut table: BTreeMap<u32, u32> = ids.iter().enumerate().filter_map(|(k, t)| t.map(|t| (k as u32, t))).collect();
    let layout_of = |traced: u32, table: &BTreeMap<u32, u32>| {
        blocks.iter().position(|b| b.id != PADDING_ID && table.get(&b.id) == Some(&traced))
    };
    for &s in split {
        let mut preds = cfg.edges().iter().filter(|e| e.to == BlockId(s) && matches!(e.kind, EdgeKind::Branch { .. }));
        let (Some(pred), None) = (preds.next(), preds.next()) else { return None };
        let at = layout_of(pred.from.0, &table)?;
        let mut fresh = blocks[at]
            .succs
            .as_ref()?
            .iter()
            .filter_map(|m| match *m {
                MachineSucc::Block(j) => Some(blocks[j].id),
                MachineSucc::Exit => None,
            })
            .filter(|&id| id != PADDING_ID && id as usize >= ids.len() && !table.contains_key(&id));
        match (fresh.next(), fresh.next()) {
            (Some(id), None) => {
                table.insert(id, s);
            }
            // Codegen kept the conditions together: the split block has no code (absent).
            (None, _) => {}
            (Some(_), Some(_)) => return None,
        }
    }
    let len = table.keys().next_back().map_or(0, |&k| k as usize + 1);
    Some((0..len as u32).map(|k| table.get(&k).copied()).collect())
}

/// `blocks` with each id replaced by the traced block `table` says it is (see [`map_predicted_blocks`]).
fn renumbered(cfg: &Cfg, blocks: &[MachineBlock], table: &[Option<u32>]) -> Vec<MachineBlock> {
    // Any id from the block count on is an added block to map_blocks.
    let added = cfg.num_blocks() as u32;
    blocks
        .iter()
        .map(|b| MachineBlock {
            id: match table.get(b.id as usize) {
                _ if b.id == PADDING_ID => PADDING_ID,
                Some(&Some(traced)) => traced,
                _ => added,
            },
            succs: b.succs.clone(),
        })
        .collect()
}

/// What a machine block is in a partial alignment.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Mapped(u32),
    Added,
    Undecided,
}

/// The outcome of checking one mapped IR block against a partial alignment.
enum Verdict {
    /// Holds whatever is decided later: the added blocks of each IR target.
    Pass(Vec<(IrTarget, Vec<usize>)>),
    /// Fails whatever is decided later.
    Fail,
    /// Depends on undecided blocks.
    Unknown,
}

/// A partial alignment: IR blocks `< ir_decided` and machine blocks of id rank `< rank_decided` are decided.
struct Alignment<'a> {
    cfg: &'a Cfg,
    blocks: &'a [MachineBlock],
    /// Per IR block, its direct targets (branches and returns).
    targets: Vec<Vec<IrTarget>>,
    /// Layout indices by increasing id.
    by_id: Vec<usize>,
    /// Per layout index, its position in `by_id`.
    rank: Vec<usize>,
    ir_map: Vec<Option<usize>>,
    machine_ir: Vec<Option<u32>>,
    ir_decided: usize,
    rank_decided: usize,
    /// Checks left before the search gives up.
    budget: u64,
}

impl Alignment<'_> {
    fn role(&self, j: usize) -> Role {
        match self.machine_ir[j] {
            Some(b) => Role::Mapped(b),
            None if self.rank[j] < self.rank_decided => Role::Added,
            None => Role::Undecided,
        }
    }

    fn check(&mut self, c: usize) -> Verdict {
        self.budget = self.budget.saturating_sub(1);
        let n = self.cfg.num_blocks();
        let x = self.ir_map[c].expect("only mapped blocks are checked");
        // IR side: targets through absent blocks; `definite` ones are reached through decided blocks only.
        let mut want_def = BTreeSet::new();
        let mut want_pos = BTreeSet::new();
        let mut seen = BTreeSet::new();
        let mut undecided = false;
        let mut stack = vec![(c, true)];
        while let Some((v, def)) = stack.pop() {
            for &t in &self.targets[v] {
                match t {
                    IrTarget::Exit => {
                        want_pos.insert(t);
                        if def {
                            want_def.insert(t);
                        }
                    }
                    IrTarget::Block(b) if (b as usize) < self.ir_decided => {
                        if self.ir_map[b as usize].is_some() {
                            want_pos.insert(t);
                            if def {
                                want_def.insert(t);
                            }
                        } else if seen.insert((b, def)) {
                            stack.push((b as usize, def));
                        }
                    }
                    IrTarget::Block(b) => {
                        undecided = true;
                        want_pos.insert(t);
                        if seen.insert((b, false)) {
                            stack.push((b as usize, false));
                        }
                    }
                }
            }
        }
        // Machine side: every path from `x` through added (or undecided) blocks.
        let mut found: BTreeMap<IrTarget, Vec<(Vec<usize>, bool)>> = BTreeMap::new();
        let mut stack: Vec<(usize, Vec<usize>, bool)> = vec![(x, Vec::new(), true)];
        let mut walked = 0usize;
        while let Some((m, path, def)) = stack.pop() {
            walked += 1;
            if walked > MAX_PATHS {
                // Paths through undecided blocks multiply: give up on the function (refused, never guessed).
                self.budget = 0;
                return Verdict::Unknown;
            }
            let Some(succs) = self.blocks[m].succs.as_ref() else {
                if def {
                    return Verdict::Fail;
                }
                undecided = true;
                continue;
            };
            for &s in succs {
                match s {
                    MachineSucc::Exit => found.entry(IrTarget::Exit).or_default().push((path.clone(), def)),
                    MachineSucc::Block(j) => match self.role(j) {
                        Role::Mapped(b) => found.entry(IrTarget::Block(b)).or_default().push((path.clone(), def)),
                        role => {
                            if role == Role::Undecided {
                                undecided = true;
                            }
                            if path.contains(&j) || path.len() > self.blocks.len() {
                                if def && role == Role::Added {
                                    return Verdict::Fail;
                                }
                                continue;
                            }
                            let mut p = path.clone();
                            p.push(j);
                            stack.push((j, p, def && role == Role::Added));
                        }
                    },
                }
            }
        }
        for (t, paths) in &found {
            let definite = paths.iter().filter(|p| p.1).count();
            if (definite > 0 && !want_pos.contains(t)) || definite > 1 {
                return Verdict::Fail;
            }
        }
        if want_def.iter().any(|t| !found.contains_key(t)) {
            return Verdict::Fail;
        }
        if undecided {
            return Verdict::Unknown;
        }
        let got: BTreeSet<IrTarget> = found.keys().copied().collect();
        if got != want_pos || found.values().any(|p| p.len() != 1) {
            return Verdict::Fail;
        }
        let _ = n;
        Verdict::Pass(found.into_iter().map(|(t, mut p)| (t, p.pop().expect("one path").0)).collect())
    }

    /// Checks every mapped block not yet passed; `false` if one fails. Passed blocks are recorded in `passed`
    /// (and `log`, to undo on backtracking).
    fn prune(&mut self, passed: &mut [bool], log: &mut Vec<usize>) -> bool {
        for (c, done) in passed.iter_mut().enumerate().take(self.ir_decided) {
            if *done || self.ir_map[c].is_none() {
                continue;
            }
            match self.check(c) {
                Verdict::Fail => return false,
                Verdict::Pass(_) => {
                    *done = true;
                    log.push(c);
                }
                Verdict::Unknown => {}
            }
        }
        true
    }

    /// Depth-first over IR block `a`'s choices; stops after [`MAX_SOLUTIONS`] solutions.
    fn search(&mut self, a: usize, passed: &mut Vec<bool>, solutions: &mut Vec<Vec<Option<usize>>>) {
        if solutions.len() >= MAX_SOLUTIONS || self.budget == 0 {
            return;
        }
        let n = self.cfg.num_blocks();
        if a == n {
            let saved = self.rank_decided;
            self.rank_decided = self.by_id.len() + 1;
            let mut log = Vec::new();
            let all = self.prune(passed, &mut log) && (0..n).all(|c| passed[c] || self.ir_map[c].is_none());
            if all {
                solutions.push(self.ir_map.clone());
            }
            for c in log {
                passed[c] = false;
            }
            self.rank_decided = saved;
            return;
        }
        // Ranks are 1-based (0: padding); `first` is a position in `by_id`.
        let first = self.rank_decided - 1;
        // Map `a` to the machine block of rank p (ranks first..p become added), or leave it absent.
        let choices: Vec<Option<usize>> = if a == 0 {
            vec![(first < self.by_id.len()).then_some(first)]
        } else {
            (first..self.by_id.len()).map(Some).chain([None]).collect()
        };
        for choice in choices {
            let saved = self.rank_decided;
            if let Some(p) = choice {
                let j = self.by_id[p];
                self.ir_map[a] = Some(j);
                self.machine_ir[j] = Some(a as u32);
                self.rank_decided = p + 2;
            } else if a == 0 {
                return;
            }
            self.ir_decided = a + 1;
            let mut log = Vec::new();
            if self.prune(passed, &mut log) {
                self.search(a + 1, passed, solutions);
            }
            for c in log {
                passed[c] = false;
            }
            if let Some(p) = choice {
                self.machine_ir[self.by_id[p]] = None;
                self.ir_map[a] = None;
            }
            self.rank_decided = saved;
            self.ir_decided = a;
            if solutions.len() >= MAX_SOLUTIONS || self.budget == 0 {
                return;
            }
        }
    }
}

/// Why [`align_blocks`] found no mapping it can vouch for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AlignRefusal {
    /// No order-preserving alignment passes the checks.
    None,
    /// More than one does: the IR path would not decide the machine path.
    Several,
    /// The search ran out of its budget.
    Budget,
}

impl std::fmt::Display for AlignRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AlignRefusal::None => "no alignment of IR and machine blocks passes the checks",
            AlignRefusal::Several => "several alignments of IR and machine blocks pass the checks",
            AlignRefusal::Budget => "the alignment search ran out of budget",
        })
    }
}

/// Like [`map_blocks`], without assuming machine id `i` is IR block `i`: codegen's IR passes insert blocks
/// (loop preheaders, split edges: they shift later ids) and remove some (folded into neighbours), but keep the
/// order of the rest. So every order-preserving partial matching of IR blocks to machine ids is a candidate
/// (unmatched IR blocks absent, unmatched machine blocks added), the entry fixed to id 0; the search prunes a
/// candidate as soon as one block's checks of [`map_blocks`] fail whatever is decided later, and the mapping is
/// used only if exactly one candidate passes them all. `budget` bounds the block checks.
pub fn align_blocks(cfg: &Cfg, blocks: &[MachineBlock], budget: u64) -> Result<BlockMapping, AlignRefusal> {
    if blocks.first().map(|b| b.id) != Some(0) {
        return Err(AlignRefusal::None);
    }
    let n = cfg.num_blocks();
    let exit = n as u32;
    let mut targets = vec![Vec::new(); n];
    for e in cfg.edges() {
        match e.kind {
            EdgeKind::Branch { .. } if e.to.0 < exit => targets[e.from.index()].push(IrTarget::Block(e.to.0)),
            EdgeKind::Return => targets[e.from.index()].push(IrTarget::Exit),
            _ => {}
        }
    }
    for t in &mut targets {
        t.sort();
        t.dedup();
    }
    let mut by_id: Vec<usize> = (0..blocks.len()).filter(|&j| blocks[j].id != PADDING_ID).collect();
    by_id.sort_by_key(|&j| blocks[j].id);
    // Padding ranks before everything: decided, never mapped (added).
    let mut rank = vec![0; blocks.len()];
    for (p, &j) in by_id.iter().enumerate() {
        rank[j] = p + 1;
    }
    let mut al = Alignment {
        cfg,
        blocks,
        targets,
        by_id,
        rank,
        ir_map: vec![None; n],
        machine_ir: vec![None; blocks.len()],
        ir_decided: 0,
        rank_decided: 1,
        budget,
    };
    let mut solutions = Vec::new();
    al.search(0, &mut vec![false; n], &mut solutions);
    if al.budget == 0 {
        return Err(AlignRefusal::Budget);
    }
    if solutions.is_empty() {
        return Err(AlignRefusal::None);
    }
    if solutions.len() >= MAX_SOLUTIONS {
        return Err(AlignRefusal::Several);
    }
    let mut maps = Vec::with_capacity(solutions.len());
    for ir_map in solutions {
        maps.push(al.finish(ir_map).ok_or(AlignRefusal::None)?);
    }
    // Several alignments may differ only in whether a block without effect of its own (a forwarding block, a
    // return whose code codegen copied into each predecessor) is matched or absent: harmless when every IR path
    // expands into the same machine blocks under each.
    let first = maps.swap_remove(0);
    if maps.iter().all(|m| same_expansion(&al.targets, &first, m)) {
        Ok(first)
    } else {
        Err(AlignRefusal::Several)
    }
}

/// Machine paths one block check of the alignment search may walk before the search gives up.
const MAX_PATHS: usize = 20_000;

/// Solutions [`align_blocks`] collects before it calls the function ambiguous.
const MAX_SOLUTIONS: usize = 256;

impl Alignment<'_> {
    /// The full mapping of a complete alignment, with the added blocks of every IR step.
    fn finish(&mut self, ir_map: Vec<Option<usize>>) -> Option<BlockMapping> {
        let n = self.cfg.num_blocks();
        self.machine_ir = vec![None; self.blocks.len()];
        for (a, m) in ir_map.iter().enumerate() {
            if let Some(j) = m {
                self.machine_ir[*j] = Some(a as u32);
            }
        }
        self.ir_map = ir_map;
        self.ir_decided = n;
        self.rank_decided = self.blocks.len() + 1;
        let mut via = BTreeMap::new();
        for c in 0..n {
            let Some(x) = self.ir_map[c] else { continue };
            match self.check(c) {
                Verdict::Pass(paths) => {
                    for (t, p) in paths {
                        via.insert((x, t), p);
                    }
                }
                _ => return None,
            }
        }
        Some(BlockMapping { machine: self.ir_map.clone(), via, absorbed: BTreeMap::new() })
    }
}

/// The machine blocks one IR step runs under `m` from machine block `cur`, and the next `cur`.
fn expand(m: &BlockMapping, cur: usize, t: IrTarget) -> Option<(Vec<usize>, usize)> {
    match t {
        IrTarget::Block(v) => match m.machine[v as usize] {
            Some(x) => {
                let mut out = m.via.get(&(cur, t))?.clone();
                out.push(x);
                Some((out, x))
            }
            None => Some((Vec::new(), cur)),
        },
        IrTarget::Exit => Some((m.via.get(&(cur, t))?.clone(), cur)),
    }
}

/// Whether every IR path from the entry expands into the same machine block sequence under `a` and `b`: a walk
/// over (IR block, each side's current machine block, the output one side is ahead by).
fn same_expansion(targets: &[Vec<IrTarget>], a: &BlockMapping, b: &BlockMapping) -> bool {
    const MAX_LAG: usize = 32;
    let (Some(ea), Some(eb)) = (a.machine[0], b.machine[0]) else { return false };
    if ea != eb {
        return false;
    }
    type State = (usize, usize, usize, Vec<usize>, Vec<usize>);
    let mut seen: BTreeSet<State> = BTreeSet::new();
    let mut stack: Vec<State> = vec![(0, ea, eb, Vec::new(), Vec::new())];
    while let Some(st) = stack.pop() {
        if !seen.insert(st.clone()) {
            continue;
        }
        let (v, ca, cb, ba, bb) = st;
        for &t in &targets[v] {
            let (Some((oa, na)), Some((ob, nb))) = (expand(a, ca, t), expand(b, cb, t)) else { return false };
            let mut qa = ba.clone();
            qa.extend(oa);
            let mut qb = bb.clone();
            qb.extend(ob);
            let common = qa.iter().zip(&qb).take_while(|(x, y)| x == y).count();
            let (ra, rb) = (qa[common..].to_vec(), qb[common..].to_vec());
            if (!ra.is_empty() && !rb.is_empty()) || ra.len() > MAX_LAG || rb.len() > MAX_LAG {
                return false;
            }
            match t {
                IrTarget::Exit => {
                    if !ra.is_empty() || !rb.is_empty() {
                        return false;
                    }
                }
                IrTarget::Block(w) => stack.push((w as usize, na, nb, ra, rb)),
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Edge;

    fn cfg(n: u32, edges: &[(u32, u32)]) -> Cfg {
        // `to == n` is a return; branches numbered per source in order.
        let mut next = vec![0u32; n as usize];
        let mut es: Vec<Edge> = edges
            .iter()
            .map(|&(a, b)| {
                let kind = if b == n {
                    EdgeKind::Return
                } else {
                    next[a as usize] += 1;
                    EdgeKind::Branch { succ: next[a as usize] - 1 }
                };
                Edge { from: BlockId(a), to: BlockId(b), kind }
            })
            .collect();
        es.push(Edge { from: BlockId(n), to: BlockId(0), kind: EdgeKind::ExitToEntry });
        Cfg::new(n, es).unwrap()
    }

    fn mb(id: u32, succs: &[Option<usize>]) -> MachineBlock {
        MachineBlock {
            id,
            succs: Some(succs.iter().map(|s| s.map_or(MachineSucc::Exit, MachineSucc::Block)).collect()),
        }
    }

    /// Diamond 0 → {1, 2} → 3 → EXIT.
    fn diamond() -> Cfg {
        cfg(4, &[(0, 1), (0, 2), (1, 3), (2, 3), (3, 4)])
    }

    #[test]
    fn identical_layout_maps_one_to_one() {
        let blocks = [mb(0, &[Some(1), Some(2)]), mb(1, &[Some(3)]), mb(2, &[Some(3)]), mb(3, &[None])];
        let m = map_blocks(&diamond(), &blocks).unwrap();
        assert_eq!(m.machine, vec![Some(0), Some(1), Some(2), Some(3)]);
        assert!(m.via.values().all(Vec::is_empty));
    }

    #[test]
    fn an_added_block_on_an_edge_is_a_forced_step() {
        // Layout 0, 2, 1, 3, then an added block (id 7) on the edge 2 → 3.
        let blocks =
            [mb(0, &[Some(2), Some(1)]), mb(2, &[Some(4)]), mb(1, &[Some(3)]), mb(3, &[None]), mb(7, &[Some(3)])];
        let m = map_blocks(&diamond(), &blocks).unwrap();
        assert_eq!(m.machine, vec![Some(0), Some(2), Some(1), Some(3)]);
        assert_eq!(m.via[&(1, IrTarget::Block(3))], vec![4]);
    }

    #[test]
    fn an_absent_block_is_transparent() {
        // Block 1 folded into its predecessor's jump: 0 → {3, 2}.
        let blocks = [mb(0, &[Some(2), Some(1)]), mb(2, &[Some(2)]), mb(3, &[None])];
        let m = map_blocks(&diamond(), &blocks).unwrap();
        assert_eq!(m.machine, vec![Some(0), None, Some(1), Some(2)]);
    }

    #[test]
    fn tail_duplication_into_a_predecessor_carries_the_copied_block() {
        // 0 → 1 → {2, 3}: the machine copied 1 into 0 (0 jumps straight to 2 and 3); 1 stays for other preds.
        let g = cfg(4, &[(0, 1), (1, 2), (1, 3), (2, 4), (3, 4)]);
        let blocks = [mb(0, &[Some(2), Some(3)]), mb(1, &[Some(2), Some(3)]), mb(2, &[None]), mb(3, &[None])];
        let m = map_blocks(&g, &blocks).unwrap();
        assert_eq!(m.absorbed, BTreeMap::from([(0, 1)]));
        assert_eq!((m.via[&(0, IrTarget::Block(2))].len(), m.via[&(0, IrTarget::Block(3))].len()), (0, 0));
        assert!(!m.via.contains_key(&(0, IrTarget::Block(1))));
        // Not when the copied block may go on to itself (a step from the copy would not tell which it is), nor
        // when the predecessor has another way on.
        let own_loop = cfg(4, &[(0, 1), (1, 2), (1, 1), (2, 4)]);
        let loop_blocks = [mb(0, &[Some(2), Some(1)]), mb(1, &[Some(2), Some(1)]), mb(2, &[None])];
        assert!(map_blocks(&own_loop, &loop_blocks).is_err());
        let two_ways = cfg(4, &[(0, 1), (0, 3), (1, 2), (1, 3), (2, 4), (3, 4)]);
        assert!(matches!(map_blocks(&two_ways, &blocks), Err(Refusal::Successors { block: 0, .. })));
    }

    #[test]
    fn a_split_select_is_ambiguous() {
        // 0 → 1 in IR; the machine lowered a select in 0 into a diamond of added blocks 5, 6 joining at 7.
        let g = cfg(2, &[(0, 1), (1, 2)]);
        let blocks =
            [mb(0, &[Some(1), Some(2)]), mb(5, &[Some(3)]), mb(6, &[Some(3)]), mb(7, &[Some(4)]), mb(1, &[None])];
        assert_eq!(map_blocks(&g, &blocks), Err(Refusal::Ambiguous { block: 0 }));
    }

    #[test]
    fn an_entry_elsewhere_and_indirect_jumps_are_refused() {
        let blocks = [mb(1, &[Some(1)]), mb(0, &[Some(0)])];
        assert_eq!(map_blocks(&diamond(), &blocks), Err(Refusal::Entry));
        let blocks = [MachineBlock { id: 0, succs: None }];
        assert_eq!(map_blocks(&diamond(), &blocks), Err(Refusal::IndirectJump(0)));
    }

    #[test]
    fn predicted_ids_map_a_block_codegen_inserted_before_later_ones() {
        // The diamond; codegen's IR passes inserted a block on the edge 0 → 1 before instruction selection, so
        // it took id 1 and blocks 1, 2, 3 became ids 2, 3, 4. Layout: 0, the new block, 1, 2, 3.
        let machine =
            [mb(0, &[Some(1), Some(3)]), mb(1, &[Some(2)]), mb(2, &[Some(4)]), mb(3, &[Some(4)]), mb(4, &[None])];
        let map = map_predicted_blocks(&diamond(), &machine, &[Some(0), None, Some(1), Some(2), Some(3)], &[]).unwrap();
        assert_eq!(map.machine, vec![Some(0), Some(2), Some(3), Some(4)]);
        assert_eq!(map.via[&(0, IrTarget::Block(1))], vec![1]);
        // Read as machine id = IR block, the binary is refused: block 0 would lead to blocks 1 and 3.
        assert!(matches!(map_blocks(&diamond(), &machine), Err(Refusal::Successors { block: 0, .. })));
        // A prediction the binary does not bear out is refused, not trusted.
        assert!(map_predicted_blocks(&diamond(), &machine, &[Some(0), Some(2), Some(1), None, Some(3)], &[]).is_err());
    }

    #[test]
    fn a_split_condition_is_found_past_blocks_instruction_selection_created_before_it() {
        // 0: `br (a && b)`, cut by the pass into 0: br a → {3, 2} and 3: br b → {1, 2}; 1 and 2 return. While
        // lowering block 1 (first in its order) instruction selection created a block of its own (id 3), so the
        // split block is id 4, not 3. Layout: 0, 1, 2, the split block, the other new block.
        let ir = cfg(4, &[(0, 3), (0, 2), (3, 1), (3, 2), (1, 4), (2, 4)]);
        let machine =
            [mb(0, &[Some(3), Some(2)]), mb(1, &[Some(4)]), mb(2, &[None]), mb(4, &[Some(1), Some(2)]), mb(3, &[None])];
        let ids = [Some(0), Some(1), Some(2)];
        // In order, id 3 would be the split block: refused.
        let in_order = [Some(0), Some(1), Some(2), Some(3)];
        assert!(map_predicted_blocks(&ir, &machine, &in_order, &[]).is_err());
        let map = map_predicted_blocks(&ir, &machine, &ids, &[3]).unwrap();
        assert_eq!(map.machine, vec![Some(0), Some(1), Some(2), Some(3)]);
        assert_eq!(map.via[&(1, IrTarget::Exit)], vec![4]);
        // Two new successors of the predecessor's machine block: not placed, refused.
        let two =
            [mb(0, &[Some(3), Some(4)]), mb(1, &[None]), mb(2, &[None]), mb(4, &[Some(1), Some(2)]), mb(3, &[Some(2)])];
        assert!(map_predicted_blocks(&ir, &two, &ids, &[3]).is_err());
        // Codegen kept the conditions together (0 → {1, 2} in one branch): the split block is absent, while
        // in order it would be the block instruction selection created for block 1.
        let together = [mb(0, &[Some(1), Some(2)]), mb(1, &[Some(3)]), mb(2, &[None]), mb(3, &[None])];
        assert!(map_predicted_blocks(&ir, &together, &in_order, &[]).is_err());
        let map = map_predicted_blocks(&ir, &together, &ids, &[3]).unwrap();
        assert_eq!(map.machine, vec![Some(0), Some(1), Some(2), None]);
    }

    #[test]
    fn a_return_block_copied_into_a_predecessor_is_carried_there() {
        // find(): 0 → {1, 5}, 1 → 2, 2 → {4, 3}, 3 → {2, 5}, 4 → 5, 5 → return. Tail duplication copied block
        // 5 (a lone `ret`) into block 4: machine id 4 returns, id 5 runs on the edges from 0 and 3.
        let ir = cfg(6, &[(0, 1), (0, 5), (1, 2), (2, 4), (2, 3), (3, 2), (3, 5), (4, 5), (5, 6)]);
        let machine = [
            mb(0, &[Some(1), Some(4)]),
            mb(1, &[Some(2)]),
            mb(2, &[Some(5), Some(3)]),
            mb(3, &[Some(2), Some(4)]),
            mb(5, &[None]),
            mb(4, &[None]),
        ];
        let identity: Vec<Option<u32>> = (0..6).map(Some).collect();
        assert_eq!(map_blocks(&ir, &machine), map_predicted_blocks(&ir, &machine, &identity, &[]));
        let map = map_predicted_blocks(&ir, &machine, &identity, &[]).unwrap();
        assert_eq!(map.machine, vec![Some(0), Some(1), Some(2), Some(3), Some(5), Some(4)]);
        assert_eq!(map.absorbed, BTreeMap::from([(5, 5)]));
        assert_eq!(map.via[&(0, IrTarget::Block(5))], Vec::<usize>::new());
        assert_eq!(map.via[&(5, IrTarget::Exit)], Vec::<usize>::new());
        // A loop guard that returns: 0 → {1, 5} where codegen copied the `ret` of 5 into 0. Block 5 is then
        // absent, its machine block an added one on the edge from 3.
        let guard = [
            mb(0, &[Some(1), None]),
            mb(1, &[Some(2)]),
            mb(2, &[Some(5), Some(3)]),
            mb(3, &[Some(2), Some(4)]),
            mb(5, &[None]),
            mb(4, &[None]),
        ];
        let map = map_predicted_blocks(&ir, &guard, &identity, &[]).unwrap();
        assert_eq!(map.machine[5], None);
        assert_eq!(map.via[&(3, IrTarget::Exit)], vec![4]);
        assert_eq!(map.via[&(0, IrTarget::Exit)], Vec::<usize>::new());
        // With block 5 → 2 added, block 4's machine block (which only returns) is no copy of it.
        let loops = cfg(6, &[(0, 1), (0, 5), (1, 2), (2, 4), (2, 3), (3, 2), (3, 5), (4, 5), (5, 6), (5, 2)]);
        assert!(map_predicted_blocks(&loops, &machine, &identity, &[]).is_err());
    }

    #[test]
    fn alignment_skips_blocks_codegen_inserted_before_later_ones() {
        // IR: 0 → 1 → {1, 2}, 2 → EXIT (a loop). Codegen inserted a preheader before the loop: it took id 1, so
        // the loop is id 2 and the exit id 3. Identity fails; the one alignment maps 1 → id 2, 2 → id 3.
        let g = cfg(3, &[(0, 1), (1, 1), (1, 2), (2, 3)]);
        let blocks = [mb(0, &[Some(1)]), mb(1, &[Some(2)]), mb(2, &[Some(2), Some(3)]), mb(3, &[None])];
        assert!(map_blocks(&g, &blocks).is_err());
        let m = align_blocks(&g, &blocks, 10_000).unwrap();
        assert_eq!(m.machine, vec![Some(0), Some(2), Some(3)]);
        assert_eq!(m.via[&(0, IrTarget::Block(1))], vec![1]);
    }

    #[test]
    fn alignments_that_expand_alike_are_one_and_others_are_refused() {
        // IR 0 → 1 → 2 → EXIT with 1 a forwarder: "1 at id 1" and "1 absent, id 1 added" run the same blocks.
        let g = cfg(3, &[(0, 1), (1, 2), (2, 3)]);
        let blocks = [mb(0, &[Some(1)]), mb(1, &[Some(2)]), mb(2, &[None])];
        let m = align_blocks(&g, &blocks, 10_000).unwrap();
        assert_eq!(m.machine[0], Some(0));
        // A diamond whose arms both can be either machine arm (ids 1 and 2 swapped is also order-preserving
        // when 1 or 2 is absent): the arms run different code, so the IR path does not decide it.
        let d = cfg(4, &[(0, 1), (0, 2), (1, 3), (2, 3), (3, 4)]);
        let blocks = [mb(0, &[Some(1), Some(2)]), mb(5, &[Some(3)]), mb(6, &[Some(3)]), mb(3, &[None])];
        assert_eq!(align_blocks(&d, &blocks, 10_000), Err(AlignRefusal::Several));
    }

    /// The kernels' `main` at -O2: IR block 1 ends in `br (or a, b), 2, 3`. Instruction selection tests `a` in
    /// machine block 1 and `b` in a block it adds (id 5): `1 → {2, 5}`, `5 → {2, 3}`. Layout: ids 0, 1, 5, 3, 4,
    /// 2 (the `then` block 2 placed last).
    fn split_condition_machine() -> [MachineBlock; 6] {
        [
            mb(0, &[Some(1), Some(5)]),
            mb(1, &[Some(5), Some(2)]),
            mb(5, &[Some(5), Some(3)]),
            mb(3, &[Some(4)]),
            mb(4, &[None]),
            mb(2, &[Some(4)]),
        ]
    }

    #[test]
    fn a_condition_split_in_the_ir_as_codegen_splits_it_maps_block_for_block() {
        // The traced IR with the same split (icache mode's `branch_split`): the temporary is IR block 5, appended
        // after the function's blocks, `1 → {2, 5}`, `5 → {2, 3}`. By hand: IR i is the machine block of id i.
        let g = cfg(6, &[(0, 1), (0, 2), (1, 2), (1, 5), (2, 4), (3, 4), (4, 6), (5, 2), (5, 3)]);
        let m = map_blocks(&g, &split_condition_machine()).unwrap();
        assert_eq!(m.machine, vec![Some(0), Some(1), Some(5), Some(3), Some(4), Some(2)]);
        assert!(m.via.values().all(Vec::is_empty), "every IR edge is a machine edge: {:?}", m.via);
        assert_eq!(align_blocks(&g, &split_condition_machine(), 10_000).unwrap(), m);
    }

    #[test]
    fn a_condition_codegen_splits_but_the_ir_does_not_is_refused() {
        // Unsplit IR: `1 → {2, 3}`. Machine block 1 reaches block 2 directly and through the added block 5: the
        // IR edge 1 → 2 does not tell which ran.
        let g = cfg(5, &[(0, 1), (0, 2), (1, 2), (1, 3), (2, 4), (3, 4), (4, 5)]);
        assert_eq!(map_blocks(&g, &split_condition_machine()), Err(Refusal::Ambiguous { block: 1 }));
        assert!(align_blocks(&g, &split_condition_machine(), 10_000).is_err());
    }

    #[test]
    fn a_split_codegen_kept_together_is_an_absent_block() {
        // The IR was split, but codegen tested `a || b` in one branch (its cost heuristics): machine block 1 goes
        // straight to 2 and 3, and IR block 5 has no code — absent, its edges pass through to 2 and 3.
        let g = cfg(6, &[(0, 1), (0, 2), (1, 2), (1, 5), (2, 4), (3, 4), (4, 6), (5, 2), (5, 3)]);
        let blocks = [
            mb(0, &[Some(1), Some(4)]),
            mb(1, &[Some(4), Some(2)]),
            mb(3, &[Some(3)]),
            mb(4, &[None]),
            mb(2, &[Some(3)]),
        ];
        let m = map_blocks(&g, &blocks).unwrap();
        assert_eq!(m.machine, vec![Some(0), Some(1), Some(4), Some(2), Some(3), None]);
    }
}
