//! Pass 1: find the lines that matter and pull facts out of them.
//!
//! One linear pass: a single multi-literal automaton (Aho-Corasick) built
//! from every rule's triggers finds candidate lines; only
//! those lines are normalised (ANSI colour codes, CR, NUL, indentation;
//! curly quotes are left alone: rules avoid apostrophes) and handed to the rules whose triggers they contain (`rules.rs`).
//! Lines longer than [`MAX_LINE`] are read in windows around each match, so
//! memory stays bounded on a 1 GB line. Input of any size and content is fine.

use super::codes::Code;
use super::rules::RULES;
use crate::cuda_errors::CudaError;
use std::sync::OnceLock;

/// What a matched line says, beyond its code.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Fact {
    /// Nothing more than the code.
    None,
    /// A sentence that explains this particular form of the message.
    Note(&'static str),
    /// nvcc rejected an architecture (`sm_70`, `compute_89`) given to an option.
    Arch { name: String, option: String },
    /// ptxas (or the driver JIT) refused PTX `.version ptx`; it knows up to `current`.
    PtxVersion {
        ptx: (u32, u32),
        current: (u32, u32),
        jit: bool,
        nvcc_tmp: bool,
    },
    /// ptxas does not know `.target`.
    PtxTarget {
        target: String,
        jit: bool,
        nvcc_tmp: bool,
    },
    /// An instruction needs a higher target (`sm_90`) or the arch-specific one (`sm_90a`).
    Feature {
        feature: String,
        needs: String,
        arch_specific: bool,
        /// The target that lacks it (`sm_90`), when ptxas names it.
        target: Option<String>,
    },
    /// host_config.h refused the host compiler.
    Host { kind: HostKind, limit: Option<u32> },
    /// A header was not found.
    Header(String),
    /// A shared library was not found (at link time or load time).
    Library { name: String, link_time: bool },
    /// A CUresult / cudaError_t, found by name or message (or only by number).
    Cuda {
        err: &'static CudaError,
        by_number: bool,
    },
    /// cuda-build's own `error[code]: message` with its `= help:` lines.
    Own { message: String, help: Vec<String> },
    /// A GPU's architecture named in the message (PyTorch's "sm_120 is not compatible").
    GpuArch(u32),
    /// The host compiler path that does not exist.
    MissingProgram(String),
    /// A symbol or option named by the message (`_Z6helperf`, `-Wall`).
    Symbol(String),
    /// A value the message names, explained by the code's explainer (a
    /// toolkit version, a colon-joined path list).
    Text(String),
    /// ptxas refused a kernel over a per-kernel limit of its target: which
    /// limit, the kernel's (mangled) name, and the bytes used and allowed.
    KernelLimit {
        what: KernelLimit,
        kernel: Option<String>,
        used: Option<u64>,
        max: Option<u64>,
    },
}

/// The per-kernel limits ptxas checks (`kernel_limits.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KernelLimit {
    /// Static `__shared__` memory: 48 KB per block.
    Shared,
    /// Kernel parameters: 4 KB, or 32,764 bytes with CUDA 12.1+ on sm_70+.
    Params,
}

/// A kernel builder a log shows, by its own words (found, and its knob
/// for fewer compiles at once given, in `build_oom.rs`). cargo's `-j` bounds
/// none of the first two: they run their own thread pools of nvcc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Builder {
    /// cudaforge (candle-kernels, mistral.rs, attention.rs): `Using N
    /// threads for compilation`, `Compiling N of M kernels`,
    /// `CompilationFailed { path: .., message: "nvcc error:\n\n" }`.
    Cudaforge,
    /// bindgen_cuda (older candle): `nvcc error while executing compiling`,
    /// its panic location `bindgen_cuda-0.1.x/src/lib.rs`.
    BindgenCuda,
    /// cuda-build (this project): its `cuda-build:` notes and errors.
    CudaBuild,
    /// PyTorch's extension build (setup.py, pip, ninja): MAX_JOBS.
    TorchExtension,
    /// CMake with make or ninja.
    Cmake,
    /// cargo, with no kernel builder named: its `-j` bounds only the
    /// build scripts that take its jobserver.
    Cargo,
}

