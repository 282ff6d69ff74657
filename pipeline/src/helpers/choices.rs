//! Choice sequences for the property tests' generators (tests only).
//!
//! A transcript generator reads like the transcripts it makes when it is plain code
//! ("a user record, then maybe an attachment…"); proptest's strategy combinators would
//! hide that. So proptest draws a vector of numbers and shrinks it (shorter, smaller
//! numbers), and the generator takes each decision from the next number: a choice past
//! the end is 0, and 0 is always the simplest option (the first variant, the smallest
//! size, "no" to every `chance`). A failing case therefore shrinks to a short transcript
//! made of the simplest records that still fail.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

pub(crate) struct Choices {
    values: Vec<u64>,
    at: usize,
}

impl Choices {
    pub fn new(values: Vec<u64>) -> Choices {
        Choices { values, at: 0 }
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        let v = self.values.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        v.checked_rem(n).unwrap_or(0)
    }

    /// A size or position in `0..n` (0 when `n` is 0).
    pub(crate) fn index(&mut self, n: usize) -> usize {
        let v = self.below(crate::saturate::u64_of(n));
        // Below `n`, so it fits.
        crate::saturate::usize_of(v)
    }

    /// True `percent` times in a hundred; a 0 choice says no.
    pub(crate) fn chance(&mut self, percent: u64) -> bool {
        self.below(100) + percent >= 100
    }
}

/// The strategy: up to `max_len` choices.
pub(crate) fn choices(max_len: usize) -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(any::<u64>(), 0..max_len)
}

/// `count` choice sequences from a fixed seed, for checking that a generator reaches the
/// paths a property is about (a property over cases that never get there is vacuous).
pub(crate) fn samples(max_len: usize, count: usize) -> Vec<Choices> {
    let mut runner = TestRunner::deterministic();
    let strategy = choices(max_len);
    (0..count)
        .filter_map(|_| strategy.new_tree(&mut runner).ok())
        .map(|tree| Choices::new(tree.current()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_and_exhaustion_are_the_simplest_choice() {
        let mut c = Choices::new(vec![0, 7, 250]);
        assert!(!c.chance(99));
        assert_eq!(c.below(5), 2);
        assert!(c.chance(51));
        assert_eq!(c.below(9), 0);
        assert!(!c.chance(99));
        assert_eq!(c.below(0), 0);
    }

    #[test]
    fn samples_are_reproducible() {
        let a: Vec<u64> = samples(20, 5).iter_mut().map(|c| c.below(1000)).collect();
        let b: Vec<u64> = samples(20, 5).iter_mut().map(|c| c.below(1000)).collect();
        assert_eq!(a, b);
        assert_eq!(a.len(), 5);
    }
}
