//! `cuda-workload`: NVIDIA's deviceQuery, bandwidthTest and vectorAdd, plus
//! SAXPY, a reduction and SGEMM, in Rust through cudarc, with kernels built
//! by cuda-build. Every kernel is verified on random inputs against a CPU
//! reference, and measured against the same GPU's limits in the same run.

mod explain;
mod gpu;
mod report;
mod sizes;
mod targets;
mod verify;

use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use cuda_kernels::kernels;
use cuda_toolchain::env::{Env, Var};
use cudarc::driver::{CudaModule, CudaSlice};
use serde::Serialize;

use explain::Explained;
use gpu::{GemmKernel, Gpu, Kernel, LoadFailure, REDUCE_THREADS, STREAM_THREADS};
use report::{Limit, Report, ResultRow};
use verify::GemmPrecision;

/// Exit statuses.
const EXIT_FAILED: u8 = 1;
const EXIT_BAD_INPUT: u8 = 2;
const EXIT_NO_GPU: u8 = 3;

/// Arrays of `--size` floats alive at once on the device (a, b, c and
/// SAXPY's y).
const VECTOR_BUFFERS: u64 = 4;

/// The targets on an H200, in percent of the same run's limit.
const TARGET_STREAM: f64 = 90.0;
const TARGET_REDUCE: f64 = 85.0;
const TARGET_SGEMM: f64 = 50.0;
const TARGET_PINNED: f64 = 85.0;

#[derive(Parser, Debug)]
#[command(
    name = "cuda-workload",
    version,
    about = "Device query, bandwidth, vectorAdd, SAXPY, reduction and SGEMM: verified, and measured against the same GPU's limits.",
    after_help = "Exit status: 0 everything ran and verified; 1 a kernel failed verification or CUDA failed mid-run; \
2 bad input (refused before any launch); 3 no usable GPU or no kernel image for it (the diagnosis says why)."
)]
struct Cli {
    /// GPU to measure (index as the driver numbers it, after CUDA_VISIBLE_DEVICES).
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// Device query and vectorAdd (50,000 elements) only; what `cargo cuda doctor` runs.
    #[arg(long)]
    quick: bool,
    /// Print the report as JSON on stdout (diagnoses still go to stderr).
    #[arg(long)]
    json: bool,
    /// Elements of the memory-bound kernels' arrays (digits, `256Mi` or `2^28`); far above L2.
    #[arg(long, default_value = "256Mi")]
    size: String,
    /// Side of the timed square SGEMM (a multiple of 128).
    #[arg(long, default_value = "8192")]
    gemm_size: String,
    /// Side of the SGEMM checked in full against the CPU (a multiple of 128).
    #[arg(long, default_value = "1024")]
    verify_gemm_size: String,
    /// Timed repetitions per measurement (after one warm-up).
    #[arg(long, default_value_t = 20)]
    iters: u32,
    /// Also write the JSON report to FILE (atomically), whatever the stdout format.
    #[arg(long, value_name = "FILE")]
    json_out: Option<std::path::PathBuf>,
    /// Skip the bandwidth section (the D2D limit is still measured).
    #[arg(long)]
    skip_bandwidth: bool,
    /// Skip SGEMM.
    #[arg(long)]
    skip_gemm: bool,
    /// Load a module built only for sm_75 (no PTX) on purpose and show the
    /// diagnosis; exits 0 when the driver's refusal matches the prediction.
    #[arg(long)]
    force_arch_mismatch: bool,
}

/// Why a run stopped.
enum Fatal {
    BadInput(cuda_toolchain::Error),
    NoGpu(Explained),
    Failed(Explained),
}

fn error_explained(e: &cuda_toolchain::Error) -> Explained {
    Explained {
        code: e.code.to_string(),
        failure: e.message.clone(),
        text: e.to_string(),
    }
}

fn failed(what: &str, e: &cudarc::driver::DriverError) -> Fatal {
    let text = gpu::driver_error_text(e);
    let explained = explain::explain(&Env::from_process(), &text);
    Fatal::Failed(Explained {
        text: format!("error: {what} failed: {text}\n{}", explained.text),
        ..explained
    })
}

