//! `rec-bipart`: recursive bipartition of the object communication graph and the PE set
//! (after Charm++'s RecBipartLB).
//!
//! The PE range `[lo, hi)` splits at `mid = lo + (hi - lo) / 2`. The objects split so each
//! half's load (with its PEs' background load) is proportional to its PEs' capacity (speed):
//! the first half grows by breadth-first search over the communication graph from a
//! pseudo-peripheral object (the last one reached by a BFS from the lowest-id object), taking
//! objects in BFS order until its load is closest to its share; disconnected pieces are
//! entered at their lowest-id object. Then up to 8 Fiduccia-Mattheyses passes lower the cut
//! weight (bytes + messages): each pass moves every object at most once, best gain first,
//! hill-climbing through losses, and keeps the best prefix whose imbalance is allowed:
//! `(tolerance - 1) / levels` of the half's share (levels = ceil(log2 P), so the allowance does
//! not compound), or the deviation BFS left if larger; moves in between may exceed that by one
//! object.
//! Both halves recurse until one PE remains. Splits balance only to whole objects, so if a
//! PE ends above greedy's max load x `tolerance`, a refine pass (variant B, threshold greedy's
//! max x `tolerance`) starting from the partition moves the fewest objects needed (best
//! effort). Non-migratable objects stay put and count as their PE's background load. Cost: O((objects + edges) log P).

use crate::LbDatabase;
use crate::greedy::{greedy, max_effective};
use crate::refine::{RefineVariant, refine_at};
use priority_queue::PriorityQueue;
use sim_core::{Ratio, SimDuration};
use std::cmp::Reverse;
use std::collections::VecDeque;

/// Undirected adjacency in CSR form: neighbours of `v` are `nbr[start[v]..start[v+1]]`,
/// sorted by id, with their weights in `w`.
pub(crate) struct Graph {
    pub start: Vec<usize>,
    pub nbr: Vec<u32>,
    pub w: Vec<u64>,
}

impl Graph {
    pub(crate) fn of(db: &LbDatabase) -> Graph {
        let n = db.objects.len();
        let mut deg = vec![0usize; n + 1];
        for e in &db.edges {
            deg[e.a as usize] += 1;
            deg[e.b as usize] += 1;
        }
        let mut start = vec![0usize; n + 1];
        for v in 0..n {
            start[v + 1] = start[v] + deg[v];
        }
        let mut fill = start.clone();
        let mut nbr = vec![0u32; start[n]];
        let mut w = vec![0u64; start[n]];
        // Edges are sorted by (a, b). Filling every vertex's smaller neighbours first (from
        // the edges where it is `b`, met in ascending `a`), then its larger ones (where it is
        // `a`, in ascending `b`), leaves each list sorted by neighbour id.
        for backward in [true, false] {
            for e in &db.edges {
                let (x, y) = if backward { (e.b, e.a) } else { (e.a, e.b) };
                let i = fill[x as usize];
                nbr[i] = y;
                w[i] = e.weight();
                fill[x as usize] += 1;
            }
        }
        Graph { start, nbr, w }
    }
    fn neighbours(&self, v: u32) -> impl Iterator<Item = (u32, u64)> + '_ {
        let r = self.start[v as usize]..self.start[v as usize + 1];
        self.nbr[r.clone()]
            .iter()
            .copied()
            .zip(self.w[r].iter().copied())
    }
}

/// Capacity weight of a PE: proportional to its speed (1 / CPU factor).
fn capacity(scale: Ratio) -> u128 {
    if scale.num() == 0 {
        return 1u128 << 80;
    }
    (1_000_000_000u128 * scale.den() as u128 / scale.num() as u128).max(1)
}

struct State<'a> {
    db: &'a LbDatabase,
    g: Graph,
    /// Subproblem id of each object (objects of the current split share one).
    member: Vec<u32>,
    /// In the first half (during a split).
    side_a: Vec<bool>,
    visited: Vec<u32>,
    next_id: u32,
    map: Vec<u32>,
    slack: Ratio,
}

