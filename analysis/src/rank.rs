//! Hottest-first order of counted paths, shared by path mode and the interprocedural modes.

use std::cmp::Reverse;

/// A counted path as ranked: its net count and its (unique) path number.
pub trait Ranked {
    /// The net count.
    fn count(&self) -> i64;
    /// The path number; it breaks ties, so the order is total and the same however it is computed.
    fn number(&self) -> u128;
}

/// The `limit` hottest of `paths` (all of them without a limit), hottest first: by descending count, ties by
/// ascending path number. Selects before it sorts, so `decode` listing the top 10 of a function's 46,000 paths
/// sorts 10, not 46,000.
pub fn hottest<T: Ranked>(mut paths: Vec<&T>, limit: Option<usize>) -> Vec<&T> {
    let key = |p: &&T| (Reverse(p.count()), p.number());
    if let Some(n) = limit.filter(|&n| n < paths.len()) {
        let Some(last) = n.checked_sub(1) else { return Vec::new() };
        paths.select_nth_unstable_by_key(last, key);
        paths.truncate(n);
    }
    paths.sort_unstable_by_key(key);
    paths
}

#[cfg(test)]
mod tests {
    use super::{hottest, Ranked};

    struct P(i64, u128);

    impl Ranked for P {
        fn count(&self) -> i64 {
            self.0
        }
        fn number(&self) -> u128 {
            self.1
        }
    }

    fn numbers(v: &[&P]) -> Vec<u128> {
        v.iter().map(|p| p.1).collect()
    }

    #[test]
    fn hottest_first_with_ties_by_number() {
        let paths = [P(5, 7), P(-2, 1), P(9, 4), P(5, 3), P(0, 0), P(9, 2)];
        let all: Vec<&P> = paths.iter().collect();
        assert_eq!(numbers(&hottest(all.clone(), None)), [2, 4, 3, 7, 0, 1]);
        assert_eq!(numbers(&hottest(all.clone(), Some(3))), [2, 4, 3]);
        assert_eq!(numbers(&hottest(all.clone(), Some(6))), [2, 4, 3, 7, 0, 1]);
        assert_eq!(numbers(&hottest(all.clone(), Some(60))), [2, 4, 3, 7, 0, 1]);
        assert!(hottest(all, Some(0)).is_empty());
    }

    #[test]
    fn selection_agrees_with_a_full_sort() {
        let mut rng = Lcg(12345);
        for len in 0..40 {
            let paths: Vec<P> = (0..len).map(|n| P((rng.next() % 7) as i64 - 2, n)).collect();
            let all: Vec<&P> = paths.iter().collect();
            let mut sorted = all.clone();
            sorted.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            for limit in 0..=len as usize + 1 {
                let expected: Vec<u128> = sorted.iter().take(limit).map(|p| p.1).collect();
                assert_eq!(numbers(&hottest(all.clone(), Some(limit))), expected, "len {len} limit {limit}");
            }
        }
    }

    /// A small linear congruential generator (Knuth's MMIX constants), for reproducible inputs.
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            self.0 >> 33
        }
    }
}
