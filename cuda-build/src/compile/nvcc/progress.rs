//! The progress side channel: when `CARGO_CUDA_PROGRESS` names a file, each
//! compile event is appended to it as one JSON line, for `cargo cuda build`:
//!
//! ```text
//! {"event":"start","file":"cu/saxpy.cu","archs":"sm_80,sm_90,compute_90","done":0,"total":12}
//! {"event":"done","file":"cu/saxpy.cu","archs":"sm_80,sm_90,compute_90","done":1,"total":12}
//! ```
//!
//! `event` is `start`, `done` (compiled), `cached` (served from the cache or
//! already up to date) or `failed`; `done` counts finished sources. Each
//! line is written with one `write` on a file opened for appending, so lines
//! from parallel jobs and from several build scripts do not interleave.
//! Failing to write progress never fails the build.

use cuda_toolchain::env::{Env, Var};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// What happened to one source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Event {
    /// nvcc started on it.
    Start,
    /// Compiled.
    Done,
    /// Served from the cache, or already up to date.
    Cached,
    /// nvcc failed.
    Failed,
}

/// One line of the side channel; `cargo cuda` reads the same type.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProgressEvent {
    /// What happened.
    pub event: Event,
    /// The source file.
    pub file: String,
    /// Its targets, e.g. `sm_80,sm_90,compute_90`.
    pub archs: String,
    /// Sources finished so far.
    pub done: u64,
    /// Sources in this build.
    pub total: u64,
}

pub(crate) struct Progress {
    path: Option<PathBuf>,
    total: usize,
    done: AtomicUsize,
    lock: Mutex<()>,
}

impl Progress {
    pub(crate) fn new(env: &Env, total: usize) -> Progress {
        Progress {
            path: env
                .get_os(Var::CargoCudaProgress)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            total,
            done: AtomicUsize::new(0),
            lock: Mutex::new(()),
        }
    }

    pub(crate) fn event(&self, event: Event, file: &str, archs: &str) {
        let done = if event == Event::Start {
            self.done.load(Ordering::SeqCst)
        } else {
            self.done.fetch_add(1, Ordering::SeqCst) + 1
        };
        let Some(path) = &self.path else { return };
        let line = ProgressEvent {
            event,
            file: file.to_string(),
            archs: archs.to_string(),
            done: done as u64,
            total: self.total as u64,
        };
        let mut text = serde_json::to_string(&line).unwrap_or_default();
        text.push('\n');
        let _guard = self.lock.lock();
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = f.write_all(text.as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_json_with_counts() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("progress.jsonl");
        let env = Env::empty().set(Var::CargoCudaProgress, &p);
        let pr = Progress::new(&env, 2);
        pr.event(Event::Start, "cu/a.cu", "sm_90");
        pr.event(Event::Done, "cu/a.cu", "sm_90");
        pr.event(Event::Cached, "cu/b.cu", "sm_90");
        let text = std::fs::read_to_string(&p).unwrap();
        let v: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(v.len(), 3);
        assert_eq!(v[0]["event"], "start");
        assert_eq!(v[0]["done"], 0);
        assert_eq!(v[1]["done"], 1);
        assert_eq!(v[2]["event"], "cached");
        assert_eq!(v[2]["done"], 2);
        assert_eq!(v[2]["total"], 2);
        assert_eq!(v[1]["archs"], "sm_90");
    }
}
