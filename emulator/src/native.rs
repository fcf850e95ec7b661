//! Native run: the same program executed for real on k OS threads, one per PE.
//!
//! Objects are placed with the same initial map as in emulation (on k PEs). Each thread owns
//! its objects and a local queue (FIFO, or by priority then FIFO); messages to another
//! thread's objects go through a channel. Reductions use the same tree and the same runtime
//! code as the emulator. The run ends at quiescence: a global count of messages not yet
//! processed reaches zero. Times are wall-clock from the moment the threads start.

use crate::ctx::{Clock, Payload};
use crate::error::EmuError;
use crate::model::{InitialMap, ObjRef, Program};
use crate::runtime::{Scratch, Slot, World, instantiate};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How to run natively.
#[derive(Clone, Copy, Debug)]
pub struct NativeConfig {
    /// OS threads, one per PE.
    pub threads: u32,
    /// Initial placement of each collection's elements on the threads.
    pub map: InitialMap,
    /// Run higher-priority (smaller) messages first.
    pub priority: bool,
    /// Refuse, before allocating them, objects and their data beyond this many bytes (0: no
    /// limit), as [`crate::EmulateConfig::max_memory_bytes`].
    pub max_memory_bytes: u64,
}

/// What a native run measured.
#[derive(Clone, Debug)]
pub struct NativeReport {
    /// Threads used.
    pub threads: u32,
    /// Wall time from start to quiescence.
    pub wall: Duration,
    /// `(iteration label, wall time at which its last block ended)`, in label order.
    pub iterations: Vec<(u32, Duration)>,
    /// Entry executions (blocks) run.
    pub blocks: u64,
    /// Messages that crossed threads.
    pub remote_messages: u64,
}

impl NativeReport {
    /// Duration of each iteration: its end minus the previous iteration's end (the first
    /// measured from the start), as the replay defines iteration times.
    pub fn iteration_times(&self) -> Vec<Duration> {
        let mut prev = Duration::ZERO;
        self.iterations
            .iter()
            .map(|&(_, end)| {
                let d = end.saturating_sub(prev);
                prev = prev.max(end);
                d
            })
            .collect()
    }
}

#[derive(Debug)]
struct Envelope<M> {
    to: u32,
    prio: i32,
    payload: Payload<M>,
}

/// A thread's queue of messages to run.
#[derive(Debug)]
struct LocalQueue<M> {
    priority: bool,
    fifo: VecDeque<Envelope<M>>,
    heap: BinaryHeap<Reverse<(i32, u64, u32)>>,
    slab: Vec<Option<Envelope<M>>>,
    free: Vec<u32>,
    seq: u64,
}

impl<M> LocalQueue<M> {
    fn new(priority: bool) -> Self {
        LocalQueue {
            priority,
            fifo: VecDeque::new(),
            heap: BinaryHeap::new(),
            slab: Vec::new(),
            free: Vec::new(),
            seq: 0,
        }
    }
    /// Queues `e`; `urgent` puts it before everything else (reduction continuations).
    fn push(&mut self, e: Envelope<M>, urgent: bool) {
        if !self.priority {
            if urgent {
                self.fifo.push_front(e);
            } else {
                self.fifo.push_back(e);
            }
            return;
        }
        let prio = if urgent { i32::MIN } else { e.prio };
        let i = match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = Some(e);
                i
            }
            None => {
                self.slab.push(Some(e));
                (self.slab.len() - 1) as u32
            }
        };
        self.seq += 1;
        self.heap.push(Reverse((prio, self.seq, i)));
    }
    fn pop(&mut self) -> Option<Envelope<M>> {
        if !self.priority {
            return self.fifo.pop_front();
        }
        let Reverse((_, _, i)) = self.heap.pop()?;
        self.free.push(i);
        self.slab[i as usize].take()
    }
}

struct Shared<'w> {
    world: &'w World,
    owner: Vec<u32>,
    local: Vec<u32>,
    in_flight: AtomicU64,
    abort: AtomicBool,
    t0: Instant,
}

