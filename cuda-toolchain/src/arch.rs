//! The GPU architecture model: compute capabilities, `a`/`f` variants, real
//! (SASS) and virtual (PTX) targets, and a parser for every common spelling.
//!
//! Accepted spellings, case-insensitive, one per list item:
//!
//! | spelling | meaning |
//! |---|---|
//! | `86`, `8.6`, `8.6+PTX` | SASS for 8.6 plus PTX ([`CodeKind::Both`]) |
//! | `sm_86`, `86-real` | SASS only ([`CodeKind::Real`]) |
//! | `compute_86`, `86-virtual` | PTX only ([`CodeKind::Virtual`]) |
//! | `90a`, `sm_90a`, `9.0a`, `100f`, `compute_100f` | arch-specific (`a`) / family (`f`) variants |
//! | `turing` 7.5, `ampere` 8.0 + 8.6, `ada` 8.9, `hopper` 9.0, `blackwell` 10.0 + 10.3 + 12.0 + 12.1 (also `volta`, `pascal`, `maxwell`) | those compute capabilities, each as a plain number; Jetson parts (8.7, 11.0) are left out, see [`generation`] |
//! | `native`, `all`, `all-major` | the GPUs present; every arch nvcc supports; the lowest arch of each major (as nvcc's own `-arch=all-major`) |
//!
//! Note that `sm_86` in a list means SASS only, as in CMake's `86-real`
//! (nvcc's `-arch=sm_86` shorthand also embeds PTX; write `86` for that).
//!
//! Items are separated by `;`, `,` or whitespace (CMake, Cargo-env and
//! PyTorch styles all work). Displaying a parsed [`ArchSpec`] and parsing
//! the text again gives the same value.
//!
//! ```
//! use cuda_toolchain::arch::{parse_arch_list, ArchRequest, CodeKind};
//! let spec = parse_arch_list("sm_80, 8.6+PTX; 90a-real").unwrap();
//! assert_eq!(spec.to_string(), "80-real;86;90a-real");
//! assert_eq!(spec.to_string().parse::<cuda_toolchain::arch::ArchSpec>().unwrap(), spec);
//! assert!(matches!(spec.0[1], ArchRequest::Target(t) if t.kind == CodeKind::Both));
//! ```

use std::fmt;
use std::str::FromStr;

use crate::Error;

/// Highest compute-capability major the parser accepts as a plausible shape.
/// Today's highest is 12; a bound keeps typos such as `999` (9.9.9?) out
/// while future archs like `sm_130` still parse.
pub const MAX_PLAUSIBLE_MAJOR: u32 = 29;

/// A compute capability such as 8.6 or 10.0.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct ComputeCapability {
    /// Major version (the generation).
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

impl ComputeCapability {
    /// A compute capability from its parts.
    pub const fn new(major: u32, minor: u32) -> Self {
        ComputeCapability { major, minor }
    }

    /// nvcc's number for it: 8.6 is 86, 10.0 is 100.
    pub const fn number(self) -> u32 {
        self.major * 10 + self.minor
    }

    /// The plain arch for this compute capability (`86`).
    pub const fn arch(self) -> Arch {
        Arch {
            cc: self,
            variant: Variant::Plain,
        }
    }
}

impl fmt::Display for ComputeCapability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// Plain, arch-specific (`a`, e.g. sm_90a) or family (`f`, e.g. sm_100f) target.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Default,
    serde::Serialize,
    serde::Deserialize,
)]
pub enum Variant {
    /// No suffix: forward-compatible PTX, SASS for the same major.
    #[default]
    Plain,
    /// `f`: family-specific features; runs on the same family.
    Family,
    /// `a`: arch-specific features (wgmma, setmaxnreg); runs only on that exact CC.
    Specific,
}

impl Variant {
    /// The suffix nvcc uses: ``, `f` or `a`.
    pub const fn suffix(self) -> &'static str {
        match self {
            Variant::Plain => "",
            Variant::Family => "f",
            Variant::Specific => "a",
        }
    }
}

/// One architecture: a compute capability plus its variant, e.g. `90a`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct Arch {
    /// The compute capability.
    pub cc: ComputeCapability,
    /// The variant suffix.
    pub variant: Variant,
}

