//! Where the ρ values of one procedure's edges are added: a spanning-tree placement of Melski–Reps edge values.
//!
//! The instrumentation keeps `pathNum` in a variable; the numbering (§5.2, Eq. 24) gives each intraprocedural
//! edge u→v a value ρ(u→v) = ⟨a,b⟩ (a linear function of NVC), and a path's number is the sum of the values of its
//! edges. Any *potential* φ (one linear function per block) may be added to the variable without changing a sum
//! observed at a block of potential 0: if the variable holds `true(u) + φ(u)` at every block u, an edge adds
//! ρ'(u→v) = ρ(u→v) + φ(v) − φ(u). Choosing φ so that ρ' = 0 on the edges of a maximum-weight spanning tree is
//! Ball & Larus's event counting (MICRO-29 1996, §3.4; TOPLAS 1994, §3.2) carried over to linear values: the
//! code goes on the cheap edges, and the tree can be steered away from edges whose code would need a block of
//! its own (critical edges) — in a dispatch function those blocks made LLVM 19's CorrelatedValuePropagation
//! exponential (llvm/llvm-project#130110), see the pass's `weights.rs`.
//!
//! Blocks whose potential must be 0 (`fixed_zero`: the entry, where the path starts from its handed-in value,
//! and call and return-site blocks, where the path is handed to a callee and back) are merged into one vertex, so
//! every path between two of them keeps its sum. Edges out of a block of nonzero potential that end a path
//! (return, termination, back edge) subtract φ(u) in their own code; a back edge's restart adds φ(v).
//!
//! Arithmetic is modulo 2^64 ([`Shift`]): ρ' may be "negative", and the path numbers the code computes are exact
//! because every observed sum is a true path number below 2^63.

use super::linear::Linear;
use crate::graph::BlockId;
use crate::spanning::{max_spanning_tree_of, SpanningError};

/// λx.a·x + b modulo 2^64: a potential, or an edge value ρ' after the shift.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct Shift {
    /// The coefficient of NVC.
    pub a: u64,
    /// The constant.
    pub b: u64,
}

impl Shift {
    /// λx.0.
    pub const ZERO: Shift = Shift { a: 0, b: 0 };

    /// `f` modulo 2^64.
    pub fn of(f: Linear) -> Shift {
        Shift { a: f.a as u64, b: f.b as u64 }
    }

    /// a·x + b modulo 2^64.
    pub fn apply(self, x: u64) -> u64 {
        self.a.wrapping_mul(x).wrapping_add(self.b)
    }

    /// As a [`Linear`] whose components are the residues (the emitter works modulo 2^64).
    pub fn as_linear(self) -> Linear {
        Linear::new(u128::from(self.a), u128::from(self.b))
    }
}

impl std::ops::Add for Shift {
    type Output = Shift;
    /// The pointwise sum modulo 2^64.
    fn add(self, other: Shift) -> Shift {
        Shift { a: self.a.wrapping_add(other.a), b: self.b.wrapping_add(other.b) }
    }
}

impl std::ops::Sub for Shift {
    type Output = Shift;
    /// The pointwise difference modulo 2^64.
    fn sub(self, other: Shift) -> Shift {
        Shift { a: self.a.wrapping_sub(other.a), b: self.b.wrapping_sub(other.b) }
    }
}

/// One edge that may carry `path += ρ` code.
#[derive(Copy, Clone, Debug)]
pub struct ValuedEdge {
    /// Source block.
    pub from: BlockId,
    /// Target block.
    pub to: BlockId,
    /// Its value ρ.
    pub rho: Linear,
    /// What code on it would cost (the spanning tree keeps the expensive edges code-free).
    pub weight: f64,
    /// No code can go on it: it must end up with ρ' = 0.
    pub forced: bool,
}

