//! Calibration (`whatif calibrate`): set cost or machine parameters of a study so that its predictions
//! match measurements, and write the calibrated study back (MK calibrated ATM2D on one P = 4
//! run). One parameter must make the predicted metric non-decreasing (a cost, a latency, a
//! per-cell time): one measurement is matched by bisection to the picosecond (durations) or
//! to 1e-9 relative (numbers); several by minimising the sum of squared relative errors with
//! a golden-section search over the bracket. Several parameters (at least as many
//! measurements) minimise the same sum by coordinate descent: golden-section searches of each
//! in 0 .. 4 x its study value in turn, until a round moves none by 1e-6 relative.

use crate::error::{Ctx, Result, WorkflowError, bail};
use crate::files;
use crate::sweep::{load_workload, run_point};
use scenarios::study::{Study, canonical_key, set_path};
use sim_core::SimDuration;
use sim_core::units::parse_duration;
use std::path::{Path, PathBuf};

/// What to calibrate, against what.
#[derive(Clone, Debug)]
pub struct CalibrateSpec {
    /// The study file.
    pub study: PathBuf,
    /// The dotted keys of the parameters to set (`params.cell_cost`, `net.lat`).
    pub param: Vec<String>,
    /// The measurements: `KEY=VALUE[,...]:TIME`.
    pub measured: Vec<String>,
    /// The predicted column to match: `makespan_s` or `mean_iteration_s`.
    pub metric: String,
    /// Lower end of the search (one parameter).
    pub lo: Option<String>,
    /// Upper end of the search (one parameter).
    pub hi: Option<String>,
    /// Where the calibrated study goes.
    pub out: PathBuf,
}

/// A calibration's result: `key = value` per parameter, and one line per measurement with its
/// prediction and error.
#[derive(Clone, Debug)]
pub struct Calibration {
    /// The parameters as set.
    pub set: Vec<String>,
    /// `measured S -> predicted P s (E%)` per measurement.
    pub fits: Vec<String>,
}

/// A measurement: settings and the measured time in seconds.
#[derive(Debug)]
struct Measured {
    settings: Vec<(String, toml::Value)>,
    seconds: f64,
    text: String,
}

/// A TOML value from command-line text: integer, float, boolean, else string.
fn value_of(v: &str) -> toml::Value {
    if let Ok(i) = v.parse::<i64>() {
        toml::Value::Integer(i)
    } else if let Ok(f) = v.parse::<f64>() {
        toml::Value::Float(f)
    } else if let Ok(b) = v.parse::<bool>() {
        toml::Value::Boolean(b)
    } else {
        toml::Value::String(v.to_string())
    }
}

fn parse_measured(m: &str, note: &mut dyn FnMut(&str, &str)) -> Result<Measured> {
    let (settings, time) = m.rsplit_once(':').ctx(|| {
        format!("--measured `{m}`: expected KEY=VALUE[,...]:TIME, e.g. params.lambda=128:0.817s")
    })?;
    let seconds = if time.chars().any(|c| c.is_ascii_alphabetic()) {
        let d = parse_duration(time)
            .map_err(|e| WorkflowError::Invalid(format!("--measured `{m}`: {e}")))?;
        d.as_ps() as f64 / 1e12
    } else {
        time.parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s > 0.0)
            .ctx(|| {
                format!("--measured `{m}`: `{time}` is not a duration with a unit, e.g. 0.817s or 82.94ms")
            })
            .inspect(|_| {
                // A bare number was read as seconds: the old spelling (every other duration
                // needs a unit).
                note(&format!(":{time}"), &format!(":{time}s"))
            })?
    };
    let settings = settings
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|kv| {
            let (k, v) = kv
                .split_once('=')
                .ctx(|| format!("--measured `{m}`: `{kv}` is not KEY=VALUE"))?;
            Ok((canonical_key(k.trim()), value_of(v.trim())))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Measured {
        settings,
        seconds,
        text: m.to_string(),
    })
}

/// The parameter's kind, from its value in the study.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Duration,
    Number,
}

