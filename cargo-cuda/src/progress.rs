//! Kernel-build progress from cuda-build's side channel.
//!
//! cargo captures build-script output, so cuda-build appends one JSON line
//! per event to the file named by `CARGO_CUDA_PROGRESS`:
//! `{"event":"start"|"done"|"cached"|"failed","file":"…","archs":"sm_80,sm_90","done":3,"total":12}`.
//! We tail that file and, once a kernel build has run for more than
//! [`SHOW_AFTER`], show files done/total and the current file on stderr.

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::output::{self, Stream};
use crate::style::{Style, Tone};

/// Quick kernel builds stay silent; slower ones show progress.
pub const SHOW_AFTER: Duration = Duration::from_secs(2);

/// One progress event: the type cuda-build writes.
pub use cuda_build::compile::ProgressEvent as Event;
use cuda_build::compile::ProgressKind;

/// Parses one line of the side channel; anything malformed is ignored.
pub fn parse_event(line: &str) -> Option<Event> {
    serde_json::from_str(line.trim()).ok()
}

/// What the progress line says now.
#[derive(Debug, Default)]
pub struct State {
    first_start: Option<Instant>,
    /// Files being compiled now, oldest first (cuda-build compiles in
    /// parallel, so one finishing says nothing about the others).
    running: Vec<(String, String)>,
    done: u64,
    total: u64,
}

impl State {
    /// Applies one event.
    pub fn apply(&mut self, e: &Event, now: Instant) {
        self.done = e.done;
        self.total = e.total.max(e.done);
        if e.event == ProgressKind::Start {
            self.first_start.get_or_insert(now);
            self.running.push((e.file.clone(), e.archs.clone()));
        } else {
            self.running.retain(|(f, _)| *f != e.file);
        }
        if self.total > 0 && self.done >= self.total {
            // This kernel build is over; the next one starts its own clock.
            self.first_start = None;
            self.running.clear();
        }
    }

    /// The line to show, once the build has run longer than [`SHOW_AFTER`].
    pub fn line(&self, now: Instant) -> Option<String> {
        let started = self.first_start?;
        if now.duration_since(started) < SHOW_AFTER {
            return None;
        }
        let (file, archs) = self.running.first()?;
        let archs = match archs.split(',').collect::<Vec<_>>().as_slice() {
            [""] => String::new(),
            // A long list would wrap, and a wrapped line cannot be redrawn in place.
            [first, .., last] if archs.len() > 40 => {
                format!(" ({first}..{last}, {} targets)", archs.split(',').count())
            }
            _ => format!(" ({archs})"),
        };
        let more = match self.running.len() - 1 {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        Some(format!("{}/{} {file}{archs}{more}", self.done, self.total))
    }
}

/// The stderr we share with cargo's teed output, so a progress line is
/// cleared before cargo's text is written and never splits it.
pub struct Terminal {
    inner: Mutex<TermState>,
    tty: bool,
    style: Style,
}

struct TermState {
    shown: Option<String>,
}

impl Terminal {
    /// A terminal on our stderr; `tty` selects an in-place line over plain lines.
    pub fn new(tty: bool, style: Style) -> Arc<Terminal> {
        Arc::new(Terminal {
            inner: Mutex::new(TermState { shown: None }),
            tty,
            style,
        })
    }

    /// Writes cargo's stderr (or, with `to_stdout`, stdout) bytes, clearing
    /// our progress line first: both streams usually share one terminal.
    pub fn write_passthrough(&self, bytes: &[u8], to_stdout: bool) {
        let mut st = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if self.tty && st.shown.take().is_some() {
            output::write_bytes(Stream::Stderr, b"\r\x1b[K");
        }
        let stream = if to_stdout {
            Stream::Stdout
        } else {
            Stream::Stderr
        };
        output::write_bytes(stream, bytes);
    }

