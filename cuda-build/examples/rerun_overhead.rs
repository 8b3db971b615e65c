//! What a build-script run that compiles nothing costs, in cargo's default
//! dev profile (build dependencies are not optimised there), measured
//! in-process with a stand-in nvcc so only cuda-build's own work counts:
//!
//! - 500 tiny `.cu` files, nothing changed;
//! - the same, every source touched with unchanged content;
//! - one 50 MB `.cu` touched with unchanged content.
//!
//! Run: `cargo run -p cuda-build --example rerun_overhead` (dev profile on
//! purpose; `scripts/bench-compile.sh rerun` does this). Prints a table.

use cuda_build::compile::{Build, OutputKind};
use cuda_toolchain::env::{Env, Var};
use cuda_toolchain::toolkit::{FoundVia, Toolkit};
use std::time::{Duration, Instant, SystemTime};

/// An nvcc that answers the arch queries and writes a minimal valid PTX
/// file, and the kept preprocessed file (or depfile) for each compile.
const FAKE_NVCC: &str = r#"#!/bin/sh
case "$1" in
  --list-gpu-code) echo sm_90; exit 0;;
  --list-gpu-arch) echo compute_90; exit 0;;
  --version) echo "Cuda compilation tools, release 13.0, V13.0.88"; exit 0;;
esac
out=''; dep=''; keep=''; prev=''; src=''
for a in "$@"; do
  [ "$prev" = -o ] && out="$a"
  [ "$prev" = -MF ] && dep="$a"
  [ "$prev" = --keep-dir ] && keep="$a"
  prev="$a"; src="$a"
done
printf '.version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n ret;\n}\n' > "$out"
[ -n "$dep" ] && printf 'x: %s\n' "$src" > "$dep"
[ -n "$keep" ] && printf '# 1 "%s"\n' "$src" > "$keep/x.cpp1.ii"
exit 0
"#;

fn main() {
    let work = tempfile::tempdir().expect("temp dir");
    let root = work.path();
    let nvcc = root.join("cuda/bin/nvcc");
    std::fs::create_dir_all(nvcc.parent().unwrap()).unwrap();
    std::fs::write(&nvcc, FAKE_NVCC).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&nvcc, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let tk = Toolkit {
        root: root.join("cuda"),
        nvcc,
        version: Some(semver::Version::new(13, 0, 88)),
        found_via: FoundVia::Explicit,
        include_dirs: Vec::new(),
        lib_dirs: Vec::new(),
        problems: Vec::new(),
    };
    let pkg = root.join("pkg");
    std::fs::create_dir_all(pkg.join("many")).unwrap();
    std::fs::create_dir_all(pkg.join("big")).unwrap();
    for i in 0..500 {
        std::fs::write(
            pkg.join(format!("many/k{i:03}.cu")),
            format!("extern \"C\" __global__ void k{i}() {{}}\n"),
        )
        .unwrap();
    }
    let big = pkg.join("big/huge.cu");
    let mut text = String::with_capacity(50 << 20);
    while text.len() < 50 << 20 {
        text.push_str("// padding padding padding padding padding padding padding padding\n");
    }
    text.push_str("extern \"C\" __global__ void huge() {}\n");
    std::fs::write(&big, text).unwrap();

    let build = |dir: &str| {
        let mut b = Build::new();
        b.env(Env::empty().set(Var::CargoManifestDir, &pkg))
            .toolkit(tk.clone())
            .out_dir(root.join("out").join(dir))
            .no_cache()
            .emit_cargo(false)
            .arch("90")
            .output(OutputKind::Ptx)
            .module_name(dir)
            .dir(dir);
        b
    };
    // (median wall time, mean CPU time of this process and its children):
    // on a shared machine the CPU time is the steadier number.
    let time = |dir: &str, before: &dyn Fn()| -> (Duration, f64) {
        let mut cpu = 0.0;
        let mut v: Vec<Duration> = (0..5)
            .map(|_| {
                before();
                let (c0, t) = (cpu_secs(), Instant::now());
                let a = build(dir).try_compile().expect("build");
                let d = t.elapsed();
                cpu += cpu_secs() - c0;
                assert_eq!(a.stats.compiled, 0, "a rerun compiles nothing");
                d
            })
            .collect();
        v.sort();
        (v[2], cpu / 5.0)
    };
    let touch_all = |dir: &str| {
        let dir = pkg.join(dir);
        move || {
            for e in std::fs::read_dir(&dir).unwrap().flatten() {
                let f = std::fs::File::options().write(true).open(e.path()).unwrap();
                f.set_modified(SystemTime::now()).unwrap();
            }
        }
    };

    let t = Instant::now();
    build("many").try_compile().expect("cold build");
    let cold_many = t.elapsed();
    build("big").try_compile().expect("cold build");
    let noop_many = time("many", &|| {});
    let touched_many = time("many", &touch_all("many"));
    let noop_big = time("big", &|| {});
    let touched_big = time("big", &touch_all("big"));
    let manifest = std::fs::metadata(root.join("out/many/cuda-build/many/manifest.json"))
        .map(|m| m.len())
        .unwrap_or(0);

    println!("\ncuda-build rerun overhead, dev profile, stand-in nvcc (wall: median of 5; CPU: mean, incl. children)\n");
    println!("| case | wall | CPU |");
    println!("|---|---|---|");
    println!(
        "| 500 tiny .cu, cold (stand-in nvcc) | {:.3} s | |",
        cold_many.as_secs_f64()
    );
    let row = |name: &str, (wall, cpu): (Duration, f64)| {
        println!("| {name} | {:.3} s | {cpu:.3} s |", wall.as_secs_f64());
    };
    row("500 tiny .cu, nothing changed", noop_many);
    row("500 tiny .cu, all touched, same content", touched_many);
    row("50 MB .cu, nothing changed", noop_big);
    row("50 MB .cu, touched, same content", touched_big);
    println!("| manifest for 500 sources | {} KB | |", manifest / 1024);
    println!(
        "\nload average: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
}

/// CPU seconds of this process and its waited-for children (Linux; 0 elsewhere).
fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the `(comm)`: utime, stime, cutime, cstime are 14–17.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<f64> = rest
        .split_whitespace()
        .skip(11)
        .take(4)
        .filter_map(|x| x.parse().ok())
        .collect();
    f.iter().sum::<f64>() / 100.0
}
