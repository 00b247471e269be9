//! The plain binary's machine code: functions by name, each machine block's instructions (decoded with
//! `iced-x86`) and successors, from the ELF symbol table and clang's `.llvm_bb_addr_map`.

use anyhow::{bail, Context, Result};
use iced_x86::{Decoder, DecoderOptions, FlowControl};
use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};
use pathprof_core::cache::machine_map::{MachineBlock, MachineSucc, PADDING_ID};
use pathprof_core::cache::program::Insn;
use pathprof_format::bb_addr_map::{self, flags};
use std::collections::HashMap;

/// A call-like instruction of a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallInsn {
    /// Its index in the block's instructions.
    pub index: usize,
    /// The direct target, or `None` for an indirect call.
    pub target: Option<u64>,
}

/// One machine block's code.
#[derive(Clone, Debug)]
pub struct BlockCode {
    /// Instructions in address order.
    pub insns: Vec<Insn>,
    /// Calls and tail jumps into other functions, in order.
    pub calls: Vec<CallInsn>,
    /// Indices of instructions with a `rep` prefix (cachegrind counts each iteration as one fetch).
    pub reps: Vec<usize>,
}

/// One function of the binary.
#[derive(Clone, Debug)]
pub struct MachineFunction {
    /// Entry address.
    pub address: u64,
    /// Blocks in layout order: ids and successors (for the mapping) and code.
    pub blocks: Vec<MachineBlock>,
    /// Code of each block.
    pub code: Vec<BlockCode>,
}

/// The binary's functions with a block map, by symbol name; names defined more than once map to `Err`.
pub struct Binary {
    /// Functions by name (`Err(())`: several functions have that name).
    pub functions: HashMap<String, std::result::Result<MachineFunction, String>>,
}

/// Decodes one function; `Err` says why it cannot be used.
fn decode_function(
    f: &bb_addr_map::FunctionMap,
    bytes_at: &dyn Fn(u64, u32) -> Option<Vec<u8>>,
    is_function_start: &dyn Fn(u64) -> bool,
) -> std::result::Result<MachineFunction, String> {
    let start_of: HashMap<u64, usize> = f.blocks.iter().enumerate().map(|(i, b)| (b.address, i)).collect();
    let mut blocks = Vec::with_capacity(f.blocks.len());
    let mut code = Vec::with_capacity(f.blocks.len());
    let mut falls = Vec::with_capacity(f.blocks.len());
    for (i, b) in f.blocks.iter().enumerate() {
        let bytes = bytes_at(b.address, b.size).ok_or_else(|| format!("block {} is outside the code", b.id))?;
        let mut dec = Decoder::with_ip(64, &bytes, b.address, DecoderOptions::NONE);
        let mut insns = Vec::new();
        let mut calls = Vec::new();
        let mut succs = Vec::new();
        let mut known = true;
        let mut ends = false;
        let mut reps = Vec::new();
        let target = |t: u64| -> std::result::Result<MachineSucc, String> {
            match start_of.get(&t) {
                Some(&j) => Ok(MachineSucc::Block(j)),
                None if is_function_start(t) => Ok(MachineSucc::Exit),
                None => Err(format!("block {} jumps to {t:#x}, not a block start", b.id)),
            }
        };
        while dec.can_decode() {
            let ins = dec.decode();
            if ins.is_invalid() {
                return Err(format!("undecodable instruction at {:#x}", ins.ip()));
            }
            let index = insns.len();
            insns.push(Insn { addr: ins.ip(), size: ins.len() as u32 });
            if ins.has_rep_prefix() || ins.has_repne_prefix() {
                reps.push(insns.len() - 1);
            }
            ends = false;
            match ins.flow_control() {
                FlowControl::ConditionalBranch => succs.push(target(ins.near_branch_target())?),
                FlowControl::UnconditionalBranch => {
                    let s = target(ins.near_branch_target())?;
                    if s == MachineSucc::Exit {
                        calls.push(CallInsn { index, target: Some(ins.near_branch_target()) });
                    }
                    succs.push(s);
                    ends = true;
                }
                FlowControl::IndirectBranch => {
                    if b.metadata & flags::HAS_TAIL_CALL != 0 {
                        calls.push(CallInsn { index, target: None });
                        succs.push(MachineSucc::Exit);
                    } else {
                        known = false;
                    }
                    ends = true;
                }
                FlowControl::Return => {
                    succs.push(MachineSucc::Exit);
                    ends = true;
                }
                FlowControl::Call => calls.push(CallInsn { index, target: Some(ins.near_branch_target()) }),
                FlowControl::IndirectCall => calls.push(CallInsn { index, target: None }),
                FlowControl::Exception => ends = true,
                _ => {}
            }
        }
        if dec.position() != bytes.len() {
            return Err(format!("block {} does not end at an instruction boundary", b.id));
        }
        let fall = !ends && b.metadata & flags::CAN_FALL_THROUGH != 0;
        if fall && i + 1 == f.blocks.len() {
            return Err(format!("block {} falls through past the function", b.id));
        }
        falls.push(fall);
        blocks.push(MachineBlock { id: b.id, succs: known.then_some(succs) });
        code.push(BlockCode { insns, calls, reps });
    }
    with_padding(f, blocks, code, &falls, bytes_at)
}

