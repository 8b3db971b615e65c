//! The manifest of the kernel images a package ships:
//! `<package>/cuda-prebuilt/manifest.jsonl`, schema `cuda-build-prebuilt`
//! version 1 (docs/prebuilt.md). JSON lines, so a change shows in a diff as
//! the lines of the outputs it touched: the first line is the [`Header`],
//! then one [`Record`] per shipped output, sorted. The images themselves are
//! `cuda-prebuilt/images/<sha256>.zst` (zstd), named by their content.

use cuda_toolchain::Error;
use std::path::{Path, PathBuf};

/// The folder inside the package.
pub const DIR: &str = "cuda-prebuilt";
/// The manifest's file name inside [`DIR`].
pub const MANIFEST: &str = "manifest.jsonl";
/// The schema name on the header line.
pub const SCHEMA: &str = "cuda-build-prebuilt";
/// The schema version this cuda-build writes and reads.
pub const VERSION: u32 = 1;

/// The first line: what was prebuilt.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Header {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// [`VERSION`]; a reader refuses a newer one.
    pub version: u32,
    /// The package's name.
    pub package: String,
    /// The declared arch set the images were built for (`80;86;89;90`).
    pub arch: String,
    /// The target triples the build ran for.
    pub targets: Vec<String>,
    /// The cargo profiles the build ran in.
    pub profiles: Vec<String>,
    /// Extra cargo arguments the build ran with (`--features x`).
    #[serde(default)]
    pub cargo_args: Vec<String>,
}

/// One shipped output and everything it was built from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Record {
    /// The `Build`'s module name (`Build::module_name`): which build of the script.
    pub module: String,
    /// The source, relative to the package, with `/` separators.
    pub source: String,
    /// The output kind: `ptx`, `cubin`, `fatbin` or `staticlib`.
    pub kind: String,
    /// The output's role in its job: `out.ptx`, `out.fatbin`, `out.o`, `sm_80.cubin`.
    pub role: String,
    /// What the image holds, in nvcc's words (`sm_80`, `compute_90`): its arch plan.
    pub targets: Vec<String>,
    /// The target triple (static libraries only; device-only outputs are
    /// the same for every target).
    pub target: Option<String>,
    /// nvcc's arguments other than defines, arch flags and `-ccbin`, in
    /// order; package paths relative to it.
    pub flags: Vec<String>,
    /// The `-D` arguments, in order.
    pub defines: Vec<String>,
    /// Every package-local file the compile read (the source first, then
    /// the headers) and its SHA-256.
    pub inputs: Vec<(String, String)>,
    /// The SHA-256 of the image's bytes.
    pub sha256: String,
    /// The image's size in bytes.
    pub size: u64,
    /// Where the image is stored, relative to the manifest's folder.
    pub file: String,
    /// The nvcc version that compiled it.
    pub nvcc: String,
    /// The host compiler nvcc used (`gcc 13.3.0`), when known.
    pub host_compiler: Option<String>,
    /// The kernels it defines.
    pub entries: Vec<String>,
}

impl Record {
    /// The order of the manifest's lines.
    pub fn sort_key(&self) -> (&str, &str, &str, &Option<String>, &[String], &str) {
        (
            &self.module,
            &self.source,
            &self.role,
            &self.target,
            &self.targets,
            &self.sha256,
        )
    }
}

/// A manifest error naming the file and line.
pub(crate) fn invalid(path: &Path, line: usize, why: &str) -> Error {
    Error::new(
        "prebuilt-manifest-invalid",
        format!(
            "`{}` line {line} is not a prebuilt-image manifest line: {why}",
            path.display()
        ),
    )
    .with_help(
        "run `cargo cuda prebuild` again with this cuda-build (the schema is in docs/prebuilt.md)",
    )
}