/// The parsed and shape-checked sizes.
struct Sizes {
    vector: u64,
    gemm: u64,
    verify_gemm: u64,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut report = Report {
        tool: "cuda-workload",
        version: env!("CARGO_PKG_VERSION"),
        mode: if cli.force_arch_mismatch {
            "force-arch-mismatch"
        } else if cli.quick {
            "quick"
        } else {
            "full"
        },
        kernels_toolkit: kernels::TOOLKIT_VERSION.to_string(),
        kernels_archs: kernels::ARCHS.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    let outcome = run(&cli, &mut report);
    let verified = report.results.iter().all(|r| r.verified() != Some(false));
    let status = match outcome {
        Ok(()) if verified => 0,
        Ok(()) => EXIT_FAILED,
        Err(Fatal::BadInput(e)) => {
            report.error = Some(error_explained(&e));
            EXIT_BAD_INPUT
        }
        Err(Fatal::NoGpu(e)) => {
            report.error = Some(e);
            EXIT_NO_GPU
        }
        Err(Fatal::Failed(e)) => {
            report.error = Some(e);
            EXIT_FAILED
        }
    };
    report.ok = status == 0;
    let json =
        serde_json::to_string_pretty(&report).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    if let Some(path) = &cli.json_out {
        if let Err(e) = cuda_toolchain::fsutil::write_atomic(path, format!("{json}\n").as_bytes()) {
            eprintln!("error: could not write --json-out {}: {e}", path.display());
        }
    }
    if cli.json {
        println!("{json}");
    } else {
        print!("{}", report.render());
    }
    if let Some(e) = &report.error {
        eprintln!("{}", e.text);
    }
    ExitCode::from(status)
}

fn run(cli: &Cli, report: &mut Report) -> Result<(), Fatal> {
    // Sizes first: a refused size never waits for the driver.
    let sizes = parse_sizes(cli).map_err(Fatal::BadInput)?;
    let env = Env::from_process();
    let (_, warning) =
        explain::visible_devices(&env).map_err(|e| Fatal::NoGpu(error_explained(&e)))?;
    report.notes.extend(warning);

    // cudarc panics when libcuda cannot be opened: look first.
    // SAFETY: only dlopen()s the driver library by its usual names.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(Fatal::NoGpu(explain::explain(
            &env,
            "libcuda.so.1: cannot open shared object file: No such file or directory",
        )));
    }
    let count = gpu::device_count()
        .map_err(|e| Fatal::NoGpu(explain::explain(&env, &gpu::driver_error_text(&e))))?;
    if count == 0 {
        return Err(Fatal::NoGpu(explain::explain(
            &env,
            "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected",
        )));
    }
    let driver_cuda = gpu::driver_cuda_version().and_then(targets::cuda_of_driver_int);
    report.driver_cuda = driver_cuda.map(|(a, b)| format!("{a}.{b}"));
    report.driver_version = driver_version(&env);
    let toolkit = targets::cuda_of_version(kernels::TOOLKIT_VERSION);
    for i in 0..count {
        let info = gpu::query_device(i, driver_cuda, kernels::ARCHS, toolkit)
            .map_err(|e| failed(&format!("querying GPU {i}"), &e))?;
        report.devices.push(info);
    }
    if cli.device >= count {
        let mut e = cuda_toolchain::Error::new(
            "invalid-device-ordinal",
            format!(
                "--device {}: there is no GPU {}; {count} visible (index 0{})",
                cli.device,
                cli.device,
                if count > 1 {
                    format!("..{}", count - 1)
                } else {
                    String::new()
                }
            ),
        )
        .with_help(format!(
            "pass --device 0{}",
            if count > 1 {
                format!(" to {}", count - 1)
            } else {
                String::new()
            }
        ));
        if let Some(v) = env.get(Var::CudaVisibleDevices) {
            e = e.with_help(format!(
                "CUDA_VISIBLE_DEVICES=`{v}` limits and renumbers the GPUs this process sees"
            ));
        }
        return Err(Fatal::BadInput(e));
    }
    let info = report.devices[cli.device].clone();
    report.selected_device = Some(cli.device);
    let gpu = Gpu::open(info).map_err(|e| failed("creating the CUDA context", &e))?;

    if cli.force_arch_mismatch {
        return arch_mismatch(&gpu, report, driver_cuda, toolkit);
    }
    if kernels::vector_add::IMAGE.is_empty() {
        // cuda-build's docs.rs mode: the module exists, the images are empty.
        return Err(Fatal::Failed(Explained {
            code: "nvcc-not-found".into(),
            failure: "empty kernel images".into(),
            text: "error[nvcc-not-found]: this cuda-workload was built without a CUDA toolkit, so its kernel images are empty\n  = help: rebuild where nvcc is found (set CUDA_HOME or NVCC; `cargo cuda toolkits` lists what cuda-build sees)".into(),
        }));
    }
    if let Some(code) = gpu.info.module.problem {
        let evidence = gpu
            .info
            .module
            .targets
            .iter()
            .map(|t| format!("  {}: {}", t.target, t.reason))
            .collect::<Vec<_>>()
            .join("\n");
        let mut e = explain::explain_code(code, &evidence);
        e.text = format!(
            "the kernels embedded in this binary ({}) cannot run on GPU {} ({}, CC {}); not launching\n{}",
            kernels::ARCHS.join(", "),
            gpu.info.index,
            gpu.info.name,
            gpu.info.compute_capability,
            e.text
        );
        return Err(Fatal::NoGpu(e));
    }

    let free = gpu.free_memory().map_err(|e| failed("cuMemGetInfo", &e))?;
    if !cli.quick {
        sizes::validate_vector_len("--size", sizes.vector, VECTOR_BUFFERS, Some(free))
            .map_err(Fatal::BadInput)?;
        if !cli.skip_gemm {
            sizes::validate_gemm_dim("--gemm-size", sizes.gemm, Some(free))
                .map_err(Fatal::BadInput)?;
            sizes::validate_gemm_dim("--verify-gemm-size", sizes.verify_gemm, Some(free))
                .map_err(Fatal::BadInput)?;
        }
    }

    let vadd = load(&gpu, "vector_add", kernels::vector_add::IMAGE)?;
    let vadd_k = kernel(&gpu, &vadd, "vectorAdd", STREAM_THREADS)?;
    vector_add_small(&gpu, &vadd_k, report)?;
    if cli.quick {
        return Ok(());
    }

    if !cli.skip_bandwidth {
        let mut sizes_b: Vec<u64> = vec![1 << 20, 32 << 20, 256 << 20, 1 << 30];
        // Pageable and pinned host copies plus two device buffers per size.
        sizes_b.retain(|&b| 2 * b + sizes::MEMORY_HEADROOM <= free);
        let bw = gpu::bandwidth(&gpu, &sizes_b, cli.iters.min(10), &mut report.notes)
            .map_err(|e| failed("the bandwidth test", &e))?;
        pinned_rows(&bw, report);
        report.bandwidth = bw;
    }
    let saxpy_mod = load(&gpu, "saxpy", kernels::saxpy::IMAGE)?;
    let reduce_mod = load(&gpu, "reduce", kernels::reduce::IMAGE)?;
    let k = Streaming {
        vadd: vadd_k,
        saxpy: kernel(&gpu, &saxpy_mod, "saxpy", STREAM_THREADS)?,
        partial: kernel(&gpu, &reduce_mod, "reduceSumPartial", REDUCE_THREADS)?,
        fin: kernel(&gpu, &reduce_mod, "reduceSumFinal", REDUCE_THREADS)?,
    };
    odd_tails(&gpu, &k, report)?;
    memory_bound(&gpu, sizes.vector, cli.iters, &k, report)?;
    if !cli.skip_gemm {
        gemm(&gpu, &sizes, cli.iters.min(10), report)?;
    }
    Ok(())
}

