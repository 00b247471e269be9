//! Fixed-width bit encodings: per-witness tokens (⌈log2 n⌉ bits for a function with n witness values) and bit
//! tracing (⌈log2 N⌉ bits for an N-way predicate), which differ only in the width the tables give each read.
//!
//! Activations cost one flag bit (1 = `Enter`, 0 = `Done`) plus ⌈log2 F⌉ bits of function id for a program of
//! F functions; at a fresh direct call site (`regenerate`, "Direct calls") the announced callee's entry is `1`,
//! Done `00` and any other activation `01` and its id. Bits are packed least-significant first into bytes; the
//! stream records its exact length, so a truncated trace is detected, never read past.
//!
//! # Entry cache
//! Entries with a full id come mostly from code the trace does not see (a library calling back into the
//! program, bodies inlined after instrumentation), and a few callees account for most of them. With an entry
//! cache ([`BitWriter::with_entry_cache`], [`BitReader::with_entry_cache`]) writer and reader keep the same
//! direct-mapped table of 2^k ids: after its prefix, a full-id activation writes `1` and the k-bit slot
//! `id mod 2^k` when that slot holds the id, else `0` and the id; either way the slot then holds the id. The
//! table starts empty (every slot [`EntryCache::EMPTY`], no id) and both sides empty it at the same stream
//! positions (a sync point the reader may start from: [`BitWriter::clear_cache_at`]).

use super::encode::SymbolSink;
use super::regenerate::{Abandon, DecisionSource, Resync, StreamError, Unwind};
use super::FuncId;
use crate::graph::BlockId;

/// A packed bit stream and its exact length in bits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BitTrace {
    /// The bits, least-significant first; the last byte's unused high bits are 0.
    pub bytes: Vec<u8>,
    /// The number of bits.
    pub bits: u64,
}

/// The direct-mapped table of recently entered ids both sides of an entry-cached stream keep (module docs,
/// "Entry cache").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryCache {
    bits: u8,
    slots: Vec<u32>,
}

impl EntryCache {
    /// What an empty slot holds (no function id: ids have at most 31 bits).
    pub const EMPTY: u32 = u32::MAX;

    /// An empty table of 2^`bits` slots (`bits` ≤ 16).
    pub fn new(bits: u8) -> EntryCache {
        let bits = bits.min(16);
        EntryCache { bits, slots: vec![Self::EMPTY; 1 << bits] }
    }

    /// Bits of a slot index.
    pub fn slot_bits(&self) -> u8 {
        self.bits
    }

    /// The slot of `id`.
    #[inline]
    pub fn slot(&self, id: u32) -> u32 {
        id & ((1u32 << self.bits) - 1)
    }

    /// Whether the table holds `id`; then it does in any case (the writer's step).
    #[inline]
    pub fn lookup_and_insert(&mut self, id: u32) -> bool {
        let s = self.slot(id) as usize;
        let hit = self.slots[s] == id;
        self.slots[s] = id;
        hit
    }

    /// The id in slot `slot` (the reader's step on a hit).
    #[inline]
    pub fn at(&self, slot: u32) -> u32 {
        self.slots[slot as usize]
    }

    /// Puts `id` in its slot (the reader's step on a miss).
    #[inline]
    pub fn insert(&mut self, id: u32) {
        let s = self.slot(id) as usize;
        self.slots[s] = id;
    }

    /// Empties the table (a sync point).
    pub fn clear(&mut self) {
        self.slots.fill(Self::EMPTY);
    }
}

/// Appends bits to a [`BitTrace`]; also the [`SymbolSink`] of both fixed-width encodings.
#[derive(Clone, Debug, Default)]
pub struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    nacc: u32,
    bits: u64,
    cache: Option<EntryCache>,
    /// Empty the cache before the first symbol written at or after this bit.
    clear_at: Option<u64>,
}

impl BitWriter {
    /// An empty stream.
    pub fn new() -> BitWriter {
        BitWriter::default()
    }

    /// An empty stream whose full-id activations go through an entry cache of 2^`bits` slots.
    pub fn with_entry_cache(bits: u8) -> BitWriter {
        BitWriter { cache: Some(EntryCache::new(bits)), ..BitWriter::default() }
    }

    /// Empties the entry cache before the first symbol written at or after bit `bit` (where the writer takes a
    /// sync point a reader may start from with an empty cache).
    pub fn clear_cache_at(&mut self, bit: u64) {
        self.clear_at = Some(bit);
    }

    /// Bits written so far.
    pub fn len(&self) -> u64 {
        self.bits
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.bits == 0
    }

    /// Before a symbol: a pending clear whose bit is reached.
    #[inline]
    fn at_symbol(&mut self) {
        if self.clear_at.is_some_and(|x| self.bits >= x) {
            self.clear_at = None;
            if let Some(c) = &mut self.cache {
                c.clear();
            }
        }
    }

    /// A full function id after an activation's prefix: through the entry cache if there is one.
    fn write_id(&mut self, id: u32, func_bits: u8) {
        match self.cache.as_mut().map(|c| (c.lookup_and_insert(id), c.slot(id), c.slot_bits())) {
            Some((true, slot, sb)) => {
                self.write(1, 1);
                self.write(slot, sb);
            }
            Some((false, _, _)) => {
                self.write(0, 1);
                self.write(id, func_bits);
            }
            None => self.write(id, func_bits),
        }
    }

    /// Appends the low `width` bits of `value` (width ≤ 32).
    #[inline]
    pub fn write(&mut self, value: u32, width: u8) {
        debug_assert!(width <= 32 && (width == 32 || value >> width == 0));
        self.acc |= u64::from(value) << self.nacc;
        self.nacc += u32::from(width);
        self.bits += u64::from(width);
        while self.nacc >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.nacc -= 8;
        }
    }

    /// The stream so far.
    pub fn finish(mut self) -> BitTrace {
        if self.nacc > 0 {
            self.out.push(self.acc as u8);
        }
        BitTrace { bytes: self.out, bits: self.bits }
    }
}

