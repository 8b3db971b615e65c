//! `cargo cuda explain`: a log in, causes out; or a code in, its long
//! explanation out (like `rustc --explain`).

use std::ffi::{OsStr, OsString};
use std::io::IsTerminal;
use std::path::Path;

use serde_json::json;

use super::Context;
use crate::session::{Overrides, ProjectWants, Session};
use crate::style::{Style, Tone};
use cuda_toolchain::Error;

/// `cargo cuda explain`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A log file, `-` for stdin, or a diagnosis code such as `nvcc-not-found` (default: stdin).
    #[arg(value_name = "FILE|-|CODE")]
    pub input: Option<OsString>,
    /// Print `{"diagnoses": [...]}`, most likely first.
    #[arg(long)]
    pub json: bool,
    /// Do not look at this machine's toolkits and driver (for a log from another machine).
    #[arg(long)]
    pub no_detect: bool,
    /// List every code with a one-line summary, grouped by layer (driver, toolkit, compile, link, load, run).
    #[arg(long, conflicts_with = "input")]
    pub list: bool,
}

/// `cargo cuda explain`; returns the exit code.
pub fn exec(ctx: &Context, args: &Args) -> i32 {
    if args.list {
        return list(args.json, &ctx.out());
    }
    let detected = if args.no_detect {
        cuda_toolchain::diagnose::Context::default()
    } else {
        detected_context(ctx.session())
    };
    explain(
        args.input.as_deref(),
        args.json,
        &detected,
        &ctx.out(),
        &ctx.err(),
    )
}

/// What the argument names.
#[derive(Debug, PartialEq, Eq)]
pub enum Input<'a> {
    /// Standard input (`-` or nothing).
    Stdin,
    /// A log file.
    File(&'a Path),
    /// A diagnosis code.
    Code(&'a str),
}

/// A file wins over a code of the same name; a code is kebab-case ASCII.
pub fn classify(arg: Option<&OsStr>) -> Input<'_> {
    let Some(arg) = arg else { return Input::Stdin };
    if arg == "-" {
        return Input::Stdin;
    }
    let path = Path::new(arg);
    if path.exists() {
        return Input::File(path);
    }
    match arg.to_str() {
        Some(s) if looks_like_code(s) => Input::Code(s),
        _ => Input::File(path),
    }
}

fn looks_like_code(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && s.contains('-')
}

