//! Everything that touches the GPU, through cudarc: device query, module
//! loading with the JIT log, bandwidth, the kernels, cuBLAS and the runtime.
//!
//! Every launch goes through one `launch_*` function, which calls the typed
//! launcher cuda-build generated from the kernel's C signature
//! (`cuda_kernels::kernels::<file>::<kernel>`): a wrong argument type, order
//! or count is a compile error, not garbage on the GPU.

use std::ffi::c_void;
use std::sync::Arc;

use cuda_kernels::{kernels, GemmLauncher};
use cudarc::driver::sys::{self, CUdevice_attribute as Attr};
use cudarc::driver::{
    result, CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtrMut,
    DriverError, LaunchConfig,
};
use cudarc::nvrtc::Ptx;
use serde::Serialize;

use crate::targets::{self, ModuleFit};

/// Threads per block of the streaming kernels.
pub const STREAM_THREADS: u32 = 256;
/// Threads of the reduction's blocks (both passes).
pub const REDUCE_THREADS: u32 = 1024;
/// Threads of the SGEMM kernels (fixed by their tiling).
pub const GEMM_THREADS: u32 = 256;
/// Output tile side of the SGEMM kernels.
pub const GEMM_TILE: u32 = 128;

/// `CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected`.
pub fn driver_error_text(e: &DriverError) -> String {
    let text = e
        .error_string()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{:?}: {text}", e.0)
}

/// The driver's CUDA version as (major, minor) and as the raw integer.
pub fn driver_cuda_version() -> Option<i32> {
    let mut v = 0;
    // SAFETY: writes one int; libcuda is loaded (checked by the caller).
    let r = unsafe { sys::cuDriverGetVersion(&mut v) };
    (r == sys::CUresult::CUDA_SUCCESS).then_some(v)
}

/// Initialises the driver and counts the visible GPUs.
pub fn device_count() -> Result<usize, DriverError> {
    result::init()?;
    Ok(result::device::get_count()? as usize)
}

/// What the device query reports for one GPU.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceInfo {
    /// Ordinal as the driver numbers it (after CUDA_VISIBLE_DEVICES).
    pub index: usize,
    /// Product name.
    pub name: String,
    /// Compute capability, e.g. "9.0".
    pub compute_capability: String,
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// Total device memory (bytes).
    pub total_memory: u64,
    /// Maximum SM clock (MHz).
    pub sm_clock_mhz: u32,
    /// Maximum memory clock (MHz).
    pub memory_clock_mhz: u32,
    /// Memory bus width (bits).
    pub memory_bus_bits: u32,
    /// 2 x memory clock x bus width: the datasheet-style memory bandwidth (GB/s).
    pub theoretical_memory_gbps: f64,
    /// L2 cache (bytes).
    pub l2_bytes: u32,
    /// Shared memory per block without opting in (bytes).
    pub smem_per_block: u32,
    /// Shared memory per block with `cudaFuncSetAttribute` (bytes).
    pub smem_per_block_optin: u32,
    /// Shared memory per SM (bytes).
    pub smem_per_sm: u32,
    /// Resident threads per SM.
    pub max_threads_per_sm: u32,
    /// PCI bus id.
    pub pci_bus: u32,
    /// SMs x FP32 lanes x 2 FLOP x max SM clock (GFLOP/s), where the lanes per SM are known.
    pub fp32_peak_gflops: Option<f64>,
    /// The embedded kernels against this GPU.
    pub module: ModuleFit,
}

impl DeviceInfo {
    /// The compute capability as a value.
    pub fn cc(&self) -> cuda_toolchain::arch::ComputeCapability {
        let mut it = self.compute_capability.split('.');
        let major = it.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        let minor = it.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        cuda_toolchain::arch::ComputeCapability::new(major, minor)
    }
}

/// FP32 lanes (CUDA cores) per SM by compute capability (CUDA C Programming
/// Guide, "Arithmetic Instructions" throughput table: 64 for 7.x and 8.0,
/// 128 for 8.6/8.7/8.9, 9.0, 10.x, 12.x).
pub fn fp32_lanes_per_sm(major: u32, minor: u32) -> Option<u32> {
    match (major, minor) {
        (7, _) | (8, 0) => Some(64),
        (8, _) | (9, 0) | (10, _) | (11, _) | (12, _) => Some(128),
        _ => None,
    }
}

