//! Windows toolkit layouts, as data: where the NVIDIA installer, CUDA_PATH_VX_Y,
//! pip wheels and conda put nvcc.exe. Discovery ([`super::discover`]) asks
//! these functions next to its Linux rules; nothing here needs Windows, so
//! the rules are tested on Linux over a fake tree with Windows-shaped names.
//!
//! | rule | layout | found as |
//! |---|---|---|
//! | any root | `bin\nvcc.exe` (and `.exe` tools) next to the Linux names | — |
//! | installer | `%ProgramFiles%\NVIDIA GPU Computing Toolkit\CUDA\vX.Y`, newest first | versioned install |
//! | installer variables | `CUDA_PATH_V12_4=…` (one per installed release), newest first, after `CUDA_PATH` | the variable |
//! | pip wheels | `Lib\site-packages\nvidia\cu13\bin\nvcc.exe` (VIRTUAL_ENV, CONDA_PREFIX) | Python wheels |
//! | conda | `%CONDA_PREFIX%\Library\bin\nvcc.exe`, headers in `Library\include`, libraries in `Library\lib\x64` | conda |
//!
//! The host compiler (cl.exe, which nvcc needs on Windows) is found by the
//! `cc` crate's Visual Studio lookup; see the compile module's host toolchain.
//! What has and has not run on Windows is stated in the README.

use crate::env::Env;
use std::path::{Path, PathBuf};

/// An executable's file names, Linux first: `nvcc`, then `nvcc.exe`.
pub(crate) fn exe_names(name: &str) -> [String; 2] {
    [name.to_string(), format!("{name}.exe")]
}

/// The executable `name` (or `name.exe`) in `dir`, if it is a file.
pub(crate) fn exe_in(dir: &Path, name: &str) -> Option<PathBuf> {
    exe_names(name)
        .into_iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
}

/// `bin/nvcc` or `bin\nvcc.exe` under a toolkit root; the Linux name when neither exists.
pub(crate) fn nvcc_under(root: &Path) -> PathBuf {
    let bin = root.join("bin");
    exe_in(&bin, "nvcc").unwrap_or_else(|| bin.join("nvcc"))
}

/// The installer's parent folder under Program Files.
pub const PROGRAM_FILES_CUDA: [&str; 2] = ["NVIDIA GPU Computing Toolkit", "CUDA"];

/// `vX.Y` → (X, Y).
fn release_dir(name: &str) -> Option<(u32, u32)> {
    let (major, minor) = name.strip_prefix('v')?.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// Toolkit roots the NVIDIA installer made: `ProgramFiles` (else
/// `/Program Files` under the Env's root, i.e. `C:\Program Files`), newest first.
pub(crate) fn program_files_roots(env: &Env) -> Vec<PathBuf> {
    let base = env
        .get_nonempty(crate::env::Var::ProgramFiles)
        .map(PathBuf::from)
        .unwrap_or_else(|| env.sys_path("/Program Files"));
    let dir = PROGRAM_FILES_CUDA.iter().fold(base, |p, c| p.join(c));
    let mut found: Vec<((u32, u32), PathBuf)> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((release_dir(&e.file_name().to_string_lossy())?, e.path())))
        .collect();
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    found.into_iter().map(|(_, p)| p).collect()
}