/// Host compiler families host_config.h checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HostKind {
    Gcc,
    Clang,
    Msvc,
    Icx,
    /// Xcode's Apple clang, refused by a macOS CUDA (the last was 10.2).
    AppleClang,
    /// `Host compiler targets unsupported OS`: the compiler's target, not its
    /// version; `unix` when the lines around it show a Unix build.
    Target {
        unix: bool,
    },
}

/// One matched line.
#[derive(Debug, Clone)]
pub(crate) struct Hit {
    /// The diagnosis code (arch and PTX facts are resolved again with the whole log).
    pub code: Code,
    /// Byte offset of the line (orders diagnoses that tie).
    pub offset: usize,
    /// The normalised line.
    pub evidence: String,
    pub fact: Fact,
    /// How sure this line alone makes us.
    pub confidence: f32,
}

/// Everything pass 1 found.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    pub hits: Vec<Hit>,
    /// `Cuda compilation tools, release 12.4` seen in the log.
    pub nvcc_release: Option<(u32, u32)>,
    /// nvidia-smi's banner: driver version and CUDA version.
    pub smi_driver: Option<String>,
    pub smi_cuda: Option<(u32, u32)>,
    /// `failed to run custom build command for `crate v1.0``.
    pub build_script: Option<String>,
    /// The log shows a module being loaded / JIT-compiled (so ptxas messages are the driver's).
    pub jit_context: bool,
    /// The log mentions bf16 or candle, whose bf16 kernels exist only from sm_80 on.
    pub bf16_context: bool,
    /// The last architecture an option line asked for (`--gpu-architecture=sm_89`),
    /// for a compiler that rejects its options without naming one (NVRTC).
    pub arch_option: Option<String>,
    /// The lowest `sm_XY` an nvcc command line in the log targets (as XY).
    pub lowest_cmd_arch: Option<u32>,
    /// The kernel module's version and the line that shows it.
    pub kernel_module: Option<(String, String)>,
    /// A user-space driver package's version (dpkg) and its line.
    pub user_driver: Option<(String, String)>,
    /// A line that shows the driver lost the GPU's state (a resume from
    /// suspend, an Xid fault): later generic errors are that, not a kernel's.
    pub driver_fault: Option<String>,
    /// The CUDA dependency a build step announced it is fetching
    /// (`Cloning cutlass from ...`), for a failure that does not name it.
    pub fetching: Option<&'static str>,
    /// Where the last line that talks about allocating device memory ends
    /// (`Allocating 640 MB for the KV cache`), for a generic error after it.
    pub allocating: Option<usize>,
    /// The log shows a build running (cargo's `Compiling`, an nvcc command,
    /// CMake/make/ninja, a wheel build), for a kill that does not name the compiler.
    pub building: bool,
    /// The log shows a built program running (cargo's `Running`, a Python
    /// traceback): a kill after that is the program's.
    pub program_ran: bool,
    /// The kernel builders the log shows, in the order first seen: each
    /// has its own knob for how many nvcc processes run at once.
    pub builders: Vec<Builder>,
    /// The framework said its CUDA library notices may be ignored without a
    /// GPU (TensorFlow's `Ignore above cudart dlerror ...`).
    pub gpu_optional: bool,
    /// Hits kept per (code, fact kind), to bound memory on huge logs.
    kept: Vec<(Code, std::mem::Discriminant<Fact>, u32)>,
}

/// The prefilter: every rule's triggers in one literal automaton, and for
/// each trigger the rules it belongs to.
struct Prefilter {
    automaton: aho_corasick::AhoCorasick,
    /// Pattern id → indices into `RULES`.
    rules_of: Vec<Vec<usize>>,
}

fn prefilter() -> &'static Prefilter {
    static PRE: OnceLock<Prefilter> = OnceLock::new();
    PRE.get_or_init(|| {
        let mut literals: Vec<&'static str> = Vec::new();
        let mut rules_of: Vec<Vec<usize>> = Vec::new();
        for (i, rule) in RULES.iter().enumerate() {
            for &t in rule.triggers.literals() {
                match literals.iter().position(|l| *l == t) {
                    Some(p) => rules_of[p].push(i),
                    None => {
                        literals.push(t);
                        rules_of.push(vec![i]);
                    }
                }
            }
        }
        // Plain literals, at most a few hundred: building cannot fail.
        let automaton = aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::Standard)
            .build(&literals)
            .expect("trigger literals form an automaton");
        Prefilter {
            automaton,
            rules_of,
        }
    })
}

