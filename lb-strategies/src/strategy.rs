//! Strategies by name: `name[:key=value,...]`, e.g. `greedy-refine:tolerance=1.05`.

use crate::refine::RefineVariant;
use crate::{LbDatabase, LbError, PeTopology};
use sim_core::Ratio;
use std::fmt;
use std::str::FromStr;

/// Every strategy with its parameters, for `--help` and error messages.
pub const STRATEGIES_HELP: &str = "\
Load-balancing strategies (--strategies NAME[:key=value,...],...):
  dummy                        no moves (the control)
  rotate                       every object to the next PE (p+1 mod P): moves everything
  random[:seed=N]              each object to a uniformly random PE (ChaCha8 stream `lb/random`
                               of the seed; default: the run's --seed)
  greedy                       LPT: heaviest object first onto the least-loaded PE (background
                               load and PE speed counted); ignores where objects were
  greedy-refine[:tolerance=R]  cap = greedy's max load x R (default 1.03); heaviest first, an
                               object stays if its PE stays under the cap, else it goes to the
                               least-loaded PE (the cap rises if it must): few moves
  refine[:variant=a|b,upper=R] from the current map, the heaviest PE gives its heaviest object
                               that fits to a light PE until none is above a threshold; the
                               threshold is bisected between greedy's max and R x it (default
                               1.5). b (default): to the least-loaded PE; a: to the first
                               light PE that fits. Aliases: refine-a, refine-b
  rec-bipart[:tolerance=R]     communication-aware: recursive bipartition of the object graph
                               and the PE set (BFS growth, then boundary moves that cut bytes
                               within R-1 extra imbalance; default 1.05)
  topo[:tolerance=R]           topology-aware: rec-bipart groups placed on the network's
                               topology to minimise hop-bytes (needs a model with topo=...)";

/// The known names, in help order.
pub const KNOWN: &[&str] = &[
    "dummy",
    "rotate",
    "random",
    "greedy",
    "greedy-refine",
    "refine",
    "refine-a",
    "refine-b",
    "rec-bipart",
    "topo",
];

/// An algorithm with its parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// No moves.
    Dummy,
    /// `p + 1 mod P`.
    Rotate,
    /// Uniform random PE; `None`: the caller's root seed.
    Random {
        /// Root seed of the stream.
        seed: Option<u64>,
    },
    /// LPT.
    Greedy,
    /// GreedyRefine.
    GreedyRefine {
        /// Cap factor over greedy's max load.
        tolerance: Ratio,
    },
    /// RefineA / RefineB.
    Refine {
        /// Which light PE receives.
        variant: RefineVariant,
        /// Upper end of the threshold search, as a factor over greedy's max load.
        upper: Ratio,
    },
    /// Recursive bipartition.
    RecBipart {
        /// Allowed imbalance factor for boundary moves.
        tolerance: Ratio,
    },
    /// Topology-aware placement of rec-bipart groups.
    Topo {
        /// As for rec-bipart.
        tolerance: Ratio,
    },
}

/// A strategy as the user named it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Strategy {
    spec: String,
    /// The algorithm.
    pub kind: Kind,
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.spec)
    }
}

fn ratio(spec: &str, key: &str, v: &str) -> Result<Ratio, LbError> {
    let r = Ratio::parse(v).map_err(|e| LbError::BadParam {
        spec: spec.into(),
        msg: format!("{key}: {e}"),
    })?;
    if r.num() < r.den() {
        return Err(LbError::BadParam {
            spec: spec.into(),
            msg: format!("{key}={v} must be at least 1"),
        });
    }
    Ok(r)
}