/// Reads a manifest: its header and records.
pub fn read(path: &Path) -> Result<(Header, Vec<Record>), Error> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::new(
            "prebuilt-manifest-invalid",
            format!("cannot read `{}`: {e}", path.display()),
        )
        .with_help("the package's cuda-prebuilt/ folder is incomplete: get the package again")
    })?;
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((_, first)) = lines.next() else {
        return Err(invalid(path, 1, "the file is empty"));
    };
    let header: Header =
        serde_json::from_str(first).map_err(|e| invalid(path, 1, &e.to_string()))?;
    if header.schema != SCHEMA {
        return Err(invalid(
            path,
            1,
            &format!("schema `{}`, expected `{SCHEMA}`", header.schema),
        ));
    }
    if header.version > VERSION {
        return Err(invalid(
            path,
            1,
            &format!(
                "schema version {} is newer than this cuda-build reads ({VERSION})",
                header.version
            ),
        )
        .with_help("update cuda-build"));
    }
    let records = parse_records(path, lines)?;
    Ok((header, records))
}

/// Record lines, each checked (a stored file must stay inside the folder).
pub(crate) fn parse_records<'a>(
    path: &Path,
    lines: impl Iterator<Item = (usize, &'a str)>,
) -> Result<Vec<Record>, Error> {
    let mut records = Vec::new();
    for (i, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let r: Record =
            serde_json::from_str(line).map_err(|e| invalid(path, i + 1, &e.to_string()))?;
        let plain = |s: &str| {
            !s.is_empty()
                && Path::new(s)
                    .components()
                    .all(|c| matches!(c, std::path::Component::Normal(_)))
        };
        if !plain(&r.file) || !plain(&r.source) || !r.inputs.iter().all(|(p, _)| plain(p)) {
            return Err(invalid(
                path,
                i + 1,
                "a path is absolute or leaves the package",
            ));
        }
        records.push(r);
    }
    Ok(records)
}

/// The manifest's text: the header, then the records sorted.
pub fn render(header: &Header, records: &[Record]) -> String {
    let mut sorted: Vec<&Record> = records.iter().collect();
    sorted.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    let mut out = serde_json::to_string(header).unwrap_or_default();
    out.push('\n');
    for r in sorted {
        out.push_str(&serde_json::to_string(r).unwrap_or_default());
        out.push('\n');
    }
    out
}

/// `<package>/cuda-prebuilt/manifest.jsonl`.
pub fn path_in(package_dir: &Path) -> PathBuf {
    package_dir.join(DIR).join(MANIFEST)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn record(source: &str, targets: &[&str]) -> Record {
        Record {
            module: "kernels".into(),
            source: source.into(),
            kind: "ptx".into(),
            role: "out.ptx".into(),
            targets: targets.iter().map(|s| s.to_string()).collect(),
            target: None,
            flags: vec!["-std=c++17".into()],
            defines: vec![],
            inputs: vec![(source.into(), "ab".into())],
            sha256: "cd".into(),
            size: 3,
            file: "images/cd.zst".into(),
            nvcc: "13.0.88".into(),
            host_compiler: Some("gcc 13.3.0".into()),
            entries: vec!["k".into()],
        }
    }

    #[test]
    fn round_trip_sorted_and_checked() {
        let d = tempfile::tempdir().unwrap();
        let header = Header {
            schema: SCHEMA.into(),
            version: VERSION,
            package: "p".into(),
            arch: "80;90".into(),
            targets: vec![],
            profiles: vec!["release".into()],
            cargo_args: vec![],
        };
        let recs = vec![
            record("src/b.cu", &["compute_80"]),
            record("src/a.cu", &["compute_90"]),
        ];
        let text = render(&header, &recs);
        assert!(text.lines().nth(1).unwrap().contains("src/a.cu"), "{text}");
        let p = d.path().join(MANIFEST);
        std::fs::write(&p, &text).unwrap();
        let (h, r) = read(&p).unwrap();
        assert_eq!(h, header);
        assert_eq!(r.len(), 2);

        let evil = text.replace("images/cd.zst", "../../etc/passwd");
        std::fs::write(&p, evil).unwrap();
        let e = read(&p).unwrap_err();
        assert_eq!(e.code, "prebuilt-manifest-invalid");
        assert!(e.message.contains("line 2"), "{e}");
        std::fs::write(&p, text.replace("\"version\":1", "\"version\":9")).unwrap();
        assert!(read(&p).unwrap_err().message.contains("newer"));
    }
}
