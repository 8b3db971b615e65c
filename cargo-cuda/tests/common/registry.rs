//! A local stand-in for crates.io, made of what `cargo package` produced.
//!
//! The published packages (cuda-toolchain, cuda-build, cuda-install,
//! cuda-build-cli) are packaged into `.crate` files exactly as `cargo publish`
//! would upload them, unpacked into a directory source beside every
//! third-party crate the workspace locks (`cargo vendor`), and crates.io is
//! replaced by that directory in a `.cargo/config.toml` at the registry's
//! root, with `net.offline = true`. A crate made below [`Registry::work`]
//! therefore resolves `cuda-build = "0.1"` from the packaged `.crate`, not
//! from this checkout, and nothing reaches the network while it builds.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use super::{real_cargo, text, workspace_root};

/// The packages this project publishes, in dependency order.
pub const PUBLISHED: &[&str] = &[
    "cuda-toolchain",
    "cuda-build",
    "cuda-install",
    "cuda-build-cli",
];

/// A built local registry.
pub struct Registry {
    /// Its root: `.cargo/config.toml`, `vendor/`, `crates/`, `work/`.
    pub root: PathBuf,
}

impl Registry {
    /// The directory source that replaces crates.io.
    pub fn vendor(&self) -> PathBuf {
        self.root.join("vendor")
    }

    /// Where test crates go: below the root, so cargo finds its config.
    pub fn work(&self, name: &str) -> PathBuf {
        let dir = self.root.join("work").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The `.crate` file of a published package.
    pub fn crate_file(&self, package: &str) -> PathBuf {
        let version = env!("CARGO_PKG_VERSION");
        self.root
            .join("crates")
            .join(format!("{package}-{version}.crate"))
    }

    /// Adds a `.crate` file (made by `cargo package` of any crate) to the
    /// directory source, as crates.io would serve it.
    pub fn add_crate(&self, krate: &Path) {
        unpack(krate, &self.vendor());
    }

    /// Adds a package to the directory source by hand (a stand-in for a
    /// crates.io package this test cannot build, such as another project's
    /// `cargo-cuda`). `files` are paths inside the package and contents.
    pub fn add_package(&self, name: &str, version: &str, files: &[(&str, &str)]) {
        let dir = self.vendor().join(format!("{name}-{version}"));
        for (path, body) in files {
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        }
        write_checksum(&dir, &sha256_hex(format!("{name}-{version}").as_bytes()));
    }
}

/// The registry for this test binary, made once.
pub fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(build)
}

fn build() -> Registry {
    let binary = std::env::current_exe().unwrap();
    let stem = binary.file_stem().unwrap().to_string_lossy().into_owned();
    let root = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("local-registry")
        .join(stem);
    if root.exists() {
        std::fs::remove_dir_all(&root).unwrap();
    }
    std::fs::create_dir_all(root.join("crates")).unwrap();
    let ws = workspace_root();

    // The .crate files, as `cargo publish` would upload them.
    let pkg_target = root.join("package-target");
    let mut cmd = Command::new(real_cargo());
    cmd.current_dir(&ws)
        .args(["package", "--no-verify", "--allow-dirty", "--target-dir"])
        .arg(&pkg_target);
    for p in PUBLISHED {
        cmd.args(["-p", p]);
    }
    run(cmd, "cargo package");
    for p in PUBLISHED {
        let name = format!("{p}-{}.crate", env!("CARGO_PKG_VERSION"));
        std::fs::rename(
            pkg_target.join("package").join(&name),
            root.join("crates").join(&name),
        )
        .unwrap();
    }
    std::fs::remove_dir_all(&pkg_target).unwrap();

    // Every third-party crate the workspace locks, as crates.io serves it.
    let mut cmd = Command::new(real_cargo());
    cmd.current_dir(&ws)
        .args(["vendor", "--versioned-dirs", "--manifest-path"])
        .arg(ws.join("Cargo.toml"))
        .arg(root.join("vendor"));
    run(cmd, "cargo vendor");

    // The packaged crates beside them, each checksummed like a download.
    let registry = Registry { root };
    for p in PUBLISHED {
        unpack(&registry.crate_file(p), &registry.vendor());
    }
    let vendor = registry.vendor();
    std::fs::create_dir_all(registry.root.join(".cargo")).unwrap();
    std::fs::write(
        registry.root.join(".cargo/config.toml"),
        format!(
            "# crates.io, as the packaged crates and the workspace's locked dependencies\n\
             [source.crates-io]\nreplace-with = \"local-registry\"\n\n\
             [source.local-registry]\ndirectory = \"{}\"\n\n\
             [net]\noffline = true\n",
            vendor.display()
        ),
    )
    .unwrap();
    registry
}

/// Unpacks a `.crate` (a gzipped tar of `<name>-<version>/…`) into `into`,
/// with the `.cargo-checksum.json` a directory source needs.
fn unpack(krate: &Path, into: &Path) {
    let mut cmd = Command::new("tar");
    cmd.arg("-xzf").arg(krate).arg("-C").arg(into);
    run(cmd, "tar -xzf");
    let stem = krate.file_stem().unwrap();
    let bytes = std::fs::read(krate).unwrap();
    write_checksum(&into.join(stem), &sha256_hex(&bytes));
}

/// `files` left empty: cargo then checks no file, only records `package`
/// (the `.crate`'s SHA-256, as crates.io's index would give it) in Cargo.lock.
fn write_checksum(dir: &Path, package: &str) {
    std::fs::write(
        dir.join(".cargo-checksum.json"),
        format!("{{\"files\":{{}},\"package\":\"{package}\"}}"),
    )
    .unwrap();
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn run(mut cmd: Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{what} failed:\n{stdout}\n{stderr}");
}
