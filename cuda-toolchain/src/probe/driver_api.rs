//! The CUDA driver API, loaded at run time: no toolkit and no nvidia-smi needed.
//!
//! libcuda is opened only by its soname `libcuda.so.1` (the dynamic loader's
//! search: `LD_LIBRARY_PATH`, the ld.so cache, system dirs — never the current
//! directory) or from the absolute WSL path. The probe runs in a child process
//! ([`run_child`]) or in a guarded thread ([`run_in_thread`]) so that a wedged
//! driver costs a timeout, not a hung build.
//!
//! The child prints one JSON line, a [`DriverProbe`]:
//!
//! ```json
//! {"schema":1,"libcuda":"/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06","libcuda_stub":false,
//!  "driver":{"version":"580.65.06","cuda_version":[13,0],"found_via":"driver-api"},
//!  "gpus":[{"index":0,"name":"NVIDIA H200","compute_capability":{"major":9,"minor":0},"total_memory":150754820096}],
//!  "nvml_version":"13.580.65.06","error":null,"notes":[]}
//! ```

use super::{procfs, DriverInfo, GpuInfo, ProbeMethod};
use crate::arch::ComputeCapability;
use crate::env::{Env, Var};
use libloading::Library;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_uint};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The driver library's soname.
pub const LIBCUDA_SONAME: &str = "libcuda.so.1";
/// Where WSL2 mounts the Windows driver's libcuda.
pub const WSL_LIBCUDA: &str = "/usr/lib/wsl/lib/libcuda.so.1";
const NVML_SONAME: &str = "libnvidia-ml.so.1";
const WSL_NVML: &str = "/usr/lib/wsl/lib/libnvidia-ml.so.1";

/// Version of the [`DriverProbe`] JSON layout.
pub const DRIVER_PROBE_SCHEMA: u32 = 1;

/// Everything one driver-API probe learned: the JSON a `__probe-driver`
/// child prints, and what the in-thread probe returns.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct DriverProbe {
    /// [`DRIVER_PROBE_SCHEMA`].
    pub schema: u32,
    /// The libcuda file actually mapped (symlinks resolved), when one loaded.
    pub libcuda: Option<PathBuf>,
    /// Whether that libcuda is the toolkit's link-time stub.
    pub libcuda_stub: bool,
    /// The driver, when libcuda answered.
    pub driver: Option<DriverInfo>,
    /// The GPUs the driver shows (after `CUDA_VISIBLE_DEVICES`).
    pub gpus: Vec<GpuInfo>,
    /// NVML's version, when libnvidia-ml answered.
    pub nvml_version: Option<String>,
    /// Why there is no answer: the exact failure, e.g. `cuInit failed: CUDA_ERROR_NO_DEVICE (100): ...`.
    pub error: Option<String>,
    /// Remarks worth showing (where the driver version came from, ...).
    pub notes: Vec<String>,
}

impl DriverProbe {
    fn failed(error: String) -> DriverProbe {
        DriverProbe {
            schema: DRIVER_PROBE_SCHEMA,
            error: Some(error),
            ..DriverProbe::default()
        }
    }

    /// One line of JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| {
            // Only non-string map keys can fail here, and there are none; stay total anyway.
            format!("{{\"schema\":{DRIVER_PROBE_SCHEMA},\"error\":\"could not encode the probe result: {e}\"}}")
        })
    }

    /// Reads a child's stdout: the last line that parses as a [`DriverProbe`]
    /// (from its first `{`). Lines a driver may print before it are skipped.
    pub fn from_child_stdout(stdout: &str) -> Result<DriverProbe, String> {
        let mut last_err = None;
        // A line may start with text printed without a newline before ours.
        let candidates = stdout
            .lines()
            .rev()
            .filter_map(|l| l.find('{').map(|i| l[i..].trim()));
        for line in candidates {
            match serde_json::from_str::<DriverProbe>(line) {
                Ok(p) if p.schema == DRIVER_PROBE_SCHEMA => return Ok(p),
                Ok(p) => {
                    last_err = Some(format!(
                        "schema {} where {DRIVER_PROBE_SCHEMA} was expected (cuda-build versions differ?)",
                        p.schema
                    ))
                }
                Err(e) => last_err = Some(e.to_string()),
            }
        }
        Err(match last_err {
            Some(e) => format!("its JSON could not be read: {e}"),
            None => format!(
                "it printed no JSON line (stdout: `{}`)",
                procfs::shorten(stdout.trim())
            ),
        })
    }
}

