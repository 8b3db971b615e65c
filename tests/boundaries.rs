//! Boundaries that the architecture promises (docs/ARCHITECTURE.md): a
//! program that only runs kernels does not compile the build engine; inside
//! each crate imports point one way (no circle of files), and the compile
//! engine's stages import only what is below them.

use std::process::Command;

/// The normal (run-time) dependency closure of a workspace package, as cargo resolves it.
fn runtime_deps(package: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
            "-p",
            package,
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree -p {package} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn programs_that_run_kernels_do_not_link_the_build_engine() {
    for program in ["cuda-workload", "vector-add"] {
        let deps = runtime_deps(program);
        assert!(
            deps.iter().any(|d| d == "cuda-toolchain"),
            "{program} should use cuda-toolchain: {deps:?}"
        );
        for engine in ["cuda-build", "jobserver"] {
            assert!(
                !deps.iter().any(|d| d == engine),
                "{program} links {engine} at run time: {deps:?}"
            );
        }
    }
}

#[test]
fn cuda_toolchain_does_not_depend_on_cuda_build() {
    let deps = runtime_deps("cuda-toolchain");
    assert!(
        !deps.iter().any(|d| d == "cuda-build" || d == "jobserver"),
        "{deps:?}"
    );
}

use workspace_tests::imports::{crate_src, imports, Import};

/// Circles that are known and owned elsewhere, each to be broken by its
/// owner: (crate, file, file). The test fails when one of them is gone, so
/// the list only shrinks.
const KNOWN_CIRCLES: &[(&str, &str, &str)] = &[
    // The diagnosis rules and their scanner share types both ways (the
    // diagnosis work owns diagnose/).
    ("cuda-toolchain", "diagnose/rules.rs", "diagnose/scan.rs"),
];

/// Every circle of imports between files that are not each other's folder
/// module (a `mod.rs` and its files may share context both ways): one per
/// circle found, each as the files in order, the first repeated at the end.
fn circles(imports: &[Import]) -> Vec<Vec<String>> {
    let mut edges: Vec<(String, String)> = imports
        .iter()
        .filter(|i| !i.parent_child)
        .map(|i| (i.from.clone(), i.to.clone()))
        .collect();
    edges.sort();
    edges.dedup();
    let mut found = Vec::new();
    // Find one, drop its closing edge, look again.
    while let Some(circle) = one_circle(&edges) {
        let n = circle.len();
        let closing = (circle[n - 2].clone(), circle[n - 1].clone());
        edges.retain(|e| *e != closing);
        found.push(circle);
    }
    found
}

fn one_circle(edges: &[(String, String)]) -> Option<Vec<String>> {
    use std::collections::HashMap;
    fn visit<'a>(
        n: &'a str,
        edges: &'a [(String, String)],
        state: &mut HashMap<&'a str, u8>,
        stack: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        state.insert(n, 1);
        stack.push(n);
        for (_, to) in edges.iter().filter(|(from, _)| from == n) {
            match state.get(to.as_str()).copied().unwrap_or(0) {
                1 => {
                    let at = stack.iter().position(|s| s == to).unwrap_or(0);
                    let mut circle: Vec<String> =
                        stack[at..].iter().map(|s| s.to_string()).collect();
                    circle.push(to.clone());
                    return Some(circle);
                }
                0 => {
                    if let Some(c) = visit(to, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n, 2);
        None
    }
    let mut state = HashMap::new();
    for (n, _) in edges {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(n, edges, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn no_crate_has_an_import_circle() {
    let mut problems = Vec::new();
    for member in ["cuda-toolchain", "cuda-build", "cuda-install", "cargo-cuda"] {
        let all = imports(&crate_src(member));
        assert!(!all.is_empty(), "{member}: no imports read");
        let known: Vec<(&str, &str)> = KNOWN_CIRCLES
            .iter()
            .filter(|(m, ..)| *m == member)
            .map(|(_, a, b)| (*a, *b))
            .collect();
        let is_known = |a: &str, b: &str| known.iter().any(|k| *k == (a, b) || *k == (b, a));
        // A known circle stays listed only while it exists.
        for (a, b) in &known {
            let both = [(a, b), (b, a)].iter().all(|(x, y)| {
                all.iter()
                    .any(|i| i.from == **x && i.to == **y && !i.parent_child)
            });
            if !both {
                problems.push(format!(
                    "{member}: {a} <-> {b} is no longer a circle: remove it from KNOWN_CIRCLES"
                ));
            }
        }
        let others: Vec<Import> = all
            .into_iter()
            .filter(|i| !is_known(&i.from, &i.to))
            .collect();
        for c in circles(&others) {
            problems.push(format!("{member}/src: {}", c.join(" -> ")));
        }
    }
    assert!(
        problems.is_empty(),
        "imports must point one way (a file names items of files below it, never back):\n  {}",
        problems.join("\n  ")
    );
}

/// The compile engine's layers, lowest first: a file under
/// cuda-build/src/compile may import only files of its own layer or a lower
/// one. The most specific entry names a file's layer.
const COMPILE_LAYERS: &[(&str, u32)] = &[
    // What a build produces: result types, the module text, output checks.
    ("compile/output/", 0),
    // What makes a rerun cheap, and running nvcc.
    ("compile/incremental/", 1),
    ("compile/nvcc/", 1),
    // The images a package ships: their manifest, matching, reading.
    ("compile/prebuilt/", 1),
    // What a build asks for, and the prepare stage that settles it.
    ("compile/settings/", 2),
    // The context every engine stage shares.
    ("compile/run/context.rs", 3),
    ("compile/run/job.rs", 3),
    ("compile/run/keys.rs", 3),
    // The stages: plan_jobs, reuse, compile_job, finish and their steps.
    ("compile/run/", 4),
    // The pool drives the stages.
    ("compile/run/pool.rs", 5),
    // The public entry points, and the re-exports.
    ("compile/entry_points.rs", 6),
    ("compile/mod.rs", 7),
];

fn compile_layer(file: &str) -> Option<u32> {
    COMPILE_LAYERS
        .iter()
        .filter(|(prefix, _)| file.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, layer)| *layer)
}

#[test]
fn compile_stages_import_only_what_is_below_them() {
    let mut problems = Vec::new();
    for i in imports(&crate_src("cuda-build")) {
        let Some(from) = compile_layer(&i.from) else {
            continue;
        };
        if i.from.ends_with("mod.rs") {
            continue;
        }
        match compile_layer(&i.to) {
            // Through a folder's re-exports: name the file that holds the item.
            _ if i.to.ends_with("mod.rs") && i.into_items => problems.push(format!(
                "{} imports `{}` through {}: import it from the file that defines it",
                i.from, i.path, i.to
            )),
            Some(to) if to > from => problems.push(format!(
                "{} (layer {from}) imports `{}` from {} (layer {to}), a higher layer",
                i.from, i.path, i.to
            )),
            _ => {}
        }
    }
    assert!(
        problems.is_empty(),
        "the compile engine's imports must point down (tests/boundaries.rs, COMPILE_LAYERS):\n  {}",
        problems.join("\n  ")
    );
}

/// The checks above catch what they promise: a planted circle and a planted
/// upward import are both found.
#[test]
fn the_import_checks_catch_a_circle_and_an_upward_import() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("compile/run")).unwrap();
    let write = |f: &str, text: &str| std::fs::write(src.join(f), text).unwrap();
    write("lib.rs", "mod compile;\n");
    write("compile/mod.rs", "mod run;\nmod entry_points;\n");
    write("compile/run/mod.rs", "mod context;\nmod pool;\n");
    write(
        "compile/run/context.rs",
        "// crate::compile::run::pool::Nothing in a comment\nuse crate::compile::run::pool::{self, Pool as P};\npub struct Run;\n#[cfg(test)]\nmod tests { use crate::compile::entry_points::X; }\n",
    );
    write(
        "compile/run/pool.rs",
        "use super::context::Run;\nfn f() { let s = \"crate::compile::entry_points\"; }\n",
    );
    write("compile/entry_points.rs", "pub struct X;\n");
    let found = imports(src);
    let c = circles(&found);
    assert_eq!(
        c,
        [vec![
            "compile/run/context.rs".to_string(),
            "compile/run/pool.rs".to_string(),
            "compile/run/context.rs".to_string()
        ]],
        "{found:#?}"
    );
    let mut up: Vec<_> = found
        .iter()
        .filter(|i| compile_layer(&i.to) > compile_layer(&i.from) && !i.from.ends_with("mod.rs"))
        .map(|i| (i.from.as_str(), i.to.as_str()))
        .collect();
    up.dedup();
    assert_eq!(up, [("compile/run/context.rs", "compile/run/pool.rs")]);
}
