//! Small, dependency-free SVG charts for the HTML report: line charts (linear or log x, one
//! line per series, optionally categorical x), bar charts, stacked area profiles, timelines and
//! heat grids. Output is deterministic (fixed decimals, no ids from randomness).

use std::fmt::Write;

/// Colours for series and entries (colour-blind-friendly Tableau 10).
pub const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

const W: f64 = 720.0;
const H: f64 = 360.0;
const ML: f64 = 70.0;
const MR: f64 = 170.0;
const MT: f64 = 30.0;
const MB: f64 = 50.0;

/// Escapes text for HTML and SVG.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A number with about 3 significant digits for axis labels.
pub fn num(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if !(1e-3..1e6).contains(&a) {
        return format!("{v:.2e}");
    }
    let d = (2 - a.log10().floor() as i32).max(0) as usize;
    format!("{v:.d$}")
}

/// A round tick value as written on an axis: `200`, `0.5`, `1` (no trailing zeros).
pub fn tick(v: f64) -> String {
    let a = v.abs();
    if a != 0.0 && !(1e-3..1e6).contains(&a) {
        return num(v);
    }
    let t = format!("{v:.6}");
    let t = t.trim_end_matches('0').trim_end_matches('.');
    if t == "-0" { "0".into() } else { t.to_string() }
}

/// One line of a line chart.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend label.
    pub name: String,
    /// Points (x, y); x is an index for categorical charts.
    pub points: Vec<(f64, f64)>,
}

/// A line chart. `log_x` plots x on a log scale; `categories` replaces x tick labels.
pub struct LineChart<'a> {
    /// Title above the plot.
    pub title: &'a str,
    /// X axis label.
    pub x_label: &'a str,
    /// Y axis label.
    pub y_label: &'a str,
    /// Log-scale x.
    pub log_x: bool,
    /// Category names for x = 0, 1, 2, ...
    pub categories: Option<Vec<String>>,
    /// Formats an x tick value.
    pub x_fmt: &'a dyn Fn(f64) -> String,
    /// The lines.
    pub series: Vec<Series>,
}

/// About `n` tick values between `lo` and `hi` at a round step (1, 2 or 5 times a power of
/// ten), so labels read 0, 200, 400 rather than 0, 119.6, 239.2.
fn ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    nice_ticks(lo, hi, n, false)
}