/// Queries one GPU without creating a context on it.
pub fn query_device(
    index: usize,
    driver_cuda: Option<(u32, u32)>,
    module_archs: &[&str],
    toolkit: Option<(u32, u32)>,
) -> Result<DeviceInfo, DriverError> {
    let dev = result::device::get(index as i32)?;
    // SAFETY: `dev` is a valid device handle from cuDeviceGet.
    let attr = |a: Attr| unsafe { result::device::get_attribute(dev, a) }.map(|v| v.max(0) as u32);
    let major = attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    let sm_count = attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
    let sm_clock_khz = attr(Attr::CU_DEVICE_ATTRIBUTE_CLOCK_RATE).unwrap_or(0);
    let mem_clock_khz = attr(Attr::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE).unwrap_or(0);
    let bus_bits = attr(Attr::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH).unwrap_or(0);
    let cc = cuda_toolchain::arch::ComputeCapability::new(major, minor);
    Ok(DeviceInfo {
        index,
        name: result::device::get_name(dev)?,
        compute_capability: cc.to_string(),
        sm_count,
        // SAFETY: as above.
        total_memory: unsafe { result::device::total_mem(dev) }? as u64,
        sm_clock_mhz: sm_clock_khz / 1000,
        memory_clock_mhz: mem_clock_khz / 1000,
        memory_bus_bits: bus_bits,
        theoretical_memory_gbps: 2.0 * mem_clock_khz as f64 * 1e3 * (bus_bits as f64 / 8.0) / 1e9,
        l2_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE).unwrap_or(0),
        smem_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK).unwrap_or(0),
        smem_per_block_optin: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
            .unwrap_or(0),
        smem_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
            .unwrap_or(0),
        max_threads_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)
            .unwrap_or(2048),
        pci_bus: attr(Attr::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID).unwrap_or(0),
        fp32_peak_gflops: fp32_lanes_per_sm(major, minor)
            .map(|lanes| sm_count as f64 * lanes as f64 * 2.0 * sm_clock_khz as f64 / 1e6),
        module: targets::check(module_archs, cc, driver_cuda, toolkit),
    })
}

/// A module that failed to load: the driver's error and its JIT log.
#[derive(Debug, Clone)]
pub struct LoadFailure {
    /// `CUDA_ERROR_…: text`.
    pub error: String,
    /// The JIT's error and info logs, when it wrote any.
    pub jit_log: String,
}

/// Loads an embedded image. On failure, loads it once more through
/// `cuModuleLoadDataEx` with log buffers so the JIT's own words can be shown.
pub fn load_module(ctx: &Arc<CudaContext>, image: &[u8]) -> Result<Arc<CudaModule>, LoadFailure> {
    match ctx.load_module(Ptx::from_binary(image.to_vec())) {
        Ok(m) => Ok(m),
        Err(e) => Err(LoadFailure {
            error: driver_error_text(&e),
            jit_log: jit_log(ctx, image),
        }),
    }
}

/// The JIT's logs for an image that failed to load, from the one loader
/// (`cuda_toolchain::jit`), verbose.
fn jit_log(ctx: &Arc<CudaContext>, image: &[u8]) -> String {
    if ctx.bind_to_thread().is_err() {
        return String::new();
    }
    // SAFETY: the context was bound to this thread just above.
    let (r, module, logs) = unsafe { cuda_toolchain::jit::load_with_logs(image, true) };
    if r == sys::CUresult::CUDA_SUCCESS && !module.is_null() {
        // SAFETY: the module was just loaded and nothing else holds it.
        unsafe { sys::cuModuleUnload(module) };
    }
    logs.combined()
}

/// One GPU, its stream, and what the workload needs to know about it.
pub struct Gpu {
    /// The primary context.
    pub ctx: Arc<CudaContext>,
    /// The one stream everything runs on.
    pub stream: Arc<CudaStream>,
    /// Its query.
    pub info: DeviceInfo,
}

