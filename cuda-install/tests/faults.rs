//! `cargo cuda toolkit install`'s engine against a package index on
//! 127.0.0.1: a clean install, the no-network second install, and every
//! fault of issue #12 (each leaves nothing behind, and a later install works).

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use cuda_install::{Request, Spec};

#[test]
fn installs_one_root_then_second_install_needs_no_network() {
    let server = Server::start();
    // A newer minor on the index must not leak into a 13.0 install.
    publish_releases(&server, &["13.0.88", "13.1.80"], 0);
    let store = tempfile::tempdir().unwrap();
    let o = install(store.path(), &server.url, "13.0").unwrap();
    assert!(o.changed);
    assert_eq!(o.installed.name, "13.0.88");
    let root = o.installed.cuda_home.clone().unwrap();
    for f in [
        "bin/nvcc",
        "nvvm/bin/cicc",
        "include/cuda_runtime.h",
        "include/cccl/cuda/std/version",
        "lib64/libcudart.so.13",
        "lib/libcudart.so.13",
        "version.json",
    ] {
        assert!(root.join(f).exists(), "{f} missing");
    }
    assert!(!root.join("nvidia_cuda_nvcc-13.0.88.dist-info").exists());
    let vj = cuda_toolchain::toolkit::version::parse_version_json(
        &std::fs::read_to_string(root.join("version.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(vj.nvcc.unwrap().to_string(), "13.0.88");
    assert_eq!(vj.nvvm.unwrap().to_string(), "13.0.88");
    let pk = &o.installed.record.packages;
    let runtime = pk.iter().find(|p| p.name == "nvidia-cuda-runtime").unwrap();
    assert_eq!(runtime.version, "13.0.96");
    // Second install: the source is never even built.
    let req = Request::Release {
        spec: Spec::parse("13.0").unwrap(),
        with: vec![],
    };
    let no_net = || -> Result<Box<dyn cuda_install::source::Source>, cuda_toolchain::Error> {
        panic!("a second install must not touch the network")
    };
    let again = cuda_install::install(store.path(), &no_net, &req, false, &|_| {}).unwrap();
    assert!(!again.changed);
    // Offline with nothing cached: a clear error naming the fix.
    let empty = tempfile::tempdir().unwrap();
    let e = cuda_install::install(empty.path(), &no_net, &req, true, &|_| {}).unwrap_err();
    assert_eq!(e.code, "install-offline");
    assert!(e.message.contains("CUDA 13.0"), "{e}");
}

#[test]
fn discovery_finds_installed_toolkits_ranked_below_explicit_variables() {
    let server = Server::start();
    publish_releases(&server, &["13.0.88", "13.1.80"], 0);
    let store = tempfile::tempdir().unwrap();
    install(store.path(), &server.url, "13.0").unwrap();
    install(store.path(), &server.url, "13.1").unwrap();
    let sys = tempfile::tempdir().unwrap();
    let env = cuda_toolchain::env::Env::empty()
        .with_root(sys.path())
        .set(cuda_toolchain::env::Var::CargoCudaHome, store.path());
    let d = cuda_toolchain::toolkit::discover(&env, &Default::default()).unwrap();
    let vias: Vec<String> = d
        .candidates
        .iter()
        .map(|c| c.found_via.to_string())
        .collect();
    assert_eq!(d.candidates.len(), 2, "{vias:?}");
    assert!(
        vias[0].starts_with("cargo cuda toolkit install"),
        "{vias:?}"
    );
    assert_eq!(
        d.candidates[0].version.as_ref().unwrap().to_string(),
        "13.1.80"
    );
    // A project pin picks the matching one.
    let opts = cuda_toolchain::toolkit::DiscoverOptions {
        requirement: Some("~13.0".parse().unwrap()),
        ..Default::default()
    };
    let tk = cuda_toolchain::toolkit::discover(&env, &opts)
        .unwrap()
        .into_selected()
        .unwrap();
    assert_eq!(tk.version.unwrap().to_string(), "13.0.88");
    // A pin nothing matches names the install command.
    let opts = cuda_toolchain::toolkit::DiscoverOptions {
        requirement: Some("~12.8".parse().unwrap()),
        ..Default::default()
    };
    let e = cuda_toolchain::toolkit::discover(&env, &opts)
        .unwrap()
        .into_selected()
        .unwrap_err();
    assert!(
        e.help
            .iter()
            .any(|h| h.contains("cargo cuda toolkit install")),
        "{e}"
    );
    // An explicit CUDA_HOME still wins.
    let other = store.path().join("toolkits/13.0.88");
    let d = cuda_toolchain::toolkit::discover(
        &env.clone().set(cuda_toolchain::env::Var::CudaHome, &other),
        &Default::default(),
    )
    .unwrap();
    assert_eq!(
        d.candidates[d.selected.unwrap()].found_via.to_string(),
        "CUDA_HOME"
    );
    // Removing one leaves the other, and its cached wheels go with it.
    let wheels_before = std::fs::read_dir(store.path().join("wheels"))
        .unwrap()
        .count();
    cuda_install::remove(store.path(), "13.1.80", &|_| {}).unwrap();
    let d = cuda_toolchain::toolkit::discover(&env, &Default::default()).unwrap();
    assert_eq!(d.candidates.len(), 1);
    assert_eq!(
        std::fs::read_dir(store.path().join("wheels"))
            .unwrap()
            .count(),
        wheels_before - 5
    );
    let e = cuda_install::remove(store.path(), "13.1.80", &|_| {}).unwrap_err();
    assert_eq!(e.code, "toolkit-not-installed");
    assert!(e.help[0].contains("13.0.88"), "{e}");
}

#[test]
fn unknown_version_lists_what_exists() {
    let server = Server::start();
    publish_release(&server, "13.0.88", 0);
    let store = tempfile::tempdir().unwrap();
    let e = install(store.path(), &server.url, "14.2").unwrap_err();
    assert_eq!(e.code, "install-unknown-version", "{e}");
    assert!(e.message.contains("14.2"), "{e}");
    assert!(
        e.help[0].contains("13.0") && e.help[0].contains("cargo cuda toolkit install"),
        "{e}"
    );
    assert_clean(store.path());
    assert_eq!(
        Spec::parse("thirteen").unwrap_err().code,
        "install-bad-version"
    );
}

#[test]
fn partial_releases_are_refused_and_say_where_a_full_one_is() {
    let server = Server::start();
    publish_release(&server, "13.0.88", 0);
    // 12.x: ptxas and nvvm only, as on the real index.
    let cu12 = wheel(&[("nvidia/cuda_nvcc/bin/ptxas", b"x".to_vec(), 0o755)]);
    server.publish(&[("nvidia-cuda-nvcc-cu12", "12.9.86", cu12)]);
    let store = tempfile::tempdir().unwrap();
    let e = install(store.path(), &server.url, "12.9").unwrap_err();
    assert_eq!(e.code, "install-partial-release", "{e}");
    assert!(
        e.message.contains("nvidia-cuda-nvcc-cu12==12.9.86") && e.message.contains("no nvcc"),
        "{e}"
    );
    assert!(e.help.iter().any(|h| h.contains("redistrib")), "{e}");
    assert!(e.help.iter().any(|h| h.contains("--unchecked")), "{e}");
    // 13.1: nvcc is there, nvvm of the same version is not.
    let rel = release("13.1.80", 0);
    let some: Vec<(&str, &str, Vec<u8>)> = rel
        .iter()
        .filter(|(p, _, _)| *p != "nvidia-nvvm")
        .map(|(p, v, b)| (*p, v.as_str(), b.clone()))
        .collect();
    let mut all = some.clone();
    let r13 = release("13.0.88", 0);
    all.extend(r13.iter().map(|(p, v, b)| (*p, v.as_str(), b.clone())));
    server.publish(&all);
    let e = install(store.path(), &server.url, "13.1").unwrap_err();
    assert_eq!(e.code, "install-partial-release", "{e}");
    assert!(e.message.contains("nvidia-nvvm==13.1.80"), "{e}");
    assert_clean(store.path());
    // `latest` skips the partial 13.1 and takes the newest complete release.
    assert_eq!(
        install(store.path(), &server.url, "latest")
            .unwrap()
            .installed
            .name,
        "13.0.88"
    );
}

#[test]
fn dropped_connection_mid_download_leaves_nothing_and_a_retry_works() {
    let server = Server::start();
    publish_release(&server, "13.0.88", 200_000);
    let path = Server::file_path("nvidia-nvvm", "13.0.88");
    let body = release("13.0.88", 200_000).remove(1).2;
    server.set(&path, Reply::Drop(body.clone(), body.len() / 2));
    let store = tempfile::tempdir().unwrap();
    let e = install(store.path(), &server.url, "13.0").unwrap_err();
    assert_eq!(e.code, "install-network", "{e}");
    assert!(
        e.message.contains(&format!("of {} bytes", body.len())),
        "{e}"
    );
    assert!(e.message.contains("nvidia_nvvm"), "{e}");
    assert!(e.help[0].contains("rerun"), "{e}");
    assert_clean(store.path());
    server.set(&path, Reply::Ok("application/octet-stream", body));
    assert!(install(store.path(), &server.url, "13.0").unwrap().changed);
}

#[test]
fn sha256_mismatch_is_refused_and_the_file_deleted() {
    let server = Server::start();
    publish_release(&server, "13.0.88", 0);
    let path = Server::file_path("nvidia-cuda-crt", "13.0.88");
    let good = release("13.0.88", 0).remove(2).2;
    let mut bad = good.clone();
    let n = bad.len();
    bad[n / 2] ^= 0xff;
    server.set(&path, Reply::Ok("application/octet-stream", bad));
    let store = tempfile::tempdir().unwrap();
    let e = install(store.path(), &server.url, "13.0").unwrap_err();
    assert_eq!(e.code, "install-sha256-mismatch", "{e}");
    assert!(e.message.contains(&sha256(&good)), "{e}");
    assert_clean(store.path());
    assert!(!store
        .path()
        .join("wheels")
        .join(path.trim_start_matches("/files/"))
        .exists());
    server.set(&path, Reply::Ok("application/octet-stream", good));
    install(store.path(), &server.url, "13.0").unwrap();
}

#[test]
fn html_instead_of_json_is_named() {
    let server = Server::start();
    server.set(
        "/simple/nvidia-cuda-nvcc/",
        Reply::Ok("text/html", b"<html><head><title>Sign in to the guest network</title></head><body>Accept the terms</body></html>".to_vec()),
    );
    let store = tempfile::tempdir().unwrap();
    let e = install(store.path(), &server.url, "13.0").unwrap_err();
    assert_eq!(e.code, "install-bad-index", "{e}");
    assert!(e.message.contains("Sign in to the guest network"), "{e}");
    assert!(e.help[0].contains("--index-url"), "{e}");
    // Broken JSON says so too.
    server.set(
        "/simple/nvidia-cuda-nvcc/",
        Reply::Ok(
            "application/vnd.pypi.simple.v1+json",
            b"{\"files\": [".to_vec(),
        ),
    );
    assert_eq!(
        install(store.path(), &server.url, "13.0").unwrap_err().code,
        "install-bad-index"
    );
    assert_clean(store.path());
    // A real PEP 503 HTML index works.
    server.clear();
    let rel = release("13.0.88", 0);
    for (pkg, v, bytes) in &rel {
        let file = format!(
            "{}-{v}-py3-none-manylinux2014_{}.whl",
            pkg.replace('-', "_"),
            std::env::consts::ARCH
        );
        let html = format!(
            "<html><body><a href=\"/files/{file}#sha256={}\">{file}</a></body></html>",
            sha256(bytes)
        );
        server.set(
            &format!("/simple/{pkg}/"),
            Reply::Ok("text/html", html.into_bytes()),
        );
        server.set(
            &format!("/files/{file}"),
            Reply::Ok("application/octet-stream", bytes.clone()),
        );
    }
    install(store.path(), &server.url, "13.0").unwrap();
}

#[test]
fn two_installs_at_once_both_succeed_with_one_tree() {
    let server = Server::start();
    publish_release(&server, "13.0.88", 300_000);
    let path = Server::file_path("nvidia-nvvm", "13.0.88");
    server.set(&path, Reply::Slow(release("13.0.88", 300_000).remove(1).2));
    let store = tempfile::tempdir().unwrap();
    let results: Vec<_> = std::thread::scope(|s| {
        let a = s.spawn(|| install(store.path(), &server.url, "13.0"));
        let b = s.spawn(|| install(store.path(), &server.url, "13.0"));
        vec![a.join().unwrap(), b.join().unwrap()]
    });
    let changed: Vec<bool> = results
        .iter()
        .map(|r| r.as_ref().unwrap().changed)
        .collect();
    assert_eq!(changed.iter().filter(|c| **c).count(), 1, "{changed:?}");
    let all = cuda_toolchain::toolkit::store::installed(store.path());
    assert_eq!(all.len(), 1);
    let cicc = all[0].dir.join("nvvm/bin/cicc");
    assert_eq!(std::fs::metadata(cicc).unwrap().len(), 300_000);
}

/// Mounts a tmpfs (root only); `None` where mounting is not allowed.
fn tmpfs(dir: &Path, opts: &str) -> Option<()> {
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", opts, "tmpfs"])
        .arg(dir)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(())
}

fn umount(dir: &Path) {
    let _ = Command::new("umount").arg(dir).status();
}

#[test]
fn full_disk_is_named_and_cleaned_up() {
    let server = Server::start();
    publish_release(&server, "13.0.88", 600_000);
    let dir = tempfile::tempdir().unwrap();
    if tmpfs(dir.path(), "size=400k").is_none() {
        eprintln!("skipped: cannot mount a tmpfs here (needs root); the full-disk case runs under scripts/test.sh as root");
        return;
    }
    let store = dir.path().join("store");
    let e = install(&store, &server.url, "13.0");
    let leftovers = std::fs::read_dir(store.join("toolkits"))
        .map(|d| d.count())
        .unwrap_or(0);
    umount(dir.path());
    let e = e.unwrap_err();
    assert_eq!(e.code, "install-disk-full", "{e}");
    assert!(e.help[0].contains("CARGO_CUDA_HOME"), "{e}");
    assert!(leftovers <= 1, "only the empty .tmp may stay");
    // A later install on a disk with room works.
    install(&store, &server.url, "13.0").unwrap();
}

#[test]
fn read_only_store_is_named() {
    let server = Server::start();
    publish_release(&server, "13.0.88", 0);
    let dir = tempfile::tempdir().unwrap();
    if tmpfs(dir.path(), "ro,size=1m").is_none() {
        eprintln!("skipped: cannot mount a read-only tmpfs here (needs root)");
        return;
    }
    let e = install(&dir.path().join("store"), &server.url, "13.0");
    umount(dir.path());
    let e = e.unwrap_err();
    assert_eq!(e.code, "install-store-readonly", "{e}");
    assert!(e.message.contains("store"), "{e}");
    assert!(e.help[0].contains("CARGO_CUDA_HOME"), "{e}");
}

/// Run by `killed_install_is_never_used` in a child process.
#[test]
fn child_install_for_kill_test() {
    let (Ok(store), Ok(url)) = (
        std::env::var("KILL_TEST_STORE"),
        std::env::var("KILL_TEST_URL"),
    ) else {
        return; // only meaningful as the child
    };
    let _ = install(Path::new(&store), &url, "13.0");
}

#[test]
fn killed_install_is_never_used_and_the_next_one_cleans_up() {
    let server = Server::start();
    // Many files: the unpack takes long enough to be killed inside it.
    let mut files: Vec<(String, Vec<u8>, u32)> = (0..3000)
        .map(|i| {
            (
                format!("nvidia/cu13/include/many/h{i}.h"),
                vec![b'x'; 64],
                0o644,
            )
        })
        .collect();
    files.push((
        "nvidia/cu13/include/crt/host_config.h".into(),
        b"// crt".to_vec(),
        0o644,
    ));
    let refs: Vec<(&str, Vec<u8>, u32)> = files
        .iter()
        .map(|(p, b, m)| (p.as_str(), b.clone(), *m))
        .collect();
    let mut rel = release("13.0.88", 0);
    rel[2].2 = wheel(&refs);
    let pkgs: Vec<(&str, &str, Vec<u8>)> = rel
        .iter()
        .map(|(p, v, b)| (*p, v.as_str(), b.clone()))
        .collect();
    server.publish(&pkgs);
    let store = tempfile::tempdir().unwrap();
    let staging = store.path().join("toolkits/.tmp");
    // Killed once a wheel is being unpacked into the staging directory.
    kill_install_when(store.path(), &server.url, || {
        std::fs::read_dir(&staging)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| e.path().join("include").is_dir())
    });
    // Nothing is installed, though a staging directory is left.
    assert!(cuda_toolchain::toolkit::store::installed(store.path()).is_empty());
    assert!(!store.path().join("toolkits/13.0.88").exists());
    let o = install(store.path(), &server.url, "13.0").unwrap();
    assert!(o.changed);
    assert!(o.installed.dir.join("include/many/h2999.h").is_file());
    // The next install removed the dead one's staging directory.
    let left: Vec<_> = std::fs::read_dir(&staging).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A download killed half-way (SIGKILL: no handler, no cleanup) leaves its
/// `wheels/.part-<pid>-*` file; the next install removes it.
#[test]
fn a_killed_download_leaves_a_part_file_the_next_install_removes() {
    let server = Server::start();
    publish_release(&server, "13.0.88", 400_000);
    // Every wheel slow (2 ms per KB): the first download is killed inside it.
    let wheels_served: Vec<(String, Vec<u8>)> = release("13.0.88", 400_000)
        .into_iter()
        .map(|(p, v, body)| (Server::file_path(p, &v), body))
        .collect();
    for (path, body) in &wheels_served {
        server.set(path, Reply::Slow(body.clone()));
    }
    let store = tempfile::tempdir().unwrap();
    let wheels = store.path().join("wheels");
    let parts = || -> Vec<String> {
        std::fs::read_dir(&wheels)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".part-"))
            .collect()
    };
    // Killed once a download has written its first bytes.
    let pid = kill_install_when(store.path(), &server.url, || {
        std::fs::read_dir(&wheels)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| {
                e.file_name().to_string_lossy().starts_with(".part-")
                    && e.metadata().is_ok_and(|m| m.len() > 0)
            })
    });
    let left = parts();
    assert_eq!(left.len(), 1, "the killed download's file: {left:?}");
    assert!(
        left[0].starts_with(&format!(".part-{pid}-")),
        "named by its owner: {left:?}"
    );
    for (path, body) in wheels_served {
        server.set(&path, Reply::Ok("application/octet-stream", body));
    }
    assert!(install(store.path(), &server.url, "13.0").unwrap().changed);
    assert_eq!(parts(), Vec::<String>::new(), "the next install removed it");
}