/// `CUDA_PATH_V12_4` → (12, 4).
fn versioned_var(name: &str) -> Option<(u32, u32)> {
    let (major, minor) = name.strip_prefix("CUDA_PATH_V")?.split_once('_')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The installer's per-release variables that are set, newest first:
/// (`CUDA_PATH_V12_4`, its root).
pub(crate) fn cuda_path_versioned(env: &Env) -> Vec<(String, PathBuf)> {
    let mut found: Vec<((u32, u32), String, PathBuf)> = env
        .iter_named()
        .filter_map(|(name, value)| {
            let v = versioned_var(name)?;
            (!value.is_empty()).then(|| (v, name.to_string(), PathBuf::from(value)))
        })
        .collect();
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    found.into_iter().map(|(_, n, p)| (n, p)).collect()
}

/// A conda environment's Windows layout: (nvcc.exe, include dirs, lib dirs).
pub(crate) fn conda_library(prefix: &Path) -> Option<(PathBuf, Vec<PathBuf>, Vec<PathBuf>)> {
    let library = prefix.join("Library");
    let nvcc = exe_in(&library.join("bin"), "nvcc")?;
    Some((
        nvcc,
        vec![library.join("include")],
        vec![library.join("lib").join("x64"), library.join("lib")],
    ))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::env::Var;
    use crate::toolkit::{discover_all, FoundVia};

    /// `nvcc.exe --version` on Windows 10, CUDA 12.2 from conda, as quoted in
    /// <https://github.com/dougUCN/pulseTrain> (README, "CUDA install").
    const NVCC_EXE_12_2: &str = "nvcc: NVIDIA (R) Cuda compiler driver\n\
        Copyright (c) 2005-2023 NVIDIA Corporation\n\
        Built on Tue_Jun_13_19:42:34_Pacific_Daylight_Time_2023\n\
        Cuda compilation tools, release 12.2, V12.2.91\n\
        Build cuda_12.2.r12.2/compiler.32965470_0\n";

    /// cl.exe's banner, as quoted in
    /// <https://github.com/gluonhq/gluonfx-maven-plugin/issues/195>.
    const CL_EXE_19_26: &str =
        "Microsoft (R) C/C++ Optimizing Compiler Version 19.26.28806 for x64\n\
        Copyright (C) Microsoft Corporation.  All rights reserved.\n";

    #[test]
    fn real_windows_banners_parse() {
        let v = crate::toolkit::version::parse_tool_version(NVCC_EXE_12_2).unwrap();
        assert_eq!(v, semver::Version::new(12, 2, 91));
        let (kind, v) = crate::compat::parse_compiler_version(CL_EXE_19_26).unwrap();
        assert_eq!(kind, crate::compat::HostCompilerKind::Msvc);
        assert_eq!(v, semver::Version::new(19, 26, 28806));
    }

    /// A fake Windows toolkit at `root`: nvcc.exe (a script printing the real
    /// banner above), the `.exe` tools, and the runtime header.
    fn fake_toolkit(root: &Path, bin: &Path, include: &Path) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(bin).unwrap();
        std::fs::create_dir_all(include).unwrap();
        let script = format!("#!/bin/sh\ncat <<'EOF'\n{NVCC_EXE_12_2}EOF\n");
        for tool in ["nvcc.exe", "ptxas.exe", "fatbinary.exe", "nvlink.exe"] {
            std::fs::write(bin.join(tool), &script).unwrap();
            std::fs::set_permissions(bin.join(tool), std::fs::Permissions::from_mode(0o755))
                .unwrap();
        }
        let nvvm = root.join("nvvm").join("bin");
        std::fs::create_dir_all(&nvvm).unwrap();
        std::fs::copy(bin.join("ptxas.exe"), nvvm.join("cicc.exe")).unwrap();
        std::fs::write(include.join("cuda_runtime.h"), "").unwrap();
    }

    fn env_at(root: &Path) -> Env {
        // No PATH and no python: only the rules under test can find anything.
        Env::empty()
            .with_root(root)
            .set(Var::CudaBuildPython, "/nonexistent/python")
    }

    #[test]
    fn program_files_layout_newest_first() {
        let c = tempfile::tempdir().unwrap();
        let cuda = c
            .path()
            .join("Program Files/NVIDIA GPU Computing Toolkit/CUDA");
        for v in ["v11.8", "v12.4", "v12.10"] {
            let root = cuda.join(v);
            fake_toolkit(&root, &root.join("bin"), &root.join("include"));
        }
        std::fs::create_dir_all(cuda.join("not-a-release")).unwrap();
        let roots = program_files_roots(&env_at(c.path()));
        let names: Vec<_> = roots.iter().map(|r| r.file_name().unwrap()).collect();
        assert_eq!(names, ["v12.10", "v12.4", "v11.8"]);

        let found = discover_all(&env_at(c.path()), &Default::default()).unwrap();
        let nvccs: Vec<_> = found.candidates.iter().map(|t| t.nvcc.clone()).collect();
        assert_eq!(nvccs[0], cuda.join("v12.10/bin/nvcc.exe"), "{nvccs:?}");
        assert_eq!(found.candidates[0].found_via, FoundVia::Versioned);
        assert_eq!(
            found.candidates[0].version,
            Some(semver::Version::new(12, 2, 91))
        );
        assert_eq!(found.candidates.len(), 3);
    }

    #[test]
    fn cuda_path_vx_y_variables_and_nvcc_exe_under_cuda_path() {
        let c = tempfile::tempdir().unwrap();
        let old = c.path().join("cuda-11.8");
        let new = c.path().join("cuda-12.4");
        for r in [&old, &new] {
            fake_toolkit(r, &r.join("bin"), &r.join("include"));
        }
        let env = env_at(c.path())
            .set_named("CUDA_PATH_V11_8", &old)
            .set_named("CUDA_PATH_V12_4", &new);
        assert_eq!(
            cuda_path_versioned(&env),
            [
                ("CUDA_PATH_V12_4".to_string(), new.clone()),
                ("CUDA_PATH_V11_8".to_string(), old.clone())
            ]
        );
        let found = discover_all(&env, &Default::default()).unwrap();
        let vias: Vec<_> = found
            .candidates
            .iter()
            .map(|t| t.found_via.clone())
            .collect();
        assert_eq!(
            vias,
            [
                FoundVia::EnvVar("CUDA_PATH_V12_4".into()),
                FoundVia::EnvVar("CUDA_PATH_V11_8".into())
            ]
        );
        // CUDA_PATH itself (set by the installer to the newest) finds bin\nvcc.exe.
        let found = discover_all(&env.set(Var::CudaPath, &old), &Default::default()).unwrap();
        assert_eq!(found.candidates[0].nvcc, old.join("bin/nvcc.exe"));
        assert_eq!(
            found.candidates[0].found_via,
            FoundVia::EnvVar("CUDA_PATH".into())
        );
    }

    #[test]
    fn wheels_in_lib_site_packages_and_conda_library_bin() {
        let c = tempfile::tempdir().unwrap();
        let venv = c.path().join("venv");
        let cu13 = venv.join("Lib/site-packages/nvidia/cu13");
        fake_toolkit(&cu13, &cu13.join("bin"), &cu13.join("include"));
        let conda = c.path().join("conda");
        let library = conda.join("Library");
        fake_toolkit(&library, &library.join("bin"), &library.join("include"));

        let env = env_at(c.path()).set(Var::VirtualEnv, &venv);
        let found = discover_all(&env, &Default::default()).unwrap();
        assert_eq!(found.candidates.len(), 1, "{:?}", found.candidates);
        assert_eq!(found.candidates[0].nvcc, cu13.join("bin/nvcc.exe"));
        assert!(matches!(
            found.candidates[0].found_via,
            FoundVia::PythonWheel(_)
        ));

        let env = env_at(c.path()).set(Var::CondaPrefix, &conda);
        let found = discover_all(&env, &Default::default()).unwrap();
        let tk = found
            .candidates
            .iter()
            .find(|t| t.found_via == FoundVia::Conda(conda.clone()))
            .expect("conda's Library\\bin\\nvcc.exe");
        assert_eq!(tk.nvcc, library.join("bin/nvcc.exe"));
        assert!(
            tk.include_dirs.contains(&library.join("include")),
            "{:?}",
            tk.include_dirs
        );
    }
}