/// Runs `program` for real on `cfg.threads` threads.
pub fn run_native<P: Program>(program: &P, cfg: &NativeConfig) -> Result<NativeReport, EmuError> {
    let inst = instantiate(
        program,
        cfg.threads,
        cfg.map,
        crate::model::Budget::new(true, cfg.max_memory_bytes),
    )?;
    let k = cfg.threads as usize;
    let n = inst.slots.len();
    let mut owner = vec![0u32; n];
    let mut local = vec![0u32; n];
    let mut per_thread: Vec<Vec<Slot<P::Obj, P::Msg>>> = (0..k).map(|_| Vec::new()).collect();
    for (o, slot) in inst.slots.into_iter().enumerate() {
        let pe = inst.world.pe_of[o];
        owner[o] = pe;
        local[o] = per_thread[pe as usize].len() as u32;
        per_thread[pe as usize].push(slot);
    }
    let mut queues: Vec<LocalQueue<P::Msg>> =
        (0..k).map(|_| LocalQueue::new(cfg.priority)).collect();
    let starts = inst.starts.len() as u64;
    for (o, m) in inst.starts {
        queues[owner[o.0 as usize] as usize].push(
            Envelope {
                to: o.0,
                prio: 0,
                payload: Payload::User(m),
            },
            false,
        );
    }
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..k).map(|_| mpsc::channel::<Envelope<P::Msg>>()).unzip();
    let world = inst.world;
    let shared = Shared {
        world: &world,
        owner,
        local,
        in_flight: AtomicU64::new(starts),
        abort: AtomicBool::new(false),
        t0: Instant::now(),
    };
    let results: Vec<Result<ThreadStats, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = per_thread
            .into_iter()
            .zip(queues)
            .zip(rxs)
            .enumerate()
            .map(|(me, ((slots, queue), rx))| {
                let txs = txs.clone();
                let shared = &shared;
                s.spawn(move || {
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        worker(me as u32, slots, queue, rx, txs, shared)
                    }));
                    r.map_err(|p| {
                        shared.abort.store(true, Ordering::SeqCst);
                        p.downcast_ref::<String>()
                            .cloned()
                            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_else(|| "a worker thread panicked".into())
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a worker thread panicked".into()))
            })
            .collect()
    });
    let wall = shared.t0.elapsed();
    let mut iters: BTreeMap<u32, u64> = BTreeMap::new();
    let (mut blocks, mut remote) = (0, 0);
    for r in results {
        let st = r.map_err(EmuError::Native)?;
        blocks += st.blocks;
        remote += st.remote;
        for (k, v) in st.iter_end {
            let e = iters.entry(k).or_insert(0);
            *e = (*e).max(v);
        }
    }
    Ok(NativeReport {
        threads: cfg.threads,
        wall,
        iterations: iters
            .into_iter()
            .map(|(k, ns)| (k, Duration::from_nanos(ns)))
            .collect(),
        blocks,
        remote_messages: remote,
    })
}

struct ThreadStats {
    blocks: u64,
    remote: u64,
    iter_end: BTreeMap<u32, u64>,
}

fn worker<O, M>(
    me: u32,
    mut slots: Vec<Slot<O, M>>,
    mut queue: LocalQueue<M>,
    rx: mpsc::Receiver<Envelope<M>>,
    txs: Vec<mpsc::Sender<Envelope<M>>>,
    sh: &Shared<'_>,
) -> ThreadStats
where
    O: crate::model::Chare<Msg = M>,
    M: crate::model::Message,
{
    let mut scratch = Scratch::default();
    let mut st = ThreadStats {
        blocks: 0,
        remote: 0,
        iter_end: BTreeMap::new(),
    };
    loop {
        while let Ok(e) = rx.try_recv() {
            queue.push(e, false);
        }
        let Some(env) = queue.pop() else {
            if sh.in_flight.load(Ordering::SeqCst) == 0 || sh.abort.load(Ordering::SeqCst) {
                return st;
            }
            if let Ok(e) = rx.recv_timeout(Duration::from_micros(100)) {
                queue.push(e, false);
            }
            continue;
        };
        let slot = &mut slots[sh.local[env.to as usize] as usize];
        let exec = slot.execute(
            sh.world,
            (ObjRef(env.to), sh.world.pe_of[env.to as usize]),
            env.payload,
            Clock::Wall,
            (0, 0),
            &mut scratch,
        );
        st.blocks += 1;
        if let Some(k) = exec.iteration {
            let end = sh.t0.elapsed().as_nanos() as u64;
            let e = st.iter_end.entry(k).or_insert(0);
            *e = (*e).max(end);
        }
        let new = scratch.outs.len() + exec.completions.len();
        sh.in_flight.fetch_add(new as u64, Ordering::SeqCst);
        for out in scratch.outs.drain(..) {
            let e = Envelope {
                to: out.to.0,
                prio: out.prio,
                payload: out.payload,
            };
            let dst = sh.owner[out.to.0 as usize];
            if dst == me {
                queue.push(e, false);
            } else {
                st.remote += 1;
                // The receiver only stops at quiescence, which this message prevents.
                let _ = txs[dst as usize].send(e);
            }
        }
        for payload in exec.completions {
            queue.push(
                Envelope {
                    to: env.to,
                    prio: 0,
                    payload,
                },
                true,
            );
        }
        sh.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}