/// A loaded kernel and the grid that fills the GPU with it once.
#[derive(Debug, Clone)]
pub struct Kernel {
    /// The function.
    pub func: CudaFunction,
    /// Threads per block it is launched with.
    pub threads: u32,
    /// Blocks resident on the whole GPU at once (SMs x blocks per SM).
    pub wave: u32,
}

impl Kernel {
    /// Blocks for a grid-stride pass over `n` floats read as float4
    /// vectors: one full wave, fewer when there is less work than that.
    pub fn grid(&self, n: u64) -> u32 {
        wave_grid(self.wave, self.threads, n)
    }

    /// The launch configuration for `n` floats.
    pub fn config(&self, n: u64) -> LaunchConfig {
        cfg(self.grid(n), self.threads)
    }
}

/// One float4 per thread and pass, capped at one full wave of blocks.
fn wave_grid(wave: u32, threads: u32, n: u64) -> u32 {
    let needed = n.div_ceil(4).div_ceil(threads.max(1) as u64).max(1);
    (wave.max(1) as u64).min(needed) as u32
}

impl Gpu {
    /// Retains the device's primary context.
    pub fn open(info: DeviceInfo) -> Result<Gpu, DriverError> {
        let ctx = CudaContext::new(info.index)?;
        // One stream only: cudarc's per-allocation event tracking would add
        // work to every timed launch and protects nothing here.
        // SAFETY: no allocation is used from a second stream.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        Ok(Gpu { ctx, stream, info })
    }

    /// Free device memory (bytes).
    pub fn free_memory(&self) -> Result<u64, DriverError> {
        Ok(self.ctx.mem_get_info()?.0 as u64)
    }

    /// Loads `name` from `module` as a kernel launched with `threads` per
    /// block, and sizes its full wave: the blocks every SM holds at once
    /// (the driver's occupancy calculator, which knows the kernel's
    /// registers and shared memory) times the SMs.
    pub fn kernel(
        &self,
        module: &Arc<CudaModule>,
        name: &str,
        threads: u32,
    ) -> Result<Kernel, String> {
        let func = module
            .load_function(name)
            .map_err(|e| format!("cuModuleGetFunction({name}): {}", driver_error_text(&e)))?;
        // A grid of exactly one wave: with more blocks than fit at once, a
        // grid-stride kernel runs a partial second wave on part of the chip
        // (vectorAdd's 42 registers fit 5 blocks of 256 per SM, not 8).
        let per_sm = func
            .occupancy_max_active_blocks_per_multiprocessor(threads, 0, None)
            .ok()
            .filter(|&b| b > 0)
            .unwrap_or((self.info.max_threads_per_sm / threads).max(1));
        Ok(Kernel {
            func,
            threads,
            wave: self.info.sm_count.max(1) * per_sm,
        })
    }

    /// Mean milliseconds of `f` over `iters` runs after one warm-up, timed
    /// with CUDA events on the stream.
    pub fn time_ms(
        &self,
        iters: u32,
        mut f: impl FnMut() -> Result<(), DriverError>,
    ) -> Result<f64, DriverError> {
        f()?;
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = self.ctx.new_event(flags)?;
        let end = self.ctx.new_event(flags)?;
        start.record(&self.stream)?;
        for _ in 0..iters.max(1) {
            f()?;
        }
        end.record(&self.stream)?;
        Ok(start.elapsed_ms(&end)? as f64 / iters.max(1) as f64)
    }
}