/// The name of a `CUresult`, e.g. `CUDA_ERROR_NO_DEVICE` for 100, from the
/// one table of CUDA errors (`cuda_errors`); a loaded driver names
/// the others itself (`cuGetErrorName`).
pub fn cu_result_name(code: i32) -> Option<&'static str> {
    let num = u32::try_from(code).ok()?;
    crate::cuda_errors::by_number(num).and_then(|e| e.driver)
}

const CUDA_ERROR_STUB_LIBRARY: c_int = 34;
const CUDA_ERROR_NO_DEVICE: c_int = 100;
const ATTR_CC_MAJOR: c_int = 75;
const ATTR_CC_MINOR: c_int = 76;

type CuInit = unsafe extern "C" fn(c_uint) -> c_int;
type CuIntOut = unsafe extern "C" fn(*mut c_int) -> c_int;
type CuDeviceGet = unsafe extern "C" fn(*mut c_int, c_int) -> c_int;
type CuDeviceGetName = unsafe extern "C" fn(*mut c_char, c_int, c_int) -> c_int;
type CuDeviceGetAttribute = unsafe extern "C" fn(*mut c_int, c_int, c_int) -> c_int;
type CuDeviceTotalMem = unsafe extern "C" fn(*mut usize, c_int) -> c_int;
type CuGetErrorText = unsafe extern "C" fn(c_int, *mut *const c_char) -> c_int;

/// The probe, in this thread: load libcuda by soname (or the WSL path) and ask it.
pub fn probe_in_process(env: &Env) -> DriverProbe {
    let lib = match open_libcuda() {
        Ok(lib) => lib,
        Err(e) => return DriverProbe::failed(e),
    };
    probe_library(lib, env)
}

/// The probe against a libcuda at an absolute path: for tests with a fake
/// libcuda. Relative paths are refused, as the loader would search for them.
pub fn probe_library_at(path: &Path, env: &Env) -> DriverProbe {
    if !path.is_absolute() {
        return DriverProbe::failed(format!(
            "refusing to load libcuda from the relative path `{}`",
            path.display()
        ));
    }
    // SAFETY: loading a shared library runs its initialisers; this is the
    // library the caller named, by absolute path.
    match unsafe { Library::new(path) } {
        Ok(lib) => probe_library(lib, env),
        Err(e) => DriverProbe::failed(format!("{} could not be loaded: {e}", path.display())),
    }
}

fn open_libcuda() -> Result<Library, String> {
    // SAFETY: libcuda's initialisers are the driver's; a soname without a
    // slash makes dlopen search only the loader's paths.
    let first = match unsafe { Library::new(LIBCUDA_SONAME) } {
        Ok(lib) => return Ok(lib),
        Err(e) => e,
    };
    // The WSL path is real even under a fake root: it is what this process would load.
    let wsl = Path::new(WSL_LIBCUDA);
    if wsl.exists() {
        // SAFETY: as above, an absolute path to the WSL driver library.
        return unsafe { Library::new(wsl) }.map_err(|e| {
            format!("{LIBCUDA_SONAME} not found by the loader ({first}), and {WSL_LIBCUDA} could not be loaded: {e}")
        });
    }
    Err(format!(
        "{LIBCUDA_SONAME} not found ({first}); no NVIDIA driver is visible to this process (in a container, run it with the GPU runtime, e.g. `docker run --gpus all`)"
    ))
}