/// [`ticks`]; `integer`: a step of at least 1 (counts).
fn nice_ticks(lo: f64, hi: f64, n: usize, integer: bool) -> Vec<f64> {
    if hi <= lo || hi.is_nan() || !lo.is_finite() || !hi.is_finite() {
        return vec![lo];
    }
    let raw = (hi - lo) / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let mut step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    if integer {
        step = step.max(1.0).round();
    }
    let first = (lo / step).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

impl LineChart<'_> {
    /// The SVG element.
    pub fn svg(&self) -> String {
        let pts = self.series.iter().flat_map(|s| s.points.iter());
        let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0.0f64);
        for &(x, y) in pts {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y1 = y1.max(y);
        }
        if x0 > x1 {
            (x0, x1) = (0.0, 1.0);
        }
        let tx = |x: f64| -> f64 {
            let (a, b, v) = if self.log_x && x0 > 0.0 {
                (x0.ln(), x1.ln(), x.max(x0).ln())
            } else {
                (x0, x1, x)
            };
            let f = if b > a { (v - a) / (b - a) } else { 0.5 };
            ML + f * (W - ML - MR)
        };
        let y1 = if y1 > 0.0 { y1 * 1.05 } else { 1.0 };
        let ty = |y: f64| MT + (1.0 - y / y1) * (H - MT - MB);
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img"><title>{}</title>"#,
            esc(self.title)
        );
        let _ = write!(
            s,
            r#"<text x="{ML}" y="18" font-size="14" font-weight="bold">{}</text>"#,
            esc(self.title)
        );
        // Axes and grid.
        for t in ticks(0.0, y1, 5) {
            let y = ty(t);
            let _ = write!(
                s,
                r##"<line x1="{ML}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
                W - MR,
                ML - 6.0,
                y + 4.0,
                tick(t)
            );
        }
        let xt: Vec<f64> = match &self.categories {
            Some(c) => (0..c.len()).map(|i| i as f64).collect(),
            None if self.log_x && x0 > 0.0 => {
                let (a, b) = (x0.log10().floor() as i32, x1.log10().ceil() as i32);
                (a..=b)
                    .map(|e| 10f64.powi(e))
                    .filter(|v| *v >= x0 * 0.999 && *v <= x1 * 1.001)
                    .collect()
            }
            None => ticks(x0, x1, 5),
        };
        for (i, t) in xt.iter().enumerate() {
            let x = tx(*t);
            let label = match &self.categories {
                Some(c) => c[i].clone(),
                None => (self.x_fmt)(*t),
            };
            let _ = write!(
                s,
                r##"<line x1="{x:.1}" y1="{MT}" x2="{x:.1}" y2="{:.1}" stroke="#eee"/><text x="{x:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"##,
                H - MB,
                H - MB + 16.0,
                esc(&label)
            );
        }
        let _ = write!(
            s,
            r##"<rect x="{ML}" y="{MT}" width="{:.1}" height="{:.1}" fill="none" stroke="#888"/>"##,
            W - ML - MR,
            H - MT - MB
        );
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text>"#,
            (ML + W - MR) / 2.0,
            H - 10.0,
            esc(self.x_label)
        );
        let _ = write!(
            s,
            r#"<text x="14" y="{:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 14 {:.1})">{}</text>"#,
            (MT + H - MB) / 2.0,
            (MT + H - MB) / 2.0,
            esc(self.y_label)
        );
        for (k, se) in self.series.iter().enumerate() {
            let c = PALETTE[k % PALETTE.len()];
            let path: Vec<String> = se
                .points
                .iter()
                .map(|&(x, y)| format!("{:.1},{:.1}", tx(x), ty(y)))
                .collect();
            let _ = write!(
                s,
                r#"<polyline class="series" fill="none" stroke="{c}" stroke-width="2" points="{}"/>"#,
                path.join(" ")
            );
            for &(x, y) in &se.points {
                let _ = write!(
                    s,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{c}"/>"#,
                    tx(x),
                    ty(y)
                );
            }
            let ly = MT + 14.0 + 18.0 * k as f64;
            let _ = write!(
                s,
                r#"<rect x="{:.1}" y="{:.1}" width="12" height="12" fill="{c}"/><text x="{:.1}" y="{:.1}" font-size="12">{}</text>"#,
                W - MR + 12.0,
                ly - 10.0,
                W - MR + 30.0,
                ly,
                esc(&se.name)
            );
        }
        s.push_str("</svg>");
        s
    }
}

/// A bar chart of labelled values.
pub fn bars(title: &str, y_label: &str, items: &[(String, f64)]) -> String {
    let n = items.len().max(1) as f64;
    let y1 = items.iter().map(|i| i.1).fold(0.0f64, f64::max).max(1e-30) * 1.05;
    let pw = W - ML - 20.0;
    let bw = pw / n;
    let ty = |y: f64| MT + (1.0 - y / y1) * (H - MT - MB);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img"><title>{}</title><text x="{ML}" y="18" font-size="14" font-weight="bold">{}</text>"#,
        esc(title),
        esc(title)
    );
    let counts = items.iter().all(|(_, v)| v.fract() == 0.0);
    for t in nice_ticks(0.0, y1, 5, counts) {
        let _ = write!(
            s,
            r##"<line x1="{ML}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
            ty(t),
            W - 20.0,
            ty(t),
            ML - 6.0,
            ty(t) + 4.0,
            tick(t)
        );
    }
    let every = (items.len() / 24).max(1);
    for (i, (label, v)) in items.iter().enumerate() {
        let x = ML + bw * i as f64;
        let _ = write!(
            s,
            r#"<rect class="bar" x="{:.2}" y="{:.1}" width="{:.2}" height="{:.1}" fill="{}"><title>{}: {}</title></rect>"#,
            x + bw * 0.1,
            ty(*v),
            (bw * 0.8).max(0.5),
            (H - MB - ty(*v)).max(0.0),
            PALETTE[0],
            esc(label),
            num(*v)
        );
        if i % every == 0 {
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="middle">{}</text>"#,
                x + bw / 2.0,
                H - MB + 14.0,
                esc(label)
            );
        }
    }
    let _ = write!(
        s,
        r#"<text x="14" y="{:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 14 {:.1})">{}</text></svg>"#,
        (MT + H - MB) / 2.0,
        (MT + H - MB) / 2.0,
        esc(y_label)
    );
    s
}

