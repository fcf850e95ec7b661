//! Event queues keyed by `(time, class, insertion order)`.
//!
//! # Ordering contract
//!
//! An [`EventKey`] is `(time, seq)` where `seq` packs the [`EventClass`] into its top bit and a
//! per-simulation insertion counter into the low 63 bits. Keys therefore compare as
//! `(time, class, counter)`: at equal times every `Normal` event pops before any `Late` event,
//! and within a class the event scheduled first pops first (FIFO). Keys are unique because the
//! counter is. Every implementation of [`EventQueue`] pops the same events in the same order; the
//! tests check this against [`BinaryHeapQueue`] on random workloads.
//!
//! A queue does not have to store the insertion counter (FIFO among equal `(time, class)` is
//! what it must keep): the key a queue returns from [`EventQueue::pop`] carries the time, the
//! class and, in place of the counter, the pop's sequence number (0, 1, 2, ...). Popped keys
//! therefore increase strictly, and two queues return identical keys exactly when they pop in
//! the same order. [`RadixQueue`] entries are 16 bytes: `(time, class)` packed in a `u64` and
//! the event.
//!
//! # Which queue
//!
//! * [`BinaryHeapQueue`]: `std`'s binary heap; simple reference; best below ~10^4 pending events.
//! * [`RadixQueue`]: a monotone radix heap on the 64-bit `(time, class)` key, FIFO among equal
//!   keys; flat cost from 10^3 to 10^6 pending
//!   events (the reference notes measured a `(t, seq)` radix heap at 134 ns vs 979 ns for a
//!   binary heap per hold operation at 10^6 pending events on this class of machine, see
//!   `shared/reference/rust-dependencies-and-event-rates.md` §1.1). Requires monotone pushes:
//!   no key may be smaller than the last popped key, which the [`crate::Scheduler`] guarantees by
//!   refusing to schedule into the past.

use crate::time::SimTime;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Which of two passes at the same instant an event belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EventClass {
    /// State changes (arrivals, completions): processed first at a given time.
    Normal = 0,
    /// Decisions that should see every state change of that instant (e.g. a scheduler picking
    /// the next block): processed after all `Normal` events at the same time.
    Late = 1,
}

/// The total order of events. See the [module docs](self).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventKey {
    /// When the event happens.
    pub time: SimTime,
    /// Class in the top bit, insertion counter below.
    pub seq: u64,
}

const CLASS_BIT: u64 = 1 << 63;

impl EventKey {
    /// Builds a key from its parts. `counter` must be below 2^63.
    pub fn new(time: SimTime, class: EventClass, counter: u64) -> Self {
        debug_assert!(counter < CLASS_BIT);
        let seq = match class {
            EventClass::Normal => counter,
            EventClass::Late => counter | CLASS_BIT,
        };
        EventKey { time, seq }
    }
    /// The class of this key.
    pub fn class(self) -> EventClass {
        if self.seq & CLASS_BIT == 0 {
            EventClass::Normal
        } else {
            EventClass::Late
        }
    }
    fn packed(self) -> u128 {
        ((self.time.as_ps() as u128) << 64) | self.seq as u128
    }
    fn unpack(k: u128) -> Self {
        EventKey {
            time: SimTime::from_ps((k >> 64) as u64),
            seq: k as u64,
        }
    }
}

/// A priority queue of events that pops the smallest [`EventKey`] first.
pub trait EventQueue<E> {
    /// Adds an event. Keys must be unique; monotone queues also require
    /// `key >=` the last popped key.
    fn push(&mut self, key: EventKey, event: E);
    /// Removes and returns the event with the smallest key. The returned key's counter is the
    /// pop's sequence number (see the [module docs](self)).
    fn pop(&mut self) -> Option<(EventKey, E)>;
    /// True if the next [`EventQueue::pop`] would return an event at exactly `time` in
    /// `class`. `(time, class)` must be the last popped event's time and class or later (the
    /// [`crate::Scheduler`] asks about the current instant only).
    fn next_is(&self, time: SimTime, class: EventClass) -> bool;
    /// Number of pending events.
    fn len(&self) -> usize;
    /// True when no event is pending.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Selects an [`EventQueue`] implementation at run time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum QueueKind {
    /// [`BinaryHeapQueue`].
    Binary,
    /// [`RadixQueue`] (the default).
    #[default]
    Radix,
}

