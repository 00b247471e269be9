//! The abstract trace: one token per symbol, as in the papers ("(t, u, v, EOF)"); a token names its activation's
//! function even where the bit-level encodings announce it (a fresh direct call site). It is the reference the
//! bit-level encodings are checked against, and what a human reads in a test.

use super::encode::SymbolSink;
use super::regenerate::{DecisionSource, StreamError};
use super::FuncId;
use crate::graph::BlockId;

/// One symbol of a trace.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Token {
    /// A witness value of the current function.
    Witness(u32),
    /// The end of an activation, when its placement needs one (the papers' EOF); its value is the function's
    /// number of witness values.
    Eof,
    /// An activation of a function begins.
    Enter(FuncId),
    /// A call site (or the thread) is done.
    Done,
}

/// Collects tokens; the EOF value of each function is told apart by the encoder's context (it is the value
/// after the function's witnesses), so it is written as [`Token::Eof`].
#[derive(Clone, Debug, Default)]
pub struct TokenSink {
    /// The tokens so far.
    pub tokens: Vec<Token>,
    eof_values: Vec<u32>,
}

impl TokenSink {
    /// A sink for `program` (which knows each function's EOF value).
    pub fn new(program: &super::Program) -> TokenSink {
        TokenSink { tokens: Vec::new(), eof_values: program.funcs.iter().map(|t| t.eof).collect() }
    }
}

impl SymbolSink for TokenSink {
    fn witness(&mut self, f: FuncId, _v: BlockId, _width: u8, value: u32) {
        let eof = self.eof_values.get(f.index()) == Some(&value);
        self.tokens.push(if eof { Token::Eof } else { Token::Witness(value) });
    }
    fn enter(&mut self, f: FuncId, _announced: Option<FuncId>, _func_bits: u8) {
        self.tokens.push(Token::Enter(f));
    }
    fn done(&mut self, _announced: Option<FuncId>, _func_bits: u8) {
        self.tokens.push(Token::Done);
    }
}

/// Reads tokens back for the regenerator.
#[derive(Clone, Debug)]
pub struct TokenSource<'a> {
    tokens: &'a [Token],
    eof_values: Vec<u32>,
    pos: usize,
}

impl<'a> TokenSource<'a> {
    /// Reads `tokens` of a trace of `program`.
    pub fn new(program: &super::Program, tokens: &'a [Token]) -> TokenSource<'a> {
        TokenSource { tokens, eof_values: program.funcs.iter().map(|t| t.eof).collect(), pos: 0 }
    }

    /// Tokens not read yet.
    pub fn remaining(&self) -> usize {
        self.tokens.len() - self.pos
    }

    fn next(&mut self) -> Result<Token, StreamError> {
        let t = *self.tokens.get(self.pos).ok_or(StreamError::Ended)?;
        self.pos += 1;
        Ok(t)
    }
}

impl DecisionSource for TokenSource<'_> {
    fn witness(&mut self, f: FuncId, _v: BlockId, _width: u8) -> Result<u32, StreamError> {
        match self.next()? {
            Token::Witness(w) => Ok(w),
            Token::Eof => self.eof_values.get(f.index()).copied().ok_or(StreamError::Unexpected),
            _ => Err(StreamError::Unexpected),
        }
    }
    fn activation(&mut self, _announced: Option<FuncId>, _func_bits: u8) -> Result<Option<FuncId>, StreamError> {
        match self.next()? {
            Token::Enter(f) => Ok(Some(f)),
            Token::Done => Ok(None),
            _ => Err(StreamError::Unexpected),
        }
    }
}