/// Potentials φ, one per block of `num_blocks`, with φ = 0 on `fixed_zero` and ρ' = ρ + φ(to) − φ(from) = 0 on
/// the edges of a maximum-weight spanning forest of `edges` (forced edges first) over the blocks with the
/// `fixed_zero` ones merged. Err when the forced edges close a cycle (then no placement keeps them all free).
pub fn potentials(
    num_blocks: usize,
    edges: &[ValuedEdge],
    fixed_zero: &[BlockId],
) -> Result<Vec<Shift>, SpanningError> {
    let zero = num_blocks; // the merged vertex
    let mut is_zero = vec![false; num_blocks];
    for &b in fixed_zero {
        is_zero[b.index()] = true;
    }
    let vertex = |b: BlockId| if is_zero[b.index()] { BlockId(zero as u32) } else { b };
    let pairs: Vec<(BlockId, BlockId)> = edges.iter().map(|e| (vertex(e.from), vertex(e.to))).collect();
    let weights: Vec<f64> = edges.iter().map(|e| e.weight).collect();
    let forced: Vec<usize> = (0..edges.len()).filter(|&i| edges[i].forced).collect();
    let in_tree = max_spanning_tree_of(num_blocks + 1, &pairs, &weights, &forced)?;

    // Walk the forest from the merged vertex, then from every other component's lowest block (potential 0).
    let mut adjacent: Vec<Vec<usize>> = vec![Vec::new(); num_blocks + 1];
    for (i, &(a, b)) in pairs.iter().enumerate() {
        if in_tree[i] {
            adjacent[a.index()].push(i);
            adjacent[b.index()].push(i);
        }
    }
    let mut phi: Vec<Option<Shift>> = vec![None; num_blocks + 1];
    let mut stack = Vec::new();
    for root in std::iter::once(zero).chain(0..num_blocks) {
        if phi[root].is_some() {
            continue;
        }
        phi[root] = Some(Shift::ZERO);
        stack.push(root);
        while let Some(v) = stack.pop() {
            let here = phi[v].expect("set when pushed");
            for &i in &adjacent[v] {
                let (a, b) = pairs[i];
                let rho = Shift::of(edges[i].rho);
                // ρ + φ(b) − φ(a) = 0 along the tree edge a→b.
                let (other, value) = if a.index() == v { (b.index(), here - rho) } else { (a.index(), here + rho) };
                if phi[other].is_none() {
                    phi[other] = Some(value);
                    stack.push(other);
                }
            }
        }
    }
    Ok((0..num_blocks).map(|b| if is_zero[b] { Shift::ZERO } else { phi[b].expect("every vertex visited") }).collect())
}