impl std::str::FromStr for QueueKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "binary" => Ok(QueueKind::Binary),
            "radix" => Ok(QueueKind::Radix),
            other => Err(format!(
                "unknown queue `{other}`; expected `radix` or `binary`"
            )),
        }
    }
}

/// Reference implementation on `std::collections::BinaryHeap`.
#[derive(Debug)]
pub struct BinaryHeapQueue<E> {
    heap: BinaryHeap<Reverse<Entry<E>>>,
    pops: u64,
}

#[derive(Debug)]
struct Entry<E> {
    key: u128,
    event: E,
}
impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

impl<E> Default for BinaryHeapQueue<E> {
    fn default() -> Self {
        BinaryHeapQueue {
            heap: BinaryHeap::new(),
            pops: 0,
        }
    }
}

impl<E> BinaryHeapQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }
}

impl<E> EventQueue<E> for BinaryHeapQueue<E> {
    fn push(&mut self, key: EventKey, event: E) {
        self.heap.push(Reverse(Entry {
            key: key.packed(),
            event,
        }));
    }
    fn pop(&mut self) -> Option<(EventKey, E)> {
        let Reverse(e) = self.heap.pop()?;
        let k = EventKey::unpack(e.key);
        self.pops += 1;
        Some((EventKey::new(k.time, k.class(), self.pops - 1), e.event))
    }
    fn next_is(&self, time: SimTime, class: EventClass) -> bool {
        self.heap.peek().is_some_and(|Reverse(e)| {
            let k = EventKey::unpack(e.key);
            k.time == time && k.class() == class
        })
    }
    fn len(&self) -> usize {
        self.heap.len()
    }
}

/// A monotone radix heap keyed by `(time, class)` packed in 64 bits, FIFO among equal keys.
///
/// Bucket `i > 0` holds keys whose highest bit differing from the last popped key is bit
/// `i - 1`; bucket 0 holds keys equal to it. A pop that finds bucket 0 exhausted takes the first
/// non-empty bucket, makes its minimum the new reference and redistributes that bucket into lower
/// buckets (a bucket whose keys are all equal, as when many events fall on one instant, becomes
/// bucket 0 as it is). Equal keys always end up together in bucket 0 in the order they were
/// pushed (a redistribution keeps relative order, and a direct push to bucket 0 is the newest),
/// so popping bucket 0 front to back yields the `(time, class, insertion)` order without
/// comparing the insertion counter. Each key moves down at most 64 times, so the amortised cost
/// is O(log of the key span), independent of the number of pending events.
///
/// Buckets are lists of fixed-size chunks (256 entries of 16 bytes for `u64` events) drawn
/// from one pool that every bucket shares: memory follows the number of pending events (a
/// chunk per bucket of slack), not the largest size each bucket ever had.
///
/// Times must be below 2^63 ps (about 106 days); the [`crate::Scheduler`] enforces this.
/// Events must be `Copy` (in practice: an index into the caller's own tables).
#[derive(Debug)]
pub struct RadixQueue<E> {
    last: u64,
    len: usize,
    pops: u64,
    buckets: [Bucket; 65],
    /// Chunk storage: chunk `c` is `slots[c * CHUNK..(c + 1) * CHUNK]`.
    slots: Vec<Box<[(u64, E)]>>,
    /// Next chunk of each chunk's list.
    next: Vec<u32>,
    /// Chunks not in any bucket.
    free: Vec<u32>,
}

/// Entries per chunk.
const CHUNK: usize = 256;
const NONE: u32 = u32::MAX;

/// A FIFO list of chunks: entries are read at `(head, read)` and written at `(tail, fill)`.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    head: u32,
    tail: u32,
    read: u32,
    fill: u32,
}