/// The first trigger at or after `from`: (start, end).
fn next_trigger(text: &str, from: usize) -> Option<(usize, usize)> {
    let input = aho_corasick::Input::new(text).span(from..text.len());
    prefilter()
        .automaton
        .find(input)
        .map(|m| (m.start(), m.end()))
}

/// The indices (into `RULES`) of the rules a line is handed to: every rule
/// one of whose triggers occurs in it (overlapping matches included), in
/// table order.
pub(crate) fn rules_for(line: &str) -> Vec<usize> {
    let pre = prefilter();
    let mut wanted = vec![false; RULES.len()];
    for m in pre.automaton.find_overlapping_iter(line) {
        for &r in &pre.rules_of[m.pattern().as_usize()] {
            wanted[r] = true;
        }
    }
    wanted
        .iter()
        .enumerate()
        .filter_map(|(i, w)| w.then_some(i))
        .collect()
}

/// The longest evidence line kept (long lines are cut around the match).
const MAX_EVIDENCE: usize = 400;

/// The longest stretch of one line read at once; longer lines are read in
/// windows around each match (messages are far shorter).
pub(crate) const MAX_LINE: usize = 16 * 1024;

/// Runs pass 1 over the whole text.
pub(crate) fn scan(text: &str) -> Scan {
    let mut scanner = Scanner::default();
    scanner.read(text, true);
    scanner.scan
}

/// Longer than any trigger literal: a trigger that may straddle the end of
/// what has arrived is searched again when more does.
const MAX_TRIGGER: usize = 256;

/// Pass 1's state between pieces of a text that arrives in parts.
#[derive(Default)]
struct Scanner {
    scan: Scan,
    state: LineState,
    /// Absolute offset (in the whole text) of the piece's first byte.
    base: usize,
    /// Where reading goes on, relative to the piece.
    next_unread: usize,
}

impl Scanner {
    /// Reads `piece` (the text from `self.base` on) from `next_unread`.
    /// Unless `eof`, it stops before a match whose line and lookahead may
    /// not have arrived yet. Returns how many leading bytes of `piece` are
    /// no longer needed (`next_unread` is then relative to what is left).
    fn read(&mut self, text: &str, eof: bool) -> usize {
        let needed_after = MAX_LINE + LOOKAHEAD;
        loop {
            if self.next_unread >= text.len() {
                break;
            }
            let Some((m_start, m_end)) = next_trigger(text, self.next_unread) else {
                if !eof {
                    // Nothing here; a trigger may straddle the end.
                    self.next_unread = self.next_unread.max(floor_char_boundary(
                        text,
                        text.len().saturating_sub(MAX_TRIGGER),
                    ));
                }
                break;
            };
            if !eof && m_end + needed_after > text.len() {
                // Read this match when its line and lookahead have arrived.
                self.next_unread = m_start;
                break;
            }
            let (start, end) = line_window(text, m_start, m_end);
            self.next_unread = if end < text.len() && text.as_bytes()[end] == b'\n' {
                end + 1
            } else {
                end.max(m_end)
            };
            // A line seen before adds nothing (diagnoses collapse duplicates);
            // skipping it keeps logs that repeat one error fast.
            let line = &text[start..end];
            if self.state.seen.len() < MAX_SEEN_LINES {
                if !self.state.seen.insert(hash_line(line)) {
                    continue;
                }
            } else if self.state.seen.contains(&hash_line(line)) {
                continue;
            }
            let scan = &mut self.scan;
            let before = scan.hits.len();
            let after = &text[end..floor_char_boundary(text, (end + LOOKAHEAD).min(text.len()))];
            read_line(line, self.base + start, after, scan, &mut self.state);
            // cuda-build's own errors: attach the `= help:` lines that follow.
            let own = scan.hits[before..]
                .iter()
                .position(|h| matches!(h.fact, Fact::Own { .. }));
            if let Some(i) = own {
                let helps = following_help_lines(after);
                if let Fact::Own { help, .. } = &mut scan.hits[before + i].fact {
                    *help = helps;
                }
            }
        }
        // A later line window reaches back at most MAX_LINE / 4 bytes.
        let done = floor_char_boundary(text, self.next_unread.saturating_sub(MAX_LINE / 4));
        self.base += done;
        self.next_unread -= done;
        done
    }
}

