//! Profile-driven entropy coding of bit tracing's decisions: each predicate's outcome is range-coded with the
//! branch probabilities of an earlier edge profile, so a hot, predictable branch costs a small fraction of a
//! bit and a trace approaches the entropy of the program's branching.
//!
//! The model of an N-way predicate gives out-edge i the frequency 1 + ⌊c_i · (2^15 − N) / C⌋ (c_i its count,
//! C their sum; the rounding remainder goes to the most frequent edge; no counts: equal shares), so an edge
//! the profile never saw still costs at most 15 bits rather than being unencodable. Activations are coded
//! like the fixed-width encodings: one flag (probability ½) and ⌈log2 F⌉ raw bits of function id (at a fresh
//! direct call site the fixed-width encodings' `1`, `00`, `01` + id, as raw bits).

use super::encode::SymbolSink;
use super::range_coder::{RangeDecoder, RangeEncoder, PROB_BITS};
use super::regenerate::{DecisionSource, StreamError};
use super::tables::Program;
use super::FuncId;
use crate::graph::BlockId;

const NONE: u32 = u32::MAX;

/// One function's frequency tables: predicate `v`'s cumulative table is `cum[start[v]..=start[v] + ways[v]]`.
#[derive(Clone, Debug)]
struct FuncModel {
    start: Vec<u32>,
    ways: Vec<u32>,
    cum: Vec<u32>,
}

/// The branch models of a program's predicates, from an edge profile.
#[derive(Clone, Debug)]
pub struct EntropyModels {
    funcs: Vec<FuncModel>,
}

/// Why models could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// Entropy coding codes bit tracing's decisions; this function was placed otherwise.
    #[error("function {0} is not traced with bit tracing")]
    NotBitTracing(FuncId),
    /// The profile does not have one count per edge of each function.
    #[error("edge counts of function {0} do not fit its CFG")]
    CountMismatch(FuncId),
    /// A predicate has more out-edges than a table can give a frequency of at least 1.
    #[error("function {func} block {block} has too many successors to code")]
    TooManyWays {
        /// The function.
        func: FuncId,
        /// The predicate.
        block: BlockId,
    },
}

/// Frequencies ≥ 1 summing to 2^PROB_BITS, proportional to `counts` (see the module docs).
pub(crate) fn quantize(counts: &[u64]) -> Option<Vec<u32>> {
    let total = 1u64 << PROB_BITS;
    let n = counts.len() as u64;
    if n == 0 || n > total {
        return None;
    }
    let sum: u128 = counts.iter().map(|&c| u128::from(c)).sum();
    let mut f: Vec<u32> = if sum == 0 {
        vec![(total / n) as u32; counts.len()]
    } else {
        counts.iter().map(|&c| 1 + (u128::from(c) * u128::from(total - n) / sum) as u32).collect()
    };
    let used: u64 = f.iter().map(|&x| u64::from(x)).sum();
    let hot = (0..counts.len()).max_by_key(|&i| (counts[i], std::cmp::Reverse(i))).expect("n > 0");
    f[hot] += (total - used) as u32;
    Some(f)
}

impl EntropyModels {
    /// Models for `program` from `counts[f][e]`, the count of edge e of function f in an earlier profile.
    pub fn from_edge_counts(program: &Program, counts: &[Vec<u64>]) -> Result<EntropyModels, ModelError> {
        let mut funcs = Vec::with_capacity(program.funcs.len());
        for (i, t) in program.funcs.iter().enumerate() {
            let f = FuncId::from_index(i);
            if !t.bit_tracing {
                return Err(ModelError::NotBitTracing(f));
            }
            let c = counts.get(i).filter(|c| c.len() == t.edge_from.len()).ok_or(ModelError::CountMismatch(f))?;
            // Out-edge i of a predicate writes i (bit tracing), so each table is in value order.
            let mut outs: Vec<Vec<(u32, u64)>> = vec![Vec::new(); t.num_vertices()];
            for (e, &w) in t.edge_witness.iter().enumerate() {
                if w != super::tables::NONE {
                    outs[t.edge_from[e].index()].push((w, c[e]));
                }
            }
            let mut start = vec![NONE; t.num_vertices()];
            let mut cum = Vec::new();
            for (v, mut o) in outs.into_iter().enumerate() {
                if o.len() < 2 {
                    continue;
                }
                o.sort_unstable();
                let freqs: Vec<u64> = o.iter().map(|&(_, n)| n).collect();
                let block = BlockId::from_index(v);
                let q = quantize(&freqs).ok_or(ModelError::TooManyWays { func: f, block })?;
                start[v] = cum.len() as u32;
                let mut acc = 0;
                cum.push(0);
                for x in q {
                    acc += x;
                    cum.push(acc);
                }
            }
            funcs.push(FuncModel { start, ways: t.out_degree.clone(), cum });
        }
        Ok(EntropyModels { funcs })
    }

