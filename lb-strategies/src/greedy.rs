//! `greedy` (LPT), `greedy-refine`, and the controls `dummy`, `rotate`, `random`.

use crate::LbDatabase;
use priority_queue::PriorityQueue;
use sim_core::{Ratio, SeedTree, SimDuration};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Migratable objects, heaviest first (ties: lower id first).
pub(crate) fn heaviest_first(db: &LbDatabase) -> Vec<u32> {
    let mut v: Vec<u32> = (0..db.objects.len() as u32)
        .filter(|&o| db.objects[o as usize].migratable)
        .collect();
    v.sort_by_key(|&o| (Reverse(db.objects[o as usize].load_ps), o));
    v
}

/// Greedy LPT: the heaviest object goes to the PE with the least effective load (ties: the
/// lower PE id), which then carries it. Starts from the background loads; speeds count
/// through the effective load.
pub(crate) fn greedy(db: &LbDatabase) -> Vec<u32> {
    let mut map = db.current_map();
    let mut raw: Vec<u64> = db.pes.iter().map(|p| p.background_ps).collect();
    let mut heap: BinaryHeap<Reverse<(u64, u32)>> = (0..db.num_pes())
        .map(|p| Reverse((db.effective_ps(p, raw[p as usize]), p)))
        .collect();
    for o in heaviest_first(db) {
        let Reverse((_, p)) = heap.pop().expect("at least one PE");
        map[o as usize] = p;
        let r = &mut raw[p as usize];
        *r = r.saturating_add(db.objects[o as usize].load_ps);
        heap.push(Reverse((db.effective_ps(p, *r), p)));
    }
    map
}

/// The largest effective PE load under `map`.
pub(crate) fn max_effective(db: &LbDatabase, map: &[u32]) -> u64 {
    db.raw_loads(map)
        .iter()
        .enumerate()
        .map(|(p, &r)| db.effective_ps(p as u32, r))
        .max()
        .unwrap_or(0)
}

/// GreedyRefine (Charm++'s recommended default): the cap `M` is Greedy's max load times
/// `tolerance`. Heaviest object first, an object stays on its PE if that PE's load plus the
/// object stays within `M`; otherwise it goes to the least-loaded PE and `M` rises to that
/// PE's new load if it exceeds `M`.
pub(crate) fn greedy_refine(db: &LbDatabase, tolerance: Ratio) -> Vec<u32> {
    let mut cap = tolerance
        .scale(SimDuration::from_ps(max_effective(db, &greedy(db))))
        .as_ps();
    let mut map = db.current_map();
    let mut raw: Vec<u64> = db.pes.iter().map(|p| p.background_ps).collect();
    // Min-queue of PEs by (effective load, id); re-prioritised as objects land.
    let mut pq: PriorityQueue<u32, Reverse<(u64, u32)>> = PriorityQueue::new();
    for p in 0..db.num_pes() {
        pq.push(p, Reverse((db.effective_ps(p, raw[p as usize]), p)));
    }
    for o in heaviest_first(db) {
        let obj = &db.objects[o as usize];
        let old = obj.from_pe;
        let stay = db.effective_ps(old, raw[old as usize].saturating_add(obj.load_ps));
        let p = if stay <= cap {
            old
        } else {
            let (&p, _) = pq.peek().expect("at least one PE");
            p
        };
        map[o as usize] = p;
        let r = &mut raw[p as usize];
        *r = r.saturating_add(obj.load_ps);
        let eff = db.effective_ps(p, *r);
        cap = cap.max(eff);
        pq.change_priority(&p, Reverse((eff, p)));
    }
    map
}

/// Every migratable object to the next PE (`p + 1 mod P`).
pub(crate) fn rotate(db: &LbDatabase) -> Vec<u32> {
    let n = db.num_pes();
    db.objects
        .iter()
        .map(|o| {
            if o.migratable {
                (o.from_pe + 1) % n
            } else {
                o.from_pe
            }
        })
        .collect()
}

/// Every migratable object to a uniformly random PE, from the stream `lb/random` of `seed`.
pub(crate) fn random(db: &LbDatabase, seed: u64) -> Vec<u32> {
    let mut rng = SeedTree::new(seed).stream("lb/random");
    let n = db.num_pes() as u64;
    db.objects
        .iter()
        .map(|o| {
            if o.migratable {
                sim_core::rng::below(&mut rng, n) as u32
            } else {
                o.from_pe
            }
        })
        .collect()
}
