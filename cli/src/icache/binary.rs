//! The plain binary's machine code: functions by name, each machine block's instructions (decoded with
//! `iced-x86`) and successors, from the ELF symbol table and clang's `.llvm_bb_addr_map`.

use anyhow::{bail, Context, Result};
use iced_x86::{Code, Decoder, DecoderOptions, FlowControl, Instruction, OpKind};
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

/// Where a piece of code goes next, before pieces get their final indices.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Next {
    /// The first piece of the map's block with this index.
    Block(usize),
    /// The next piece of the same block (after a conditional branch).
    Piece,
    /// Leaves the function.
    Exit,
}

/// A straight-line run of a map block: every instruction of it runs whenever its first does.
struct Piece {
    code: BlockCode,
    /// `None`: an indirect jump whose targets the code does not tell.
    succs: Option<Vec<Next>>,
}

/// Decodes one map block into pieces: a conditional branch that is not the block's last instruction (`jcc X;
/// jmp Y`) ends a piece, since the instructions after it run only when it is not taken. Returns the pieces and
/// whether control falls through past the block's end.
fn decode_block(
    b: &bb_addr_map::BbEntry,
    bytes: &[u8],
    target: &dyn Fn(u64) -> std::result::Result<Next, String>,
    data_at: &dyn Fn(u64, u32) -> Option<Vec<u8>>,
) -> std::result::Result<(Vec<Piece>, bool), String> {
    let mut dec = Decoder::with_ip(64, bytes, b.address, DecoderOptions::NONE);
    let mut pieces = Vec::new();
    let mut code = BlockCode { insns: Vec::new(), calls: Vec::new(), reps: Vec::new() };
    let mut succs = Vec::new();
    let mut known = true;
    let mut ends = false;
    // The block's instructions so far (a jump table's address is loaded a few instructions before the jump).
    let mut seen: Vec<Instruction> = Vec::new();
    while dec.can_decode() {
        let ins = dec.decode();
        if ins.is_invalid() {
            return Err(format!("undecodable instruction at {:#x}", ins.ip()));
        }
        seen.push(ins);
        let index = code.insns.len();
        code.insns.push(Insn { addr: ins.ip(), size: ins.len() as u32 });
        if ins.has_rep_prefix() || ins.has_repne_prefix() {
            code.reps.push(index);
        }
        ends = false;
        match ins.flow_control() {
            FlowControl::ConditionalBranch => {
                succs.push(target(ins.near_branch_target())?);
                if dec.can_decode() {
                    succs.push(Next::Piece);
                    let done = std::mem::replace(&mut code, BlockCode { insns: vec![], calls: vec![], reps: vec![] });
                    pieces.push(Piece { code: done, succs: Some(std::mem::take(&mut succs)) });
                }
            }
            FlowControl::UnconditionalBranch => {
                let s = target(ins.near_branch_target())?;
                if s == Next::Exit {
                    code.calls.push(CallInsn { index, target: Some(ins.near_branch_target()) });
                }
                succs.push(s);
                ends = true;
            }
            FlowControl::IndirectBranch => {
                if b.metadata & flags::HAS_TAIL_CALL != 0 {
                    code.calls.push(CallInsn { index, target: None });
                    succs.push(Next::Exit);
                } else if let Some(targets) = jump_table_targets(&seen, target, data_at) {
                    succs.extend(targets);
                } else {
                    known = false;
                }
                ends = true;
            }
            FlowControl::Return => {
                succs.push(Next::Exit);
                ends = true;
            }
            FlowControl::Call => code.calls.push(CallInsn { index, target: Some(ins.near_branch_target()) }),
            FlowControl::IndirectCall => code.calls.push(CallInsn { index, target: None }),
            FlowControl::Exception => ends = true,
            _ => {}
        }
    }
    if dec.position() != bytes.len() {
        return Err(format!("block {} does not end at an instruction boundary", b.id));
    }
    pieces.push(Piece { code, succs: known.then_some(succs) });
    Ok((pieces, !ends && b.metadata & flags::CAN_FALL_THROUGH != 0))
}

