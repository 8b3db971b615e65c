//! A package index on 127.0.0.1 (started and stopped by each test) serving
//! wheels the test builds, with switchable faults.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use cuda_install::source::{Index, Source};
use cuda_install::{Outcome, Request, Spec};
use cuda_toolchain::toolkit::store::Installed;
use cuda_toolchain::Error;
use sha2::{Digest, Sha256};

/// How the server answers one path.
#[derive(Clone)]
pub enum Reply {
    /// 200 with this content type and body.
    Ok(&'static str, Vec<u8>),
    /// Announces the full length, sends `after` bytes, then drops the connection.
    Drop(Vec<u8>, usize),
    /// Sends the body slowly (a pause after every 1 KB).
    Slow(Vec<u8>),
}

/// The running server.
pub struct Server {
    pub url: String,
    routes: Arc<Mutex<HashMap<String, Reply>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    addr: std::net::SocketAddr,
}

fn handle(mut s: TcpStream, routes: &Mutex<HashMap<String, Reply>>) {
    let mut req = Vec::new();
    let mut buf = [0u8; 1024];
    while !req.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => req.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&req);
    let path = text.split_whitespace().nth(1).unwrap_or("/").to_string();
    let reply = routes.lock().unwrap().get(&path).cloned();
    let head = |ctype: &str, len: usize| {
        format!("HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n")
    };
    let _ = match reply {
        None => {
            s.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        }
        Some(Reply::Ok(ctype, body)) => s
            .write_all(head(ctype, body.len()).as_bytes())
            .and_then(|_| s.write_all(&body)),
        Some(Reply::Drop(body, after)) => s
            .write_all(head("application/octet-stream", body.len()).as_bytes())
            .and_then(|_| s.write_all(&body[..after])),
        Some(Reply::Slow(body)) => {
            let _ = s.write_all(head("application/octet-stream", body.len()).as_bytes());
            for chunk in body.chunks(1024) {
                if s.write_all(chunk).is_err() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            Ok(())
        }
    };
    let _ = s.flush();
}

impl Server {
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let routes: Arc<Mutex<HashMap<String, Reply>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (r, st) = (routes.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if st.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(c) = conn {
                    let r = r.clone();
                    std::thread::spawn(move || handle(c, &r));
                }
            }
        });
        Server {
            url: format!("http://{addr}/simple"),
            routes,
            stop,
            thread: Some(thread),
            addr,
        }
    }

    pub fn set(&self, path: &str, reply: Reply) {
        self.routes.lock().unwrap().insert(path.to_string(), reply);
    }

    pub fn clear(&self) {
        self.routes.lock().unwrap().clear();
    }

    /// Serves `packages` as a PEP 691 index: `(package, version, wheel bytes)`.
    pub fn publish(&self, packages: &[(&str, &str, Vec<u8>)]) {
        let mut by_pkg: HashMap<&str, Vec<serde_json::Value>> = HashMap::new();
        for (pkg, version, bytes) in packages {
            let file = format!(
                "{}-{version}-py3-none-manylinux2014_{}.whl",
                pkg.replace('-', "_"),
                std::env::consts::ARCH
            );
            by_pkg.entry(pkg).or_default().push(serde_json::json!({
                "filename": file,
                "url": format!("/files/{file}"),
                "hashes": {"sha256": sha256(bytes)},
                "size": bytes.len(),
                "upload-time": "2025-09-04T10:00:00Z",
                "yanked": false,
            }));
            self.set(
                &format!("/files/{file}"),
                Reply::Ok("application/octet-stream", bytes.clone()),
            );
        }
        for (pkg, files) in by_pkg {
            let body =
                serde_json::json!({"meta": {"api-version": "1.1"}, "name": pkg, "files": files});
            self.set(
                &format!("/simple/{pkg}/"),
                Reply::Ok(
                    "application/vnd.pypi.simple.v1+json",
                    body.to_string().into_bytes(),
                ),
            );
        }
    }

    /// The download path of a published wheel.
    pub fn file_path(pkg: &str, version: &str) -> String {
        format!(
            "/files/{}-{version}-py3-none-manylinux2014_{}.whl",
            pkg.replace('-', "_"),
            std::env::consts::ARCH
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A wheel (zip) with these files: `(path, contents, unix mode)`.
pub fn wheel(files: &[(&str, Vec<u8>, u32)]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (path, body, mode) in files {
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .unix_permissions(*mode);
        zip.start_file(*path, opts).unwrap();
        zip.write_all(body).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

/// Bytes that do not compress (for the full-disk test).
pub fn noise(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// nvcc.profile as the 13.x wheels ship it (the parts discovery reads).
const PROFILE: &str = "TOP = $(_HERE_)/..\nCICC_PATH = $(TOP)/nvvm/bin\nPATH += $(CICC_PATH):$(_HERE_):\nINCLUDES += \"-I$(TOP)/$(_TARGET_DIR_)/include\" $(_SPACE_)\nSYSTEM_INCLUDES += \"-isystem\" \"$(TOP)/$(_TARGET_DIR_)/include/cccl\" $(_SPACE_)\nLIBRARIES =+ $(_SPACE_) \"-L$(TOP)/$(_TARGET_DIR_)/lib$(_TARGET_SIZE_)\"\n";

/// The five wheels of a fake CUDA `v` release (`13.0.88`): an nvcc script
/// that prints its version, and every file the installer checks for.
/// `nvvm_pad` adds that many incompressible bytes to the nvvm wheel.
pub fn release(v: &str, nvvm_pad: usize) -> Vec<(&'static str, String, Vec<u8>)> {
    let minor: Vec<&str> = v.split('.').collect();
    let nvcc = format!(
        "#!/bin/sh\necho 'nvcc: NVIDIA (R) Cuda compiler driver'\necho 'Cuda compilation tools, release {}.{}, V{v}'\n",
        minor[0], minor[1]
    );
    let runtime_v = format!("{}.{}.96", minor[0], minor[1]);
    let cccl_v = format!("{}.{}.85", minor[0], minor[1]);
    let di = |p: &str, ver: &str| format!("{}-{ver}.dist-info/RECORD", p.replace('-', "_"));
    vec![
        (
            "nvidia-cuda-nvcc",
            v.to_string(),
            wheel(&[
                ("nvidia/cu13/bin/nvcc", nvcc.into_bytes(), 0o755),
                ("nvidia/cu13/bin/ptxas", b"#!/bin/sh\n".to_vec(), 0o755),
                ("nvidia/cu13/bin/fatbinary", b"#!/bin/sh\n".to_vec(), 0o755),
                ("nvidia/cu13/bin/nvlink", b"#!/bin/sh\n".to_vec(), 0o755),
                (
                    "nvidia/cu13/bin/nvcc.profile",
                    PROFILE.as_bytes().to_vec(),
                    0o644,
                ),
                (&di("nvidia-cuda-nvcc", v), Vec::new(), 0o644),
            ]),
        ),
        (
            "nvidia-nvvm",
            v.to_string(),
            wheel(&[
                ("nvidia/cu13/nvvm/bin/cicc", noise(nvvm_pad), 0o755),
                (
                    "nvidia/cu13/nvvm/libdevice/libdevice.10.bc",
                    b"BC".to_vec(),
                    0o644,
                ),
            ]),
        ),
        (
            "nvidia-cuda-crt",
            v.to_string(),
            wheel(&[(
                "nvidia/cu13/include/crt/host_config.h",
                b"// crt".to_vec(),
                0o644,
            )]),
        ),
        (
            "nvidia-cuda-runtime",
            runtime_v,
            wheel(&[
                (
                    "nvidia/cu13/include/cuda_runtime.h",
                    b"// runtime".to_vec(),
                    0o644,
                ),
                ("nvidia/cu13/lib/libcudart.so.13", b"ELF".to_vec(), 0o755),
            ]),
        ),
        (
            "nvidia-cuda-cccl",
            cccl_v,
            wheel(&[
                (
                    "nvidia/cu13/include/cccl/cuda/std/version",
                    b"// cccl".to_vec(),
                    0o644,
                ),
                (
                    "nvidia/cu13/include/cccl/nv/target",
                    b"// cccl".to_vec(),
                    0o644,
                ),
            ]),
        ),
    ]
}

/// Publishes a fake release on the server.
pub fn publish_release(server: &Server, v: &str, nvvm_pad: usize) {
    publish_releases(server, &[v], nvvm_pad);
}

/// Publishes several fake releases at once (the index lists them all).
pub fn publish_releases(server: &Server, versions: &[&str], nvvm_pad: usize) {
    let rels: Vec<_> = versions.iter().flat_map(|v| release(v, nvvm_pad)).collect();
    let pkgs: Vec<(&str, &str, Vec<u8>)> = rels
        .iter()
        .map(|(p, ver, b)| (*p, ver.as_str(), b.clone()))
        .collect();
    server.publish(&pkgs);
}

/// Installs `version` from `url` into `store`.
pub fn install(store: &Path, url: &str, version: &str) -> Result<Outcome, Error> {
    let req = Request::Release {
        spec: Spec::parse(version)?,
        with: Vec::new(),
    };
    install_req(store, url, &req)
}

pub fn install_req(store: &Path, url: &str, req: &Request) -> Result<Outcome, Error> {
    let url = url.to_string();
    let make = move || -> Result<Box<dyn Source>, Error> {
        let http = cuda_install::http::Http::new(&cuda_toolchain::env::Env::empty())?;
        Ok(Box::new(Index::new(&url, "--index-url", http)))
    };
    cuda_install::install(store, &make, req, false, &|m| eprintln!("{m}"))
}

/// The store holds no toolkit and no leftovers (staging, partial downloads).
pub fn assert_clean(store: &Path) {
    let installed: Vec<Installed> = cuda_toolchain::toolkit::store::installed(store);
    assert!(installed.is_empty(), "{installed:?}");
    let tk = store.join("toolkits");
    let names: Vec<String> = std::fs::read_dir(&tk)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".tmp")
        .collect();
    assert!(names.is_empty(), "left in {}: {names:?}", tk.display());
    let staging: Vec<_> = std::fs::read_dir(tk.join(".tmp"))
        .into_iter()
        .flatten()
        .flatten()
        .collect();
    assert!(staging.is_empty(), "staging left: {staging:?}");
    let parts: Vec<String> = std::fs::read_dir(store.join("wheels"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".part"))
        .collect();
    assert!(parts.is_empty(), "partial downloads left: {parts:?}");
}