impl Arch {
    /// A plain arch (`Arch::new(9, 0)` is `90`).
    pub const fn new(major: u32, minor: u32) -> Arch {
        ComputeCapability::new(major, minor).arch()
    }

    /// The same compute capability with another variant.
    pub const fn with_variant(self, variant: Variant) -> Arch {
        Arch {
            cc: self.cc,
            variant,
        }
    }

    /// nvcc's real-arch name, e.g. `sm_90a`.
    pub fn sm_name(&self) -> String {
        format!("sm_{self}")
    }

    /// nvcc's virtual-arch name, e.g. `compute_90a`.
    pub fn compute_name(&self) -> String {
        format!("compute_{self}")
    }

    /// Whether PTX for this arch can be JIT-compiled for every newer GPU
    /// (only plain archs: `a` PTX runs on that exact CC, `f` on its family).
    pub const fn is_forward_compatible(&self) -> bool {
        matches!(self.variant, Variant::Plain)
    }

    /// Whether SASS built for this arch runs natively on a GPU of compute
    /// capability `gpu`: the same major at an equal or higher minor (`sm_86`
    /// runs on 8.9, `sm_89` not on 8.6); `a` only on exactly its CC (`sm_90a`
    /// not on 10.0); `f` on its family, the same major from its minor up
    /// (`sm_100f` on 10.0 and 10.3).
    ///
    /// ```
    /// use cuda_toolchain::arch::{Arch, ComputeCapability};
    /// assert!(Arch::new(8, 6).sass_runs_on(ComputeCapability::new(8, 9)));
    /// assert!(!Arch::new(8, 9).sass_runs_on(ComputeCapability::new(8, 6)));
    /// assert!(!"90a".parse::<Arch>().unwrap().sass_runs_on(ComputeCapability::new(10, 0)));
    /// assert!("100f".parse::<Arch>().unwrap().sass_runs_on(ComputeCapability::new(10, 3)));
    /// ```
    pub const fn sass_runs_on(&self, gpu: ComputeCapability) -> bool {
        match self.variant {
            Variant::Specific => self.cc.major == gpu.major && self.cc.minor == gpu.minor,
            Variant::Plain | Variant::Family => {
                self.cc.major == gpu.major && self.cc.minor <= gpu.minor
            }
        }
    }

    /// Whether PTX for this arch can be JIT-compiled by the driver for a GPU
    /// of compute capability `gpu`: plain PTX for any GPU at or above its CC;
    /// `a` and `f` PTX only where their SASS would run. (Whether the driver
    /// accepts the PTX ISA version is a separate, driver-side question:
    /// [`crate::compat::driver_jits_ptx`].)
    ///
    /// ```
    /// use cuda_toolchain::arch::{Arch, ComputeCapability};
    /// assert!(Arch::new(8, 0).ptx_jits_on(ComputeCapability::new(12, 0)));
    /// assert!(!Arch::new(9, 0).ptx_jits_on(ComputeCapability::new(8, 9)));
    /// ```
    pub const fn ptx_jits_on(&self, gpu: ComputeCapability) -> bool {
        match self.variant {
            Variant::Plain => {
                gpu.major > self.cc.major
                    || (gpu.major == self.cc.major && gpu.minor >= self.cc.minor)
            }
            Variant::Specific | Variant::Family => self.sass_runs_on(gpu),
        }
    }

    /// Parses one arch without a code-kind marker: `86`, `8.6`, `sm_90a`, `compute_100f`.
    ///
    /// ```
    /// use cuda_toolchain::arch::Arch;
    /// assert_eq!("sm_90a".parse::<Arch>().unwrap().to_string(), "90a");
    /// ```
    pub fn parse(s: &str) -> Result<Arch, Error> {
        Ok(parse_target(s.trim(), s)?.arch)
    }
}

impl FromStr for Arch {
    type Err = Error;
    fn from_str(s: &str) -> Result<Arch, Error> {
        Arch::parse(s)
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.cc.number(), self.variant.suffix())
    }
}

