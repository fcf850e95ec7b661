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

/// A large number with a metric suffix and up to 3 significant digits: `6M`, `1.25G`.
fn si(v: f64) -> Option<String> {
    let a = v.abs();
    let (d, unit) = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M")]
        .into_iter()
        .find(|&(d, _)| a >= d)?;
    let x = v / d;
    let p = (2 - x.abs().log10().floor() as i32).clamp(0, 2) as usize;
    let t = format!("{x:.p$}");
    let t = if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.')
    } else {
        &t
    };
    Some(format!("{t}{unit}"))
}

/// A number with about 3 significant digits for axis labels (`6M` for 6,000,000).
pub fn num(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if let Some(t) = si(v).filter(|_| a < 1e18) {
        return t;
    }
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

/// Dash patterns of the lines, in series order (the first solid): coinciding lines stay
/// visible through each other's gaps.
const DASHES: [&str; 6] = ["", "8 4", "2 3", "10 3 2 3", "4 4", "1 3"];

/// A point marker of shape `k` (filled circle, then hollow square, triangle, diamond, cross,
/// plus): hollow markers show the one beneath when points coincide.
fn marker(s: &mut String, k: usize, x: f64, y: f64, c: &str) {
    let _ = match k % 6 {
        0 => write!(s, r#"<circle cx="{x:.1}" cy="{y:.1}" r="2.5" fill="{c}"/>"#),
        1 => write!(
            s,
            r#"<rect x="{:.1}" y="{:.1}" width="7" height="7" fill="none" stroke="{c}" stroke-width="1.2"/>"#,
            x - 3.5,
            y - 3.5
        ),
        2 => write!(
            s,
            r#"<polygon points="{x:.1},{:.1} {:.1},{:.1} {:.1},{:.1}" fill="none" stroke="{c}" stroke-width="1.2"/>"#,
            y - 5.0,
            x + 4.5,
            y + 3.5,
            x - 4.5,
            y + 3.5
        ),
        3 => write!(
            s,
            r#"<polygon points="{x:.1},{:.1} {:.1},{y:.1} {x:.1},{:.1} {:.1},{y:.1}" fill="none" stroke="{c}" stroke-width="1.2"/>"#,
            y - 5.5,
            x + 5.5,
            y + 5.5,
            x - 5.5
        ),
        4 => write!(
            s,
            r#"<polyline points="{:.1},{:.1} {:.1},{:.1} {x:.1},{y:.1} {:.1},{:.1} {:.1},{:.1}" fill="none" stroke="{c}" stroke-width="1.2"/>"#,
            x - 4.0,
            y - 4.0,
            x + 4.0,
            y + 4.0,
            x + 4.0,
            y - 4.0,
            x - 4.0,
            y + 4.0
        ),
        _ => write!(
            s,
            r#"<polyline points="{:.1},{y:.1} {:.1},{y:.1} {x:.1},{y:.1} {x:.1},{:.1} {x:.1},{:.1}" fill="none" stroke="{c}" stroke-width="1.2"/>"#,
            x - 5.0,
            x + 5.0,
            y - 5.0,
            y + 5.0
        ),
    };
}

impl LineChart<'_> {
    /// The x range, the top of the y axis and the right margin (no legend for one series).
    fn frame(&self) -> (f64, f64, f64, f64) {
        let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0.0f64);
        for &(x, y) in self.series.iter().flat_map(|s| s.points.iter()) {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y1 = y1.max(y);
        }
        if x0 > x1 {
            (x0, x1) = (0.0, 1.0);
        }
        let y1 = if y1 > 0.0 { y1 * 1.05 } else { 1.0 };
        // The legend's width: its longest name (12 px text, about 7.4 px a character).
        let longest = self
            .series
            .iter()
            .map(|s| s.name.chars().count().min(36))
            .max()
            .unwrap_or(0);
        let mr = if self.series.len() > 1 {
            (44.0 + 7.4 * longest as f64).clamp(120.0, 320.0)
        } else {
            30.0
        };
        (x0, x1, y1, mr)
    }

    /// Pairs of series drawn on top of each other (at the same x, less than 1.5 px apart)
    /// at half their points or more, as notes: "A and B coincide at 9 of 14 points".
    pub fn coincident(&self) -> Vec<String> {
        let (_, _, y1, _) = self.frame();
        let px = |dy: f64| dy.abs() / y1 * (H - MT - MB);
        let mut notes = Vec::new();
        for (i, a) in self.series.iter().enumerate() {
            for b in &self.series[i + 1..] {
                let shared: Vec<f64> = a
                    .points
                    .iter()
                    .filter_map(|p| b.points.iter().find(|q| q.0 == p.0).map(|q| px(q.1 - p.1)))
                    .collect();
                let close = shared.iter().filter(|d| **d < 1.5).count();
                if close > 0 && 2 * close >= shared.len() {
                    notes.push(if close == shared.len() {
                        format!("{} and {} coincide", a.name, b.name)
                    } else {
                        format!(
                            "{} and {} coincide at {close} of {} points",
                            a.name,
                            b.name,
                            shared.len()
                        )
                    });
                }
            }
        }
        notes
    }

    /// The SVG element.
    pub fn svg(&self) -> String {
        let (x0, x1, y1, mr) = self.frame();
        let tx = |x: f64| -> f64 {
            let (a, b, v) = if self.log_x && x0 > 0.0 {
                (x0.ln(), x1.ln(), x.max(x0).ln())
            } else {
                (x0, x1, x)
            };
            let f = if b > a { (v - a) / (b - a) } else { 0.5 };
            ML + f * (W - ML - mr)
        };
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
                W - mr,
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
            W - ML - mr,
            H - MT - MB
        );
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text>"#,
            (ML + W - mr) / 2.0,
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
            let dash = match DASHES[k % DASHES.len()] {
                "" => String::new(),
                d => format!(r#" stroke-dasharray="{d}""#),
            };
            let path: Vec<String> = se
                .points
                .iter()
                .map(|&(x, y)| format!("{:.1},{:.1}", tx(x), ty(y)))
                .collect();
            let _ = write!(
                s,
                r#"<polyline class="series" fill="none" stroke="{c}" stroke-width="2"{dash} points="{}"><title>{}</title></polyline>"#,
                path.join(" "),
                esc(&se.name)
            );
            for &(x, y) in &se.points {
                marker(&mut s, k, tx(x), ty(y), c);
            }
            // One series needs no legend: the title and the axis say what it is.
            if self.series.len() > 1 {
                let ly = MT + 14.0 + 18.0 * k as f64;
                let lx = W - mr + 8.0;
                let _ = write!(
                    s,
                    r#"<line x1="{lx:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{c}" stroke-width="2"{dash}/>"#,
                    ly - 4.0,
                    lx + 22.0,
                    ly - 4.0
                );
                marker(&mut s, k, lx + 11.0, ly - 4.0, c);
                let _ = write!(
                    s,
                    r#"<text x="{:.1}" y="{ly:.1}" font-size="12">{}</text>"#,
                    lx + 28.0,
                    esc(&truncate(&se.name, 36))
                );
            }
        }
        s.push_str("</svg>");
        s
    }
}

