//! The `.llvm_bb_addr_map` section (`SHT_LLVM_BB_ADDR_MAP`) that clang's `-fbasic-block-address-map` emits:
//! per function its address and, per machine basic block in layout order, the block's id, offset, size and
//! flags. `pathprof icache` places a trace's blocks at the plain binary's addresses with it. Read from untrusted
//! bytes: never panics. Layout (LLVM 19, versions 1 and 2, 64-bit ELF), per function entry:
//! `u8 version, u8 features, [ULEB ranges if MultiBBRange], per range: u64 address, ULEB blocks, per block:
//! [ULEB id (version ≥ 2)], ULEB offset from the previous block's end, ULEB size, ULEB metadata`, then the PGO
//! analysis map if a feature asks for it (function entry count; per block frequency; per block successors).

/// Block flags (`BBAddrMap::BBEntry::Metadata`).
pub mod flags {
    /// The block ends in a return.
    pub const HAS_RETURN: u32 = 1;
    /// The block ends in a tail call.
    pub const HAS_TAIL_CALL: u32 = 2;
    /// An exception handling landing pad.
    pub const IS_EH_PAD: u32 = 4;
    /// Control may fall through to the next block in layout order.
    pub const CAN_FALL_THROUGH: u32 = 8;
    /// The block ends in an indirect branch (a jump table).
    pub const HAS_INDIRECT_BRANCH: u32 = 16;
}

/// One machine basic block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BbEntry {
    /// The machine block's id: blocks made from IR blocks are numbered first, in the IR order at instruction
    /// selection; blocks codegen adds get later ids.
    pub id: u32,
    /// Address of its first byte.
    pub address: u64,
    /// Size in bytes.
    pub size: u32,
    /// [`flags`].
    pub metadata: u32,
}

/// One function's blocks, in layout order (all ranges concatenated).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionMap {
    /// Address of the function's entry (its first range).
    pub address: u64,
    /// Blocks in layout order.
    pub blocks: Vec<BbEntry>,
    /// Per block (same order), its successors' ids, when the PGO analysis map records them
    /// (`-mllvm -pgo-analysis-map=br-prob`); `None` otherwise.
    pub successors: Option<Vec<Vec<u32>>>,
}

/// Why the section cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BbAddrMapError {
    /// A version this reader does not know.
    Version(u8),
    /// The bytes end inside an entry, or a number does not fit.
    Truncated(usize),
}

impl std::fmt::Display for BbAddrMapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BbAddrMapError::Version(v) => write!(f, "unsupported .llvm_bb_addr_map version {v} (expected 1 or 2)"),
            BbAddrMapError::Truncated(at) => write!(f, ".llvm_bb_addr_map is truncated or corrupt at byte {at}"),
        }
    }
}

impl std::error::Error for BbAddrMapError {}

const FEAT_ENTRY_COUNT: u8 = 1;
const FEAT_BB_FREQ: u8 = 2;
const FEAT_BR_PROB: u8 = 4;
const FEAT_MULTI_RANGE: u8 = 8;

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn u8(&mut self) -> Result<u8, BbAddrMapError> {
        let b = *self.bytes.get(self.at).ok_or(BbAddrMapError::Truncated(self.at))?;
        self.at += 1;
        Ok(b)
    }
    fn u64(&mut self) -> Result<u64, BbAddrMapError> {
        let b = self.bytes.get(self.at..self.at + 8).ok_or(BbAddrMapError::Truncated(self.at))?;
        self.at += 8;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }
    fn uleb(&mut self) -> Result<u64, BbAddrMapError> {
        let start = self.at;
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(BbAddrMapError::Truncated(start))
    }
    fn uleb32(&mut self) -> Result<u32, BbAddrMapError> {
        let start = self.at;
        u32::try_from(self.uleb()?).map_err(|_| BbAddrMapError::Truncated(start))
    }
}

