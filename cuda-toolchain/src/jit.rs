//! Loading a kernel image with the driver JIT's own words captured (feature
//! `cudarc`): the one loader `cargo cuda doctor` and the workload share.
//!
//! When the driver rejects an image ("the provided PTX was compiled with an
//! unsupported toolchain"), its error code says little; the JIT's error log
//! names the PTX version or the instruction. `cuModuleLoadDataEx` hands that
//! log back through buffers passed as options.

use cudarc::driver::sys;
use std::ffi::c_void;

/// Bytes of each log buffer: the driver truncates longer logs.
const LOG_BYTES: usize = 16 * 1024;

/// What the driver's JIT wrote while loading an image.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JitLogs {
    /// The error log (CU_JIT_ERROR_LOG_BUFFER).
    pub error: String,
    /// The info log (CU_JIT_INFO_LOG_BUFFER), verbose when asked for.
    pub info: String,
}

impl JitLogs {
    /// Both logs, error first; empty when the JIT wrote nothing.
    pub fn combined(&self) -> String {
        match (self.error.is_empty(), self.info.is_empty()) {
            (true, true) => String::new(),
            (false, true) => self.error.clone(),
            (true, false) => self.info.clone(),
            (false, false) => format!("{}\n{}", self.error, self.info),
        }
    }
}

/// Loads `image` (a fatbin, cubin or NUL-terminated PTX) into the current
/// context with `cuModuleLoadDataEx`, capturing the JIT's logs. Returns the
/// driver's result, the module (null unless the result is success) and the logs.
///
/// # Safety
/// A CUDA context must be current on this thread, and the driver library
/// loaded (`cudarc::driver::sys::is_culib_present()`).
pub unsafe fn load_with_logs(
    image: &[u8],
    verbose: bool,
) -> (sys::CUresult, sys::CUmodule, JitLogs) {
    let mut error_log = vec![0u8; LOG_BYTES];
    let mut info_log = vec![0u8; LOG_BYTES];
    let mut options = [
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER,
        sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        sys::CUjit_option::CU_JIT_LOG_VERBOSE,
    ];
    // The driver reads sizes and flags as integers stored in the pointer slots.
    let mut values: [*mut c_void; 5] = [
        error_log.as_mut_ptr().cast(),
        LOG_BYTES as *mut c_void,
        info_log.as_mut_ptr().cast(),
        LOG_BYTES as *mut c_void,
        usize::from(verbose) as *mut c_void,
    ];
    // A fatbin must be 8-byte aligned; an `include_bytes!` slice need not be.
    let aligned: Vec<u64> = image
        .chunks(8)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(b)
        })
        .collect();
    let mut module: sys::CUmodule = std::ptr::null_mut();
    // SAFETY: the option arrays have matching lengths; the buffers are
    // LOG_BYTES long and live until after the call; the caller guarantees a
    // current context.
    let r = unsafe {
        sys::cuModuleLoadDataEx(
            &mut module,
            aligned.as_ptr().cast(),
            options.len() as u32,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    };
    let text = |buf: &[u8]| {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).trim().to_string()
    };
    let logs = JitLogs {
        error: text(&error_log),
        info: text(&info_log),
    };
    (r, module, logs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combined_orders_error_first_and_skips_empty_logs() {
        let l = |e: &str, i: &str| JitLogs {
            error: e.into(),
            info: i.into(),
        };
        assert_eq!(l("", "").combined(), "");
        assert_eq!(l("ptxas fatal", "").combined(), "ptxas fatal");
        assert_eq!(l("", "info").combined(), "info");
        assert_eq!(l("err", "info").combined(), "err\ninfo");
    }
}
