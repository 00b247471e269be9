//! The program a static cache simulation runs over: functions (each a [`Cfg`]) whose blocks carry the
//! addresses of their instructions and the call they end with, plus the cache geometry.
//!
//! Addresses are inputs: the pass knows the blocks and calls, the ELF layer the final code addresses. A block's
//! instructions run in order, then its call (if any), then one of its out-edges; so a block with a call is one
//! that ends at the call instruction (the pass splits blocks there). Its instructions need not be contiguous.
//!
//! Code outside the model ("foreign": libc, the dynamic loader, an indirect call the pass cannot resolve) is
//! assumed to fetch no line of the model: the categories and counts are exact for a cache that only the modelled
//! code uses. Foreign code may call back into `callbacks` (address-taken functions). A call whose callee may
//! leave the frame abnormally (`Termination` edge) is taken to end the run there: `longjmp` or an exception that
//! resumes elsewhere in the program is not modelled.

use super::super::melski_reps::program::ProcId;
use crate::graph::Cfg;

/// One instruction: where it starts and how many bytes it has. An instruction that straddles lines is one
/// access (cachegrind's `Ir`) that misses if any of its lines misses (`I1mr`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Insn {
    /// Start address.
    pub addr: u64,
    /// Size in bytes (at least 1).
    pub size: u32,
}

/// What a call may enter: functions of the model and/or foreign code (an indirect call lists its candidates).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct CallTarget {
    /// Functions of the model the call may enter.
    pub procs: Vec<ProcId>,
    /// Whether the call may run foreign code (which may call `callbacks`).
    pub foreign: bool,
}

impl CallTarget {
    /// A direct call.
    pub fn direct(p: ProcId) -> CallTarget {
        CallTarget { procs: vec![p], foreign: false }
    }
    /// A call into foreign code.
    pub fn foreign() -> CallTarget {
        CallTarget { procs: Vec::new(), foreign: true }
    }
}

/// The code of one block: its instructions in execution order and the call it ends with.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct BlockCode {
    /// Instructions in execution order (the call instruction last when there is a call).
    pub insns: Vec<Insn>,
    /// The call made after the instructions, if any.
    pub call: Option<CallTarget>,
}

/// One function: its CFG and the code of each of its blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    /// Display name.
    pub name: String,
    /// The CFG (entry = block 0).
    pub cfg: Cfg,
    /// One entry per block of `cfg`.
    pub blocks: Vec<BlockCode>,
}

impl Function {
    /// Per block: whether it ends with a call (Definition 1.6's set C).
    pub fn call_blocks(&self) -> Vec<bool> {
        self.blocks.iter().map(|b| b.call.is_some()).collect()
    }
}

/// A whole program: the run starts at `entry` with a cold cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    functions: Vec<Function>,
    entry: ProcId,
    callbacks: Vec<ProcId>,
}

/// Why a program or a geometry is rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// A function's block list does not match its CFG.
    #[error("function {0}: {1} block codes for {2} blocks")]
    BlockCount(String, usize, usize),
    /// A call, the entry or a callback names no function.
    #[error("unknown function {0}")]
    UnknownFunction(ProcId),
    /// A call with no target.
    #[error("function {0}: the call in bb{1} has no target")]
    EmptyCall(String, usize),
    /// An instruction of size 0 or one that wraps the address space.
    #[error("function {0}: bad instruction at {1:#x}")]
    BadInsn(String, u64),
    /// Not `SIZE,ASSOC,LINE` with a power-of-two line and SIZE a multiple of ASSOC·LINE.
    #[error("bad cache geometry {0:?}: expected SIZE,ASSOC,LINE (line a power of two, SIZE a multiple of ASSOC*LINE)")]
    BadGeometry(String),
}

impl Program {
    /// Validates and builds a program; every later algorithm is total on what this accepts.
    pub fn new(functions: Vec<Function>, entry: ProcId, callbacks: Vec<ProcId>) -> Result<Program, ModelError> {
        let n = functions.len();
        let known = |p: ProcId| if p.index() < n { Ok(()) } else { Err(ModelError::UnknownFunction(p)) };
        known(entry)?;
        for &c in &callbacks {
            known(c)?;
        }
        for f in &functions {
            if f.blocks.len() != f.cfg.num_blocks() {
                return Err(ModelError::BlockCount(f.name.clone(), f.blocks.len(), f.cfg.num_blocks()));
            }
            for (b, code) in f.blocks.iter().enumerate() {
                for i in &code.insns {
                    if i.size == 0 || i.addr.checked_add(u64::from(i.size)).is_none() {
                        return Err(ModelError::BadInsn(f.name.clone(), i.addr));
                    }
                }
                if let Some(c) = &code.call {
                    if c.procs.is_empty() && !c.foreign {
                        return Err(ModelError::EmptyCall(f.name.clone(), b));
                    }
                    for &p in &c.procs {
                        known(p)?;
                    }
                }
            }
        }
        Ok(Program { functions, entry, callbacks })
    }

    /// The functions, indexed by `ProcId`.
    pub fn functions(&self) -> &[Function] {
        &self.functions
    }
    /// One function.
    pub fn function(&self, p: ProcId) -> &Function {
        &self.functions[p.index()]
    }
    /// Where the run starts.
    pub fn entry(&self) -> ProcId {
        self.entry
    }
    /// Functions foreign code may call.
    pub fn callbacks(&self) -> &[ProcId] {
        &self.callbacks
    }
}

/// A cache geometry in cachegrind's `--I1=SIZE,ASSOC,LINE` terms; LRU replacement, ASSOC 1 = direct-mapped.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Geometry {
    /// Capacity in bytes.
    pub size: u64,
    /// Ways per set.
    pub assoc: u32,
    /// Line size in bytes (a power of two).
    pub line: u32,
}

impl Default for Geometry {
    /// 32768,8,64: the default the issue fixes (a common L1 instruction cache).
    fn default() -> Geometry {
        Geometry { size: 32768, assoc: 8, line: 64 }
    }
}

impl Geometry {
    /// Validates a geometry.
    pub fn new(size: u64, assoc: u32, line: u32) -> Result<Geometry, ModelError> {
        let ok = line.is_power_of_two()
            && assoc > 0
            && size > 0
            && size.is_multiple_of(u64::from(assoc) * u64::from(line))
            && size / (u64::from(assoc) * u64::from(line)) <= u64::from(u32::MAX);
        if ok {
            Ok(Geometry { size, assoc, line })
        } else {
            Err(ModelError::BadGeometry(format!("{size},{assoc},{line}")))
        }
    }

    /// Parses `SIZE,ASSOC,LINE` (`PATHPROF_ICACHE`, cachegrind's `--I1` syntax).
    pub fn parse(s: &str) -> Result<Geometry, ModelError> {
        let bad = || ModelError::BadGeometry(s.to_string());
        let v: Vec<&str> = s.split(',').map(str::trim).collect();
        let [size, assoc, line] = v[..] else { return Err(bad()) };
        Geometry::new(
            size.parse().map_err(|_| bad())?,
            assoc.parse().map_err(|_| bad())?,
            line.parse().map_err(|_| bad())?,
        )
        .map_err(|_| bad())
    }

    /// Number of sets.
    pub fn sets(&self) -> u64 {
        self.size / (u64::from(self.assoc) * u64::from(self.line))
    }

    /// The memory line an address lies in.
    pub fn line_of(&self, addr: u64) -> u64 {
        addr / u64::from(self.line)
    }

    /// The set a memory line maps to.
    pub fn set_of(&self, line: u64) -> u64 {
        line % self.sets()
    }
}
