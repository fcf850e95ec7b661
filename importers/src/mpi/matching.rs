//! Which send each receive receives (see the module docs of [`crate::mpi`]).

use super::{ANY_SOURCE, ANY_TAG, Channel, Ctx, NIL};
use crate::ImportError;
use std::collections::HashMap;

/// The most (wildcard receive, candidate channel) comparisons matching may make (a few
/// seconds): a trace beyond it is refused rather than matched slowly.
const MAX_WILDCARD_WORK: u64 = 1 << 32;

/// The outcome of matching.
pub(crate) struct Matching {
    /// Per receive: the send it receives.
    pub(crate) send_of: Vec<u32>,
    /// Per send: its message label. Labels are dense, channel by channel (in the order the
    /// channels were first used), then in the channel's order.
    pub(crate) label: Vec<u64>,
}

/// Text for a tag in messages.
fn tag_text(tag: i64) -> String {
    if tag == ANY_TAG {
        "any tag".into()
    } else if tag >= 0 {
        format!("tag {tag}")
    } else {
        "a collective".into()
    }
}

/// Matches every receive of `cx` to a send; errors name `input` and, for unmatched
/// messages, the first channel in (source, destination, tag) order.
pub(crate) fn match_receives(cx: &Ctx, input: &str) -> Result<Matching, ImportError> {
    let n_chan = cx.channels.len();
    // The sends of each channel, in order: chan_sends[start[c] + k]. `start` is also the
    // label base of each channel.
    let mut by_id: Vec<Channel> = vec![Channel::default(); n_chan];
    for c in cx.channels.values() {
        by_id[c.id as usize] = *c;
    }
    let mut start = vec![0u64; n_chan + 1];
    for c in 0..n_chan {
        start[c + 1] = start[c] + by_id[c].sent as u64;
    }
    let mut chan_sends = vec![NIL; start[n_chan] as usize];
    let mut label = Vec::with_capacity(cx.sends.len());
    for (i, s) in cx.sends.iter().enumerate() {
        let l = start[s.chan as usize] + s.k as u64;
        chan_sends[l as usize] = i as u32;
        label.push(l);
    }
    let mut keys: Vec<((u32, u32, i64), u32)> =
        cx.channels.iter().map(|(k, c)| (*k, c.id)).collect();
    keys.sort_unstable();
    let any_wildcard = cx.wildcard_ranks.iter().any(|&w| w);
    if !any_wildcard {
        // Every send matched by a receive and vice versa (reported in channel order).
        for &((src, dst, tag), id) in &keys {
            let c = by_id[id as usize];
            if c.sent > 0 && c.sent != c.recvd {
                return Err(ImportError::inconsistent(
                    input,
                    format!(
                        "rank {src} sends {} messages to rank {dst} with {}, but rank {dst} receives {}",
                        c.sent,
                        tag_text(tag),
                        c.recvd
                    ),
                ));
            }
        }
        for &((src, dst, tag), id) in &keys {
            let c = by_id[id as usize];
            if c.sent == 0 {
                return Err(ImportError::inconsistent(
                    input,
                    format!(
                        "rank {dst} receives {} messages from rank {src} with {}, but rank {src} sends none",
                        c.recvd,
                        tag_text(tag)
                    ),
                ));
            }
        }
    }
    // Channels into each rank that posts wildcards, by (source, tag).
    let mut into: HashMap<u32, Vec<(u32, i64, u32)>> = HashMap::new();
    if any_wildcard {
        for &((src, dst, tag), id) in &keys {
            if cx.wildcard_ranks[dst as usize] {
                into.entry(dst).or_default().push((src, tag, id));
            }
        }
        // Each wildcard receive looks at every channel into its rank: bound that work.
        let mut wild_per_rank: HashMap<u32, u64> = HashMap::new();
        for r in cx.recvs.iter().filter(|r| r.chan == NIL) {
            *wild_per_rank.entry(r.dst).or_default() += 1;
        }
        let work: u64 = wild_per_rank
            .iter()
            .map(|(d, &w)| w.saturating_mul(into.get(d).map_or(0, |v| v.len() as u64)))
            .fold(0u64, u64::saturating_add);
        if work > MAX_WILDCARD_WORK {
            return Err(ImportError::Unsupported {
                file: input.to_string(),
                what: format!(
                    "matching the receives from any source would compare {work} (receive, channel) pairs, above the {MAX_WILDCARD_WORK} whatif allows"
                ),
            });
        }
    }
    let mut next = vec![0u32; n_chan];
    // Specific receives not yet matched, per channel.
    let mut spec_left: Vec<u32> = by_id.iter().map(|c| c.recvd).collect();
    let mut send_of = Vec::with_capacity(cx.recvs.len());
    let mut posted = vec![0u64; cx.ranks as usize];
    for r in &cx.recvs {
        posted[r.dst as usize] += 1;
        let c = if r.chan != NIL {
            let c = r.chan as usize;
            spec_left[c] -= 1;
            if next[c] >= by_id[c].sent {
                // Only reachable with wildcards (the counts were checked above otherwise).
                return Err(ImportError::inconsistent(
                    input,
                    format!(
                        "rank {} receives more messages from rank {} with {} than rank {} sends ({}), after its receives from any source took some",
                        r.dst,
                        r.src,
                        tag_text(r.tag),
                        r.src,
                        by_id[c].sent
                    ),
                ));
            }
            c
        } else {
            let best = into
                .get(&r.dst)
                .map_or(&[][..], |v| v.as_slice())
                .iter()
                .filter(|&&(src, tag, id)| {
                    let c = id as usize;
                    (r.src == ANY_SOURCE || r.src == src)
                        && (if r.tag == ANY_TAG {
                            tag >= 0
                        } else {
                            r.tag == tag
                        })
                        && next[c] + spec_left[c] < by_id[c].sent
                })
                .min_by_key(|&&(src, tag, id)| {
                    let head = chan_sends[(start[id as usize] + next[id as usize] as u64) as usize];
                    (cx.sends[head as usize].work_ps, src, tag)
                });
            let Some(&(_, _, id)) = best else {
                let from = if r.src == ANY_SOURCE {
                    "any source".to_string()
                } else {
                    format!("rank {}", r.src)
                };
                return Err(ImportError::inconsistent(
                    input,
                    format!(
                        "rank {}'s receive #{} (from {from}, {}) matches no message: every message to rank {} it could take is taken",
                        r.dst,
                        posted[r.dst as usize],
                        tag_text(r.tag),
                        r.dst
                    ),
                ));
            };
            id as usize
        };
        send_of.push(chan_sends[(start[c] + next[c] as u64) as usize]);
        next[c] += 1;
    }
    if any_wildcard {
        for &((src, dst, tag), id) in &keys {
            let c = id as usize;
            if next[c] < by_id[c].sent {
                return Err(ImportError::inconsistent(
                    input,
                    format!(
                        "rank {src} sends {} messages to rank {dst} with {}, but rank {dst} receives {}",
                        by_id[c].sent,
                        tag_text(tag),
                        next[c]
                    ),
                ));
            }
        }
    }
    Ok(Matching { send_of, label })
}