fn get_path<'a>(t: &'a toml::Table, key: &str) -> Option<&'a toml::Value> {
    let mut cur = t;
    let parts: Vec<&str> = key.split('.').collect();
    for (i, p) in parts.iter().enumerate() {
        let v = cur.get(*p)?;
        if i + 1 == parts.len() {
            return Some(v);
        }
        cur = v.as_table()?;
    }
    None
}

#[derive(Debug)]
struct Problem {
    base: toml::Table,
    /// The parameters being set, with their kinds.
    params: Vec<(String, Kind)>,
    metric: String,
    origin: String,
    dir: PathBuf,
}

fn value(kind: Kind, x: f64) -> toml::Value {
    match kind {
        Kind::Duration => toml::Value::String(format!("{}ps", x.round() as u64)),
        Kind::Number => toml::Value::Float(x),
    }
}

impl Problem {
    /// The predicted metric (seconds) of measurement `m` with the parameters at `xs`.
    fn predict(&self, xs: &[f64], m: &Measured) -> Result<f64> {
        let mut t = self.base.clone();
        t.remove("sweep");
        t.remove("report");
        for ((key, kind), &x) in self.params.iter().zip(xs) {
            set_path(&mut t, key, value(*kind, x)).map_err(WorkflowError::Invalid)?;
        }
        for (k, v) in &m.settings {
            set_path(&mut t, k, v.clone()).map_err(WorkflowError::Invalid)?;
        }
        let text = toml::to_string(&t).map_err(|e| WorkflowError::Cause(Box::new(e)))?;
        let study = Study::from_text(&text, &self.origin, &self.dir)
            .ctx(|| format!("--measured {}", m.text))?;
        let p = study.point(0)?;
        let trace = load_workload(&study, &p)?;
        let row = run_point(&p, &trace)?;
        row.number(&self.metric).ctx(|| {
            format!(
                "--measured {}: the prediction has no `{}` (makespan_s or mean_iteration_s)",
                m.text, self.metric
            )
        })
    }
}

fn parse_param(kind: Kind, v: &str) -> Result<f64> {
    Ok(match kind {
        Kind::Duration => parse_duration(v)
            .map_err(|e| WorkflowError::Invalid(e.to_string()))?
            .as_ps() as f64,
        Kind::Number => v
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .ctx(|| format!("`{v}` is not a number"))?,
    })
}

fn show(kind: Kind, x: f64) -> String {
    match kind {
        Kind::Duration => SimDuration::from_ps(x.round() as u64).to_string(),
        Kind::Number => format!("{x}"),
    }
}