/// Whether a target asks for SASS, PTX or both.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum CodeKind {
    /// Machine code only (`sm_86`, `86-real`).
    Real,
    /// PTX only (`compute_86`, `86-virtual`).
    Virtual,
    /// Both (`86`, `8.6+PTX`, CMake's plain number).
    Both,
}

impl CodeKind {
    /// Whether SASS is wanted.
    pub const fn wants_sass(self) -> bool {
        matches!(self, CodeKind::Real | CodeKind::Both)
    }

    /// Whether PTX is wanted.
    pub const fn wants_ptx(self) -> bool {
        matches!(self, CodeKind::Virtual | CodeKind::Both)
    }
}

/// One requested target: an arch and what code to emit for it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct ArchTarget {
    /// The architecture.
    pub arch: Arch,
    /// SASS, PTX or both.
    pub kind: CodeKind,
}

impl fmt::Display for ArchTarget {
    /// CMake style: `86`, `86-real`, `86-virtual`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            CodeKind::Both => write!(f, "{}", self.arch),
            CodeKind::Real => write!(f, "{}-real", self.arch),
            CodeKind::Virtual => write!(f, "{}-virtual", self.arch),
        }
    }
}

/// One item of an arch list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum ArchRequest {
    /// A concrete target.
    Target(ArchTarget),
    /// The GPUs in this machine.
    Native,
    /// Every arch the selected nvcc supports.
    All,
    /// Every major arch (`X.0`) the selected nvcc supports, as CMake's `all-major`.
    AllMajor,
}

impl fmt::Display for ArchRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArchRequest::Target(t) => t.fmt(f),
            ArchRequest::Native => f.write_str("native"),
            ArchRequest::All => f.write_str("all"),
            ArchRequest::AllMajor => f.write_str("all-major"),
        }
    }
}

/// A parsed arch list, in the order written (the plan deduplicates).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, serde::Serialize)]
pub struct ArchSpec(pub Vec<ArchRequest>);

impl ArchSpec {
    /// The concrete targets, skipping `native`/`all`/`all-major`.
    pub fn targets(&self) -> impl Iterator<Item = ArchTarget> + '_ {
        self.0.iter().filter_map(|r| match r {
            ArchRequest::Target(t) => Some(*t),
            _ => None,
        })
    }
}

impl fmt::Display for ArchSpec {
    /// `;`-separated, CMake style.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(";")?;
            }
            r.fmt(f)?;
        }
        Ok(())
    }
}

impl FromStr for ArchSpec {
    type Err = Error;
    fn from_str(s: &str) -> Result<ArchSpec, Error> {
        parse_arch_list(s)
    }
}

/// The accepted forms, for error help lines.
pub const ACCEPTED_FORMS: &str =
    "86, 8.6, sm_86, compute_86, 86-real, 86-virtual, 8.6+PTX, 90a, 100f, \
a generation name (turing, ampere, ada, hopper, blackwell), native, all or all-major; \
separate several with `;`, `,` or spaces";

fn invalid(item: &str, whole: &str, why: impl fmt::Display) -> Error {
    use crate::error::show_value;
    // `why` quotes the item; a 10 kB value must not come back twice in full.
    let why = why.to_string();
    let why = if why.len() > 200 {
        format!("not an architecture ({} bytes)", item.len())
    } else {
        why
    };
    let message = if item == whole {
        format!("invalid GPU architecture {}: {why}", show_value(item))
    } else {
        format!(
            "invalid GPU architecture {} in {}: {why}",
            show_value(item),
            show_value(whole)
        )
    };
    Error::new("arch-invalid", message).with_help(format!("accepted forms: {ACCEPTED_FORMS}"))
}

