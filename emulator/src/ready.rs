//! A PE's ready blocks: the smallest `(priority, effective receive time, order, item)` first,
//! exactly as one binary heap would give them, but in O(1) for the usual case. Items mostly
//! become ready in increasing key order (arrivals are handled in time order and the order
//! number grows), so they go to a FIFO that stays sorted; an item smaller than the FIFO's
//! last (a continuation keeping its parent's receive time, a priority) goes to a heap, and
//! `pop` takes the smaller of the two heads.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// A ready item, ordered by priority, effective receive time (ps), order number and item
/// index, in that order (the derived order follows the declaration). 24 bytes, where the
/// tuple of the same fields is 32: a million-object run holds over 5 M of them, in queues
/// whose capacity doubles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Key {
    pub prio: i32,
    pub key_ps: u64,
    pub seq: u64,
    pub item: u32,
}

/// See the [module docs](self).
#[derive(Debug, Default)]
pub(crate) struct Ready {
    /// Sorted ascending.
    fifo: VecDeque<Key>,
    /// A copy of the FIFO's last key while it is not empty: `push` compares with it here,
    /// not in the FIFO's buffer (a cache miss at a million objects, where thousands of PEs'
    /// FIFOs are written in turn).
    back: Key,
    heap: BinaryHeap<Reverse<Key>>,
}

impl Ready {
    pub(crate) fn push(&mut self, k: Key) {
        if !self.fifo.is_empty() && k < self.back {
            self.heap.push(Reverse(k));
        } else {
            self.fifo.push_back(k);
            self.back = k;
        }
    }

    pub(crate) fn pop(&mut self) -> Option<Key> {
        match (self.fifo.front(), self.heap.peek()) {
            (Some(f), Some(Reverse(h))) if h < f => self.heap.pop().map(|r| r.0),
            (Some(_), _) => self.fifo.pop_front(),
            (None, _) => self.heap.pop().map(|r| r.0),
        }
    }

    /// The FIFO's items from its front (the next to start unless a smaller key comes).
    pub(crate) fn upcoming(&self) -> impl Iterator<Item = u32> + '_ {
        self.fifo.iter().map(|k| k.item)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.fifo.is_empty() && self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_24_bytes() {
        assert_eq!(std::mem::size_of::<Key>(), 24);
    }

    /// The kept copy of the FIFO's last key is not used once the FIFO has emptied: a key
    /// smaller than the last one pushed before that goes to the FIFO and comes out in order.
    #[test]
    fn a_stale_back_key_does_not_misplace_a_push() {
        let key = |key_ps, seq| Key {
            prio: 0,
            key_ps,
            seq,
            item: seq as u32,
        };
        let mut r = Ready::default();
        r.push(key(100, 1));
        assert_eq!(r.pop(), Some(key(100, 1)));
        r.push(key(5, 2));
        r.push(key(7, 3));
        r.push(key(6, 4));
        assert_eq!(r.upcoming().collect::<Vec<_>>(), vec![2, 3]);
        assert_eq!(r.pop(), Some(key(5, 2)));
        assert_eq!(r.pop(), Some(key(6, 4)));
        assert_eq!(r.pop(), Some(key(7, 3)));
        assert!(r.is_empty());
    }

    /// Random pushes and pops give exactly a binary heap's order (keys are distinct: the
    /// order number is unique).
    #[test]
    fn same_order_as_one_heap() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..200 {
            let (mut ready, mut heap) = (Ready::default(), BinaryHeap::new());
            let mut seq = 0u64;
            let mut time = 0u64;
            for _ in 0..500 {
                let r = next();
                if r % 3 == 0 {
                    assert_eq!(ready.pop(), heap.pop().map(|x: Reverse<Key>| x.0));
                } else {
                    seq += 1;
                    // Mostly increasing times; some earlier ones (continuations) and some
                    // priorities, more of them in later rounds.
                    time += r % 7;
                    let t = if (r >> 8) % 10 < round % 10 {
                        time - time.min(r % 50)
                    } else {
                        time
                    };
                    let prio = if (r >> 16) % 20 == 0 {
                        (r % 5) as i32 - 2
                    } else {
                        0
                    };
                    let k = Key {
                        prio,
                        key_ps: t,
                        seq,
                        item: (r >> 32) as u32,
                    };
                    ready.push(k);
                    heap.push(Reverse(k));
                }
                assert_eq!(ready.is_empty(), heap.is_empty());
            }
            while let Some(Reverse(k)) = heap.pop() {
                assert_eq!(ready.pop(), Some(k));
            }
            assert!(ready.is_empty() && ready.pop().is_none());
        }
    }
}