/// Stacked areas: `layers[k][b]` is layer k's value (a fraction, 0..=1 stacked) in bin b
/// (bins of equal width over `span_ps`), drawn in `colours[k]`. The legend is the caller's
/// (an HTML list under the figure, which wraps instead of clipping).
pub fn stacked(
    title: &str,
    span_ps: f64,
    names: &[String],
    colours: &[&str],
    layers: &[Vec<f64>],
) -> String {
    let bins = layers.first().map_or(0, Vec::len).max(1);
    let w = W + 160.0;
    let pw = w - ML - 20.0;
    let ty = |y: f64| MT + (1.0 - y) * (H - MT - MB);
    let tx = |b: f64| ML + pw * b / bins as f64;
    let mut s = String::new();
    open(&mut s, "chart", (w, H), title, ML);
    for t in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let _ = write!(
            s,
            r##"<line x1="{ML}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{:.0}%</text>"##,
            ty(t),
            ML + pw,
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
        let _ = write!(
            s,
            r#"<polygon class="layer" fill="{}" stroke="none" points="{}"><title>{}</title></polygon>"#,
            colours.get(k).copied().unwrap_or(OTHER),
            pts.join(" "),
            esc(names.get(k).map_or("", String::as_str))
        );
        base = top;
    }
    let _ = write!(
        s,
        r##"<rect x="{ML}" y="{MT}" width="{pw:.1}" height="{:.1}" fill="none" stroke="#888"/><text x="14" y="{:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 14 {:.1})">utilisation</text>"##,
        H - MT - MB,
        (MT + H - MB) / 2.0,
        (MT + H - MB) / 2.0,
    );
    time_axis(&mut s, (ML, ML + pw), (0.0, span_ps), H - MB);
    s.push_str("</svg>");
    s
}

/// A heat grid: `cells[r][c]` in 0..=1 (None: no cell), labelled by `label(r, c)` on hover,
/// its value shown by `value(v)`; row and column ticks and axis names so that a cell can be
/// found without hovering, and a colour scale from `scale.0` (0) to `scale.1` (1) under it.
pub struct Grid<'a> {
    /// Title above the plot.
    pub title: &'a str,
    /// The cells, row by row.
    pub cells: &'a [Vec<Option<f64>>],
    /// What a cell is (hover text).
    pub label: &'a dyn Fn(usize, usize) -> String,
    /// A cell's value as text (hover text).
    pub value: &'a dyn Fn(f64) -> String,
    /// Ends of the colour scale.
    pub scale: (&'a str, &'a str),
    /// What the rows are (written down the left side).
    pub rows_name: &'a str,
    /// What the columns are (written under the plot).
    pub cols_name: &'a str,
    /// Row ticks `(row, label)`; thinned so that they do not overlap.
    pub row_ticks: Vec<(usize, String)>,
    /// Column ticks `(column, label)`; thinned so that they do not overlap.
    pub col_ticks: Vec<(usize, String)>,
    /// Bands of columns `(first, count, label)` written under the ticks, with a separator
    /// between bands (the z planes of a 3-D torus drawn side by side).
    pub col_bands: Vec<(usize, usize, String)>,
    /// Width of the plot area at most, px.
    pub width: f64,
}