/// Parses an arch list such as `80;86;90a`, `sm_80,sm_90`, `8.6+PTX 9.0` or `native`.
///
/// ```
/// use cuda_toolchain::arch::{parse_arch_list, ArchRequest};
/// assert_eq!(parse_arch_list("all-major").unwrap().0, vec![ArchRequest::AllMajor]);
/// assert!(parse_arch_list("sm_").unwrap_err().to_string().contains("`sm_`"));
/// ```
pub fn parse_arch_list(s: &str) -> Result<ArchSpec, Error> {
    // Tolerate a quoted value copied from a shell or CMake file.
    let body = s.trim().trim_matches(|c| c == '"' || c == '\'');
    let mut out = Vec::new();
    for item in body.split(|c: char| c == ';' || c == ',' || c.is_whitespace()) {
        if item.is_empty() {
            continue;
        }
        parse_item(item, s, &mut out)?;
    }
    if out.is_empty() {
        let e = Error::new(
            "arch-invalid",
            if s.trim().is_empty() {
                "the GPU architecture list is empty: expected at least one architecture".to_string()
            } else {
                format!(
                    "the GPU architecture list `{}` is empty: expected at least one architecture",
                    s.escape_debug()
                )
            },
        )
        .with_help(format!("accepted forms: {ACCEPTED_FORMS}"));
        return Err(e);
    }
    Ok(ArchSpec(out))
}

fn parse_item(item: &str, whole: &str, out: &mut Vec<ArchRequest>) -> Result<(), Error> {
    let lower = item.to_ascii_lowercase();
    match lower.as_str() {
        "native" => {
            out.push(ArchRequest::Native);
            return Ok(());
        }
        "all" => {
            out.push(ArchRequest::All);
            return Ok(());
        }
        "all-major" => {
            out.push(ArchRequest::AllMajor);
            return Ok(());
        }
        _ => {}
    }
    // Generation names, optionally with a CMake kind suffix (`hopper-real`).
    let (name, kind) = split_kind_suffix(&lower);
    if let Some(ccs) = generation(name) {
        let kind = kind.unwrap_or(CodeKind::Both);
        out.extend(ccs.iter().map(|cc| {
            ArchRequest::Target(ArchTarget {
                arch: cc.arch(),
                kind,
            })
        }));
        return Ok(());
    }
    out.push(ArchRequest::Target(parse_target(item, whole)?));
    Ok(())
}

/// Splits `-real`, `-virtual` or `+ptx` off a lower-case item.
fn split_kind_suffix(lower: &str) -> (&str, Option<CodeKind>) {
    for (suffix, kind) in [
        ("-real", CodeKind::Real),
        ("-virtual", CodeKind::Virtual),
        ("+ptx", CodeKind::Both),
    ] {
        if let Some(rest) = lower.strip_suffix(suffix) {
            return (rest, Some(kind));
        }
    }
    (lower, None)
}

/// Parses one concrete target (`sm_90a`, `8.6+PTX`, `86-real`).
fn parse_target(item: &str, whole: &str) -> Result<ArchTarget, Error> {
    if item.is_empty() {
        return Err(invalid(
            item,
            whole,
            "expected an architecture, found nothing",
        ));
    }
    if !item.is_ascii() {
        return Err(invalid(
            item,
            whole,
            "it contains non-ASCII characters; architectures are written with digits, `.`, `sm_`/`compute_` and `a`/`f`",
        ));
    }
    let lower = item.to_ascii_lowercase();
    let (rest, suffix_kind) = split_kind_suffix(&lower);
    if split_kind_suffix(rest).1.is_some() {
        return Err(invalid(
            item,
            whole,
            "it has more than one of `-real`, `-virtual` and `+PTX`; use one",
        ));
    }
    let (digits, prefix_kind) = if let Some(r) = rest.strip_prefix("sm_") {
        (r, Some(CodeKind::Real))
    } else if let Some(r) = rest.strip_prefix("compute_") {
        (r, Some(CodeKind::Virtual))
    } else {
        (rest, None)
    };
    let kind = match (prefix_kind, suffix_kind) {
        (Some(p), Some(s)) if p != s => {
            return Err(invalid(
                item,
                whole,
                format!(
                    "`{}` conflicts with its suffix; write `{}` or `{}`",
                    if p == CodeKind::Real {
                        "sm_"
                    } else {
                        "compute_"
                    },
                    rest,
                    // What the suffix asked for, in CMake's spelling.
                    ArchTarget {
                        arch: parse_arch_body(digits).map_err(|why| invalid(item, whole, why))?,
                        kind: s,
                    },
                ),
            ));
        }
        (Some(p), _) => p,
        (None, Some(s)) => s,
        (None, None) => CodeKind::Both,
    };
    let arch = parse_arch_body(digits).map_err(|why| invalid(item, whole, why))?;
    Ok(ArchTarget { arch, kind })
}