impl Bucket {
    const EMPTY: Bucket = Bucket {
        head: NONE,
        tail: NONE,
        read: 0,
        fill: 0,
    };
    #[inline]
    fn is_empty(&self) -> bool {
        self.head == NONE || (self.head == self.tail && self.read == self.fill)
    }
}

/// The largest time a [`RadixQueue`] accepts, in picoseconds.
pub const RADIX_MAX_TIME_PS: u64 = (1 << 63) - 1;

impl<E> Default for RadixQueue<E> {
    fn default() -> Self {
        RadixQueue {
            last: 0,
            len: 0,
            pops: 0,
            buckets: [Bucket::EMPTY; 65],
            slots: Vec::new(),
            next: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<E> RadixQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }
    #[inline]
    fn bucket(&self, key: u64) -> usize {
        (64 - (key ^ self.last).leading_zeros()) as usize
    }
    #[inline]
    fn radix_key(key: EventKey) -> u64 {
        let t = key.time.as_ps();
        assert!(
            t <= RADIX_MAX_TIME_PS,
            "RadixQueue: time {t} ps is beyond 2^63 ps"
        );
        (t << 1) | (key.seq >> 63)
    }
}

impl<E: Copy + Default> RadixQueue<E> {
    /// A chunk from the pool (or a new one), unlinked.
    #[inline]
    fn take_chunk(&mut self) -> u32 {
        if let Some(c) = self.free.pop() {
            self.next[c as usize] = NONE;
            return c;
        }
        self.slots
            .push(vec![(0, E::default()); CHUNK].into_boxed_slice());
        self.next.push(NONE);
        (self.slots.len() - 1) as u32
    }

    /// Appends `e` to bucket `b`.
    #[inline]
    fn append(&mut self, b: usize, e: (u64, E)) {
        let bk = self.buckets[b];
        if bk.tail == NONE || bk.fill as usize == CHUNK {
            let c = self.take_chunk();
            let bk = &mut self.buckets[b];
            if bk.tail == NONE {
                bk.head = c;
                bk.read = 0;
            } else {
                self.next[bk.tail as usize] = c;
            }
            let bk = &mut self.buckets[b];
            bk.tail = c;
            bk.fill = 0;
        }
        let bk = &mut self.buckets[b];
        self.slots[bk.tail as usize][bk.fill as usize] = e;
        bk.fill += 1;
    }

    /// Returns every chunk of bucket `b` to the pool and empties it.
    fn release(&mut self, b: usize) {
        let mut c = self.buckets[b].head;
        while c != NONE {
            self.free.push(c);
            c = self.next[c as usize];
        }
        self.buckets[b] = Bucket::EMPTY;
    }

    /// Makes bucket 0 hold the smallest pending key at its read position; false if the queue
    /// is empty.
    #[inline]
    fn refill(&mut self) -> bool {
        let b0 = self.buckets[0];
        if b0.head != NONE
            && (b0.read as usize) < CHUNK
            && (b0.head != b0.tail || b0.read < b0.fill)
        {
            return true;
        }
        self.refill_slow()
    }

    fn refill_slow(&mut self) -> bool {
        // Bucket 0's read position is at the end of its head chunk: move on, or empty it.
        loop {
            let b0 = self.buckets[0];
            if b0.head == NONE {
                break;
            }
            if b0.head == b0.tail {
                if b0.read < b0.fill {
                    return true;
                }
                self.release(0);
                break;
            }
            if (b0.read as usize) < CHUNK {
                return true;
            }
            let next = self.next[b0.head as usize];
            self.free.push(b0.head);
            self.buckets[0].head = next;
            self.buckets[0].read = 0;
        }
        if self.len == 0 {
            return false;
        }
        let Some(i) = (1..self.buckets.len()).find(|&i| !self.buckets[i].is_empty()) else {
            return false;
        };
        // Minimum and maximum of bucket i.
        let bk = self.buckets[i];
        let (mut min, mut max) = (u64::MAX, 0u64);
        self.for_each(bk, |k, _| {
            min = min.min(k);
            max = max.max(k);
        });
        self.last = min;
        if min == max {
            // Every key equal (a wave of simultaneous events): the list becomes bucket 0.
            self.buckets[0] = bk;
            self.buckets[i] = Bucket::EMPTY;
            return true;
        }
        self.buckets[i] = Bucket::EMPTY;
        let mut at = Some(bk.head);
        while let Some((c, range, next)) = at.and_then(|c| self.chunk_range(bk, c)) {
            for j in range {
                let e = self.slots[c as usize][j];
                let b = self.bucket(e.0);
                debug_assert!(b < i);
                self.append(b, e);
            }
            self.free.push(c);
            at = next;
        }
        true
    }

