//! candle-kernels 0.11.1 from crates.io, cut down to a few kernels: the real
//! crate the port tests (real_crate.rs, prebuilt.rs) build.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{real_cargo, text};

/// The kernels the tests keep (the whole crate takes minutes per arch).
pub const KEPT: [&str; 3] = ["affine.cu", "fill.cu", "mmq_quantize.cu"];

/// The published candle-kernels 0.11.1 in cargo's registry, fetched with a
/// throwaway crate in `scratch` that also asks for `extra_deps` (TOML lines).
pub fn published(scratch: &Path, extra_deps: &str) -> PathBuf {
    let dir = scratch.join("fetch");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"candle-fetch\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\
             [dependencies]\ncandle-kernels = \"=0.11.1\"\n{extra_deps}[workspace]\n"
        ),
    )
    .unwrap();
    std::fs::write(dir.join("src/lib.rs"), "").unwrap();
    let out = Command::new(real_cargo())
        .args(["metadata", "--format-version", "1"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(
        out.status.success(),
        "cargo could not fetch candle-kernels 0.11.1 from crates.io (this test needs the network once):\n{stderr}"
    );
    let meta: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let manifest = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "candle-kernels")
        .and_then(|p| p["manifest_path"].as_str())
        .expect("candle-kernels in cargo metadata");
    Path::new(manifest).parent().unwrap().to_path_buf()
}

/// A copy of `published` at `to` with only [`KEPT`]'s kernels, without
/// cargo's packaging leftovers, and a lib.rs that includes only the PTX
/// module (the real one needs every kernel).
pub fn trimmed_copy(published: &Path, to: &Path) {
    workspace_tests::copy_dir(published, to);
    for f in ["Cargo.toml.orig", "Cargo.lock", ".cargo_vcs_info.json"] {
        let _ = std::fs::remove_file(to.join(f));
    }
    remove_other_kernels(&to.join("src"));
    std::fs::write(
        to.join("src/lib.rs"),
        "pub mod ptx { include!(concat!(env!(\"OUT_DIR\"), \"/ptx.rs\")); }\n",
    )
    .unwrap();
}

fn remove_other_kernels(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            remove_other_kernels(&path);
        } else if path.extension().is_some_and(|e| e == "cu")
            && !KEPT.iter().any(|k| path.file_name().unwrap() == *k)
        {
            std::fs::remove_file(&path).unwrap();
        }
    }
}
