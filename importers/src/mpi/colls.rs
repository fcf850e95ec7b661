//! Collectives as point-to-point messages: whatif's algorithms ([`Collectives::Classic`]) or
//! those SimGrid 3.32's default selector runs ([`Collectives::Smpi`]).
//!
//! SimGrid 3.32's `smpi/coll-selector` defaults to `default` (`src/smpi/colls/smpi_coll.cpp`,
//! `set_collectives`), whose choices are in `src/smpi/colls/smpi_default_selector.cpp`. Only
//! all-to-all picks an algorithm by size (Open MPI's decision function, `alltoall__ompi` in
//! `smpi_openmpi_selector.cpp`); the others are fixed:
//!
//! | collective | SimGrid 3.32 default | messages (P ranks, rank r) |
//! |---|---|---|
//! | barrier | `barrier__ompi_basic_linear` | r > 0: blocking send of 0 B to 0, then blocking receive from 0; rank 0: receives from all, waits, then sends to all, waits |
//! | bcast | `bcast__binomial_tree` | receive from the parent (blocking), then a blocking send to each child, farthest first |
//! | reduce | `ireduce` + wait | every rank sends to the root; the root receives from all (rank order) |
//! | allreduce | `reduce__default` to 0, then `bcast__default` | the two above |
//! | alltoall | `alltoall__ompi`: Open MPI's choice by P and `count * size(send type)` ([`alltoall_ompi_algorithm`]) | basic linear (receives from r+1, r+2, ... posted, then sends to r-1, r-2, ..., one wait), pairwise (`sendrecv` with `r XOR i`, i = 1..P-1; SimGrid aborts unless P is a power of two) or modified Bruck (`sendrecv` to r+2^k from r-2^k carrying the blocks whose index has bit k, ceil(log2 P) rounds) |
//! | alltoallv | `ialltoallv` + wait | receives from every rank posted (rank order), then sends to every rank (rank order, zero-size ones too), one wait |
//! | gather(v) | `igather(v)` + wait | every rank sends to the root; the root receives from all |
//! | scatter(v) | `iscatter(v)` + wait | the root sends to every rank; the others receive |
//! | allgather(v) | `iallgather(v)` + wait | a send to and a receive from every other rank, one wait |
//! | reduce_scatter | equal counts: `reduce__default` of the total to 0, then `scatterv` from 0; otherwise `reduce_scatter__mpich`: pairwise (more than 524,288 elements in all) or recursive doubling | the reduce and the scatter above; pairwise: `sendrecv` to r+i from r-i, i = 1..P-1; recursive doubling: [`reduce_scatter_rdb`] |
//! | scan / exscan | `colls::scan` / `exscan` | receives from lower ranks, sends to higher ranks, one wait |
//!
//! Blocking sends and waits follow the MPI protocol ([`super::MpiProtocol`]): under SimGrid's,
//! a blocking send of 64 KiB or more (a bcast's, a barrier's never) holds the sender until its
//! transfer ends, and so does the wait after non-blocking sends of that size.

use super::{Ctx, Req, Seg, coll_tag};

/// How collectives become point-to-point messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Collectives {
    /// whatif's algorithms (dissemination barrier, binomial bcast and reduce, pairwise
    /// all-to-all, ring allgather).
    #[default]
    Classic,
    /// SimGrid 3.32's default selector, as `smpirun -replay` runs them.
    Smpi,
}

impl std::str::FromStr for Collectives {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "classic" => Ok(Collectives::Classic),
            "smpi" => Ok(Collectives::Smpi),
            o => Err(format!(
                "`{o}` is not a collective set; use classic (whatif's) or smpi (SimGrid 3.32's defaults)"
            )),
        }
    }
}

impl std::fmt::Display for Collectives {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Collectives::Classic => "classic",
            Collectives::Smpi => "smpi",
        })
    }
}

