//! The timings report of a build script's kernel compiles: one row per
//! source (compiled, from the cache, up to date or failed) with its arch
//! targets, start and end, nvcc threads, peak memory and whether it was on
//! the critical path; written as JSON and as an HTML page with a timeline.
//!
//! With `CUDA_BUILD_TIMINGS=<dir>` each build script writes
//! `<dir>/cuda-timing-<package>.json` and `.html` ([`Report::write`]);
//! `cargo cuda build --timings` sets it to cargo's `cargo-timings`
//! directory and merges every package's report into `cuda-timing.html` and
//! `cuda-timing.json` ([`Report::merge`]).

use std::path::{Path, PathBuf};

/// The report format's version (the JSON's `version`).
pub const VERSION: u32 = 1;

/// One build script's (or, merged, one build's) kernel compiles.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Report {
    /// [`VERSION`].
    pub version: u32,
    /// The memory budget the pool kept to, in bytes (None: none).
    pub budget_bytes: Option<u64>,
    /// Where the budget came from (`CUDA_BUILD_MEMORY_BUDGET`, `80% of MemAvailable`, …).
    pub budget_source: String,
    /// The job slots the pool had (cargo's `-j`, `NUM_JOBS` or the CPU count); 0 with a jobserver.
    pub fixed_slots: usize,
    /// Every source of every build, in start order.
    pub compiles: Vec<Compile>,
}

/// How a source's outputs were made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// nvcc ran (a cache miss).
    Compiled,
    /// Restored from the kernel cache (a hit).
    Cached,
    /// The outputs were current: nothing to do.
    UpToDate,
    /// Taken from the images the package ships (`cuda-prebuilt/`).
    Prebuilt,
    /// nvcc failed.
    Failed,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Compiled => "compiled",
            Outcome::Cached => "cache hit",
            Outcome::UpToDate => "up to date",
            Outcome::Prebuilt => "prebuilt",
            Outcome::Failed => "failed",
        }
    }
}

/// One source's compile.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Compile {
    /// The package (`CARGO_PKG_NAME`, else its directory's name).
    pub package: String,
    /// The build's module name.
    pub module: String,
    /// The source, relative to the package.
    pub file: String,
    /// Its arch targets (`sm_80`, `compute_90`).
    pub archs: Vec<String>,
    /// When it started and ended, seconds since the Unix epoch (equal for
    /// a source that did not compile).
    pub start: f64,
    /// See `start`.
    pub end: f64,
    /// The job slots it held: its nvcc threads (`--split-compile` count,
    /// or targets at once with `--threads`).
    pub threads: u32,
    /// Its `--split-compile` count (1: not split).
    pub split: u32,
    /// The measured peak memory of nvcc's process tree, in bytes.
    pub peak_bytes: Option<u64>,
    /// The peak the pool planned for, in bytes.
    pub predicted_bytes: Option<u64>,
    /// How its outputs were made.
    pub outcome: Outcome,
    /// On the critical path: the compile that ended last, the one whose end
    /// let it start, and so on back.
    pub critical: bool,
    /// Attempts stopped to keep the memory budget before it compiled (it
    /// ran beside compiles that, together, held more than the budget).
    #[serde(default)]
    pub stopped: u32,
    /// Attempts the system killed (SIGKILL: the out-of-memory killer, most
    /// likely) before it compiled again alone.
    #[serde(default)]
    pub killed: u32,
    /// Its first attempt started on trial, on a slot that would have idled,
    /// before its memory guessed from its size fitted beside the others (if
    /// that attempt was stopped, `stopped` counts it).
    #[serde(default)]
    pub trial: bool,
}

impl Compile {
    /// Its wall time, in seconds.
    pub fn secs(&self) -> f64 {
        (self.end - self.start).max(0.0)
    }
}

impl Report {
    /// The report's JSON and HTML files for `package` in `dir`.
    pub fn paths(dir: &Path, package: &str) -> (PathBuf, PathBuf) {
        let stem = if package.is_empty() {
            "cuda-timing".to_string()
        } else {
            format!("cuda-timing-{package}")
        };
        (
            dir.join(format!("{stem}.json")),
            dir.join(format!("{stem}.html")),
        )
    }