/// Pass 1 over a text that arrives in pieces (a log read from a file or a
/// pipe): memory stays bounded by a piece plus one window, whatever the
/// text's size. Bytes that are not UTF-8 read as U+FFFD, as
/// `String::from_utf8_lossy` reads them.
#[derive(Default)]
pub(crate) struct StreamScanner {
    scanner: Scanner,
    /// What has arrived and is still needed.
    buf: String,
    /// An incomplete UTF-8 sequence at the end of the last piece.
    pending: Vec<u8>,
}

impl StreamScanner {
    /// Reads the next piece of the text.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        decode_into(&mut self.buf, &mut self.pending, bytes, false);
        let done = self.scanner.read(&self.buf, false);
        self.buf.drain(..done);
    }

    /// The text has ended: reads what is left.
    pub(crate) fn finish(mut self) -> Scan {
        decode_into(&mut self.buf, &mut self.pending, &[], true);
        self.scanner.read(&self.buf, true);
        self.scanner.scan
    }
}

/// Appends `bytes` (after `pending`) to `out` as UTF-8, each invalid
/// sequence as one U+FFFD; an incomplete sequence at the end waits in
/// `pending` unless `eof`.
fn decode_into(out: &mut String, pending: &mut Vec<u8>, bytes: &[u8], eof: bool) {
    let joined;
    let mut rest: &[u8] = if pending.is_empty() {
        bytes
    } else {
        pending.extend_from_slice(bytes);
        joined = std::mem::take(pending);
        &joined
    };
    loop {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                return;
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                // Checked by from_utf8 above.
                out.push_str(std::str::from_utf8(good).unwrap_or_default());
                match e.error_len() {
                    Some(n) => {
                        out.push('\u{FFFD}');
                        rest = &bad[n..];
                    }
                    None if eof => {
                        out.push('\u{FFFD}');
                        return;
                    }
                    None => {
                        pending.extend_from_slice(bad);
                        return;
                    }
                }
            }
        }
    }
}

/// The line around a match, or a window of at most [`MAX_LINE`] bytes of it
/// (on char boundaries) when the line is longer.
fn line_window(text: &str, m_start: usize, m_end: usize) -> (usize, usize) {
    let lo = floor_char_boundary(text, m_start.saturating_sub(MAX_LINE / 4));
    let start = text[lo..m_start].rfind('\n').map_or(lo, |p| lo + p + 1);
    let hi = (m_end + MAX_LINE).min(text.len());
    let mut hi = floor_char_boundary(text, hi);
    if hi < m_end {
        hi = m_end;
    }
    let end = text[m_end..hi].find('\n').map_or(hi, |p| m_end + p);
    let start = ceil_char_boundary(text, start).min(m_start);
    (start, end)
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// How many distinct candidate lines are remembered to skip repeats.
const MAX_SEEN_LINES: usize = 1 << 16;

/// Most hits kept per code (and fact kind); diagnoses show a few lines anyway.
const MAX_HITS_PER_KIND: u32 = 64;

fn hash_line(line: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    line.hash(&mut h);
    h.finish()
}

/// What earlier lines said that later lines need.
#[derive(Default)]
pub(crate) struct LineState {
    /// Hashes of the candidate lines read so far.
    seen: std::collections::HashSet<u64>,
    /// The previous `X: No such file or directory` that was not a header.
    pub missing_program: Option<String>,
    /// A build script's error block has started (cargo's `--- stderr`,
    /// "failed to run custom build command").
    pub in_build_error: bool,
}

/// What a rule's extractor sees: the normalised line, and where to record
/// what it finds.
pub(crate) struct LineCx<'a> {
    /// The line, normalised.
    pub line: &'a str,
    /// The rule's own code.
    code: Option<Code>,
    offset: usize,
    /// Hits before this line (to tell what this line already gave).
    first_hit: usize,
    pub scan: &'a mut Scan,
    pub state: &'a mut LineState,
    /// The raw text after the line (up to [`LOOKAHEAD`] bytes), for the rules
    /// whose message spans lines (a tool's empty `# stderr` block).
    pub after: &'a str,
}

/// How far a rule may read past its line.
const LOOKAHEAD: usize = 4096;