/// Adds the fall-through edges. Alignment padding between a block and the next (nops before a loop header)
/// belongs to no block of the map but runs when control falls through: it becomes a block of its own
/// ([`PADDING_ID`]) on the fall-through edge, which the mapping treats like any block codegen added.
fn with_padding(
    f: &bb_addr_map::FunctionMap,
    mut blocks: Vec<MachineBlock>,
    mut code: Vec<BlockCode>,
    falls: &[bool],
    bytes_at: &dyn Fn(u64, u32) -> Option<Vec<u8>>,
) -> std::result::Result<MachineFunction, String> {
    let n = blocks.len();
    let mut index = Vec::with_capacity(n);
    let mut pads = Vec::new();
    for (i, b) in f.blocks.iter().enumerate() {
        index.push(i + pads.len());
        let end = b.address + u64::from(b.size);
        if falls[i] && f.blocks[i + 1].address > end {
            let len = u32::try_from(f.blocks[i + 1].address - end).map_err(|_| "padding too large".to_string())?;
            let bytes =
                bytes_at(end, len).ok_or_else(|| format!("padding after block {} is outside the code", b.id))?;
            let mut dec = Decoder::with_ip(64, &bytes, end, DecoderOptions::NONE);
            let mut insns = Vec::new();
            while dec.can_decode() {
                let ins = dec.decode();
                if ins.is_invalid() || ins.flow_control() != FlowControl::Next {
                    return Err(format!("padding after block {} is not plain instructions", b.id));
                }
                insns.push(Insn { addr: ins.ip(), size: ins.len() as u32 });
            }
            pads.push((i, insns));
        }
    }
    let remap = |s: &MachineSucc| match *s {
        MachineSucc::Block(j) => MachineSucc::Block(index[j]),
        MachineSucc::Exit => MachineSucc::Exit,
    };
    let mut out_blocks = Vec::with_capacity(n + pads.len());
    let mut out_code = Vec::with_capacity(n + pads.len());
    let mut pads = pads.into_iter().peekable();
    for i in 0..n {
        let mut b = std::mem::replace(&mut blocks[i], MachineBlock { id: 0, succs: None });
        let padded = pads.peek().is_some_and(|p| p.0 == i);
        if let Some(succs) = &mut b.succs {
            *succs = succs.iter().map(remap).collect();
            if falls[i] {
                succs.push(MachineSucc::Block(if padded { index[i] + 1 } else { index[i + 1] }));
            }
            succs.sort();
            succs.dedup();
        }
        out_blocks.push(b);
        out_code.push(std::mem::replace(&mut code[i], BlockCode { insns: vec![], calls: vec![], reps: vec![] }));
        if padded {
            let (_, insns) = pads.next().expect("peeked");
            out_blocks.push(MachineBlock { id: PADDING_ID, succs: Some(vec![MachineSucc::Block(index[i + 1])]) });
            out_code.push(BlockCode { insns, calls: vec![], reps: vec![] });
        }
    }
    Ok(MachineFunction { address: f.address, blocks: out_blocks, code: out_code })
}

impl Binary {
    /// Reads `path`: it must be an x86-64 ELF with a `.llvm_bb_addr_map` section.
    pub fn read(path: &std::path::Path) -> Result<Binary> {
        let data = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let obj = object::File::parse(&*data).with_context(|| format!("{}: not an ELF file", path.display()))?;
        if obj.architecture() != object::Architecture::X86_64 {
            bail!("{}: only x86-64 binaries are supported", path.display());
        }
        let Some(map) = obj.section_by_name(".llvm_bb_addr_map") else {
            bail!("{}: no .llvm_bb_addr_map section (build it with -fbasic-block-address-map)", path.display());
        };
        let maps = bb_addr_map::parse(map.data()?).with_context(|| path.display().to_string())?;
        let code: Vec<(u64, &[u8])> = obj
            .sections()
            .filter(|s| s.kind() == object::SectionKind::Text)
            .filter_map(|s| Some((s.address(), s.data().ok()?)))
            .collect();
        let bytes_at = |a: u64, n: u32| -> Option<Vec<u8>> {
            code.iter().find_map(|&(base, d)| {
                let off = usize::try_from(a.checked_sub(base)?).ok()?;
                Some(d.get(off..off.checked_add(n as usize)?)?.to_vec())
            })
        };
        let mut names: HashMap<u64, String> = HashMap::new();
        let mut count: HashMap<String, usize> = HashMap::new();
        let mut starts = std::collections::HashSet::new();
        for s in obj.symbols() {
            if s.kind() != SymbolKind::Text {
                continue;
            }
            starts.insert(s.address());
            if let Ok(n) = s.name() {
                if !n.is_empty() && !names.values().any(|v| v == n && names.get(&s.address()) == Some(v)) {
                    *count.entry(n.to_string()).or_default() += 1;
                    names.entry(s.address()).or_insert_with(|| n.to_string());
                }
            }
        }
        let is_start = |a: u64| starts.contains(&a);
        let mut functions = HashMap::new();
        for f in &maps {
            let Some(name) = names.get(&f.address) else { continue };
            let decoded = if count.get(name).copied().unwrap_or(0) > 1 {
                Err(format!("several functions are named `{name}` in the binary"))
            } else {
                decode_function(f, &bytes_at, &is_start)
            };
            functions.insert(name.clone(), decoded);
        }
        Ok(Binary { functions })
    }
}
