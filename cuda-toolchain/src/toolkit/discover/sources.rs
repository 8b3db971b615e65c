//! Where candidates come from: the toolkit store, PATH, the fixed install
//! directories, Python wheels and conda (rules 4–10 of the precedence).

use std::path::{Path, PathBuf};

use super::{Candidate, Extras, Search};
use crate::env::{Env, Var};
use crate::toolkit::{store, version};
use crate::toolkit::{windows, FoundVia, Problem, Severity, Toolkit};

impl Search<'_> {
    /// Toolkits from `cargo cuda toolkit install` (checked ones only: an
    /// `--unchecked` set is a deliberate test fixture, not a toolchain).
    pub(super) fn search_store(&mut self) {
        let Some(store) = store::root(self.env) else {
            return;
        };
        self.looked
            .push(store::toolkits_dir(&store).display().to_string());
        for inst in store::installed(&store) {
            let Some(home) = inst.cuda_home.filter(|_| inst.record.checked) else {
                continue;
            };
            let c = self.candidate(
                &home.join("bin").join("nvcc"),
                FoundVia::Installed(store.clone()),
                Extras::default(),
                false,
            );
            self.push(c);
        }
    }

    pub(super) fn search_path(&mut self) {
        self.looked.push("nvcc on PATH".into());
        let Some(path) = self.env.get_os(Var::Path).map(|p| p.to_os_string()) else {
            return;
        };
        for dir in std::env::split_paths(&path) {
            if !dir.is_absolute() {
                continue;
            }
            let Some(nvcc) = windows::exe_in(&dir, "nvcc") else {
                continue;
            };
            let real = std::fs::canonicalize(&nvcc).unwrap_or_else(|_| nvcc.clone());
            // ccache/sccache symlinks named nvcc run the *next* nvcc on PATH.
            let real_name = real
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if !real_name.starts_with("nvcc") {
                continue;
            }
            let mut c =
                self.candidate(&nvcc, FoundVia::Path(dir.clone()), Extras::default(), false);
            if self.path_first.is_none() {
                self.path_first = Some((nvcc.clone(), c.key.clone()));
            }
            let link_dir_has_profile = dir.join("nvcc.profile").is_file();
            if real != nvcc && !link_dir_has_profile && c.tk.nvcc == real {
                c.tk.problems.push(Problem {
                    code: "nvcc-symlink",
                    severity: Severity::Warning,
                    message: format!(
                        "`{}` is a symlink to `{}`; nvcc reads nvcc.profile from the directory it is started from, so run by this name it finds no headers (cuda-build runs the real file)",
                        nvcc.display(),
                        real.display()
                    ),
                    fix: Some(format!(
                        "put `{}` on PATH instead of the symlink",
                        real.parent().unwrap_or(Path::new("")).display()
                    )),
                });
            }
            self.push(c);
        }
    }

    pub(super) fn search_fixed(&mut self) {
        let env = self.env;
        // /usr/local/cuda: usually a symlink (update-alternatives) to one versioned install.
        let usr_local = env.sys_path("/usr/local/cuda");
        self.looked.push(usr_local.display().to_string());
        if let Ok(meta) = std::fs::symlink_metadata(&usr_local) {
            if meta.file_type().is_symlink() && !usr_local.exists() {
                let target = std::fs::read_link(&usr_local).unwrap_or_default();
                let nvcc = usr_local.join("bin").join("nvcc");
                self.push(Candidate {
                    key: nvcc.clone(),
                    explicit: false,
                    tk: Toolkit {
                        root: usr_local.clone(),
                        nvcc,
                        version: None,
                        found_via: FoundVia::UsrLocalCuda(target.clone()),
                        include_dirs: Vec::new(),
                        lib_dirs: Vec::new(),
                        problems: vec![Problem {
                            code: "toolkit-broken-link",
                            severity: Severity::Error,
                            message: format!(
                                "`{}` is a symlink to `{}`, which does not exist (a toolkit was removed without its link)",
                                usr_local.display(),
                                target.display()
                            ),
                            fix: Some(format!(
                                "point it at an installed toolkit (`sudo ln -sfn /usr/local/cuda-X.Y {}`), or remove it",
                                usr_local.display()
                            )),
                        }],
                    },
                });
            } else {
                let nvcc = usr_local.join("bin").join("nvcc");
                if nvcc.is_file() {
                    let target = std::fs::canonicalize(&usr_local).unwrap_or(usr_local.clone());
                    let c = self.candidate(
                        &nvcc,
                        FoundVia::UsrLocalCuda(target),
                        Extras::default(),
                        false,
                    );
                    self.push(c);
                }
            }
        }
        // Versioned installs, newest first.
        let local = env.sys_path("/usr/local");
        self.looked
            .push(local.join("cuda-X.Y").display().to_string());
        let mut versioned: Vec<(semver::Version, PathBuf)> = std::fs::read_dir(&local)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let v = version::parse_loose(name.strip_prefix("cuda-")?)?;
                Some((v, e.path()))
            })
            .collect();
        versioned.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for (_, root) in versioned {
            let nvcc = root.join("bin").join("nvcc");
            if nvcc.is_file() {
                let c = self.candidate(&nvcc, FoundVia::Versioned, Extras::default(), false);
                self.push(c);
            }
        }
        let opt = env.sys_path("/opt/cuda");
        self.looked.push(opt.display().to_string());
        let nvcc = opt.join("bin").join("nvcc");
        if nvcc.is_file() {
            let c = self.candidate(&nvcc, FoundVia::OptCuda, Extras::default(), false);
            self.push(c);
        }
        // Debian/Ubuntu: nvcc and cicc under /usr/lib/nvidia-cuda-toolkit, the rest in /usr.
        let distro = env.sys_path("/usr/lib/nvidia-cuda-toolkit");
        self.looked.push(distro.display().to_string());
        let nvcc = distro.join("bin").join("nvcc");
        if nvcc.is_file() {
            let extras = Extras {
                include_dirs: vec![env.sys_path("/usr/include")],
                lib_dirs: vec![env.sys_path("/usr/lib/x86_64-linux-gnu")],
                tool_dirs: vec![distro.join("bin"), env.sys_path("/usr/bin")],
            };
            let c = self.candidate(&nvcc, FoundVia::Distro, extras, false);
            self.push(c);
        }
    }

    /// Wheels in one site-packages directory.
    pub(super) fn search_site(&mut self, site: &Path) {
        let nvidia = site.join("nvidia");
        for dir in wheel_dirs(&nvidia) {
            let nvcc = windows::nvcc_under(&dir);
            let c = self.candidate(
                &nvcc,
                FoundVia::PythonWheel(site.to_path_buf()),
                Extras::default(),
                false,
            );
            self.push(c);
        }
        // The split layout (CUDA 11/12 wheels): one directory per component.
        let split = nvidia.join("cuda_nvcc");
        let nvcc = split.join("bin").join("nvcc");
        if nvcc.is_file() {
            let extras = Extras {
                include_dirs: ["cuda_nvcc", "cuda_runtime", "cuda_cccl", "cuda_crt"]
                    .iter()
                    .map(|c| nvidia.join(c).join("include"))
                    .collect(),
                lib_dirs: vec![nvidia.join("cuda_runtime").join("lib")],
                tool_dirs: vec![split.join("bin"), split.join("nvvm").join("bin")],
            };
            let c = self.candidate(
                &nvcc,
                FoundVia::PythonWheel(site.to_path_buf()),
                extras,
                false,
            );
            self.push(c);
        }
    }

    pub(super) fn search_conda(&mut self, prefix: &Path) {
        let targets = prefix.join("targets").join("x86_64-linux");
        let extras = Extras {
            include_dirs: vec![targets.join("include"), prefix.join("include")],
            lib_dirs: vec![targets.join("lib"), prefix.join("lib")],
            tool_dirs: vec![prefix.join("nvvm").join("bin")],
        };
        let found = [
            prefix.join("bin").join("nvcc"),
            targets.join("bin").join("nvcc"),
        ]
        .into_iter()
        .find(|p| p.is_file());
        if let Some(nvcc) = found {
            let c = self.candidate(&nvcc, FoundVia::Conda(prefix.to_path_buf()), extras, false);
            self.push(c);
        } else if let Some((nvcc, include_dirs, lib_dirs)) = windows::conda_library(prefix) {
            let extras = Extras {
                include_dirs,
                lib_dirs,
                tool_dirs: vec![prefix.join("Library").join("nvvm").join("bin")],
            };
            let c = self.candidate(&nvcc, FoundVia::Conda(prefix.to_path_buf()), extras, false);
            self.push(c);
        }
    }
}

