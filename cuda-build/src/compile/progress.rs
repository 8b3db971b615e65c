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

use crate::env::{Env, Var};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// What happened to one source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    Start,
    Done,
    Cached,
    Failed,
}

impl Event {
    fn name(self) -> &'static str {
        match self {
            Event::Start => "start",
            Event::Done => "done",
            Event::Cached => "cached",
            Event::Failed => "failed",
        }
    }
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
        let line = serde_json::json!({
            "event": event.name(),
            "file": file,
            "archs": archs,
            "done": done,
            "total": self.total,
        });
        let mut text = line.to_string();
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
