//! A byte-oriented range coder (Martin 1979; the carry-propagating variant of LZMA's `rc`, Pavlov) over
//! static frequency tables whose total is a power of two.
//!
//! Why hand-rolled rather than a crate (e.g. `constriction`): the same coder must later run inside the
//! instrumented program, whose runtime is `no_std`, links no allocator-backed containers on hot paths and
//! flushes per-thread buffers in blocks that must decode on their own (the flight recorder drops old ones).
//! That wants a FIFO coder (ANS codes in reverse order, so a stream cannot be emitted as it is produced) with
//! integer-only state of 13 bytes and one output byte at a time — a few dozen lines, checked here by
//! round-trip property tests and by its size against the empirical entropy. Precision: frequencies total
//! 2^[`PROB_BITS`] and the range is renormalised to at least 2^24, so a symbol costs at most
//! log2(1 / (1 − 2^(PROB_BITS − 24))) ≈ 0.003 bits above −log2(freq / total); a stream adds at most 5 bytes.

use super::regenerate::StreamError;

/// Bits of a frequency table's total (every table sums to 2^PROB_BITS).
pub const PROB_BITS: u32 = 15;
const TOP: u32 = 1 << 24;

/// Encoder state; [`RangeEncoder::finish`] returns the bytes.
#[derive(Clone, Debug)]
pub struct RangeEncoder {
    low: u64,
    range: u32,
    cache: u8,
    cache_size: u64,
    out: Vec<u8>,
}

impl Default for RangeEncoder {
    fn default() -> Self {
        RangeEncoder { low: 0, range: u32::MAX, cache: 0, cache_size: 1, out: Vec::new() }
    }
}

impl RangeEncoder {
    /// An empty stream.
    pub fn new() -> RangeEncoder {
        RangeEncoder::default()
    }

    /// Codes the symbol occupying `cum..cum + freq` of a table totalling 2^`total_bits` (≤ 16; freq ≥ 1).
    #[inline]
    pub fn encode(&mut self, cum: u32, freq: u32, total_bits: u32) {
        debug_assert!(freq >= 1 && total_bits <= 16 && cum + freq <= 1 << total_bits);
        let r = self.range >> total_bits;
        self.low += u64::from(r) * u64::from(cum);
        self.range = r * freq;
        while self.range < TOP {
            self.range <<= 8;
            self.shift_low();
        }
    }

    /// Codes `bits` (≤ 32) raw bits of `value`, 16 at a time.
    pub fn encode_bits(&mut self, value: u32, bits: u8) {
        let mut left = u32::from(bits);
        while left > 0 {
            let n = left.min(16);
            left -= n;
            self.encode((value >> left) & ((1 << n) - 1), 1, n);
        }
    }

    /// Moves the top byte of `low` out, holding back a run of 0xFF bytes a carry may still ripple through.
    fn shift_low(&mut self) {
        if (self.low as u32) < 0xFF00_0000 || (self.low >> 32) != 0 {
            let carry = (self.low >> 32) as u8;
            let mut temp = self.cache;
            loop {
                self.out.push(temp.wrapping_add(carry));
                temp = 0xFF;
                self.cache_size -= 1;
                if self.cache_size == 0 {
                    break;
                }
            }
            self.cache = (self.low >> 24) as u8;
        }
        self.cache_size += 1;
        self.low = (self.low & 0x00FF_FFFF) << 8;
    }

    /// Flushes and returns the stream (its first byte is always 0, as in LZMA).
    pub fn finish(mut self) -> Vec<u8> {
        for _ in 0..5 {
            self.shift_low();
        }
        self.out
    }
}

/// Decoder state over a finished stream; reading past its end is [`StreamError::Ended`].
#[derive(Clone, Debug)]
pub struct RangeDecoder<'a> {
    bytes: &'a [u8],
    pos: usize,
    code: u32,
    range: u32,
    r: u32,
}

impl<'a> RangeDecoder<'a> {
    /// Starts decoding `bytes`.
    pub fn new(bytes: &'a [u8]) -> Result<RangeDecoder<'a>, StreamError> {
        if bytes.len() < 5 {
            return Err(StreamError::Ended);
        }
        if bytes[0] != 0 {
            return Err(StreamError::Unexpected);
        }
        let code = u32::from_be_bytes(bytes[1..5].try_into().expect("4 bytes"));
        Ok(RangeDecoder { bytes, pos: 5, code, range: u32::MAX, r: 0 })
    }

    /// Bytes not read yet (0 once a whole stream is decoded).
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// The position of the next symbol in a table totalling 2^`total_bits`; follow with [`Self::consume`].
    #[inline]
    pub fn target(&mut self, total_bits: u32) -> Result<u32, StreamError> {
        self.r = self.range >> total_bits;
        let v = self.code / self.r;
        if v >> total_bits != 0 {
            return Err(StreamError::Unexpected);
        }
        Ok(v)
    }

    /// Removes the symbol `cum..cum + freq` that [`Self::target`] fell in.
    #[inline]
    pub fn consume(&mut self, cum: u32, freq: u32) -> Result<(), StreamError> {
        self.code -= self.r * cum;
        self.range = self.r * freq;
        while self.range < TOP {
            let b = *self.bytes.get(self.pos).ok_or(StreamError::Ended)?;
            self.pos += 1;
            self.range <<= 8;
            self.code = (self.code << 8) | u32::from(b);
        }
        Ok(())
    }

    /// Decodes `bits` (≤ 32) raw bits written by [`RangeEncoder::encode_bits`].
    pub fn decode_bits(&mut self, bits: u8) -> Result<u32, StreamError> {
        let mut left = u32::from(bits);
        let mut value = 0;
        while left > 0 {
            let n = left.min(16);
            left -= n;
            let v = self.target(n)?;
            self.consume(v, 1)?;
            value = (value << n) | v;
        }
        Ok(value)
    }
}