    /// The entries of chunk `c` of list `bk`, and the chunk after it.
    #[inline]
    fn chunk_range(
        &self,
        bk: Bucket,
        c: u32,
    ) -> Option<(u32, std::ops::Range<usize>, Option<u32>)> {
        if c == NONE {
            return None;
        }
        let from = if c == bk.head { bk.read as usize } else { 0 };
        let end = if c == bk.tail {
            bk.fill as usize
        } else {
            CHUNK
        };
        let next = self.next[c as usize];
        Some((c, from..end, (next != NONE).then_some(next)))
    }

    /// Calls `f` on every entry of the list `bk`.
    fn for_each(&self, bk: Bucket, mut f: impl FnMut(u64, E)) {
        let mut at = Some(bk.head);
        while let Some((c, range, next)) = at.and_then(|c| self.chunk_range(bk, c)) {
            for &(k, e) in &self.slots[c as usize][range] {
                f(k, e);
            }
            at = next;
        }
    }
}

#[inline]
fn unpack_radix(k: u64) -> (SimTime, EventClass) {
    let class = if k & 1 == 0 {
        EventClass::Normal
    } else {
        EventClass::Late
    };
    (SimTime::from_ps(k >> 1), class)
}

impl<E: Copy + Default> EventQueue<E> for RadixQueue<E> {
    #[inline]
    fn push(&mut self, key: EventKey, event: E) {
        let k = Self::radix_key(key);
        assert!(
            k >= self.last,
            "RadixQueue: key {key:?} is earlier than the last popped key (monotonicity violated)"
        );
        let b = self.bucket(k);
        self.append(b, (k, event));
        self.len += 1;
    }

    #[inline]
    fn pop(&mut self) -> Option<(EventKey, E)> {
        if !self.refill() {
            return None;
        }
        let b0 = &mut self.buckets[0];
        let (k, e) = self.slots[b0.head as usize][b0.read as usize];
        b0.read += 1;
        self.len -= 1;
        self.pops += 1;
        let (time, class) = unpack_radix(k);
        Some((EventKey::new(time, class, self.pops - 1), e))
    }

    #[inline]
    fn next_is(&self, time: SimTime, class: EventClass) -> bool {
        let k = (time.as_ps() << 1) | class as u64;
        if !self.buckets[0].is_empty() && self.len > 0 {
            // Bucket 0 holds exactly the keys equal to the last popped one (a head chunk
            // read to its end still has entries in the chunks after it).
            let b0 = self.buckets[0];
            let at_end = b0.head == b0.tail && b0.read == b0.fill;
            if !at_end {
                return self.last == k;
            }
        }
        if k <= self.last {
            return false;
        }
        match self.bucket(k) {
            // Keys differing from the last popped key in bit 0 only: all equal to `k`.
            1 => !self.buckets[1].is_empty(),
            b => {
                if !(1..b).all(|i| self.buckets[i].is_empty()) {
                    return false;
                }
                let mut min = u64::MAX;
                self.for_each(self.buckets[b], |x, _| min = min.min(x));
                min == k
            }
        }
    }

    fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SeedTree;
    use chacha20::rand_core::Rng;

