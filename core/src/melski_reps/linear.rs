//! Linear functions of one variable, λx.a·x + b, stored as the pair ⟨a, b⟩.
//!
//! Melski & Reps, "Interprocedural Path Profiling", CC 1999 / UW–Madison TR-1382, 1998, §5.2.2: every ψ
//! (vertex) and ρ (edge) function of interprocedural path profiling is linear, and linear functions are closed
//! under composition, ⟨a,b⟩∘⟨c,d⟩ = ⟨a·c, a·d + b⟩, and pointwise sum, ⟨a,b⟩ + ⟨c,d⟩ = ⟨a + c, b + d⟩.
//!
//! Invariant: every operation is checked `u128` arithmetic and returns `None` on overflow — a path count or path
//! number is never wrapped.

use std::fmt;

/// The linear function λx.a·x + b (the paper's ordered pair ⟨a, b⟩).
/// Ordered lexicographically by (a, b), only so that tables of functions can be sorted deterministically.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct Linear {
    /// The coefficient `a`.
    pub a: u128,
    /// The constant `b`.
    pub b: u128,
}

impl Linear {
    /// ⟨0,0⟩: the ρ of a first successor, and the ψ of a vertex with no completions.
    pub const ZERO: Linear = Linear { a: 0, b: 0 };
    /// ⟨1,0⟩ = id: ψ of Exit_P (Eq. 19).
    pub const IDENTITY: Linear = Linear { a: 1, b: 0 };
    /// ⟨0,1⟩ = λx.1: ψ of GExit_P (Eq. 20) — a path that reaches GExit_P has exactly one completion.
    pub const ONE: Linear = Linear { a: 0, b: 1 };

    /// ⟨a, b⟩.
    pub const fn new(a: u128, b: u128) -> Linear {
        Linear { a, b }
    }

    /// a·x + b, or `None` on overflow.
    pub fn checked_apply(self, x: u128) -> Option<u128> {
        self.a.checked_mul(x)?.checked_add(self.b)
    }

    /// `self ∘ inner` = λz.self(inner(z)) = ⟨a·c, a·d + b⟩, or `None` on overflow.
    pub fn checked_compose(self, inner: Linear) -> Option<Linear> {
        let a = self.a.checked_mul(inner.a)?;
        let b = self.a.checked_mul(inner.b)?.checked_add(self.b)?;
        Some(Linear { a, b })
    }

    /// `self + other` = λz.self(z) + other(z) = ⟨a + c, b + d⟩, or `None` on overflow.
    pub fn checked_add(self, other: Linear) -> Option<Linear> {
        Some(Linear { a: self.a.checked_add(other.a)?, b: self.b.checked_add(other.b)? })
    }

    /// Whether this is ⟨0,0⟩ (the instrumentation emits no code for such an edge, §5.5 step 8).
    pub fn is_zero(self) -> bool {
        self == Linear::ZERO
    }
}

impl fmt::Display for Linear {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "⟨{},{}⟩", self.a, self.b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The composition and sum oracles of the notes (§4.4): the call-site ψ of Fig. 7 and the §5.5.1 folding.
    #[test]
    fn melski_reps_1998_linear_function_oracles() {
        let psi_u1 = Linear::new(2, 2);
        assert_eq!(psi_u1.checked_compose(Linear::new(0, 5)), Some(Linear::new(0, 12)));
        assert_eq!(psi_u1.checked_compose(Linear::new(0, 1)), Some(Linear::new(0, 4)));
        assert_eq!(Linear::new(0, 12).checked_add(Linear::new(0, 5)), Some(Linear::new(0, 17)));
        let folded = Linear::new(2, 2).checked_add(Linear::new(3, 4)).and_then(|s| s.checked_add(Linear::new(5, 3)));
        assert_eq!(folded, Some(Linear::new(10, 9)));
        // ψ_u1(5) = 12 and ψ_u1(1) = 4: the two copies of pow in Fig. 6.
        assert_eq!(psi_u1.checked_apply(5), Some(12));
        assert_eq!(psi_u1.checked_apply(1), Some(4));
        assert_eq!(format!("{psi_u1}"), "⟨2,2⟩");
    }

    #[test]
    fn overflow_is_none_never_a_wrap() {
        let big = Linear::new(u128::MAX, 0);
        assert_eq!(big.checked_apply(2), None);
        assert_eq!(Linear::new(1, u128::MAX).checked_apply(1), None);
        assert_eq!(big.checked_compose(Linear::new(2, 0)), None);
        assert_eq!(Linear::new(2, 0).checked_compose(Linear::new(0, u128::MAX)), None);
        assert_eq!(big.checked_add(Linear::IDENTITY), None);
        assert_eq!(Linear::IDENTITY.checked_compose(big), Some(big));
        assert!(Linear::ZERO.is_zero() && !Linear::ONE.is_zero());
    }
}