    /// Shows (or clears, with `None`) the progress line.
    pub fn show(&self, line: Option<String>) {
        let mut st = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if st.shown == line {
            return;
        }
        match &line {
            Some(l) => {
                let text = self.style.status(Tone::Note, "Kernels", l);
                if self.tty {
                    output::write_str(Stream::Stderr, &format!("\r\x1b[K{text}"));
                } else {
                    output::write_str(Stream::Stderr, &format!("{text}\n"));
                }
            }
            None if self.tty && st.shown.is_some() => {
                output::write_bytes(Stream::Stderr, b"\r\x1b[K");
            }
            None => {}
        }
        st.shown = line;
    }
}

/// Tails the progress file on a thread until [`Tail::stop`].
pub struct Tail {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Tail {
    /// Starts tailing `path` and drawing on `term`.
    pub fn start(path: PathBuf, term: Arc<Terminal>) -> Tail {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut state = State::default();
            let mut offset = 0u64;
            let mut partial = String::new();
            while !flag.load(Ordering::SeqCst) {
                if let Ok(mut f) = std::fs::File::open(&path) {
                    if f.seek(SeekFrom::Start(offset)).is_ok() {
                        let mut buf = Vec::new();
                        if let Ok(n) = f.read_to_end(&mut buf) {
                            offset += n as u64;
                            partial.push_str(&String::from_utf8_lossy(&buf));
                        }
                    }
                }
                while let Some(nl) = partial.find('\n') {
                    let line: String = partial.drain(..=nl).collect();
                    if let Some(e) = parse_event(&line) {
                        state.apply(&e, Instant::now());
                    }
                }
                term.show(state.line(Instant::now()));
                std::thread::sleep(Duration::from_millis(100));
            }
            term.show(None);
        });
        Tail {
            stop,
            handle: Some(handle),
        }
    }

    /// Stops the thread and clears the line.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, file: &str, done: u64, total: u64) -> Event {
        parse_event(&format!(
            r#"{{"event":"{event}","file":"{file}","archs":"sm_80,sm_90","done":{done},"total":{total}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn parses_events_and_ignores_garbage() {
        assert_eq!(ev("start", "cu/a.cu", 0, 3).archs, "sm_80,sm_90");
        assert_eq!(parse_event("not json"), None);
        assert_eq!(parse_event("{}"), None);
    }

    #[test]
    fn silent_for_quick_builds_then_shows_current_file() {
        let t0 = Instant::now();
        let mut s = State::default();
        s.apply(&ev("start", "cu/a.cu", 0, 3), t0);
        assert_eq!(s.line(t0 + Duration::from_millis(500)), None);
        s.apply(&ev("done", "cu/a.cu", 1, 3), t0 + Duration::from_secs(1));
        s.apply(
            &ev("start", "cu/sgemm.cu", 1, 3),
            t0 + Duration::from_secs(1),
        );
        assert_eq!(
            s.line(t0 + Duration::from_secs(3)).as_deref(),
            Some("1/3 cu/sgemm.cu (sm_80,sm_90)")
        );
        s.apply(&ev("cached", "cu/b.cu", 2, 3), t0 + Duration::from_secs(3));
        s.apply(
            &ev("done", "cu/sgemm.cu", 3, 3),
            t0 + Duration::from_secs(4),
        );
        assert_eq!(
            s.line(t0 + Duration::from_secs(5)),
            None,
            "finished builds show nothing"
        );
    }

    #[test]
    fn parallel_compiles_keep_the_line_until_the_last_one_ends() {
        let t0 = Instant::now();
        let mut s = State::default();
        s.apply(&ev("start", "cu/a.cu", 0, 3), t0);
        s.apply(&ev("start", "cu/b.cu", 0, 3), t0);
        assert_eq!(
            s.line(t0 + Duration::from_secs(3)).as_deref(),
            Some("0/3 cu/a.cu (sm_80,sm_90) and 1 more")
        );
        // b finishing first leaves a on the line, not a blank.
        s.apply(&ev("done", "cu/b.cu", 1, 3), t0 + Duration::from_secs(3));
        assert_eq!(
            s.line(t0 + Duration::from_secs(4)).as_deref(),
            Some("1/3 cu/a.cu (sm_80,sm_90)")
        );
        s.apply(&ev("failed", "cu/a.cu", 2, 3), t0 + Duration::from_secs(4));
        assert_eq!(s.line(t0 + Duration::from_secs(5)), None);
        // Many targets are summarised so the line stays short.
        let many = parse_event(
            r#"{"event":"start","file":"cu/k.cu","archs":"sm_75,sm_80,sm_86,sm_89,sm_90,sm_100,sm_120,compute_120","done":2,"total":3}"#,
        )
        .unwrap();
        s.apply(&many, t0 + Duration::from_secs(5));
        assert_eq!(
            s.line(t0 + Duration::from_secs(8)).as_deref(),
            Some("2/3 cu/k.cu (sm_75..compute_120, 8 targets)")
        );
        s.apply(&ev("done", "cu/k.cu", 3, 3), t0 + Duration::from_secs(8));
        assert_eq!(s.line(t0 + Duration::from_secs(5)), None);
    }
}