fn probe_library(lib: Library, env: &Env) -> DriverProbe {
    let mut out = DriverProbe {
        schema: DRIVER_PROBE_SCHEMA,
        ..DriverProbe::default()
    };
    // SAFETY: the signatures match cuda.h for these entry points.
    let syms = unsafe { Symbols::load(&lib) };
    let syms = match syms {
        Ok(s) => s,
        Err(e) => {
            out.error = Some(e);
            std::mem::forget(lib);
            return out;
        }
    };
    out.libcuda = mapped_file(syms.init as usize);
    if let Some(p) = &out.libcuda {
        if p.components().any(|c| c.as_os_str() == "stubs") {
            out.libcuda_stub = true;
        }
    }
    let err = |code: c_int| syms.describe(code);

    let mut version: c_int = 0;
    // SAFETY: a valid out pointer; callable before cuInit.
    let rc = unsafe { (syms.driver_get_version)(&mut version) };
    let cuda_version =
        (rc == 0 && version > 0).then_some((version as u32 / 1000, (version as u32 % 1000) / 10));

    // SAFETY: flags must be 0.
    let rc = unsafe { (syms.init)(0) };
    let mut gpus = Vec::new();
    if rc == CUDA_ERROR_STUB_LIBRARY {
        out.libcuda_stub = true;
    }
    if rc == CUDA_ERROR_NO_DEVICE {
        out.notes.push(format!("cuInit: {}", err(rc)));
    } else if rc != 0 {
        out.error = Some(match rc {
            CUDA_ERROR_STUB_LIBRARY => format!(
                "cuInit failed: {}; the loaded libcuda{} is the toolkit's link-time stub, not the driver (remove its stubs/ directory from LD_LIBRARY_PATH)",
                err(rc),
                out.libcuda.as_ref().map(|p| format!(" ({})", p.display())).unwrap_or_default()
            ),
            _ => format!("cuInit failed: {}", err(rc)),
        });
        std::mem::forget(lib);
        return out;
    } else {
        match syms.devices() {
            Ok(list) => gpus = list,
            Err(e) => {
                out.error = Some(e);
                std::mem::forget(lib);
                return out;
            }
        }
    }

    // cuDriverGetVersion gives only the CUDA version: the driver's own number
    // comes from NVML, the kernel module, or libcuda's file name.
    let (nvml_driver, nvml_version) = nvml_versions();
    out.nvml_version = nvml_version;
    let version = if let Some(v) = nvml_driver {
        Some(v)
    } else if let Ok(k) = procfs::read(env) {
        out.notes
            .push(format!("driver version from {}", procfs::VERSION_FILE));
        Some(k.version)
    } else if let Some(v) = out.libcuda.as_deref().and_then(version_from_file_name) {
        out.notes
            .push("driver version from libcuda's file name".into());
        Some(v)
    } else {
        None
    };
    out.driver = Some(DriverInfo {
        version,
        cuda_version,
        found_via: ProbeMethod::DriverApi,
    });
    out.gpus = gpus;
    // Unloading libcuda while its threads live is known to crash; keep it loaded.
    std::mem::forget(lib);
    out
}

struct Symbols {
    init: CuInit,
    driver_get_version: CuIntOut,
    device_get_count: CuIntOut,
    device_get: CuDeviceGet,
    device_get_name: CuDeviceGetName,
    device_get_attribute: CuDeviceGetAttribute,
    device_total_mem: CuDeviceTotalMem,
    get_error_name: Option<CuGetErrorText>,
    get_error_string: Option<CuGetErrorText>,
}

impl Symbols {
    /// # Safety
    /// The caller promises the library is a libcuda (the types match cuda.h).
    unsafe fn load(lib: &Library) -> Result<Symbols, String> {
        unsafe fn get<T: Copy>(lib: &Library, name: &str) -> Result<T, String> {
            lib.get::<T>(name.as_bytes()).map(|s| *s).map_err(|e| {
                format!("the loaded libcuda has no `{name}` ({e}); it is not a CUDA driver library")
            })
        }
        Ok(Symbols {
            init: get(lib, "cuInit")?,
            driver_get_version: get(lib, "cuDriverGetVersion")?,
            device_get_count: get(lib, "cuDeviceGetCount")?,
            device_get: get(lib, "cuDeviceGet")?,
            device_get_name: get(lib, "cuDeviceGetName")?,
            device_get_attribute: get(lib, "cuDeviceGetAttribute")?,
            device_total_mem: get(lib, "cuDeviceTotalMem_v2")?,
            get_error_name: get(lib, "cuGetErrorName").ok(),
            get_error_string: get(lib, "cuGetErrorString").ok(),
        })
    }

    /// `CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected`.
    fn describe(&self, code: c_int) -> String {
        let known = u32::try_from(code)
            .ok()
            .and_then(crate::cuda_errors::by_number);
        if let Some(e) = known {
            if let (Some(name), Some(text)) = (e.driver, e.messages.first()) {
                return format!("{name} ({code}): {text}");
            }
        }
        let ask = |f: Option<CuGetErrorText>| -> Option<String> {
            let f = f?;
            let mut p: *const c_char = std::ptr::null();
            // SAFETY: the driver writes a pointer to a static string or leaves it null.
            let rc = unsafe { f(code, &mut p) };
            // SAFETY: non-null pointers from the driver point at NUL-terminated static strings.
            (rc == 0 && !p.is_null())
                .then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
        };
        match (ask(self.get_error_name), ask(self.get_error_string)) {
            (Some(n), Some(s)) => format!("{n} ({code}): {s}"),
            (Some(n), None) => format!("{n} ({code})"),
            _ => format!("CUresult {code}"),
        }
    }

