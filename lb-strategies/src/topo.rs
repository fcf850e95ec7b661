//! `topo`: topology-aware placement minimising hop-bytes (after Charm++'s TopoLB).
//!
//! First `rec-bipart` splits the objects into one balanced, low-cut group per PE. Then the
//! groups are placed on the PEs of the simulated topology greedily: the group with the most
//! traffic goes to the most central PE (least total hops to all others; ties: lowest id);
//! after that, the unplaced group with the most bytes to already placed groups goes to the
//! free PE that minimises `sum(bytes x hops)` to its placed neighbours (ties: lowest PE).
//! Groups with no placed neighbour take the lowest free PE. Then up to 4 passes of pairwise
//! swaps: two groups trade PEs when that lowers hop-bytes (skipped above 2048 PEs).
//!
//! Cost: the most central PE is found from per-dimension (mesh, torus), per-bit (hypercube)
//! or per-subtree (fat-tree) counts of the PEs, in O(P x dimensions) (a dragonfly sums hops
//! over pairs of its nodes in use: O(nodes^2)); the lowest free PE is a cursor (O(P) over the
//! whole placement); the groups are taken from a priority queue (O(P log P)). What stays
//! quadratic is bounded by the traffic: each group with a placed neighbour scans the free
//! PEs once per node (O(nodes x its degree)), so an 8-object trace on 64k PEs places in
//! milliseconds while a trace with traffic between all P groups costs O(P x nodes x
//! degree); the swap passes, O(P^2 x degree) each, run up to 2048 PEs only.
//!
//! Limits: the placement permutes whole groups, so it assumes PEs of equal speed and no
//! background load (with either, a group may land on a PE rec-bipart did not size it for).

use crate::partition::rec_bipart;
use crate::{LbDatabase, PeTopology};
use network_models::Topology;
use priority_queue::PriorityQueue;
use sim_core::Ratio;
use std::cmp::Reverse;