/// Calibrates the study `a.study` (see the module docs) and writes the calibrated study to
/// `a.out`. `note` gets an old spelling met and its replacement (a bare number of seconds).
pub fn calibrate(a: &CalibrateSpec, note: &mut dyn FnMut(&str, &str)) -> Result<Calibration> {
    if a.out == a.study {
        bail!(
            "--out {} would overwrite the study it reads",
            a.out.display()
        );
    }
    let text = files::read_text(&a.study, files::SMALL_TEXT_BYTES)?;
    // Validate the study as it is.
    Study::from_file(&a.study)?;
    let base: toml::Table =
        toml::from_str(&text).ctx(|| format!("{}: not TOML", a.study.display()))?;
    let mut params: Vec<(String, Kind, f64)> = Vec::new();
    for p in &a.param {
        let key = canonical_key(p);
        if params.iter().any(|q| q.0 == key) {
            bail!("--param {key} is given twice");
        }
        let current = get_path(&base, &key).ctx(|| {
            format!(
                "{}: no `{key}` to calibrate (give it a value in the study first)",
                a.study.display()
            )
        })?;
        let kind = match current {
            toml::Value::String(s) if parse_duration(s).is_ok() => Kind::Duration,
            toml::Value::Integer(_) | toml::Value::Float(_) => Kind::Number,
            other => bail!("`{key}` = {other}: only durations and numbers can be calibrated"),
        };
        let start = match current {
            toml::Value::String(s) => parse_param(kind, s)?,
            toml::Value::Integer(i) => *i as f64,
            toml::Value::Float(f) => *f,
            _ => unreachable!("checked above"),
        };
        params.push((key, kind, start));
    }
    let measured: Vec<Measured> = a
        .measured
        .iter()
        .map(|m| parse_measured(m, note))
        .collect::<Result<_>>()?;
    if params.len() > 1 && (a.lo.is_some() || a.hi.is_some()) {
        bail!(
            "--lo and --hi bound a single --param; with several, each is searched in 0 .. 4 x its study value"
        );
    }
    if measured.len() < params.len() {
        bail!(
            "{} parameters need at least {} measurements (got {}): fewer cannot fix them all",
            params.len(),
            params.len(),
            measured.len()
        );
    }
    let prob = Problem {
        base: base.clone(),
        params: params.iter().map(|p| (p.0.clone(), p.1)).collect(),
        metric: a.metric.clone(),
        origin: a.study.display().to_string(),
        dir: a.study.parent().map(Path::to_path_buf).unwrap_or_default(),
    };
    // Sum of squared relative errors, and the sign of the (mean) error.
    let cost_at = |xs: &[f64]| -> Result<(f64, f64)> {
        let mut sse = 0.0;
        let mut mean = 0.0;
        for m in &measured {
            let e = (prob.predict(xs, m)? - m.seconds) / m.seconds;
            sse += e * e;
            mean += e / measured.len() as f64;
        }
        Ok((sse, mean))
    };
    if params.len() > 1 {
        let xs = descend(&params, &cost_at)?;
        return finish(
            a,
            &prob,
            &measured,
            base,
            &params,
            &xs,
            "coordinate descent",
        );
    }
    let (key, kind, start) = params[0].clone();
    let cost = |x: f64| cost_at(&[x]);
    let mut lo = match &a.lo {
        Some(v) => parse_param(kind, v)?,
        None => 0.0,
    };
    let mut hi = match &a.hi {
        Some(v) => parse_param(kind, v)?,
        None => {
            let mut h = start.max(if kind == Kind::Duration { 1000.0 } else { 1e-9 });
            let mut n = 0;
            while cost(h)?.1 < 0.0 {
                lo = h;
                h *= 2.0;
                n += 1;
                if n > 80 {
                    bail!(
                        "no value of {key} up to {} makes the prediction reach the measurements: does it grow with {key}?",
                        show(kind, h)
                    );
                }
            }
            h
        }
    };
    if cost(lo)?.1 > 0.0 {
        bail!(
            "even {key} = {} predicts more than measured; lower --lo, or choose a parameter the time grows with",
            show(kind, lo)
        );
    }
    let mut evals = 0;
    let tol = |lo: f64, hi: f64| match kind {
        Kind::Duration => hi - lo <= 1.0,
        Kind::Number => hi - lo <= 1e-9 * hi.abs().max(1e-300),
    };
    let x = if measured.len() == 1 {
        // Bisection on the sign of the error.
        while !tol(lo, hi) && evals < 200 {
            let mid = if kind == Kind::Duration {
                ((lo + hi) / 2.0).floor()
            } else {
                (lo + hi) / 2.0
            };
            if cost(mid)?.1 < 0.0 {
                lo = mid
            } else {
                hi = mid
            }
            evals += 1;
        }
        let (el, eh) = (cost(lo)?.0, cost(hi)?.0);
        if el < eh { lo } else { hi }
    } else {
        // Golden section on the sum of squared relative errors.
        let (x, steps) = golden(&|x| Ok(cost(x)?.0), lo, hi, &tol, 200)?;
        evals = steps;
        if kind == Kind::Duration { x.round() } else { x }
    };
    let how = format!("{evals} search steps");
    finish(a, &prob, &measured, base, &params, &[x], &how)
}

/// Golden-section search for the minimum of `f` on `[lo, hi]`, until `done(a, b)` holds for
/// the bracket or after `max_steps`: the bracket's middle and the steps taken.
fn golden(
    f: &dyn Fn(f64) -> Result<f64>,
    lo: f64,
    hi: f64,
    done: &dyn Fn(f64, f64) -> bool,
    max_steps: usize,
) -> Result<(f64, usize)> {
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let (mut a1, mut b1) = (lo, hi);
    let mut c = b1 - g * (b1 - a1);
    let mut d = a1 + g * (b1 - a1);
    let (mut fc, mut fd) = (f(c)?, f(d)?);
    let mut steps = 0;
    while !done(a1, b1) && steps < max_steps {
        if fc < fd {
            b1 = d;
            d = c;
            fd = fc;
            c = b1 - g * (b1 - a1);
            fc = f(c)?;
        } else {
            a1 = c;
            c = d;
            fc = fd;
            d = a1 + g * (b1 - a1);
            fd = f(d)?;
        }
        steps += 1;
    }
    Ok(((a1 + b1) / 2.0, steps))
}