impl Grid<'_> {
    /// The SVG element.
    pub fn svg(&self) -> String {
        let cells = self.cells;
        let rows = cells.len().max(1);
        let cols = cells.iter().map(Vec::len).max().unwrap_or(1).max(1);
        let cell = (self.width / cols as f64)
            .min(400.0 / rows as f64)
            .clamp(2.0, 48.0);
        let longest_tick = self
            .row_ticks
            .iter()
            .map(|t| text_px(&t.1))
            .fold(0.0, f64::max);
        let ml = 26.0 + longest_tick + 6.0;
        let (pw, ph) = (cell * cols as f64, cell * rows as f64);
        let mt = MT;
        let mut y = mt + ph;
        // Under the plot: ticks, bands, the columns' name, the colour scale.
        let tick_y = y + 12.0;
        if !self.col_ticks.is_empty() {
            y += 14.0;
        }
        let band_y = y + 13.0;
        if !self.col_bands.is_empty() {
            y += 15.0;
        }
        let name_y = y + 15.0;
        let gy = name_y + 10.0;
        let h = gy + 28.0;
        // Wide enough for the title (bold 14 px: about 8.5 px per character), the columns'
        // name and the scale.
        let last_tick = self.col_ticks.last().map_or(0.0, |t| text_px(&t.1) / 2.0);
        let w = (ml + pw + 20.0 + last_tick)
            .max(ml + 180.0)
            .max(ml + text_px(self.cols_name) * 1.15 + 10.0)
            .max(ml.min(ML) + 8.5 * self.title.chars().count() as f64 + 10.0);
        let mut s = String::new();
        open(&mut s, "chart", (w, h), self.title, ml.min(ML));
        for (r, row) in cells.iter().enumerate() {
            for (c, v) in row.iter().enumerate() {
                let Some(v) = v else { continue };
                let stroke = if cell >= 6.0 {
                    r##" stroke="#fff""##
                } else {
                    ""
                };
                let _ = write!(
                    s,
                    r##"<rect class="node" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"{stroke}><title>{}</title></rect>"##,
                    ml + cell * c as f64,
                    mt + cell * r as f64,
                    cell,
                    cell,
                    heat(*v),
                    esc(&format!("{}: {}", (self.label)(r, c), (self.value)(*v)))
                );
            }
        }
        let _ = write!(
            s,
            r##"<rect x="{ml:.1}" y="{mt:.1}" width="{pw:.1}" height="{ph:.1}" fill="none" stroke="#888"/>"##
        );
        // Ticks at a round stride (1, 2, 5, 10, ... cells) that keeps them apart: rows 11 px,
        // columns their widest label.
        let stride = |need_px: f64| -> usize {
            let k = (need_px / cell).ceil().max(1.0) as usize;
            let mut m = 1usize;
            loop {
                for f in [1, 2, 5] {
                    if f * m >= k {
                        return f * m;
                    }
                }
                m *= 10;
            }
        };
        let rs = stride(11.0);
        for (r, t) in self
            .row_ticks
            .iter()
            .filter(|t| t.0 % rs == 0 && t.0 < rows)
        {
            let cy = mt + cell * (*r as f64 + 0.5);
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">{}</text>"#,
                ml - 4.0,
                cy + 3.5,
                esc(t)
            );
        }
        let widest = self
            .col_ticks
            .iter()
            .map(|t| text_px(&t.1))
            .fold(0.0, f64::max);
        let cs = stride(widest + 6.0);
        for (c, t) in self
            .col_ticks
            .iter()
            .filter(|t| t.0 % cs == 0 && t.0 < cols)
        {
            let cx = ml + cell * (*c as f64 + 0.5);
            let _ = write!(
                s,
                r#"<text x="{cx:.1}" y="{tick_y:.1}" font-size="10" text-anchor="middle">{}</text>"#,
                esc(t)
            );
        }
        let mut right = f64::MIN;
        for (i, (c, n, t)) in self.col_bands.iter().enumerate() {
            let (x0, x1) = (ml + cell * *c as f64, ml + cell * (*c + *n) as f64);
            if i > 0 {
                let _ = write!(
                    s,
                    r##"<line x1="{x0:.1}" y1="{mt:.1}" x2="{x0:.1}" y2="{:.1}" stroke="#222" stroke-width="1"/>"##,
                    mt + ph + 4.0
                );
            }
            let cx = (x0 + x1) / 2.0;
            let half = text_px(t) / 2.0;
            if cx - half < right + 4.0 {
                continue;
            }
            right = cx + half;
            let _ = write!(
                s,
                r#"<text x="{cx:.1}" y="{band_y:.1}" font-size="10" text-anchor="middle">{}</text>"#,
                esc(t)
            );
        }
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{name_y:.1}" font-size="11" text-anchor="middle">{}</text>"#,
            (ml + pw / 2.0).max(ml + text_px(self.cols_name) * 0.58),
            esc(self.cols_name)
        );
        let _ = write!(
            s,
            r#"<text x="12" y="{:.1}" font-size="11" text-anchor="middle" transform="rotate(-90 12 {:.1})">{}</text>"#,
            mt + ph / 2.0,
            mt + ph / 2.0,
            esc(self.rows_name)
        );
        // The colour scale.
        let steps = 20;
        for k in 0..steps {
            let _ = write!(
                s,
                r#"<rect class="scale" x="{:.1}" y="{gy:.1}" width="8.1" height="10" fill="{}"/>"#,
                ml + 8.0 * k as f64,
                heat((k as f64 + 0.5) / steps as f64)
            );
        }
        let _ = write!(
            s,
            r##"<rect x="{ml:.1}" y="{gy:.1}" width="160" height="10" fill="none" stroke="#888"/><text x="{ml:.1}" y="{:.1}" font-size="10">{}</text><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">{}</text>"##,
            gy + 22.0,
            esc(self.scale.0),
            ml + 160.0,
            gy + 22.0,
            esc(self.scale.1)
        );
        s.push_str("</svg>");
        s
    }
}

