//! The doctor's run layer: load a kernel image through the driver, run
//! vectorAdd with verification, and query every GPU, via cudarc.
//!
//! cudarc loads libcuda lazily and *panics* when it is absent (or lacks a
//! symbol). So callers reach this module only after `cuda_toolchain::probe`
//! found a real (non-stub) libcuda, we check `is_culib_present` again, and
//! every entry point runs under `catch_unwind` so a panic becomes a failed
//! check, never a crash.

use std::ffi::{c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use cudarc::driver::{sys, CudaContext};

/// One GPU as the driver reports it.
#[derive(Debug, Clone)]
pub struct Device {
    /// Ordinal.
    pub index: usize,
    /// Product name.
    pub name: String,
    /// Compute capability (major, minor).
    pub cc: (i32, i32),
    /// Total memory in bytes.
    pub total_mem: usize,
}

/// Why the run failed; `jit_log` holds the driver's JIT error log when it rejected the module.
#[derive(Debug, Clone)]
pub struct RunFailure {
    /// What went wrong.
    pub message: String,
    /// The driver's JIT error log (CU_JIT_ERROR_LOG_BUFFER), when there was one.
    pub jit_log: Option<String>,
}

impl RunFailure {
    fn new(message: impl Into<String>) -> RunFailure {
        RunFailure {
            message: message.into(),
            jit_log: None,
        }
    }
}

/// Runs `f` with libcuda present and panics turned into errors.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T, RunFailure>) -> Result<T, RunFailure> {
    // SAFETY: only tries to dlopen libcuda by name.
    if !unsafe { sys::is_culib_present() } {
        return Err(RunFailure::new(
            "libcuda could not be loaded (cudarc found no libcuda.so / libcuda.so.1)",
        ));
    }
    // A panic here becomes a failed check; keep the default hook from also
    // printing a backtrace notice into the report (doctor is single-threaded here).
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = catch_unwind(AssertUnwindSafe(f));
    std::panic::set_hook(hook);
    match result {
        Ok(r) => r,
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(RunFailure::new(format!(
                "{what}: the CUDA driver library failed: {msg}"
            )))
        }
    }
}

fn check(r: sys::CUresult, what: &str) -> Result<(), RunFailure> {
    if r == sys::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    let mut name: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: cuGetErrorName writes a pointer to a static string.
    let text = unsafe {
        if sys::cuGetErrorName(r, &mut name) == sys::CUresult::CUDA_SUCCESS && !name.is_null() {
            CStr::from_ptr(name).to_string_lossy().into_owned()
        } else {
            format!("{r:?}")
        }
    };
    Err(RunFailure::new(format!("{what} failed: {text}")))
}

/// Every GPU the driver shows.
pub fn query_devices() -> Result<Vec<Device>, RunFailure> {
    guarded("device query", || {
        let count = CudaContext::device_count()
            .map_err(|e| RunFailure::new(format!("cuDeviceGetCount: {e:?}")))?;
        let mut out = Vec::new();
        for index in 0..count.max(0) as usize {
            let ctx = CudaContext::new(index)
                .map_err(|e| RunFailure::new(format!("context on GPU {index}: {e:?}")))?;
            let attr = |a| {
                ctx.attribute(a)
                    .map_err(|e| RunFailure::new(format!("GPU {index} attribute: {e:?}")))
            };
            out.push(Device {
                index,
                name: ctx.name().unwrap_or_else(|_| "unknown".into()),
                cc: (
                    attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                    attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
                ),
                total_mem: ctx.total_mem().unwrap_or(0),
            });
        }
        Ok(out)
    })
}

/// Loads `image` (fatbin, cubin or NUL-terminated PTX) on GPU `ordinal`,
/// runs `vectorAdd(a, b, c, n)` and checks every element. Returns a summary.
pub fn run_vector_add(image: &[u8], ordinal: usize) -> Result<String, RunFailure> {
    guarded("vectorAdd", || {
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| RunFailure::new(format!("context on GPU {ordinal}: {e:?}")))?;
        let module = load_with_log(image)?;
        let result = launch_and_verify(module);
        // SAFETY: the module was loaded above and no function of it is used after this.
        unsafe {
            sys::cuModuleUnload(module);
        }
        drop(ctx);
        result
    })
}