/// `86`, `8.6`, `90a`, `9.0a`, `100f`, `10.0f` → an [`Arch`].
fn parse_arch_body(s: &str) -> Result<Arch, String> {
    if s.is_empty() {
        return Err("the compute capability is missing (e.g. `sm_86`, `compute_90a`)".into());
    }
    let (num, variant) = match s.as_bytes()[s.len() - 1] {
        b'a' => (&s[..s.len() - 1], Variant::Specific),
        b'f' => (&s[..s.len() - 1], Variant::Family),
        _ => (s, Variant::Plain),
    };
    let cc = if let Some((maj, min)) = num.split_once('.') {
        if min.is_empty() {
            return Err(format!(
                "the minor version after `{maj}.` is missing (e.g. {maj}.0)"
            ));
        }
        if maj.is_empty() {
            return Err(format!(
                "the major version before `.{min}` is missing (e.g. 8.{min})"
            ));
        }
        let major = parse_digits(maj, 2).ok_or_else(|| {
            format!(
                "`{maj}` is not a major version (expected 1 or 2 digits before the `.`, e.g. 8.6)"
            )
        })?;
        let minor = parse_digits(min, 1).ok_or_else(|| {
            format!("`{min}` is not a minor version (expected one digit after the `.`, e.g. 8.6)")
        })?;
        ComputeCapability::new(major, minor)
    } else {
        if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "`{s}` is not a compute capability (expected a number such as 86 or 8.6, with an optional `a` or `f`)"
            ));
        }
        if num.len() < 2 || num.len() > 3 || num.starts_with('0') {
            return Err(format!(
                "`{num}` is not a compute capability number: write major and minor together (86 is 8.6, 120 is 12.0) or dotted (8.6)"
            ));
        }
        let n: u32 = num
            .parse()
            .map_err(|_| format!("`{num}` is not a number"))?;
        ComputeCapability::new(n / 10, n % 10)
    };
    if cc.major == 0 || cc.major > MAX_PLAUSIBLE_MAJOR {
        return Err(format!(
            "compute capability {cc} does not exist (majors run from 1; the newest today is 12.x)"
        ));
    }
    Ok(cc.arch().with_variant(variant))
}