impl FromStr for Strategy {
    type Err = LbError;
    fn from_str(s: &str) -> Result<Self, LbError> {
        let spec = s.trim();
        let (name, params) = spec.split_once(':').unwrap_or((spec, ""));
        let mut kv: Vec<(&str, &str)> = Vec::new();
        for p in params.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((k, v)) = p.split_once('=') else {
                return Err(LbError::BadParam {
                    spec: spec.into(),
                    msg: format!("`{p}` is not key=value"),
                });
            };
            kv.push((k.trim(), v.trim()));
        }
        let allowed: &[&str] = match name {
            "random" => &["seed"],
            "greedy-refine" | "rec-bipart" | "topo" => &["tolerance"],
            "refine" => &["variant", "upper"],
            "refine-a" | "refine-b" => &["upper"],
            _ => &[],
        };
        if let Some((k, _)) = kv.iter().find(|(k, _)| !allowed.contains(k)) {
            if !KNOWN.contains(&name) {
                return Err(unknown(name));
            }
            return Err(LbError::BadParam {
                spec: spec.into(),
                msg: if allowed.is_empty() {
                    format!("unknown parameter `{k}`; {name} takes none")
                } else {
                    format!(
                        "unknown parameter `{k}`; {name} takes {}",
                        allowed.join(", ")
                    )
                },
            });
        }
        let get = |k: &str| kv.iter().rev().find(|(key, _)| *key == k).map(|(_, v)| *v);
        let tol = |default: &str| ratio(spec, "tolerance", get("tolerance").unwrap_or(default));
        let upper = || ratio(spec, "upper", get("upper").unwrap_or("1.5"));
        let kind = match name {
            "dummy" => Kind::Dummy,
            "rotate" => Kind::Rotate,
            "random" => Kind::Random {
                seed: get("seed")
                    .map(|v| {
                        v.parse().map_err(|_| LbError::BadParam {
                            spec: spec.into(),
                            msg: format!("seed `{v}` is not a non-negative integer"),
                        })
                    })
                    .transpose()?,
            },
            "greedy" => Kind::Greedy,
            "greedy-refine" => Kind::GreedyRefine {
                tolerance: tol("1.03")?,
            },
            "refine" | "refine-a" | "refine-b" => Kind::Refine {
                variant: match (name, get("variant")) {
                    ("refine-a", _) | (_, Some("a" | "A")) => RefineVariant::A,
                    ("refine-b", _) | (_, None | Some("b" | "B")) => RefineVariant::B,
                    (_, Some(v)) => {
                        return Err(LbError::BadParam {
                            spec: spec.into(),
                            msg: format!("variant `{v}`: expected a or b"),
                        });
                    }
                },
                upper: upper()?,
            },
            "rec-bipart" => Kind::RecBipart {
                tolerance: tol("1.05")?,
            },
            "topo" => Kind::Topo {
                tolerance: tol("1.05")?,
            },
            other => return Err(unknown(other)),
        };
        Ok(Strategy {
            spec: spec.into(),
            kind,
        })
    }
}

fn unknown(name: &str) -> LbError {
    LbError::UnknownStrategy {
        name: name.into(),
        known: KNOWN.join(", "),
    }
}

/// Parses a comma-separated list where parameters also use commas:
/// `dummy,greedy-refine:tolerance=1.05,seed=3,refine` splits before each known name.
pub fn parse_list(s: &str) -> Result<Vec<Strategy>, LbError> {
    let mut items: Vec<String> = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let is_param = part.contains('=') && !part.contains(':');
        match items.last_mut() {
            Some(last) if is_param => {
                last.push(',');
                last.push_str(part);
            }
            _ => items.push(part.to_string()),
        }
    }
    if items.is_empty() {
        return Err(LbError::Config(
            "no strategy given; e.g. --strategies dummy,greedy,refine".into(),
        ));
    }
    items.iter().map(|i| i.parse()).collect()
}

impl Strategy {
    /// Whether it needs the network topology.
    pub fn needs_topology(&self) -> bool {
        matches!(self.kind, Kind::Topo { .. })
    }

    /// The new PE of every object. A pure function of its inputs: `seed` is the root seed
    /// `random` uses when it was given none.
    pub fn map(
        &self,
        db: &LbDatabase,
        topo: Option<&PeTopology>,
        seed: u64,
    ) -> Result<Vec<u32>, LbError> {
        if db.pes.is_empty() {
            return Err(LbError::Config("the machine needs at least one PE".into()));
        }
        Ok(match &self.kind {
            Kind::Dummy => db.current_map(),
            Kind::Rotate => crate::greedy::rotate(db),
            Kind::Random { seed: s } => crate::greedy::random(db, s.unwrap_or(seed)),
            Kind::Greedy => crate::greedy::greedy(db),
            Kind::GreedyRefine { tolerance } => crate::greedy::greedy_refine(db, *tolerance),
            Kind::Refine { variant, upper } => crate::refine::refine(db, *variant, *upper),
            Kind::RecBipart { tolerance } => crate::partition::rec_bipart(db, *tolerance),
            Kind::Topo { tolerance } => {
                let Some(t) = topo else {
                    return Err(LbError::Config(format!(
                        "strategy `{self}` needs a network model with a topology (hops:topo=... \
                         or contention:topo=...)"
                    )));
                };
                t.check(db.num_pes())?;
                crate::topo::topo(db, t, *tolerance)
            }
        })
    }
}