fn parse_sizes(cli: &Cli) -> Result<Sizes, cuda_toolchain::Error> {
    let vector = sizes::parse_count("--size", &cli.size)?;
    let gemm = sizes::parse_count("--gemm-size", &cli.gemm_size)?;
    let verify_gemm = sizes::parse_count("--verify-gemm-size", &cli.verify_gemm_size)?;
    sizes::validate_vector_len("--size", vector, VECTOR_BUFFERS, None)?;
    sizes::validate_gemm_dim("--gemm-size", gemm, None)?;
    sizes::validate_gemm_dim("--verify-gemm-size", verify_gemm, None)?;
    sizes::validate_verify_gemm_dim("--verify-gemm-size", verify_gemm)?;
    if cli.iters == 0 {
        return Err(cuda_toolchain::Error::new(
            "invalid-size",
            "--iters 0: nothing would be timed",
        )
        .with_help("pass --iters 1 or more (default 20)"));
    }
    Ok(Sizes {
        vector,
        gemm,
        verify_gemm,
    })
}

/// The display driver's version, from /proc or nvidia-smi (the driver API
/// reports only the CUDA version).
fn driver_version(env: &Env) -> Option<String> {
    let options = cuda_toolchain::probe::ProbeOptions {
        timeout: std::time::Duration::from_secs(2),
        skip_driver_api: true,
        ..Default::default()
    };
    cuda_toolchain::probe::probe(env, &options)
        .driver
        .and_then(|d| d.version)
}

fn load(gpu: &Gpu, what: &str, image: &[u8]) -> Result<Arc<CudaModule>, Fatal> {
    // The image itself, checked before loading with the same rules and
    // diagnosis as `cargo cuda inspect`.
    let driver = gpu::driver_cuda_version().and_then(targets::cuda_of_driver_int);
    let here = cuda_toolchain::image::Target::gpu(
        format!("GPU {} ({})", gpu.info.index, gpu.info.name),
        gpu.info.cc(),
    )
    .with_driver(None, driver);
    let verdict = cuda_toolchain::image::check_image_on(image, &[here]);
    if let Some((t, code)) = verdict.targets.iter().find_map(|t| Some((t, t.code?))) {
        return Err(Fatal::NoGpu(Explained {
            code: code.into(),
            failure: t.reason.clone(),
            text: t.render(&format!("the `{what}` kernel image")),
        }));
    }
    gpu::load_module(&gpu.ctx, image).map_err(|f| load_failed(what, &f))
}