fn parse_digits(s: &str, max_len: usize) -> Option<u32> {
    if s.is_empty() || s.len() > max_len || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The compute capabilities of a generation name, lower-case (`hopper` → 9.0).
///
/// Ampere is 8.0 and 8.6 (data-center and discrete GPUs); Jetson Orin (8.7)
/// is left out because nobody building for "Ampere" wants SASS for an
/// embedded SoC — ask for `87` explicitly. Blackwell is 10.0, 10.3, 12.0 and
/// 12.1 (B200, B300, RTX 50xx, GB10); Jetson Thor (11.0) is likewise explicit.
/// Sources as in [`crate::facts`]'s arch spans and S12.
pub fn generation(name: &str) -> Option<&'static [ComputeCapability]> {
    const MAXWELL: &[ComputeCapability] =
        &[ComputeCapability::new(5, 0), ComputeCapability::new(5, 2)];
    const PASCAL: &[ComputeCapability] =
        &[ComputeCapability::new(6, 0), ComputeCapability::new(6, 1)];
    const VOLTA: &[ComputeCapability] = &[ComputeCapability::new(7, 0)];
    const TURING: &[ComputeCapability] = &[ComputeCapability::new(7, 5)];
    const AMPERE: &[ComputeCapability] =
        &[ComputeCapability::new(8, 0), ComputeCapability::new(8, 6)];
    const ADA: &[ComputeCapability] = &[ComputeCapability::new(8, 9)];
    const HOPPER: &[ComputeCapability] = &[ComputeCapability::new(9, 0)];
    const BLACKWELL: &[ComputeCapability] = &[
        ComputeCapability::new(10, 0),
        ComputeCapability::new(10, 3),
        ComputeCapability::new(12, 0),
        ComputeCapability::new(12, 1),
    ];
    Some(match name.to_ascii_lowercase().as_str() {
        "maxwell" => MAXWELL,
        "pascal" => PASCAL,
        "volta" => VOLTA,
        "turing" => TURING,
        "ampere" => AMPERE,
        "ada" | "lovelace" | "ada-lovelace" | "adalovelace" => ADA,
        "hopper" => HOPPER,
        "blackwell" => BLACKWELL,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn one(s: &str) -> ArchTarget {
        let spec = parse_arch_list(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(spec.0.len(), 1, "{s}");
        match spec.0[0] {
            ArchRequest::Target(t) => t,
            other => panic!("{s}: {other:?}"),
        }
    }

    fn t(major: u32, minor: u32, variant: Variant, kind: CodeKind) -> ArchTarget {
        ArchTarget {
            arch: Arch::new(major, minor).with_variant(variant),
            kind,
        }
    }

    #[test]
    fn every_spelling() {
        use CodeKind::*;
        use Variant::*;
        assert_eq!(one("86"), t(8, 6, Plain, Both));
        assert_eq!(one("8.6"), t(8, 6, Plain, Both));
        assert_eq!(one("sm_86"), t(8, 6, Plain, Real));
        assert_eq!(one("SM_86"), t(8, 6, Plain, Real));
        assert_eq!(one("compute_86"), t(8, 6, Plain, Virtual));
        assert_eq!(one("86-real"), t(8, 6, Plain, Real));
        assert_eq!(one("90a-virtual"), t(9, 0, Specific, Virtual));
        assert_eq!(one("100f"), t(10, 0, Family, Both));
        assert_eq!(one("8.9+PTX"), t(8, 9, Plain, Both));
        assert_eq!(one("sm_90a"), t(9, 0, Specific, Real));
        assert_eq!(one("9.0a"), t(9, 0, Specific, Both));
        assert_eq!(one("compute_121f"), t(12, 1, Family, Virtual));
        assert_eq!(one("sm_86-real"), t(8, 6, Plain, Real));
        assert_eq!(one("sm_130"), t(13, 0, Plain, Real));
        assert_eq!(one("12.0"), t(12, 0, Plain, Both));
    }

    #[test]
    fn keywords_and_lists() {
        let spec = parse_arch_list(" 80; 86,sm_90a  native\tall all-major ").unwrap();
        assert_eq!(spec.0.len(), 6);
        assert_eq!(spec.0[3], ArchRequest::Native);
        assert_eq!(spec.0[4], ArchRequest::All);
        assert_eq!(spec.0[5], ArchRequest::AllMajor);
        assert_eq!(spec.to_string(), "80;86;90a-real;native;all;all-major");
        assert_eq!(parse_arch_list("\"80;90\"").unwrap().to_string(), "80;90");
    }

    #[test]
    fn generation_names_expand_from_facts() {
        let s = parse_arch_list("Hopper").unwrap();
        assert_eq!(s.to_string(), "90");
        let s = parse_arch_list("ampere-real").unwrap();
        assert_eq!(s.to_string(), "80-real;86-real");
        let s = parse_arch_list("blackwell").unwrap();
        assert_eq!(s.to_string(), "100;103;120;121");
        assert_eq!(parse_arch_list("turing,ADA").unwrap().to_string(), "75;89");
    }

    #[test]
    fn garbage_is_a_clear_error() {
        for bad in [
            "",
            "  ;, ",
            "sm_",
            "999",
            "8.",
            "compute_86a-virtual-real",
            "8️⃣6",
            "ß",
            "sm_86-virtual",
            "compute_86-real",
            "8",
            "086",
            ".6",
            "8.66",
            "sm_8x",
            "1000",
            "0.5",
            "a",
            "-real",
        ] {
            let e = parse_arch_list(bad).expect_err(bad);
            assert_eq!(e.code, "arch-invalid", "{bad}");
            assert!(
                e.message
                    .contains(&format!("`{}`", bad.trim().escape_debug()))
                    || bad.trim().is_empty()
                    || bad.contains(';'),
                "{bad}: {}",
                e.message
            );
            assert!(e.help[0].contains("sm_86"), "{bad}");
        }
        let e = parse_arch_list("80;sm_").unwrap_err();
        assert!(e.message.contains("`sm_` in `80;sm_`"), "{}", e.message);
        // The suggestion spells what the suffix asked for.
        let e = parse_arch_list("sm_86+PTX").unwrap_err();
        assert!(e.message.contains("write `sm_86` or `86`"), "{}", e.message);
        let e = parse_arch_list("compute_90a-real").unwrap_err();
        assert!(
            e.message.contains("write `compute_90a` or `90a-real`"),
            "{}",
            e.message
        );
        let e = parse_arch_list("999").unwrap_err();
        assert!(e.message.contains("99.9 does not exist"), "{}", e.message);
    }

    #[test]
    fn names() {
        let a = Arch::new(9, 0).with_variant(Variant::Specific);
        assert_eq!(a.sm_name(), "sm_90a");
        assert_eq!(a.compute_name(), "compute_90a");
        assert_eq!(Arch::new(10, 0).to_string(), "100");
        assert_eq!(
            Arch::new(12, 1).with_variant(Variant::Family).sm_name(),
            "sm_121f"
        );
    }

    fn arb_target() -> impl Strategy<Value = ArchTarget> {
        (
            1u32..=MAX_PLAUSIBLE_MAJOR,
            0u32..=9,
            prop_oneof![
                Just(Variant::Plain),
                Just(Variant::Family),
                Just(Variant::Specific)
            ],
            prop_oneof![
                Just(CodeKind::Real),
                Just(CodeKind::Virtual),
                Just(CodeKind::Both)
            ],
        )
            .prop_map(|(ma, mi, v, k)| ArchTarget {
                arch: Arch::new(ma, mi).with_variant(v),
                kind: k,
            })
    }

    fn arb_request() -> impl Strategy<Value = ArchRequest> {
        prop_oneof![
            8 => arb_target().prop_map(ArchRequest::Target),
            1 => Just(ArchRequest::Native),
            1 => Just(ArchRequest::All),
            1 => Just(ArchRequest::AllMajor),
        ]
    }

    /// Any text either parses to a list that survives display and reparse, or
    /// is an `arch-invalid` error with a message and help.
    fn check_any_text(s: &str) -> Result<(), TestCaseError> {
        match parse_arch_list(s) {
            Ok(spec) => {
                let again = spec.to_string().parse::<ArchSpec>();
                prop_assert_eq!(again.ok(), Some(spec), "`{}`", s);
            }
            Err(e) => {
                prop_assert_eq!(e.code, "arch-invalid");
                prop_assert!(!e.message.is_empty() && !e.help.is_empty(), "`{}`", s);
            }
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn display_parse_round_trips(reqs in proptest::collection::vec(arb_request(), 1..8)) {
            let spec = ArchSpec(reqs);
            let text = spec.to_string();
            prop_assert_eq!(text.parse::<ArchSpec>().unwrap(), spec);
        }

        #[test]
        fn other_spellings_agree(t in arb_target()) {
            let a = t.arch;
            let sm = parse_arch_list(&a.sm_name()).unwrap();
            prop_assert_eq!(sm.0[0], ArchRequest::Target(ArchTarget { arch: a, kind: CodeKind::Real }));
            let compute = parse_arch_list(&a.compute_name()).unwrap();
            prop_assert_eq!(compute.0[0], ArchRequest::Target(ArchTarget { arch: a, kind: CodeKind::Virtual }));
            let dotted = format!("{}.{}{}+PTX", a.cc.major, a.cc.minor, a.variant.suffix());
            prop_assert_eq!(parse_arch_list(&dotted).unwrap().0[0], ArchRequest::Target(ArchTarget { arch: a, kind: CodeKind::Both }));
        }

        #[test]
        fn never_panics_on_arbitrary_text(s in "\\PC*") {
            check_any_text(&s)?;
        }

        #[test]
        fn never_panics_on_arch_like_text(s in "[sSmMcCoOpPuUtTeE_0-9.aAfF+rRlLvViI;, -]{0,24}") {
            check_any_text(&s)?;
        }

        #[test]
        fn never_panics_on_near_misses(s in "(sm_|compute_|)[0-9]{0,4}(\\.[0-9]{0,2})?[afAF]?(-real|-virtual|\\+PTX|-|\\+)*") {
            check_any_text(&s)?;
        }
    }
}
