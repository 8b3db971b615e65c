//! Standard output and standard error, written so that a closed pipe ends
//! the output quietly: the one module that touches either stream.
//!
//! `println!` and `eprintln!` panic when their stream is gone
//! (`cargo cuda inspect BINARY | head -1`). Commands print through
//! [`outln!`](crate::outln) (stdout) and [`errln!`](crate::errln)
//! (stderr) instead, and the cargo wrapper passes
//! cargo's bytes through [`write_bytes`]. Once a write to a stream fails,
//! that stream counts as closed and later output to it is dropped; the
//! command finishes with the exit code it has with a full reader, and no
//! panic. `#![deny(clippy::print_stdout, clippy::print_stderr)]` in main.rs
//! and `tests/closed_stdout.rs` keep every other module from writing directly.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// One of the two output streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output: results.
    Stdout,
    /// Standard error: errors, warnings and progress.
    Stderr,
}

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
static STDERR_CLOSED: AtomicBool = AtomicBool::new(false);

fn closed_flag(stream: Stream) -> &'static AtomicBool {
    match stream {
        Stream::Stdout => &STDOUT_CLOSED,
        Stream::Stderr => &STDERR_CLOSED,
    }
}

/// Writes `bytes` to `stream` and flushes, unless the stream is (or turns
/// out to be) closed.
pub fn write_bytes(stream: Stream, bytes: &[u8]) {
    let closed = closed_flag(stream);
    if closed.load(Ordering::Relaxed) {
        return;
    }
    let result = match stream {
        Stream::Stdout => {
            let mut out = std::io::stdout().lock();
            out.write_all(bytes).and_then(|()| out.flush())
        }
        Stream::Stderr => {
            let mut err = std::io::stderr().lock();
            err.write_all(bytes).and_then(|()| err.flush())
        }
    };
    if result.is_err() {
        // EPIPE (the reader went away) or any other failure: the reader
        // gets nothing more, and nothing here panics.
        closed.store(true, Ordering::Relaxed);
    }
}

/// [`write_bytes`] for text (what the macros call). Every line a command
/// prints passes here, so none can show a credential: a URL's password is
/// masked ([`cuda_toolchain::redact`]). cargo's own bytes, passed through
/// [`write_bytes`], are cargo's.
pub fn write_str(stream: Stream, s: &str) {
    write_bytes(
        stream,
        cuda_toolchain::redact::mask_credentials(s).as_bytes(),
    );
}

/// Whether `stream` is a terminal (for colour and the in-place progress line).
pub fn is_terminal(stream: Stream) -> bool {
    match stream {
        Stream::Stdout => std::io::stdout().is_terminal(),
        Stream::Stderr => std::io::stderr().is_terminal(),
    }
}

/// `println!` that never panics (see the module doc).
#[macro_export]
macro_rules! outln {
    () => {
        $crate::output::write_str($crate::output::Stream::Stdout, "\n")
    };
    ($($arg:tt)*) => {
        $crate::output::write_str(
            $crate::output::Stream::Stdout,
            &format!("{}\n", format_args!($($arg)*)),
        )
    };
}

/// `eprintln!` that never panics (see the module doc).
#[macro_export]
macro_rules! errln {
    () => {
        $crate::output::write_str($crate::output::Stream::Stderr, "\n")
    };
    ($($arg:tt)*) => {
        $crate::output::write_str(
            $crate::output::Stream::Stderr,
            &format!("{}\n", format_args!($($arg)*)),
        )
    };
}
