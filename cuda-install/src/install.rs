//! One install: lock the store, resolve, download and verify every wheel,
//! unpack into a staging directory, check it, and rename it into place.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use cuda_toolchain::toolkit::store::{self, InstallRecord, Installed, InstalledPackage};
use cuda_toolchain::Error;
use fs4::fs_std::FileExt;
use sha2::{Digest, Sha256};

use crate::resolve::{self, Chosen, Spec};
use crate::source::{Artifact, Source};
use crate::unpack::{self, Layout};

/// What to install.
#[derive(Debug, Clone)]
pub enum Request {
    /// A consistent release (`13.0`), with optional components.
    Release {
        /// The version asked for.
        spec: Spec,
        /// Optional components (`cublas`, `nvrtc`, `curand`, `nvjitlink`).
        with: Vec<String>,
    },
    /// Exactly these `name==version` wheels, in pip's layout, with no consistency check.
    Unchecked {
        /// The store name.
        name: String,
        /// `(package, version)` pins.
        pins: Vec<(String, String)>,
    },
}

/// What an install did.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The toolkit in the store.
    pub installed: Installed,
    /// False when it was already there (nothing downloaded).
    pub changed: bool,
    /// Bytes downloaded (0 when every wheel was cached).
    pub downloaded: u64,
}

const ENOSPC: i32 = 28;
const EROFS: i32 = 30;
const EACCES: i32 = 13;
const EPERM: i32 = 1;
const EDQUOT: i32 = 122;

/// An I/O failure on the store, classified (full, read-only) with the fix.
pub fn store_error(store: &Path, what: &str, path: &Path, e: &io::Error) -> Error {
    let (code, why, fix) = match os_code(e) {
        Some(ENOSPC) | Some(EDQUOT) => (
            "install-disk-full",
            "the disk is full",
            format!("free space on the disk holding `{}`, or set CARGO_CUDA_HOME to a directory on a bigger disk; a CUDA 13.0 compiler needs about 300 MB unpacked plus its downloads", store.display()),
        ),
        Some(EROFS) | Some(EACCES) | Some(EPERM) => (
            "install-store-readonly",
            "the store is not writable",
            format!("set CARGO_CUDA_HOME to a writable directory (the store is `{}`)", store.display()),
        ),
        _ => (
            "install-io",
            "an I/O error",
            format!("check `{}`, then rerun the same command", store.display()),
        ),
    };
    Error::new(
        code,
        format!("could not {what} `{}`: {why} ({e})", path.display()),
    )
    .with_help(fix)
    .with_help("nothing was installed; a later install starts clean")
}

/// The OS error code, also from inside wrappers (tempfile adds the path around it).
fn os_code(e: &io::Error) -> Option<i32> {
    if let Some(c) = e.raw_os_error() {
        return Some(c);
    }
    let mut cur: Option<&(dyn std::error::Error + 'static)> = e.get_ref().map(|r| r as _);
    while let Some(err) = cur {
        if let Some(c) = err
            .downcast_ref::<io::Error>()
            .and_then(io::Error::raw_os_error)
        {
            return Some(c);
        }
        cur = err.source();
    }
    None
}

/// Holds the store's install lock (released on drop).
struct Lock(File);

fn lock(store: &Path, progress: &dyn Fn(&str)) -> Result<Lock, Error> {
    let dir = store.join("locks");
    fs::create_dir_all(&dir).map_err(|e| store_error(store, "create", &dir, &e))?;
    let path = dir.join("install.lock");
    let f = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| store_error(store, "open the lock file", &path, &e))?;
    let got = FileExt::try_lock_exclusive(&f).unwrap_or(false);
    if !got {
        progress(&format!(
            "waiting for another install to finish (lock `{}`)",
            path.display()
        ));
        FileExt::lock_exclusive(&f).map_err(|e| store_error(store, "lock", &path, &e))?;
    }
    Ok(Lock(f))
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = FileExt::unlock(&self.0);
    }
}

