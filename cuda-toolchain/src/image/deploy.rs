//! Deployment targets: parsed from `--gpu`/`--driver` style text and from
//! `[package.metadata.cuda] deploy = [...]`, and the build-time check that a
//! planned build can run on each of them.
//!
//! ```toml
//! [package.metadata.cuda]
//! # A GPU arch or product name, optionally `@` a driver version; or a table.
//! deploy = ["sm_75", "RTX 4090@535.104.05", { gpu = "A100", driver = "550.54" }]
//! ```

use std::path::Path;

use super::verdict::{judge_entries, Outcome, Target};
use super::{Code, Compression, ImageEntry};
use crate::arch::{Arch, ComputeCapability};
use crate::plan::ArchPlan;
use crate::Error;

/// Parses one GPU: an arch (`sm_86`, `86`, `8.6`) or a product name
/// (`RTX 4090`, `NVIDIA A100-SXM4-40GB`).
pub fn parse_gpu(item: &str) -> Option<ComputeCapability> {
    let item = item.trim();
    if item.is_empty() {
        return None;
    }
    if let Ok(a) = Arch::parse(item) {
        return Some(a.cc);
    }
    crate::facts::cc_for_product(item)
}

/// Parses `--gpu`: GPUs separated by commas (`sm_86,sm_90`, `RTX 4090`).
/// `flag` names the flag or key in errors.
pub fn parse_gpu_list(text: &str, flag: &str) -> Result<Vec<Target>, Error> {
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let cc = parse_gpu(item).ok_or_else(|| {
            Error::new(
                "invalid-argument",
                format!("{flag} `{item}` is neither a GPU arch nor a known GPU product"),
            )
            .with_help(format!(
                "write an arch (`sm_86`, `8.6`) or a product name (`RTX 4090`, `A100`, `H100`), several separated by commas: {flag} sm_86,sm_90"
            ))
        })?;
        out.push(Target::gpu(item, cc));
    }
    if out.is_empty() {
        return Err(
            Error::new("invalid-argument", format!("{flag} names no GPU")).with_help(format!(
                "for example {flag} sm_86,sm_90 or {flag} \"RTX 4090\""
            )),
        );
    }
    Ok(out)
}

/// Checks a driver version such as `535.104.05` (for `--driver`).
pub fn parse_driver(text: &str, flag: &str) -> Result<String, Error> {
    let t = text.trim();
    match crate::facts::parse_driver_version(t) {
        Some(parts) if parts[0] >= 100 => Ok(t.to_string()),
        _ => Err(Error::new(
            "invalid-argument",
            format!("{flag} `{text}` is not an NVIDIA driver version"),
        )
        .with_help(format!(
            "write the version `nvidia-smi` prints, e.g. {flag} 535.104.05 (or just the branch, {flag} 535)"
        ))),
    }
}

/// Reads `[package.metadata.cuda] deploy` from `manifest_dir/Cargo.toml`;
/// empty when the file, the table or the key is absent.
pub fn read_deploy(manifest_dir: &Path) -> Result<Vec<Target>, Error> {
    let path = manifest_dir.join("Cargo.toml");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(Vec::new());
    };
    parse_deploy(&text, &path)
}

fn parse_deploy(text: &str, path: &Path) -> Result<Vec<Target>, Error> {
    let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        Error::new(
            "metadata-invalid",
            format!("`{}` is not valid TOML", path.display()),
        )
        .with_detail(e.to_string())
    })?;
    let Some(list) = doc
        .get("package")
        .and_then(|p| p.get("metadata"))
        .and_then(|m| m.get("cuda"))
        .and_then(|c| c.get("deploy"))
    else {
        return Ok(Vec::new());
    };
    let bad = |what: String| {
        Error::new(
            "metadata-invalid",
            format!("`deploy` under [package.metadata.cuda] in `{}`: {what}", path.display()),
        )
        .with_help("write it as `deploy = [\"sm_75\", \"RTX 4090@535.104.05\", { gpu = \"A100\", driver = \"550.54\" }]`")
    };
    let items = list
        .as_array()
        .ok_or_else(|| bad("is not an array".into()))?;
    let key = "[package.metadata.cuda] deploy";
    let mut out = Vec::new();
    for (n, item) in items.iter().enumerate() {
        let (gpu, driver) = match item {
            toml::Value::String(s) => match s.split_once('@') {
                Some((g, d)) => (g.to_string(), Some(d.to_string())),
                None => (s.clone(), None),
            },
            toml::Value::Table(t) => {
                let gpu = t
                    .get("gpu")
                    .and_then(|v| v.as_str())
                    .ok_or_else(|| bad(format!("item {} has no `gpu = \"...\"` string", n + 1)))?;
                let driver = match t.get("driver") {
                    None => None,
                    Some(toml::Value::String(d)) => Some(d.clone()),
                    Some(_) => {
                        return Err(bad(format!("`driver` in item {} is not a string", n + 1)))
                    }
                };
                (gpu.to_string(), driver)
            }
            other => {
                return Err(bad(format!(
                    "item {} is a {}, not a string or a table",
                    n + 1,
                    other.type_str()
                )))
            }
        };
        let driver = driver.map(|d| parse_driver(&d, key)).transpose()?;
        for t in parse_gpu_list(&gpu, key)? {
            out.push(t.with_driver(driver.as_deref(), None));
        }
    }
    Ok(out)
}

