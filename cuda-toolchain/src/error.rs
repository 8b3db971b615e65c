//! The one error type of `cuda-toolchain`.
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
    /// let e = cuda_toolchain::Error::new("nvcc-not-found", "no CUDA toolkit was found")
    ///     .with_help("set CUDA_HOME to the toolkit's root directory");
    /// assert!(e.to_string().contains("help: set CUDA_HOME"));
    /// ```
    ///
    /// The message, help and detail never hold a credential: a URL's
    /// password is masked as they are made ([`crate::redact`]).
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Error {
            code,
            message: masked(message.into()),
            detail: None,
            help: Vec::new(),
        }
    }

    /// Adds a `help:` line.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help.push(masked(help.into()));
        self
    }

    /// Adds a block of detail (shown indented under the message).
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        let detail = masked(detail.into());
        self.detail = match self.detail.take() {
            Some(old) => Some(format!("{old}\n{detail}")),
            None => Some(detail),
        };
        self
    }
}

/// What kind of failure an [`Error`] is, for code that reacts to it
/// (`match e.kind()`); the [`Error::code`] stays the precise, displayed name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// No toolkit, or the one a setting names is missing or broken.
    ToolkitNotFound,
    /// The toolkit is incomplete, mixed or of the wrong version.
    ToolkitInvalid,
    /// The host C++ compiler is missing, unidentified or unsupported.
    HostCompiler,
    /// An arch list or arch flag is invalid, or no arch could be chosen.
    Arch,
    /// Sources, include directories or settings of the build are wrong.
    InvalidInput,
    /// nvcc ran and failed.
    CompileFailed,
    /// nvcc (or a probe) was killed after its time-out.
    Timeout,
    /// The static library could not be archived.
    Archive,
    /// Writing an output failed (disk full, not writable).
    Io,
    /// The driver, a GPU or a runtime library (probing and diagnosis).
    Driver,
    /// Anything else.
    Other,
}

impl ErrorKind {
    /// The kind for a diagnosis code.
    ///
    /// ```
    /// use cuda_toolchain::{Error, ErrorKind};
    /// assert_eq!(Error::new("nvcc-failed", "x").kind(), ErrorKind::CompileFailed);
    /// ```
    pub fn of_code(code: &str) -> ErrorKind {
        match code {
            "nvcc-not-found" | "cuda-home-invalid" | "nvcc-not-executable" => {
                ErrorKind::ToolkitNotFound
            }
            "toolkit-incomplete"
            | "toolkit-requirement"
            | "toolkit-version-mismatch"
            | "nvcc-bad-version"
            | "nvcc-symlink"
            | "ptxas-too-old" => ErrorKind::ToolkitInvalid,
            c if c.starts_with("host-compiler") => ErrorKind::HostCompiler,
            c if c.starts_with("arch-") => ErrorKind::Arch,
            "source-not-found"
            | "no-cuda-sources"
            | "include-dir-missing"
            | "invalid-module-name"
            | "invalid-link-modifier"
            | "out-dir-unset"
            | "metadata-invalid"
            | "launchers-feature-off"
            | "launchers-source-unreadable"
            | "libclang-not-found"
            | "nvcc-unknown-option" => ErrorKind::InvalidInput,
            "nvcc-failed" | "device-function-unresolved" => ErrorKind::CompileFailed,
            "nvcc-timeout" => ErrorKind::Timeout,
            "archive-failed" => ErrorKind::Archive,
            "disk-full" | "out-dir-not-writable" | "write-failed" => ErrorKind::Io,
            c if c.starts_with("driver-")
                || c.starts_with("libcuda")
                || c.starts_with("cuda-")
                || c.contains("device") =>
            {
                ErrorKind::Driver
            }
            _ => ErrorKind::Other,
        }
    }
}

impl Error {
    /// What kind of failure this is (from its [`code`](Error::code)).
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::of_code(self.code)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Masked again: the fields are public and may have changed since.
        let mask = crate::redact::mask_credentials;
        write!(f, "error[{}]: {}", self.code, mask(&self.message))?;
        if let Some(detail) = &self.detail {
            for line in detail.lines() {
                write!(f, "\n  | {}", mask(line))?;
            }
        }
        for help in &self.help {
            write!(f, "\n  = help: {}", mask(help))?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// Shorthand for results in this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `text` with its credentials masked, owned.
fn masked(text: String) -> String {
    match crate::redact::mask_credentials(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(m) => m,
    }
}

/// A value for a message: credentials masked ([`crate::redact`]), quoted,
/// control characters escaped, and cut after 60 characters (a 10 kB value
/// must not fill the terminal).
///
/// ```
/// use cuda_toolchain::env::show_value;
/// assert_eq!(show_value("redis://:pw"), "`redis://:***`");
/// ```
pub fn show_value(value: &str) -> String {
    const MAX: usize = 60;
    let value = crate::redact::mask_credentials(value);
    let escaped: String = value.escape_debug().collect();
    if escaped.chars().count() <= MAX {
        format!("`{escaped}`")
    } else {
        let cut: String = escaped.chars().take(MAX).collect();
        format!("`{cut}…` ({} bytes)", value.len())
    }
}
