//! The flows' predicted completions: an indexed binary min-heap of flow slots by time.
//!
//! Flows ending at the same picosecond are delivered in the order this heap pops them, and
//! that order reaches the engine (arrivals of one instant are handled in the order they are
//! reported). The heap therefore keeps, move for move, the layout rules of the
//! `priority-queue` crate (2.x) the model used before: a push appends and bubbles up past
//! strictly later parents; a changed time bubbles up, then sifts down; a pop or a removal
//! moves the last entry into the hole and restores order the same way; a sift down swaps
//! with the earlier child, the left one on a tie, and only when strictly earlier. So ties
//! pop in the same order as before (tested against the crate on random operations), while
//! a flow's place is found by its slot instead of a hash.

/// Not in the heap.
const NOT_IN: u32 = u32::MAX;

/// Flow slots by predicted completion (ps), earliest first.
#[derive(Debug, Default)]
pub(super) struct Completions {
    /// The heap: flow slots.
    heap: Vec<u32>,
    /// Per flow slot, its place in `heap` (`NOT_IN` when absent).
    at: Vec<u32>,
    /// Per flow slot, its completion time (valid while in the heap).
    time_ps: Vec<u64>,
}

impl Completions {
    /// The earliest completion: `(slot, time)`.
    #[inline]
    pub(super) fn peek(&self) -> Option<(u32, u64)> {
        let &f = self.heap.first()?;
        Some((f, self.time_ps[f as usize]))
    }

    /// Sets flow `f`'s completion to `t` (inserting it if absent).
    pub(super) fn push(&mut self, f: u32, t: u64) {
        let fi = f as usize;
        if self.at.len() <= fi {
            self.at.resize(fi + 1, NOT_IN);
            self.time_ps.resize(fi + 1, 0);
        }
        self.time_ps[fi] = t;
        let p = self.at[fi];
        if p != NOT_IN {
            let p = self.bubble_up(p as usize, f);
            self.sift_down(p);
            return;
        }
        self.heap.push(f);
        let last = self.heap.len() - 1;
        self.at[fi] = last as u32;
        self.bubble_up(last, f);
    }

    /// Removes and returns the earliest completion.
    pub(super) fn pop(&mut self) -> Option<(u32, u64)> {
        let first = self.peek()?;
        let last = self.heap.pop().expect("non-empty");
        self.at[first.0 as usize] = NOT_IN;
        if !self.heap.is_empty() {
            self.heap[0] = last;
            self.at[last as usize] = 0;
            self.sift_down(0);
        }
        Some(first)
    }

    /// Removes flow `f` if present.
    pub(super) fn remove(&mut self, f: u32) {
        let Some(&p) = self.at.get(f as usize) else {
            return;
        };
        if p == NOT_IN {
            return;
        }
        self.at[f as usize] = NOT_IN;
        let last = self.heap.pop().expect("non-empty");
        let p = p as usize;
        if p < self.heap.len() {
            self.heap[p] = last;
            self.at[last as usize] = p as u32;
            let p = self.bubble_up(p, last);
            self.sift_down(p);
        }
    }

    /// Moves slot `f` (at `p`) up past strictly later parents; its final place.
    fn bubble_up(&mut self, mut p: usize, f: u32) -> usize {
        let t = self.time_ps[f as usize];
        while p > 0 {
            let q = (p - 1) / 2;
            let g = self.heap[q];
            if self.time_ps[g as usize] <= t {
                break;
            }
            self.heap[p] = g;
            self.at[g as usize] = p as u32;
            p = q;
        }
        self.heap[p] = f;
        self.at[f as usize] = p as u32;
        p
    }

    /// Restores order below `p`: swaps with the earliest child while strictly earlier (the
    /// left child on a tie between children).
    fn sift_down(&mut self, mut p: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * p + 1, 2 * p + 2);
            let mut best = p;
            let mut best_t = self.time_ps[self.heap[p] as usize];
            if l < n && self.time_ps[self.heap[l] as usize] < best_t {
                best = l;
                best_t = self.time_ps[self.heap[l] as usize];
            }
            if r < n && self.time_ps[self.heap[r] as usize] < best_t {
                best = r;
            }
            if best == p {
                return;
            }
            self.heap.swap(p, best);
            self.at[self.heap[p] as usize] = p as u32;
            self.at[self.heap[best] as usize] = best as u32;
            p = best;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::Rng;
    use priority_queue::PriorityQueue;
    use std::cmp::Reverse;

    /// Random pushes (new and changed), removals and pops on few distinct times (many ties):
    /// every pop and peek equals the `priority-queue` crate's.
    #[test]
    fn pops_in_the_priority_queue_crates_order_ties_included() {
        let mut rng = Rng(7);
        for _ in 0..300 {
            let mut ours = Completions::default();
            let mut theirs: PriorityQueue<u32, Reverse<u64>> = PriorityQueue::new();
            let slots = 1 + rng.below(60) as u32;
            let times = 1 + rng.below(8);
            for _ in 0..400 {
                match rng.below(10) {
                    0..=5 => {
                        let (f, t) = (rng.below(slots as u64) as u32, rng.below(times));
                        ours.push(f, t);
                        theirs.push(f, Reverse(t));
                    }
                    6 => {
                        let f = rng.below(slots as u64) as u32;
                        ours.remove(f);
                        theirs.remove(&f);
                    }
                    _ => {
                        let want = theirs.pop().map(|(f, Reverse(t))| (f, t));
                        assert_eq!(ours.pop(), want);
                    }
                }
                let want = theirs.peek().map(|(&f, &Reverse(t))| (f, t));
                assert_eq!(ours.peek(), want);
            }
            while let Some((f, Reverse(t))) = theirs.pop() {
                assert_eq!(ours.pop(), Some((f, t)));
            }
            assert_eq!(ours.pop(), None);
        }
    }
}
