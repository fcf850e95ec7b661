//! A [`TimelineSink`] fed on its own thread: the replay hands runs over in batches and goes
//! on while the sink's accumulators work, so an observed replay costs about the larger of
//! the two instead of their sum (and neither evicts the other's caches).
//!
//! Batches of [`BATCH`] records go over a bounded channel (at most [`IN_FLIGHT`] batches
//! waiting) and come back empty to be refilled: no allocation per record. The sink sees the
//! records in the replay's order, so its results are the same as fed in place.

use replay::{TimelineRecord, TimelineSink};
use std::sync::mpsc;

/// Records per batch (40 bytes each).
pub const BATCH: usize = 4096;
/// Batches handed over and not yet consumed, at most.
pub const IN_FLIGHT: usize = 4;

/// The replay's side: fills a batch, sends it when full.
struct Pipe {
    buf: Vec<TimelineRecord>,
    tx: Option<mpsc::SyncSender<Vec<TimelineRecord>>>,
    back: mpsc::Receiver<Vec<TimelineRecord>>,
}

impl Pipe {
    fn send(&mut self) {
        let next = self
            .back
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH));
        let full = std::mem::replace(&mut self.buf, next);
        if let Some(tx) = &self.tx
            && tx.send(full).is_err()
        {
            // The sink's thread stopped (it panicked): drop the rest; the join reports it.
            self.tx = None;
        }
    }
}

impl TimelineSink for Pipe {
    fn record(&mut self, r: &TimelineRecord) {
        self.buf.push(*r);
        if self.buf.len() == BATCH {
            self.send();
        }
    }
}

/// Runs `f` with a sink that forwards every record to `sink` on a second thread, and returns
/// once `sink` has received them all.
pub fn pipelined<S: TimelineSink + Send, R>(
    sink: &mut S,
    f: impl FnOnce(&mut dyn TimelineSink) -> R,
) -> R {
    let (tx, rx) = mpsc::sync_channel::<Vec<TimelineRecord>>(IN_FLIGHT);
    let (back_tx, back) = mpsc::channel::<Vec<TimelineRecord>>();
    std::thread::scope(|s| {
        let worker = s.spawn(move || {
            for mut batch in rx {
                for r in &batch {
                    sink.record(r);
                }
                batch.clear();
                // The replay may be done and gone: then the batch is just dropped.
                let _ = back_tx.send(batch);
            }
        });
        let mut pipe = Pipe {
            buf: Vec::with_capacity(BATCH),
            tx: Some(tx),
            back,
        };
        let out = f(&mut pipe);
        if !pipe.buf.is_empty() {
            pipe.send();
        }
        drop(pipe);
        if let Err(p) = worker.join() {
            std::panic::resume_unwind(p);
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_core::SimTime;

    #[test]
    fn every_record_arrives_in_order() {
        for n in [0usize, 1, BATCH - 1, BATCH, BATCH + 1, 5 * BATCH + 17] {
            let mut got: Vec<TimelineRecord> = Vec::new();
            let sent = pipelined(&mut got, |s| {
                for i in 0..n as u32 {
                    s.record(&TimelineRecord {
                        block: i,
                        pe: i % 7,
                        ready: SimTime::from_ps(i as u64),
                        released: SimTime::from_ps(i as u64),
                        start: SimTime::from_ps(i as u64 + 1),
                        end: SimTime::from_ps(i as u64 + 2),
                    });
                }
                n
            });
            assert_eq!(sent, n);
            assert_eq!(got.len(), n);
            assert!(got.iter().enumerate().all(|(i, r)| r.block == i as u32));
        }
    }
}
