//! Progress on the terminal: a bar with ETA when stderr is a terminal, a plain line every few
//! seconds when it is not (logs, CI), nothing with `--quiet`. Nothing shows for work that ends
//! within a second.

use indicatif::{ProgressBar, ProgressStyle};
use sim_core::Progress;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Work shorter than this shows no progress at all.
const SHOW_AFTER: Duration = Duration::from_secs(1);
/// Interval between plain progress lines.
const LINE_EVERY: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Quiet,
    Bar,
    Lines,
}

/// The current stage.
#[derive(Debug)]
struct Stage {
    name: String,
    total: u64,
    unit: &'static str,
    start: Instant,
    last_line: Instant,
    done: u64,
    bar: Option<ProgressBar>,
}

/// Reports progress to stderr (see the module docs).
#[derive(Debug)]
pub struct Reporter {
    mode: Mode,
    stage: Option<Stage>,
}

impl Reporter {
    /// A reporter for a command with `--quiet` set to `quiet`.
    pub fn new(quiet: bool) -> Reporter {
        let mode = if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            Mode::Bar
        } else {
            Mode::Lines
        };
        Reporter { mode, stage: None }
    }

    /// Ends the current stage (clearing its bar, if one was drawn).
    pub fn done(&mut self) {
        if let Some(s) = self.stage.take()
            && let Some(b) = s.bar
        {
            b.finish_and_clear();
        }
    }

    fn bar(s: &Stage) -> ProgressBar {
        let b = ProgressBar::new(s.total);
        let counts = if s.unit == "bytes" {
            "{bytes}/{total_bytes}".to_string()
        } else {
            format!("{{human_pos}}/{{human_len}} {}", s.unit)
        };
        let template = if s.total > 0 {
            format!("{{prefix:>8}} {{bar:32}} {counts}  {{elapsed}} (eta {{eta}})")
        } else {
            format!(
                "{{prefix:>8}} {{spinner}} {}  {{elapsed}}",
                counts
                    .replace("/{total_bytes}", "")
                    .replace("/{human_len}", "")
            )
        };
        b.set_style(
            ProgressStyle::with_template(&template)
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b.set_prefix(s.name.clone());
        b.set_position(s.done);
        b
    }

    fn line(s: &Stage) -> String {
        let secs = s.start.elapsed().as_secs_f64();
        if s.total == 0 {
            return format!("{}: {} {} after {secs:.0} s", s.name, s.done, s.unit);
        }
        if s.done == 0 {
            return format!(
                "{}: starting, 0 of {} {} after {secs:.0} s",
                s.name, s.total, s.unit
            );
        }
        let frac = s.done as f64 / s.total as f64;
        let eta = secs * (1.0 - frac) / frac;
        format!(
            "{}: {:.0}% ({} of {} {}) after {secs:.0} s, about {eta:.0} s to go",
            s.name,
            100.0 * frac,
            s.done,
            s.total,
            s.unit
        )
    }
}

/// A rate for the summary lines: `1.42 M events/s`, `3.10 k events/s`, `12.0 events/s`, so
/// that a slow run shows its rate instead of `0.00 M`.
pub fn rate(count: f64, secs: f64, unit: &str) -> String {
    let r = count / secs.max(1e-9);
    if r >= 1e6 {
        format!("{:.2} M {unit}/s", r / 1e6)
    } else if r >= 1e3 {
        format!("{:.2} k {unit}/s", r / 1e3)
    } else {
        format!("{r:.1} {unit}/s")
    }
}

impl Progress for Reporter {
    fn stage(&mut self, name: &str, total: u64, unit: &'static str) {
        self.done();
        if self.mode == Mode::Quiet {
            return;
        }
        let now = Instant::now();
        self.stage = Some(Stage {
            name: name.to_string(),
            total,
            unit,
            start: now,
            last_line: now,
            done: 0,
            bar: None,
        });
    }

    fn advance_to(&mut self, done: u64) {
        let Some(s) = self.stage.as_mut() else {
            return;
        };
        s.done = done;
        if s.start.elapsed() < SHOW_AFTER {
            return;
        }
        match self.mode {
            Mode::Quiet => {}
            Mode::Bar => match &s.bar {
                Some(b) => b.set_position(done),
                None => s.bar = Some(Reporter::bar(s)),
            },
            Mode::Lines => {
                if s.last_line.elapsed() >= LINE_EVERY || s.last_line == s.start {
                    s.last_line = Instant::now();
                    eprintln!("{}", Reporter::line(s));
                }
            }
        }
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        self.done();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_keep_their_digits_when_slow() {
        assert_eq!(rate(1_420_000.0, 1.0, "events"), "1.42 M events/s");
        assert_eq!(rate(209_007.0, 178.188, "events"), "1.17 k events/s");
        assert_eq!(rate(54.0, 10.0, "messages"), "5.4 messages/s");
    }

    #[test]
    fn lines_say_how_far_and_how_long() {
        let now = Instant::now();
        let s = Stage {
            name: "replay".into(),
            total: 200,
            unit: "blocks",
            start: now - Duration::from_secs(10),
            last_line: now,
            done: 50,
            bar: None,
        };
        let l = Reporter::line(&s);
        assert!(
            l.starts_with("replay: 25% (50 of 200 blocks) after 10 s"),
            "{l}"
        );
        assert!(l.contains("about 30 s to go"), "{l}");
        // Before the first unit completes, the line still gives the total.
        let s = Stage { done: 0, ..s };
        assert_eq!(
            Reporter::line(&s),
            "replay: starting, 0 of 200 blocks after 10 s"
        );
    }
}
