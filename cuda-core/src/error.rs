//! The one error type of `cuda-core`.
//!
//! Every error names what was wrong (a variable, a file or a flag), what was
//! expected, and how to fix it, in the style of rustc:
//!
//! ```text
//! error[toolkit-not-found]: CUDA_HOME is set to `/opt/cuda-12.9`, which does not exist
//!   = help: point CUDA_HOME at the directory that holds bin/nvcc, or unset it
//! ```

use std::fmt;

/// An error with a stable diagnosis code, the subject it is about, and fixes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Error {
    /// A stable, kebab-case diagnosis code (see [`crate::diagnose::codes`]).
    pub code: &'static str,
    /// One line: what went wrong, naming the variable, file or flag.
    pub message: String,
    /// Further lines of context (for example a compiler's full stderr).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// What the user can do about it, most useful first.
    pub help: Vec<String>,
}

impl Error {
    /// A new error with a diagnosis code and a one-line message.
    ///
    /// ```
    /// let e = cuda_core::Error::new("nvcc-not-found", "no CUDA toolkit was found")
    ///     .with_help("set CUDA_HOME to the toolkit's root directory");
    /// assert!(e.to_string().contains("help: set CUDA_HOME"));
    /// ```
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
            detail: None,
            help: Vec::new(),
        }
    }

    /// Adds a `help:` line.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help.push(help.into());
        self
    }

    /// Adds a block of detail (shown indented under the message).
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        let detail = detail.into();
        self.detail = match self.detail.take() {
            Some(old) => Some(format!("{old}\n{detail}")),
            None => Some(detail),
        };
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error[{}]: {}", self.code, self.message)?;
        if let Some(detail) = &self.detail {
            for line in detail.lines() {
                write!(f, "\n  | {line}")?;
            }
        }
        for help in &self.help {
            write!(f, "\n  = help: {help}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// Shorthand for results in this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
