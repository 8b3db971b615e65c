//! Cargo-style terminal output: right-aligned bold status words, coloured
//! only when the user and the terminal allow it.

use cuda_toolchain::env::{Env, Var};

use crate::output::{self, Stream};

/// When to colour output (`--color`, else `CARGO_TERM_COLOR`, else `NO_COLOR`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour when the stream is a terminal and NO_COLOR is unset.
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

/// The colour a status word is painted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// Bold green (cargo's `Compiling`).
    Good,
    /// Bold yellow (`warning`).
    Warn,
    /// Bold red (`error`).
    Bad,
    /// Bold cyan (notes, skipped checks).
    Note,
    /// Dimmed.
    Dim,
}

/// Decides once whether to colour, then paints text.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    color: bool,
}

impl Style {
    /// Resolves the colour choice for `stream` (a tty check is per stream).
    ///
    /// An explicit `--color` wins; then `CARGO_TERM_COLOR` (cargo's own
    /// setting, so `cargo cuda` matches cargo); then any `NO_COLOR` turns
    /// colour off; otherwise colour only when the stream is a terminal.
    pub fn new(env: &Env, flag: Option<ColorChoice>, stream: Stream) -> Style {
        let from_env = match env.get_nonempty(Var::CargoTermColor).map(str::trim) {
            Some("always") => Some(ColorChoice::Always),
            Some("never") => Some(ColorChoice::Never),
            _ => None,
        };
        let choice = flag.or(from_env).unwrap_or_else(|| {
            if env.get_os(Var::NoColor).is_some_and(|v| !v.is_empty()) {
                ColorChoice::Never
            } else {
                ColorChoice::Auto
            }
        });
        let color = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => output::is_terminal(stream),
        };
        Style { color }
    }

    /// A style that never colours (for tests and captured output).
    #[cfg(test)]
    pub fn plain() -> Style {
        Style { color: false }
    }

    /// Whether this style emits ANSI codes.
    pub fn colored(&self) -> bool {
        self.color
    }

    /// Paints `text` bold in `tone`.
    pub fn paint(&self, tone: Tone, text: &str) -> String {
        if !self.color {
            return text.to_string();
        }
        let code = match tone {
            Tone::Good => "1;32",
            Tone::Warn => "1;33",
            Tone::Bad => "1;31",
            Tone::Note => "1;36",
            Tone::Dim => "2",
        };
        format!("\x1b[{code}m{text}\x1b[0m")
    }

    /// Bold, no colour.
    pub fn bold(&self, text: &str) -> String {
        if self.color {
            format!("\x1b[1m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    /// A cargo-style line: the status word right-aligned in 12 columns, then the message.
    ///
    /// ```text
    ///     Finished doctor: 9 passed
    /// ```
    pub fn status(&self, tone: Tone, word: &str, message: &str) -> String {
        format!("{} {message}", self.paint(tone, &format!("{word:>12}")))
    }

    /// `error: message` (plus `= help:` lines), as cargo prints errors.
    pub fn error(&self, message: &str) -> String {
        format!("{}: {message}", self.paint(Tone::Bad, "error"))
    }

    /// `warning: message`.
    pub fn warning(&self, message: &str) -> String {
        format!("{}: {message}", self.paint(Tone::Warn, "warning"))
    }

    /// A `cuda_toolchain::Error` in rustc style, with its code, detail and help lines.
    pub fn cuda_error(&self, e: &cuda_toolchain::Error) -> String {
        let mut s = format!(
            "{}: {}",
            self.paint(Tone::Bad, &format!("error[{}]", e.code)),
            e.message
        );
        if let Some(detail) = &e.detail {
            for line in detail.lines() {
                s.push_str(&format!("\n  | {line}"));
            }
        }
        for help in &e.help {
            s.push_str(&format!("\n  = {}: {help}", self.bold("help")));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_term_color_beats_no_color_and_flag_beats_both() {
        let env = Env::empty()
            .set(Var::NoColor, "1")
            .set(Var::CargoTermColor, "always");
        assert!(Style::new(&env, None, Stream::Stdout).colored());
        assert!(!Style::new(&env, Some(ColorChoice::Never), Stream::Stdout).colored());
        let env = Env::empty().set(Var::NoColor, "1");
        assert!(!Style::new(&env, None, Stream::Stdout).colored());
        assert!(Style::new(&env, Some(ColorChoice::Always), Stream::Stdout).colored());
    }

    #[test]
    fn status_is_right_aligned_and_plain_without_colour() {
        let s = Style::plain();
        assert_eq!(s.status(Tone::Good, "Finished", "x"), "    Finished x");
        let c = Style { color: true };
        assert!(c.status(Tone::Bad, "fail", "x").contains("\x1b[1;31m"));
    }
}
