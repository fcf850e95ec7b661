//! Extra-P's text input format (Extra-P `docs/file-formats.md`): `PARAMETER name` lines,
//! `POINTS (x1) (x2) ...`, then per series `REGION name` / `METRIC name` and one `DATA v1 v2
//! ...` line per point (its repetitions), in point order. Read for `whatif model`, written
//! so that whatif's measurements open in Extra-P.

use crate::ModelError;
use crate::pmnf::Point;
use serde::Serialize;

/// Largest file read.
pub const MAX_BYTES: u64 = 64 << 20;
/// Most points.
pub const MAX_POINTS: usize = 100_000;

/// One region x metric with its values at every point.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Series {
    /// Region (Extra-P's call path).
    pub region: String,
    /// Metric.
    pub metric: String,
    /// Points with their repetitions.
    pub points: Vec<Point>,
}

/// An Extra-P text file.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Experiment {
    /// Parameter names.
    pub params: Vec<String>,
    /// Series.
    pub series: Vec<Series>,
}

fn err(line: usize, what: impl Into<String>) -> ModelError {
    ModelError::Parse {
        line,
        what: what.into(),
    }
}

/// Parses the text of an Extra-P text file. Only single-parameter experiments are modelled
/// today; more parameters are an error that says so.
pub fn parse(text: &str) -> Result<Experiment, ModelError> {
    let mut params: Vec<String> = Vec::new();
    let mut xs: Vec<f64> = Vec::new();
    let mut series: Vec<Series> = Vec::new();
    let (mut region, mut metric) = ("region".to_string(), "metric".to_string());
    let mut current: Option<usize> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let l = raw.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let (key, rest) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
        let rest = rest.trim();
        match key {
            "PARAMETER" => {
                if rest.is_empty() {
                    return Err(err(line, "PARAMETER needs a name"));
                }
                params.push(rest.to_string());
            }
            "POINTS" => {
                if params.len() > 1 {
                    return Err(err(
                        line,
                        format!(
                            "{} parameters: whatif models one parameter so far (split the file per parameter)",
                            params.len()
                        ),
                    ));
                }
                for tok in rest
                    .split(|c: char| c == '(' || c == ')' || c.is_whitespace())
                    .filter(|t| !t.is_empty())
                {
                    let v: f64 = tok
                        .parse()
                        .map_err(|_| err(line, format!("point `{tok}` is not a number")))?;
                    if !v.is_finite() {
                        return Err(err(line, format!("point `{tok}` is not finite")));
                    }
                    if xs.len() >= MAX_POINTS {
                        return Err(err(line, format!("more than {MAX_POINTS} points")));
                    }
                    xs.push(v);
                }
            }
            "REGION" | "METRIC" => {
                if key == "REGION" {
                    region = rest.to_string();
                } else {
                    metric = rest.to_string();
                }
                current = None;
            }
            "DATA" => {
                if xs.is_empty() {
                    return Err(err(line, "DATA before POINTS"));
                }
                let k = match current {
                    Some(k) => k,
                    None => {
                        series.push(Series {
                            region: region.clone(),
                            metric: metric.clone(),
                            points: Vec::new(),
                        });
                        current = Some(series.len() - 1);
                        series.len() - 1
                    }
                };
                let s = &mut series[k];
                if s.points.len() == xs.len() {
                    return Err(err(
                        line,
                        format!(
                            "a DATA line too many for region `{}`, metric `{}` ({} points)",
                            s.region,
                            s.metric,
                            xs.len()
                        ),
                    ));
                }
                let mut values = Vec::new();
                for tok in rest.split_whitespace() {
                    let v: f64 = tok
                        .parse()
                        .map_err(|_| err(line, format!("value `{tok}` is not a number")))?;
                    if !v.is_finite() {
                        return Err(err(line, format!("value `{tok}` is not finite")));
                    }
                    values.push(v);
                }
                if values.is_empty() {
                    return Err(err(line, "DATA without values"));
                }
                let x = xs[s.points.len()];
                s.points.push(Point { x, values });
            }
            other => {
                return Err(err(
                    line,
                    format!(
                        "unknown keyword `{other}` (expected PARAMETER, POINTS, REGION, METRIC or DATA)"
                    ),
                ));
            }
        }
    }
    if params.is_empty() {
        return Err(err(0, "no PARAMETER line"));
    }
    if let Some(s) = series.iter().find(|s| s.points.len() != xs.len()) {
        return Err(err(
            0,
            format!(
                "region `{}`, metric `{}` has {} DATA lines for {} points",
                s.region,
                s.metric,
                s.points.len(),
                xs.len()
            ),
        ));
    }
    if series.is_empty() {
        return Err(err(0, "no DATA lines"));
    }
    Ok(Experiment { params, series })
}

/// Extra-P's text for `exp` (single parameter; every series on the same points).
pub fn write(exp: &Experiment) -> String {
    let mut o = String::new();
    for p in &exp.params {
        o.push_str(&format!("PARAMETER {p}\n"));
    }
    if let Some(s) = exp.series.first() {
        let pts: Vec<String> = s.points.iter().map(|p| format!("({})", p.x)).collect();
        o.push_str(&format!("POINTS {}\n", pts.join(" ")));
    }
    for s in &exp.series {
        o.push_str(&format!("\nREGION {}\nMETRIC {}\n", s.region, s.metric));
        for p in &s.points {
            let v: Vec<String> = p.values.iter().map(|v| format!("{v:e}")).collect();
            o.push_str(&format!("DATA {}\n", v.join(" ")));
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_writes_and_rejects() {
        let text = "PARAMETER p\nPOINTS (4) (8)\n\nREGION a\nMETRIC time\nDATA 1 2\nDATA 3\nREGION b\nDATA 5\nDATA 6 7\n";
        let e = parse(text).unwrap();
        assert_eq!(e.series.len(), 2);
        assert_eq!(e.series[0].points[0].values, [1.0, 2.0]);
        assert_eq!(e.series[1].points[1].x, 8.0);
        assert_eq!(e.series[1].metric, "time");
        assert_eq!(parse(&write(&e)).unwrap(), e);
        for (bad, want) in [
            ("PARAMETER p\nPOINTS (4) (x)\n", "line 2: point `x`"),
            (
                "PARAMETER p\nPOINTS (4)\nDATA 1\nDATA 2\n",
                "line 4: a DATA line too many",
            ),
            (
                "PARAMETER p\nPOINTS (4) (8)\nDATA 1\n",
                "1 DATA lines for 2 points",
            ),
            ("PARAMETER p\nPARAMETER q\nPOINTS (4 1)\n", "2 parameters"),
            ("POINTS (4)\nFOO\n", "unknown keyword `FOO`"),
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains(want), "{bad:?}: {e}");
        }
    }
}