/// The blocks a jump table sends the indirect jump ending `block` to, for the table form clang emits on x86-64
/// (position-independent or not): `lea B, [rip + table]`, then `movsxd R, dword [B + I*4]`, `add R, B` and
/// `jmp R` in the same block, nothing between them touching `B` or `R`; each entry is the target's offset from
/// the table. The table is read while its entries are block starts of the function: reading past its end can
/// only add blocks (a neighbouring table's), which the mapping then refuses, never miss one. `None` for any
/// other indirect jump.
fn jump_table_targets(
    block: &[Instruction],
    target: &dyn Fn(u64) -> std::result::Result<Next, String>,
    data_at: &dyn Fn(u64, u32) -> Option<Vec<u8>>,
) -> Option<Vec<Next>> {
    let [.., load, add, jmp] = block else { return None };
    let r = jmp.op0_register();
    if jmp.op_count() != 1
        || jmp.op0_kind() != OpKind::Register
        || !matches!(add.code(), Code::Add_r64_rm64 | Code::Add_rm64_r64)
    {
        return None;
    }
    let base = add.op1_register();
    let is_load = load.code() == Code::Movsxd_r64_rm32
        && load.op0_register() == r
        && load.op1_kind() == OpKind::Memory
        && load.memory_base() == base
        && load.memory_index_scale() == 4
        && load.memory_displacement64() == 0;
    if add.op0_register() != r || add.op1_kind() != OpKind::Register || base == r || !is_load {
        return None;
    }
    // The latest write of the base before the load: a `lea base, [rip + table]`, with nothing in between
    // naming the base.
    let before = &block[..block.len() - 3];
    let at = before.iter().rposition(|i| {
        (0..i.op_count()).any(|k| i.op_kind(k) == OpKind::Register && i.op_register(k) == base)
            || i.memory_base() == base
            || i.memory_index() == base
    })?;
    let lea = &before[at];
    if lea.code() != Code::Lea_r64_m || lea.op0_register() != base || !lea.is_ip_rel_memory_operand() {
        return None;
    }
    let table = lea.ip_rel_memory_address();
    let mut targets = Vec::new();
    for k in 0..MAX_JUMP_TABLE {
        let Some(entry) = data_at(table.checked_add(4 * k)?, 4) else { break };
        let offset = i32::from_le_bytes(entry.try_into().ok()?);
        match target(table.wrapping_add_signed(i64::from(offset))) {
            Ok(t @ Next::Block(_)) => {
                if !targets.contains(&t) {
                    targets.push(t);
                }
            }
            _ => break,
        }
    }
    (!targets.is_empty()).then_some(targets)
}

/// Entries of one jump table read at most.
const MAX_JUMP_TABLE: u64 = 65_536;

/// Decodes the padding after a block: plain instructions only.
fn decode_padding(at: u64, bytes: &[u8]) -> Option<Vec<Insn>> {
    let mut dec = Decoder::with_ip(64, bytes, at, DecoderOptions::NONE);
    let mut insns = Vec::new();
    while dec.can_decode() {
        let ins = dec.decode();
        if ins.is_invalid() || ins.flow_control() != FlowControl::Next {
            return None;
        }
        insns.push(Insn { addr: ins.ip(), size: ins.len() as u32 });
    }
    Some(insns)
}