/// The installed toolkit that already satisfies a request, if any.
pub fn already(store_dir: &Path, req: &Request) -> Option<Installed> {
    let all = store::installed(store_dir);
    match req {
        Request::Release { spec, with } => all.into_iter().find(|i| {
            i.record.checked
                && i.record.layout == "root"
                && cuda_toolchain::toolkit::version::parse_loose(&i.record.release)
                    .is_some_and(|v| spec.matches(&v))
                && *spec != Spec::Latest
                && with
                    .iter()
                    .all(|w| i.record.components.iter().any(|c| c == w))
        }),
        Request::Unchecked { name, pins } => all.into_iter().find(|i| {
            &i.name == name
                && !i.record.checked
                && pins.len() == i.record.packages.len()
                && pins.iter().all(|(n, v)| {
                    i.record
                        .packages
                        .iter()
                        .any(|p| &p.name == n && &p.version == v)
                })
        }),
    }
}

/// Installs `req` from `source` into `store_dir`.
///
/// `source` is built only when something must be downloaded, so a second
/// install of the same version touches no network.
pub fn install(
    store_dir: &Path,
    source: &dyn Fn() -> Result<Box<dyn Source>, Error>,
    req: &Request,
    offline: bool,
    progress: &dyn Fn(&str),
) -> Result<Outcome, Error> {
    if let Some(installed) = already(store_dir, req) {
        return Ok(Outcome {
            installed,
            changed: false,
            downloaded: 0,
        });
    }
    if offline {
        return Err(Error::new(
            "install-offline",
            format!("{} is not in the store `{}`, and the network is off (--offline or CARGO_NET_OFFLINE)", describe(req), store_dir.display()),
        )
        .with_help("run the same command once with network (without --offline / CARGO_NET_OFFLINE=true), e.g. on CI before the offline step"));
    }
    fs::create_dir_all(store_dir).map_err(|e| store_error(store_dir, "create", store_dir, &e))?;
    let _lock = lock(store_dir, progress)?;
    // Another install may have finished while we waited.
    if let Some(installed) = already(store_dir, req) {
        return Ok(Outcome {
            installed,
            changed: false,
            downloaded: 0,
        });
    }
    let toolkits = store::toolkits_dir(store_dir);
    let staging_root = toolkits.join(".tmp");
    // Anything left here is from an interrupted install: never used, now removed.
    let _ = fs::remove_dir_all(&staging_root);
    fs::create_dir_all(&staging_root)
        .map_err(|e| store_error(store_dir, "create", &staging_root, &e))?;

    let source = source()?;
    let (name, files, layout, release, components, checked) = match req {
        Request::Release { spec, with } => {
            let r = resolve::resolve(source.as_ref(), spec, with)?;
            progress(&format!(
                "CUDA {spec} → compiler {}: {}",
                r.release,
                r.files
                    .iter()
                    .map(|c| format!("{}=={}", c.artifact.package, c.artifact.version))
                    .collect::<Vec<_>>()
                    .join(" ")
            ));
            (
                r.release.to_string(),
                r.files,
                Layout::Root,
                r.release.to_string(),
                with.clone(),
                true,
            )
        }
        Request::Unchecked { name, pins } => {
            check_name(name)?;
            let files = resolve::exact(source.as_ref(), pins)?;
            let release = pins
                .iter()
                .find(|(n, _)| n.starts_with("nvidia-cuda-nvcc"))
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            (
                name.clone(),
                files,
                Layout::Wheel,
                release,
                Vec::new(),
                false,
            )
        }
    };

    let mut downloaded = 0;
    let mut wheels = Vec::new();
    for c in &files {
        let (path, bytes) = fetch_verified(store_dir, source.as_ref(), &c.artifact, progress)?;
        downloaded += bytes;
        wheels.push(path);
    }

    let stage = tempfile::Builder::new()
        .prefix(&format!("{name}-"))
        .tempdir_in(&staging_root)
        .map_err(|e| {
            store_error(
                store_dir,
                "create a staging directory in",
                &staging_root,
                &e,
            )
        })?;
    progress(&format!("unpacking {} wheels", wheels.len()));
    for w in &wheels {
        unpack::unpack(w, stage.path(), layout).map_err(|e| {
            if e.kind() == io::ErrorKind::InvalidData {
                let _ = fs::remove_file(w);
                Error::new(
                    "install-bad-wheel",
                    format!("`{}` is not a usable wheel: {e}", w.display()),
                )
                .with_help("the file matched the index's sha256, so the index serves a broken file: report it, or use another index (--index-url); nothing was installed")
            } else {
                store_error(store_dir, "unpack into", stage.path(), &e)
            }
        })?;
    }
    if layout == Layout::Root {
        finish_root(stage.path(), &release)?;
    }
    let record = InstallRecord {
        release: release.clone(),
        checked,
        source: source.name(),
        layout: match layout {
            Layout::Root => "root".into(),
            Layout::Wheel => "wheel".into(),
        },
        components,
        packages: files
            .iter()
            .map(|c| InstalledPackage {
                name: c.artifact.package.clone(),
                version: c.artifact.version.clone(),
                file: c.artifact.filename.clone(),
                sha256: c.artifact.sha256.clone(),
            })
            .collect(),
    };
    write_version_json(stage.path(), &release, &files, &record)
        .map_err(|e| store_error(store_dir, "write version.json in", stage.path(), &e))?;

    // Swap in: the final name appears only complete. An older install of
    // the same name (say, without --with cublas) moves aside first.
    let dest = toolkits.join(&name);
    let staged = stage.keep();
    if dest.exists() {
        let old = staging_root.join(format!("{name}.old"));
        let _ = fs::remove_dir_all(&old);
        fs::rename(&dest, &old).map_err(|e| store_error(store_dir, "replace", &dest, &e))?;
        let _ = fs::remove_dir_all(&old);
    }
    if let Err(e) = fs::rename(&staged, &dest) {
        let _ = fs::remove_dir_all(&staged);
        return Err(store_error(store_dir, "move the new toolkit to", &dest, &e));
    }
    let installed = store::read_installed(&dest).ok_or_else(|| {
        Error::new(
            "install-io",
            format!("`{}` was installed but does not read back", dest.display()),
        )
    })?;
    Ok(Outcome {
        installed,
        changed: true,
        downloaded,
    })
}