impl LineCx<'_> {
    /// Records a hit with the rule's code.
    pub fn hit(&mut self, fact: Fact, confidence: f32) {
        if let Some(code) = self.code {
            self.hit_as(code, fact, confidence);
        }
    }

    /// Records a hit with another code (the rule refines it from the line).
    pub fn hit_as(&mut self, code: Code, fact: Fact, confidence: f32) {
        hit(self.scan, code, self.offset, self.line, fact, confidence);
    }

    /// The line's byte offset in the whole text.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The first non-blank line after this one, normalised like the line
    /// (ANSI colour, CR and cargo's indentation stripped): the second half
    /// of a message a tool writes over two lines.
    pub fn next_line(&self) -> String {
        self.after
            .lines()
            .map(normalise)
            .find(|l| !l.is_empty())
            .unwrap_or_default()
    }

    /// Whether an earlier rule already gave `code` for this line.
    pub fn gave(&self, code: Code) -> bool {
        self.scan.hits[self.first_hit..]
            .iter()
            .any(|h| h.code == code)
    }
}

fn read_line(raw: &str, offset: usize, after: &str, scan: &mut Scan, state: &mut LineState) {
    let rules = rules_for(raw);
    if rules.is_empty() {
        return;
    }
    let line = normalise(raw);
    let first_hit = scan.hits.len();
    for i in rules {
        let rule = &RULES[i];
        let mut cx = LineCx {
            line: &line,
            code: rule.code,
            offset,
            first_hit,
            scan,
            state,
            after,
        };
        (rule.extract)(&mut cx);
    }
}

fn following_help_lines(rest: &str) -> Vec<String> {
    let mut helps = Vec::new();
    for raw in rest.lines().skip(1).take(24) {
        let line = normalise(&raw[..floor_char_boundary(raw, raw.len().min(MAX_LINE))]);
        if let Some(h) = line.strip_prefix("= help:") {
            helps.push(h.trim().to_string());
        } else if !(line.starts_with('|') || line.starts_with("= ") || line.is_empty()) {
            break;
        }
    }
    helps
}

/// Strips ANSI escape sequences, CR, and surrounding blanks.
pub(crate) fn normalise(raw: &str) -> String {
    let raw = raw.trim_end_matches(['\r', '\n']);
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            match chars.peek() {
                // CSI: ESC [ params final-byte(@..~)
                Some('[') => {
                    chars.next();
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC: ESC ] ... BEL or ESC \
                Some(']') => {
                    chars.next();
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                            chars.next();
                            break;
                        }
                    }
                }
                _ => {
                    chars.next();
                }
            }
        } else if c != '\r' && c != '\0' {
            out.push(c);
        }
    }
    let trimmed = out.trim();
    if trimmed.len() == out.len() {
        out
    } else {
        trimmed.to_string()
    }
}

/// A line as evidence (cut around its match when long).
pub(crate) fn evidence(line: &str) -> String {
    evidence_of(line)
}

fn evidence_of(line: &str) -> String {
    if line.len() <= MAX_EVIDENCE {
        return line.to_string();
    }
    let at = next_trigger(line, 0).map_or(0, |(start, _)| start);
    let from = floor_char_boundary(line, at.saturating_sub(MAX_EVIDENCE / 4));
    let to = floor_char_boundary(line, (from + MAX_EVIDENCE).min(line.len()));
    let mut s = String::new();
    if from > 0 {
        s.push('…');
    }
    s.push_str(&line[from..to]);
    if to < line.len() {
        s.push('…');
    }
    s
}