pub(crate) fn topo(db: &LbDatabase, topo: &PeTopology, tolerance: Ratio) -> Vec<u32> {
    let parts = rec_bipart(db, tolerance);
    let p = db.num_pes() as usize;
    let (adj, total) = group_graph(db, &parts);

    let mut place = vec![u32::MAX; p]; // group -> PE
    let mut free = vec![true; p];
    let mut pq: PriorityQueue<u32, (u64, u64, Reverse<u32>)> = PriorityQueue::new();
    for g in 0..p as u32 {
        pq.push(g, (0, total[g as usize], Reverse(g)));
    }
    let mut first = true;
    // PEs below `lowest_free` are taken (nothing is freed again).
    let mut lowest_free = 0usize;
    let ppn = topo.pes_per_node.max(1);
    while let Some((g, (conn, _, _))) = pq.pop() {
        while lowest_free < p && !free[lowest_free] {
            lowest_free += 1;
        }
        let q = if first {
            first = false;
            central_pe(topo, p as u32)
        } else if conn == 0 {
            assert!(lowest_free < p, "a free PE per group");
            lowest_free as u32
        } else {
            // The cost depends on the node only: once per node with a free PE, whose lowest
            // free PE it would take (nodes hold consecutive PEs, so the first node of least
            // cost holds the lowest PE of least cost).
            let mut best = (u128::MAX, u32::MAX);
            let mut q = lowest_free as u32;
            while (q as usize) < p {
                if !free[q as usize] {
                    q += 1;
                    continue;
                }
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
                q = (q / ppn + 1).saturating_mul(ppn);
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

/// The group graph: per group, its neighbours with the bytes between them (sorted), and
/// its total bytes.
fn group_graph(db: &LbDatabase, parts: &[u32]) -> (Vec<Vec<(u32, u64)>>, Vec<u64>) {
    let p = db.num_pes() as usize;
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
    let total = adj
        .iter()
        .map(|l| l.iter().fold(0u64, |a, e| a.saturating_add(e.1)))
        .collect();
    (adj, total)
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

/// The PE with the least total hop count to all PEs (ties: lowest id). The sum depends on
/// the PE's node only: it is computed per node from counts of the PEs (see the module docs).
fn central_pe(topo: &PeTopology, pes: u32) -> u32 {
    let ppn = topo.pes_per_node.max(1) as u64;
    let nodes = (pes as u64).div_ceil(ppn);
    // PEs on each node in use.
    let cnt = |n: u64| -> u64 { ppn.min(pes as u64 - n * ppn) };
    let total = pes as u64;
    let sums: Vec<u128> = match &topo.topology {
        Topology::FullyConnected { .. } => (0..nodes).map(|n| (total - cnt(n)) as u128).collect(),
        Topology::Hypercube { dim } => {
            let mut ones = vec![0u64; *dim as usize];
            for n in 0..nodes {
                for (i, o) in ones.iter_mut().enumerate() {
                    if n >> i & 1 == 1 {
                        *o += cnt(n);
                    }
                }
            }
            (0..nodes)
                .map(|n| {
                    ones.iter()
                        .enumerate()
                        .map(|(i, &o)| if n >> i & 1 == 1 { total - o } else { o } as u128)
                        .sum()
                })
                .collect()
        }
        Topology::Mesh { dims } | Topology::Torus { dims } => {
            let wrap = matches!(topo.topology, Topology::Torus { .. });
            // Per dimension, the PEs at each coordinate, then each coordinate's summed
            // distance to them; a node's sum is the sum over its coordinates.
            let mut per_dim: Vec<Vec<u128>> = Vec::with_capacity(dims.len());
            let mut stride = 1u64;
            for &d in dims {
                let d = d as u64;
                let mut c = vec![0u64; d as usize];
                for n in 0..nodes {
                    c[(n / stride % d) as usize] += cnt(n);
                }
                per_dim.push(axis_sums(&c, wrap));
                stride = stride.saturating_mul(d);
            }
            (0..nodes)
                .map(|n| {
                    let (mut x, mut s) = (n, 0u128);
                    for (&d, sums) in dims.iter().zip(&per_dim) {
                        s += sums[(x % d as u64) as usize];
                        x /= d as u64;
                    }
                    s
                })
                .collect()
        }
        Topology::FatTree { k, levels, .. } => {
            // Hosts whose highest differing base-k digit is m are 2 (m + 1) hops apart:
            // count the PEs in each subtree around the node (subtrees are ranges of nodes).
            let k = *k as u64;
            let mut prefix = vec![0u64; nodes as usize + 1];
            for n in 0..nodes {
                prefix[n as usize + 1] = prefix[n as usize] + cnt(n);
            }
            let in_range =
                |lo: u64, hi: u64| prefix[hi.min(nodes) as usize] - prefix[lo.min(nodes) as usize];
            (0..nodes)
                .map(|n| {
                    let (mut s, mut inner, mut size) = (0u128, cnt(n), 1u64);
                    for m in 0..*levels {
                        size = size.saturating_mul(k);
                        let lo = n / size * size;
                        let outer = in_range(lo, lo.saturating_add(size));
                        s += 2 * (m as u128 + 1) * (outer - inner) as u128;
                        inner = outer;
                    }
                    s
                })
                .collect()
        }
        // No closed form: every pair of nodes in use (O(nodes^2)).
        Topology::Dragonfly { .. } => (0..nodes)
            .map(|a| {
                (0..nodes)
                    .map(|b| cnt(b) as u128 * topo.topology.hops(a, b) as u128)
                    .sum()
            })
            .collect(),
    };
    let best = sums
        .iter()
        .enumerate()
        .min_by_key(|&(n, s)| (*s, n))
        .map_or(0, |(n, _)| n as u64);
    (best * ppn) as u32
}

/// For PE counts `c` at the coordinates of one axis, each coordinate's summed distance to
/// them (`wrap`: around a ring, the shorter way), in O(len) from prefix sums.
fn axis_sums(c: &[u64], wrap: bool) -> Vec<u128> {
    let d = c.len();
    // Over the axis written twice (for the ring): counts and coordinate-weighted counts.
    let len = if wrap { 2 * d } else { d };
    let (mut p0, mut p1) = (vec![0u128; len + 1], vec![0u128; len + 1]);
    for i in 0..len {
        let v = c[i % d] as u128;
        p0[i + 1] = p0[i] + v;
        p1[i + 1] = p1[i] + v * i as u128;
    }
    let r0 = |a: usize, b: usize| p0[b] - p0[a];
    let r1 = |a: usize, b: usize| p1[b] - p1[a];
    (0..d)
        .map(|x| {
            let xu = x as u128;
            if !wrap {
                // Below x: x - i; above: i - x.
                (xu * r0(0, x) - r1(0, x)) + (r1(x, d) - xu * r0(x, d))
            } else {
                // Forward 0..=d/2 steps: i - x; the rest the other way round: x + d - i.
                let h = d / 2;
                let fwd = r1(x, x + h + 1) - xu * r0(x, x + h + 1);
                let back = (xu + d as u128) * r0(x + h + 1, x + d) - r1(x + h + 1, x + d);
                fwd + back
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CommEdge, LbPoint, ObjectRecord, PeRecord};

    fn brute_central(topo: &PeTopology, pes: u32) -> u32 {
        (0..pes)
            .map(|q| ((0..pes).map(|r| topo.hops(q, r) as u64).sum::<u64>(), q))
            .min()
            .map_or(0, |(_, q)| q)
    }

    fn topologies() -> Vec<Topology> {
        vec![
            Topology::Torus { dims: vec![4, 4] },
            Topology::Torus {
                dims: vec![5, 3, 4],
            },
            Topology::Torus { dims: vec![7] },
            Topology::Torus { dims: vec![1, 6] },
            Topology::Mesh { dims: vec![4, 4] },
            Topology::Mesh {
                dims: vec![5, 2, 3],
            },
            Topology::Hypercube { dim: 5 },
            Topology::FullyConnected { nodes: 9 },
            Topology::FatTree {
                k: 3,
                levels: 3,
                up: 3,
            },
            Topology::FatTree {
                k: 4,
                levels: 2,
                up: 2,
            },
            Topology::Dragonfly {
                groups: 5,
                routers: 2,
                hosts: 2,
                global: 2,
                valiant: false,
            },
        ]
    }

    #[test]
    fn central_pe_is_the_brute_force_minimum() {
        for t in topologies() {
            for ppn in [1, 2, 3] {
                let topo = PeTopology {
                    topology: t.clone(),
                    pes_per_node: ppn,
                };
                let max = (t.nodes() * ppn as u64) as u32;
                for pes in [1, 2, 3, max / 2, max - 1, max] {
                    if pes == 0 {
                        continue;
                    }
                    assert_eq!(
                        central_pe(&topo, pes),
                        brute_central(&topo, pes),
                        "{t} with {ppn} PEs per node, {pes} PEs"
                    );
                }
            }
        }
    }

    /// The placement loop as it was (a scan of every PE per group), for comparison.
    fn topo_before(db: &LbDatabase, topo: &PeTopology, tolerance: Ratio) -> Vec<u32> {
        let parts = rec_bipart(db, tolerance);
        let p = db.num_pes() as usize;
        let (adj, total) = group_graph(db, &parts);
        let mut place = vec![u32::MAX; p];
        let mut free = vec![true; p];
        let mut pq: PriorityQueue<u32, (u64, u64, Reverse<u32>)> = PriorityQueue::new();
        for g in 0..p as u32 {
            pq.push(g, (0, total[g as usize], Reverse(g)));
        }
        let mut first = true;
        while let Some((g, (conn, _, _))) = pq.pop() {
            let q = if first {
                first = false;
                brute_central(topo, p as u32)
            } else if conn == 0 {
                free.iter().position(|f| *f).unwrap() as u32
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

    /// `n` objects on `pes` PEs with pseudo-random loads and traffic (seeded).
    fn random_db(n: u32, pes: u32, seed: u64) -> LbDatabase {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut edges: Vec<CommEdge> = Vec::new();
        for a in 0..n {
            for _ in 0..3 {
                let b = (next() % n as u64) as u32;
                if a != b {
                    edges.push(CommEdge {
                        a: a.min(b),
                        b: a.max(b),
                        messages: 1,
                        bytes: 1 + next() % 5000,
                    });
                }
            }
        }
        edges.sort_by_key(|e| (e.a, e.b));
        edges.dedup_by_key(|e| (e.a, e.b));
        LbDatabase {
            point: LbPoint::Start,
            objects: (0..n)
                .map(|i| ObjectRecord {
                    name: format!("o{i}"),
                    load_ps: 1 + next() % 1_000_000,
                    from_pe: i % pes,
                    migratable: true,
                    migrate_bytes: 100,
                })
                .collect(),
            pes: (0..pes)
                .map(|_| PeRecord {
                    background_ps: 0,
                    cpu_scale: Ratio::ONE,
                })
                .collect(),
            edges,
        }
    }

    #[test]
    fn placements_equal_the_quadratic_search() {
        for (i, t) in topologies().into_iter().enumerate() {
            for ppn in [1, 2] {
                let topo = PeTopology {
                    topology: t.clone(),
                    pes_per_node: ppn,
                };
                let pes = (t.nodes() * ppn as u64) as u32;
                for n in [4, pes, 3 * pes] {
                    let db = random_db(n, pes, i as u64 * 31 + n as u64);
                    let tol = Ratio::parse("1.05").unwrap();
                    assert_eq!(
                        topo_fn(&db, &topo, tol),
                        topo_before(&db, &topo, tol),
                        "{t}, {ppn} PEs per node, {n} objects"
                    );
                }
            }
        }
    }

    fn topo_fn(db: &LbDatabase, t: &PeTopology, tol: Ratio) -> Vec<u32> {
        topo(db, t, tol)
    }

    #[test]
    fn a_few_objects_on_64k_pes_place_quickly() {
        // Was 120 s and more (every group scanned every PE, the centre summed P^2 hops).
        let topo = PeTopology {
            topology: Topology::Torus {
                dims: vec![40, 40, 41],
            },
            pes_per_node: 1,
        };
        let pes = 40 * 40 * 41;
        let db = random_db(8, pes, 7);
        let t0 = std::time::Instant::now();
        let map = topo_fn(&db, &topo, Ratio::parse("1.05").unwrap());
        let took = t0.elapsed();
        assert_eq!(map.len(), 8);
        assert!(took.as_secs() < 20, "{took:?}");
        // The centre of a torus is PE 0 (every PE is as central); its neighbours follow.
        assert!(map.contains(&0), "{map:?}");
    }
}