/// Stacked areas: `layers[k][b]` is layer k's value in bin b (bins of equal width from 0 to
/// `span`). Used for the time profile (utilisation by entry method over time).
pub fn stacked(
    title: &str,
    x_label: &str,
    span: f64,
    names: &[String],
    layers: &[Vec<f64>],
) -> String {
    let bins = layers.first().map_or(0, Vec::len).max(1);
    let pw = W - ML - MR;
    let ty = |y: f64| MT + (1.0 - y) * (H - MT - MB);
    let tx = |b: f64| ML + pw * b / bins as f64;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img"><title>{}</title><text x="{ML}" y="18" font-size="14" font-weight="bold">{}</text>"#,
        esc(title),
        esc(title)
    );
    for t in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let _ = write!(
            s,
            r##"<line x1="{ML}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{:.0}%</text>"##,
            ty(t),
            W - MR,
            ty(t),
            ML - 6.0,
            ty(t) + 4.0,
            t * 100.0
        );
    }
    let mut base = vec![0.0f64; bins];
    for (k, layer) in layers.iter().enumerate() {
        let top: Vec<f64> = base.iter().zip(layer).map(|(b, v)| b + v).collect();
        let mut pts: Vec<String> = Vec::with_capacity(4 * bins + 2);
        for (b, &t) in top.iter().enumerate() {
            pts.push(format!("{:.1},{:.1}", tx(b as f64), ty(t)));
            pts.push(format!("{:.1},{:.1}", tx(b as f64 + 1.0), ty(t)));
        }
        for b in (0..bins).rev() {
            pts.push(format!("{:.1},{:.1}", tx(b as f64 + 1.0), ty(base[b])));
            pts.push(format!("{:.1},{:.1}", tx(b as f64), ty(base[b])));
        }
        let c = PALETTE[k % PALETTE.len()];
        let _ = write!(
            s,
            r#"<polygon class="layer" fill="{c}" stroke="none" points="{}"><title>{}</title></polygon>"#,
            pts.join(" "),
            esc(&names[k])
        );
        let ly = MT + 14.0 + 18.0 * k as f64;
        let _ = write!(
            s,
            r#"<rect x="{:.1}" y="{:.1}" width="12" height="12" fill="{c}"/><text x="{:.1}" y="{:.1}" font-size="12">{}</text>"#,
            W - MR + 12.0,
            ly - 10.0,
            W - MR + 30.0,
            ly,
            esc(&names[k])
        );
        base = top;
    }
    for t in ticks(0.0, span, 5) {
        let x = ML + pw * if span > 0.0 { t / span } else { 0.0 };
        let _ = write!(
            s,
            r#"<text x="{x:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"#,
            H - MB + 16.0,
            tick(t)
        );
    }
    let _ = write!(
        s,
        r##"<rect x="{ML}" y="{MT}" width="{pw:.1}" height="{:.1}" fill="none" stroke="#888"/><text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text></svg>"##,
        H - MT - MB,
        ML + pw / 2.0,
        H - 10.0,
        esc(x_label)
    );
    s
}

