//! Benchmark of `cuda_build::compile::Build` on the fixture kernel set
//! (tests/fixtures/compile/kernels, 13 kernels), each scenario against a
//! plain serial loop of nvcc over the same files with the same flags.
//!
//! Run: `scripts/bench-compile.sh` (or `cargo bench -p cuda-build --bench compile`
//! with `CUDA_HOME` naming a CUDA toolkit root). `CUDA_ARCHS` (default
//! `80;90`) sets the targets.
//! nvcc runs through a wrapper that logs each call, so the table also shows
//! how many times nvcc ran and how many ran at once (on a loaded machine the
//! times of 1 and 2 jobs may differ little even when 2 nvcc do run at once).

use cuda_build::compile::{Artifacts, Build};
use cuda_toolchain::env::{Env, Var};
use cuda_toolchain::toolkit::{FoundVia, Toolkit};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn main() {
    let process_env = Env::from_process();
    let Some(root) = process_env
        .get_nonempty(Var::CudaHome)
        .map(PathBuf::from)
        .filter(|r| r.join("bin/nvcc").is_file())
    else {
        eprintln!("bench skipped: set CUDA_HOME to a toolkit root with bin/nvcc (scripts/bench-compile.sh does)");
        return;
    };
    let archs = process_env
        .get_nonempty(Var::CudaArchs)
        .unwrap_or("80;90")
        .to_string();
    // `cargo bench -p cuda-build --bench compile -- 3` runs three rounds.
    let repeat: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1)
        .max(1);
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/compile/kernels");
    let work = tempfile::tempdir().expect("temp dir");
    let pkg = work.path().join("pkg");
    copy_dir(&fixtures, &pkg.join("cu"));
    let sources: Vec<PathBuf> = {
        let mut v: Vec<PathBuf> = std::fs::read_dir(pkg.join("cu"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "cu"))
            .collect();
        v.sort();
        v
    };
    let log = work.path().join("nvcc.log");
    let wrapper = work.path().join("bin/nvcc");
    std::fs::create_dir_all(wrapper.parent().unwrap()).unwrap();
    std::fs::write(
        &wrapper,
        format!(
            // `+` at the start and `-` at the end of each run: the log shows
            // how many ran at once, whatever the machine's load did to the times.
            "#!/bin/sh\necho + >> '{log}'\n'{}' \"$@\"\nrc=$?\necho - >> '{log}'\nexit $rc\n",
            root.join("bin/nvcc").display(),
            log = log.display(),
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let version = nvcc_version(&root.join("bin/nvcc"));
    let tk = Toolkit {
        root: root.clone(),
        nvcc: wrapper,
        version: version.clone(),
        found_via: FoundVia::Explicit,
        include_dirs: vec![root.join("include")],
        lib_dirs: vec![root.join("lib")],
        problems: Vec::new(),
    };

    // (nvcc runs, most at once) since the last call.
    let calls = || -> (usize, usize) {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_file(&log);
        let (mut now, mut peak) = (0i64, 0i64);
        for l in text.lines() {
            now += if l == "+" { 1 } else { -1 };
            peak = peak.max(now);
        }
        (text.lines().filter(|l| *l == "+").count(), peak as usize)
    };
    let build = |jobs: usize, out: &Path, cache: &Path| -> (Duration, Artifacts) {
        let env = Env::empty()
            .set(Var::CargoManifestDir, &pkg)
            .set(Var::NumJobs, jobs.to_string());
        let start = Instant::now();
        let a = Build::new()
            .env(env)
            .toolkit(tk.clone())
            .out_dir(out)
            .cache_dir(cache)
            .emit_cargo(false)
            .arch(&archs)
            .dir("cu")
            .try_compile()
            .unwrap_or_else(|e| panic!("{e}"));
        (start.elapsed(), a)
    };
    // Same flags as the builder's fatbin compile: the planned -gencode list.
    let plan_flags = {
        let (_, a) = build(
            2,
            &work.path().join("probe-out"),
            &work.path().join("probe-cache"),
        );
        a.plan.unwrap().gencode_flags()
    };
    calls();
    let serial = || -> Duration {
        let out = work.path().join("serial");
        std::fs::create_dir_all(&out).unwrap();
        let start = Instant::now();
        for s in &sources {
            let mut args: Vec<String> = vec!["-fatbin".into()];
            args.extend(plan_flags.iter().cloned());
            args.push("-o".into());
            args.push(out.join("k.fatbin").display().to_string());
            args.push(s.display().to_string());
            let o = cuda_toolchain::process::run(
                root.join("bin/nvcc"),
                &args,
                Duration::from_secs(600),
            )
            .unwrap();
            assert!(o.status.success(), "{}", o.combined());
        }
        start.elapsed()
    };

    // Scenario name -> (cuda-build times, nvcc runs, stats of the last run).
    let names = [
        "cold, 2 jobs",
        "no-op",
        "header edit (common.cuh)",
        "after clean (cache hit)",
        "cold, 1 job",
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); names.len()];
    let mut runs = vec![(0usize, 0usize); names.len()];
    let mut last = vec![String::new(); names.len()];
    let mut serial_times = Vec::new();
    let load_before = loadavg();
    for r in 0..repeat {
        // The serial loop runs next to the builds it is compared with, so
        // both see the same load on a shared machine.
        serial_times.push(serial());
        let cache = work.path().join(format!("cache{r}"));
        let out = work.path().join(format!("out{r}"));
        let mut record = |i: usize, (t, a): (Duration, Artifacts)| {
            times[i].push(t);
            runs[i] = calls();
            last[i] = stats(&a);
        };
        record(0, build(2, &out, &cache));
        record(1, build(2, &out, &cache));
        let header = pkg.join("cu/include/common.cuh");
        let mut text = std::fs::read_to_string(&header).unwrap();
        text.push_str(&format!("\n// edit {r}\n"));
        std::fs::write(&header, text).unwrap();
        record(2, build(2, &out, &cache));
        std::fs::remove_dir_all(&out).unwrap();
        record(3, build(2, &out, &cache));
        let cold1 = work.path().join(format!("c1-{r}"));
        record(4, build(1, &cold1.join("out"), &cold1.join("cache")));
    }
    let base = median(&mut serial_times);

    println!();
    println!(
        "cuda-build compile benchmark: {} kernels, archs `{archs}`, nvcc {}, {} CPUs, {repeat} round(s), load average {load_before} -> {}",
        sources.len(),
        version.map(|v| v.to_string()).unwrap_or_else(|| "?".into()),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        loadavg()
    );
    println!("(median of the rounds; nvcc runs and counts are from the last round; the serial loop is `nvcc -fatbin <same -gencode flags>` over each file in turn)");
    println!();
    println!("| scenario | cuda-build | nvcc runs | most at once | compiled/cached/up-to-date | serial nvcc loop | ratio |");
    println!("|---|---:|---:|---:|---|---:|---:|");
    for (i, name) in names.iter().enumerate() {
        let t = median(&mut times[i]);
        println!(
            "| {name} | {} | {} | {} | {} | {} | {:.1}% |",
            fmt(t),
            runs[i].0,
            runs[i].1,
            last[i],
            fmt(base),
            100.0 * t.as_secs_f64() / base.as_secs_f64()
        );
    }
    let (c1, c2) = (median(&mut times[4]), median(&mut times[0]));
    println!();
    println!(
        "scaling: cold 1 job {} / cold 2 jobs {} = {:.2}x",
        fmt(c1),
        fmt(c2),
        c1.as_secs_f64() / c2.as_secs_f64()
    );
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

fn stats(a: &Artifacts) -> String {
    format!(
        "{}/{}/{}",
        a.stats.compiled, a.stats.from_cache, a.stats.up_to_date
    )
}

fn fmt(d: Duration) -> String {
    if d.as_secs_f64() >= 1.0 {
        format!("{:.2} s", d.as_secs_f64())
    } else {
        format!("{:.1} ms", d.as_secs_f64() * 1000.0)
    }
}

fn nvcc_version(nvcc: &Path) -> Option<semver::Version> {
    let out = cuda_toolchain::process::run(nvcc, ["--version"], Duration::from_secs(60)).ok()?;
    let v = out.stdout.split(", V").nth(1)?.split_whitespace().next()?;
    semver::Version::parse(v).ok()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}
