//! `cargo cuda inspect <PATH>`: which kernel images a binary, library,
//! .fatbin, .cubin, .ptx or directory holds, and whether they run on the
//! target GPUs and drivers (this machine's, `--gpu`/`--driver`, or
//! `[package.metadata.cuda] deploy`). `inspect --compare OLD NEW` compares
//! two builds' outputs instead (`inspect/compare.rs`).
//!
//! Exit status ([`Report::exit_code`]; the README's table and `--help` say
//! the same):
//! - 0: every target runs every image (natively or by JIT); with no target
//!   known, the images were found and listed;
//! - 1: some target cannot run an image (`error[code]` and the fix for each);
//! - 2: unusable input: a bad flag, a path that cannot be read, a named
//!   .fatbin/.cubin/.ptx with no readable image, or a damaged file (an
//!   archive or ELF file cut short or corrupt), whose missing bytes may have
//!   held images;
//! - 3: no kernel image (fatbin, cubin or PTX) in PATH: nothing to judge.
//!
//! `--json` prints one object (schema 1, stable; fields are only ever added):
//!
//! ```json
//! { "schema": 1, "path": "target/release/app",
//!   "targets_from": "flag" | "deploy" | "probe" | "none",
//!   "targets": [{ "label": "sm_89", "compute_capability": "8.9", "driver": "535.104.05", "driver_cuda": "12.2" }],
//!   "files": [{ "path": "...", "size": 123, "error": null, "problems": [], "damage": null | "...",
//!     "images": [{ "format": "fatbin" | "cubin" | "ptx", "offset": 4096, "size": 16040,
//!       "entries": [{ "code": "sass" | "ptx", "target": "sm_86", "ptx_isa": "9.0" | null,
//!                     "compression": "none" | "lz4" | "zstd", "size": 4840,
//!                     "toolkit": "13.0.88" | null, "kernels": ["vectorAdd"] | null }],
//!       "kernels": ["vectorAdd"], "kernels_complete": true,
//!       "verdicts": [{ "target": "sm_89", "outcome": "native" | "jit" | "will-not-run",
//!                      "via": "sm_86" | null, "reason": "...", "code": null | "no-kernel-image-for-device", "fix": null | "..." }] }],
//!     "origin": null | { "manifest": "<package>/cuda-prebuilt/manifest.jsonl", "record": { /* its manifest line, docs/prebuilt.md */ } } }],
//!   "skipped": { "files": 0, "symlinks": 0, "unreadable": 0 },
//!   "verdict": null | { "outcome": "native" | "jit" | "will-not-run", "targets": [ /* as verdicts above */ ] } }
//! ```
//!
//! `origin` says where a file's image came from when it is a shipped
//! prebuilt image: a file a build took from a package's `cuda-prebuilt/`,
//! or, given that folder itself, each image it ships (decompressed and
//! checked against its manifest; one that fails is a damaged file).

use std::path::{Path, PathBuf};

use serde::Serialize;

mod compare;

use super::Context;
use crate::session::Session;
use crate::style::{Style, Tone};
use cuda_toolchain::image::{self, deploy, verdict, Image, Target, TargetVerdict, Verdict};
use cuda_toolchain::Error;