    /// Hold-model workload: random pushes relative to the last pop, with many equal times.
    fn drive<Q: EventQueue<u64>>(q: &mut Q, seed: u64, ops: usize) -> Vec<(EventKey, u64)> {
        let mut rng = SeedTree::new(seed).stream("queue-test");
        let mut out = Vec::new();
        let mut last = EventKey::new(SimTime::ZERO, EventClass::Normal, 0);
        let mut counter = 0u64;
        for _ in 0..ops {
            let r = rng.next_u64();
            if r % 3 != 0 || q.is_empty() {
                // Coarse times so that ties are frequent.
                let dt = (rng.next_u64() % 8) * 1000;
                let class = if rng.next_u64() % 4 == 0 {
                    EventClass::Late
                } else {
                    EventClass::Normal
                };
                let mut key =
                    EventKey::new(SimTime::from_ps(last.time.as_ps() + dt), class, counter);
                if key < last {
                    // What the Scheduler does: a Normal event for the current instant,
                    // scheduled during its Late pass, joins the Late pass.
                    key = EventKey::new(key.time, EventClass::Late, counter);
                }
                q.push(key, counter);
                counter += 1;
            } else {
                let (k, e) = q.pop().unwrap();
                last = k;
                out.push((k, e));
            }
        }
        while let Some((k, e)) = q.pop() {
            out.push((k, e));
        }
        out
    }

    #[test]
    fn implementations_pop_in_identical_order() {
        for seed in 0..200 {
            let a = drive(&mut BinaryHeapQueue::new(), seed, 2000);
            let b = drive(&mut RadixQueue::new(), seed, 2000);
            assert_eq!(a, b, "queues diverged; reproduce with seed={seed}");
            // The order itself is (time, class, FIFO).
            for w in a.windows(2) {
                assert!(w[0].0 < w[1].0, "pops not strictly increasing; seed={seed}");
            }
        }
    }

    #[test]
    fn waves_across_chunks_keep_fifo_order() {
        // Thousands of events at a few instants (several chunks per bucket), with pushes while
        // a wave is being popped: both queues pop the same sequence.
        let run = |q: &mut dyn EventQueue<u64>| {
            let mut out = Vec::new();
            let mut counter = 0u64;
            let mut push = |q: &mut dyn EventQueue<u64>, t: u64, class| {
                q.push(EventKey::new(SimTime::from_ps(t), class, counter), counter);
                counter += 1;
            };
            for i in 0..3000u64 {
                push(q, 1000 + (i % 3) * 7, EventClass::Normal);
            }
            for round in 0..4u64 {
                for _ in 0..1200 {
                    let Some((k, e)) = q.pop() else { break };
                    out.push((k.time.as_ps(), k.class(), e));
                    if e % 5 == 0 {
                        push(q, k.time.as_ps() + 500 + round, EventClass::Normal);
                        push(q, k.time.as_ps(), EventClass::Late);
                    }
                }
            }
            while let Some((k, e)) = q.pop() {
                out.push((k.time.as_ps(), k.class(), e));
            }
            out
        };
        let a = run(&mut BinaryHeapQueue::new());
        let b = run(&mut RadixQueue::new());
        assert_eq!(a.len(), b.len());
        assert_eq!(a, b);
    }

    #[test]
    fn ties_are_normal_then_late_then_fifo() {
        let mut q = RadixQueue::new();
        let t = SimTime::from_ps(10);
        q.push(EventKey::new(t, EventClass::Late, 0), "late0");
        q.push(EventKey::new(t, EventClass::Normal, 1), "normal1");
        q.push(EventKey::new(t, EventClass::Normal, 2), "normal2");
        q.push(
            EventKey::new(SimTime::from_ps(5), EventClass::Late, 3),
            "early",
        );
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, ["early", "normal1", "normal2", "late0"]);
    }

    #[test]
    #[should_panic(expected = "monotonicity")]
    fn radix_rejects_past_keys() {
        let mut q = RadixQueue::new();
        q.push(
            EventKey::new(SimTime::from_ps(10), EventClass::Normal, 0),
            (),
        );
        q.pop();
        q.push(
            EventKey::new(SimTime::from_ps(5), EventClass::Normal, 1),
            (),
        );
    }
}