/// Colour of class `k` of `n` classes where the last class is "other" (grey) when
/// `other` is set: the palette in order, grey for "other".
pub fn class_colour(k: usize, other: bool, n: usize) -> &'static str {
    if other && k + 1 == n {
        OTHER
    } else {
        PALETTE[k % (PALETTE.len() - 1)]
    }
}

/// The colour of "other" (everything outside the top entries).
pub const OTHER: &str = "#bab0ac";

/// A time unit for a span in picoseconds: (picoseconds per unit, unit name).
pub fn time_unit(span_ps: f64) -> (f64, &'static str) {
    if span_ps >= 2e12 {
        (1e12, "s")
    } else if span_ps >= 2e9 {
        (1e9, "ms")
    } else if span_ps >= 2e6 {
        (1e6, "us")
    } else {
        (1e3, "ns")
    }
}

/// A number with `digits` significant digits in fixed notation (`sig(0.040005, 4)` is
/// `0.04001`, `sig(1741.2, 4)` is `1741`), for tables: no exponent, no trailing noise.
pub fn sig(v: f64, digits: i32) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v.is_finite() {
            "0".into()
        } else {
            v.to_string()
        };
    }
    let d = (digits - 1 - v.abs().log10().floor() as i32).clamp(0, 12) as usize;
    format!("{v:.d$}")
}

/// `t0` and `t1` (ps) in the unit of the time axis drawn for that span, with decimals enough
/// to tell them apart (about 4 significant digits of the span): `("1048.83", "1075.60", "us")`.
/// A window's heading and its chart title both use it, so they read as its axis does.
pub fn time_range(t0: f64, t1: f64) -> (String, String, &'static str) {
    let (div, unit) = time_unit(t1 - t0);
    let span = ((t1 - t0) / div).max(1e-9);
    let d = (3 - span.log10().floor() as i32).clamp(0, 6) as usize;
    (
        format!("{:.d$}", t0 / div),
        format!("{:.d$}", t1 / div),
        unit,
    )
}

/// A time (ps) in the unit and with the decimals [`time_range`] chose for `span_ps`.
pub fn time_in(t: f64, span_ps: f64) -> String {
    let (a, _, unit) = time_range(t, t + span_ps);
    format!("{a} {unit}")
}

/// Opens a chart: the `<svg>` element of `w x h` with `class`, its hover title and the bold
/// title text at `x`.
fn open(s: &mut String, class: &str, (w, h): (f64, f64), title: &str, x: f64) {
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="{class}" viewBox="0 0 {w:.0} {h:.0}" width="{w:.0}" height="{h:.0}" role="img"><title>{}</title><text x="{x}" y="18" font-size="14" font-weight="bold">{}</text>"#,
        esc(title),
        esc(title)
    );
}

/// The left margin that fits the longest row label (10 px text, about 6 px a character),
/// at least 96 px.
fn label_margin(rows: &[String]) -> f64 {
    let longest = rows.iter().map(|r| r.chars().count()).max().unwrap_or(0);
    (12.0 + 6.0 * longest as f64).clamp(96.0, 240.0)
}

