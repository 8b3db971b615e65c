//! How much work a source is before nvcc has compiled it once (the pool
//! orders such jobs by it, and predicts their memory from it): the source's
//! size plus the sizes of the headers it pulls in from the package and
//! every include directory nvcc is given (the build's, its header-only
//! dependencies' such as CUTLASS, and `-I`/`-isystem` flags), followed
//! through `#include`. A short file that instantiates a template library
//! (flashinfer, CUTLASS) then starts before a long plain one, instead of
//! last, where it would leave the other cores idle at the end of the build.
//! The toolkit's headers count too (nvcc is given its include directory):
//! CUTLASS and cute reach deep into CCCL, and without them a CUTLASS 3.5
//! instance would be predicted well below its measured peak (see
//! [`BASE_PEAK`]). Only the host compiler's own system headers, which no
//! flag names, are left out.

use cuda_toolchain::fsutil;
use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

/// A never-compiled source's predicted peak memory: [`BASE_PEAK`] plus
/// [`PEAK_PER_SQRT_MB`] times the square root of its work in MB. nvcc's
/// peak grows far slower than the headers it reads (most of a template
/// library is declarations never instantiated). Measured with nvcc 13.0.88
/// (work with the toolkit's headers → peak): candle-kernels' `affine.cu`
/// 1.8 MB → 0.11 GB and `moe_wmma.cu` 12.5 MB → 0.60 GB; FlashAttention-2
/// instances (candle-flash-attn 0.11.1, sm_80) over CUTLASS 3.5, 8.3 MB →
/// 2.98 GB (hdim64), and over CUTLASS 4.2, 18.2 MB → 3.64 GB (hdim64) and
/// 4.20 GB (hdim128). The curve passes above every one (within 2% of the
/// CUTLASS 3.5 instance), since a first build should rather start one job
/// too few than run out of memory; size is a weak predictor of the rest,
/// which it overstates up to tenfold. What it misses is caught while the
/// build runs (the pool stops a compile when the running ones hold more
/// than the budget, `nvcc/schedule.rs`), and what it overstates is won
/// back by starting such a guess on trial on a slot that would idle. Once a
/// source has compiled, its measured peak replaces the prediction, for the
/// next build and, within this one, for the sources that read the same
/// headers ([`Work::headers`]).
pub(crate) const BASE_PEAK: u64 = 150_000_000;
/// See [`BASE_PEAK`].
pub(crate) const PEAK_PER_SQRT_MB: f64 = 1e9;

/// The peak memory predicted for a source of `work` bytes ([`Estimate::work`]).
pub(crate) fn predicted_peak(work: u64) -> u64 {
    BASE_PEAK + (PEAK_PER_SQRT_MB * (work as f64 / 1e6).sqrt()) as u64
}

/// The device passes nvcc runs for a job's targets (`sm_90`, `compute_90`;
/// seen with `nvcc -dryrun`): one preprocessing and cicc per virtual arch,
/// one ptxas per SASS target. A PTX file is 1, an object for `sm_89` alone
/// 2 (cicc then ptxas), a fat binary of `sm_80`, `sm_90` and `compute_90`
/// 4. The job order weighs a source's work by them: of two sources the
/// same size, the one that also runs ptxas takes longer.
pub(crate) fn device_passes(targets: &[String]) -> u64 {
    let sass = targets.iter().filter(|t| t.starts_with("sm_")).count();
    (device_chains(targets) + sass) as u64
}

/// How many of a job's device passes nvcc can run at once with
/// `--threads`: one chain per virtual arch (its cicc, then the ptxas of
/// its SASS; `-dryrun` of `sm_80`, `sm_90`, `compute_90` shows two cicc
/// and two ptxas, and `sm_90` with `compute_90` one of each). At least 1.
pub(crate) fn device_chains(targets: &[String]) -> usize {
    let mut virtual_archs: Vec<&str> = targets
        .iter()
        .map(|t| {
            t.strip_prefix("sm_")
                .or_else(|| t.strip_prefix("compute_"))
                .unwrap_or(t)
        })
        .collect();
    virtual_archs.sort_unstable();
    virtual_archs.dedup();
    virtual_archs.len().max(1)
}