/// Codes near `wanted`: sharing a word, or a small edit distance.
pub fn close_matches(wanted: &str, codes: &[&'static str]) -> Vec<&'static str> {
    let words: Vec<&str> = wanted.split('-').filter(|w| w.len() > 2).collect();
    let mut scored: Vec<(usize, &'static str)> = codes
        .iter()
        .filter_map(|&c| {
            let d = edit_distance(wanted, c);
            let shares = c.split('-').any(|w| words.contains(&w));
            (d <= wanted.len().max(3) / 3 || shares).then_some((d, c))
        })
        .collect();
    scored.sort();
    scored.into_iter().take(5).map(|(_, c)| c).collect()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// What this machine has (toolkits, driver, GPUs), so fixes name real paths
/// and versions. Best effort: a broken explicit setting leaves the toolkits out.
pub fn detected_context(session: &Session) -> cuda_toolchain::diagnose::Context {
    let discovery = session
        .discover(&Overrides::default(), &ProjectWants::default())
        .ok();
    cuda_toolchain::diagnose::Context {
        selected: discovery.as_ref().and_then(|d| d.selected),
        toolkits: discovery.map(|d| d.candidates).unwrap_or_default(),
        probe: Some(session.probe().clone()),
    }
}

/// Explains `arg` (a code, a log file, or stdin); returns the exit code.
fn explain(
    arg: Option<&OsStr>,
    json: bool,
    ctx: &cuda_toolchain::diagnose::Context,
    out: &Style,
    err: &Style,
) -> i32 {
    match classify(arg) {
        Input::Code(code) => explain_code(code, json, out, err),
        Input::Stdin if arg.is_none() && std::io::stdin().is_terminal() => {
            // Waiting silently for a terminal to send a log would look like a hang.
            let e = Error::new("invalid-argument", "no log to explain")
                .with_help("pass a log file, `-` to read standard input, or a code such as `nvcc-not-found`")
                .with_help("e.g. `cargo build 2>&1 | cargo cuda explain -`");
            errln!("{}", err.cuda_error(&e));
            2
        }
        // Read in pieces: a log of any size in bounded memory.
        Input::Stdin => {
            match cuda_toolchain::diagnose::diagnose_reader(std::io::stdin().lock(), ctx) {
                Ok(found) => explain_log(&found, json, out),
                Err(e) => {
                    errln!(
                        "{}",
                        err.error(&format!("could not read standard input: {e}"))
                    );
                    2
                }
            }
        }
        Input::File(path) => match std::fs::File::open(path)
            .and_then(|f| cuda_toolchain::diagnose::diagnose_reader(f, ctx))
        {
            Ok(found) => explain_log(&found, json, out),
            Err(e) => {
                let e = Error::new(
                    "invalid-argument",
                    format!("could not read log file `{}`: {e}", path.display()),
                )
                .with_help("pass a log file, `-` to read standard input, or a code such as `nvcc-not-found`");
                errln!("{}", err.cuda_error(&e));
                2
            }
        },
    }
}

fn explain_code(code: &str, json: bool, out: &Style, err: &Style) -> i32 {
    use cuda_toolchain::diagnose::codes;
    if let Some(doc) = codes::lookup(code) {
        let see_also = codes::see_also(doc.code);
        if json {
            let v = json!({"code": doc.code, "title": doc.title, "layer": doc.layer, "explanation": doc.explanation, "see_also": see_also});
            outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        } else {
            outln!("{}", out.bold(&format!("{}: {}", doc.code, doc.title)));
            outln!();
            outln!("{}", doc.explanation.trim_end());
            if !see_also.is_empty() {
                outln!();
                outln!("See also: {}", see_also.join(", "));
            }
        }
        return 0;
    }
    let codes: Vec<&'static str> = cuda_toolchain::diagnose::codes::all()
        .iter()
        .map(|c| c.code)
        .collect();
    let close = close_matches(code, &codes);
    let mut e = Error::new(
        "unknown-code",
        format!("`{code}` is not a known diagnosis code"),
    );
    if close.is_empty() {
        e = e.with_help(format!("known codes: {}", codes.join(", ")));
    } else {
        e = e.with_help(format!("did you mean: {}?", close.join(", ")));
    }
    errln!("{}", err.cuda_error(&e));
    1
}

/// `cargo cuda explain --list [--json]`: every code with its one-line
/// summary, grouped by layer (driver, toolkit, compile, link, load, run).
pub fn list(json: bool, out: &Style) -> i32 {
    use cuda_toolchain::diagnose::{codes, Layer};
    if json {
        let layers: Vec<_> = Layer::ALL
            .iter()
            .map(|l| {
                let list: Vec<_> = codes::in_layer(*l)
                    .map(|d| json!({"code": d.code, "summary": d.title, "see_also": codes::see_also(d.code)}))
                    .collect();
                json!({"layer": l.as_str(), "codes": list})
            })
            .collect();
        let v = json!({"count": codes::all().len(), "layers": layers});
        outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return 0;
    }
    let width = codes::all().iter().map(|d| d.code.len()).max().unwrap_or(0);
    for (i, layer) in Layer::ALL.iter().enumerate() {
        if i > 0 {
            outln!();
        }
        outln!("{}", out.bold(layer.as_str()));
        for d in codes::in_layer(*layer) {
            outln!("  {:width$}  {}", d.code, d.title);
        }
    }
    outln!();
    outln!(
        "{} codes; `cargo cuda explain CODE` explains one",
        codes::all().len()
    );
    0
}

fn explain_log(found: &[cuda_toolchain::diagnose::Diagnosis], json: bool, out: &Style) -> i32 {
    if json {
        // Diagnosis serialises as the documented schema: code, title,
        // evidence, cause, fix, plus layer, confidence and alternatives.
        outln!(
            "{}",
            serde_json::to_string_pretty(&json!({"diagnoses": found})).unwrap_or_default()
        );
    } else if found.is_empty() {
        outln!("no known CUDA failure found");
    } else {
        for (i, d) in found.iter().enumerate() {
            if i > 0 {
                outln!();
            }
            outln!("{}", cuda_toolchain::diagnose::render(d));
        }
        if found.len() > 1 {
            outln!();
            outln!(
                "{}",
                out.status(Tone::Note, "Note", "diagnoses are listed most likely first")
            );
        }
    }
    // Like a linter: a known failure found (printed as `error[code]`) exits 1;
    // a log with nothing known in it is not an error.
    if found.is_empty() {
        0
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_codes_files_and_stdin() {
        assert_eq!(classify(None), Input::Stdin);
        assert_eq!(classify(Some(OsStr::new("-"))), Input::Stdin);
        assert_eq!(
            classify(Some(OsStr::new("nvcc-not-found"))),
            Input::Code("nvcc-not-found")
        );
        assert_eq!(
            classify(Some(OsStr::new("/etc/hostname"))),
            Input::File(Path::new("/etc/hostname"))
        );
        assert_eq!(
            classify(Some(OsStr::new("build.log"))),
            Input::File(Path::new("build.log"))
        );
    }

    #[test]
    fn close_matches_find_typos_and_shared_words() {
        let codes = [
            "nvcc-not-found",
            "ptx-isa-too-new",
            "host-compiler-too-new",
            "driver-not-loaded",
        ];
        assert_eq!(close_matches("nvcc-not-fund", &codes)[0], "nvcc-not-found");
        let m = close_matches("compiler-too-old", &codes);
        assert!(m.contains(&"host-compiler-too-new"), "{m:?}");
        assert!(close_matches("zzzz-qqqq", &codes).is_empty());
    }
}