/// `cargo cuda inspect`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Targets: --gpu if given, else `deploy = [...]` under [package.metadata.cuda], else this machine's GPUs and driver.\n\
                  Exit status: 0 every target runs it (or, with no target known, kernel images were listed),\n\
                  1 some target cannot run it, 2 unusable input (a bad flag, an unreadable path, a truncated or\n\
                  corrupt file), 3 no kernel image in PATH."
)]
pub struct Args {
    /// A Rust binary or library (ELF, .rlib, .a), a .fatbin, .cubin or .ptx file, or a directory (a cuda-build OUT_DIR).
    #[arg(value_name = "PATH", required_unless_present = "compare")]
    pub path: Option<PathBuf>,
    /// Compare two builds' outputs (files, or OUT_DIRs paired by file name): kernels, SASS/PTX targets,
    /// host symbols, debug information and sizes, each difference with the flag that explains it.
    /// Exit status 0 when they match, 1 when they differ, 2 for unusable input.
    #[arg(long, num_args = 2, value_names = ["OLD", "NEW"], conflicts_with_all = ["path", "gpu", "driver", "manifest_path"])]
    pub compare: Option<Vec<PathBuf>>,
    /// Target GPUs: archs or product names, comma-separated (`sm_86,sm_90`, `"RTX 4090"`).
    #[arg(long, value_name = "GPUS")]
    pub gpu: Option<String>,
    /// The targets' driver version (`535.104.05`), for the PTX-JIT and toolkit checks.
    #[arg(long, value_name = "VERSION")]
    pub driver: Option<String>,
    /// The Cargo.toml whose `[package.metadata.cuda] deploy` lists the targets (default: ./Cargo.toml).
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// Print one JSON object (schema documented in `cargo-cuda/src/commands/inspect.rs`).
    #[arg(long)]
    pub json: bool,
}

/// One image and its verdict per target.
#[derive(Debug, Serialize)]
pub struct ImageReport {
    /// The image.
    #[serde(flatten)]
    pub image: Image,
    /// One verdict per target.
    pub verdicts: Vec<TargetVerdict>,
}

/// One file's images.
#[derive(Debug, Serialize)]
pub struct FileReport {
    /// The file.
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// Why it could not be read, if so.
    pub error: Option<String>,
    /// Image-like bytes that could not be read (truncated, corrupt; in a
    /// large binary, maybe chance bytes).
    pub problems: Vec<String>,
    /// Why the file is not whole (an archive or ELF file cut short), if so:
    /// images may be missing, and the exit code is 2.
    pub damage: Option<String>,
    /// Its images.
    pub images: Vec<ImageReport>,
    /// Where it came from, when it is a shipped prebuilt image.
    pub origin: Option<Origin>,
}

/// A shipped prebuilt image's manifest and record.
#[derive(Debug, Serialize)]
pub struct Origin {
    /// The manifest that lists it.
    pub manifest: PathBuf,
    /// Its line in the manifest.
    pub record: cuda_build::compile::prebuilt::manifest::Record,
}

/// Files a directory walk passed over.
#[derive(Debug, Default, Serialize)]
pub struct Skipped {
    /// Regular files that cannot hold device code (by their first bytes).
    pub files: u64,
    /// Symbolic links (never followed, so no loops).
    pub symlinks: u64,
    /// Entries the walk could not read.
    pub unreadable: u64,
}

/// The whole answer (`--json` prints it).
#[derive(Debug, Serialize)]
pub struct Report {
    /// The JSON schema version.
    pub schema: u32,
    /// What was inspected.
    pub path: String,
    /// Where the targets came from: `flag`, `deploy`, `probe` or `none`.
    pub targets_from: &'static str,
    /// The targets.
    pub targets: Vec<Target>,
    /// Every file that holds images or failed to read.
    pub files: Vec<FileReport>,
    /// What a directory walk skipped.
    pub skipped: Skipped,
    /// The overall verdict; `null` without targets.
    pub verdict: Option<Verdict>,
}

/// `inspect`'s exit codes (see the module doc).
pub mod exit {
    /// Every target runs every image, or the images were listed.
    pub const RUNS: i32 = 0;
    /// Some target cannot run an image.
    pub const WILL_NOT_RUN: i32 = 1;
    /// A bad flag, an unreadable path, or a damaged file.
    pub const UNUSABLE: i32 = 2;
    /// No kernel image in PATH.
    pub const NO_IMAGES: i32 = 3;
}

impl Report {
    /// How many kernel images were found.
    pub fn image_count(&self) -> usize {
        self.files.iter().map(|f| f.images.len()).sum()
    }