    fn devices(&self) -> Result<Vec<GpuInfo>, String> {
        let mut count: c_int = 0;
        // SAFETY: valid out pointer, after a successful cuInit.
        let rc = unsafe { (self.device_get_count)(&mut count) };
        if rc != 0 {
            return Err(format!("cuDeviceGetCount failed: {}", self.describe(rc)));
        }
        let mut gpus = Vec::new();
        for ordinal in 0..count.clamp(0, 1024) {
            let mut dev: c_int = 0;
            // SAFETY: valid out pointer; ordinal < count.
            let rc = unsafe { (self.device_get)(&mut dev, ordinal) };
            if rc != 0 {
                return Err(format!(
                    "cuDeviceGet({ordinal}) failed: {}",
                    self.describe(rc)
                ));
            }
            let mut name = [0 as c_char; 256];
            // SAFETY: the buffer holds `len` bytes; the driver NUL-terminates within it.
            let rc =
                unsafe { (self.device_get_name)(name.as_mut_ptr(), name.len() as c_int - 1, dev) };
            let name = if rc == 0 {
                // SAFETY: zero-initialised and one byte longer than the driver may write.
                unsafe { CStr::from_ptr(name.as_ptr()) }
                    .to_string_lossy()
                    .trim()
                    .to_string()
            } else {
                format!("GPU {ordinal}")
            };
            let (mut major, mut minor): (c_int, c_int) = (0, 0);
            // SAFETY: valid out pointers and attribute ids from cuda.h.
            let rc_major = unsafe { (self.device_get_attribute)(&mut major, ATTR_CC_MAJOR, dev) };
            // SAFETY: as above.
            let rc_minor = unsafe { (self.device_get_attribute)(&mut minor, ATTR_CC_MINOR, dev) };
            if rc_major != 0 || rc_minor != 0 || major <= 0 || minor < 0 {
                let rc = if rc_major != 0 { rc_major } else { rc_minor };
                return Err(format!(
                    "cuDeviceGetAttribute(compute capability) failed for device {ordinal} `{name}`: {}",
                    self.describe(rc)
                ));
            }
            let mut bytes: usize = 0;
            // SAFETY: valid out pointer.
            let rc = unsafe { (self.device_total_mem)(&mut bytes, dev) };
            gpus.push(GpuInfo {
                index: ordinal as u32,
                name,
                compute_capability: ComputeCapability::new(major as u32, minor as u32),
                total_memory: (rc == 0).then_some(bytes as u64),
            });
        }
        Ok(gpus)
    }
}

/// The file mapped at `addr` in this process, from /proc/self/maps. This
/// reads the real /proc (not the env's root): it describes this very process.
fn mapped_file(addr: usize) -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().find_map(|line| {
        let (lo, hi) = line.split_whitespace().next()?.split_once('-')?;
        let lo = usize::from_str_radix(lo, 16).ok()?;
        let hi = usize::from_str_radix(hi, 16).ok()?;
        // range perms offset dev inode path: no field before the path holds a '/'.
        let path = line[line.find('/')?..].trim_end();
        (lo <= addr && addr < hi).then(|| PathBuf::from(path))
    })
}

/// `libcuda.so.580.65.06` → `580.65.06`.
fn version_from_file_name(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let v = name.strip_prefix("libcuda.so.")?;
    procfs::is_driver_version(v).then(|| v.to_string())
}

/// NVML's driver and library versions, when libnvidia-ml loads and initialises.
fn nvml_versions() -> (Option<String>, Option<String>) {
    type NoArgs = unsafe extern "C" fn() -> c_int;
    type VersionOut = unsafe extern "C" fn(*mut c_char, c_uint) -> c_int;
    // SAFETY: NVML by soname, or the absolute WSL path.
    let lib = unsafe { Library::new(NVML_SONAME) }.or_else(|e| {
        if Path::new(WSL_NVML).exists() {
            // SAFETY: as above.
            unsafe { Library::new(WSL_NVML) }
        } else {
            Err(e)
        }
    });
    let Ok(lib) = lib else { return (None, None) };
    // SAFETY: signatures from nvml.h.
    let result = unsafe {
        let init = lib.get::<NoArgs>(b"nvmlInit_v2").map(|s| *s);
        let shutdown = lib.get::<NoArgs>(b"nvmlShutdown").map(|s| *s);
        let driver = lib
            .get::<VersionOut>(b"nvmlSystemGetDriverVersion")
            .map(|s| *s);
        let nvml = lib
            .get::<VersionOut>(b"nvmlSystemGetNVMLVersion")
            .map(|s| *s);
        match (init, shutdown) {
            (Ok(init), Ok(shutdown)) if init() == 0 => {
                let read = |f: Result<VersionOut, libloading::Error>| -> Option<String> {
                    let f = f.ok()?;
                    let mut buf = [0 as c_char; 96];
                    (f(buf.as_mut_ptr(), buf.len() as c_uint - 1) == 0)
                        .then(|| {
                            CStr::from_ptr(buf.as_ptr())
                                .to_string_lossy()
                                .trim()
                                .to_string()
                        })
                        .filter(|s| !s.is_empty())
                };
                let r = (read(driver), read(nvml));
                shutdown();
                r
            }
            _ => (None, None),
        }
    };
    std::mem::forget(lib);
    result
}

