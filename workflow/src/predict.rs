//! Scaling prediction (`whatif predict`): a program emulated and replayed at a few small PE
//! counts, Extra-P's normal form fitted to them, the target scales predicted with a 95% band,
//! and checked by emulating there too; a target outside the band is explained by the MK
//! phases that grew most.

use crate::error::{Ctx, Result, bail};
use crate::{files, limits, memory};
use analysis::fmt_ps;
use analysis::phases::{Kind, Phases};
use emulator::{EmulateConfig, Timing};
use models::pmnf::{self, Model, Point};
use network_models::NetSpec;
use replay::ReplayConfig;

/// What to predict.
#[derive(Clone, Debug)]
pub struct PredictSpec {
    /// The built-in program (as `whatif emulate`).
    pub program: String,
    /// Its parameters (`--set key=value`).
    pub sets: Vec<(String, String)>,
    /// The network model.
    pub net: NetSpec,
    /// PE counts of the small runs (at least 3 distinct).
    pub small: Vec<u32>,
    /// PE counts to predict.
    pub at: Vec<u32>,
    /// `makespan` or `iteration` (the mean iteration time).
    pub metric: String,
    /// Only the model's values at the targets (no emulation there).
    pub no_simulate: bool,
    /// Memory limit [default: 3/4 of this computer's memory].
    pub max_memory: Option<u64>,
    /// No progress on stderr.
    pub quiet: bool,
}

/// A prediction: the model fitted to the small runs and one row per PE count.
#[derive(Debug)]
pub struct Prediction {
    /// The network model.
    pub net: NetSpec,
    /// The fitted model.
    pub model: Model,
    /// The small runs, then the targets.
    pub rows: Vec<Row>,
}

/// One emulated and replayed run.
#[derive(Debug)]
struct RunOut {
    pes: u32,
    objects: usize,
    busy_pes: usize,
    seconds: f64,
    phases: Phases,
}

/// One PE count's line of a prediction.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    /// PEs.
    pub pes: u32,
    /// `small` (fitted) or `target` (predicted).
    pub role: &'static str,
    /// The emulated and replayed time (s), if run.
    pub simulated_s: Option<f64>,
    /// The model's value (s).
    pub analytic_s: Option<f64>,
    /// The 95% prediction band's low end (s), at a target.
    pub band_low_s: Option<f64>,
    /// Its high end (s).
    pub band_high_s: Option<f64>,
    /// Whether the simulated value leaves the band.
    pub outside_band: Option<bool>,
    /// Why, when it does: the phases that grew most, with their causes.
    pub why: Vec<String>,
}

fn run_at(a: &PredictSpec, net: &NetSpec, pes: u32) -> Result<RunOut> {
    let t0 = std::time::Instant::now();
    let cfg = EmulateConfig {
        pes,
        timing: Timing::Model,
        net_spec: net.to_string(),
        generator: format!("whatif predict {} at P = {pes}", a.program),
        max_memory_bytes: a.max_memory.unwrap_or_else(limits::default_memory_limit),
        ..Default::default()
    };
    let mut model = net.build();
    let e = scenarios::programs::emulate(&a.program, &a.sets, &cfg, model.as_mut(), &mut |_| {})
        .ctx(|| format!("emulating {} on {pes} PEs", a.program))?;
    let trace = e.trace;
    let rcfg = ReplayConfig {
        timeline: true,
        ..Default::default()
    };
    let mut model = net.build();
    // The replay holds a state per PE (the emulation only per PE with objects): checked
    // against the limit before it is allocated.
    let f = replay::footprint::Footprint::of(&trace, model.as_ref(), &rcfg)?;
    let est = replay::footprint::Estimate::new()
        .keep("the emulated trace", trace.heap_bytes())
        .replay_stage("the replay", &f, vec![]);
    memory::settle(
        &est,
        Some(a.max_memory.unwrap_or_else(limits::default_memory_limit)),
        true,
    )
    .ctx(|| format!("replaying {} on {pes} PEs", a.program))?;
    let report = replay::replay(&trace, model.as_mut(), &rcfg)
        .ctx(|| format!("replay of {} on {pes} PEs", a.program))?;
    let ps = if a.metric == "iteration" {
        report.mean_iteration_ps(|_| true).map(|(v, _)| v).ctx(|| {
            format!(
                "{} has no iteration markers: use --metric makespan",
                a.program
            )
        })?
    } else {
        report.makespan.as_ps()
    };
    let phases = analysis::phases::phases(&trace, &report, net)
        .ctx(|| format!("phases of {} on {pes} PEs", a.program))?;
    if !a.quiet {
        eprintln!(
            "  P = {pes}: {} ({} blocks, {:.2} s)",
            fmt_ps(ps),
            trace.num_blocks(),
            t0.elapsed().as_secs_f64()
        );
    }
    Ok(RunOut {
        pes,
        objects: trace.objects.len(),
        busy_pes: report.pe_blocks.iter().filter(|&&b| b > 0).count(),
        seconds: ps as f64 * 1e-12,
        phases,
    })
}