    /// Files that could not be read whole (an error, or cut short).
    pub fn damaged(&self) -> impl Iterator<Item = &FileReport> {
        self.files
            .iter()
            .filter(|f| f.error.is_some() || f.damage.is_some())
    }

    /// The exit code: damage first (what is missing may change every other
    /// answer), then no images, then the verdict.
    pub fn exit_code(&self) -> i32 {
        if self.damaged().next().is_some() {
            return exit::UNUSABLE;
        }
        if self.image_count() == 0 {
            return exit::NO_IMAGES;
        }
        match &self.verdict {
            Some(v) if !v.runs() => exit::WILL_NOT_RUN,
            _ => exit::RUNS,
        }
    }

    /// The error for a damaged input: the file and why (for a directory,
    /// each damaged file and its first reason).
    pub fn damage_error(&self) -> Option<Error> {
        let damaged: Vec<&FileReport> = self.damaged().collect();
        let reasons = |f: &FileReport| -> Vec<String> {
            f.error
                .iter()
                .chain(&f.damage)
                .chain(&f.problems)
                .cloned()
                .collect()
        };
        let mut e = match damaged.as_slice() {
            [] => return None,
            [f] if f.path == self.path => {
                let mut why = reasons(f).into_iter();
                let mut e = Error::new(
                    "invalid-kernel-image",
                    format!(
                        "`{}` is damaged: {}; kernel images may be missing from this answer",
                        self.path,
                        why.next().unwrap_or_default()
                    ),
                );
                for more in why {
                    e = e.with_detail(more);
                }
                e
            }
            many => {
                let mut e = Error::new(
                    "invalid-kernel-image",
                    format!(
                        "`{}`: {} file(s) are damaged; kernel images may be missing from this answer",
                        self.path,
                        many.len()
                    ),
                );
                for f in many {
                    let first = reasons(f).into_iter().next().unwrap_or_default();
                    e = e.with_detail(format!("{}: {first}", f.path));
                }
                e
            }
        };
        e = e.with_help("rebuild it, or copy it again: a file cut short by a failed copy, download or full disk reads this way");
        Some(e)
    }
}

/// The targets: `--gpu` (with `--driver`), else `deploy`, else this machine.
pub fn targets(session: &Session, o: &Args) -> Result<(Vec<Target>, &'static str), Error> {
    let driver = o
        .driver
        .as_deref()
        .map(|d| deploy::parse_driver(d, "--driver"))
        .transpose()?;
    let with_driver = |ts: Vec<Target>| -> Vec<Target> {
        match &driver {
            Some(d) => ts
                .into_iter()
                .map(|t| t.with_driver(Some(d), None))
                .collect(),
            None => ts,
        }
    };
    if let Some(g) = &o.gpu {
        return Ok((with_driver(deploy::parse_gpu_list(g, "--gpu")?), "flag"));
    }
    let dir = match &o.manifest_path {
        Some(p) => p.parent().map(Path::to_path_buf).unwrap_or_default(),
        None => std::env::current_dir().unwrap_or_default(),
    };
    let listed = deploy::read_deploy(&dir)?;
    if !listed.is_empty() {
        return Ok((with_driver(listed), "deploy"));
    }
    let probed = verdict::targets_from_probe(session.probe());
    if probed.is_empty() {
        return Ok((Vec::new(), "none"));
    }
    Ok((with_driver(probed), "probe"))
}