/// Runs `exe __probe-driver` under `timeout` and reads its JSON.
///
/// The child gets this env's `CUDA_VISIBLE_DEVICES` (or none) and root.
pub(crate) fn run_child(exe: &Path, env: &Env, timeout: Duration) -> Result<DriverProbe, String> {
    let mut cmd = std::process::Command::new(exe);
    cmd.arg(super::DRIVER_PROBE_ARG);
    let cvd = Var::CudaVisibleDevices.name();
    match env.get_os(Var::CudaVisibleDevices) {
        Some(v) => cmd.env(cvd, v),
        None => cmd.env_remove(cvd),
    };
    // The child must answer, not start yet another child.
    cmd.env_remove(Var::CargoCudaProbe.name());
    if env.root() != Path::new("/") {
        cmd.env(Var::CargoCudaSysroot.name(), env.root());
    } else {
        cmd.env_remove(Var::CargoCudaSysroot.name());
    }
    let out = crate::process::run_command(&mut cmd, timeout).map_err(|e| {
        format!(
            "driver probe child: {e}{}",
            match &e {
                crate::process::RunError::TimedOut { .. } =>
                    " (the driver may be hung: check `dmesg` for NVRM errors)",
                _ => "",
            }
        )
    })?;
    match DriverProbe::from_child_stdout(&out.stdout) {
        Ok(p) => Ok(p),
        Err(why) => {
            let how = match out.status.code() {
                Some(c) => format!("exited with status {c}"),
                None => format!("was killed ({})", out.status),
            };
            let stderr = out.stderr.trim();
            Err(format!(
                "driver probe child `{} {}` {how}, and {why}{}",
                exe.display(),
                super::DRIVER_PROBE_ARG,
                if stderr.is_empty() {
                    String::new()
                } else {
                    format!("; stderr: {}", procfs::shorten(stderr))
                }
            ))
        }
    }
}

/// Set while an in-thread probe is stuck inside libcuda: later probes in this
/// process do not pile more threads onto a hung driver.
static THREAD_STUCK: AtomicBool = AtomicBool::new(false);

/// Runs [`probe_in_process`] on a worker thread, giving up after `timeout`.
pub(crate) fn run_in_thread(env: &Env, timeout: Duration) -> Result<DriverProbe, String> {
    run_guarded(&THREAD_STUCK, timeout, {
        let env = env.clone();
        move || probe_in_process(&env)
    })
}