/// The include directories nvcc is given in `args` (`-I dir`, `-Idir`,
/// `-isystem dir`, `--include-path[=]dir`, `--system-include[=]dir`,
/// `-idirafter`), relative ones resolved against `base` (nvcc runs there).
pub(crate) fn include_dirs(args: &[OsString], base: &Path) -> Vec<PathBuf> {
    const SEPARATE: &[&str] = &[
        "-I",
        "-isystem",
        "--include-path",
        "--system-include",
        "-idirafter",
    ];
    const JOINED: &[&str] = &[
        "--include-path=",
        "--system-include=",
        "-isystem=",
        "-isystem",
        "-idirafter",
        "-I",
    ];
    let mut out = Vec::new();
    let mut it = args.iter().map(|a| a.to_string_lossy());
    while let Some(a) = it.next() {
        let dir = if SEPARATE.contains(&a.as_ref()) {
            it.next().map(|d| d.into_owned())
        } else {
            JOINED
                .iter()
                .find_map(|p| a.strip_prefix(p))
                .filter(|d| !d.is_empty())
                .map(str::to_string)
        };
        if let Some(d) = dir {
            let p = base.join(d);
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// Headers read at most per source: an estimate, not a dependency scan.
const MAX_FILES: usize = 2000;

/// A file as read: its size and the names it includes, with whether quoted.
type Read = (u64, Vec<(String, bool)>);

/// The estimates of one pool's jobs. Sources share most headers (a
/// library's 1,000 CUTLASS files), so each file is read once per pool.
#[derive(Default)]
pub(crate) struct Estimate {
    /// Each file read: its size and the names it includes (None: unreadable).
    files: HashMap<PathBuf, Option<Read>>,
}

/// A never-compiled source's estimate: its work, and what tells which other
/// sources are alike (the pool predicts one from another's measured peak).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Work {
    /// The source's size plus its reachable headers' sizes, bytes.
    pub bytes: u64,
    /// The source's own size, bytes.
    pub own: u64,
    /// A fingerprint of the set of headers it reaches; None when it reaches
    /// none (then nothing but its own text decides its cost).
    pub headers: Option<u64>,
}

impl Estimate {
    /// The source's size plus its reachable headers' sizes ([`Work`]).
    /// `"name"` is looked up beside the including file, then in `includes`;
    /// `<name>` only in `includes`. Unreadable or unresolved names are skipped.
    pub(crate) fn work(&mut self, source: &Path, includes: &[PathBuf]) -> Work {
        let source = fsutil::normalize(source);
        let mut seen: HashSet<PathBuf> = HashSet::new();
        let mut stack = vec![source.clone()];
        let mut total = 0u64;
        let mut own = 0u64;
        // The headers read, for the fingerprint.
        let mut headers: Vec<PathBuf> = Vec::new();
        while let Some(file) = stack.pop() {
            if seen.len() >= MAX_FILES || !seen.insert(file.clone()) {
                continue;
            }
            let read = self.files.entry(file.clone()).or_insert_with(|| {
                let text = std::fs::read(&file).ok()?;
                let names = included(&text)
                    .into_iter()
                    .map(|(n, q)| (n.to_string(), q))
                    .collect();
                Some((text.len() as u64, names))
            });
            let Some((size, names)) = read else {
                continue;
            };
            total += *size;
            if file == source {
                own = *size;
            } else {
                headers.push(file.clone());
            }
            let here = file.parent().map(Path::to_path_buf).unwrap_or_default();
            for (name, quoted) in names.iter() {
                let beside = quoted.then(|| here.join(name));
                let found = beside
                    .into_iter()
                    .chain(includes.iter().map(|d| d.join(name)))
                    .find(|p| p.is_file());
                if let Some(p) = found {
                    stack.push(fsutil::normalize(&p));
                }
            }
        }
        headers.sort();
        let fingerprint = (!headers.is_empty()).then(|| {
            let mut h = DefaultHasher::new();
            headers.hash(&mut h);
            h.finish()
        });
        Work {
            bytes: total,
            own,
            headers: fingerprint,
        }
    }
}

/// The names in `#include "name"` / `#include <name>` lines, with whether
/// they were quoted.
fn included(text: &[u8]) -> Vec<(&str, bool)> {
    let mut out = Vec::new();
    for line in text.split(|&b| b == b'\n') {
        let Ok(line) = std::str::from_utf8(line) else {
            continue;
        };
        let Some(rest) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let Some(rest) = rest.trim_start().strip_prefix("include") else {
            continue;
        };
        let rest = rest.trim_start();
        let (close, quoted) = match rest.chars().next() {
            Some('"') => ('"', true),
            Some('<') => ('>', false),
            _ => continue,
        };
        if let Some(end) = rest[1..].find(close) {
            out.push((&rest[1..1 + end], quoted));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(p: &Path, text: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn a_short_file_with_a_template_library_outweighs_a_long_plain_one() {
        let d = tempfile::tempdir().unwrap();
        let lib = d.path().join("third_party/include");
        write(&lib.join("big/gemm.hpp"), &"x".repeat(50_000));
        write(
            &lib.join("big/all.hpp"),
            "#include <big/gemm.hpp>\n#include \"gemm.hpp\"\n",
        );
        write(&d.path().join("src/common.cuh"), "#pragma once\n");
        write(
            &d.path().join("src/heavy.cu"),
            "#include \"common.cuh\"\n  #  include <big/all.hpp>\n#include <cuda_runtime.h>\n",
        );
        write(&d.path().join("src/plain.cu"), &"y".repeat(10_000));
        let includes = [lib.clone()];
        let mut e = Estimate::default();
        let heavy = e.work(&d.path().join("src/heavy.cu"), &includes).bytes;
        let plain = e.work(&d.path().join("src/plain.cu"), &includes).bytes;
        assert!(heavy > 50_000 && heavy < 50_200, "{heavy}");
        assert_eq!(plain, 10_000);
        // Without the include dir the library is not found: only the package.
        assert!(
            Estimate::default()
                .work(&d.path().join("src/heavy.cu"), &[])
                .bytes
                < 200
        );
    }

    #[test]
    fn include_dirs_come_from_every_spelling() {
        let args: Vec<OsString> = [
            "-I",
            "inc",
            "-Ithird/a",
            "-isystem",
            "/store/cutlass/include",
            "-isystem/x",
            "--include-path=p",
            "--system-include",
            "q",
            "-DX=1",
            "-O3",
            "-I",
            "inc",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        let base = Path::new("/pkg");
        let dirs = include_dirs(&args, base);
        let want: Vec<PathBuf> = [
            "/pkg/inc",
            "/pkg/third/a",
            "/store/cutlass/include",
            "/x",
            "/pkg/p",
            "/pkg/q",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(dirs, want);
        // Above every measured point (work, peak), and not absurdly so for the heaviest.
        for (work, peak) in [
            (1_777_000, 110_000_000),
            (12_539_000, 600_000_000),
            (8_316_000, 2_980_000_000),
            (18_208_000, 3_640_000_000),
            (18_208_000, 4_200_000_000),
        ] {
            assert!(
                predicted_peak(work) >= peak,
                "{work}: {}",
                predicted_peak(work)
            );
        }
        assert!(predicted_peak(18_208_000) < 5_000_000_000);
    }

    #[test]
    fn include_cycles_and_missing_headers_end() {
        let d = tempfile::tempdir().unwrap();
        write(
            &d.path().join("a.cuh"),
            "#include \"b.cuh\"\n#include \"gone.h\"\n",
        );
        write(
            &d.path().join("b.cuh"),
            "#include \"a.cuh\"\n#include \"./a.cuh\"\n",
        );
        write(&d.path().join("k.cu"), "#include \"a.cuh\"\n");
        let mut e = Estimate::default();
        let n = e.work(&d.path().join("k.cu"), &[]).bytes;
        let sizes: u64 = ["a.cuh", "b.cuh", "k.cu"]
            .iter()
            .map(|f| std::fs::metadata(d.path().join(f)).unwrap().len())
            .sum();
        assert_eq!(n, sizes);
        assert_eq!(e.work(&d.path().join("missing.cu"), &[]), Work::default());
        // Read once, counted again for another source that includes it.
        assert_eq!(e.work(&d.path().join("k.cu"), &[]).bytes, sizes);
    }

    #[test]
    fn sources_reading_the_same_headers_share_a_fingerprint() {
        let d = tempfile::tempdir().unwrap();
        let lib = d.path().join("lib");
        write(&lib.join("gemm.hpp"), "#include \"tile.hpp\"\n");
        write(&lib.join("tile.hpp"), "// tiles\n");
        write(&lib.join("other.hpp"), "// other\n");
        // Two instances of one template (different text, same headers, one
        // reached through another spelling), one with a header more, one
        // with none.
        write(
            &d.path().join("a.cu"),
            "#include <gemm.hpp>\ntemplate void run<64>();\n",
        );
        write(
            &d.path().join("b.cu"),
            "#include \"lib/gemm.hpp\"\ntemplate void run<128>(); // wider\n",
        );
        write(
            &d.path().join("c.cu"),
            "#include <gemm.hpp>\n#include <other.hpp>\n",
        );
        write(&d.path().join("plain.cu"), "__global__ void k() {}\n");
        let includes = [lib.clone()];
        let mut e = Estimate::default();
        let a = e.work(&d.path().join("a.cu"), &includes);
        let b = e.work(&d.path().join("b.cu"), &includes);
        let c = e.work(&d.path().join("c.cu"), &includes);
        let plain = e.work(&d.path().join("plain.cu"), &includes);
        assert!(a.headers.is_some());
        assert_eq!(a.headers, b.headers);
        assert_ne!(a.headers, c.headers);
        assert_eq!(plain.headers, None);
        let own = |f: &str| std::fs::metadata(d.path().join(f)).unwrap().len();
        assert_eq!(
            (a.own, b.own, plain.own),
            (own("a.cu"), own("b.cu"), own("plain.cu"))
        );
    }

    #[test]
    fn device_passes_count_cicc_per_virtual_arch_and_ptxas_per_sass() {
        let passes =
            |t: &[&str]| device_passes(&t.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(passes(&["compute_89"]), 1);
        assert_eq!(passes(&["sm_89"]), 2);
        assert_eq!(passes(&["sm_90", "compute_90"]), 2);
        assert_eq!(passes(&["sm_80", "sm_90", "compute_90"]), 4);
        assert_eq!(passes(&["sm_90a", "compute_90"]), 3);
        assert_eq!(passes(&[]), 1);
        let chains =
            |t: &[&str]| device_chains(&t.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(chains(&["sm_90", "compute_90"]), 1);
        assert_eq!(chains(&["sm_80", "sm_90", "compute_90"]), 2);
        assert_eq!(chains(&["sm_90a", "compute_90"]), 2);
        assert_eq!(chains(&[]), 1);
    }
}