fn cfg(grid: u32, block: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (grid, 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// `vectorAdd(a, b, c, n)`.
pub fn launch_vector_add(
    gpu: &Gpu,
    k: &Kernel,
    a: &CudaSlice<f32>,
    b: &CudaSlice<f32>,
    c: &mut CudaSlice<f32>,
    n: u64,
) -> Result<(), DriverError> {
    debug_assert!(a.len() as u64 >= n && b.len() as u64 >= n && c.len() as u64 >= n);
    // SAFETY: `k` is vectorAdd (loaded by that name; types checked against
    // its C signature by the launcher). It is a grid-stride loop bounded by
    // n, so any grid is in bounds, and every caller passes buffers of n
    // floats each.
    unsafe { kernels::vector_add::vector_add(&gpu.stream, &k.func, k.config(n), a, b, c, n) }
}

/// `saxpy(alpha, x, y, n)`: y = alpha * x + y.
pub fn launch_saxpy(
    gpu: &Gpu,
    k: &Kernel,
    alpha: f32,
    x: &CudaSlice<f32>,
    y: &mut CudaSlice<f32>,
    n: u64,
) -> Result<(), DriverError> {
    debug_assert!(x.len() as u64 >= n && y.len() as u64 >= n);
    // SAFETY: `k` is saxpy (types checked by the launcher); a grid-stride
    // loop bounded by n over x and y, which hold n floats each.
    unsafe { kernels::saxpy::saxpy(&gpu.stream, &k.func, k.config(n), alpha, x, y, n) }
}

/// Both passes of the sum: `partial` needs one double per block of the
/// first pass (`partial_k.grid(n)`), `out` one double.
pub fn launch_reduce(
    gpu: &Gpu,
    partial_k: &Kernel,
    final_k: &Kernel,
    x: &CudaSlice<f32>,
    n: u64,
    partial: &mut CudaSlice<f64>,
    out: &mut CudaSlice<f64>,
) -> Result<(), DriverError> {
    let blocks = partial_k.grid(n).min(partial.len() as u32).max(1);
    debug_assert!(x.len() as u64 >= n && !out.is_empty() && !partial.is_empty());
    debug_assert!(partial_k.threads.is_multiple_of(32) && partial_k.threads <= REDUCE_THREADS);
    // SAFETY: `partial_k` is reduceSumPartial (types checked by the
    // launcher). It reads x[i] only for i < n (x holds n floats) and writes
    // partial[blockIdx.x]: the grid is `blocks` <= partial.len() (clamped
    // above). Its blocks are REDUCE_THREADS = 1024 threads, its
    // __launch_bounds__ and a multiple of 32, as its block sum needs.
    unsafe {
        kernels::reduce::reduce_sum_partial(
            &gpu.stream,
            &partial_k.func,
            cfg(blocks, partial_k.threads),
            x,
            n,
            partial,
        )
    }?;
    // SAFETY: `final_k` is reduceSumFinal: one block reads partial[i] for
    // i < count = blocks <= partial.len() and writes out[0] (out is not empty).
    unsafe {
        kernels::reduce::reduce_sum_final(
            &gpu.stream,
            &final_k.func,
            cfg(1, final_k.threads),
            partial,
            blocks,
            out,
        )
    }
}

/// Longest chain of f32 additions one accumulator of the first reduction
/// pass sees on `n` floats (for the tolerance): float4 loads spread over
/// the grid's threads, 4 unrolled accumulators each ([`verify::check_sum`]
/// adds the tail loop's few).
///
/// [`verify::check_sum`]: crate::verify::check_sum
pub fn reduce_chain(partial_k: &Kernel, n: u64) -> u64 {
    chain_len(partial_k.grid(n), partial_k.threads, n)
}

fn chain_len(grid: u32, threads: u32, n: u64) -> u64 {
    let threads = (grid.max(1) as u64 * threads.max(1) as u64).max(1);
    n.div_ceil(4).div_ceil(threads * 4).max(1)
}

/// Which SGEMM kernel a function is: it decides the launcher and the grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GemmKernel {
    /// `sgemm` (FP32 on CUDA cores): a 1-D grid, tiles walked in groups.
    Fp32,
    /// `sgemmTf32` (tensor cores): a 2-D grid of tiles.
    Tf32,
}

/// `sgemm` / `sgemmTf32` (`f`, of that `kind`) on square row-major n x n
/// matrices: C = A * B.
pub fn launch_gemm(
    gpu: &Gpu,
    f: &CudaFunction,
    kind: GemmKernel,
    n: u32,
    a: &CudaSlice<f32>,
    b: &CudaSlice<f32>,
    c: &mut CudaSlice<f32>,
) -> Result<(), DriverError> {
    let tiles = n / GEMM_TILE;
    let grid = match kind {
        GemmKernel::Fp32 => (tiles * tiles, 1, 1), // sgemm walks tiles in groups itself
        GemmKernel::Tf32 => (tiles, tiles, 1),
    };
    let config = LaunchConfig {
        grid_dim: grid,
        block_dim: (GEMM_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    let (nn, alpha, beta) = (n as i32, 1.0f32, 0.0f32);
    let square = n as usize * n as usize;
    debug_assert!(n.is_multiple_of(GEMM_TILE) && a.len() >= square && b.len() >= square);
    debug_assert!(c.len() >= square);
    let launch: GemmLauncher = match kind {
        GemmKernel::Fp32 => kernels::sgemm::sgemm,
        GemmKernel::Tf32 => kernels::sgemm_tf32::sgemm_tf32,
    };
    // SAFETY: `f` is the kernel `kind` names (types checked by the launcher
    // against (int M, int N, int K, float alpha, const float* A, const float*
    // B, float beta, float* C)). M = N = K = n is a multiple of 128 (refused
    // otherwise by sizes::validate_gemm_dim), so the (n/128)^2 tiles of the
    // grid cover C exactly and each reads only rows and columns below n of
    // A, B and C, which hold n * n floats each; both kernels need exactly
    // GEMM_THREADS threads per block.
    unsafe { launch(&gpu.stream, f, config, nn, nn, nn, alpha, a, b, beta, c) }
}

/// cuBLAS SGEMM (FP32, default math mode: no TF32) on the same row-major
/// problem, when libcublas loads.
pub struct Blas(cudarc::cublas::CudaBlas);

impl Blas {
    /// None (with the reason) when libcublas is not found or fails to start.
    pub fn new(gpu: &Gpu) -> Result<Blas, String> {
        // SAFETY: only dlopen()s libcublas by its usual names.
        if !unsafe { cudarc::cublas::sys::is_culib_present() } {
            return Err("libcublas was not found on the library path".into());
        }
        cudarc::cublas::CudaBlas::new(gpu.stream.clone())
            .map(Blas)
            .map_err(|e| format!("cublasCreate failed: {e:?}"))
    }

    /// C = A * B for row-major n x n: column-major cuBLAS computes
    /// C^T = B^T * A^T, which is the same memory.
    pub fn sgemm(
        &self,
        n: u32,
        a: &CudaSlice<f32>,
        b: &CudaSlice<f32>,
        c: &mut CudaSlice<f32>,
    ) -> Result<(), DriverError> {
        use cudarc::cublas::{sys::cublasOperation_t::CUBLAS_OP_N, Gemm, GemmConfig};
        let n = n as i32;
        let config = GemmConfig {
            transa: CUBLAS_OP_N,
            transb: CUBLAS_OP_N,
            m: n,
            n,
            k: n,
            alpha: 1.0f32,
            lda: n,
            ldb: n,
            beta: 0.0f32,
            ldc: n,
        };
        // SAFETY: every matrix holds n * n floats.
        unsafe { self.0.gemm(config, b, a, c) }.map_err(|e| {
            // The caller's error type is the driver's: keep cuBLAS's own words.
            eprintln!("error: cublasSgemm_v2 failed: {e:?}");
            DriverError(sys::CUresult::CUDA_ERROR_UNKNOWN)
        })
    }
}

/// Bytes of one copy and where it went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// Host to device.
    H2d,
    /// Device to host.
    D2h,
    /// Device to device.
    D2d,
}

/// Which host memory / API did the copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CopyKind {
    /// Page-locked host memory, driver API (`cuMemcpy*Async`).
    Pinned,
    /// Ordinary pageable host memory, driver API.
    Pageable,
    /// Page-locked host memory, NVIDIA's runtime (`cudaMemcpyAsync`).
    PinnedRuntime,
    /// Device memory, driver API (`cuMemcpyDtoDAsync`).
    Device,
}

/// One bandwidth measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Bandwidth {
    /// Direction.
    pub direction: Direction,
    /// Memory and API.
    pub kind: CopyKind,
    /// Bytes per copy.
    pub bytes: u64,
    /// Mean time per copy (ms).
    pub ms: f64,
    /// GB/s (10^9 bytes per second). Device-to-device counts each byte
    /// twice (read and written), as NVIDIA's bandwidthTest does.
    pub gbps: f64,
}

