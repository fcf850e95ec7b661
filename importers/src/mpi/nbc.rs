//! Non-blocking collectives (`MPI_Ibcast`, `MPI_Iallreduce`, ...) as SimGrid 3.32 runs them
//! (`src/smpi/colls/smpi_nbc_impl.cpp`): every message of the collective is posted at the
//! call, as non-blocking sends and receives started together, and the collective's request
//! completes when all of them have. No message waits for another (a rank forwards nothing),
//! so the rank computes on while they travel; the wait that completes the request waits
//! for them all.
//!
//! | call | rank `r` posts (P ranks) |
//! |---|---|
//! | ibarrier | r > 0: a send of 0 B to 0 and a receive from 0; rank 0: for each other rank, a receive (SimGrid: from any rank; here from that rank, the same times) and a send of 0 B to it |
//! | ibcast | root: a send to every other rank (rank order); others: a receive from the root |
//! | ireduce, igather(v) | others: a send to the root; root: a receive from every other rank (rank order) |
//! | iscatter(v) | root: a send to every other rank (rank order); others: a receive from the root |
//! | iallreduce, iallgather(v) | for every other rank (rank order): a send to it, a receive from it |
//! | ialltoall | receives from r+1, r+2, ... (mod P), then sends to r-1, r-2, ... |
//! | ialltoallv | receives from every other rank, then sends to every other rank (rank order) |
//! | iscan, iexscan | receives from every lower rank, then sends to every higher rank |
//!
//! Each kind has its own tag ([`nbc_tag`]), SimGrid's system tag for it moved into a range
//! no program's tag and no blocking collective's reaches, so messages of successive
//! collectives of a kind match in order on each channel, as in SimGrid.

use super::colls::Coll;
use super::{Ctx, Req, Seg};

/// SimGrid 3.32's tags for the non-blocking versions of the blocking collectives named
/// (`COLL_TAG_*` of `src/smpi/include/private.hpp`, less one for a user's call): what a
/// trace's `wait` and `test` lines name the request by (their source and destination vary
/// by rank). iscan and iexscan share one (`-888 - 1`).
const SIMGRID_NBC_TAGS: [(&str, i64); 14] = [
    ("reduce", -113),
    ("scatter", -224),
    ("scatterv", -335),
    ("gather", -446),
    ("allgather", -557),
    ("allgatherv", -668),
    ("barrier", -779),
    ("alltoallv", -1001),
    ("alltoall", -1113),
    ("gatherv", -2224),
    ("bcast", -3335),
    ("allreduce", -4446),
    ("scan", -889),
    ("exscan", -889),
];

/// SimGrid 3.32's tag for the non-blocking version of blocking collective `name`
/// ([`SIMGRID_NBC_TAGS`]); `None` for a name without a non-blocking version here.
pub(crate) fn simgrid_nbc_tag(name: &str) -> Option<i64> {
    SIMGRID_NBC_TAGS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, t)| t)
}

/// Whether `tag` (as a trace's `wait` writes it) is one of [`SIMGRID_NBC_TAGS`].
pub(crate) fn is_simgrid_nbc_tag(tag: i64) -> bool {
    SIMGRID_NBC_TAGS.iter().any(|&(_, t)| t == tag)
}

/// The tag whatif's messages of a non-blocking collective carry: SimGrid's, moved below
/// every blocking collective's tag (those count down from -1 by collective and step).
fn nbc_tag(simgrid_tag: i64) -> i64 {
    -(1i64 << 62) + simgrid_tag
}

/// Posts the messages rank `s.rank` of `p` takes part in for the non-blocking version of
/// `coll` (see the [module docs](self)); returns the requests its wait completes.
pub(crate) fn post(cx: &mut Ctx, s: &mut Seg, coll: &Coll, p: u32) -> Vec<Req> {
    let r = s.rank;
    let tag = nbc_tag(simgrid_nbc_tag(coll.name()).expect("a collective with a non-blocking form"));
    let others = move || (0..p).filter(move |&q| q != r);
    let mut reqs = Vec::new();
    match coll {
        Coll::Barrier => {
            if r > 0 {
                reqs.push(cx.isend(s, 0, tag, 0));
                reqs.push(cx.irecv(s, 0, tag));
            } else {
                // SimGrid posts these receives from any rank; each other rank sends one
                // empty message per barrier and the wait takes them all, so naming the
                // senders in turn changes no time, and keeps barrier k's receives on
                // barrier k's messages (a match by estimated arrival could take a later
                // barrier's, which cannot be sent before this one ends: a deadlock).
                for q in 1..p {
                    reqs.push(cx.irecv(s, q, tag));
                    reqs.push(cx.isend(s, q, tag, 0));
                }
            }
        }
        Coll::Bcast { n, root } => {
            if r == *root {
                for q in others() {
                    reqs.push(cx.isend(s, q, tag, *n));
                }
            } else {
                reqs.push(cx.irecv(s, *root, tag));
            }
        }
        Coll::Scatter { sizes, root, .. } => {
            if r == *root {
                for q in others() {
                    reqs.push(cx.isend(s, q, tag, sizes[q as usize]));
                }
            } else {
                reqs.push(cx.irecv(s, *root, tag));
            }
        }
        Coll::Reduce {
            n,
            root,
            all: false,
        }
        | Coll::Gather { n, root, .. } => {
            if r == *root {
                for q in others() {
                    reqs.push(cx.irecv(s, q, tag));
                }
            } else {
                reqs.push(cx.isend(s, *root, tag, *n));
            }
        }
        Coll::Reduce { n, all: true, .. } => {
            for q in others() {
                reqs.push(cx.isend(s, q, tag, *n));
                reqs.push(cx.irecv(s, q, tag));
            }
        }
        Coll::Allgather { own, .. } => {
            for q in others() {
                reqs.push(cx.isend(s, q, tag, *own));
                reqs.push(cx.irecv(s, q, tag));
            }
        }
        Coll::Alltoall {
            sizes, v: false, ..
        } => {
            for k in 1..p {
                reqs.push(cx.irecv(s, (r + k) % p, tag));
            }
            for k in 1..p {
                let q = (r + p - k) % p;
                reqs.push(cx.isend(s, q, tag, sizes[q as usize]));
            }
        }
        Coll::Alltoall { sizes, v: true, .. } => {
            for q in others() {
                reqs.push(cx.irecv(s, q, tag));
            }
            for q in others() {
                reqs.push(cx.isend(s, q, tag, sizes[q as usize]));
            }
        }
        Coll::Scan { n, .. } => {
            for q in 0..r {
                reqs.push(cx.irecv(s, q, tag));
            }
            for q in r + 1..p {
                reqs.push(cx.isend(s, q, tag, *n));
            }
        }
        Coll::ReduceScatter { .. } => {
            unreachable!("no non-blocking reduce-scatter: simgrid_nbc_tag refuses it")
        }
    }
    reqs
}