/// Wheel toolkit dirs with a bin/nvcc: `nvidia/cu13`, `nvidia/cu12`…, newest first.
pub(super) fn wheel_dirs(nvidia: &Path) -> Vec<PathBuf> {
    let mut out: Vec<(u32, PathBuf)> = std::fs::read_dir(nvidia)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let n: u32 = name.strip_prefix("cu")?.parse().ok()?;
            windows::exe_in(&e.path().join("bin"), "nvcc").map(|_| (n, e.path()))
        })
        .collect();
    out.sort_by_key(|(n, _)| std::cmp::Reverse(*n));
    out.into_iter().map(|(_, p)| p).collect()
}

/// `lib/python3.*/site-packages` (and lib64, Windows' Lib) under a prefix.
pub(super) fn site_packages_of(prefix: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for lib in ["lib", "lib64"] {
        let mut found: Vec<PathBuf> = std::fs::read_dir(prefix.join(lib))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("python"))
            .map(|e| e.path().join("site-packages"))
            .filter(|p| p.is_dir())
            .collect();
        found.sort();
        for p in found {
            let canon = std::fs::canonicalize(&p).unwrap_or(p.clone());
            if !out
                .iter()
                .any(|o| std::fs::canonicalize(o).ok().as_ref() == Some(&canon))
            {
                out.push(p);
            }
        }
    }
    let win = prefix.join("Lib").join("site-packages");
    if win.is_dir() {
        out.push(win);
    }
    out
}

/// Asks the active python for its site-packages (a few ms of startup; only when needed).
pub(super) fn python_sites(env: &Env) -> Vec<PathBuf> {
    let python = match env.get_nonempty(Var::CudaBuildPython) {
        Some(p) => PathBuf::from(p),
        None => match env.which("python3") {
            Some(p) => p,
            None => return Vec::new(),
        },
    };
    let code =
        "import site,sys\nfor p in site.getsitepackages()+[site.getusersitepackages()]: print(p)";
    let timeout = crate::process::timeout_from_env(env, std::time::Duration::from_secs(5));
    match crate::process::run(&python, ["-c", code], timeout) {
        Ok(out) if out.status.success() => out
            .stdout
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_dir())
            .collect(),
        _ => Vec::new(),
    }
}