/// Loads the image through the one JIT-log loader (`cuda_toolchain::jit`), keeping
/// the JIT's error log for the report when the driver rejects it.
fn load_with_log(image: &[u8]) -> Result<sys::CUmodule, RunFailure> {
    // SAFETY: `run` made the primary context current on this thread.
    let (r, module, logs) = unsafe { cuda_toolchain::jit::load_with_logs(image, false) };
    if let Err(mut f) = check(r, "loading the kernel image (cuModuleLoadDataEx)") {
        f.jit_log = (!logs.error.is_empty()).then_some(logs.error);
        return Err(f);
    }
    Ok(module)
}

fn launch_and_verify(module: sys::CUmodule) -> Result<String, RunFailure> {
    const N: usize = 1 << 20;
    let a: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..N).map(|i| 2.0 * i as f32 + 0.5).collect();
    let bytes = N * std::mem::size_of::<f32>();
    let mut func: sys::CUfunction = std::ptr::null_mut();
    // SAFETY: plain driver API calls on the current (primary) context; every
    // pointer passed lives until the call returns, device buffers are freed below.
    unsafe {
        check(
            sys::cuModuleGetFunction(&mut func, module, c"vectorAdd".as_ptr()),
            "finding kernel `vectorAdd`",
        )?;
        let mut bufs: [sys::CUdeviceptr; 3] = [0; 3];
        let mut result = Ok(String::new());
        for buf in bufs.iter_mut() {
            if let Err(e) = check(sys::cuMemAlloc_v2(buf, bytes), "cuMemAlloc") {
                result = Err(e);
                break;
            }
        }
        if result.is_ok() {
            result = (|| {
                let [da, db, dc] = bufs;
                check(
                    sys::cuMemcpyHtoD_v2(da, a.as_ptr().cast(), bytes),
                    "copy a to GPU",
                )?;
                check(
                    sys::cuMemcpyHtoD_v2(db, b.as_ptr().cast(), bytes),
                    "copy b to GPU",
                )?;
                let n = N as i32;
                let mut params: [*mut c_void; 4] = [
                    (&da as *const sys::CUdeviceptr).cast_mut().cast(),
                    (&db as *const sys::CUdeviceptr).cast_mut().cast(),
                    (&dc as *const sys::CUdeviceptr).cast_mut().cast(),
                    (&n as *const i32).cast_mut().cast(),
                ];
                let block = 256u32;
                let grid = (N as u32).div_ceil(block);
                check(
                    sys::cuLaunchKernel(
                        func,
                        grid,
                        1,
                        1,
                        block,
                        1,
                        1,
                        0,
                        std::ptr::null_mut(),
                        params.as_mut_ptr(),
                        std::ptr::null_mut(),
                    ),
                    "launching vectorAdd",
                )?;
                check(sys::cuCtxSynchronize(), "running vectorAdd")?;
                let mut c = vec![0f32; N];
                check(
                    sys::cuMemcpyDtoH_v2(c.as_mut_ptr().cast(), dc, bytes),
                    "copy c from GPU",
                )?;
                let bad = (0..N).filter(|&i| c[i] != a[i] + b[i]).count();
                if bad > 0 {
                    let i = (0..N).find(|&i| c[i] != a[i] + b[i]).unwrap_or(0);
                    return Err(RunFailure::new(format!(
                        "vectorAdd gave {bad} wrong results of {N} (first: c[{i}] = {}, expected {})",
                        c[i],
                        a[i] + b[i]
                    )));
                }
                Ok(format!("vectorAdd of {N} floats verified"))
            })();
        }
        for buf in bufs {
            if buf != 0 {
                sys::cuMemFree_v2(buf);
            }
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without libcuda (CI), every entry point reports it instead of panicking.
    #[test]
    fn no_libcuda_is_an_error_not_a_panic() {
        // SAFETY: only tries to dlopen libcuda by name.
        if unsafe { sys::is_culib_present() } {
            errln!("skipped: this machine has libcuda");
            return;
        }
        let e = query_devices().unwrap_err();
        assert!(e.message.contains("libcuda could not be loaded"), "{e:?}");
        let e = run_vector_add(b"not a fatbin\0", 0).unwrap_err();
        assert!(e.message.contains("libcuda"), "{e:?}");
        assert!(e.jit_log.is_none());
    }

    /// With a GPU, a garbage image is rejected by the driver with an error, not a crash.
    #[test]
    fn garbage_image_is_rejected_on_a_gpu() {
        if !workspace_tests::gpu_required("garbage_image_is_rejected_on_a_gpu") {
            return;
        }
        let e = run_vector_add(b"this is not PTX\0", 0).unwrap_err();
        assert!(e.message.contains("cuModuleLoadDataEx"), "{e:?}");
    }
}