/// Row labels of a timeline left of `ml`, at most about 24 of them.
fn row_labels(s: &mut String, rows: &[String], ml: f64, mt: f64, rh: f64) {
    let every = (rows.len() / 24).max(1);
    for (r, label) in rows.iter().enumerate().step_by(every) {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">{}</text>"#,
            ml - 6.0,
            mt + rh * (r as f64 + 0.5) + 3.5,
            esc(label)
        );
    }
}

/// The frame of a timeline plot and its time axis, then closes the chart.
fn close_timeline(s: &mut String, (ml, mt, pw, ph): (f64, f64, f64, f64), span: (f64, f64)) {
    let _ = write!(
        s,
        r##"<rect x="{ml}" y="{mt}" width="{pw:.1}" height="{ph:.1}" fill="none" stroke="#888"/>"##
    );
    time_axis(s, (ml, ml + pw), span, mt + ph);
    s.push_str("</svg>");
}

/// A time axis under a plot from `x0` to `x1` pixels for `[t0_ps, t1_ps)`, at `y`: round
/// ticks in a unit fitted to the span, and the label `time (unit)`.
fn time_axis(s: &mut String, (x0, x1): (f64, f64), (t0_ps, t1_ps): (f64, f64), y: f64) {
    let (div, unit) = time_unit(t1_ps - t0_ps);
    let (a, b) = (t0_ps / div, t1_ps / div);
    for t in ticks(a, b, 6) {
        let x = x0 + (x1 - x0) * if b > a { (t - a) / (b - a) } else { 0.0 };
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#888"/><text x="{x:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"##,
            y,
            y + 4.0,
            y + 16.0,
            tick(t)
        );
    }
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">time ({unit})</text>"#,
        (x0 + x1) / 2.0,
        y + 32.0
    );
}

/// A downsampled timeline of the whole run: one row per label, `cols` cells per row; cell
/// `(r, c)` is drawn in `colour[dominant]` with an opacity from its busy `fraction` (5 steps,
/// idle cells blank); runs of equal cells are merged into one rectangle. `marks` are shaded
/// windows `(t0_ps, t1_ps, label)` drawn over the plot.
pub struct Overview<'a> {
    /// Title above the plot.
    pub title: &'a str,
    /// Row labels, top to bottom.
    pub rows: &'a [String],
    /// Window of the plot, ps.
    pub span_ps: (f64, f64),
    /// Columns per row.
    pub cols: usize,
    /// Dominant class per cell (`u16::MAX`: idle), `rows x cols`.
    pub dominant: &'a [u16],
    /// Busy fraction per cell, `rows x cols`.
    pub fraction: &'a [f64],
    /// Colour per class.
    pub colours: &'a [&'a str],
    /// Class names (for hover titles).
    pub names: &'a [String],
    /// Shaded windows.
    pub marks: &'a [(f64, f64, String)],
}

impl Overview<'_> {
    /// The SVG element.
    pub fn svg(&self) -> String {
        let n = self.rows.len().max(1);
        let rh = (520.0 / n as f64).clamp(3.0, 14.0);
        let (ml, mt, mb) = (label_margin(self.rows), 30.0, 48.0);
        let pw = W + 160.0 - ml - 20.0;
        let w = W + 160.0;
        let h = mt + rh * n as f64 + mb;
        let cw = pw / self.cols.max(1) as f64;
        let mut s = String::new();
        open(&mut s, "chart overview", (w, h), self.title, ml);
        row_labels(&mut s, self.rows, ml, mt, rh);
        for (r, label) in self.rows.iter().enumerate() {
            let mut c = 0;
            while c < self.cols {
                let i = r * self.cols + c;
                let class = self.dominant[i];
                let level = (self.fraction[i] * 5.0).ceil().min(5.0) as u32;
                let mut e = c + 1;
                while e < self.cols
                    && self.dominant[r * self.cols + e] == class
                    && (self.fraction[r * self.cols + e] * 5.0).ceil().min(5.0) as u32 == level
                {
                    e += 1;
                }
                if class != u16::MAX && level > 0 {
                    let k = class as usize;
                    let _ = write!(
                        s,
                        r#"<rect class="cell" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}" fill-opacity="{:.1}"><title>{}: {} {}%</title></rect>"#,
                        ml + cw * c as f64,
                        mt + rh * r as f64,
                        cw * (e - c) as f64,
                        rh.max(1.0) - if rh > 4.0 { 1.0 } else { 0.0 },
                        self.colours.get(k).copied().unwrap_or(OTHER),
                        0.2 * level as f64,
                        esc(label),
                        esc(self.names.get(k).map_or("", String::as_str)),
                        20 * level
                    );
                }
                c = e;
            }
        }
        let (t0, t1) = self.span_ps;
        let tx = |t: f64| ml + pw * if t1 > t0 { (t - t0) / (t1 - t0) } else { 0.0 };
        for (i, (a, b, label)) in self.marks.iter().enumerate() {
            let (x0, x1) = (tx(*a), tx(*b).max(tx(*a) + 2.0));
            // Labels on a white tag inside the plot, staggered so that close windows stay
            // readable; right-aligned near the right edge.
            let (lx, anchor) = if x0 > ml + pw - 30.0 {
                (x1 - 2.0, "end")
            } else {
                (x0 + 2.0, "start")
            };
            let ly = mt + 12.0 + 14.0 * i as f64;
            let tag_x = if anchor == "end" { lx - 12.0 } else { lx - 1.0 };
            let _ = write!(
                s,
                r##"<rect class="mark" x="{x0:.1}" y="{mt}" width="{:.1}" height="{:.1}" fill="none" stroke="#222" stroke-dasharray="4 2"/><rect x="{tag_x:.1}" y="{:.1}" width="13" height="13" fill="#fff" stroke="#222"/><text x="{:.1}" y="{ly:.1}" font-size="11" font-weight="bold" text-anchor="middle">{}</text>"##,
                x1 - x0,
                rh * n as f64,
                ly - 10.5,
                tag_x + 6.5,
                esc(label)
            );
        }
        close_timeline(&mut s, (ml, mt, pw, rh * n as f64), (t0, t1));
        s
    }
}