    /// Writes the JSON and HTML files (each to a temporary file, then
    /// renamed); the HTML's path.
    pub fn write(&self, dir: &Path, package: &str) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(dir)?;
        let (json, html) = Report::paths(dir, package);
        let text = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        cuda_toolchain::fsutil::write_atomic_unsynced(&json, &text)?;
        cuda_toolchain::fsutil::write_atomic_unsynced(&html, self.html().as_bytes())?;
        Ok(html)
    }

    /// A report read back from its JSON file.
    pub fn read(path: &Path) -> Result<Report, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let r: Report =
            serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        if r.version != VERSION {
            return Err(format!(
                "{}: report version {} (this reader knows {VERSION})",
                path.display(),
                r.version
            ));
        }
        Ok(r)
    }

    /// Several build scripts' reports as one, in start order.
    pub fn merge(reports: Vec<Report>) -> Report {
        let mut out = Report {
            version: VERSION,
            budget_bytes: None,
            budget_source: String::new(),
            fixed_slots: 0,
            compiles: Vec::new(),
        };
        for r in reports {
            if out.budget_source.is_empty() {
                out.budget_bytes = r.budget_bytes;
                out.budget_source = r.budget_source;
                out.fixed_slots = r.fixed_slots;
            }
            out.compiles.extend(r.compiles);
        }
        out.compiles.sort_by(|a, b| a.start.total_cmp(&b.start));
        out
    }

    /// The `n` costliest compiles (longest nvcc wall time first).
    pub fn costliest(&self, n: usize) -> Vec<&Compile> {
        let mut c: Vec<&Compile> = self
            .compiles
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Compiled | Outcome::Failed))
            .collect();
        c.sort_by(|a, b| b.secs().total_cmp(&a.secs()));
        c.truncate(n);
        c
    }

    /// One line naming the three costliest compiles, e.g. `costliest
    /// kernels: mmq_q2_k.cu 41.2 s (1.9 GB), …`.
    pub fn costliest_line(&self) -> String {
        let top = self.costliest(3);
        if top.is_empty() {
            let n = self.compiles.len();
            return format!("no kernel compiled ({n} from the cache or up to date)");
        }
        let items: Vec<String> = top
            .iter()
            .map(|c| {
                let file = Path::new(&c.file)
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_else(|| c.file.clone());
                match c.peak_bytes {
                    Some(b) => format!("{file} {:.1} s ({})", c.secs(), show_bytes(b)),
                    None => format!("{file} {:.1} s", c.secs()),
                }
            })
            .collect();
        format!("costliest kernels: {}", items.join(", "))
    }

    /// The HTML page: a summary, a timeline (one bar per compile, the
    /// critical path outlined) and a table.
    pub fn html(&self) -> String {
        let t0 = self
            .compiles
            .iter()
            .map(|c| c.start)
            .fold(f64::INFINITY, f64::min);
        let t1 = self.compiles.iter().map(|c| c.end).fold(0.0, f64::max);
        let span = if t1 > t0 { t1 - t0 } else { 1.0 };
        let compiled: Vec<&Compile> = self
            .compiles
            .iter()
            .filter(|c| c.outcome == Outcome::Compiled)
            .collect();
        let sum: f64 = compiled.iter().map(|c| c.secs()).sum();
        let mut h = String::new();
        h.push_str("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>cuda-build timings</title>\n<style>\n");
        h.push_str("body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;font-size:90%}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}td.n{text-align:right}\n");
        h.push_str(".tl{position:relative;border-left:1px solid #888;margin:1em 0}.row{position:relative;height:18px;margin:2px 0}.bar{position:absolute;height:16px;font-size:11px;white-space:nowrap;overflow:visible;box-sizing:border-box;padding-left:3px}\n");
        h.push_str(".compiled{background:#9cc4f0}.cached{background:#c9e8c0}.up-to-date{background:#e4e4e4}.prebuilt{background:#f0e0a8}.failed{background:#f0a0a0}.crit{border:2px solid #c00}\n</style></head><body>\n");
        h.push_str("<h1>cuda-build: kernel compiles</h1>\n<table>\n");
        let row = |h: &mut String, k: &str, v: String| {
            h.push_str(&format!(
                "<tr><th>{}</th><td>{}</td></tr>\n",
                esc(k),
                esc(&v)
            ));
        };
        row(&mut h, "sources", self.compiles.len().to_string());
        row(
            &mut h,
            "compiled",
            format!("{} (nvcc time {:.1} s in all)", compiled.len(), sum),
        );
        row(
            &mut h,
            "wall time",
            format!("{:.1} s", if t1 > t0 { span } else { 0.0 }),
        );
        row(
            &mut h,
            "memory budget",
            match self.budget_bytes {
                Some(b) => format!("{} ({})", show_bytes(b), self.budget_source),
                None => self.budget_source.clone(),
            },
        );
        row(&mut h, "costliest", self.costliest_line());
        h.push_str("</table>\n<h2>Timeline</h2>\n<div class=\"tl\">\n");
        for c in &self.compiles {
            let left = (c.start - t0) / span * 100.0;
            let width = (c.secs() / span * 100.0).max(0.2);
            let class = format!(
                "bar {}{}",
                outcome_class(c.outcome),
                if c.critical { " crit" } else { "" }
            );
            h.push_str(&format!(
                "<div class=\"row\"><div class=\"{class}\" style=\"left:{left:.3}%;width:{width:.3}%\" title=\"{} {:.1} s\">{}</div></div>\n",
                esc(&c.file),
                c.secs(),
                esc(&c.file)
            ));
        }
        h.push_str("</div>\n<h2>Compiles</h2>\n<table>\n<tr><th>file</th><th>package</th><th>archs</th><th>start (s)</th><th>end (s)</th><th>time (s)</th><th>threads</th><th>split</th><th>peak memory</th><th>predicted</th><th>outcome</th><th>critical path</th><th>stopped</th><th>killed</th><th>on trial</th></tr>\n");
        for c in &self.compiles {
            let opt = |b: Option<u64>| b.map(show_bytes).unwrap_or_else(|| "–".into());
            h.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{:.2}</td><td class=\"n\">{:.2}</td><td class=\"n\">{:.2}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>\n",
                esc(&c.file),
                esc(&c.package),
                esc(&c.archs.join(", ")),
                c.start - t0,
                c.end - t0,
                c.secs(),
                c.threads,
                c.split,
                opt(c.peak_bytes),
                opt(c.predicted_bytes),
                c.outcome.as_str(),
                if c.critical { "yes" } else { "" },
                if c.stopped > 0 { c.stopped.to_string() } else { String::new() },
                if c.killed > 0 { c.killed.to_string() } else { String::new() },
                if c.trial { "yes" } else { "" }
            ));
        }
        h.push_str("</table>\n</body></html>\n");
        h
    }
}

