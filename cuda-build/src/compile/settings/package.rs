//! The package being built: its directory, its `[package.metadata.cuda]`,
//! and what its own Cargo.toml and build script say about the `launchers`
//! feature.

use cuda_toolchain::env::{Env, Var};
use cuda_toolchain::metadata::CudaMetadata;
use cuda_toolchain::Error;
use std::path::{Path, PathBuf};

/// `CARGO_MANIFEST_DIR`, else the current directory.
pub(crate) fn package_dir(env: &Env) -> PathBuf {
    env.get_os(Var::CargoManifestDir)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_default()
}

/// `[package.metadata.cuda]` of the package being built, read once per
/// build; a directory without Cargo.toml (a test, a tool) has none.
pub(crate) fn metadata(manifest_dir: &Path) -> Result<CudaMetadata, Error> {
    if !manifest_dir.join("Cargo.toml").is_file() {
        return Ok(CudaMetadata::default());
    }
    cuda_toolchain::metadata::read(manifest_dir)
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