/// Emulates and replays `a.program` at the small PE counts, fits the scaling model to them and
/// predicts the targets (emulated and replayed there too, unless `no_simulate`), explaining a
/// target that leaves the model's band.
pub fn predict(a: &PredictSpec) -> Result<Prediction> {
    let mut small = a.small.clone();
    small.sort_unstable();
    small.dedup();
    if small.len() < 3 {
        bail!(
            "--small needs at least 3 distinct PE counts (got {}): a two-coefficient model \
             with a band needs 3 points; Extra-P recommends 5",
            small.len()
        );
    }
    if let Some(&p) = small.iter().chain(&a.at).find(|&&p| p == 0) {
        bail!("PE count {p} is not at least 1");
    }
    for &p in small.iter().chain(&a.at) {
        limits::check_emulated_pes(p, a.max_memory, "--max-memory")
            .ctx(|| format!("PE count {p}"))?;
    }
    let net = a.net.clone();
    if !a.quiet {
        eprintln!("small runs of {} on {net}:", a.program);
    }
    let mut runs = Vec::new();
    for &p in &small {
        runs.push(run_at(a, &net, p)?);
    }
    let points: Vec<Point> = runs
        .iter()
        .map(|r| Point {
            x: r.pes as f64,
            values: vec![r.seconds],
        })
        .collect();
    let model = pmnf::fit("P", &points, &pmnf::scaling_terms()).ctx(|| "fitting the small runs")?;
    let mut rows: Vec<Row> = runs
        .iter()
        .map(|r| Row {
            pes: r.pes,
            role: "small",
            simulated_s: Some(r.seconds),
            analytic_s: Some(model.eval(r.pes as f64)),
            band_low_s: None,
            band_high_s: None,
            outside_band: None,
            why: Vec::new(),
        })
        .collect();
    if !a.no_simulate && !a.quiet {
        eprintln!("target runs:");
    }
    let last_small = runs.last().expect("3 small runs");
    for &p in &a.at {
        let y = model.eval(p as f64);
        let (lo, hi) = model.band(p as f64);
        let mut row = Row {
            pes: p,
            role: "target",
            simulated_s: None,
            analytic_s: Some(y),
            band_low_s: lo.is_finite().then_some(lo),
            band_high_s: hi.is_finite().then_some(hi),
            outside_band: None,
            why: Vec::new(),
        };
        if !a.no_simulate {
            let r = run_at(a, &net, p)?;
            let outside = !(lo..=hi).contains(&r.seconds);
            row.simulated_s = Some(r.seconds);
            row.outside_band = Some(outside);
            if outside {
                row.why = explain(&model, last_small, &r);
            }
        }
        rows.push(row);
    }
    Ok(Prediction { net, model, rows })
}