fn load_failed(what: &str, f: &LoadFailure) -> Fatal {
    let input = format!("{}\n{}", f.error, f.jit_log);
    let explained = explain::explain(&Env::from_process(), &input);
    let log = if f.jit_log.is_empty() {
        "(the driver's JIT wrote no log)".to_string()
    } else {
        f.jit_log
            .lines()
            .map(|l| format!("  | {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    Fatal::Failed(Explained {
        text: format!(
            "error: loading the {what} module failed: {}\nJIT log:\n{log}\n{}",
            f.error, explained.text
        ),
        ..explained
    })
}

fn kernel_not_found(text: String) -> Fatal {
    Fatal::Failed(Explained {
        code: "kernel-not-found".into(),
        failure: text.clone(),
        text: format!("error[kernel-not-found]: {text}"),
    })
}

fn function(module: &Arc<CudaModule>, name: &str) -> Result<cudarc::driver::CudaFunction, Fatal> {
    module.load_function(name).map_err(|e| {
        kernel_not_found(format!(
            "cuModuleGetFunction({name}): {}",
            gpu::driver_error_text(&e)
        ))
    })
}

/// A streaming kernel with its one-wave grid.
fn kernel(gpu: &Gpu, module: &Arc<CudaModule>, name: &str, threads: u32) -> Result<Kernel, Fatal> {
    gpu.kernel(module, name, threads).map_err(kernel_not_found)
}

fn dev_err(what: &'static str) -> impl Fn(cudarc::driver::DriverError) -> Fatal {
    move |e| failed(what, &e)
}

fn row(name: &str, size: String, unit: &'static str, achieved: f64, ms: f64) -> ResultRow {
    ResultRow {
        name: name.to_string(),
        size,
        unit,
        achieved,
        ms,
        limit: None,
        percent: None,
        target_percent: None,
        check: None,
    }
}

fn gbps(bytes: f64, ms: f64) -> f64 {
    if ms > 0.0 {
        bytes / (ms * 1e-3) / 1e9
    } else {
        0.0
    }
}

/// vectorAdd on 50,000 elements, like NVIDIA's sample.
fn vector_add_small(gpu: &Gpu, f: &Kernel, report: &mut Report) -> Result<(), Fatal> {
    const N: usize = 50_000;
    let a = verify::random_vec(N, 1);
    let b = verify::random_vec(N, 2);
    let da = gpu::to_device(gpu, &a).map_err(dev_err("copying inputs"))?;
    let db = gpu::to_device(gpu, &b).map_err(dev_err("copying inputs"))?;
    let mut dc: CudaSlice<f32> = gpu.stream.alloc_zeros(N).map_err(dev_err("cuMemAlloc"))?;
    gpu::poison(gpu, &mut dc).map_err(dev_err("cuMemsetD8"))?;
    gpu::launch_vector_add(gpu, f, &da, &db, &mut dc, N as u64).map_err(dev_err("vectorAdd"))?;
    let c = gpu::to_host(gpu, &dc).map_err(dev_err("vectorAdd"))?;
    let check = verify::exact(&c, verify::vector_add_ref(&a, &b), "a + b");
    let ms = gpu
        .time_ms(10, || {
            gpu::launch_vector_add(gpu, f, &da, &db, &mut dc, N as u64)
        })
        .map_err(dev_err("vectorAdd"))?;
    let mut r = row(
        "vectorAdd (NVIDIA sample size)",
        format!("{N} floats"),
        "GB/s",
        gbps(12.0 * N as f64, ms),
        ms,
    );
    r.check = Some(check);
    report.results.push(r);
    Ok(())
}

/// Pinned copies through the driver API against cudaMemcpyAsync (runtime),
/// at the largest size measured.
fn pinned_rows(bw: &[gpu::Bandwidth], report: &mut Report) {
    use gpu::{CopyKind, Direction};
    let Some(largest) = bw.iter().map(|b| b.bytes).max() else {
        return;
    };
    for dir in [Direction::H2d, Direction::D2h] {
        let find = |kind| {
            bw.iter()
                .find(|b| b.bytes == largest && b.direction == dir && b.kind == kind)
        };
        let Some(driver) = find(CopyKind::Pinned) else {
            continue;
        };
        let name = match dir {
            Direction::H2d => "copy host->device, pinned (driver)",
            _ => "copy device->host, pinned (driver)",
        };
        let limit = find(CopyKind::PinnedRuntime).map(|rt| Limit {
            name: "cudaMemcpyAsync (runtime)".into(),
            value: rt.gbps,
        });
        let r = row(
            name,
            report::human_size(largest),
            "GB/s",
            driver.gbps,
            driver.ms,
        );
        report.results.push(r.against(limit, Some(TARGET_PINNED)));
    }
}

/// The memory-bound kernels.
struct Streaming {
    vadd: Kernel,
    saxpy: Kernel,
    partial: Kernel,
    fin: Kernel,
}

/// Runs the streaming kernels once each on 50,003 elements (not a multiple
/// of 4): the scalar tail paths the timed sizes never take, with chains
/// short enough that the sum's bound catches a single lost element.
fn odd_tails(gpu: &Gpu, k: &Streaming, report: &mut Report) -> Result<(), Fatal> {
    const N: usize = 50_003;
    let n = N as u64;
    let a = verify::random_vec(N, 41);
    let b = verify::random_vec(N, 42);
    let da = gpu::to_device(gpu, &a).map_err(dev_err("copying inputs"))?;
    let db = gpu::to_device(gpu, &b).map_err(dev_err("copying inputs"))?;
    let mut dc: CudaSlice<f32> = gpu.stream.alloc_zeros(N).map_err(dev_err("cuMemAlloc"))?;
    gpu::poison(gpu, &mut dc).map_err(dev_err("cuMemsetD8"))?;
    gpu::launch_vector_add(gpu, &k.vadd, &da, &db, &mut dc, n).map_err(dev_err("vectorAdd"))?;
    let c = gpu::to_host(gpu, &dc).map_err(dev_err("vectorAdd"))?;
    let mut checks = vec![verify::exact(&c, verify::vector_add_ref(&a, &b), "a + b")];
    let mut dy = gpu::to_device(gpu, &b).map_err(dev_err("copying inputs"))?;
    gpu::launch_saxpy(gpu, &k.saxpy, -0.75, &da, &mut dy, n).map_err(dev_err("saxpy"))?;
    let y = gpu::to_host(gpu, &dy).map_err(dev_err("saxpy"))?;
    checks.push(verify::exact(
        &y,
        verify::saxpy_ref(-0.75, &a, &b),
        "fmaf(alpha, x, y)",
    ));
    let mut partial: CudaSlice<f64> = gpu
        .stream
        .alloc_zeros(k.partial.grid(n) as usize)
        .map_err(dev_err("cuMemAlloc"))?;
    let mut out: CudaSlice<f64> = gpu.stream.alloc_zeros(1).map_err(dev_err("cuMemAlloc"))?;
    gpu::poison(gpu, &mut partial).map_err(dev_err("cuMemsetD8"))?;
    gpu::poison(gpu, &mut out).map_err(dev_err("cuMemsetD8"))?;
    gpu::launch_reduce(gpu, &k.partial, &k.fin, &da, n, &mut partial, &mut out)
        .map_err(dev_err("reduceSum"))?;
    let sum = gpu::to_host(gpu, &out).map_err(dev_err("reduceSum"))?[0];
    let chain = gpu::reduce_chain(&k.partial, n);
    checks.push(verify::check_sum(sum, &a, chain));
    let names = ["vectorAdd", "SAXPY", "reduction"];
    let combined = verify::Check {
        compared: checks.iter().map(|c| c.compared).sum(),
        failures: checks.iter().map(|c| c.failures).sum(),
        max_abs_error: checks.iter().map(|c| c.max_abs_error).fold(0.0, f64::max),
        tolerance: names
            .iter()
            .zip(&checks)
            .map(|(n, c)| format!("{n}: {}", c.tolerance))
            .collect::<Vec<_>>()
            .join("; "),
        first_failure: names
            .iter()
            .zip(&checks)
            .find_map(|(n, c)| c.first_failure.as_ref().map(|f| format!("{n} {f}"))),
    };
    let mut r = row(
        "odd-size tails (vectorAdd, SAXPY, sum)",
        format!("{N} floats"),
        "GB/s",
        0.0,
        0.0,
    );
    r.check = Some(combined);
    report.results.push(r);
    Ok(())
}

/// Times `run` (whose first result was verified: `check`) and makes its
/// row, counting `bytes` moved through device memory per run.
fn timed_row(
    gpu: &Gpu,
    iters: u32,
    name: &str,
    size: &str,
    bytes: u64,
    check: verify::Check,
    run: impl FnMut() -> Result<(), cudarc::driver::DriverError>,
) -> Result<ResultRow, Fatal> {
    let ms = gpu.time_ms(iters, run).map_err(|e| failed(name, &e))?;
    let mut r = row(name, size.to_string(), "GB/s", gbps(bytes as f64, ms), ms);
    r.check = Some(check);
    Ok(r)
}

fn memory_bound(
    gpu: &Gpu,
    n: u64,
    iters: u32,
    k: &Streaming,
    report: &mut Report,
) -> Result<(), Fatal> {
    let len = n as usize;
    let a = verify::random_vec(len, 11);
    let b = verify::random_vec(len, 12);
    let da = gpu::to_device(gpu, &a).map_err(dev_err("copying inputs"))?;
    let db = gpu::to_device(gpu, &b).map_err(dev_err("copying inputs"))?;
    let mut dc: CudaSlice<f32> = gpu.stream.alloc_zeros(len).map_err(dev_err("cuMemAlloc"))?;
    let bytes = 4 * n;
    let size = format!("{n} floats");

    // The limit: a plain device-to-device copy of one array (bytes read +
    // written), timed before and after the kernels; the faster of the two
    // is the limit, so run-to-run spread cannot flatter the kernels.
    let copy = |dc: &mut CudaSlice<f32>| {
        gpu.time_ms(iters, || gpu.stream.memcpy_dtod(&da, dc))
            .map(|ms| gbps(2.0 * bytes as f64, ms))
            .map_err(dev_err("cuMemcpyDtoD"))
    };
    let copy_before = copy(&mut dc)?;

    // vectorAdd: reads a and b, writes c.
    let vadd = &k.vadd;
    gpu::poison(gpu, &mut dc).map_err(dev_err("cuMemsetD8"))?;
    gpu::launch_vector_add(gpu, vadd, &da, &db, &mut dc, n).map_err(dev_err("vectorAdd"))?;
    let c = gpu::to_host(gpu, &dc).map_err(dev_err("vectorAdd"))?;
    let check = verify::exact(&c, verify::vector_add_ref(&a, &b), "a + b");
    drop(c);
    let vadd_row = timed_row(gpu, iters, "vectorAdd", &size, 3 * bytes, check, || {
        gpu::launch_vector_add(gpu, vadd, &da, &db, &mut dc, n)
    })?;

    // SAXPY: y = alpha x + y reads x and y, writes y. Verified on the first
    // run; the timed runs keep accumulating into y.
    let saxpy = &k.saxpy;
    let alpha = 1.5f32;
    let mut dy = gpu::to_device(gpu, &b).map_err(dev_err("copying inputs"))?;
    gpu::launch_saxpy(gpu, saxpy, alpha, &da, &mut dy, n).map_err(dev_err("saxpy"))?;
    let y = gpu::to_host(gpu, &dy).map_err(dev_err("saxpy"))?;
    let check = verify::exact(&y, verify::saxpy_ref(alpha, &a, &b), "fmaf(alpha, x, y)");
    drop(y);
    let saxpy_row = timed_row(gpu, iters, "SAXPY", &size, 3 * bytes, check, || {
        gpu::launch_saxpy(gpu, saxpy, alpha, &da, &mut dy, n)
    })?;
    drop(dy);
    drop(db);

    // Reduction: reads a once.
    let (partial_fn, final_fn) = (&k.partial, &k.fin);
    let blocks = partial_fn.grid(n) as usize;
    let mut partial: CudaSlice<f64> = gpu
        .stream
        .alloc_zeros(blocks.max(1))
        .map_err(dev_err("cuMemAlloc"))?;
    let mut out: CudaSlice<f64> = gpu.stream.alloc_zeros(1).map_err(dev_err("cuMemAlloc"))?;
    gpu::poison(gpu, &mut partial).map_err(dev_err("cuMemsetD8"))?;
    gpu::poison(gpu, &mut out).map_err(dev_err("cuMemsetD8"))?;
    gpu::launch_reduce(gpu, partial_fn, final_fn, &da, n, &mut partial, &mut out)
        .map_err(dev_err("reduceSum"))?;
    let sum = gpu::to_host(gpu, &out).map_err(dev_err("reduceSum"))?[0];
    let chain = gpu::reduce_chain(partial_fn, n);
    let check = verify::check_sum(sum, &a, chain);
    let reduce_row = timed_row(gpu, iters, "reduction (sum)", &size, bytes, check, || {
        gpu::launch_reduce(gpu, partial_fn, final_fn, &da, n, &mut partial, &mut out)
    })?;

    let copy_after = copy(&mut dc)?;
    let d2d = Limit {
        name: format!("D2D copy {}", report::human_size(bytes)),
        value: copy_before.max(copy_after),
    };
    report.notes.push(format!(
        "memory-bound limit: cuMemcpyDtoDAsync of {} ({n} floats), counting bytes read + written: {copy_before:.1} GB/s before the kernels, {copy_after:.1} after; the higher is the limit",
        report::human_size(bytes),
    ));
    for (r, target) in [
        (vadd_row, TARGET_STREAM),
        (saxpy_row, TARGET_STREAM),
        (reduce_row, TARGET_REDUCE),
    ] {
        report
            .results
            .push(r.against(Some(d2d.clone()), Some(target)));
    }
    Ok(())
}

/// SGEMM: our FP32 kernel and cuBLAS at `sizes.gemm` (sample-checked), the
/// TF32 tensor-core kernel beside them, and a full check at `verify_gemm`.
fn gemm(gpu: &Gpu, sizes: &Sizes, iters: u32, report: &mut Report) -> Result<(), Fatal> {
    let fp32_mod = load(gpu, "sgemm", kernels::sgemm::IMAGE)?;
    let fp32 = function(&fp32_mod, "sgemm")?;
    let tc = if gpu.info.cc().major >= 8 {
        let m = load(gpu, "sgemm_tf32", kernels::sgemm_tf32::IMAGE)?;
        Some(function(&m, "sgemmTf32")?)
    } else {
        report
            .notes
            .push("TF32 tensor-core SGEMM skipped: it needs compute capability 8.0".into());
        None
    };
    let blas = match gpu::Blas::new(gpu) {
        Ok(b) => Some(b),
        Err(why) => {
            report.notes.push(format!(
                "cuBLAS not available ({why}): SGEMM is compared with the FP32 peak instead"
            ));
            None
        }
    };

    // Full verification at the small size.
    let n = sizes.verify_gemm as usize;
    let GemmBuffers {
        a,
        b,
        da,
        db,
        mut dc,
    } = gemm_buffers(gpu, n, 21)?;
    let verify_one =
        |f: &cudarc::driver::CudaFunction, kind, precision, dc: &mut CudaSlice<f32>| {
            gpu::poison(gpu, dc).map_err(dev_err("cuMemsetD8"))?;
            gpu::launch_gemm(gpu, f, kind, n as u32, &da, &db, dc).map_err(dev_err("sgemm"))?;
            let c = gpu::to_host(gpu, dc).map_err(dev_err("sgemm"))?;
            Ok::<_, Fatal>(verify::check_gemm(n, &a, &b, &c, None, precision))
        };
    let checks = [
        (
            "SGEMM FP32 full check",
            Some(&fp32),
            GemmKernel::Fp32,
            GemmPrecision::Fp32,
        ),
        (
            "SGEMM TF32 full check",
            tc.as_ref(),
            GemmKernel::Tf32,
            GemmPrecision::Tf32,
        ),
    ];
    for (name, f, kind, precision) in checks {
        let Some(f) = f else { continue };
        let mut r = row(name, format!("{n}^3"), "GFLOP/s", 0.0, 0.0);
        r.check = Some(verify_one(f, kind, precision, &mut dc)?);
        report.results.push(r);
    }
    drop((da, db, dc));

    // Timed at the large size; 256 sampled entries checked per result.
    let n = sizes.gemm as usize;
    let GemmBuffers {
        a,
        b,
        da,
        db,
        mut dc,
    } = gemm_buffers(gpu, n, 31)?;
    let flops = 2.0 * (n as f64).powi(3);
    let size = format!("{n}^3");
    let timed =
        |name: &str,
         precision: GemmPrecision,
         dc: &mut CudaSlice<f32>,
         run: &mut dyn FnMut(&mut CudaSlice<f32>) -> Result<(), cudarc::driver::DriverError>|
         -> Result<ResultRow, Fatal> {
            gpu::poison(gpu, dc).map_err(dev_err("cuMemsetD8"))?;
            run(dc).map_err(|e| failed(name, &e))?;
            let c = gpu::to_host(gpu, dc).map_err(dev_err("sgemm"))?;
            let check = verify::check_gemm(n, &a, &b, &c, Some(256), precision);
            let ms = gpu.time_ms(iters, || run(dc)).map_err(dev_err("sgemm"))?;
            let mut r = row(name, size.clone(), "GFLOP/s", flops / (ms * 1e-3) / 1e9, ms);
            r.check = Some(check);
            Ok(r)
        };
    let ours = timed(
        "SGEMM FP32 (CUDA cores)",
        GemmPrecision::Fp32,
        &mut dc,
        &mut |c| gpu::launch_gemm(gpu, &fp32, GemmKernel::Fp32, n as u32, &da, &db, c),
    )?;
    let cublas = match &blas {
        Some(blas) => match timed(
            "cuBLAS SGEMM FP32",
            GemmPrecision::Fp32,
            &mut dc,
            &mut |c| blas.sgemm(n as u32, &da, &db, c),
        ) {
            Ok(r) => Some(r),
            // The reference failing is no reason to stop the run: SGEMM is
            // then compared with the FP32 peak, and the note says why.
            Err(Fatal::Failed(e)) => {
                report.notes.push(format!(
                    "cuBLAS SGEMM failed ({}): SGEMM is compared with the FP32 peak instead",
                    e.failure
                ));
                None
            }
            Err(other) => return Err(other),
        },
        None => None,
    };
    let tf32 = match &tc {
        Some(tc) => Some(timed(
            "SGEMM TF32 (tensor cores)",
            GemmPrecision::Tf32,
            &mut dc,
            &mut |c| gpu::launch_gemm(gpu, tc, GemmKernel::Tf32, n as u32, &da, &db, c),
        )?),
        None => None,
    };
    let peak = gpu.info.fp32_peak_gflops.map(|p| Limit {
        name: "FP32 peak (SMs x lanes x 2 x clock)".into(),
        value: p,
    });
    let limit = match &cublas {
        Some(c) => Some(Limit {
            name: "cuBLAS SGEMM (same run)".into(),
            value: c.achieved,
        }),
        None => peak.clone(),
    };
    report.results.push(ours.against(limit, Some(TARGET_SGEMM)));
    if let Some(c) = cublas {
        report.results.push(c.against(peak, None));
    }
    if let Some(t) = tf32 {
        report.notes.push(
            "SGEMM TF32 rounds inputs to a 10-bit mantissa: a tensor-core result, not FP32; shown beside, not compared".into(),
        );
        report.results.push(t);
    }
    Ok(())
}

/// SGEMM operands: random n x n A and B on the host and the device, C zeroed.
struct GemmBuffers {
    a: Vec<f32>,
    b: Vec<f32>,
    da: CudaSlice<f32>,
    db: CudaSlice<f32>,
    dc: CudaSlice<f32>,
}

/// [`GemmBuffers`] of size n, A from `seed` and B from `seed + 1`.
fn gemm_buffers(gpu: &Gpu, n: usize, seed: u64) -> Result<GemmBuffers, Fatal> {
    let a = verify::random_vec(n * n, seed);
    let b = verify::random_vec(n * n, seed + 1);
    let da = gpu::to_device(gpu, &a).map_err(dev_err("copying inputs"))?;
    let db = gpu::to_device(gpu, &b).map_err(dev_err("copying inputs"))?;
    let dc = gpu
        .stream
        .alloc_zeros(n * n)
        .map_err(dev_err("cuMemAlloc"))?;
    Ok(GemmBuffers { a, b, da, db, dc })
}

/// The result of loading a mismatched module on purpose.
#[derive(Debug, Serialize)]
struct MismatchDemo {
    module_archs: Vec<String>,
    predicted: Option<&'static str>,
    driver_error: Option<String>,
    jit_log: Option<String>,
    diagnosis: Option<Explained>,
    agreed: bool,
}

fn arch_mismatch(
    gpu: &Gpu,
    report: &mut Report,
    driver_cuda: Option<(u32, u32)>,
    toolkit: Option<(u32, u32)>,
) -> Result<(), Fatal> {
    let archs = cuda_kernels::mismatch::vector_add::ARCHS;
    let fit = targets::check(archs, gpu.info.cc(), driver_cuda, toolkit);
    let predicted = fit.problem;
    eprintln!(
        "loading vectorAdd built only for {} on GPU {} (CC {}) on purpose; pre-load check predicts: {}",
        archs.join(", "),
        gpu.info.index,
        gpu.info.compute_capability,
        predicted.unwrap_or("it runs")
    );
    let Some(predicted) = predicted else {
        report.notes.push(format!(
            "this GPU runs {} itself: there is no mismatch to show here",
            cuda_kernels::MISMATCH_ARCH
        ));
        return Ok(());
    };
    match gpu::load_module(&gpu.ctx, cuda_kernels::mismatch::vector_add::IMAGE) {
        Ok(_) => Err(Fatal::Failed(Explained {
            code: "cuda-unknown-error".into(),
            failure: "the driver loaded the mismatched module".into(),
            text: format!(
                "error: the driver loaded a module built for {} although the check predicted {predicted}; the compatibility rules in targets.rs need a look",
                archs.join(", ")
            ),
        })),
        Err(f) => {
            let diagnosis = explain::explain(&Env::from_process(), &format!("{}\n{}", f.error, f.jit_log));
            let agreed = diagnosis.code == predicted;
            eprintln!("driver said: {}", f.error);
            if !f.jit_log.is_empty() {
                eprintln!("JIT log:\n{}", f.jit_log);
            }
            eprintln!("{}", diagnosis.text);
            eprintln!(
                "{}",
                if agreed {
                    "the prediction and the driver agree: a mismatched module produces the diagnosis, not a raw error"
                } else {
                    "the prediction and the diagnosis of the driver's error DIFFER"
                }
            );
            report.notes.push(format!(
                "force-arch-mismatch: predicted {predicted}, driver error diagnosed as {}",
                diagnosis.code
            ));
            let demo = MismatchDemo {
                module_archs: archs.iter().map(|s| s.to_string()).collect(),
                predicted: Some(predicted),
                driver_error: Some(f.error.clone()),
                jit_log: (!f.jit_log.is_empty()).then(|| f.jit_log.clone()),
                diagnosis: Some(diagnosis),
                agreed,
            };
            report.arch_mismatch = serde_json::to_value(&demo).ok();
            if agreed {
                Ok(())
            } else {
                Err(Fatal::Failed(Explained {
                    code: "cuda-unknown-error".into(),
                    failure: f.error,
                    text: "error: the mismatch diagnosis did not match the prediction".into(),
                }))
            }
        }
    }
}