fn gbps(bytes: f64, ms: f64) -> f64 {
    if ms > 0.0 {
        bytes / (ms * 1e-3) / 1e9
    } else {
        0.0
    }
}

/// Host<->device copies (pinned and pageable, driver API; pinned also via
/// the runtime when libcudart loads) and device<->device copies at `sizes`.
pub fn bandwidth(
    gpu: &Gpu,
    sizes: &[u64],
    iters: u32,
    notes: &mut Vec<String>,
) -> Result<Vec<Bandwidth>, DriverError> {
    let mut out = Vec::new();
    let runtime = runtime_ready(gpu.info.index);
    if let Err(why) = &runtime {
        notes.push(format!("runtime copies not measured: {why}"));
    }
    for &bytes in sizes {
        let len = bytes as usize;
        let mut dev = gpu.stream.alloc_zeros::<u8>(len)?;
        // Plain page-locked memory (not write-combined), like bandwidthTest.
        // SAFETY: filled below before any copy reads it.
        let mut pinned = unsafe { gpu.ctx.alloc_pinned_with_flags::<u8>(len, 0) }?;
        pinned.as_mut_slice()?.fill(0x5A);
        let mut pageable = vec![0x5Au8; len];

        let mut record = |direction, kind, ms: f64| {
            out.push(Bandwidth {
                direction,
                kind,
                bytes,
                ms,
                gbps: gbps(bytes as f64, ms),
            })
        };
        let ms = gpu.time_ms(iters, || gpu.stream.memcpy_htod(&pinned, &mut dev))?;
        record(Direction::H2d, CopyKind::Pinned, ms);
        let ms = gpu.time_ms(iters, || gpu.stream.memcpy_dtoh(&dev, &mut pinned))?;
        record(Direction::D2h, CopyKind::Pinned, ms);
        let ms = gpu.time_ms(iters, || gpu.stream.memcpy_htod(&pageable, &mut dev))?;
        record(Direction::H2d, CopyKind::Pageable, ms);
        let ms = gpu.time_ms(iters, || gpu.stream.memcpy_dtoh(&dev, &mut pageable))?;
        record(Direction::D2h, CopyKind::Pageable, ms);
        if runtime.is_ok() {
            let (dptr, _sync) = dev.device_ptr_mut(&gpu.stream);
            let hptr = pinned.as_mut_ptr()? as *mut c_void;
            let stream = gpu.stream.cu_stream() as cudarc::runtime::sys::cudaStream_t;
            use cudarc::runtime::sys::cudaMemcpyKind::*;
            // SAFETY (both copies): the buffers hold `len` bytes and outlive
            // the copies (the timing synchronises before returning).
            let h2d = gpu.time_ms(iters, || {
                runtime_copy(
                    dptr as *mut c_void,
                    hptr,
                    len,
                    cudaMemcpyHostToDevice,
                    stream,
                )
            });
            let d2h = gpu.time_ms(iters, || {
                runtime_copy(
                    hptr,
                    dptr as *const c_void,
                    len,
                    cudaMemcpyDeviceToHost,
                    stream,
                )
            });
            match (h2d, d2h) {
                (Ok(h2d), Ok(d2h)) => {
                    record(Direction::H2d, CopyKind::PinnedRuntime, h2d);
                    record(Direction::D2h, CopyKind::PinnedRuntime, d2h);
                }
                // The reference failing is no reason to stop the run: the
                // pinned rows then have no limit, and the note says why.
                (Err(e), _) | (_, Err(e)) => notes.push(format!(
                    "runtime copies of {bytes} bytes failed ({}; the runtime's own error is on stderr): pinned copies have no runtime comparison",
                    driver_error_text(&e)
                )),
            }
        }
        drop(pinned);
        drop(pageable);
        let mut dev2 = gpu.stream.alloc_zeros::<u8>(len)?;
        let ms = gpu.time_ms(iters, || gpu.stream.memcpy_dtod(&dev, &mut dev2))?;
        out.push(Bandwidth {
            direction: Direction::D2d,
            kind: CopyKind::Device,
            bytes,
            ms,
            gbps: gbps(2.0 * bytes as f64, ms),
        });
    }
    Ok(out)
}

