//! Shrinking a failing run of several faults to a minimal set that still fails: delta
//! debugging (Zeller's ddmin) over the run's faults. A report that says "these 3 faults break
//! the operator" sends its reader hunting; "this one does" names the bug. Pure and
//! deterministic: [`Shrinker`] proposes the next subset to try and is told whether it failed,
//! so the campaign runs the subsets (asynchronously, within its budget) and a unit test drives
//! it with a plain predicate. The result is 1-minimal: removing any single fault of it makes the
//! run pass (as far as the runs tried tell).

/// The ddmin state over a failing set of `T`.
#[derive(Debug, Clone)]
pub(crate) struct Shrinker<T> {
    /// The smallest set known to fail.
    current: Vec<T>,
    /// How many chunks `current` is split into this round.
    chunks: usize,
    /// This round's candidates not tried yet, each with the chunk count to go on with if it
    /// fails, in the order they are tried (subsets, then complements).
    pending: Vec<(Vec<T>, usize)>,
    /// The candidate handed out and not judged yet.
    trying: Option<(Vec<T>, usize)>,
}

impl<T: Clone> Shrinker<T> {
    /// Starts from `failing`, a set known to fail.
    pub(crate) fn new(failing: Vec<T>) -> Shrinker<T> {
        let mut shrinker = Shrinker {
            current: failing,
            chunks: 2,
            pending: Vec::new(),
            trying: None,
        };
        shrinker.plan_round();
        shrinker
    }

    /// The smallest set known to fail so far (the result once [`Shrinker::next`] says `None`).
    pub(crate) fn smallest(&self) -> &[T] {
        &self.current
    }

    /// The next subset to try; `None` when the smallest set is 1-minimal.
    pub(crate) fn next(&mut self) -> Option<Vec<T>> {
        if self.pending.is_empty() {
            return None;
        }
        let candidate = self.pending.remove(0);
        let set = candidate.0.clone();
        self.trying = Some(candidate);
        Some(set)
    }

    /// Whether the subset [`Shrinker::next`] gave last failed.
    pub(crate) fn verdict(&mut self, failed: bool) {
        let Some((set, chunks)) = self.trying.take() else {
            return;
        };
        if failed {
            self.current = set;
            self.chunks = chunks;
            self.plan_round();
        } else if self.pending.is_empty() {
            // No candidate of this round failed: split finer, or stop at single faults.
            if self.chunks < self.current.len() {
                self.chunks = (self.chunks * 2).min(self.current.len());
                self.plan_round();
            }
        }
    }

    /// The candidates of a round: each chunk alone (going on with 2 chunks if it fails),
    /// then each complement (going on with one chunk fewer); with 2 chunks the complements
    /// are the chunks, tried once.
    fn plan_round(&mut self) {
        self.pending.clear();
        let len = self.current.len();
        if len < 2 {
            return;
        }
        let n = self.chunks.clamp(2, len);
        let bounds: Vec<(usize, usize)> =
            (0..n).map(|i| (i * len / n, (i + 1) * len / n)).collect();
        for &(start, end) in &bounds {
            self.pending.push((self.current[start..end].to_vec(), 2));
        }
        if n > 2 {
            for &(start, end) in &bounds {
                let mut complement = self.current[..start].to_vec();
                complement.extend_from_slice(&self.current[end..]);
                self.pending.push((complement, (n - 1).max(2)));
            }
        }
        self.chunks = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shrinks `items` with `fails`; the result and the subsets tried.
    fn shrink(items: &[u32], fails: impl Fn(&[u32]) -> bool) -> (Vec<u32>, Vec<Vec<u32>>) {
        let mut shrinker = Shrinker::new(items.to_vec());
        let mut tried = Vec::new();
        while let Some(set) = shrinker.next() {
            let failed = fails(&set);
            tried.push(set);
            shrinker.verdict(failed);
        }
        (shrinker.smallest().to_vec(), tried)
    }

    #[test]
    fn three_faults_of_which_one_matters_shrink_to_that_one() {
        for culprit in [1, 2, 3] {
            let (smallest, tried) = shrink(&[1, 2, 3], |s| s.contains(&culprit));
            assert_eq!(smallest, [culprit], "tried {tried:?}");
            assert!(tried.len() <= 4, "{culprit}: {tried:?}");
        }
        // Deterministic: the same subsets in the same order.
        assert_eq!(
            shrink(&[1, 2, 3], |s| s.contains(&3)).1,
            [vec![1], vec![2, 3], vec![2], vec![3]]
        );
    }

    #[test]
    fn faults_that_only_fail_together_are_all_kept() {
        let (smallest, _) = shrink(&[1, 2, 3, 4, 5, 6, 7, 8], |s| {
            s.contains(&2) && s.contains(&7)
        });
        assert_eq!(smallest, [2, 7]);
        let (smallest, _) = shrink(&[1, 2, 3], |s| s.len() == 3);
        assert_eq!(smallest, [1, 2, 3], "no fault can go");
    }

    #[test]
    fn a_single_fault_is_already_minimal() {
        let (smallest, tried) = shrink(&[9], |_| true);
        assert_eq!(smallest, [9]);
        assert!(tried.is_empty());
    }
}