/// The entries a build with this plan will embed: SASS for each planned
/// arch (from `toolkit`) and the planned PTX (at the toolkit's PTX ISA).
pub fn planned_entries(plan: &ArchPlan, toolkit: Option<&semver::Version>) -> Vec<ImageEntry> {
    let isa =
        toolkit.and_then(|v| crate::facts::ptx_isa_for_cuda((v.major as u32, v.minor as u32)));
    let entry = |code, arch: Arch, ptx_isa| ImageEntry {
        code,
        target: match code {
            Code::Sass => arch.sm_name(),
            Code::Ptx => arch.compute_name(),
        },
        arch,
        ptx_isa,
        compression: Compression::None,
        size: 0,
        toolkit: toolkit.cloned(),
        kernels: None,
    };
    let mut out: Vec<ImageEntry> = plan
        .sass
        .iter()
        .map(|&a| entry(Code::Sass, a, None))
        .collect();
    out.extend(plan.ptx.map(|a| entry(Code::Ptx, a, isa)));
    out
}

/// The build-time deploy check: fails (with the diagnosis code) when the
/// planned images cannot run on a target listed in
/// `[package.metadata.cuda] deploy` of `manifest_dir`: no SASS or PTX for
/// its GPU (`no-kernel-image-for-device`), PTX newer than its driver can JIT
/// (`ptx-too-new-for-driver`), SASS from a toolkit its driver cannot run
/// (`driver-too-old`). A package without `deploy` passes.
pub fn check_plan(
    manifest_dir: &Path,
    plan: &ArchPlan,
    toolkit: Option<&semver::Version>,
) -> Result<(), Error> {
    let targets = read_deploy(manifest_dir)?;
    check_plan_on(&targets, plan, toolkit)
}

/// [`check_plan`] against targets already read.
pub fn check_plan_on(
    targets: &[Target],
    plan: &ArchPlan,
    toolkit: Option<&semver::Version>,
) -> Result<(), Error> {
    let entries = planned_entries(plan, toolkit);
    let all = plan.targets_display().join(", ");
    for t in targets {
        let v = judge_entries(&entries, &all, t);
        if v.outcome == Outcome::WillNotRun {
            let code = v.code.unwrap_or("no-kernel-image-for-device");
            let mut e = Error::new(
                code,
                format!(
                    "the planned kernels [{all}] would not run on deploy target {}: {}",
                    t.describe(),
                    v.reason
                ),
            );
            if let Some(fix) = v.fix {
                e = e.with_help(fix);
            }
            return Err(e.with_help(
                "or drop that target from `deploy` under [package.metadata.cuda] if it is no longer deployed to",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::ArchSource;

    fn plan(sass: &[&str], ptx: Option<&str>) -> ArchPlan {
        ArchPlan {
            sass: sass.iter().map(|s| Arch::parse(s).unwrap()).collect(),
            ptx: ptx.map(|s| Arch::parse(s).unwrap()),
            source: ArchSource::CudaArchs,
            warnings: vec![],
        }
    }

    #[test]
    fn deploy_table_forms() {
        let t = parse_deploy(
            "[package.metadata.cuda]\ndeploy = [\"sm_75\", \"RTX 4090@535.104.05\", { gpu = \"A100\", driver = \"550.54\" }]\n",
            Path::new("/x/Cargo.toml"),
        )
        .unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(t[0].compute_capability, ComputeCapability::new(7, 5));
        assert_eq!(t[1].compute_capability, ComputeCapability::new(8, 9));
        assert_eq!(t[1].driver_cuda, Some((12, 2)));
        assert_eq!(t[2].driver.as_deref(), Some("550.54"));
        let e = parse_deploy(
            "[package.metadata.cuda]\ndeploy = [\"GTX 9999 Ultra\"]\n",
            Path::new("/x/Cargo.toml"),
        )
        .unwrap_err();
        assert_eq!(e.code, "invalid-argument");
        assert!(e.message.contains("GTX 9999"), "{e}");
        let e = parse_deploy(
            "[package.metadata.cuda]\ndeploy = \"sm_80\"\n",
            Path::new("/x/Cargo.toml"),
        )
        .unwrap_err();
        assert!(e.message.contains("not an array"), "{e}");
    }

    #[test]
    fn plan_against_deploy_targets() {
        let tk = semver::Version::new(13, 0, 88);
        let t75 = parse_gpu_list("sm_75", "deploy").unwrap();
        // A bf16 kernel planned for sm_80+ cannot serve a Turing target.
        let e = check_plan_on(&t75, &plan(&["80", "90"], Some("90")), Some(&tk)).unwrap_err();
        assert_eq!(e.code, "no-kernel-image-for-device");
        assert!(e.message.contains("sm_75"), "{e}");
        // CUDA 13.0 PTX (ISA 9.0) cannot be JIT-compiled by a 535 driver.
        let t120 = vec![Target::gpu("sm_120", ComputeCapability::new(12, 0))
            .with_driver(Some("535.104.05"), None)];
        let e = check_plan_on(&t120, &plan(&["90"], Some("90")), Some(&tk)).unwrap_err();
        assert_eq!(e.code, "ptx-too-new-for-driver");
        // SASS from CUDA 13 on a 535 (CUDA 12.2) driver: the driver is too old.
        let t90 = vec![Target::gpu("sm_90", ComputeCapability::new(9, 0))
            .with_driver(Some("535.104.05"), None)];
        let e = check_plan_on(&t90, &plan(&["90"], None), Some(&tk)).unwrap_err();
        assert_eq!(e.code, "driver-too-old");
        // Covered: passes.
        let ok = parse_gpu_list("sm_86,RTX 4090", "deploy").unwrap();
        check_plan_on(&ok, &plan(&["80"], Some("80")), Some(&tk)).unwrap();
    }
}