/// The sum of squared relative errors and the mean error at a parameter vector.
type CostFn<'a> = dyn Fn(&[f64]) -> Result<(f64, f64)> + 'a;

/// Least squares over several parameters: cyclic golden-section searches, each parameter in
/// 0 .. 4 x its study value with the others fixed, until a round moves none by more than 1e-6
/// relative (at most 30 rounds).
fn descend(params: &[(String, Kind, f64)], cost: &CostFn<'_>) -> Result<Vec<f64>> {
    let mut xs: Vec<f64> = params.iter().map(|p| p.2).collect();
    for _round in 0..30 {
        let mut moved = 0.0f64;
        for i in 0..xs.len() {
            let kind = params[i].1;
            let span = 4.0
                * params[i]
                    .2
                    .abs()
                    .max(if kind == Kind::Duration { 1000.0 } else { 1e-9 });
            let f = |x: f64, xs: &[f64]| -> Result<f64> {
                let mut v = xs.to_vec();
                v[i] = x;
                Ok(cost(&v)?.0)
            };
            let done = |a1: f64, b1: f64| {
                b1 - a1 <= 1e-9 * b1.abs().max(1e-300) || (kind == Kind::Duration && b1 - a1 <= 1.0)
            };
            let (mut x, _) = golden(&|x| f(x, &xs), 0.0, span, &done, 80)?;
            if kind == Kind::Duration {
                x = x.round();
            }
            moved = moved.max((x - xs[i]).abs() / xs[i].abs().max(1e-300));
            xs[i] = x;
        }
        if moved < 1e-6 {
            break;
        }
    }
    Ok(xs)
}

/// Writes the calibrated study; the parameters set and the fit.
fn finish(
    a: &CalibrateSpec,
    prob: &Problem,
    measured: &[Measured],
    base: toml::Table,
    params: &[(String, Kind, f64)],
    xs: &[f64],
    how: &str,
) -> Result<Calibration> {
    let mut out = base;
    for ((key, kind, _), &x) in params.iter().zip(xs) {
        set_path(&mut out, key, value(*kind, x)).map_err(WorkflowError::Invalid)?;
    }
    // A relative trace path resolves from the study's folder: keep it valid wherever --out is.
    if let Some(toml::Value::String(t)) = get_path(&out, "workload.trace").cloned()
        && Path::new(&t).is_relative()
    {
        let abs = prob.dir.join(&t);
        let abs = abs.canonicalize().unwrap_or(abs);
        set_path(
            &mut out,
            "workload.trace",
            toml::Value::String(abs.display().to_string()),
        )
        .map_err(WorkflowError::Invalid)?;
    }
    let set: Vec<String> = params
        .iter()
        .zip(xs)
        .map(|((key, kind, _), &x)| format!("{key} = {}", show(*kind, x)))
        .collect();
    let flags: Vec<String> = a.param.iter().map(|p| format!("--param {p}")).collect();
    let mut report = format!(
        "# Calibrated by `whatif calibrate {} {}`: {} ({how}).\n",
        a.study.display(),
        flags.join(" "),
        set.join(", ")
    );
    let mut fits = Vec::new();
    for m in measured {
        let p = prob.predict(xs, m)?;
        let line = format!(
            "measured {} -> predicted {p:.6} s ({:+.4}%)",
            m.text,
            100.0 * (p - m.seconds) / m.seconds
        );
        report.push_str(&format!("# {line}\n"));
        fits.push(line);
    }
    let text = format!(
        "{report}{}",
        toml::to_string(&out).map_err(|e| WorkflowError::Cause(Box::new(e)))?
    );
    // The written study must load as it is.
    Study::from_text(&text, &a.out.display().to_string(), &prob.dir)
        .ctx(|| "the calibrated study")?;
    files::write_text(&a.out, &text)?;
    Ok(Calibration { set, fits })
}