/// Why the target's simulation leaves the fit's band: the phases whose time grew most from
/// the largest small run to the target, with their causes.
fn explain(model: &Model, small: &RunOut, target: &RunOut) -> Vec<String> {
    let mut out = Vec::new();
    let fit_growth = model.eval(target.pes as f64) / model.eval(small.pes as f64);
    let sim_growth = target.seconds / small.seconds;
    out.push(format!(
        "from P = {} to {}: the fit grows {:.3}x, the simulation {:.3}x",
        small.pes, target.pes, fit_growth, sim_growth
    ));
    if target.busy_pes < target.pes as usize {
        out.push(format!(
            "only {} of {} PEs run anything: the program has {} objects at this size, and a \
             PE count beyond the objects cannot divide the work further (give the program a \
             larger problem or finer decomposition with --set)",
            target.busy_pes, target.pes, target.objects
        ));
    }
    let total = |ph: &analysis::phases::Phase| -> f64 {
        ph.instances
            .iter()
            .map(|i| i.simulated_ps as f64)
            .sum::<f64>()
            * 1e-12
    };
    let mut grew: Vec<(f64, String)> = Vec::new();
    for t in &target.phases.phases {
        let Some(s) = small.phases.phases.iter().find(|p| p.name == t.name) else {
            grew.push((
                total(t),
                format!(
                    "phase {} appears at P = {} ({} total)",
                    t.name,
                    target.pes,
                    fmt_ps((total(t) * 1e12) as u64)
                ),
            ));
            continue;
        };
        let (ts, ss) = (total(t), total(s));
        let delta = ts - ss;
        let mut causes = Vec::new();
        let w = t.why();
        if t.kind == Kind::Pipeline && t.depth > s.depth {
            causes.push(format!(
                "pipeline fill: depth {} -> {}, (D-1)(tau + s + r + W) = {} at the target",
                s.depth,
                t.depth,
                fmt_ps((t.depth as u64 - 1).saturating_mul(t.tau_ps + t.s_ps + t.r_ps + t.w_ps))
            ));
        }
        if w.skew_ps > s.why().skew_ps {
            causes.push(format!("skew {}", fmt_ps(w.skew_ps)));
        }
        if w.excess_wire_ps > s.why().excess_wire_ps {
            causes.push(format!(
                "contention: messages up to {} over their time alone",
                fmt_ps(w.excess_wire_ps)
            ));
        }
        if w.receiver_busy_ps > s.why().receiver_busy_ps {
            causes.push(format!(
                "busy receivers: up to {}",
                fmt_ps(w.receiver_busy_ps)
            ));
        }
        if t.tau_ps > s.tau_ps {
            causes.push(format!(
                "tau {} -> {} (longer routes or larger messages)",
                fmt_ps(s.tau_ps),
                fmt_ps(t.tau_ps)
            ));
        }
        let what = if causes.is_empty() {
            String::new()
        } else {
            format!(": {}", causes.join("; "))
        };
        grew.push((
            delta.abs(),
            format!(
                "phase {} ({}): {} -> {} in all{what}",
                t.name,
                t.kind.name(),
                fmt_ps((ss * 1e12) as u64),
                fmt_ps((ts * 1e12) as u64)
            ),
        ));
    }
    grew.sort_by(|a, b| b.0.total_cmp(&a.0));
    out.extend(grew.into_iter().take(3).map(|g| g.1));
    let (sp, tp) = (&small.phases, &target.phases);
    out.push(format!(
        "MK's T_s + T_p: {} + {} at P = {}, {} + {} at P = {} (work outside phases vs phases)",
        fmt_ps(sp.t_s_ps),
        fmt_ps(sp.t_p_ps),
        small.pes,
        fmt_ps(tp.t_s_ps),
        fmt_ps(tp.t_p_ps),
        target.pes
    ));
    out
}

/// Writes one CSV row per PE count (small and target).
pub fn write_csv(path: &std::path::Path, rows: &[Row]) -> Result<()> {
    let mut w = files::csv_file(path)?;
    w.write_record([
        "pes",
        "run",
        "simulated_s",
        "analytic_s",
        "band_low_s",
        "band_high_s",
        "outside_band",
    ])?;
    let f = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:e}"));
    for r in rows {
        w.write_record([
            r.pes.to_string(),
            r.role.to_string(),
            f(r.simulated_s),
            f(r.analytic_s),
            f(r.band_low_s),
            f(r.band_high_s),
            r.outside_band.map_or(String::new(), |b| b.to_string()),
        ])?;
    }
    Ok(files::commit_csv(w)?)
}