/// A timeline: one row per PE, one rectangle per block `(pe, start, end, colour index, label)`
/// between `t0` and `t1`.
pub fn timeline(
    title: &str,
    pes: u32,
    t0: f64,
    t1: f64,
    blocks: &[(u32, f64, f64, usize, String)],
) -> String {
    let rows = pes.max(1) as f64;
    let h = (MT + MB + rows * 12.0).clamp(160.0, 900.0);
    let rh = (h - MT - MB) / rows;
    let pw = W - ML - 20.0;
    let tx = |t: f64| ML + pw * if t1 > t0 { (t - t0) / (t1 - t0) } else { 0.0 };
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {W} {h:.0}" width="{W}" height="{h:.0}" role="img"><title>{}</title><text x="{ML}" y="18" font-size="14" font-weight="bold">{}</text>"#,
        esc(title),
        esc(title)
    );
    let every = ((pes as usize) / 16).max(1);
    for p in (0..pes).step_by(every) {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">PE {p}</text>"#,
            ML - 6.0,
            MT + rh * (p as f64 + 0.75)
        );
    }
    for (pe, a, b, c, label) in blocks {
        let (x0, x1) = (tx(a.max(t0)), tx(b.min(t1)));
        let _ = write!(
            s,
            r#"<rect class="block" x="{x0:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="{}"><title>{}</title></rect>"#,
            MT + rh * *pe as f64 + rh * 0.1,
            (x1 - x0).max(0.3),
            rh * 0.8,
            PALETTE[c % PALETTE.len()],
            esc(label)
        );
    }
    for t in ticks(t0, t1, 5) {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"#,
            tx(t),
            h - MB + 16.0,
            tick(t)
        );
    }
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">time (us)</text></svg>"#,
        ML + pw / 2.0,
        h - 10.0
    );
    s
}

/// A heat grid: `cells[r][c]` in 0..=1 (utilisation), labelled by `label(r, c)`.
pub fn grid(
    title: &str,
    cells: &[Vec<Option<f64>>],
    label: &dyn Fn(usize, usize) -> String,
) -> String {
    let rows = cells.len().max(1);
    let cols = cells.iter().map(Vec::len).max().unwrap_or(1).max(1);
    let cell = (560.0 / cols as f64)
        .min(400.0 / rows as f64)
        .clamp(4.0, 48.0);
    let w = ML + cell * cols as f64 + 40.0;
    let h = MT + cell * rows as f64 + 40.0;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {w:.0} {h:.0}" width="{w:.0}" height="{h:.0}" role="img"><title>{}</title><text x="{ML}" y="18" font-size="14" font-weight="bold">{}</text>"#,
        esc(title),
        esc(title)
    );
    for (r, row) in cells.iter().enumerate() {
        for (c, v) in row.iter().enumerate() {
            let fill = match v {
                Some(u) => {
                    // White (idle) to dark blue (busy).
                    let u = u.clamp(0.0, 1.0);
                    let g = (235.0 - 180.0 * u) as u8;
                    format!("rgb({},{},{})", (240.0 - 200.0 * u) as u8, g, 250)
                }
                None => "#f4f4f4".into(),
            };
            let _ = write!(
                s,
                r##"<rect class="node" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{fill}" stroke="#fff"><title>{}</title></rect>"##,
                ML + cell * c as f64,
                MT + cell * r as f64,
                cell,
                cell,
                esc(&format!(
                    "{}: {}",
                    label(r, c),
                    v.map_or("-".into(), |u| format!("{:.1}% busy", u * 100.0))
                ))
            );
        }
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(v: &[f64]) -> Vec<String> {
        v.iter().map(|t| tick(*t)).collect()
    }

    #[test]
    fn ticks_are_round() {
        assert_eq!(labels(&ticks(0.0, 628.0, 5)), ["0", "200", "400", "600"]);
        assert_eq!(labels(&ticks(0.0, 1.05, 5)), ["0", "0.5", "1"]);
        assert_eq!(labels(&ticks(0.0, 98.0, 5)), ["0", "20", "40", "60", "80"]);
        assert_eq!(labels(&ticks(0.0, 0.63, 5)), ["0", "0.2", "0.4", "0.6"]);
        // Counts never get fractional ticks.
        assert_eq!(
            labels(&nice_ticks(0.0, 3.15, 5, true)),
            ["0", "1", "2", "3"]
        );
        assert_eq!(ticks(5.0, 5.0, 5), [5.0]);
    }
}