fn describe(req: &Request) -> String {
    match req {
        Request::Release { spec, .. } => format!("CUDA {spec}"),
        Request::Unchecked { name, .. } => format!("the unchecked set `{name}`"),
    }
}

fn check_name(name: &str) -> Result<(), Error> {
    let ok = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if ok {
        Ok(())
    } else {
        Err(Error::new(
            "install-bad-name",
            format!("`--name {name}` is not a usable store name"),
        )
        .with_help(
            "use letters, digits, `.`, `_` and `-`, not starting with `.` (e.g. `--name mixed`)",
        ))
    }
}

/// Downloads one wheel into `<store>/wheels/` (or reuses a verified copy);
/// returns its path and the bytes downloaded.
pub fn fetch_verified(
    store_dir: &Path,
    source: &dyn Source,
    a: &Artifact,
    progress: &dyn Fn(&str),
) -> Result<(PathBuf, u64), Error> {
    let dir = store_dir.join("wheels");
    fs::create_dir_all(&dir).map_err(|e| store_error(store_dir, "create", &dir, &e))?;
    let dest = dir.join(&a.filename);
    if dest.is_file() {
        if let Ok(sum) = sha256_file(&dest) {
            if sum == a.sha256 {
                return Ok((dest, 0));
            }
        }
        let _ = fs::remove_file(&dest);
    }
    progress(&format!(
        "downloading {}=={} ({})",
        a.package,
        a.version,
        a.size.map_or("size unknown".into(), |s| format!(
            "{:.1} MB",
            s as f64 / 1e6
        ))
    ));
    // What a killed download left (its owner's pid is in its name).
    cuda_toolchain::fsutil::remove_abandoned(&dir, ".part-");
    let (mut body, announced) = source.open(a)?;
    let expected = a.size.or(announced);
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".part-{}-", std::process::id()))
        .tempfile_in(&dir)
        .map_err(|e| store_error(store_dir, "create a download file in", &dir, &e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut got: u64 = 0;
    loop {
        let n = match body.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(crate::http::network_error(
                    &a.url,
                    &format!(
                        "the connection failed after {got} of {} bytes ({e})",
                        expected.map_or("?".into(), |s| s.to_string())
                    ),
                    &source.name(),
                ))
            }
        };
        hasher.update(&buf[..n]);
        tmp.as_file_mut()
            .write_all(&buf[..n])
            .map_err(|e| store_error(store_dir, "write", tmp.path(), &e))?;
        got += n as u64;
    }
    if let Some(size) = expected.filter(|&s| s != got) {
        return Err(crate::http::network_error(
            &a.url,
            &format!("the connection closed after {got} of {size} bytes"),
            &source.name(),
        ));
    }
    let sum = hex(&hasher.finalize());
    if sum != a.sha256 {
        return Err(Error::new(
            "install-sha256-mismatch",
            format!(
                "`{}` from `{}` has sha256 {sum}, but the index says {}",
                a.filename, a.url, a.sha256
            ),
        )
        .with_help("the file was changed on the way (a proxy, a broken mirror) or the index is wrong; it was deleted and nothing was installed")
        .with_help("retry; if it persists, use another index (--index-url) or check HTTPS_PROXY"));
    }
    tmp.as_file()
        .sync_all()
        .map_err(|e| store_error(store_dir, "write", tmp.path(), &e))?;
    tmp.persist(&dest)
        .map_err(|e| store_error(store_dir, "save", &dest, &e.error))?;
    Ok((dest, got))
}

