//! The calls `compile` makes into the other modules (toolkit discovery, the
//! arch plan, GPU detection, diagnosis), in one place.

use cuda_toolchain::env::Env;
use cuda_toolchain::metadata::CudaMetadata;
use cuda_toolchain::plan::{ArchInputs, ArchPlan};
use cuda_toolchain::toolkit::Toolkit;
use cuda_toolchain::Error;
use std::path::Path;

/// The toolkit the environment selects (honouring the package's
/// `[package.metadata.cuda] toolkit`), and the other toolkits found, kept so
/// that a failure can name one that would work without searching again.
pub(crate) fn find_toolkit(env: &Env, md: &CudaMetadata) -> Result<(Toolkit, Vec<Toolkit>), Error> {
    let opts = cuda_toolchain::toolkit::DiscoverOptions {
        requirement: md.toolkit.clone(),
        ..Default::default()
    };
    let found = cuda_toolchain::toolkit::discover(env, &opts)?;
    let others = found.candidates.clone();
    let tk = found.into_selected()?;
    let others = others.into_iter().filter(|c| c.nvcc != tk.nvcc).collect();
    Ok((tk, others))
}

/// The arch plan for this toolkit and these inputs (explicit, metadata,
/// fallback); the GPUs are probed only when the plan needs them.
pub(crate) fn plan(env: &Env, tk: &Toolkit, inputs: &ArchInputs) -> Result<ArchPlan, Error> {
    let detect =
        || cuda_toolchain::probe::probe(env, &cuda_toolchain::probe::ProbeOptions::default()).gpus;
    cuda_toolchain::plan::plan_for_toolkit(env, tk, inputs, &detect)
}

/// `[package.metadata.cuda]` of the package being built, read once per
/// build; a directory without Cargo.toml (a test, a tool) has none.
pub(crate) fn metadata(manifest_dir: &Path) -> Result<CudaMetadata, Error> {
    if !manifest_dir.join("Cargo.toml").is_file() {
        return Ok(CudaMetadata::default());
    }
    cuda_toolchain::metadata::read(manifest_dir)
}

/// Rendered explanations for a failed compile's output, most likely first.
/// `others`: the other installed toolkits, so a fix can name one that
/// would work ("CUDA 12.4 is installed at ...: set CUDA_HOME=...").
pub(crate) fn explain(stderr: &str, tk: &Toolkit, others: &[Toolkit]) -> Vec<String> {
    let mut toolkits = vec![tk.clone()];
    toolkits.extend(others.iter().cloned());
    let ctx = cuda_toolchain::diagnose::Context {
        toolkits,
        selected: Some(0),
        probe: None,
    };
    cuda_toolchain::diagnose::diagnose(stderr, &ctx)
        .iter()
        .map(|d| cuda_toolchain::diagnose::render(d).trim_end().to_string())
        .collect()
}

/// Whether the package's own Cargo.toml turns on cuda-build's `launchers`
/// feature (in `[build-dependencies]` or a target's) while its build script
/// never calls `launchers(`: then the feature alone does nothing, and the
/// build says so. (The feature itself may come from another crate, since
/// Cargo unifies features; and a build script may run several builds, only
/// some with launchers, so a mention anywhere in it is enough.)
#[cfg(feature = "launchers")]
pub(crate) fn launchers_feature_unused(manifest_dir: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(manifest_dir.join("Cargo.toml")) else {
        return false;
    };
    let Ok(doc) = text.parse::<toml::Table>() else {
        return false;
    };
    let script = doc
        .get("package")
        .and_then(|p| p.get("build"))
        .and_then(toml::Value::as_str)
        .unwrap_or("build.rs");
    match std::fs::read_to_string(manifest_dir.join(script)) {
        Ok(code) if !code.contains("launchers(") => {}
        _ => return false,
    }
    let asks = |deps: Option<&toml::Value>| {
        deps.and_then(toml::Value::as_table)
            .into_iter()
            .flatten()
            .filter_map(|(name, dep)| Some((name, dep.as_table()?)))
            .filter(|(name, dep)| {
                *name == "cuda-build"
                    || dep.get("package").and_then(toml::Value::as_str) == Some("cuda-build")
            })
            .any(|(_, dep)| {
                dep.get("features")
                    .and_then(toml::Value::as_array)
                    .is_some_and(|f| f.iter().any(|f| f.as_str() == Some("launchers")))
            })
    };
    asks(doc.get("build-dependencies"))
        || doc
            .get("target")
            .and_then(toml::Value::as_table)
            .into_iter()
            .flatten()
            .any(|(_, t)| asks(t.get("build-dependencies")))
}

#[cfg(all(test, feature = "launchers"))]
mod tests {
    use super::*;

    #[test]
    fn launchers_feature_unused_by_the_build_script() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        let unused = || launchers_feature_unused(dir.path());
        let plain = "fn main() { cuda_build::compile::Build::new().dir(\"cu\").compile(); }";
        write("build.rs", plain);
        assert!(!unused(), "no Cargo.toml");
        write("Cargo.toml", "[build-dependencies]\ncuda-build = { path = \"../cuda-build\", features = [\"launchers\"] }\n");
        assert!(unused());
        write(
            "build.rs",
            "fn main() { Build::new().launchers(true).compile(); Build::new().compile(); }",
        );
        assert!(!unused(), "the build script asks for launchers");
        write("build.rs", plain);
        write("Cargo.toml", "[build-dependencies]\ncuda-build = { workspace = true }\n[dependencies]\nx = { features = [\"launchers\"] }\n");
        assert!(!unused(), "the feature is not asked for");
        write("Cargo.toml", "[package]\nbuild = \"src/b.rs\"\n[target.'cfg(unix)'.build-dependencies]\ncb = { package = \"cuda-build\", version = \"0.1\", features = [\"launchers\"] }\n");
        assert!(!unused(), "src/b.rs does not exist");
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        write("src/b.rs", plain);
        assert!(unused());
        write("Cargo.toml", "not toml [");
        assert!(!unused());
    }
}