#[test]
fn unchecked_sets_keep_pips_layout() {
    let server = Server::start();
    publish_release(&server, "13.0.88", 0);
    let store = tempfile::tempdir().unwrap();
    let req = Request::Unchecked {
        name: "mixed".into(),
        pins: vec![
            ("nvidia-cuda-nvcc".into(), "13.0.88".into()),
            ("nvidia-nvvm".into(), "13.0.88".into()),
        ],
    };
    let o = install_req(store.path(), &server.url, &req).unwrap();
    assert!(o
        .installed
        .dir
        .join("nvidia_cuda_nvcc-13.0.88.dist-info/RECORD")
        .is_file());
    assert_eq!(
        o.installed.cuda_home.unwrap(),
        o.installed.dir.join("nvidia/cu13")
    );
    assert!(!o.installed.record.checked);
    assert!(
        !install_req(store.path(), &server.url, &req)
            .unwrap()
            .changed
    );
    // Unchecked sets are not discovery candidates.
    let sys = tempfile::tempdir().unwrap();
    let env = cuda_toolchain::env::Env::empty()
        .with_root(sys.path())
        .set(cuda_toolchain::env::Var::CargoCudaHome, store.path());
    assert!(cuda_toolchain::toolkit::discover(&env, &Default::default())
        .unwrap()
        .candidates
        .is_empty());
    let bad = Request::Unchecked {
        name: "x".into(),
        pins: vec![("nvidia-nvvm".into(), "9.9".into())],
    };
    let e = install_req(store.path(), &server.url, &bad).unwrap_err();
    assert_eq!(e.code, "install-unknown-version");
    assert!(e.help[0].contains("13.0.88"), "{e}");
}

/// Runs `child_install_for_kill_test` against `store` and `url` in a child
/// process and SIGKILLs it (no handler, no cleanup: the worst Ctrl-C can
/// do) as soon as `now()` holds; fails if it finished first. Returns its pid.
fn kill_install_when(store: &std::path::Path, url: &str, now: impl Fn() -> bool) -> u32 {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_install_for_kill_test", "--nocapture"])
        .env("KILL_TEST_STORE", store)
        .env("KILL_TEST_URL", url)
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut killed = false;
    while std::time::Instant::now() < deadline {
        if now() {
            unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
            killed = true;
            break;
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let status = child.wait().unwrap();
    assert!(
        killed,
        "the child finished before it could be killed ({status})"
    );
    child.id()
}
