//! Unit tests of the runtime: reductions, at_sync, collection indexing, errors.

use crate::*;
use network_models::NetworkModel;
use sim_core::SimDuration;

#[derive(Debug)]
enum M {
    Go,
    Sum(f64),
}
impl Message for M {
    fn entry(&self) -> usize {
        match self {
            M::Go => 0,
            M::Sum(_) => 1,
        }
    }
}

/// `n` objects; each contributes its index + 1 (only the first `contributors` do); the sum
/// goes to element 0.
struct Red {
    n: u32,
    contributors: u32,
}
#[derive(Debug)]
struct O {
    result: std::sync::Arc<std::sync::Mutex<Option<f64>>>,
}
impl Chare for O {
    type Msg = M;
    fn receive(&mut self, m: M, ctx: &mut Ctx<'_, M>) {
        match m {
            M::Go => {
                let i = ctx.coll().position(ctx.me()).unwrap();
                ctx.work(SimDuration::from_ns(10));
                ctx.contribute(
                    (i + 1) as f64,
                    ReduceOp::Sum,
                    8,
                    Callback {
                        target: Target::Object(ctx.coll().nth(0)),
                        bytes: 8,
                        make: M::Sum,
                    },
                );
            }
            M::Sum(v) => *self.result.lock().unwrap() = Some(v),
        }
    }
}
impl Program for Red {
    type Msg = M;
    type Obj = O;
    fn name(&self) -> String {
        "red".into()
    }
    fn entries(&self) -> &'static [&'static str] {
        &["go", "sum"]
    }
    fn build(&self, b: &mut Builder<O, M>) -> Result<(), EmuError> {
        let c = b.collection("o", [self.n, 1, 1])?;
        let r = std::sync::Arc::new(std::sync::Mutex::new(None));
        RESULT.with(|x| *x.borrow_mut() = Some(r.clone()));
        b.fill(c, |_| O { result: r.clone() });
        for i in 0..self.contributors {
            b.start(c.nth(i), M::Go);
        }
        Ok(())
    }
}

thread_local! {
    static RESULT: std::cell::RefCell<Option<std::sync::Arc<std::sync::Mutex<Option<f64>>>>> =
        const { std::cell::RefCell::new(None) };
}

fn net() -> Box<dyn NetworkModel> {
    "latency:lat=1us"
        .parse::<network_models::NetSpec>()
        .unwrap()
        .build()
}

#[test]
fn reduction_sums_every_element_through_the_tree() {
    for (n, pes) in [(1, 1), (7, 3), (50, 16), (64, 64)] {
        let cfg = EmulateConfig {
            pes,
            ..Default::default()
        };
        let e = emulate(
            &Red { n, contributors: n },
            &cfg,
            net().as_mut(),
            &mut |_| {},
        )
        .unwrap();
        let got = RESULT.with(|x| *x.borrow().as_ref().unwrap().lock().unwrap());
        assert_eq!(got, Some((n * (n + 1) / 2) as f64), "n={n} pes={pes}");
        // One message per non-root element, one completion block per element, one callback.
        let t = &e.trace;
        let count = |name: &str| {
            let id = t.entries.iter().position(|x| x.name == name).unwrap() as u32;
            t.blocks().iter().filter(|b| b.entry.0 == id).count() as u32
        };
        assert_eq!(count("reduction"), n - 1);
        assert_eq!(count("reduction_complete"), n);
        assert_eq!(count("sum"), 1);
        // Completion blocks depend on every contributing block of their element.
        let rc = t
            .entries
            .iter()
            .position(|x| x.name == "reduction_complete")
            .unwrap() as u32;
        for id in t.block_ids().filter(|id| t.block(*id).entry.0 == rc) {
            assert!(!t.deps(id).is_empty());
            assert!(
                t.deps(id)
                    .iter()
                    .all(|d| t.block(*d).object == t.block(id).object)
            );
        }
        // The tree crosses PEs only between PE leaders: at most pes - 1 remote messages.
        assert!(
            e.remote_messages <= (pes as u64 - 1) + 1,
            "{}",
            e.remote_messages
        );
    }
}

#[test]
fn missing_contributions_are_reported_not_hung() {
    let cfg = EmulateConfig {
        pes: 2,
        ..Default::default()
    };
    let e = emulate(
        &Red {
            n: 4,
            contributors: 3,
        },
        &cfg,
        net().as_mut(),
        &mut |_| {},
    )
    .unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, EmuError::Incomplete(_)), "{msg}");
    assert!(msg.contains("o[") && msg.contains("contributions"), "{msg}");
}

#[test]
fn collection_indexing_is_row_major() {
    let c = Coll {
        id: 0,
        base: 10,
        dims: [2, 3, 4],
    };
    assert_eq!(c.len(), 24);
    assert_eq!(c.at([1, 2, 3]), ObjRef(10 + 23));
    assert_eq!(c.index_of(23), [1, 2, 3]);
    assert_eq!(c.get([0, 3, 0]), None);
    assert_eq!(c.get([-1, 0, 0]), None);
    assert_eq!(c.position(ObjRef(9)), None);
    for i in 0..24 {
        let idx = c.index_of(i);
        assert_eq!(c.at(idx), c.nth(i));
    }
}

#[test]
fn initial_maps() {
    assert_eq!(
        (0..6)
            .map(|i| InitialMap::Block.pe(i, 6, 4))
            .collect::<Vec<_>>(),
        [0, 0, 1, 2, 2, 3]
    );
    assert_eq!(
        (0..6)
            .map(|i| InitialMap::RoundRobin.pe(i, 6, 4))
            .collect::<Vec<_>>(),
        [0, 1, 2, 3, 0, 1]
    );
}