/// Parses a linked executable's section: every function's map, in section order.
pub fn parse(bytes: &[u8]) -> Result<Vec<FunctionMap>, BbAddrMapError> {
    let mut c = Cursor { bytes, at: 0 };
    let mut out = Vec::new();
    while c.at < bytes.len() {
        let version = c.u8()?;
        if !(1..=2).contains(&version) {
            return Err(BbAddrMapError::Version(version));
        }
        let features = c.u8()?;
        let ranges = if features & FEAT_MULTI_RANGE != 0 { c.uleb32()? } else { 1 };
        let mut f = FunctionMap { address: 0, blocks: Vec::new(), successors: None };
        for r in 0..ranges {
            let base = c.u64()?;
            if r == 0 {
                f.address = base;
            }
            let n = c.uleb32()?;
            let mut prev_end = 0u64;
            for index in 0..n {
                let id = if version >= 2 { c.uleb32()? } else { index };
                let at = c.at;
                let offset = prev_end.checked_add(c.uleb()?).ok_or(BbAddrMapError::Truncated(at))?;
                let size = c.uleb32()?;
                let metadata = c.uleb32()?;
                prev_end = offset + u64::from(size);
                let address = base.checked_add(offset).ok_or(BbAddrMapError::Truncated(at))?;
                f.blocks.push(BbEntry { id, address, size, metadata });
            }
        }
        if features & (FEAT_ENTRY_COUNT | FEAT_BB_FREQ | FEAT_BR_PROB) != 0 {
            if features & FEAT_ENTRY_COUNT != 0 {
                c.uleb()?;
            }
            let mut succs = Vec::with_capacity(f.blocks.len());
            for _ in 0..f.blocks.len() {
                if features & FEAT_BB_FREQ != 0 {
                    c.uleb()?;
                }
                let mut here = Vec::new();
                if features & FEAT_BR_PROB != 0 {
                    let n = c.uleb32()?;
                    for _ in 0..n {
                        here.push(c.uleb32()?);
                        c.uleb()?; // branch probability
                    }
                }
                succs.push(here);
            }
            if features & FEAT_BR_PROB != 0 {
                f.successors = Some(succs);
            }
        }
        out.push(f);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first bytes of a section clang-19 wrote for `g` (`llvm-readobj-19 --bb-addr-map` reads the same
    /// blocks: ids 0, 1, 10 at offsets 0x0, 0x4, 0xE with sizes 0x4, 0xA, 0xA).
    const G: [u8; 23] = [
        0x02, 0x00, 0x30, 0x11, 0x40, 0, 0, 0, 0, 0, 0x03, 0x00, 0x00, 0x04, 0x08, 0x01, 0x00, 0x0a, 0x08, 0x0a, 0x00,
        0x0a, 0x00,
    ];

    #[test]
    fn reads_offsets_relative_to_the_previous_block_end() {
        let maps = parse(&G).unwrap();
        assert_eq!(maps.len(), 1);
        let f = &maps[0];
        assert_eq!(f.address, 0x401130);
        let got: Vec<_> = f.blocks.iter().map(|b| (b.id, b.address - 0x401130, b.size, b.metadata)).collect();
        assert_eq!(got, vec![(0, 0, 4, 8), (1, 4, 10, 8), (10, 14, 10, 0)]);
        assert_eq!(f.successors, None);
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        for n in 1..G.len() {
            assert!(parse(&G[..n]).is_err(), "prefix of {n} bytes");
        }
        assert_eq!(parse(&[3, 0]), Err(BbAddrMapError::Version(3)));
        assert_eq!(parse(&[]), Ok(vec![]));
    }

    #[test]
    fn reads_successors_of_the_pgo_analysis_map() {
        // Version 2, BrProb: one block (id 0, size 1, returns) with one successor id 7 (probability 5).
        let bytes = [2, FEAT_BR_PROB, 0, 0x10, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 1, 1, 7, 5];
        let f = &parse(&bytes).unwrap()[0];
        assert_eq!(f.blocks, vec![BbEntry { id: 0, address: 0x1000, size: 1, metadata: 1 }]);
        assert_eq!(f.successors, Some(vec![vec![7]]));
    }
}
