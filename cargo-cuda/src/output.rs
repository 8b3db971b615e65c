//! Standard output that a closed pipe ends quietly.
//!
//! `println!` panics when stdout is closed (`cargo cuda info | head -1`).
//! Every command writes through [`write_str`] (the `outln!`/`out!` macros)
//! instead: once a write fails, stdout counts as closed, later output is
//! dropped, and the command finishes with its own exit code and no panic.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `s` to stdout, unless stdout is (or turns out to be) closed.
pub fn write_str(s: &str) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if out
        .write_all(s.as_bytes())
        .and_then(|()| out.flush())
        .is_err()
    {
        // EPIPE (the reader went away) or any other failure: the reader
        // gets nothing more; what we still have to say goes to stderr.
        CLOSED.store(true, Ordering::Relaxed);
    }
}

/// Whether a write to stdout has failed.
#[allow(dead_code)]
pub fn closed() -> bool {
    CLOSED.load(Ordering::Relaxed)
}

/// `println!` that never panics (see the module doc).
#[macro_export]
macro_rules! outln {
    () => {
        $crate::output::write_str("\n")
    };
    ($($arg:tt)*) => {
        $crate::output::write_str(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` that never panics (see the module doc).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write_str(&format!($($arg)*))
    };
}