/// Lowercase hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The sha256 of a file, as lowercase hex.
pub fn sha256_file(path: &Path) -> io::Result<String> {
    let mut f = File::open(path)?;
    let mut h = Sha256::new();
    io::copy(&mut f, &mut h)?;
    Ok(hex(&h.finalize()))
}

/// Checks a staged root: the parts every compile needs, and nvcc's own version.
fn finish_root(root: &Path, release: &str) -> Result<(), Error> {
    #[cfg(unix)]
    if root.join("lib64").is_dir() && !root.join("lib").exists() {
        // nvcc.profile's LD_LIBRARY_PATH names $(TOP)/lib; LIBRARIES names lib64.
        let _ = std::os::unix::fs::symlink("lib64", root.join("lib"));
    }
    let needed = [
        "bin/nvcc",
        "bin/ptxas",
        "bin/fatbinary",
        "bin/nvlink",
        "include/cuda_runtime.h",
        "include/crt/host_config.h",
    ];
    let mut missing: Vec<&str> = needed
        .iter()
        .copied()
        .filter(|p| !root.join(p).exists())
        .collect();
    // Where nvcc.profile looks (CICC_PATH, NVVMIR_LIBRARY_DIR). The 13.0.48
    // wheels put cicc in bin/ and ship no libdevice: nvcc cannot compile with them.
    for p in ["nvvm/bin/cicc", "nvvm/libdevice"] {
        if !root.join(p).exists() {
            missing.push(p);
        }
    }
    let cccl = root.join("include/cccl").is_dir() || root.join("include/cuda/std").is_dir();
    if !missing.is_empty() || !cccl {
        let mut m = missing.join(", ");
        if !cccl {
            m.push_str(if m.is_empty() {
                "the CCCL headers"
            } else {
                ", the CCCL headers"
            });
        }
        return Err(Error::new(
            "install-incomplete",
            format!("the wheels of CUDA {release} unpacked without {m}"),
        )
        .with_help("the index's wheels do not form a complete compiler; nothing was installed: choose another version (`cargo cuda toolkit install latest`)"));
    }
    let out = cuda_toolchain::process::run(
        root.join("bin/nvcc"),
        ["--version"],
        Duration::from_secs(60),
    )
    .map_err(|e| {
        Error::new(
            "install-incomplete",
            format!("the unpacked nvcc of CUDA {release} does not run: {e}"),
        )
        .with_help("nothing was installed; check that the wheels are for this CPU and C library")
    })?;
    let text = out.combined();
    let v = cuda_toolchain::toolkit::version::parse_tool_version(&text);
    if v.as_ref().map(|v| v.to_string()).as_deref() != Some(release) {
        return Err(Error::new(
            "install-incomplete",
            format!(
                "the unpacked nvcc reports {}, not {release}",
                v.map_or("no version".into(), |v| v.to_string())
            ),
        )
        .with_help("the index's nvcc wheel is not what its name says; nothing was installed"));
    }
    Ok(())
}