/// ρ' of an edge from → to under `phi`.
pub fn shifted(rho: Linear, phi: &[Shift], from: BlockId, to: BlockId) -> Shift {
    Shift::of(rho) + phi[to.index()] - phi[from.index()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    fn edge(from: u32, to: u32, b: u128, weight: f64) -> ValuedEdge {
        ValuedEdge { from: BlockId(from), to: BlockId(to), rho: Linear::new(0, b), weight, forced: false }
    }

    /// A diamond 0→1→3, 0→2→3 with values 0, 0, 1, 0 (the Ball–Larus numbering of its two paths), block 3
    /// returning: with 0 and 3 fixed, one of the four edges must carry the 1, and it is the cheapest one.
    #[test]
    fn diamond_puts_the_value_on_the_cheapest_edge() {
        let edges = [edge(0, 1, 0, 10.0), edge(1, 3, 0, 10.0), edge(0, 2, 1, 10.0), edge(2, 3, 0, 1.0)];
        let phi = potentials(4, &edges, &[BlockId(0), BlockId(3)]).unwrap();
        let coded: Vec<Shift> = edges.iter().map(|e| shifted(e.rho, &phi, e.from, e.to)).collect();
        assert_eq!(coded, [Shift::ZERO, Shift::ZERO, Shift::ZERO, Shift { a: 0, b: 1 }]);
    }

    /// A forced edge stays free even when it is the cheapest.
    #[test]
    fn forced_edges_stay_free() {
        let mut edges = [edge(0, 1, 0, 10.0), edge(1, 3, 0, 10.0), edge(0, 2, 1, 10.0), edge(2, 3, 0, 1.0)];
        edges[3].forced = true;
        let phi = potentials(4, &edges, &[BlockId(0), BlockId(3)]).unwrap();
        let coded: Vec<Shift> = edges.iter().map(|e| shifted(e.rho, &phi, e.from, e.to)).collect();
        assert_eq!(coded[3], Shift::ZERO);
        // The path 0→2→3 still numbers 1, 0→1→3 still 0.
        assert_eq!(coded[2] + coded[3], Shift { a: 0, b: 1 });
        assert_eq!(coded[0] + coded[1], Shift::ZERO);
    }

    /// Random acyclic graphs with random linear values: the spanning forest's edges carry nothing, and every path
    /// between fixed blocks adds up to the same number before and after the shift (checked by enumerating the
    /// paths, at several NVC values).
    #[test]
    fn sums_between_fixed_blocks_are_kept() {
        let mut rng = Rng::new(0x005e_ed0f_9070);
        for _ in 0..300 {
            let n = 2 + rng.below(9);
            let mut edges = Vec::new();
            for from in 0..n - 1 {
                for _ in 0..1 + rng.below(3) {
                    let to = from + 1 + rng.below(n - from - 1);
                    let rho = Linear::new(rng.below(4) as u128, rng.below(1000) as u128);
                    let rho = if rng.chance(3) { Linear::ZERO } else { rho };
                    edges.push(ValuedEdge {
                        from: BlockId(from as u32),
                        to: BlockId(to as u32),
                        rho,
                        weight: rng.below(100) as f64,
                        forced: false,
                    });
                }
            }
            let mut fixed = vec![BlockId(0), BlockId(n as u32 - 1)];
            if n > 3 && rng.chance(2) {
                fixed.push(BlockId(1 + rng.below(n - 2) as u32));
            }
            let phi = potentials(n, &edges, &fixed).unwrap();
            for &f in &fixed {
                assert_eq!(phi[f.index()], Shift::ZERO);
            }
            let coded: Vec<Shift> = edges.iter().map(|e| shifted(e.rho, &phi, e.from, e.to)).collect();
            // The edges of the maximum spanning forest (fixed blocks merged into vertex n) carry nothing.
            let merged = |b: BlockId| if fixed.contains(&b) { BlockId(n as u32) } else { b };
            let pairs: Vec<(BlockId, BlockId)> = edges.iter().map(|e| (merged(e.from), merged(e.to))).collect();
            let weights: Vec<f64> = edges.iter().map(|e| e.weight).collect();
            let tree = max_spanning_tree_of(n + 1, &pairs, &weights, &[]).unwrap();
            for (i, c) in coded.iter().enumerate() {
                assert!(!tree[i] || *c == Shift::ZERO, "tree edge {i} carries {c:?}");
            }
            // Every path from a fixed block to a fixed block, with no fixed block inside.
            for &start in &fixed {
                let mut work = vec![(start.index(), [0u64; 3], [0u64; 3])];
                while let Some((v, orig, new)) = work.pop() {
                    for (i, e) in edges.iter().enumerate().filter(|(_, e)| e.from.index() == v) {
                        let mut o = orig;
                        let mut w = new;
                        for (k, x) in [1u64, 2, 7].iter().enumerate() {
                            o[k] = o[k].wrapping_add(Shift::of(e.rho).apply(*x));
                            w[k] = w[k].wrapping_add(coded[i].apply(*x));
                        }
                        if fixed.contains(&e.to) {
                            assert_eq!(o, w, "sum kept along a path ending at {:?}", e.to);
                        } else {
                            work.push((e.to.index(), o, w));
                        }
                    }
                }
            }
        }
    }
}