/// One rank's view of a collective call, sizes in bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Coll {
    /// `MPI_Barrier`.
    Barrier,
    /// `MPI_Bcast` of `n` bytes from `root`.
    Bcast { n: u64, root: u32 },
    /// `MPI_Reduce` of `n` bytes to `root`; with `all`, `MPI_Allreduce` (to 0, then bcast).
    Reduce { n: u64, root: u32, all: bool },
    /// `MPI_Alltoall(v)`: `sizes[dst]` bytes to every other rank (`v`: the v variant);
    /// `block`: one destination's block in the receive type (Bruck's packing unit).
    Alltoall {
        sizes: Vec<u64>,
        block: u64,
        v: bool,
    },
    /// `MPI_Gather(v)`: `n` bytes from this rank to `root`.
    Gather { n: u64, root: u32, v: bool },
    /// `MPI_Scatter(v)`: `sizes[q]` bytes from `root` to rank `q`.
    Scatter { sizes: Vec<u64>, root: u32, v: bool },
    /// `MPI_Allgather(v)`: this rank sends `own` bytes; rank `q`'s block is `sizes[q]` bytes.
    Allgather { sizes: Vec<u64>, own: u64, v: bool },
    /// `MPI_Reduce_scatter`: rank `q` receives `counts[q]` bytes of the reduction, in
    /// elements of `elem` bytes.
    ReduceScatter { counts: Vec<u64>, elem: u64 },
    /// `MPI_Scan` (`ex`: `MPI_Exscan`) of `n` bytes.
    Scan { n: u64, ex: bool },
}

impl Coll {
    /// The TI action name of the call.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Coll::Barrier => "barrier",
            Coll::Bcast { .. } => "bcast",
            Coll::Reduce { all: false, .. } => "reduce",
            Coll::Reduce { all: true, .. } => "allreduce",
            Coll::Alltoall { v: false, .. } => "alltoall",
            Coll::Alltoall { v: true, .. } => "alltoallv",
            Coll::Gather { v: false, .. } => "gather",
            Coll::Gather { v: true, .. } => "gatherv",
            Coll::Scatter { v: false, .. } => "scatter",
            Coll::Scatter { v: true, .. } => "scatterv",
            Coll::Allgather { v: false, .. } => "allgather",
            Coll::Allgather { v: true, .. } => "allgatherv",
            Coll::ReduceScatter { .. } => "reducescatter",
            Coll::Scan { ex: false, .. } => "scan",
            Coll::Scan { ex: true, .. } => "exscan",
        }
    }
    /// Its root (0 when it has none).
    pub(crate) fn root(&self) -> u32 {
        match self {
            Coll::Bcast { root, .. }
            | Coll::Reduce { root, .. }
            | Coll::Gather { root, .. }
            | Coll::Scatter { root, .. } => *root,
            _ => 0,
        }
    }
}