/// Whether NVIDIA's runtime (libcudart) loads and attaches to this device's
/// primary context (the one cudarc uses).
fn runtime_ready(ordinal: usize) -> Result<(), String> {
    // SAFETY: only dlopen()s libcudart by its usual names.
    if !unsafe { cudarc::runtime::sys::is_culib_present() } {
        return Err("libcudart was not found on the library path".into());
    }
    // SAFETY: a plain runtime call; the device exists (queried before).
    let r = unsafe { cudarc::runtime::sys::cudaSetDevice(ordinal as i32) };
    if r != cudarc::runtime::sys::cudaError_t::cudaSuccess {
        return Err(format!("cudaSetDevice({ordinal}) failed: {r:?}"));
    }
    Ok(())
}

fn runtime_copy(
    dst: *mut c_void,
    src: *const c_void,
    len: usize,
    kind: cudarc::runtime::sys::cudaMemcpyKind,
    stream: cudarc::runtime::sys::cudaStream_t,
) -> Result<(), DriverError> {
    // SAFETY: the caller passes buffers of at least `len` bytes.
    let r = unsafe { cudarc::runtime::sys::cudaMemcpyAsync(dst, src, len, kind, stream) };
    if r == cudarc::runtime::sys::cudaError_t::cudaSuccess {
        Ok(())
    } else {
        // The caller's error type is the driver's: keep the runtime's own words.
        eprintln!("error: cudaMemcpyAsync({kind:?}, {len} bytes) failed: {r:?}");
        Err(DriverError(sys::CUresult::CUDA_ERROR_UNKNOWN))
    }
}