fn run_guarded(
    stuck: &'static AtomicBool,
    timeout: Duration,
    job: impl FnOnce() -> DriverProbe + Send + 'static,
) -> Result<DriverProbe, String> {
    if stuck.load(Ordering::SeqCst) {
        return Err("an earlier driver probe in this process is still stuck inside libcuda; not trying again".into());
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let finished = Arc::new(AtomicBool::new(false));
    let flag = finished.clone();
    let spawned = std::thread::Builder::new()
        .name("cuda-driver-probe".into())
        .spawn(move || {
            let result = job();
            flag.store(true, Ordering::SeqCst);
            stuck.store(false, Ordering::SeqCst);
            let _ = tx.send(result);
        });
    if let Err(e) = spawned {
        return Err(format!("could not start the driver probe thread: {e}"));
    }
    match rx.recv_timeout(timeout) {
        Ok(p) => Ok(p),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            // Mark stuck first, then look: a job finishing in between clears it either way.
            stuck.store(true, Ordering::SeqCst);
            if finished.load(Ordering::SeqCst) {
                stuck.store(false, Ordering::SeqCst);
            }
            Err(format!(
                "the driver did not answer within {} (the driver may be hung: check `dmesg` for NVRM errors)",
                crate::process::show_duration(timeout)
            ))
        }
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            Err("the driver probe thread died without an answer (a panic inside the probe)".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_names() {
        assert_eq!(cu_result_name(100), Some("CUDA_ERROR_NO_DEVICE"));
        assert_eq!(cu_result_name(34), Some("CUDA_ERROR_STUB_LIBRARY"));
        assert_eq!(
            cu_result_name(803),
            Some("CUDA_ERROR_SYSTEM_DRIVER_MISMATCH")
        );
        assert_eq!(
            cu_result_name(804),
            Some("CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE")
        );
        assert_eq!(cu_result_name(999), Some("CUDA_ERROR_UNKNOWN"));
        assert_eq!(cu_result_name(12345), None);
    }

    #[test]
    fn json_round_trip_and_noise() {
        let p = DriverProbe {
            schema: DRIVER_PROBE_SCHEMA,
            libcuda: Some("/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06".into()),
            driver: Some(DriverInfo {
                version: Some("580.65.06".into()),
                cuda_version: Some((13, 0)),
                found_via: ProbeMethod::DriverApi,
            }),
            gpus: vec![GpuInfo {
                index: 0,
                name: "NVIDIA H200".into(),
                compute_capability: ComputeCapability::new(9, 0),
                total_memory: Some(150_754_820_096),
            }],
            ..DriverProbe::default()
        };
        let json = p.to_json();
        assert!(!json.contains('\n'));
        assert_eq!(DriverProbe::from_child_stdout(&json).unwrap(), p);
        let noisy = format!("driver chatter\n{{not json\n{json}\n\n");
        assert_eq!(DriverProbe::from_child_stdout(&noisy).unwrap(), p);
        let glued = format!("test probe_child_entry ... {json}\nok\n");
        assert_eq!(DriverProbe::from_child_stdout(&glued).unwrap(), p);
        assert!(DriverProbe::from_child_stdout("")
            .unwrap_err()
            .contains("no JSON line"));
        assert!(DriverProbe::from_child_stdout("{\"schema\":99}")
            .unwrap_err()
            .contains("schema 99"));
        assert!(DriverProbe::from_child_stdout("{\"gpus\":7}")
            .unwrap_err()
            .contains("could not be read"));
    }

    #[test]
    fn file_name_versions() {
        assert_eq!(
            version_from_file_name(Path::new("/usr/lib64/libcuda.so.580.65.06")).as_deref(),
            Some("580.65.06")
        );
        assert_eq!(
            version_from_file_name(Path::new("/usr/lib/wsl/lib/libcuda.so.1")),
            None
        );
        assert_eq!(version_from_file_name(Path::new("/x/libcuda.so")), None);
    }

    #[test]
    fn maps_lookup_finds_our_own_code() {
        // The address of a function in this test binary maps to the binary itself.
        let addr = maps_lookup_finds_our_own_code as *const () as usize;
        let file = mapped_file(addr).expect("test binary is mapped");
        let exe = std::env::current_exe().unwrap();
        assert_eq!(file.file_name(), exe.file_name());
    }

    #[test]
    fn real_driver_api_here_reports_missing_libcuda() {
        // This machine has no NVIDIA driver; on a GPU machine the probe must answer instead.
        let p = probe_in_process(&Env::empty());
        match &p.error {
            Some(e) => assert!(e.contains("libcuda.so.1"), "{e}"),
            None => assert!(p.driver.is_some()),
        }
    }

    #[test]
    fn guarded_thread_times_out_and_then_refuses() {
        static STUCK: AtomicBool = AtomicBool::new(false);
        let start = std::time::Instant::now();
        let e = run_guarded(&STUCK, Duration::from_millis(100), || {
            std::thread::sleep(Duration::from_millis(600));
            DriverProbe::default()
        })
        .unwrap_err();
        assert!(e.contains("did not answer within 100 ms"), "{e}");
        assert!(start.elapsed() < Duration::from_millis(500));
        let again =
            run_guarded(&STUCK, Duration::from_millis(100), DriverProbe::default).unwrap_err();
        assert!(again.contains("still stuck"), "{again}");
        // Once the stuck call returns, probing works again.
        std::thread::sleep(Duration::from_millis(700));
        assert!(run_guarded(&STUCK, Duration::from_secs(5), DriverProbe::default).is_ok());
        let died = run_guarded(&STUCK, Duration::from_secs(5), || panic!("boom")).unwrap_err();
        assert!(died.contains("died"), "{died}");
    }
}
