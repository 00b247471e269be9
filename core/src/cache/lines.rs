//! Memory lines and the references a stretch of code makes to them.
//!
//! A *reference* is the first touch of a line after a touch of another line (Definition 9's `i_first`); the
//! instructions that follow in the same line are hits by construction. An instruction that straddles lines
//! makes one reference per line it enters.

use super::program::{Geometry, Insn};
use std::collections::HashMap;

/// A reference to a line, made by instruction `insn` (an index into the instructions of the stretch of code).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct LineRef {
    /// Dense line id ([`Lines`]).
    pub line: u32,
    /// The instruction making the reference.
    pub insn: u32,
}

/// The memory lines a program references, numbered densely, with their sets numbered densely too.
#[derive(Clone, Debug, Default)]
pub struct Lines {
    ids: HashMap<u64, u32>,
    memory_line: Vec<u64>,
    set: Vec<u32>,
    set_ids: HashMap<u64, u32>,
    set_lines: Vec<Vec<u32>>,
}

impl Lines {
    /// The dense id of memory line `l`, numbering it on first sight.
    pub fn id(&mut self, geometry: &Geometry, l: u64) -> u32 {
        if let Some(&i) = self.ids.get(&l) {
            return i;
        }
        let i = self.memory_line.len() as u32;
        let s = geometry.set_of(l);
        let next = self.set_lines.len() as u32;
        let sid = *self.set_ids.entry(s).or_insert(next);
        if sid == next {
            self.set_lines.push(Vec::new());
        }
        self.set_lines[sid as usize].push(i);
        self.ids.insert(l, i);
        self.memory_line.push(l);
        self.set.push(sid);
        i
    }

    /// The references of `insns` run in order (the first instruction's lines are always referenced).
    pub fn refs(&mut self, geometry: &Geometry, insns: &[Insn]) -> Vec<LineRef> {
        let mut out = Vec::new();
        let mut cur = None;
        for (k, i) in insns.iter().enumerate() {
            let first = geometry.line_of(i.addr);
            let last = geometry.line_of(i.addr + u64::from(i.size) - 1);
            for l in first..=last {
                if cur != Some(l) {
                    out.push(LineRef { line: self.id(geometry, l), insn: k as u32 });
                    cur = Some(l);
                }
            }
        }
        out
    }

    /// Number of distinct lines.
    pub fn len(&self) -> usize {
        self.memory_line.len()
    }
    /// Whether no line was referenced.
    pub fn is_empty(&self) -> bool {
        self.memory_line.is_empty()
    }
    /// The dense set id of a line.
    pub fn set(&self, line: u32) -> u32 {
        self.set[line as usize]
    }
    /// Number of distinct sets referenced.
    pub fn num_sets(&self) -> usize {
        self.set_lines.len()
    }
    /// The lines of a dense set.
    pub fn set_lines(&self, set: u32) -> &[u32] {
        &self.set_lines[set as usize]
    }
    /// The memory line number of a line id.
    pub fn memory_line(&self, line: u32) -> u64 {
        self.memory_line[line as usize]
    }
}
