//! `refine` (Charm++ RefineA / RefineB): few moves from the current placement.
//!
//! For a threshold `M`, PEs whose effective load is above `M` are *heavy*. While a heavy PE
//! remains, the heaviest one gives its heaviest object that fits under `M` on a light PE
//! (load below `M`) to a light PE: **B** always picks the least-loaded PE; **A** picks the
//! first light PE that fits, scanning PEs round-robin from the last one used. If the heaviest
//! PE has no object that fits anywhere, `M` is infeasible.
//!
//! `M` is found by bisection between Greedy's max load and `upper` times it, to within 1%:
//! the smallest feasible `M` wins. If even the upper end is infeasible, the moves made at the
//! upper end are kept (best effort). Objects with zero load never move.

use crate::LbDatabase;
use crate::greedy::{greedy, max_effective};
use priority_queue::PriorityQueue;
use sim_core::{Ratio, SimDuration};
use std::cmp::Reverse;

/// Which light PE receives a moved object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefineVariant {
    /// The first light PE (round-robin scan) that fits.
    A,
    /// The least-loaded PE.
    B,
}

/// The refine strategy: the map for the smallest feasible threshold found.
pub(crate) fn refine(db: &LbDatabase, variant: RefineVariant, upper: Ratio) -> Vec<u32> {
    let current = db.current_map();
    let mut lo = max_effective(db, &greedy(db));
    if max_effective(db, &current) <= lo {
        return current;
    }
    let mut hi = upper.scale(SimDuration::from_ps(lo)).as_ps().max(lo);
    let (mut best, ok) = refine_at(db, &current, variant, hi);
    if !ok {
        return best;
    }
    while hi - lo > lo / 100 && hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        let (map, ok) = refine_at(db, &current, variant, mid);
        if ok {
            hi = mid;
            best = map;
        } else {
            lo = mid;
        }
    }
    best
}

/// One refinement pass at threshold `m` starting from `start`: the map and whether no heavy
/// PE remains.
pub(crate) fn refine_at(
    db: &LbDatabase,
    start: &[u32],
    variant: RefineVariant,
    m: u64,
) -> (Vec<u32>, bool) {
    let n_pes = db.num_pes();
    let mut map = start.to_vec();
    let mut raw = db.raw_loads(&map);
    let eff = |raw: &[u64], p: u32| db.effective_ps(p, raw[p as usize]);
    let key = |o: u32| (Reverse(db.objects[o as usize].load_ps), o);
    // Movable objects of each PE, heaviest first.
    let mut on: Vec<Vec<u32>> = vec![Vec::new(); n_pes as usize];
    for (o, r) in db.objects.iter().enumerate() {
        if r.migratable && r.load_ps > 0 {
            on[map[o] as usize].push(o as u32);
        }
    }
    for v in &mut on {
        v.sort_by_key(|&o| key(o));
    }
    let mut heavy: PriorityQueue<u32, (u64, Reverse<u32>)> = PriorityQueue::new();
    let mut light: PriorityQueue<u32, Reverse<(u64, u32)>> = PriorityQueue::new();
    for p in 0..n_pes {
        let e = eff(&raw, p);
        if e > m {
            heavy.push(p, (e, Reverse(p)));
        } else if e < m {
            light.push(p, Reverse((e, p)));
        }
    }
    let mut cursor = 0u32;
    while let Some((&h, _)) = heavy.peek() {
        let Some((&l0, _)) = light.peek() else {
            return (map, false);
        };
        let fits = |raw: &[u64], p: u32, o: u32| {
            db.effective_ps(
                p,
                raw[p as usize].saturating_add(db.objects[o as usize].load_ps),
            ) <= m
        };
        let Some(pos) = on[h as usize].iter().position(|&o| fits(&raw, l0, o)) else {
            return (map, false);
        };
        let o = on[h as usize][pos];
        let t = match variant {
            RefineVariant::B => l0,
            RefineVariant::A => {
                let mut t = l0;
                for i in 0..n_pes {
                    let p = (cursor + i) % n_pes;
                    if light.contains(&p) && fits(&raw, p, o) {
                        t = p;
                        break;
                    }
                }
                cursor = (t + 1) % n_pes;
                t
            }
        };
        on[h as usize].remove(pos);
        let ins = on[t as usize]
            .binary_search_by_key(&key(o), |&x| key(x))
            .unwrap_or_else(|i| i);
        on[t as usize].insert(ins, o);
        map[o as usize] = t;
        let load = db.objects[o as usize].load_ps;
        raw[h as usize] -= load;
        raw[t as usize] = raw[t as usize].saturating_add(load);
        for p in [h, t] {
            let e = eff(&raw, p);
            heavy.remove(&p);
            light.remove(&p);
            if e > m {
                heavy.push(p, (e, Reverse(p)));
            } else if e < m {
                light.push(p, Reverse((e, p)));
            }
        }
    }
    (map, true)
}