/// A block-level timeline window: one row per label; blocks `(row, start_ps, end_ps, colour,
/// label, on the critical path)`; critical-path blocks get a black outline.
pub fn window(
    title: &str,
    rows: &[String],
    (t0, t1): (f64, f64),
    blocks: &[(usize, f64, f64, &str, String, bool)],
) -> String {
    let n = rows.len().max(1);
    let rh = (420.0 / n as f64).clamp(6.0, 16.0);
    let (ml, mt, mb) = (label_margin(rows), 30.0, 48.0);
    let w = W + 160.0;
    let pw = w - ml - 20.0;
    let h = mt + rh * n as f64 + mb;
    let tx = |t: f64| ml + pw * if t1 > t0 { (t - t0) / (t1 - t0) } else { 0.0 };
    let mut s = String::new();
    open(&mut s, "chart window", (w, h), title, ml);
    row_labels(&mut s, rows, ml, mt, rh);
    for (row, a, b, colour, label, critical) in blocks {
        let (mut x0, x1) = (tx(a.max(t0)), tx(b.min(t1)));
        // A critical-path block stays visible however short (one that takes no time too):
        // at least 3 px, inside the plot.
        let min_w = if *critical { 3.0 } else { 0.4 };
        if x1 - x0 < min_w {
            x0 = x0.min(ml + pw - min_w);
        }
        let stroke = if *critical {
            r##" stroke="#000" stroke-width="1.5""##
        } else {
            ""
        };
        let _ = write!(
            s,
            r#"<rect class="block" x="{x0:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="{colour}"{stroke}><title>{}</title></rect>"#,
            mt + rh * *row as f64 + rh * 0.1,
            (x1 - x0).max(min_w),
            rh * 0.8,
            esc(label)
        );
    }
    close_timeline(&mut s, (ml, mt, pw, rh * n as f64), (t0, t1));
    s
}

/// Width in px of `s` in 10 px sans-serif text (about 6.4 px a character, digits included).
fn text_px(s: &str) -> f64 {
    6.4 * s.chars().count() as f64
}

/// How bar labels fit under bars `bw` px wide: upright when the longest fits its bar, else
/// turned 45 degrees; every `every`-th label so that turned labels do not overlap. Returns
/// `(turned, every, height)`, the height the labels take under the plot.
fn bar_label_layout(labels: &[String], bw: f64) -> (bool, usize, f64) {
    let longest = labels.iter().map(|l| text_px(l)).fold(0.0, f64::max);
    if longest <= bw * 0.92 {
        return (false, 1, 16.0);
    }
    let every = (13.0 / bw).ceil().max(1.0) as usize;
    (true, every, longest * 0.71 + 14.0)
}

/// A bar chart of labelled values; `x_label` names the axis under the labels.
pub fn bars(title: &str, y_label: &str, x_label: &str, items: &[(String, f64)]) -> String {
    let labels: Vec<String> = items.iter().map(|i| i.0.clone()).collect();
    let values: Vec<f64> = items.iter().map(|i| i.1).collect();
    stacked_bars(
        title,
        y_label,
        x_label,
        &labels,
        &[PALETTE[0]],
        &[y_label.to_string()],
        &[values],
    )
}