fn outcome_class(o: Outcome) -> &'static str {
    match o {
        Outcome::Compiled => "compiled",
        Outcome::Cached => "cached",
        Outcome::UpToDate => "up-to-date",
        Outcome::Prebuilt => "prebuilt",
        Outcome::Failed => "failed",
    }
}

/// Bytes as people read them: `3.2 GB`, `512 MB` (powers of 1000).
pub fn show_bytes(bytes: u64) -> String {
    if bytes == u64::MAX {
        "unlimited".into()
    } else if bytes >= 1_000_000_000 {
        format!("{:.1} GB", bytes as f64 / 1e9)
    } else if bytes >= 1_000_000 {
        format!("{:.0} MB", bytes as f64 / 1e6)
    } else {
        format!("{:.0} KB", (bytes as f64 / 1e3).max(1.0))
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compile(file: &str, start: f64, end: f64, outcome: Outcome) -> Compile {
        Compile {
            package: "p".into(),
            module: "kernels".into(),
            file: file.into(),
            archs: vec!["sm_80".into()],
            start,
            end,
            threads: 1,
            split: 1,
            peak_bytes: Some(2_000_000_000),
            predicted_bytes: None,
            outcome,
            critical: false,
            stopped: 0,
            killed: 0,
            trial: false,
        }
    }

    #[test]
    fn costliest_merge_and_files() {
        let a = Report {
            version: VERSION,
            budget_bytes: Some(8 << 30),
            budget_source: "CUDA_BUILD_MEMORY_BUDGET".into(),
            fixed_slots: 2,
            compiles: vec![
                compile("cu/<b>.cu", 10.0, 50.0, Outcome::Compiled),
                compile("cu/a.cu", 10.0, 11.0, Outcome::Cached),
            ],
        };
        let b = Report {
            compiles: vec![
                compile("src/c.cu", 5.0, 20.0, Outcome::Compiled),
                compile("src/d.cu", 6.0, 8.0, Outcome::Compiled),
                compile("src/e.cu", 6.0, 7.0, Outcome::Compiled),
            ],
            ..a.clone()
        };
        let m = Report::merge(vec![a, b]);
        assert_eq!(m.compiles[0].file, "src/c.cu");
        assert_eq!(
            m.costliest_line(),
            "costliest kernels: <b>.cu 40.0 s (2.0 GB), c.cu 15.0 s (2.0 GB), d.cu 2.0 s (2.0 GB)"
        );
        let d = tempfile::tempdir().unwrap();
        let html = m.write(d.path(), "p").unwrap();
        let text = std::fs::read_to_string(html).unwrap();
        assert!(text.contains("cu/&lt;b&gt;.cu") && !text.contains("<b>.cu"));
        let back = Report::read(&Report::paths(d.path(), "p").0).unwrap();
        assert_eq!(back, m);
        let none = Report {
            compiles: vec![compile("a.cu", 1.0, 1.0, Outcome::UpToDate)],
            ..m
        };
        assert_eq!(
            none.costliest_line(),
            "no kernel compiled (1 from the cache or up to date)"
        );
    }
}