fn hit(scan: &mut Scan, code: Code, offset: usize, line: &str, fact: Fact, confidence: f32) {
    let kind = std::mem::discriminant(&fact);
    match scan
        .kept
        .iter_mut()
        .find(|(c, k, _)| *c == code && *k == kind)
    {
        Some((_, _, n)) if *n >= MAX_HITS_PER_KIND => return,
        Some((_, _, n)) => *n += 1,
        None => scan.kept.push((code, kind, 1)),
    }
    scan.hits.push(Hit {
        code,
        offset,
        evidence: evidence_of(line),
        fact,
        confidence,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalise_strips_ansi_cr_and_indent() {
        assert_eq!(
            normalise("  \u{1b}[1m\u{1b}[31merror\u{1b}[0m: x\r"),
            "error: x"
        );
        assert_eq!(
            normalise("\u{1b}]8;;http://x\u{7}link\u{1b}]8;;\u{1b}\\"),
            "link"
        );
        assert_eq!(normalise("\u{1b}"), "");
    }

    #[test]
    fn long_lines_keep_the_match_in_evidence() {
        let line = format!(
            "{}nvcc fatal   : Unsupported gpu architecture 'sm_70'{}",
            "x".repeat(5000),
            "y".repeat(5000)
        );
        let ev = evidence_of(&line);
        assert!(ev.len() < MAX_EVIDENCE + 10);
        assert!(ev.contains("Unsupported gpu architecture"));
    }

    #[test]
    fn long_multibyte_lines_are_cut_on_char_boundaries() {
        for pad in 0..4 {
            let line = format!(
                "{}{}nvcc fatal   : Unsupported gpu architecture 'sm_70' {}",
                "x".repeat(pad),
                "é€😀".repeat(MAX_LINE),
                "ü".repeat(MAX_LINE)
            );
            let s = scan(&line);
            assert_eq!(s.hits.len(), 1, "pad {pad}");
            assert!(s.hits[0].evidence.len() <= MAX_EVIDENCE + 8);
        }
    }

    /// A text read in pieces of any size gives what reading it whole gives.
    #[test]
    fn pieces_of_any_size_scan_like_the_whole() {
        let mut text = String::new();
        for i in 0..2000 {
            text.push_str(&format!("   Compiling crate{i} v0.1.0 (/src/é{i})\n"));
            if i % 500 == 250 {
                text.push_str("nvcc fatal   : Unsupported gpu architecture 'compute_35'\n");
                text.push_str(&"x".repeat(MAX_LINE * 2));
                text.push_str(" libcudart.so.12: cannot open shared object file\n");
            }
        }
        text.push_str(
            "Error: DriverError(CUDA_ERROR_NO_DEVICE, \"no CUDA-capable device is detected\")",
        );
        let whole = scan(&text);
        let key = |s: &Scan| {
            s.hits
                .iter()
                .map(|h| (h.code, h.offset, h.evidence.clone()))
                .collect::<Vec<_>>()
        };
        for size in [1, 3, 4096, 65_536, 1 << 20] {
            let mut stream = StreamScanner::default();
            for piece in text.as_bytes().chunks(size) {
                stream.feed(piece);
            }
            let parts = stream.finish();
            assert_eq!(key(&parts), key(&whole), "pieces of {size} bytes");
            assert!(stream_bound_holds(size));
        }
    }

    /// What a stream holds between pieces: a piece and one window.
    fn stream_bound_holds(size: usize) -> bool {
        let mut stream = StreamScanner::default();
        let filler = "ordinary build output without anything to report\n".repeat(50_000);
        for piece in filler.as_bytes().chunks(size.max(1024)) {
            stream.feed(piece);
            if stream.buf.len() > size.max(1024) + MAX_LINE + LOOKAHEAD + MAX_LINE / 4 + MAX_TRIGGER
            {
                return false;
            }
        }
        true
    }

    #[test]
    fn bytes_that_are_not_utf8_read_as_lossy_strings_do() {
        let bytes = b"ok \xe2\x82 bad \xff\xfe caf\xc3\xa9 end \xe2\x82";
        for size in [1, 2, 5, bytes.len()] {
            let (mut out, mut pending) = (String::new(), Vec::new());
            for piece in bytes.chunks(size) {
                decode_into(&mut out, &mut pending, piece, false);
            }
            decode_into(&mut out, &mut pending, &[], true);
            assert_eq!(out, String::from_utf8_lossy(bytes), "pieces of {size}");
        }
    }

    #[test]
    fn reads_versions_from_banners() {
        let s = scan("| NVIDIA-SMI 535.129.03   Driver Version: 535.129.03   CUDA Version: 12.2 |\nCuda compilation tools, release 12.4, V12.4.131\n");
        assert_eq!(s.smi_driver.as_deref(), Some("535.129.03"));
        assert_eq!(s.smi_cuda, Some((12, 2)));
        assert_eq!(s.nvcc_release, Some((12, 4)));
        let s = scan("| NVIDIA-SMI 610.43.02   KMD Version: 610.43.02   CUDA UMD Version: 13.3 |");
        assert_eq!(s.smi_driver.as_deref(), Some("610.43.02"));
        assert_eq!(s.smi_cuda, Some((13, 3)));
    }
}