/// Stacked bars: `layers[k][i]` is layer k's value for bar i; layer colours given. Every bar
/// label is written in full (turned when they do not fit upright, thinned only when even
/// turned they would overlap); `x_label` names the axis under them.
pub fn stacked_bars(
    title: &str,
    y_label: &str,
    x_label: &str,
    labels: &[String],
    colours: &[&str],
    names: &[String],
    layers: &[Vec<f64>],
) -> String {
    let n = labels.len().max(1);
    let tops: Vec<f64> = (0..labels.len())
        .map(|i| layers.iter().map(|l| l[i]).sum())
        .collect();
    let y1 = tops.iter().copied().fold(0.0f64, f64::max).max(1e-30) * 1.05;
    let pw = W - ML - 20.0;
    let bw = pw / n as f64;
    let (turned, every, lh) = bar_label_layout(labels, bw);
    // The plot keeps its height; labels and the axis name go under it.
    let ph = H - MT - MB;
    let h = MT + ph + lh + 24.0;
    let ty = |y: f64| MT + (1.0 - y / y1) * ph;
    let w = W.max(ML + 8.5 * title.chars().count() as f64 + 10.0);
    let mut s = String::new();
    open(&mut s, "chart", (w, h), title, ML);
    let counts = layers.iter().flatten().all(|v| v.fract() == 0.0);
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
    let base_y = MT + ph;
    for (i, label) in labels.iter().enumerate() {
        let x = ML + bw * i as f64;
        let mut base = 0.0;
        for (k, l) in layers.iter().enumerate() {
            let v = l[i];
            if v > 0.0 {
                let name = names.get(k).map_or("", String::as_str);
                let what = if layers.len() > 1 {
                    format!("{label}, {name}: {}", num(v))
                } else {
                    format!("{label}: {} {name}", num(v))
                };
                let _ = write!(
                    s,
                    r#"<rect class="bar" x="{:.2}" y="{:.1}" width="{:.2}" height="{:.1}" fill="{}"><title>{}</title></rect>"#,
                    x + bw * 0.1,
                    ty(base + v),
                    (bw * 0.8).max(0.5),
                    (ty(base) - ty(base + v)).max(0.0),
                    colours.get(k).copied().unwrap_or(OTHER),
                    esc(&what)
                );
            }
            base += v;
        }
        if i % every == 0 {
            let cx = x + bw / 2.0;
            if turned {
                let ly = base_y + 10.0;
                let _ = write!(
                    s,
                    r#"<text x="{cx:.1}" y="{ly:.1}" font-size="10" text-anchor="end" transform="rotate(-45 {cx:.1} {ly:.1})">{}</text>"#,
                    esc(label)
                );
            } else {
                let _ = write!(
                    s,
                    r#"<text x="{cx:.1}" y="{:.1}" font-size="10" text-anchor="middle">{}</text>"#,
                    base_y + 13.0,
                    esc(label)
                );
            }
        }
    }
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text>"#,
        ML + pw / 2.0,
        base_y + lh + 14.0,
        esc(x_label)
    );
    let _ = write!(
        s,
        r#"<text x="14" y="{:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 14 {:.1})">{}</text></svg>"#,
        MT + ph / 2.0,
        MT + ph / 2.0,
        esc(y_label)
    );
    s
}

/// Grouped bars for a categorical x: one group per category, one bar per series.
pub fn grouped_bars(
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[Series],
) -> String {
    let n = categories.len().max(1);
    let m = series.len().max(1);
    let y1 = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0f64, f64::max)
        .max(1e-30)
        * 1.05;
    // One series needs no legend: the title and the axis say what it is.
    let mr = if series.len() > 1 { MR } else { 20.0 };
    let pw = W - ML - mr;
    let gw = pw / n as f64;
    let bw = gw * 0.8 / m as f64;
    let ty = |y: f64| MT + (1.0 - y / y1) * (H - MT - MB);
    let mut s = String::new();
    open(&mut s, "chart", (W, H), title, ML);
    for t in ticks(0.0, y1, 5) {
        let _ = write!(
            s,
            r##"<line x1="{ML}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
            ty(t),
            W - mr,
            ty(t),
            ML - 6.0,
            ty(t) + 4.0,
            tick(t)
        );
    }
    for (c, cat) in categories.iter().enumerate() {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"#,
            ML + gw * (c as f64 + 0.5),
            H - MB + 16.0,
            esc(cat)
        );
    }
    for (k, se) in series.iter().enumerate() {
        let colour = PALETTE[k % PALETTE.len()];
        for &(x, y) in &se.points {
            let c = x.round().max(0.0) as usize;
            let _ = write!(
                s,
                r#"<rect class="bar" x="{:.2}" y="{:.1}" width="{:.2}" height="{:.1}" fill="{colour}"><title>{}, {}: {}</title></rect>"#,
                ML + gw * c as f64 + gw * 0.1 + bw * k as f64,
                ty(y),
                bw.max(0.5),
                (H - MB - ty(y)).max(0.0),
                esc(&se.name),
                esc(categories.get(c).map_or("", String::as_str)),
                num(y)
            );
        }
        if series.len() < 2 {
            continue;
        }
        let ly = MT + 14.0 + 18.0 * k as f64;
        let _ = write!(
            s,
            r#"<rect x="{:.1}" y="{:.1}" width="12" height="12" fill="{colour}"/><text x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
            W - mr + 12.0,
            ly - 10.0,
            W - mr + 30.0,
            ly,
            esc(&truncate(&se.name, 22))
        );
    }
    let _ = write!(
        s,
        r##"<rect x="{ML}" y="{MT}" width="{pw:.1}" height="{:.1}" fill="none" stroke="#888"/><text x="14" y="{:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 14 {:.1})">{}</text></svg>"##,
        H - MT - MB,
        (MT + H - MB) / 2.0,
        (MT + H - MB) / 2.0,
        esc(y_label)
    );
    s
}