/// Open MPI's all-to-all algorithm for `p` ranks and `total_dsize` bytes per destination
/// (`count * size(send type)`), as SimGrid 3.32's `alltoall__ompi` picks it: 1 basic linear,
/// 2 pairwise, 3 modified Bruck, 4 linear with sync, 5 two-process; SimGrid runs 4 and 5 as
/// basic linear.
pub fn alltoall_ompi_algorithm(p: u32, total_dsize: u64) -> u8 {
    // (upper bound of communicator_size, [(size below which, algorithm)], otherwise).
    type Row = (u32, &'static [(u64, u8)], u8);
    let table: &[Row] = &[
        (
            3,
            &[
                (2, 2),
                (4, 5),
                (16, 2),
                (64, 5),
                (256, 2),
                (4096, 5),
                (32768, 2),
                (262144, 4),
                (1048576, 5),
            ],
            2,
        ),
        (
            8,
            &[(8192, 4), (16384, 1), (65536, 4), (524288, 1), (1048576, 2)],
            1,
        ),
        (16, &[(262144, 4)], 1),
        (
            32,
            &[
                (4, 4),
                (512, 3),
                (8192, 4),
                (32768, 1),
                (262144, 4),
                (524288, 1),
            ],
            4,
        ),
        (64, &[(512, 3), (524288, 1)], 4),
        (128, &[(1024, 3), (2048, 1), (4096, 4), (262144, 1)], 2),
        (256, &[(1024, 3), (2048, 4), (262144, 1)], 2),
        (512, &[(1024, 3), (8192, 4), (32768, 1)], 2),
        (
            1024,
            &[(512, 3), (8192, 4), (16384, 1), (131072, 4), (262144, 1)],
            2,
        ),
        (
            2048,
            &[(512, 3), (1024, 4), (2048, 1), (16384, 4), (262144, 1)],
            4,
        ),
        (4096, &[(1024, 3), (4096, 4), (8192, 1), (131072, 4)], 1),
        (
            u32::MAX,
            &[(2048, 3), (8192, 4), (16384, 1), (32768, 4), (65536, 1)],
            4,
        ),
    ];
    // Open MPI's first branch is `communicator_size == 2`; the table's first row is
    // `< 3`, which only differs for one rank (where no message is sent either way).
    for &(below, steps, otherwise) in table {
        if p < below {
            return steps
                .iter()
                .find(|&&(lim, _)| total_dsize < lim)
                .map_or(otherwise, |&(_, a)| a);
        }
    }
    unreachable!("the last row covers every size")
}

/// Expands the `c`-th collective call of this rank into messages and waits on `p` ranks; the
/// segments after its waits are named `name`. Fails where SimGrid 3.32 itself fails (or an
/// algorithm is not implemented), saying why.
pub(crate) fn expand(
    cx: &mut Ctx,
    s: &mut Seg,
    coll: &Coll,
    c: u64,
    p: u32,
    name: &str,
) -> Result<(), String> {
    let mut step = 0u64;
    let mut tag = || {
        step += 1;
        coll_tag(c, step - 1)
    };
    match cx.collectives {
        Collectives::Classic => classic(cx, s, coll, p, name, &mut tag),
        Collectives::Smpi => smpi(cx, s, coll, p, name, &mut tag),
    }
}

/// Posts receives from `srcs`, in order.
fn irecvs(cx: &mut Ctx, s: &Seg, srcs: impl Iterator<Item = u32>, tag: i64) -> Vec<Req> {
    srcs.map(|q| cx.irecv(s, q, tag)).collect()
}

/// Every rank but `root` sends `n` bytes to it (non-blocking, then a wait); the root posts a
/// receive from each (rank order) and waits for all (`ireduce`, `igather`).
fn to_root(cx: &mut Ctx, s: &mut Seg, p: u32, root: u32, n: u64, tag: i64, name: &str) {
    if s.rank == root {
        let reqs = irecvs(cx, s, (0..p).filter(|&q| q != root), tag);
        cx.wait(s, &reqs, name);
    } else {
        let q = cx.isend(s, root, tag, n);
        cx.wait(s, &[q], name);
    }
}

/// The root sends `size(q)` bytes to every other rank (rank order, non-blocking, then a
/// wait); the others receive (`iscatter(v)`).
fn from_root(
    cx: &mut Ctx,
    s: &mut Seg,
    p: u32,
    root: u32,
    size: impl Fn(u32) -> u64,
    tag: i64,
    name: &str,
) {
    if s.rank == root {
        let reqs: Vec<Req> = (0..p)
            .filter(|&q| q != root)
            .map(|q| cx.isend(s, q, tag, size(q)))
            .collect();
        cx.wait(s, &reqs, name);
    } else {
        cx.recv(s, root, tag, name);
    }
}

/// Binomial broadcast (MPICH's, SimGrid's `bcast__binomial_tree`): a blocking receive from
/// the parent, then a blocking send to each child, farthest first.
fn bcast_binomial(cx: &mut Ctx, s: &mut Seg, p: u32, root: u32, n: u64, tag: i64, name: &str) {
    let r = s.rank;
    let vr = (r + p - root) % p;
    let mut mask = 1u32;
    while mask < p {
        if vr & mask != 0 {
            cx.recv(s, (r + p - mask) % p, tag, name);
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if vr + mask < p {
            cx.send(s, (r + mask) % p, tag, n, name);
        }
        mask >>= 1;
    }
}

/// SimGrid 3.32's default selector (module docs).
fn smpi(
    cx: &mut Ctx,
    s: &mut Seg,
    coll: &Coll,
    p: u32,
    name: &str,
    tag: &mut dyn FnMut() -> i64,
) -> Result<(), String> {
    let r = s.rank;
    match coll {
        Coll::Barrier => {
            let t = tag();
            if r > 0 {
                cx.send(s, 0, t, 0, name);
                cx.recv(s, 0, t, name);
            } else {
                let reqs = irecvs(cx, s, 1..p, t);
                cx.wait(s, &reqs, name);
                let reqs: Vec<Req> = (1..p).map(|q| cx.isend(s, q, t, 0)).collect();
                cx.wait(s, &reqs, name);
            }
        }
        Coll::Bcast { n, root } => bcast_binomial(cx, s, p, *root, *n, tag(), name),
        Coll::Reduce { n, root, all } => {
            let root = if *all { 0 } else { *root };
            to_root(cx, s, p, root, *n, tag(), name);
            if *all {
                bcast_binomial(cx, s, p, 0, *n, tag(), name);
            }
        }
        Coll::Alltoall {
            sizes,
            block,
            v: false,
        } => {
            let t = tag();
            match alltoall_ompi_algorithm(p, sizes.first().copied().unwrap_or(0)) {
                2 => {
                    if !p.is_power_of_two() {
                        return Err(format!(
                            "SimGrid 3.32 picks its pairwise alltoall for {p} ranks and {} B per rank, and that algorithm aborts unless the number of ranks is a power of two",
                            sizes.first().copied().unwrap_or(0)
                        ));
                    }
                    for i in 1..p {
                        let q = r ^ i;
                        cx.sendrecv(s, q, t, sizes[q as usize], q, t, name);
                    }
                }
                3 => {
                    let mut pof2 = 1u32;
                    while pof2 < p {
                        let blocks = (1..p).filter(|b| b & pof2 != 0).count() as u64;
                        let (dst, src) = ((r + pof2) % p, (r + p - pof2) % p);
                        cx.sendrecv(s, dst, t, blocks * block, src, t, name);
                        pof2 = pof2.saturating_mul(2);
                    }
                }
                _ => {
                    // Basic linear: receives from r+1, r+2, ..., then sends to r-1, r-2, ...
                    let mut reqs = irecvs(cx, s, (1..p).map(|k| (r + k) % p), t);
                    for k in 1..p {
                        let q = (r + p - k) % p;
                        reqs.push(cx.isend(s, q, t, sizes[q as usize]));
                    }
                    cx.wait(s, &reqs, name);
                }
            }
        }
        Coll::Alltoall { sizes, v: true, .. } => {
            let t = tag();
            let mut reqs = irecvs(cx, s, (0..p).filter(|&q| q != r), t);
            for q in (0..p).filter(|&q| q != r) {
                reqs.push(cx.isend(s, q, t, sizes[q as usize]));
            }
            cx.wait(s, &reqs, name);
        }
        Coll::Gather { n, root, .. } => to_root(cx, s, p, *root, *n, tag(), name),
        Coll::Scatter { sizes, root, .. } => {
            from_root(cx, s, p, *root, |q| sizes[q as usize], tag(), name)
        }
        Coll::Allgather { own, .. } => {
            let t = tag();
            let mut reqs = Vec::with_capacity(2 * p as usize);
            for q in (0..p).filter(|&q| q != r) {
                reqs.push(cx.isend(s, q, t, *own));
                reqs.push(cx.irecv(s, q, t));
            }
            cx.wait(s, &reqs, name);
        }
        Coll::ReduceScatter { counts, elem } => {
            let total: u64 = counts.iter().sum();
            if counts.iter().all(|&k| k == counts[0]) {
                to_root(cx, s, p, 0, total, tag(), name);
                from_root(cx, s, p, 0, |q| counts[q as usize], tag(), name);
            } else if total / (*elem).max(1) > 524_288 {
                // reduce_scatter__mpich_pair: step i sends dst's part to r + i.
                let t = tag();
                for i in 1..p {
                    let (dst, src) = ((r + i) % p, (r + p - i) % p);
                    cx.sendrecv(s, dst, t, counts[dst as usize], src, t, name);
                }
            } else {
                reduce_scatter_rdb(cx, s, p, counts, tag(), name);
            }
        }
        Coll::Scan { n, .. } => {
            let t = tag();
            let mut reqs = irecvs(cx, s, 0..r, t);
            for q in r + 1..p {
                reqs.push(cx.isend(s, q, t, *n));
            }
            cx.wait(s, &reqs, name);
        }
    }
    Ok(())
}

/// MPICH's recursive-doubling reduce-scatter (`reduce_scatter__mpich_rdb`, which SimGrid
/// 3.32 runs for unequal counts up to 524,288 elements): at the step of bit `mask`, a
/// `sendrecv` with `r ^ mask` of everything outside the two trees' blocks; with a number of
/// ranks that is not a power of two, the ranks whose partner is missing get the data from
/// their subtree in a recursive halving.
fn reduce_scatter_rdb(cx: &mut Ctx, s: &mut Seg, p: u32, counts: &[u64], t: i64, name: &str) {
    let r = s.rank as i64;
    let pi = p as i64;
    // Bytes of the blocks outside `[root, root + mask)`.
    let outside = |root: i64, mask: i64| -> u64 {
        let before: u64 = counts[..root.clamp(0, pi) as usize].iter().sum();
        let after: u64 = counts[(root + mask).clamp(0, pi) as usize..].iter().sum();
        before + after
    };
    let (mut mask, mut i) = (1i64, 0u32);
    while mask < pi {
        let dst = r ^ mask;
        let dst_root = (dst >> i) << i;
        let my_root = (r >> i) << i;
        let (send, recv) = (outside(my_root, mask), outside(dst_root, mask));
        if dst < pi {
            cx.sendrecv(s, dst as u32, t, send, dst as u32, t, name);
        }
        if dst_root + mask > pi {
            let done = pi - my_root - mask;
            let mut k = 63 - mask.leading_zeros() as i64;
            let mut tmp = mask >> 1;
            while tmp > 0 {
                let d = r ^ tmp;
                let root = (r >> k) << k;
                if d > r && r < root + done && d >= root + done && d < pi {
                    cx.send(s, d as u32, t, recv, name);
                } else if d < r && d < root + done && r >= root + done {
                    cx.recv(s, d as u32, t, name);
                }
                tmp >>= 1;
                k -= 1;
            }
        }
        mask <<= 1;
        i += 1;
    }
}

/// whatif's own algorithms.
fn classic(
    cx: &mut Ctx,
    s: &mut Seg,
    coll: &Coll,
    p: u32,
    name: &str,
    tag: &mut dyn FnMut() -> i64,
) -> Result<(), String> {
    let r = s.rank;
    match coll {
        Coll::Barrier => {
            // Dissemination: round k sends to r + 2^k and waits for r - 2^k.
            let mut k = 1u32;
            while k < p {
                let t = tag();
                cx.isend(s, (r + k) % p, t, 0);
                cx.recv(s, (r + p - k) % p, t, name);
                k = k.saturating_mul(2);
            }
        }
        Coll::Bcast { n, root } => bcast_binomial(cx, s, p, *root, *n, tag(), name),
        Coll::Reduce { n, root, all } => {
            reduce_binomial(cx, s, p, *root, *n, tag(), name);
            if *all {
                bcast_binomial(cx, s, p, 0, *n, tag(), name);
            }
        }
        Coll::Alltoall { sizes, .. } => {
            // Pairwise exchange: step k sends to r + k and receives from r - k.
            for k in 1..p {
                let t = tag();
                let dst = (r + k) % p;
                cx.sendrecv(s, dst, t, sizes[dst as usize], (r + p - k) % p, t, name);
            }
        }
        Coll::Gather { n, root, .. } => to_root(cx, s, p, *root, *n, tag(), name),
        Coll::Scatter { sizes, root, .. } => {
            from_root(cx, s, p, *root, |q| sizes[q as usize], tag(), name)
        }
        Coll::Allgather { sizes, .. } => {
            // Ring: step k forwards block r - k to r + 1.
            for k in 0..p.saturating_sub(1) {
                let t = tag();
                let block = ((r + p - k) % p) as usize;
                cx.sendrecv(s, (r + 1) % p, t, sizes[block], (r + p - 1) % p, t, name);
            }
        }
        Coll::ReduceScatter { counts, .. } => {
            let total: u64 = counts.iter().sum();
            reduce_binomial(cx, s, p, 0, total, tag(), name);
            from_root(cx, s, p, 0, |q| counts[q as usize], tag(), name);
        }
        Coll::Scan { n, .. } => {
            // Linear, as SimGrid's.
            let t = tag();
            let mut reqs = irecvs(cx, s, 0..r, t);
            for q in r + 1..p {
                reqs.push(cx.isend(s, q, t, *n));
            }
            cx.wait(s, &reqs, name);
        }
    }
    Ok(())
}

/// Binomial reduction toward `root`: receive from `vr + 2^k` while bit k is clear, then send
/// to `vr - 2^k`.
fn reduce_binomial(cx: &mut Ctx, s: &mut Seg, p: u32, root: u32, n: u64, tag: i64, name: &str) {
    let vr = (s.rank + p - root) % p;
    let mut mask = 1u32;
    while mask < p {
        if vr & mask == 0 {
            let child = vr | mask;
            if child < p {
                cx.recv(s, (child + root) % p, tag, name);
            }
        } else {
            cx.send(s, (vr - mask + root) % p, tag, n, name);
            break;
        }
        mask <<= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::alltoall_ompi_algorithm as alg;

    #[test]
    fn alltoall_decision_follows_open_mpi_table() {
        // Values read off `alltoall__ompi` in SimGrid 3.32's smpi_openmpi_selector.cpp.
        assert_eq!(alg(2, 1), 2);
        assert_eq!(alg(2, 3), 5);
        assert_eq!(alg(2, 2_000_000), 2);
        assert_eq!(alg(4, 100), 4);
        assert_eq!(alg(4, 10_000), 1);
        assert_eq!(alg(4, 600_000), 2);
        assert_eq!(alg(12, 1000), 4);
        assert_eq!(alg(12, 300_000), 1);
        // 16-31 ranks: a 4-byte alltoall is modified Bruck (the example).
        assert_eq!(alg(16, 4), 3);
        assert_eq!(alg(16, 3), 4);
        assert_eq!(alg(16, 10_000), 1);
        assert_eq!(alg(16, 600_000), 4);
        assert_eq!(alg(32, 4), 3);
        assert_eq!(alg(32, 1000), 1);
        assert_eq!(alg(32, 600_000), 4);
        assert_eq!(alg(64, 1000), 3);
        assert_eq!(alg(64, 1500), 1);
        assert_eq!(alg(64, 3000), 4);
        assert_eq!(alg(64, 300_000), 2);
        assert_eq!(alg(200, 1500), 4);
        assert_eq!(alg(5000, 70_000), 4);
    }
}