/// Inspects `o.path` against `targets`.
pub fn inspect(
    path: &Path,
    targets: Vec<Target>,
    targets_from: &'static str,
) -> Result<Report, Error> {
    let meta = std::fs::metadata(path).map_err(|e| {
        Error::new(
            "invalid-argument",
            format!("cannot inspect `{}`: {e}", path.display()),
        )
        .with_help("name a binary, library (.rlib, .a, .so), .fatbin, .cubin, .ptx file, or a directory such as a cuda-build OUT_DIR")
    })?;
    let mut files = Vec::new();
    let mut skipped = Skipped::default();
    if let Some(shipped) = crate::prebuilt::read_shipped(path) {
        files = shipped_files(shipped?, &targets);
    } else if meta.is_dir() {
        walk(path, &targets, &mut files, &mut skipped);
    } else {
        let report = inspect_file(path, meta.len(), &targets);
        let named_image = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("fatbin" | "cubin" | "ptx")
        );
        if let Some(e) = &report.error {
            return Err(Error::new("invalid-argument", e.clone())
                .with_help("check the path and its permissions"));
        }
        if named_image && report.images.is_empty() {
            let mut e = Error::new(
                "invalid-kernel-image",
                format!("`{}` holds no readable kernel image", path.display()),
            )
            .with_help("rebuild it with nvcc; a file cut short by a failed copy or download reads this way");
            for p in &report.problems {
                e = e.with_detail(p.clone());
            }
            return Err(e);
        }
        files.push(report);
    }
    let all: Vec<Image> = files
        .iter()
        .flat_map(|f| f.images.iter().map(|i| i.image.clone()))
        .collect();
    let verdict = (!targets.is_empty()).then(|| verdict::overall(&all, &targets));
    Ok(Report {
        schema: 1,
        path: path.display().to_string(),
        targets_from,
        targets,
        files: files
            .into_iter()
            .filter(|f| {
                !f.images.is_empty()
                    || f.error.is_some()
                    || f.damage.is_some()
                    || !f.problems.is_empty()
            })
            .collect(),
        skipped,
        verdict,
    })
}

/// A package's `cuda-prebuilt/`: one report per shipped image, its bytes
/// decompressed and checked, with its manifest line as its origin.
fn shipped_files(shipped: crate::prebuilt::ShippedImages, targets: &[Target]) -> Vec<FileReport> {
    let dir = shipped
        .manifest
        .parent()
        .unwrap_or(Path::new(""))
        .to_path_buf();
    shipped
        .images
        .into_iter()
        .map(|(record, bytes)| {
            let mut report = FileReport {
                path: dir.join(&record.file).display().to_string(),
                size: record.size,
                error: None,
                problems: Vec::new(),
                damage: None,
                images: Vec::new(),
                origin: None,
            };
            match bytes {
                Ok(b) => report.images = judged(image::scan(&b).images, targets),
                Err(why) => report.damage = Some(why),
            }
            report.origin = Some(Origin {
                manifest: shipped.manifest.clone(),
                record,
            });
            report
        })
        .collect()
}

fn judged(images: Vec<Image>, targets: &[Target]) -> Vec<ImageReport> {
    images
        .into_iter()
        .map(|img| ImageReport {
            verdicts: targets.iter().map(|t| verdict::judge(&img, t)).collect(),
            image: img,
        })
        .collect()
}

fn inspect_file(path: &Path, size: u64, targets: &[Target]) -> FileReport {
    let mut report = FileReport {
        path: path.display().to_string(),
        size,
        error: None,
        problems: Vec::new(),
        damage: None,
        images: Vec::new(),
        origin: cuda_build::compile::prebuilt::origin::origin_of(path).map(|o| Origin {
            manifest: o.manifest,
            record: o.record,
        }),
    };
    match image::scan_file(path) {
        Ok(scan) => {
            report.problems = scan.problems;
            report.damage = scan.damage;
            report.images = scan
                .images
                .into_iter()
                .map(|img| ImageReport {
                    verdicts: targets.iter().map(|t| verdict::judge(&img, t)).collect(),
                    image: img,
                })
                .collect();
        }
        Err(e) => report.error = Some(e),
    }
    report
}

