//! The README and docs/ are code that runs: every Cargo.toml, build.rs,
//! src/*.rs and .cu snippet is extracted into a fresh crate outside the
//! workspace (this project's crates by version, from the packaged `.crate`
//! files in a local registry: common/registry.rs) and built with the real
//! nvcc 13.0. The README's crate is the done-when test of a new user's first
//! hour: from an empty directory, built by `cargo cuda build` and by
//! `cargo build` in turn, every unit fresh after the first build.

mod common;

use common::fresh;
use common::{cargo_cuda, plain_cargo, text, workspace_root};
use std::path::{Path, PathBuf};
use std::process::Command;

/// One fenced block of a markdown file.
#[derive(Debug)]
struct Snippet {
    lang: String,
    /// The file it belongs to, from its first line (`# Cargo.toml`,
    /// `// build.rs`), or `excerpt:` for an excerpt of generated code.
    file: Option<String>,
    body: String,
    line: usize,
}

fn snippets(markdown: &str) -> Vec<Snippet> {
    let mut out = Vec::new();
    let mut lines = markdown.lines().enumerate();
    while let Some((n, l)) = lines.next() {
        let Some(lang) = l.trim_start().strip_prefix("```") else {
            continue;
        };
        let lang = lang.trim().to_string();
        let mut body = Vec::new();
        for (_, l) in lines.by_ref() {
            if l.trim_start().starts_with("```") {
                break;
            }
            body.push(l);
        }
        let first = body.first().copied().unwrap_or("").trim();
        let file = first
            .strip_prefix("// ")
            .or_else(|| first.strip_prefix("# "))
            .filter(|f| {
                f.starts_with("excerpt of ")
                    || f.starts_with("shape of ")
                    || f.starts_with("config: ")
                    || f.ends_with(".rs")
                    || f.ends_with(".cu")
                    || *f == "Cargo.toml"
            })
            .map(str::to_string);
        out.push(Snippet {
            lang,
            file,
            body: body.join("\n") + "\n",
            line: n + 1,
        });
    }
    out
}

/// Writes the crate a document describes into `dir` (a folder of the local
/// registry's, so `cuda-build = "0.1"` resolves to the packaged crate): each
/// file snippet to its file (Cargo.toml snippets joined, with a `[package]`
/// header when the document shows only dependency lines). Every rust, toml
/// and cuda block must name its file. Returns the excerpts of generated code,
/// and whether the document gave any file at all.
fn write_crate(doc: &Path, dir: &Path) -> (Vec<Snippet>, bool) {
    let text = std::fs::read_to_string(doc).unwrap();
    let checkout = workspace_root();
    let mut manifest = String::new();
    let mut excerpts = Vec::new();
    let mut files = 0;
    for s in snippets(&text) {
        if !matches!(s.lang.as_str(), "rust" | "toml" | "cuda") {
            continue;
        }
        let Some(file) = s.file.clone() else {
            panic!(
                "{}:{}: a {} block must start with the file it belongs to \
                 (`// src/main.rs`, `# Cargo.toml`, `// excerpt of $OUT_DIR/kernels.rs`,\n\
                 `// shape of …` for an outline that is not compiled, `# config: PATH` for\n\
                 another tool's TOML file):\n{}",
                doc.display(),
                s.line,
                s.lang,
                s.body
            );
        };
        if file.starts_with("excerpt of ") {
            excerpts.push(s);
            continue;
        }
        if file.starts_with("shape of ") {
            // Says so in its first line: an outline whose values vary.
            continue;
        }
        if file.starts_with("config: ") {
            // Another tool's configuration file (sccache's): not part of the
            // crate, but it must still be valid TOML.
            if let Err(e) = s.body.parse::<toml::Table>() {
                panic!(
                    "{}:{}: {file} is not valid TOML: {e}",
                    doc.display(),
                    s.line
                );
            }
            continue;
        }
        files += 1;
        if file == "Cargo.toml" {
            manifest.push_str(&s.body);
            continue;
        }
        let path = dir.join(&file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        assert!(!path.exists(), "{}: two snippets for {file}", doc.display());
        std::fs::write(&path, &s.body).unwrap();
    }
    // `…` stands for this checkout in a path a document shows; the
    // project's own crates come by version from the local registry.
    let manifest = manifest.replace("…", checkout.to_str().unwrap());
    let manifest = if manifest.contains("[package]") {
        manifest
    } else {
        format!("[package]\nname = \"doc-crate\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n{manifest}")
    };
    // Its own workspace: the registry's work folder sits inside target/.
    std::fs::write(dir.join("Cargo.toml"), format!("{manifest}\n[workspace]\n")).unwrap();
    if !dir.join("src/main.rs").exists() && !dir.join("src/lib.rs").exists() {
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("src/lib.rs"), "").unwrap();
    }
    (excerpts, files > 0)
}