/// `s` cut to `n` characters with an ellipsis.
pub fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('\u{2026}');
        t
    }
}

/// Fill of a heat cell for a value in 0..=1: white to dark blue.
pub fn heat(u: f64) -> String {
    let u = u.clamp(0.0, 1.0);
    format!(
        "rgb({},{},{})",
        (240.0 - 200.0 * u) as u8,
        (235.0 - 180.0 * u) as u8,
        (250.0 - 90.0 * u) as u8
    )
}

// Charts hold formatting closures, which have no `Debug`: show what identifies them.
impl std::fmt::Debug for LineChart<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineChart")
            .field("title", &self.title)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Grid<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grid")
            .field("title", &self.title)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Overview<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Overview")
            .field("title", &self.title)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(v: &[f64]) -> Vec<String> {
        v.iter().map(|t| tick(*t)).collect()
    }

    #[test]
    fn large_numbers_read_with_a_suffix() {
        assert_eq!(num(6e6), "6M");
        assert_eq!(num(1.25e9), "1.25G");
        assert_eq!(num(123_456_789.0), "123M");
        assert_eq!(tick(6e6), "6M");
        assert_eq!(tick(250_000.0), "250000");
        assert_eq!(num(-2.5e6), "-2.5M");
        assert_eq!(num(0.0001), "1.00e-4");
    }

    #[test]
    fn times_and_tables_read_in_a_fitted_unit() {
        assert_eq!(sig(0.040005123, 4), "0.04001");
        assert_eq!(sig(1741.2, 4), "1741");
        assert_eq!(sig(400.055, 4), "400.1");
        // A window's ends in its axis's unit, enough decimals to tell them apart.
        assert_eq!(
            time_range(1_048_650_000.0, 1_075_540_000.0),
            ("1048.65".to_string(), "1075.54".to_string(), "us")
        );
        assert_eq!(
            time_range(0.0, 1.85e9),
            ("0".to_string(), "1850".to_string(), "us")
        );
        assert_eq!(time_in(1_075_540_000.0, 26_890_000.0), "1075.54 us");
    }

    fn chart(series: Vec<Series>) -> String {
        let f = |x: f64| tick(x);
        LineChart {
            title: "t",
            x_label: "x",
            y_label: "y",
            log_x: false,
            categories: None,
            x_fmt: &f,
            series,
        }
        .svg()
    }

    #[test]
    fn coinciding_series_stay_visible_and_are_named() {
        let s = |name: &str, ys: &[f64]| Series {
            name: name.into(),
            points: ys.iter().enumerate().map(|(i, &y)| (i as f64, y)).collect(),
        };
        let f = |x: f64| tick(x);
        let c = LineChart {
            title: "t",
            x_label: "x",
            y_label: "y",
            log_x: false,
            categories: None,
            x_fmt: &f,
            series: vec![
                s("a", &[1.0, 2.0, 3.0, 4.0]),
                s("b", &[1.0, 2.0, 3.0, 4.0]),
                s("c", &[1.0, 2.0, 3.5, 9.0]),
                s("d", &[9.0, 8.0, 7.0, 6.0]),
            ],
        };
        assert_eq!(
            c.coincident(),
            [
                "a and b coincide",
                "a and c coincide at 2 of 4 points",
                "b and c coincide at 2 of 4 points"
            ]
        );
        // Each line has its own dash pattern, and the legend shows it.
        let svg = c.svg();
        for d in &DASHES[1..4] {
            assert_eq!(svg.matches(&format!("stroke-dasharray=\"{d}\"")).count(), 2);
        }
        // One series: no legend.
        let one = chart(vec![s("only", &[1.0, 2.0])]);
        assert!(!one.contains(">only</text>"));
        assert!(chart(vec![s("a", &[1.0]), s("b", &[2.0])]).contains(">b</text>"));
    }

    #[test]
    fn every_bar_label_is_written_whole() {
        let labels: Vec<String> = (0..64)
            .map(|i| format!("{}-{}", i * 1563, i * 1563 + 1562))
            .collect();
        let svg = stacked_bars(
            "t",
            "y",
            "PEs",
            &labels,
            &["#000"],
            &["n".into()],
            &[vec![1.0; 64]],
        );
        // Turned 45 degrees, every other one (they would overlap at every one).
        assert!(svg.contains("rotate(-45"));
        assert!(svg.contains(">3126-4688</text>") && svg.contains(">0-1562</text>"));
        assert!(!svg.contains(">0-</text>"));
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