    #[inline]
    fn table(&self, f: FuncId, v: BlockId) -> Option<&[u32]> {
        let m = self.funcs.get(f.index())?;
        let s = *m.start.get(v.index())?;
        if s == NONE {
            return None;
        }
        let s = s as usize;
        m.cum.get(s..=s + m.ways[v.index()] as usize)
    }
}

/// Range-codes decisions with [`EntropyModels`].
#[derive(Clone, Debug)]
pub struct EntropySink<'m> {
    models: &'m EntropyModels,
    enc: RangeEncoder,
}

impl<'m> EntropySink<'m> {
    /// An empty stream coded with `models`.
    pub fn new(models: &'m EntropyModels) -> EntropySink<'m> {
        EntropySink { models, enc: RangeEncoder::new() }
    }

    /// The coded stream.
    pub fn finish(self) -> Vec<u8> {
        self.enc.finish()
    }
}

impl SymbolSink for EntropySink<'_> {
    fn witness(&mut self, f: FuncId, v: BlockId, _width: u8, value: u32) {
        let t = self.models.table(f, v).expect("bit tracing writes only at predicates");
        let i = value as usize;
        self.enc.encode(t[i], t[i + 1] - t[i], PROB_BITS);
    }
    fn enter(&mut self, f: FuncId, announced: Option<FuncId>, func_bits: u8) {
        match announced {
            Some(g) if g == f => self.enc.encode_bits(1, 1),
            Some(_) => {
                self.enc.encode_bits(0, 1);
                self.enc.encode_bits(1, 1);
                self.enc.encode_bits(f.0, func_bits);
            }
            None => {
                self.enc.encode_bits(1, 1);
                self.enc.encode_bits(f.0, func_bits);
            }
        }
    }
    fn done(&mut self, announced: Option<FuncId>, _func_bits: u8) {
        self.enc.encode_bits(0, 1);
        if announced.is_some() {
            self.enc.encode_bits(0, 1);
        }
    }
}

/// Decodes what an [`EntropySink`] wrote, with the same models.
#[derive(Clone, Debug)]
pub struct EntropySource<'a> {
    models: &'a EntropyModels,
    dec: RangeDecoder<'a>,
}

impl<'a> EntropySource<'a> {
    /// Starts decoding `bytes`.
    pub fn new(models: &'a EntropyModels, bytes: &'a [u8]) -> Result<EntropySource<'a>, StreamError> {
        Ok(EntropySource { models, dec: RangeDecoder::new(bytes)? })
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.dec.remaining()
    }
}

impl DecisionSource for EntropySource<'_> {
    #[inline]
    fn witness(&mut self, f: FuncId, v: BlockId, _width: u8) -> Result<u32, StreamError> {
        let t = self.models.table(f, v).ok_or(StreamError::Unexpected)?;
        let x = self.dec.target(PROB_BITS)?;
        // Tables are short (a predicate's out-degree): a linear scan beats a binary search.
        let i = t[1..].iter().position(|&c| x < c).ok_or(StreamError::Unexpected)?;
        self.dec.consume(t[i], t[i + 1] - t[i])?;
        Ok(i as u32)
    }
    fn activation(&mut self, announced: Option<FuncId>, func_bits: u8) -> Result<Option<FuncId>, StreamError> {
        let flag = self.dec.decode_bits(1)?;
        if let Some(g) = announced {
            if flag == 1 {
                return Ok(Some(g));
            }
            if self.dec.decode_bits(1)? == 0 {
                return Ok(None);
            }
        } else if flag == 0 {
            return Ok(None);
        }
        Ok(Some(FuncId(self.dec.decode_bits(func_bits)?)))
    }
}