/// Decodes one function; `Err` says why it cannot be used. Machine blocks in layout order: each map block's
/// pieces (the first keeps its id, the rest get [`PADDING_ID`]: blocks the mapping treats as added), then, when
/// control falls through to the next map block across alignment padding (nops before a loop header, in no
/// block of the map), the padding as a block of its own ([`PADDING_ID`]).
fn decode_function(
    f: &bb_addr_map::FunctionMap,
    bytes_at: &dyn Fn(u64, u32) -> Option<Vec<u8>>,
    data_at: &dyn Fn(u64, u32) -> Option<Vec<u8>>,
    is_function_start: &dyn Fn(u64) -> bool,
) -> std::result::Result<MachineFunction, String> {
    let start_of: HashMap<u64, usize> = f.blocks.iter().enumerate().map(|(i, b)| (b.address, i)).collect();
    // Per map block: its pieces, and the padding run on its fall-through (if it falls through).
    let mut decoded = Vec::with_capacity(f.blocks.len());
    for (i, b) in f.blocks.iter().enumerate() {
        let bytes = bytes_at(b.address, b.size).ok_or_else(|| format!("block {} is outside the code", b.id))?;
        let target = |t: u64| -> std::result::Result<Next, String> {
            match start_of.get(&t) {
                Some(&j) => Ok(Next::Block(j)),
                None if is_function_start(t) => Ok(Next::Exit),
                None => Err(format!("block {} jumps to {t:#x}, not a block start", b.id)),
            }
        };
        let (pieces, falls) = decode_block(b, &bytes, &target, data_at)?;
        let padding = if falls {
            let next = f.blocks.get(i + 1).ok_or_else(|| format!("block {} falls through past the function", b.id))?;
            let end = b.address + u64::from(b.size);
            let gap = u32::try_from(next.address.saturating_sub(end)).map_err(|_| "padding too large".to_string())?;
            let bytes =
                bytes_at(end, gap).ok_or_else(|| format!("padding after block {} is outside the code", b.id))?;
            Some(decode_padding(end, &bytes).ok_or_else(|| format!("padding after block {} is not plain code", b.id))?)
        } else {
            None
        };
        decoded.push((pieces, falls, padding));
    }
    // Final indices: the first piece of each map block.
    let mut first = Vec::with_capacity(decoded.len());
    let mut at = 0;
    for (pieces, _, padding) in &decoded {
        first.push(at);
        at += pieces.len() + usize::from(padding.as_ref().is_some_and(|p| !p.is_empty()));
    }
    let mut blocks = Vec::with_capacity(at);
    let mut code = Vec::with_capacity(at);
    for (i, (pieces, falls, padding)) in decoded.into_iter().enumerate() {
        let last = pieces.len() - 1;
        let pad = padding.filter(|p| !p.is_empty());
        let after = if i + 1 < first.len() { first[i + 1] } else { usize::MAX };
        let fall_to = if pad.is_some() { first[i] + pieces.len() } else { after };
        for (k, piece) in pieces.into_iter().enumerate() {
            let here = first[i] + k;
            let succs = piece.succs.map(|ss| {
                let mut out: Vec<MachineSucc> = ss
                    .iter()
                    .map(|s| match *s {
                        Next::Block(j) => MachineSucc::Block(first[j]),
                        Next::Piece => MachineSucc::Block(here + 1),
                        Next::Exit => MachineSucc::Exit,
                    })
                    .collect();
                if k == last && falls {
                    out.push(MachineSucc::Block(fall_to));
                }
                out.sort();
                out.dedup();
                out
            });
            let id = if k == 0 { f.blocks[i].id } else { PADDING_ID };
            blocks.push(MachineBlock { id, succs });
            code.push(piece.code);
        }
        if let Some(insns) = pad {
            blocks.push(MachineBlock { id: PADDING_ID, succs: Some(vec![MachineSucc::Block(after)]) });
            code.push(BlockCode { insns, calls: vec![], reps: vec![] });
        }
    }
    Ok(MachineFunction { address: f.address, blocks, code })
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
        // Jump tables live in read-only data.
        let data: Vec<(u64, &[u8])> = obj
            .sections()
            .filter(|s| s.kind() == object::SectionKind::ReadOnlyData)
            .filter_map(|s| Some((s.address(), s.data().ok()?)))
            .collect();
        let in_sections = |sections: &[(u64, &[u8])], a: u64, n: u32| -> Option<Vec<u8>> {
            sections.iter().find_map(|&(base, d)| {
                let off = usize::try_from(a.checked_sub(base)?).ok()?;
                Some(d.get(off..off.checked_add(n as usize)?)?.to_vec())
            })
        };
        let bytes_at = |a: u64, n: u32| in_sections(&code, a, n);
        let data_at = |a: u64, n: u32| in_sections(&data, a, n);
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
        // Jumps into the PLT leave the function (tail calls into other objects' code, e.g. libc's `free`).
        let plt: Vec<(u64, u64)> = obj
            .sections()
            .filter(|s| s.name().is_ok_and(|n| n == ".plt" || n == ".plt.sec" || n == ".plt.got"))
            .map(|s| (s.address(), s.address() + s.size()))
            .collect();
        let is_start = |a: u64| starts.contains(&a) || plt.iter().any(|&(lo, hi)| (lo..hi).contains(&a));
        let mut functions = HashMap::new();
        for f in &maps {
            let Some(name) = names.get(&f.address) else { continue };
            let decoded = if count.get(name).copied().unwrap_or(0) > 1 {
                Err(format!("several functions are named `{name}` in the binary"))
            } else {
                decode_function(f, &bytes_at, &data_at, &is_start)
            };
            functions.insert(name.clone(), decoded);
        }
        Ok(Binary { functions })
    }
}