/// Whether a file's first bytes say it may hold device code: ELF (binaries,
/// objects, cubins), an `ar` archive (.a, .rlib), a fatbin, or a `.ptx` name.
fn may_hold_images(path: &Path) -> bool {
    if path.extension().is_some_and(|e| e == "ptx") {
        return true;
    }
    let mut head = [0u8; 8];
    let n = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .unwrap_or(0);
    let head = &head[..n];
    head.starts_with(b"\x7fELF")
        || head.starts_with(b"!<arch>\n")
        || head.starts_with(&image::FATBIN_MAGIC.to_le_bytes())
}

fn walk(root: &Path, targets: &[Target], files: &mut Vec<FileReport>, skipped: &mut Skipped) {
    // Links are not followed (no loops, no leaving the tree), nor mount
    // points (no /proc or /sys files that block on read).
    for entry in walkdir::WalkDir::new(root)
        .follow_links(false)
        .same_file_system(true)
        .sort_by_file_name()
    {
        let entry = match entry {
            Ok(e) => e,
            Err(_) => {
                skipped.unreadable += 1;
                continue;
            }
        };
        let ft = entry.file_type();
        if ft.is_symlink() {
            skipped.symlinks += 1;
            continue;
        }
        if !ft.is_file() {
            continue;
        }
        if !may_hold_images(entry.path()) {
            skipped.files += 1;
            continue;
        }
        let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
        files.push(inspect_file(entry.path(), size, targets));
    }
}

pub(crate) fn human_size(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}

fn describe_image(img: &Image) -> String {
    let mut parts = Vec::new();
    for e in &img.entries {
        let mut s = e.target.clone();
        let mut extra = Vec::new();
        if let Some((a, b)) = e.ptx_isa {
            extra.push(format!("PTX ISA {a}.{b}"));
        }
        if e.compression != image::Compression::None {
            extra.push(format!(
                "compressed, {}",
                serde_json::to_value(e.compression)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default()
            ));
        }
        if !extra.is_empty() {
            s.push_str(&format!(" ({})", extra.join(", ")));
        }
        parts.push(s);
    }
    parts.join(", ")
}