impl SymbolSink for BitWriter {
    #[inline]
    fn witness(&mut self, _f: FuncId, _v: BlockId, width: u8, value: u32) {
        self.at_symbol();
        self.write(value, width);
    }
    fn enter(&mut self, f: FuncId, announced: Option<FuncId>, func_bits: u8) {
        self.at_symbol();
        match announced {
            Some(g) if g == f => self.write(1, 1),
            Some(_) => {
                self.write(0b10, 2);
                self.write_id(f.0, func_bits);
            }
            None => {
                self.write(1, 1);
                self.write_id(f.0, func_bits);
            }
        }
    }
    fn done(&mut self, announced: Option<FuncId>, _func_bits: u8) {
        self.at_symbol();
        self.write(0, if announced.is_some() { 2 } else { 1 });
    }
}

/// Reads a [`BitTrace`]; the [`DecisionSource`] of both fixed-width encodings.
#[derive(Clone, Debug)]
pub struct BitReader<'a> {
    bytes: &'a [u8],
    pos: u64,
    bits: u64,
    cache: Option<EntryCache>,
}

impl<'a> BitReader<'a> {
    /// Reads `trace` from its first bit.
    pub fn new(trace: &'a BitTrace) -> BitReader<'a> {
        BitReader { bytes: &trace.bytes, pos: 0, bits: trace.bits.min(trace.bytes.len() as u64 * 8), cache: None }
    }

    /// Reads the first `bits` bits of `bytes` (a stream held elsewhere; fewer if `bytes` holds fewer).
    pub fn over(bytes: &'a [u8], bits: u64) -> BitReader<'a> {
        BitReader { bytes, pos: 0, bits: bits.min(bytes.len() as u64 * 8), cache: None }
    }

    /// The same reader for a stream written with an entry cache of 2^`bits` slots (empty where the reader
    /// starts: the stream's start or a sync point).
    pub fn with_entry_cache(mut self, bits: u8) -> BitReader<'a> {
        self.cache = Some(EntryCache::new(bits));
        self
    }

    /// A full function id after an activation's prefix (module docs, "Entry cache").
    #[inline]
    fn read_id(&mut self, func_bits: u8) -> Result<u32, StreamError> {
        let Some(sb) = self.cache.as_ref().map(EntryCache::slot_bits) else { return self.read(func_bits) };
        let hit = self.read(1)? == 1;
        let id = if hit { self.read(sb)? } else { self.read(func_bits)? };
        let cache = self.cache.as_mut().expect("checked above");
        Ok(if hit {
            cache.at(id)
        } else {
            cache.insert(id);
            id
        })
    }

    /// Skips `bits` bits (a stream read from a sync point, not from its first bit); false if there are fewer.
    pub fn skip(&mut self, bits: u64) -> bool {
        if self.bits - self.pos < bits {
            return false;
        }
        self.pos += bits;
        true
    }

    /// Bits not read yet.
    pub fn remaining(&self) -> u64 {
        self.bits - self.pos
    }

    /// The next `width` bits (width ≤ 32) as a number.
    #[inline]
    pub fn read(&mut self, width: u8) -> Result<u32, StreamError> {
        let w = u64::from(width);
        if self.bits - self.pos < w {
            return Err(StreamError::Ended);
        }
        let byte = (self.pos / 8) as usize;
        let shift = self.pos % 8;
        let word = match self.bytes.get(byte..byte + 8) {
            Some(b) => u64::from_le_bytes(b.try_into().expect("8 bytes")),
            None => {
                let mut b = [0u8; 8];
                let tail = &self.bytes[byte..];
                b[..tail.len()].copy_from_slice(tail);
                u64::from_le_bytes(b)
            }
        };
        self.pos += w;
        // shift + width ≤ 7 + 32 < 64: one load holds every bit of the token.
        Ok(((word >> shift) & ((1u64 << w) - 1)) as u32)
    }
}

impl DecisionSource for BitReader<'_> {
    #[inline]
    fn witness(&mut self, _f: FuncId, _v: BlockId, width: u8) -> Result<u32, StreamError> {
        self.read(width)
    }
    #[inline]
    fn activation(&mut self, announced: Option<FuncId>, func_bits: u8) -> Result<Option<FuncId>, StreamError> {
        let flag = self.read(1)?;
        if let Some(g) = announced {
            if flag == 1 {
                return Ok(Some(g));
            }
            if self.read(1)? == 0 {
                return Ok(None);
            }
        } else if flag == 0 {
            return Ok(None);
        }
        Ok(Some(FuncId(self.read_id(func_bits)?)))
    }
    /// A resync marker's fields after its id: function (`func_bits`), depth, block and call (32 bits each).
    fn resync(&mut self, func_bits: u8) -> Result<Resync, StreamError> {
        Ok(Resync {
            func: FuncId(self.read(func_bits)?),
            depth: self.read(32)?,
            block: BlockId(self.read(32)?),
            call: self.read(32)?,
        })
    }
    /// An unwind marker's fields after its id: function (`func_bits`) and depth (32 bits).
    fn unwind(&mut self, func_bits: u8) -> Result<Unwind, StreamError> {
        Ok(Unwind { func: FuncId(self.read(func_bits)?), depth: self.read(32)? })
    }
    /// An abandon marker's fields after its id: the returning activation's depth and its call site's number
    /// (32 bits each).
    fn abandon(&mut self) -> Result<Abandon, StreamError> {
        Ok(Abandon { depth: self.read(32)?, site: self.read(32)? })
    }
}
