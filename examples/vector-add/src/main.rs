//! vectorAdd on 50,000 elements, as in NVIDIA's sample, through cudarc.
//!
//! The kernel was compiled by build.rs (cuda-build); this program loads the
//! embedded image, launches it, and checks every element on the CPU. On a
//! machine without a usable GPU it exits with status 1 and the reason,
//! explained by cuda-build's diagnosis engine, instead of a panic.
//!
//! The launch is typed: build.rs turns on cuda-build's `launchers`, which
//! reads the kernel's C signature with libclang and generates
//! `kernels::vector_add::vector_add(stream, func, cfg, a, b, c, n)`, so a
//! wrong buffer type or an `n` that is not an `int` (`i32`) does not compile.
//! Building therefore needs libclang (`apt-get install libclang-dev`).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::{CudaContext, DriverError, LaunchConfig};
use cudarc::nvrtc::Ptx;

// The generated module lists more than this program reads.
#[allow(dead_code)]
mod kernels {
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
}

/// Elements, as in NVIDIA's sample.
const N: usize = 50_000;
const THREADS_PER_BLOCK: u32 = 256;

fn main() -> ExitCode {
    match run() {
        Ok(()) => {
            println!("Test PASSED");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    // cudarc panics when it cannot open libcuda; look before it does.
    // SAFETY: only dlopen()s the driver library by its usual names.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(explain(
            "libcuda.so.1: cannot open shared object file: No such file or directory",
        ));
    }
    let ctx = CudaContext::new(0).map_err(|e| explain(&driver_error_text(&e)))?;
    let name = ctx.name().unwrap_or_else(|_| "?".into());
    let (major, minor) = ctx
        .compute_capability()
        .map_err(|e| cuda_err("query", &e))?;
    println!(
        "[Vector addition of {N} elements] on GPU 0: {name} (compute capability {major}.{minor})"
    );
    println!(
        "kernel image: {} built by CUDA {} for {}",
        kernels::vector_add::KIND,
        kernels::TOOLKIT_VERSION,
        kernels::vector_add::ARCHS.join(", ")
    );

    if kernels::vector_add::IMAGE.is_empty() {
        return Err("error[nvcc-not-found]: vector-add was built without a CUDA toolkit, so its kernel image is empty\n  = help: rebuild where nvcc is found (set CUDA_HOME or NVCC)".into());
    }
    let module = ctx
        .load_module(Ptx::from_binary(kernels::vector_add::IMAGE.to_vec()))
        .map_err(|e| explain(&driver_error_text(&e)))?;
    let func = module
        .load_function("vectorAdd")
        .map_err(|e| cuda_err("cuModuleGetFunction(vectorAdd)", &e))?;

    let a = random_vec(N, 1);
    let b = random_vec(N, 2);
    let stream = ctx.default_stream();
    let c = launch(&stream, &func, &a, &b).map_err(|e| cuda_err("vectorAdd", &e))?;

    // a + b is exactly rounded on both sides, so the results must be equal.
    if let Some(i) = (0..N).find(|&i| c[i] != a[i] + b[i]) {
        return Err(format!(
            "Result verification failed at element {i}: GPU {} != CPU {} ({} + {})",
            c[i],
            a[i] + b[i],
            a[i],
            b[i]
        ));
    }
    println!("verified {N} elements: every result equals the CPU sum exactly");
    Ok(())
}

fn launch(
    stream: &Arc<cudarc::driver::CudaStream>,
    func: &cudarc::driver::CudaFunction,
    a: &[f32],
    b: &[f32],
) -> Result<Vec<f32>, DriverError> {
    let d_a = stream.clone_htod(a)?;
    let d_b = stream.clone_htod(b)?;
    let mut d_c = stream.alloc_zeros::<f32>(a.len())?;
    let n = a.len() as i32;
    let blocks = (a.len() as u32).div_ceil(THREADS_PER_BLOCK);
    println!("CUDA kernel launch with {blocks} blocks of {THREADS_PER_BLOCK} threads");
    let cfg = LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (THREADS_PER_BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the argument types are checked against
    // vectorAdd(const float*, const float*, float*, int) by the generated
    // launcher; `func` is vectorAdd itself (loaded by that name above). The
    // kernel touches index i only when i < n, and n = a.len() = b.len() =
    // d_c.len() (N = 50,000 fits in an int); the grid covers all n.
    unsafe { kernels::vector_add::vector_add(stream, func, cfg, &d_a, &d_b, &mut d_c, n) }?;
    stream.clone_dtoh(&d_c)
}

/// Uniform values in [0, 1) from a fixed seed (xorshift64*).
fn random_vec(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40) as f32 / (1u64 << 24) as f32
        })
        .collect()
}

/// `CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected`, the shape the
/// diagnosis engine and people's logs use.
fn driver_error_text(e: &DriverError) -> String {
    let text = e
        .error_string()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{:?}: {text}", e.0)
}

fn cuda_err(what: &str, e: &DriverError) -> String {
    format!("error: {what} failed: {}", driver_error_text(e))
}

/// Explains a driver-layer failure with cuda-build's probe and diagnosis.
fn explain(failure: &str) -> String {
    let env = cuda_toolchain::env::Env::from_process();
    // The driver API is what just failed; nvidia-smi and /proc say why.
    let options = cuda_toolchain::probe::ProbeOptions {
        timeout: Duration::from_millis(1500),
        skip_driver_api: true,
        ..Default::default()
    };
    let report = cuda_toolchain::probe::probe(&env, &options);
    let ctx = cuda_toolchain::diagnose::Context {
        probe: Some(report),
        ..Default::default()
    };
    let mut out = format!("error: no usable CUDA GPU: {failure}");
    match cuda_toolchain::diagnose::diagnose(failure, &ctx).first() {
        Some(d) => {
            out.push('\n');
            out.push_str(&cuda_toolchain::diagnose::render(d));
        }
        None => out.push_str("\n  = help: run `cargo cuda doctor` for a full check"),
    }
    out
}

#[cfg(test)]
mod tests {
    use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, DriverError, LaunchConfig};

    /// The generated launcher has the signature of cu/vector_add.cu's
    /// `vectorAdd(const float* a, const float* b, float* c, int n)`: the
    /// coercion below stops compiling if the kernel's parameters change.
    #[test]
    fn the_typed_launcher_matches_the_kernel() {
        type VectorAdd = unsafe fn(
            &CudaStream,
            &CudaFunction,
            LaunchConfig,
            &CudaSlice<f32>,
            &CudaSlice<f32>,
            &mut CudaSlice<f32>,
            i32,
        ) -> Result<(), DriverError>;
        let _: VectorAdd = super::kernels::vector_add::vector_add;
        // The raw entry `run` loads the function by.
        assert_eq!(super::kernels::vector_add::ENTRIES, ["vectorAdd"]);
    }
}