/// The rec-bipart map. `tolerance` (e.g. 1.05) bounds the imbalance boundary moves may add.
pub(crate) fn rec_bipart(db: &LbDatabase, tolerance: Ratio) -> Vec<u32> {
    let n = db.objects.len();
    let objs: Vec<u32> = (0..n as u32)
        .filter(|&o| db.objects[o as usize].migratable)
        .collect();
    // The imbalance allowance is shared among the levels of bisection, so the final
    // imbalance stays near `tolerance` rather than compounding per level.
    let levels = u64::from(32 - (db.num_pes().max(2) - 1).leading_zeros());
    let slack = Ratio::new(
        tolerance.num().saturating_sub(tolerance.den()),
        tolerance.den().saturating_mul(levels),
    )
    .unwrap_or(Ratio::new(0, 1).expect("0/1"));
    let mut st = State {
        db,
        g: Graph::of(db),
        member: vec![u32::MAX; n],
        side_a: vec![false; n],
        visited: vec![u32::MAX; n],
        next_id: 0,
        map: db.current_map(),
        slack,
    };
    // Explicit stack instead of recursion: (objects, pe lo, pe hi).
    let mut stack = vec![(objs, 0u32, db.num_pes())];
    while let Some((objs, lo, hi)) = stack.pop() {
        if hi - lo == 1 || objs.is_empty() {
            for &o in &objs {
                st.map[o as usize] = lo;
            }
            continue;
        }
        let mid = lo + (hi - lo) / 2;
        let (a, b) = st.split(&objs, lo, mid, hi);
        stack.push((b, mid, hi));
        stack.push((a, lo, mid));
    }
    // Bisection balances each split only to whole objects; a refine pass (B) from the
    // partition then evens out PEs above greedy's max load x tolerance with few moves.
    let cap = tolerance
        .scale(SimDuration::from_ps(max_effective(db, &greedy(db))))
        .as_ps();
    if max_effective(db, &st.map) > cap {
        return refine_at(db, &st.map, RefineVariant::B, cap).0;
    }
    st.map
}

/// Fiduccia-Mattheyses passes per bisection (each stops early when it gains nothing).
const FM_PASSES: usize = 8;