/// Each `pub const|mod|fn|static NAME` of an excerpt is in the generated module.
fn check_excerpts(excerpts: &[Snippet], target: &Path, doc: &Path) {
    if excerpts.is_empty() {
        return;
    }
    let generated: Vec<String> = walk(&target.join("debug/build"))
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "kernels.rs"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert!(
        !generated.is_empty(),
        "no generated kernels.rs under {}",
        target.display()
    );
    let item =
        regex::Regex::new(r"pub (?:unsafe )?(?:const|mod|fn|static) ([A-Za-z_0-9]+)").unwrap();
    for s in excerpts {
        for c in item.captures_iter(&s.body) {
            let name = &c[1];
            assert!(
                generated
                    .iter()
                    .any(|g| g.contains(&c[0]) || g.contains(&format!(" {name}"))),
                "{}:{}: `{}` is not in the generated module",
                doc.display(),
                s.line,
                &c[0]
            );
        }
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The done-when test: a crate made from the README alone, in an empty
/// directory outside the workspace. `cargo cuda env --write` records the
/// toolkit in its .cargo/config.toml, as the README suggests; after that no
/// CUDA variable is set in the environment at all, so both commands get the
/// toolkit from cargo's `[env]`. Built by `cargo cuda build`, then by
/// `cargo build` and `cargo cuda build` in turn, three times: every unit is
/// fresh after the first build. The program then runs: with a GPU it checks
/// its results, without one it says so in one line instead of panicking.
#[test]
fn readme_crate_builds_and_stays_fresh_whichever_command_builds_it() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let krate = common::registry::registry().work("mykernels");
    let readme = workspace_root().join("README.md");
    let (excerpts, _) = write_crate(&readme, &krate);
    for f in ["Cargo.toml", "build.rs", "src/main.rs", "cu/vector_add.cu"] {
        assert!(krate.join(f).is_file(), "the README gives {f}");
    }
    let target = common::shared_target();
    let out = cargo_cuda()
        .args(["env", "--write"])
        .current_dir(&krate)
        .env("CUDA_HOME", &root)
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let config = std::fs::read_to_string(krate.join(".cargo/config.toml")).unwrap();
    assert!(
        config.contains(&format!("CUDA_HOME = \"{}\"", root.display())),
        "{config}"
    );
    assert!(
        config.contains("CUDARC_CUDA_VERSION = \"13000\""),
        "{config}"
    );

    let build = |wrapped: bool| {
        let mut cmd = if wrapped { cargo_cuda() } else { plain_cargo() };
        cmd.arg("build")
            .current_dir(&krate)
            .env("CARGO_TARGET_DIR", &target);
        cmd
    };
    fresh::build(build(true), "the first cargo cuda build");
    for round in 1..=3 {
        for wrapped in [false, true] {
            let what = format!(
                "{} (round {round})",
                if wrapped {
                    "cargo cuda build"
                } else {
                    "cargo build"
                }
            );
            let dirty = fresh::build(build(wrapped), &what);
            assert!(
                dirty.is_empty(),
                "{what} rebuilt {dirty:#?}\ncargo says: {}",
                fresh::why_dirty(build(wrapped))
            );
        }
    }
    check_excerpts(&excerpts, &target, &readme);

    let out = Command::new(target.join("debug/mykernels"))
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(!stderr.contains("panicked"), "{stderr}");
    if common::has_driver() {
        assert!(out.status.success(), "{stderr}");
        assert!(stdout.contains("elements ok"), "{stdout}");
    } else {
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(
            stderr.trim(),
            "error: no CUDA driver here (libcuda.so.1 not found); `cargo cuda doctor` says why"
        );
    }
}

/// docs/*.md: each document's snippets make a crate that `cargo build`
/// compiles with the real toolkit, and excerpts of generated code name items
/// the generated module really has.
#[test]
fn every_doc_snippet_builds() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let mut docs: Vec<PathBuf> = std::fs::read_dir(workspace_root().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    let target = common::shared_target();
    for doc in docs {
        let markdown = std::fs::read_to_string(&doc).unwrap();
        if !snippets(&markdown)
            .iter()
            .any(|s| matches!(s.lang.as_str(), "rust" | "toml" | "cuda"))
        {
            continue;
        }
        let stem = doc.file_stem().unwrap().to_string_lossy();
        let dir = common::registry::registry().work(&format!("doc-{stem}"));
        let (excerpts, any_file) = write_crate(&doc, &dir);
        if !any_file {
            continue;
        }
        let out = plain_cargo()
            .arg("build")
            .current_dir(&dir)
            .env("CUDA_HOME", &root)
            .env("CUDA_ARCHS", "80;90")
            .env("CARGO_TARGET_DIR", &target)
            .output()
            .unwrap();
        let (_, stderr) = text(&out);
        assert!(out.status.success(), "{}:\n{stderr}", doc.display());
        check_excerpts(&excerpts, &target, &doc);
    }
}

#[test]
fn snippets_are_found_with_their_files() {
    let md = "text\n```toml\n# Cargo.toml\n[dependencies]\n```\n\n```rust\n// src/main.rs\nfn main() {}\n```\n```sh\nls\n```\n```rust\nlet x = 1;\n```\n";
    let s = snippets(md);
    assert_eq!(s.len(), 4);
    assert_eq!(s[0].file.as_deref(), Some("Cargo.toml"));
    assert_eq!(s[1].file.as_deref(), Some("src/main.rs"));
    assert_eq!(s[1].body, "// src/main.rs\nfn main() {}\n");
    assert_eq!(s[2].lang, "sh");
    assert_eq!(s[3].file, None, "a fragment names no file");
}