/// `version.json` in NVIDIA's format (so CMake and others read the release),
/// plus this installer's record under `cargo_cuda`.
fn write_version_json(
    root: &Path,
    release: &str,
    files: &[Chosen],
    record: &InstallRecord,
) -> io::Result<()> {
    let mut obj = serde_json::Map::new();
    obj.insert(
        "cuda".into(),
        serde_json::json!({"name": "CUDA SDK", "version": release}),
    );
    for c in files {
        obj.insert(
            c.json_key.clone(),
            serde_json::json!({"name": c.artifact.package, "version": c.artifact.version}),
        );
    }
    obj.insert("cargo_cuda".into(), serde_json::to_value(record)?);
    let path = root.join("version.json");
    let mut f = File::create(&path)?;
    f.write_all(serde_json::to_string_pretty(&serde_json::Value::Object(obj))?.as_bytes())?;
    f.sync_all()
}

/// Removes a toolkit from the store, and its downloads no other install uses.
pub fn remove(store_dir: &Path, name: &str, progress: &dyn Fn(&str)) -> Result<Installed, Error> {
    let all = store::installed(store_dir);
    let Some(target) = all.iter().find(|i| i.name == name).cloned() else {
        let names: Vec<&str> = all.iter().map(|i| i.name.as_str()).collect();
        return Err(Error::new(
            "toolkit-not-installed",
            format!(
                "`{name}` is not installed in the store `{}`",
                store_dir.display()
            ),
        )
        .with_help(if names.is_empty() {
            "the store is empty".to_string()
        } else {
            format!("installed: {}", names.join(", "))
        }));
    };
    let _lock = lock(store_dir, progress)?;
    let staging = store::toolkits_dir(store_dir).join(".tmp");
    fs::create_dir_all(&staging).map_err(|e| store_error(store_dir, "create", &staging, &e))?;
    // Rename first: discovery never sees a half-deleted toolkit.
    let gone = staging.join(format!("{name}.removing"));
    let _ = fs::remove_dir_all(&gone);
    fs::rename(&target.dir, &gone)
        .map_err(|e| store_error(store_dir, "remove", &target.dir, &e))?;
    fs::remove_dir_all(&gone).map_err(|e| store_error(store_dir, "remove", &gone, &e))?;
    for p in &target.record.packages {
        let used = all
            .iter()
            .filter(|i| i.name != name)
            .any(|i| i.record.packages.iter().any(|q| q.file == p.file));
        if !used {
            let _ = fs::remove_file(store_dir.join("wheels").join(&p.file));
        }
    }
    Ok(target)
}