impl State<'_> {
    fn load(&self, o: u32) -> u64 {
        self.db.objects[o as usize].load_ps
    }

    /// Cut weight saved by moving `o` to the other side: its weight to the other side minus
    /// its weight to its own side (within subproblem `id`).
    fn gain(&self, o: u32, id: u32) -> i64 {
        let a = self.side_a[o as usize];
        let mut g: i64 = 0;
        for (u, w) in self.g.neighbours(o) {
            if self.member[u as usize] != id {
                continue;
            }
            let w = i64::try_from(w).unwrap_or(i64::MAX / 4);
            if self.side_a[u as usize] == a {
                g = g.saturating_sub(w);
            } else {
                g = g.saturating_add(w);
            }
        }
        g
    }

    /// One FM pass: every object moves at most once, always the best-gain move (from either
    /// side) that keeps the first half's load within `loose` of `target` (ties: the move
    /// from the heavier side, then the lower id); afterwards the moves are rolled back to the
    /// prefix with the largest total gain whose imbalance is within `strict`. Returns that
    /// gain (0: nothing kept).
    fn fm_pass(
        &mut self,
        objs: &[u32],
        id: u32,
        target: u128,
        load_a: &mut u128,
        strict: u128,
        loose: u128,
    ) -> i64 {
        type Pq = PriorityQueue<u32, (i64, Reverse<u32>)>;
        let (mut pq_a, mut pq_b): (Pq, Pq) = (PriorityQueue::new(), PriorityQueue::new());
        for &o in objs {
            let g = self.gain(o, id);
            if self.side_a[o as usize] {
                pq_a.push(o, (g, Reverse(o)));
            } else {
                pq_b.push(o, (g, Reverse(o)));
            }
        }
        let dev = |l: u128| l.abs_diff(target);
        let stall_limit = 64 + objs.len() / 8;
        let (mut cum, mut best, mut best_len, mut stall) = (0i64, 0i64, 0usize, 0usize);
        let mut moved: Vec<u32> = Vec::new();
        loop {
            let cand = |pq: &Pq, from_a: bool, load_a: u128| {
                pq.peek().and_then(|(&o, &(g, _))| {
                    let l = self.load(o) as u128;
                    let new_a = if from_a { load_a - l } else { load_a + l };
                    (dev(new_a) <= loose).then_some((g, o, new_a))
                })
            };
            let a_heavier = *load_a > target;
            let pick = match (cand(&pq_a, true, *load_a), cand(&pq_b, false, *load_a)) {
                (Some(x), Some(y)) => {
                    if x.0 > y.0 || (x.0 == y.0 && a_heavier) {
                        Some((x, true))
                    } else {
                        Some((y, false))
                    }
                }
                (Some(x), None) => Some((x, true)),
                (None, Some(y)) => Some((y, false)),
                (None, None) => None,
            };
            let Some(((g, o, new_a), from_a)) = pick else {
                break;
            };
            if from_a {
                pq_a.remove(&o);
            } else {
                pq_b.remove(&o);
            }
            self.side_a[o as usize] = !from_a;
            *load_a = new_a;
            cum = cum.saturating_add(g);
            moved.push(o);
            for (u, w) in self.g.neighbours(o) {
                if self.member[u as usize] != id {
                    continue;
                }
                let w2 = i64::try_from(w).unwrap_or(i64::MAX / 4).saturating_mul(2);
                // A neighbour left behind now has one more edge across; one on the new side
                // one fewer.
                let delta = if self.side_a[u as usize] == from_a {
                    w2
                } else {
                    -w2
                };
                let pq = if self.side_a[u as usize] {
                    &mut pq_a
                } else {
                    &mut pq_b
                };
                pq.change_priority_by(&u, |p| p.0 = p.0.saturating_add(delta));
            }
            if cum > best && dev(*load_a) <= strict {
                best = cum;
                best_len = moved.len();
                stall = 0;
            } else {
                stall += 1;
                if stall > stall_limit {
                    break;
                }
            }
        }
        for &o in moved[best_len..].iter().rev() {
            let a = self.side_a[o as usize];
            let l = self.load(o) as u128;
            *load_a = if a { *load_a - l } else { *load_a + l };
            self.side_a[o as usize] = !a;
        }
        best
    }

    /// BFS order of `objs` (all members of subproblem `id`), starting at `seed`, entering
    /// unreached pieces at their lowest id.
    fn bfs(&mut self, objs: &[u32], id: u32, seed: u32, stamp: u32) -> Vec<u32> {
        let mut order = Vec::with_capacity(objs.len());
        let mut q = VecDeque::new();
        for s in std::iter::once(seed).chain(objs.iter().copied()) {
            if self.visited[s as usize] == stamp {
                continue;
            }
            self.visited[s as usize] = stamp;
            q.push_back(s);
            while let Some(v) = q.pop_front() {
                order.push(v);
                for (u, _) in self.g.neighbours(v) {
                    if self.member[u as usize] == id && self.visited[u as usize] != stamp {
                        self.visited[u as usize] = stamp;
                        q.push_back(u);
                    }
                }
            }
        }
        order
    }

    fn split(&mut self, objs: &[u32], lo: u32, mid: u32, hi: u32) -> (Vec<u32>, Vec<u32>) {
        let id = self.next_id;
        self.next_id += 2;
        for &o in objs {
            self.member[o as usize] = id;
            self.side_a[o as usize] = false;
        }
        let pes = &self.db.pes;
        let cap = |r: std::ops::Range<u32>| -> u128 {
            r.map(|p| capacity(pes[p as usize].cpu_scale)).sum()
        };
        let bg = |r: std::ops::Range<u32>| -> u128 {
            r.map(|p| pes[p as usize].background_ps as u128).sum()
        };
        let obj_total: u128 = objs.iter().map(|&o| self.load(o) as u128).sum();
        let total = obj_total + bg(lo..hi);
        let share = total * cap(lo..mid) / cap(lo..hi).max(1);
        let target = share.saturating_sub(bg(lo..mid)).min(obj_total);

        // Pseudo-peripheral seed: the last object a BFS from the first one reaches.
        let probe = self.bfs(objs, id, objs[0], id);
        let seed = *probe.last().expect("objs is not empty");
        let order = self.bfs(objs, id, seed, id + 1);

        // Prefix of the BFS order whose load is closest to the target.
        let mut acc: u128 = 0;
        let mut take = 0usize;
        for (i, &o) in order.iter().enumerate() {
            let with = acc + self.load(o) as u128;
            if with >= target {
                if with - target <= target - acc {
                    take = i + 1;
                    acc = with;
                } else {
                    take = i;
                }
                break;
            }
            acc = with;
            take = i + 1;
        }
        for &o in &order[..take] {
            self.side_a[o as usize] = true;
        }
        let mut load_a = acc;
        let dev = |l: u128| l.abs_diff(target);
        let allowed = dev(load_a).max(
            self.slack
                .scale(SimDuration::from_ps(
                    u64::try_from(target).unwrap_or(u64::MAX),
                ))
                .as_ps() as u128,
        );

        // Fiduccia-Mattheyses passes within the allowed imbalance.
        let max_obj = objs
            .iter()
            .map(|&o| self.load(o) as u128)
            .max()
            .unwrap_or(0);
        for _ in 0..FM_PASSES {
            if self.fm_pass(objs, id, target, &mut load_a, allowed, allowed + max_obj) <= 0 {
                break;
            }
        }
        let (a, b): (Vec<u32>, Vec<u32>) = objs.iter().partition(|&&o| self.side_a[o as usize]);
        (a, b)
    }
}
