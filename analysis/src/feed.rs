//! Feeding block runs to the views one at a time, so that a view holds O(PEs + bins +
//! entries) and never the timeline.
//!
//! A [`Feed`] knows the blocks (flat or repeated) and where each block runs ([`PeOf`]); for
//! each run it finds the block's entry method and, for the views that count messages, its
//! deliveries `(send time, source PE, destination PE, bytes)`: a send leaves at its block's
//! start plus its (unscaled) offset and reaches each consuming block's PE. Accumulators
//! (the views' `Acc` implementations) receive both.

use crate::AnalysisError;
use crate::critical::Blocks;
use replay::TimelineRecord;
use trace::BlockId;

/// Where each block runs.
#[derive(Clone, Debug)]
pub enum PeOf {
    /// Per object (a replay without remapping: every block of an object on its PE).
    Object(Vec<u32>),
    /// Per block (from a timeline; remapped runs too).
    Block(Vec<u32>),
}

/// What an accumulator is told.
pub(crate) trait Acc {
    /// One block's run; `entry` is its entry method.
    fn block(&mut self, _r: &TimelineRecord, _entry: u32) {}
    /// Whether it wants [`Acc::delivery`] calls.
    fn wants_deliveries(&self) -> bool {
        false
    }
    /// One delivery: sent at `at_ps` from `src` to `dst`, `bytes` long.
    fn delivery(&mut self, _at_ps: u64, _src: u32, _dst: u32, _bytes: u64) {}
}

/// Blocks and placement: what turns a run into an entry and deliveries.
#[derive(Debug)]
pub struct Feed<'a> {
    g: Blocks<'a>,
    n: u32,
    pe_of: PeOf,
}

impl<'a> Feed<'a> {
    /// A feed over `g` with blocks placed by `pe_of`.
    pub fn new(g: Blocks<'a>, pe_of: PeOf) -> Feed<'a> {
        Feed {
            g,
            n: g.body().num_blocks().max(1) as u32,
            pe_of,
        }
    }

    /// A feed for a flat trace's timeline: blocks placed where the timeline ran them.
    pub fn of_timeline(
        trace: &'a trace::Trace,
        tl: &[TimelineRecord],
    ) -> Result<Feed<'a>, AnalysisError> {
        if tl.len() != trace.num_blocks() {
            return Err(AnalysisError::TimelineMismatch {
                records: tl.len() as u64,
                blocks: trace.num_blocks() as u64,
            });
        }
        let mut pe = vec![0u32; tl.len()];
        for r in tl {
            if let Some(p) = pe.get_mut(r.block as usize) {
                *p = r.pe;
            }
        }
        Ok(Feed::new(Blocks::Flat(trace), PeOf::Block(pe)))
    }

    /// The blocks.
    pub fn blocks(&self) -> Blocks<'a> {
        self.g
    }

    fn split(&self, b: u32) -> (u32, u32) {
        match self.g {
            Blocks::Flat(_) => (0, b),
            Blocks::Repeated(_) => (b / self.n, b % self.n),
        }
    }

    fn pe(&self, b: u32) -> u32 {
        match &self.pe_of {
            PeOf::Block(v) => v.get(b as usize).copied().unwrap_or(0),
            PeOf::Object(v) => {
                let (_, i) = self.split(b);
                let o = self.g.body().columns().object[i as usize];
                v.get(o as usize).copied().unwrap_or(0)
            }
        }
    }

    /// Entry method of block `b`.
    pub(crate) fn entry(&self, b: u32) -> u32 {
        let (_, i) = self.split(b);
        self.g
            .body()
            .columns()
            .entry
            .get(i as usize)
            .copied()
            .unwrap_or(0)
    }

    /// Tells `acc` about run `r`.
    pub(crate) fn feed(&self, r: &TimelineRecord, accs: &mut [&mut dyn Acc]) {
        let entry = self.entry(r.block);
        let mut deliveries = false;
        for a in accs.iter_mut() {
            a.block(r, entry);
            deliveries |= a.wants_deliveries();
        }
        if !deliveries {
            return;
        }
        let body = self.g.body();
        let (k, i) = self.split(r.block);
        let consumers = body.consumers();
        let sends = body.all_sends();
        let start = r.start.as_ps();
        for si in body.send_range(BlockId(i)) {
            let s = &sends[si];
            let off = match self.g {
                Blocks::Flat(_) => s.offset,
                Blocks::Repeated(rep) => rep.send_offset(k, i, si),
            };
            let at = start.saturating_add(off.as_ps());
            let (c0, c1) = (
                consumers.start[si] as usize,
                consumers.start[si + 1] as usize,
            );
            for &c in &consumers.blocks[c0..c1] {
                let dst = self.pe(k * self.n + c);
                for a in accs.iter_mut() {
                    if a.wants_deliveries() {
                        a.delivery(at, r.pe, dst, s.bytes);
                    }
                }
            }
        }
    }
}

impl Feed<'_> {
    /// Calls `to(j, bytes, consumer, pe)` for each block (global id) the `j`-th send of run
    /// `r`'s block triggers; returns the block's number of sends.
    pub(crate) fn each_send(
        &self,
        r: &TimelineRecord,
        mut to: impl FnMut(u64, u64, u32, u32),
    ) -> u64 {
        let body = self.g.body();
        let (k, i) = self.split(r.block);
        let consumers = body.consumers();
        let range = body.send_range(BlockId(i));
        let n = range.len() as u64;
        for (j, si) in range.enumerate() {
            let bytes = body.all_sends()[si].bytes;
            let (c0, c1) = (
                consumers.start[si] as usize,
                consumers.start[si + 1] as usize,
            );
            for &c in &consumers.blocks[c0..c1] {
                let g = k * self.n + c;
                to(j as u64, bytes, g, self.pe(g));
            }
        }
        n
    }
}

/// Feeds a whole timeline to `acc`.
pub(crate) fn feed_all(feed: &Feed<'_>, tl: &[TimelineRecord], acc: &mut dyn Acc) {
    for r in tl {
        feed.feed(r, &mut [&mut *acc]);
    }
}
