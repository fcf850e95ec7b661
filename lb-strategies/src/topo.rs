//! `topo`: topology-aware placement minimising hop-bytes (after Charm++'s TopoLB).
//!
//! First `rec-bipart` splits the objects into one balanced, low-cut group per PE. Then the
//! groups are placed on the PEs of the simulated topology greedily: the group with the most
//! traffic goes to the most central PE (least total hops to all others; ties: lowest id);
//! after that, the unplaced group with the most bytes to already placed groups goes to the
//! free PE that minimises `sum(bytes x hops)` to its placed neighbours (ties: lowest PE).
//! Groups with no placed neighbour take the lowest free PE. Then up to 4 passes of pairwise
//! swaps: two groups trade PEs when that lowers hop-bytes (skipped above 2048 PEs). Cost:
//! O(P^2 x group degree) per pass.
//!
//! Limits: the placement permutes whole groups, so it assumes PEs of equal speed and no
//! background load (with either, a group may land on a PE rec-bipart did not size it for).

use crate::partition::rec_bipart;
use crate::{LbDatabase, PeTopology};
use priority_queue::PriorityQueue;
use sim_core::Ratio;
use std::cmp::Reverse;

pub(crate) fn topo(db: &LbDatabase, topo: &PeTopology, tolerance: Ratio) -> Vec<u32> {
    let parts = rec_bipart(db, tolerance);
    let p = db.num_pes() as usize;
    // Group graph: bytes between groups.
    let mut pairs: Vec<(u32, u32, u64)> = Vec::new();
    for e in &db.edges {
        let (x, y) = (parts[e.a as usize], parts[e.b as usize]);
        if x != y {
            pairs.push((x.min(y), x.max(y), e.weight()));
            pairs.push((x.max(y), x.min(y), e.weight()));
        }
    }
    pairs.sort_unstable();
    let mut adj: Vec<Vec<(u32, u64)>> = vec![Vec::new(); p];
    for (x, y, w) in pairs {
        let l = &mut adj[x as usize];
        match l.last_mut() {
            Some(last) if last.0 == y => last.1 = last.1.saturating_add(w),
            _ => l.push((y, w)),
        }
    }
    let total: Vec<u64> = adj
        .iter()
        .map(|l| l.iter().fold(0u64, |a, e| a.saturating_add(e.1)))
        .collect();

    let mut place = vec![u32::MAX; p]; // group -> PE
    let mut free = vec![true; p];
    let mut pq: PriorityQueue<u32, (u64, u64, Reverse<u32>)> = PriorityQueue::new();
    for g in 0..p as u32 {
        pq.push(g, (0, total[g as usize], Reverse(g)));
    }
    let mut first = true;
    while let Some((g, (conn, _, _))) = pq.pop() {
        let q = if first {
            first = false;
            central_pe(topo, p as u32)
        } else if conn == 0 {
            free.iter().position(|f| *f).expect("a free PE per group") as u32
        } else {
            let mut best = (u128::MAX, u32::MAX);
            for q in (0..p as u32).filter(|q| free[*q as usize]) {
                let mut cost: u128 = 0;
                for &(h, w) in &adj[g as usize] {
                    let ph = place[h as usize];
                    if ph != u32::MAX {
                        cost += w as u128 * topo.hops(q, ph) as u128;
                    }
                }
                if cost < best.0 {
                    best = (cost, q);
                }
            }
            best.1
        };
        place[g as usize] = q;
        free[q as usize] = false;
        for &(h, w) in &adj[g as usize] {
            if place[h as usize] == u32::MAX {
                pq.change_priority_by(&h, |pr| pr.0 = pr.0.saturating_add(w));
            }
        }
    }
    if p <= SWAP_LIMIT {
        swap_pass(topo, &adj, &mut place);
    }
    db.objects
        .iter()
        .enumerate()
        .map(|(o, r)| {
            if r.migratable {
                place[parts[o] as usize]
            } else {
                r.from_pe
            }
        })
        .collect()
}

/// Above this many PEs the pairwise swap passes (O(P^2) each) are skipped.
const SWAP_LIMIT: usize = 2048;

/// Hop-bytes of group `g` placed on `q` against its neighbours where they are (a neighbour
/// on `q_other` is taken to be on `q_self` instead when it is the swap partner).
fn cost_at(
    topo: &PeTopology,
    adj: &[Vec<(u32, u64)>],
    place: &[u32],
    g: u32,
    q: u32,
    partner: u32,
) -> u128 {
    adj[g as usize]
        .iter()
        .map(|&(h, w)| {
            let ph = if h == partner {
                place[g as usize]
            } else {
                place[h as usize]
            };
            w as u128 * topo.hops(q, ph) as u128
        })
        .sum()
}

/// Up to 4 passes of pairwise swaps: groups `g < h` trade PEs when that lowers hop-bytes.
fn swap_pass(topo: &PeTopology, adj: &[Vec<(u32, u64)>], place: &mut [u32]) {
    let p = place.len() as u32;
    for _ in 0..4 {
        let mut improved = false;
        for g in 0..p {
            if adj[g as usize].is_empty() {
                continue;
            }
            for h in g + 1..p {
                let (pg, ph) = (place[g as usize], place[h as usize]);
                let before = cost_at(topo, adj, place, g, pg, u32::MAX)
                    + cost_at(topo, adj, place, h, ph, u32::MAX);
                let after =
                    cost_at(topo, adj, place, g, ph, h) + cost_at(topo, adj, place, h, pg, g);
                if after < before {
                    place.swap(g as usize, h as usize);
                    improved = true;
                }
            }
        }
        if !improved {
            break;
        }
    }
}

/// The PE with the least total hop count to all PEs (ties: lowest id).
fn central_pe(topo: &PeTopology, pes: u32) -> u32 {
    (0..pes)
        .map(|q| {
            let s: u64 = (0..pes).map(|r| topo.hops(q, r) as u64).sum();
            (s, q)
        })
        .min()
        .map_or(0, |(_, q)| q)
}