/// Fills a float buffer with all-ones bits (a NaN in f32 and f64) before a
/// verified run, so that an element the kernel never wrote fails the check
/// instead of passing as a leftover value.
pub fn poison<T: cudarc::driver::DeviceRepr>(
    gpu: &Gpu,
    buf: &mut CudaSlice<T>,
) -> Result<(), DriverError> {
    let bytes = buf.num_bytes();
    let (ptr, _sync) = buf.device_ptr_mut(&gpu.stream);
    // SAFETY: writes exactly the buffer's bytes, on the stream every launch
    // uses; all-ones is a valid (NaN) pattern for the float types used here.
    unsafe { result::memset_d8_async(ptr, 0xFF, bytes, gpu.stream.cu_stream()) }
}

/// Copies a device buffer back (synchronising).
pub fn to_host<T: cudarc::driver::DeviceRepr + Default + Clone>(
    gpu: &Gpu,
    d: &CudaSlice<T>,
) -> Result<Vec<T>, DriverError> {
    gpu.stream.clone_dtoh(d)
}

/// Uploads a host slice.
pub fn to_device<T: cudarc::driver::DeviceRepr>(
    gpu: &Gpu,
    h: &[T],
) -> Result<CudaSlice<T>, DriverError> {
    gpu.stream.clone_htod(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streaming_grids_are_one_wave_at_most() {
        // H200: 132 SMs x 5 resident blocks of vectorAdd (42 registers).
        let wave = 132 * 5;
        assert_eq!(wave_grid(wave, 256, 1 << 28), wave);
        // NVIDIA's sample size: 12,500 float4 need 49 blocks of 256.
        assert_eq!(wave_grid(wave, 256, 50_000), 49);
        assert_eq!(wave_grid(wave, 256, 50_003), 49);
        // Never an empty grid, whatever the inputs.
        assert_eq!(wave_grid(wave, 256, 0), 1);
        assert_eq!(wave_grid(0, 0, 1), 1);
    }

    #[test]
    fn reduction_chain_follows_the_grid() {
        // 2^28 floats over 264 blocks of 1024 threads: 2^26 float4 over
        // 270,336 threads, 4 accumulators each.
        let grid = wave_grid(264, 1024, 1 << 28);
        assert_eq!(grid, 264);
        assert_eq!(chain_len(grid, 1024, 1 << 28), 63);
        // The odd-size check: 50,003 floats need 13 blocks, one float4 each.
        assert_eq!(wave_grid(264, 1024, 50_003), 13);
        assert_eq!(chain_len(13, 1024, 50_003), 1);
    }
}
