//! The time a message takes alone on an idle network: what critical-path analysis splits a
//! message's time into (latency, serialisation, and the queueing that remains).

use crate::{Driving, MessageInfo, NetIo, NetSpec};
use sim_core::{SimDuration, SimTime};

/// Model events a lone message may take before it is reported stuck (a packet model needs
/// a few events per packet and hop).
const MAX_EVENTS: u64 = 50_000_000;

/// Wire time of `msg` when it is the only message on a fresh instance of `spec`'s model,
/// departing at time 0: the model's uncontended cost. `None` if an event-driven model never
/// delivers it within a bounded number of events (a model bug, reported rather than hung).
///
/// With `msg.bytes = 0` this is the model's latency for the pair; the difference to the full
/// size is its serialisation time.
pub fn lone_wire_time(spec: &NetSpec, msg: &MessageInfo) -> Option<SimDuration> {
    let mut m = spec.build();
    if m.driving() != Driving::EventDriven {
        return Some(m.wire_time(msg, SimTime::ZERO));
    }
    let mut io = NetIo::default();
    m.start_message(SimTime::ZERO, msg, 0, &mut io);
    // Pending model events, handled in (time, order pushed) order.
    let mut pending: std::collections::BinaryHeap<std::cmp::Reverse<(SimTime, u64, u32)>> =
        std::collections::BinaryHeap::new();
    let mut seq = 0u64;
    for _ in 0..MAX_EVENTS {
        if let Some(d) = io.deliveries.first() {
            return Some(d.wire);
        }
        for (at, e) in io.events.drain(..) {
            pending.push(std::cmp::Reverse((at, seq, e)));
            seq += 1;
        }
        let std::cmp::Reverse((at, _, e)) = pending.pop()?;
        m.handle_event(at, e, &mut io);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(bytes: u64) -> MessageInfo {
        MessageInfo {
            src_pe: 0,
            dst_pe: 5,
            bytes,
        }
    }

    #[test]
    fn lone_messages_match_the_closed_forms() {
        let us = SimDuration::from_us;
        let ab: NetSpec = "alphabeta:lat=2us,bw=1GB/s".parse().unwrap();
        assert_eq!(lone_wire_time(&ab, &msg(0)), Some(us(2)));
        assert_eq!(lone_wire_time(&ab, &msg(1000)), Some(us(3)));
        // Contention on a 4x4 torus, 0 -> 5 is 2 hops: lat + 2 hop + S/bw (one packet, vct).
        let c: NetSpec = "contention:topo=torus:4x4,lat=1us,hop=100ns,bw=1GB/s,packet=4096"
            .parse()
            .unwrap();
        assert_eq!(
            lone_wire_time(&c, &msg(1000)),
            Some(us(2).saturating_add(SimDuration::from_ns(200)))
        );
        let f: NetSpec = "flow:topo=torus:4x4,lat=1us,hop=100ns,bw=1GB/s"
            .parse()
            .unwrap();
        assert_eq!(
            lone_wire_time(&f, &msg(1000)),
            Some(us(2).saturating_add(SimDuration::from_ns(200)))
        );
    }
}