/// Prints the report for people.
pub fn print(r: &Report, out: &Style) {
    let count = r.image_count();
    outln!(
        "{}",
        out.status(
            Tone::Good,
            "Inspecting",
            &format!("{}: {count} kernel image(s)", r.path)
        )
    );
    for f in &r.files {
        if r.files.len() > 1 || f.path != r.path {
            outln!("{} ({})", out.bold(&f.path), human_size(f.size));
        }
        if let Some(o) = &f.origin {
            outln!(
                "  prebuilt: {}, listed in {}",
                crate::prebuilt::describe(&o.record),
                o.manifest.display()
            );
        }
        if let Some(e) = &f.error {
            outln!("  {}", out.warning(e));
        }
        if let Some(d) = &f.damage {
            outln!("  {}: {d}", out.paint(Tone::Bad, "damaged"));
        }
        for p in &f.problems {
            outln!(
                "  {}",
                out.warning(&format!("unreadable image-like bytes {p}"))
            );
        }
        for i in &f.images {
            let img = &i.image;
            let format = serde_json::to_value(img.format)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            outln!(
                "  {format} at {:#x} ({}): {}",
                img.offset,
                human_size(img.size),
                describe_image(img)
            );
            let names = if img.kernels.is_empty() && !img.kernels_complete {
                "unavailable (the entries are compressed)".to_string()
            } else if img.kernels.is_empty() {
                "none".to_string()
            } else if img.kernels_complete {
                img.kernels.join(", ")
            } else {
                format!("{} (compressed entries not read)", img.kernels.join(", "))
            };
            outln!("    kernels: {names}");
            for v in &i.verdicts {
                let tone = match v.outcome {
                    image::Outcome::Native => Tone::Good,
                    image::Outcome::Jit => Tone::Warn,
                    image::Outcome::WillNotRun => Tone::Bad,
                };
                let via = v
                    .via
                    .as_deref()
                    .map(|s| format!(" via {s}"))
                    .unwrap_or_default();
                outln!(
                    "    {}: {}{via}",
                    v.target,
                    out.paint(tone, v.outcome.describe())
                );
            }
        }
    }
    if r.skipped.files + r.skipped.symlinks + r.skipped.unreadable > 0 {
        outln!(
            "skipped {} file(s) that cannot hold device code, {} symlink(s) (not followed), {} unreadable",
            r.skipped.files, r.skipped.symlinks, r.skipped.unreadable
        );
    }
    if r.damaged().next().is_some() {
        // What is missing may change every verdict; the error (stderr) says what.
        return;
    }
    if count == 0 {
        outln!(
            "{}",
            out.warning(&format!("no kernel image (fatbin, cubin or PTX) in `{}`: built without device code, or not a CUDA build output; nothing to judge", r.path))
        );
        return;
    }
    let Some(v) = &r.verdict else {
        outln!(
            "{}",
            out.warning("no targets: no GPU is visible here, and neither --gpu nor `deploy` under [package.metadata.cuda] names one; only the listing above was checked")
        );
        return;
    };
    let from = match r.targets_from {
        "flag" => "--gpu",
        "deploy" => "[package.metadata.cuda] deploy",
        _ => "this machine",
    };
    outln!(
        "targets ({from}): {}",
        r.targets
            .iter()
            .map(Target::describe)
            .collect::<Vec<_>>()
            .join(", ")
    );
    for t in &v.targets {
        match t.code {
            None => outln!(
                "{}",
                out.status(
                    if t.outcome == image::Outcome::Native {
                        Tone::Good
                    } else {
                        Tone::Warn
                    },
                    "ok",
                    &format!("{}: {} ({})", t.target, t.outcome.describe(), t.reason)
                )
            ),
            Some(_) => {
                let text = t.render(&format!("`{}`", r.path));
                let mut lines = text.lines();
                if let Some(first) = lines.next() {
                    let (head, rest) = first.split_once(": ").unwrap_or((first, ""));
                    outln!("{}: {rest}", out.paint(Tone::Bad, head));
                }
                for l in lines {
                    outln!("{l}");
                }
            }
        }
    }
}

/// `cargo cuda inspect`: prints the report (or JSON) and returns the exit code.
pub fn exec(ctx: &Context, o: &Args) -> i32 {
    let (out, err) = (ctx.out(), ctx.err());
    if let Some([old, new]) = o.compare.as_deref() {
        return compare::exec(old, new, o.json, &out, &err);
    }
    let Some(path) = &o.path else {
        return exit::UNUSABLE;
    };
    let result = targets(ctx.session(), o).and_then(|(t, from)| inspect(path, t, from));
    match result {
        Ok(report) => {
            if o.json {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&report).unwrap_or_default()
                );
            } else {
                print(&report, &out);
            }
            if let Some(e) = report.damage_error() {
                errln!("{}", err.cuda_error(&e));
            }
            report.exit_code()
        }
        Err(e) => {
            errln!("{}", err.cuda_error(&e));
            exit::UNUSABLE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuda_toolchain::arch::ComputeCapability;

    #[test]
    fn directory_walk_skips_links_and_non_images() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(
            d.join("a.ptx"),
            ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n}\n",
        )
        .unwrap();
        std::fs::write(d.join("notes.txt"), "hello").unwrap();
        std::fs::create_dir(d.join("sub")).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(d, d.join("sub/loop")).unwrap();
        let t = vec![Target::gpu("sm_75", ComputeCapability::new(7, 5))];
        let r = inspect(d, t, "flag").unwrap();
        assert_eq!(r.files.len(), 1);
        assert_eq!(r.skipped.files, 1);
        #[cfg(unix)]
        assert_eq!(r.skipped.symlinks, 1);
        let v = r.verdict.as_ref().unwrap();
        assert_eq!(v.targets[0].code, Some("no-kernel-image-for-device"));
        assert_eq!(r.exit_code(), 1);
    }
}
