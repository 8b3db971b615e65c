//! Integration tests: toolkit discovery, integrity and choice.
//!
//! Fake toolkits are trees in temporary directories whose tools are scripts
//! printing the real `--version` texts (tests/fixtures/toolkit). Each fake is
//! paired with the real CUDA 13.0 wheels and the mixed-release install where
//! the real thing exists.

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cuda_toolchain::env::{Env, Var};
use cuda_toolchain::toolkit::{self, DiscoverOptions, Discovery, FoundVia, Severity, Toolkit};
use workspace_tests::write_script;

fn fixture(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/toolkit")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The `--version` text of nvcc `version` (real for 13.0.88).
fn nvcc_text(version: &str) -> String {
    fixture(&format!("nvcc-version-{version}.txt"))
}

fn v(s: &str) -> semver::Version {
    semver::Version::parse(s).unwrap()
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A script tool that prints `text` for `--version` and appends to `count` (if given).
fn tool(path: &Path, text: &str, count: Option<&Path>) {
    let counter = count.map_or(String::new(), |c| {
        format!("echo run >> '{}'\n", c.display())
    });
    write_script(path, &format!("{counter}cat <<'EOF'\n{text}EOF"));
}

/// How a fake toolkit is laid out.
#[derive(Clone, Copy, PartialEq)]
enum Layout {
    /// NVIDIA's installer: bin/, nvvm/bin, targets/x86_64-linux/{include,lib}.
    Installer,
    /// The nvidia-cuda-nvcc 13.x wheel: bin/, nvvm/bin, include/, include/cccl, lib/.
    Wheel,
}

/// Builds a complete fake toolkit of nvcc `version` under `root`; returns root.
fn fake_toolkit(root: &Path, version: &str, layout: Layout) -> PathBuf {
    let text = nvcc_text(version);
    let bin = root.join("bin");
    tool(&bin.join("nvcc"), &text, None);
    let ptxas = text.replace(
        "nvcc: NVIDIA (R) Cuda compiler driver",
        "ptxas: NVIDIA (R) Ptx optimizing assembler",
    );
    tool(&bin.join("ptxas"), &ptxas, None);
    tool(
        &bin.join("fatbinary"),
        &text.replace("nvcc:", "fatbinary:"),
        None,
    );
    tool(&bin.join("nvlink"), &text.replace("nvcc:", "nvlink:"), None);
    // cicc has no --version; its release string sits inside the binary.
    let release_line = text
        .lines()
        .find(|l| l.starts_with("Cuda compilation tools"))
        .unwrap();
    write_script(
        &root.join("nvvm/bin/cicc"),
        &format!("# {release_line}\nexit 1"),
    );
    let (profile, include, lib) = match layout {
        Layout::Installer => (
            fixture("nvcc.profile-12-installer"),
            root.join("targets/x86_64-linux/include"),
            root.join("targets/x86_64-linux/lib"),
        ),
        Layout::Wheel => (
            fixture("nvcc.profile-13.0-wheel"),
            root.join("include"),
            root.join("lib"),
        ),
    };
    write(&bin.join("nvcc.profile"), &profile);
    write(&include.join("cuda_runtime.h"), "/* fake */\n");
    let cccl = if layout == Layout::Wheel {
        include.join("cccl")
    } else {
        include.clone()
    };
    write(&cccl.join("nv/target"), "/* fake */\n");
    write(&lib.join("libcudart.so"), "");
    if layout == Layout::Installer {
        let major_minor: Vec<&str> = version.split('.').collect();
        write(
            &root.join("version.json"),
            &format!(
                "{{\"cuda\": {{\"name\": \"CUDA SDK\", \"version\": \"{}.{}.0\"}}, \"cuda_nvcc\": {{\"name\": \"CUDA NVCC\", \"version\": \"{version}\"}}}}",
                major_minor[0], major_minor[1]
            ),
        );
    }
    root.to_path_buf()
}

/// A hermetic environment: nothing set, `/` mapped to an empty temp dir.
fn hermetic(sysroot: &Path) -> Env {
    Env::empty().with_root(sysroot)
}

fn discover(env: &Env) -> Discovery {
    toolkit::discover(env, &DiscoverOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn errors(tk: &Toolkit) -> Vec<String> {
    tk.problems
        .iter()
        .filter(|p| p.severity == Severity::Error)
        .map(|p| format!("{}: {}", p.code, p.message))
        .collect()
}

fn canon(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap()
}

// ---------------------------------------------------------------- the real toolkit

#[test]
fn real_cu13_through_cuda_home() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let sys = tempfile::tempdir().unwrap();
    let d = discover(&hermetic(sys.path()).set(Var::CudaHome, &root));
    let tk = d.selected_toolkit().expect("selected");
    assert_eq!(tk.version, Some(v("13.0.88")));
    assert_eq!(tk.found_via, FoundVia::EnvVar("CUDA_HOME".into()));
    assert_eq!(tk.root, canon(&root));
    assert_eq!(tk.nvcc, canon(&root.join("bin/nvcc")));
    assert!(
        tk.include_dirs.contains(&canon(&root.join("include"))),
        "{:?}",
        tk.include_dirs
    );
    assert!(
        tk.include_dirs.contains(&canon(&root.join("include/cccl"))),
        "{:?}",
        tk.include_dirs
    );
    // The wheel layout has lib/, an installed root lib64/ (and lib → lib64).
    assert!(
        tk.lib_dirs
            .iter()
            .any(|d| d.join("libcudart.so.13").is_file()),
        "{:?}",
        tk.lib_dirs
    );
    assert!(tk.problems.is_empty(), "{:?}", tk.problems);
    assert!(d.reason.contains("CUDA_HOME"), "{}", d.reason);
}

#[test]
fn real_cu13_through_path_and_find() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let sys = tempfile::tempdir().unwrap();
    let env = hermetic(sys.path()).set(
        Var::Path,
        format!("/nonexistent:{}:/usr/bin", root.join("bin").display()),
    );
    let tk = toolkit::find(&env).unwrap();
    assert_eq!(tk.found_via, FoundVia::Path(root.join("bin")));
    assert_eq!(tk.version, Some(v("13.0.88")));
    assert!(tk.problems.is_empty(), "{:?}", tk.problems);
}

#[test]
fn real_cu13_through_a_symlink_on_path_runs_the_real_file() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let sys = tempfile::tempdir().unwrap();
    let links = sys.path().join("usr/local/bin");
    std::fs::create_dir_all(&links).unwrap();
    symlink(root.join("bin/nvcc"), links.join("nvcc")).unwrap();
    let d = discover(&hermetic(sys.path()).set(Var::Path, &links));
    let tk = d.selected_toolkit().unwrap();
    // nvcc run through the link would not find nvcc.profile (checked by hand: no TOP
    // in `nvcc -v --dryrun`), so the toolkit records the real file and warns.
    assert_eq!(tk.nvcc, canon(&root.join("bin/nvcc")));
    assert_eq!(tk.root, canon(&root));
    assert!(tk
        .problems
        .iter()
        .any(|p| p.code == "nvcc-symlink" && p.severity == Severity::Warning));
    assert!(errors(tk).is_empty(), "{:?}", errors(tk));
}

/// A venv whose site-packages holds the real wheels, under a path with spaces and non-ASCII.
fn venv_with(site_src: &Path, dir: &Path) -> PathBuf {
    let site = dir.join("lib/python3.11/site-packages");
    std::fs::create_dir_all(&site).unwrap();
    for entry in std::fs::read_dir(site_src).unwrap().flatten() {
        symlink(entry.path(), site.join(entry.file_name())).unwrap();
    }
    site
}

#[test]
fn real_cu13_through_virtual_env_wheel_layout() {
    let Some(site_src) = workspace_tests::cu13_site() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let venv = tmp.path().join("my venv ü");
    let site = venv_with(&site_src, &venv);
    let sys = tempfile::tempdir().unwrap();
    let d = discover(&hermetic(sys.path()).set(Var::VirtualEnv, &venv));
    assert_eq!(d.candidates.len(), 1);
    let tk = d.selected_toolkit().unwrap();
    assert_eq!(tk.found_via, FoundVia::PythonWheel(site));
    assert_eq!(tk.version, Some(v("13.0.88")));
    assert!(tk.problems.is_empty(), "{:?}", tk.problems);
}

#[test]
fn real_mixed_release_is_flagged_before_any_compile() {
    let Some(root) = workspace_tests::mixed_root() else {
        return;
    };
    let sys = tempfile::tempdir().unwrap();
    let d = discover(&hermetic(sys.path()).set(Var::CudaHome, &root));
    let tk = d
        .selected_toolkit()
        .expect("explicit CUDA_HOME is selected even when broken");
    assert_eq!(tk.version, Some(v("13.0.88")));
    let mixed = tk
        .problems
        .iter()
        .find(|p| p.code == "toolkit-incomplete" && p.severity == Severity::Error)
        .unwrap_or_else(|| panic!("{:?}", tk.problems));
    assert!(mixed.message.contains("13.5.37"), "{}", mixed.message);
    assert!(mixed.message.contains("cicc"), "{}", mixed.message);
    assert!(
        mixed.message.contains("nvidia_nvvm-13.5.37.dist-info"),
        "{}",
        mixed.message
    );
    assert!(
        mixed
            .fix
            .as_deref()
            .unwrap()
            .contains("nvidia-nvvm==13.0.*"),
        "{:?}",
        mixed.fix
    );
    let e = d.into_selected().unwrap_err();
    assert_eq!(e.code, "toolkit-incomplete");
    assert!(e.to_string().contains("help: pin the wheels"), "{e}");

    // Without the wheels' metadata (the tree copied out of site-packages) the
    // version string inside cicc gives the mixed release away.
    let copy = linked_copy(&root, &sys.path().join("copied"));
    let d = discover(&hermetic(sys.path()).set(Var::CudaHome, &copy));
    let errs = errors(&d.candidates[0]);
    assert!(
        errs.iter()
            .any(|e| e.contains("mixes CUDA releases") && e.contains("cicc 13.5.37")),
        "{errs:?}"
    );
}

#[test]
fn real_mixed_in_a_venv_is_skipped_for_a_good_toolkit_on_path() {
    let (Some(mixed), Some(good)) = (workspace_tests::mixed_root(), workspace_tests::cu13_root())
    else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let venv = tmp.path().join("venv");
    venv_with(mixed.parent().unwrap().parent().unwrap(), &venv);
    let sys = tempfile::tempdir().unwrap();
    let env = hermetic(sys.path())
        .set(Var::VirtualEnv, &venv)
        .set(Var::Path, good.join("bin"));
    let d = discover(&env);
    assert_eq!(d.candidates.len(), 2);
    assert!(d.candidates[1].is_broken());
    assert_eq!(d.selected, Some(0));
    // Alone, the mixed toolkit is an error naming the cause.
    let d = discover(&hermetic(sys.path()).set(Var::VirtualEnv, &venv));
    assert_eq!(d.into_selected().unwrap_err().code, "toolkit-incomplete");
}

// ---------------------------------------------------------------- layouts

#[test]
fn installer_layout_reads_targets_dir_and_version_json() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fake_toolkit(&tmp.path().join("cuda-12.4"), "12.4.131", Layout::Installer);
    let d = discover(&hermetic(tmp.path()).set(Var::CudaHome, &root));
    let tk = d.selected_toolkit().unwrap();
    assert_eq!(tk.version, Some(v("12.4.131")));
    assert_eq!(
        tk.include_dirs,
        vec![canon(&root).join("targets/x86_64-linux/include")]
    );
    assert_eq!(
        tk.lib_dirs,
        vec![canon(&root).join("targets/x86_64-linux/lib")]
    );
    assert!(tk.problems.is_empty(), "{:?}", tk.problems);
}

#[test]
fn installer_version_json_answers_for_ptxas_and_cicc_and_still_catches_a_mixed_release() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fake_toolkit(&tmp.path().join("cuda-13.0"), "13.0.88", Layout::Installer);
    // version.json answers for ptxas (cuda_nvcc) and cicc (libnvvm): neither runs.
    let runs = tmp.path().join("ptxas-runs");
    let ptxas_text = nvcc_text("13.0.88").replace(
        "nvcc: NVIDIA (R) Cuda compiler driver",
        "ptxas: NVIDIA (R) Ptx optimizing assembler",
    );
    tool(&root.join("bin/ptxas"), &ptxas_text, Some(&runs));
    let json = |nvvm: &str| {
        format!(
            "{{\"cuda\": {{\"version\": \"13.0.0\"}}, \"cuda_nvcc\": {{\"version\": \"13.0.88\"}}, \"libnvvm\": {{\"name\": \"NVVM\", \"version\": \"{nvvm}\"}}}}"
        )
    };
    write(&root.join("version.json"), &json("13.0.88"));
    let env = hermetic(tmp.path()).set(Var::CudaHome, &root);
    let d = discover(&env);
    assert!(
        d.candidates[0].problems.is_empty(),
        "{:?}",
        d.candidates[0].problems
    );
    assert!(
        !runs.exists(),
        "ptxas was run although version.json answers"
    );

    write(&root.join("version.json"), &json("13.5.37"));
    let d = discover(&env);
    let errs = errors(&d.candidates[0]);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].contains("mixes CUDA releases")
            && errs[0].contains("cicc 13.5.37 (`version.json` libnvvm)"),
        "{errs:?}"
    );
    assert!(errs[0].contains("Unsupported .version"), "{errs:?}");
}

#[test]
fn nvcc_profile_top_is_believed_over_bin_dotdot() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fake_toolkit(&tmp.path().join("sdk"), "13.0.88", Layout::Wheel);
    // Move bin/ one level down; the profile says where the toolkit is.
    std::fs::create_dir_all(root.join("compiler")).unwrap();
    std::fs::rename(root.join("bin"), root.join("compiler/bin")).unwrap();
    let profile = fixture("nvcc.profile-13.0-wheel").replace("$(_HERE_)/..", "$(_HERE_)/../..");
    write(&root.join("compiler/bin/nvcc.profile"), &profile);
    let d = discover(&hermetic(tmp.path()).set(Var::Nvcc, root.join("compiler/bin/nvcc")));
    let tk = d.selected_toolkit().unwrap();
    assert_eq!(tk.root, canon(&root));
    assert!(
        tk.include_dirs.contains(&canon(&root).join("include")),
        "{:?}",
        tk.include_dirs
    );
    assert!(tk.problems.is_empty(), "{:?}", tk.problems);
}

#[test]
fn usr_local_cuda_symlink_reports_its_target_and_versioned_installs_follow_newest_first() {
    let sys = tempfile::tempdir().unwrap();
    let local = sys.path().join("usr/local");
    fake_toolkit(&local.join("cuda-11.8"), "11.8.89", Layout::Installer);
    fake_toolkit(&local.join("cuda-12.2"), "12.2.140", Layout::Installer);
    fake_toolkit(&local.join("cuda-12.4"), "12.4.131", Layout::Installer);
    symlink("cuda-12.2", local.join("cuda")).unwrap();
    fake_toolkit(&sys.path().join("opt/cuda"), "13.0.88", Layout::Wheel);
    let d = discover(&hermetic(sys.path()));
    let seen: Vec<(FoundVia, Option<semver::Version>)> = d
        .candidates
        .iter()
        .map(|t| (t.found_via.clone(), t.version.clone()))
        .collect();
    assert_eq!(
        seen,
        vec![
            (
                FoundVia::UsrLocalCuda(canon(&local.join("cuda-12.2"))),
                Some(v("12.2.140"))
            ),
            (FoundVia::Versioned, Some(v("12.4.131"))),
            (FoundVia::Versioned, Some(v("11.8.89"))),
            (FoundVia::OptCuda, Some(v("13.0.88"))),
        ],
        "cuda-12.2 is deduplicated into the /usr/local/cuda candidate"
    );
    assert_eq!(d.selected, Some(0));
}

#[test]
fn dangling_usr_local_cuda_is_a_problem_not_a_crash() {
    let sys = tempfile::tempdir().unwrap();
    let local = sys.path().join("usr/local");
    std::fs::create_dir_all(&local).unwrap();
    symlink("cuda-12.1", local.join("cuda")).unwrap();
    fake_toolkit(&local.join("cuda-12.4"), "12.4.131", Layout::Installer);
    let d = discover(&hermetic(sys.path()));
    let broken = &d.candidates[0];
    let p = &broken.problems[0];
    assert_eq!(p.code, "toolkit-broken-link");
    assert!(
        p.message.contains("cuda-12.1") && p.message.contains("does not exist"),
        "{}",
        p.message
    );
    assert!(p.fix.as_deref().unwrap().contains("ln -sfn"));
    assert_eq!(d.selected, Some(1));
    assert!(d.reason.contains("skipped broken"), "{}", d.reason);
    // Alone, it is an error that names the link.
    std::fs::remove_dir_all(local.join("cuda-12.4")).unwrap();
    let e = discover(&hermetic(sys.path())).into_selected().unwrap_err();
    assert_eq!(e.code, "toolkit-broken-link");
    assert!(e.message.contains("usr/local/cuda"), "{e}");
}

#[test]
fn debian_layout_with_usr_bin_symlink_and_usr_include_headers() {
    let sys = tempfile::tempdir().unwrap();
    let s = sys.path();
    let top = s.join("usr/lib/nvidia-cuda-toolkit");
    let text = nvcc_text("12.2.140");
    tool(&top.join("bin/nvcc"), &text, None);
    write(
        &top.join("bin/nvcc.profile"),
        &fixture("nvcc.profile-debian"),
    );
    write_script(
        &top.join("nvvm/bin/cicc"),
        "# Cuda compilation tools, release 12.2, V12.2.140\nexit 1",
    );
    // Debian puts the other tools in /usr/bin and the headers in /usr/include.
    tool(
        &s.join("usr/bin/ptxas"),
        &text.replace("nvcc:", "ptxas:"),
        None,
    );
    tool(&s.join("usr/bin/fatbinary"), &text, None);
    tool(&s.join("usr/bin/nvlink"), &text, None);
    symlink(
        "../lib/nvidia-cuda-toolkit/bin/nvcc",
        s.join("usr/bin/nvcc"),
    )
    .unwrap();
    write(&s.join("usr/include/cuda_runtime.h"), "");
    write(&s.join("usr/include/nv/target"), "");
    // Found by the distro rule alone…
    let d = discover(&hermetic(s));
    let tk = d.selected_toolkit().unwrap();
    assert_eq!(tk.found_via, FoundVia::Distro);
    assert_eq!(tk.root, canon(&top));
    assert!(
        tk.include_dirs.contains(&canon(&s.join("usr/include"))),
        "{:?}",
        tk.include_dirs
    );
    assert!(errors(tk).is_empty(), "{:?}", tk.problems);
    // …and through PATH's /usr/bin/nvcc, deduplicated into one candidate.
    let d = discover(&hermetic(s).set(Var::Path, s.join("usr/bin")));
    assert_eq!(d.candidates.len(), 1);
    assert_eq!(d.candidates[0].found_via, FoundVia::Path(s.join("usr/bin")));
    assert_eq!(d.candidates[0].version, Some(v("12.2.140")));
}

#[test]
fn ccache_wrapper_dir_is_skipped_for_the_real_nvcc() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    write_script(&t.join("bin/ccache"), "exit 1");
    std::fs::create_dir_all(t.join("ccache")).unwrap();
    symlink(t.join("bin/ccache"), t.join("ccache/nvcc")).unwrap();
    let root = fake_toolkit(&t.join("cuda"), "12.4.131", Layout::Installer);
    let env = hermetic(t).set(
        Var::Path,
        std::env::join_paths([t.join("ccache"), root.join("bin")]).unwrap(),
    );
    let d = discover(&env);
    assert_eq!(d.candidates.len(), 1);
    assert_eq!(d.candidates[0].found_via, FoundVia::Path(root.join("bin")));
    assert!(d.conflicts.is_empty(), "{:?}", d.conflicts);
}

#[test]
fn wrapper_script_without_profile_is_located_by_a_dry_run() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let root = fake_toolkit(&t.join("real toolkit"), "12.4.131", Layout::Installer);
    let real_bin = canon(&root.join("bin"));
    // The fake real nvcc answers `-v --dryrun` like nvcc: `#$ NAME=value` lines.
    let dry = format!(
        "#$ _HERE_={b}\n#$ _TARGET_DIR_=targets/x86_64-linux\n#$ TOP={b}/..\n#$ CICC_PATH={b}/../nvvm/bin\n#$ PATH={b}/../nvvm/bin:{b}:/usr/bin\n#$ INCLUDES=\"-I{b}/../targets/x86_64-linux/include\"  \n#$ LIBRARIES=  \"-L{b}/../targets/x86_64-linux/lib/stubs\" \"-L{b}/../targets/x86_64-linux/lib\"\n",
        b = real_bin.display()
    );
    write_script(
        &root.join("bin/nvcc"),
        &format!(
            "if [ \"$1\" = \"-v\" ]; then cat >&2 <<'EOF'\n{dry}EOF\nexit 0; fi\ncat <<'EOF'\n{}EOF",
            nvcc_text("12.4.131")
        ),
    );
    write_script(
        &t.join("wrap/nvcc"),
        &format!("exec '{}' \"$@\"", root.join("bin/nvcc").display()),
    );
    let env = hermetic(t).set(
        Var::Path,
        std::env::join_paths([t.join("wrap"), root.join("bin")]).unwrap(),
    );
    let d = discover(&env);
    assert_eq!(
        d.candidates.len(),
        1,
        "wrapper and real nvcc are one toolkit"
    );
    let tk = &d.candidates[0];
    assert_eq!(
        tk.nvcc,
        canon(&t.join("wrap/nvcc")),
        "the wrapper stays the nvcc that runs"
    );
    assert_eq!(tk.root, real_bin.parent().unwrap());
    assert_eq!(
        tk.include_dirs,
        vec![real_bin
            .parent()
            .unwrap()
            .join("targets/x86_64-linux/include")]
    );
    assert!(errors(tk).is_empty(), "{:?}", tk.problems);
}

#[test]
fn split_wheel_layout_collects_component_include_dirs() {
    let tmp = tempfile::tempdir().unwrap();
    let venv = tmp.path().join("venv");
    let site = venv.join("lib/python3.10/site-packages");
    let nv = site.join("nvidia");
    let text = nvcc_text("12.4.131");
    tool(&nv.join("cuda_nvcc/bin/nvcc"), &text, None);
    write(
        &nv.join("cuda_nvcc/bin/nvcc.profile"),
        &fixture("nvcc.profile-12-installer"),
    );
    tool(
        &nv.join("cuda_nvcc/bin/ptxas"),
        &text.replace("nvcc:", "ptxas:"),
        None,
    );
    tool(&nv.join("cuda_nvcc/bin/fatbinary"), &text, None);
    tool(&nv.join("cuda_nvcc/bin/nvlink"), &text, None);
    write_script(
        &nv.join("cuda_nvcc/nvvm/bin/cicc"),
        "# Cuda compilation tools, release 12.4, V12.4.131",
    );
    write(&nv.join("cuda_runtime/include/cuda_runtime.h"), "");
    write(&nv.join("cuda_runtime/lib/libcudart.so.12"), "");
    write(&nv.join("cuda_cccl/include/nv/target"), "");
    for d in [
        "nvidia_cuda_nvcc_cu12-12.4.131",
        "nvidia_cuda_runtime_cu12-12.4.127",
        "nvidia_nvvm_cu12-12.4.131",
    ] {
        std::fs::create_dir_all(site.join(format!("{d}.dist-info"))).unwrap();
    }
    let sys = tempfile::tempdir().unwrap();
    let d = discover(&hermetic(sys.path()).set(Var::VirtualEnv, &venv));
    let tk = d.selected_toolkit().unwrap();
    assert_eq!(tk.found_via, FoundVia::PythonWheel(site.clone()));
    assert!(
        tk.include_dirs.contains(&nv.join("cuda_runtime/include")),
        "{:?}",
        tk.include_dirs
    );
    assert!(
        tk.include_dirs.contains(&nv.join("cuda_cccl/include")),
        "{:?}",
        tk.include_dirs
    );
    assert_eq!(tk.lib_dirs, vec![nv.join("cuda_runtime/lib")]);
    assert!(tk.problems.is_empty(), "{:?}", tk.problems);
    // An unpinned nvvm wheel of another release is caught from its dist-info name.
    std::fs::rename(
        site.join("nvidia_nvvm_cu12-12.4.131.dist-info"),
        site.join("nvidia_nvvm_cu12-12.9.86.dist-info"),
    )
    .unwrap();
    let d = discover(&hermetic(sys.path()).set(Var::VirtualEnv, &venv));
    let tk = &d.candidates[0];
    assert!(
        errors(tk)
            .iter()
            .any(|e| e.starts_with("toolkit-incomplete") && e.contains("12.9.86")),
        "{:?}",
        tk.problems
    );
}

#[test]
fn conda_prefix_with_targets_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().join("envs/cu");
    fake_toolkit(&prefix, "12.4.131", Layout::Installer);
    let sys = tempfile::tempdir().unwrap();
    let d = discover(&hermetic(sys.path()).set(Var::CondaPrefix, &prefix));
    let tk = d.selected_toolkit().unwrap();
    assert_eq!(tk.found_via, FoundVia::Conda(prefix.clone()));
    assert!(tk
        .include_dirs
        .contains(&canon(&prefix).join("targets/x86_64-linux/include")));
    assert!(tk.problems.is_empty(), "{:?}", tk.problems);
}

#[test]
fn wheels_inside_a_conda_env_come_before_its_conda_toolkit() {
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().join("conda env");
    fake_toolkit(&prefix, "12.4.131", Layout::Installer);
    let site = prefix.join("lib/python3.12/site-packages");
    fake_toolkit(&site.join("nvidia/cu13"), "13.0.88", Layout::Wheel);
    let sys = tempfile::tempdir().unwrap();
    let d = discover(&hermetic(sys.path()).set(Var::CondaPrefix, &prefix));
    let found: Vec<_> = d
        .candidates
        .iter()
        .map(|t| (t.found_via.clone(), t.version.clone()))
        .collect();
    assert_eq!(
        found,
        vec![
            (FoundVia::PythonWheel(site), Some(v("13.0.88"))),
            (FoundVia::Conda(prefix), Some(v("12.4.131"))),
        ]
    );
}

#[test]
fn active_python_is_asked_only_when_nothing_else_was_found() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let site = t.join("site");
    fake_toolkit(&site.join("nvidia/cu13"), "13.0.88", Layout::Wheel);
    let marker = t.join("python-ran");
    write_script(
        &t.join("python3"),
        &format!(
            "echo ran >> '{}'\necho '{}'\necho /nonexistent",
            marker.display(),
            site.display()
        ),
    );
    let env = hermetic(t).set(Var::CudaBuildPython, t.join("python3"));
    let d = discover(&env);
    assert_eq!(
        d.selected_toolkit().unwrap().found_via,
        FoundVia::PythonWheel(site.clone())
    );
    assert!(marker.exists());
    std::fs::remove_file(&marker).unwrap();
    // With a toolkit found cheaply, python is not started; discover_all still asks.
    let other = fake_toolkit(&t.join("cuda"), "12.4.131", Layout::Installer);
    let env = env.set(Var::Path, other.join("bin"));
    assert_eq!(discover(&env).candidates.len(), 1);
    assert!(!marker.exists());
    let all = toolkit::discover_all(&env, &DiscoverOptions::default()).unwrap();
    assert_eq!(all.candidates.len(), 2);
    assert!(marker.exists());
}

// ---------------------------------------------------------------- precedence and choice

#[test]
fn every_rule_in_precedence_order() {
    let sys = tempfile::tempdir().unwrap();
    let s = sys.path();
    let tk = |name: &str| fake_toolkit(&s.join("tk").join(name), "12.4.131", Layout::Installer);
    let env = hermetic(s)
        .set(Var::Nvcc, tk("nvcc").join("bin/nvcc"))
        .set(Var::CudaHome, tk("home"))
        .set(Var::CudaPath, tk("path"))
        .set(Var::CudaRoot, tk("root"))
        .set(Var::CudaToolkitRootDir, tk("rootdir"))
        .set(Var::CudaToolkitRoot, tk("cmake"))
        .set(Var::Path, tk("on-path").join("bin"));
    fake_toolkit(&s.join("usr/local/cuda"), "12.4.131", Layout::Installer);
    fake_toolkit(
        &s.join("usr/local/cuda-12.4"),
        "12.4.131",
        Layout::Installer,
    );
    fake_toolkit(&s.join("opt/cuda"), "12.4.131", Layout::Installer);
    let venv = s.join("venv");
    fake_toolkit(
        &venv.join("lib/python3.12/site-packages/nvidia/cu13"),
        "13.0.88",
        Layout::Wheel,
    );
    let conda = s.join("conda");
    fake_toolkit(&conda, "12.4.131", Layout::Installer);
    let env = env
        .set(Var::VirtualEnv, &venv)
        .set(Var::CondaPrefix, &conda);
    let rules: Vec<String> = discover(&env)
        .candidates
        .iter()
        .map(|t| match &t.found_via {
            FoundVia::EnvVar(n) => n.clone(),
            FoundVia::Path(_) => "PATH".into(),
            FoundVia::UsrLocalCuda(_) => "/usr/local/cuda".into(),
            FoundVia::Versioned => "versioned".into(),
            FoundVia::OptCuda => "/opt/cuda".into(),
            FoundVia::PythonWheel(_) => "wheel".into(),
            FoundVia::Conda(_) => "conda".into(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        rules,
        [
            "NVCC",
            "CUDA_HOME",
            "CUDA_PATH",
            "CUDA_ROOT",
            "CUDA_TOOLKIT_ROOT_DIR",
            "CUDAToolkit_ROOT",
            "PATH",
            "/usr/local/cuda",
            "versioned",
            "/opt/cuda",
            "wheel",
            "conda"
        ]
    );
    // Each explicit setting wins over all below it.
    let mut env = env;
    for (var, dir) in [
        (Var::Nvcc, "nvcc"),
        (Var::CudaHome, "home"),
        (Var::CudaPath, "path"),
        (Var::CudaRoot, "root"),
        (Var::CudaToolkitRootDir, "rootdir"),
        (Var::CudaToolkitRoot, "cmake"),
    ] {
        let d = discover(&env);
        let sel = d.selected_toolkit().unwrap();
        assert_eq!(sel.found_via, FoundVia::EnvVar(var.name().into()));
        assert_eq!(sel.root, canon(&s.join("tk").join(dir)));
        env = env.unset(var);
    }
    assert!(matches!(
        discover(&env).selected_toolkit().unwrap().found_via,
        FoundVia::Path(_)
    ));
    // An explicit root in code beats every variable.
    let opts = DiscoverOptions {
        explicit_root: Some(s.join("opt/cuda")),
        ..Default::default()
    };
    let d = toolkit::discover(&env.clone().set(Var::CudaHome, s.join("tk/home")), &opts).unwrap();
    assert_eq!(d.selected_toolkit().unwrap().found_via, FoundVia::Explicit);
}

#[test]
fn same_toolkit_from_two_rules_is_one_candidate_with_the_higher_rule() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fake_toolkit(&tmp.path().join("cuda"), "12.4.131", Layout::Installer);
    let env = hermetic(tmp.path())
        .set(Var::Path, root.join("bin"))
        .set(Var::CudaHome, &root);
    let d = discover(&env);
    assert_eq!(d.candidates.len(), 1);
    assert_eq!(
        d.candidates[0].found_via,
        FoundVia::EnvVar("CUDA_HOME".into())
    );
    assert!(d.conflicts.is_empty(), "{:?}", d.conflicts);
}

fn three_versioned(sys: &Path) {
    for (dir, ver) in [
        ("cuda-11.8", "11.8.89"),
        ("cuda-12.4", "12.4.131"),
        ("cuda-13.0", "13.0.88"),
    ] {
        fake_toolkit(&sys.join("usr/local").join(dir), ver, Layout::Installer);
    }
}

#[test]
fn requirement_picks_the_newest_match_or_lists_why_none_fits() {
    let sys = tempfile::tempdir().unwrap();
    three_versioned(sys.path());
    let pick = |req: &str| {
        let opts = DiscoverOptions {
            requirement: Some(req.parse().unwrap()),
            ..Default::default()
        };
        toolkit::discover(&hermetic(sys.path()), &opts).unwrap()
    };
    assert_eq!(
        pick(">=12.4, <13").selected_toolkit().unwrap().version,
        Some(v("12.4.131"))
    );
    assert_eq!(
        pick(">=12").selected_toolkit().unwrap().version,
        Some(v("13.0.88"))
    );
    assert_eq!(
        pick("~11.8").selected_toolkit().unwrap().version,
        Some(v("11.8.89"))
    );
    let d = pick(">=14");
    assert_eq!(d.selected, None);
    let e = d.into_selected().unwrap_err();
    assert_eq!(e.code, "toolkit-requirement");
    assert!(e.message.contains(">=14"), "{e}");
    for ver in ["11.8.89", "12.4.131", "13.0.88"] {
        assert!(e.to_string().contains(ver), "{e}");
    }
    assert!(e.help.iter().any(|h| h.contains("[package.metadata.cuda]")));
}

#[test]
fn explicit_variable_wins_but_must_meet_the_requirement() {
    let sys = tempfile::tempdir().unwrap();
    three_versioned(sys.path());
    let env = hermetic(sys.path()).set(Var::CudaHome, sys.path().join("usr/local/cuda-11.8"));
    let opts = DiscoverOptions {
        requirement: Some(">=11".parse().unwrap()),
        ..Default::default()
    };
    assert_eq!(
        toolkit::discover(&env, &opts)
            .unwrap()
            .selected_toolkit()
            .unwrap()
            .version,
        Some(v("11.8.89"))
    );
    let opts = DiscoverOptions {
        requirement: Some(">=12.4".parse().unwrap()),
        ..Default::default()
    };
    let e = toolkit::discover(&env, &opts)
        .unwrap()
        .into_selected()
        .unwrap_err();
    assert_eq!(e.code, "toolkit-requirement");
    assert!(
        e.message.contains("CUDA_HOME") && e.message.contains("11.8.89"),
        "{e}"
    );
}

#[test]
fn find_reads_the_requirement_from_cargo_toml() {
    let sys = tempfile::tempdir().unwrap();
    three_versioned(sys.path());
    let pkg = tempfile::tempdir().unwrap();
    write(&pkg.path().join("Cargo.toml"), "[package]\nname = \"k\"\nversion = \"0.1.0\"\n\n[package.metadata.cuda]\ntoolkit = \"12\"\n");
    let env = hermetic(sys.path()).set(Var::CargoManifestDir, pkg.path());
    assert_eq!(toolkit::find(&env).unwrap().version, Some(v("12.4.131")));
    write(
        &pkg.path().join("Cargo.toml"),
        "[package.metadata.cuda]\ntoolkit = \"twelve\"\n",
    );
    assert_eq!(toolkit::find(&env).unwrap_err().code, "metadata-invalid");
}

#[test]
fn nothing_found_says_where_it_looked_and_how_to_install() {
    let sys = tempfile::tempdir().unwrap();
    let d = discover(&hermetic(sys.path()).set(Var::Path, "/nonexistent"));
    assert!(d.candidates.is_empty());
    let e = d.into_selected().unwrap_err();
    assert_eq!(e.code, "nvcc-not-found");
    assert!(e.to_string().contains("usr/local/cuda"), "{e}");
    assert!(e.help.iter().any(|h| h.contains("CUDA_HOME")));
    assert!(e.help.iter().any(|h| h.contains("pip install")));
}

// ---------------------------------------------------------------- conflicts

#[test]
fn cuda_home_and_cuda_path_disagreeing_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let a = fake_toolkit(&tmp.path().join("a"), "12.4.131", Layout::Installer);
    let b = fake_toolkit(&tmp.path().join("b"), "13.0.88", Layout::Wheel);
    let env = hermetic(tmp.path())
        .set(Var::CudaHome, &a)
        .set(Var::CudaPath, &b);
    let d = discover(&env);
    assert_eq!(d.selected_toolkit().unwrap().root, canon(&a));
    let c = d
        .conflicts
        .iter()
        .find(|c| c.code == "toolkit-env-conflict")
        .expect("conflict");
    assert!(
        c.message.contains("CUDA_HOME") && c.message.contains("CUDA_PATH"),
        "{}",
        c.message
    );
    assert!(c.fix.as_deref().unwrap().contains("unset CUDA_PATH"));
    // Agreeing (through a symlink) is no conflict.
    symlink(&a, tmp.path().join("a-link")).unwrap();
    let env = hermetic(tmp.path())
        .set(Var::CudaHome, &a)
        .set(Var::CudaPath, tmp.path().join("a-link"));
    assert!(discover(&env).conflicts.is_empty());
}

#[test]
fn nvcc_and_cuda_home_naming_different_toolkits_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let a = fake_toolkit(&tmp.path().join("a"), "12.4.131", Layout::Installer);
    let b = fake_toolkit(&tmp.path().join("b"), "13.0.88", Layout::Wheel);
    let env = hermetic(tmp.path())
        .set(Var::Nvcc, a.join("bin/nvcc"))
        .set(Var::CudaHome, &b);
    let d = discover(&env);
    assert_eq!(d.selected_toolkit().unwrap().version, Some(v("12.4.131")));
    let c = d
        .conflicts
        .iter()
        .find(|c| c.code == "toolkit-env-conflict")
        .expect("conflict");
    assert!(
        c.message.contains("NVCC names") && c.message.contains("CUDA_HOME names"),
        "{}",
        c.message
    );
    assert!(c.message.contains("NVCC wins here"), "{}", c.message);
    assert_eq!(d.selected_toolkit().unwrap().found_via.to_string(), "NVCC");
}

#[test]
fn path_nvcc_that_is_not_the_selected_one_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let a = fake_toolkit(&tmp.path().join("a"), "12.4.131", Layout::Installer);
    let b = fake_toolkit(&tmp.path().join("b"), "13.0.88", Layout::Wheel);
    let env = hermetic(tmp.path())
        .set(Var::CudaHome, &a)
        .set(Var::Path, b.join("bin"));
    let d = discover(&env);
    let c = d
        .conflicts
        .iter()
        .find(|c| c.code == "nvcc-path-mismatch")
        .expect("conflict");
    assert!(
        c.message
            .contains(&b.join("bin/nvcc").display().to_string()),
        "{}",
        c.message
    );
    assert!(c.fix.as_deref().unwrap().contains("cargo cuda env"));
}

/// The toolkit variables in precedence order, each naming its own toolkit:
/// the first one set wins, and the one warning names every other.
#[test]
fn toolkit_variables_take_turns_in_precedence_order() {
    let tmp = tempfile::tempdir().unwrap();
    let order = [
        Var::Nvcc,
        Var::CudaHome,
        Var::CudaPath,
        Var::CudaToolkitPath,
        Var::Cudacxx,
        Var::CudaRoot,
        Var::CudaToolkitRootDir,
        Var::CudaToolkitRoot,
    ];
    let versions = ["11.8.89", "12.2.140", "12.4.131", "13.0.88"];
    let roots: Vec<PathBuf> = order
        .iter()
        .enumerate()
        .map(|(i, var)| {
            fake_toolkit(
                &tmp.path().join(var.name()),
                versions[i % versions.len()],
                Layout::Wheel,
            )
        })
        .collect();
    let value = |i: usize| match order[i] {
        Var::Nvcc | Var::Cudacxx => roots[i].join("bin/nvcc"),
        _ => roots[i].clone(),
    };
    for first in 0..order.len() {
        let mut env = hermetic(tmp.path());
        for (i, var) in order.iter().enumerate().skip(first) {
            env = env.set(*var, value(i));
        }
        let d = discover(&env);
        let sel = d.selected_toolkit().unwrap();
        assert_eq!(sel.root, canon(&roots[first]), "{}", order[first].name());
        assert_eq!(sel.found_via.to_string(), order[first].name());
        let conflicts: Vec<_> = d
            .conflicts
            .iter()
            .filter(|c| c.code == "toolkit-env-conflict")
            .collect();
        if first + 1 == order.len() {
            assert!(conflicts.is_empty(), "{conflicts:?}");
            continue;
        }
        assert_eq!(conflicts.len(), 1, "one warning for all: {conflicts:?}");
        for var in &order[first..] {
            assert!(
                conflicts[0]
                    .message
                    .contains(&format!("{} names", var.name())),
                "{}: {}",
                var.name(),
                conflicts[0].message
            );
        }
        assert!(conflicts[0]
            .message
            .contains(&format!("{} wins here", order[first].name())));
    }
}

/// CUDA_TOOLKIT_PATH (NVIDIA's crates) and CUDA_HOME naming different
/// releases, CUDA_PATH and CUDACXX siding with one each: one warning that
/// names all four with their releases and who reads the losers.
#[test]
fn cuda_toolkit_path_and_cuda_home_naming_different_releases_is_one_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let a = fake_toolkit(&tmp.path().join("a"), "12.4.131", Layout::Installer);
    let b = match workspace_tests::cu13_root() {
        Some(real) => real,
        None => fake_toolkit(&tmp.path().join("b"), "13.0.88", Layout::Wheel),
    };
    let env = hermetic(tmp.path())
        .set(Var::CudaHome, &a)
        .set(Var::CudaPath, &a)
        .set(Var::CudaToolkitPath, &b)
        .set(Var::Cudacxx, b.join("bin/nvcc"));
    let d = discover(&env);
    assert_eq!(d.selected_toolkit().unwrap().root, canon(&a));
    let c: Vec<_> = d
        .conflicts
        .iter()
        .filter(|c| c.code == "toolkit-env-conflict")
        .collect();
    assert_eq!(c.len(), 1, "{:?}", d.conflicts);
    let m = &c[0].message;
    assert!(
        m.starts_with("the CUDA variables name 2 different toolkits"),
        "{m}"
    );
    assert!(
        m.contains("CUDA_HOME and CUDA_PATH name") && m.contains("(CUDA 12.4.131)"),
        "{m}"
    );
    assert!(
        m.contains("CUDA_TOOLKIT_PATH and CUDACXX name") && m.contains("(CUDA 13.0.88)"),
        "{m}"
    );
    assert!(
        m.contains("NVIDIA's Rust crates") && m.contains("CMake"),
        "{m}"
    );
    let fix = c[0].fix.as_deref().unwrap();
    assert!(fix.contains("unset CUDA_TOOLKIT_PATH CUDACXX"), "{fix}");
    assert!(fix.contains("cargo cuda env --write"), "{fix}");
    // CUDA_TOOLKIT_PATH alone is used, as NVIDIA's crates use it.
    let d = discover(&hermetic(tmp.path()).set(Var::CudaToolkitPath, &a));
    assert_eq!(
        d.selected_toolkit().unwrap().found_via.to_string(),
        "CUDA_TOOLKIT_PATH"
    );
    assert!(d.conflicts.is_empty(), "{:?}", d.conflicts);
}

/// CMake's CUDACXX naming a compiler that is not nvcc (a real g++ when the
/// machine has one, and a script printing clang's real banner): one warning
/// naming CUDACXX and what was expected; discovery goes on without it.
#[test]
fn cudacxx_naming_another_compiler_is_one_warning_and_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let a = fake_toolkit(&tmp.path().join("a"), "12.4.131", Layout::Installer);
    let clang = tmp.path().join("clang++");
    tool(
        &clang,
        "Debian clang version 14.0.6\nTarget: x86_64-pc-linux-gnu\nThread model: posix\nInstalledDir: /usr/bin\n",
        None,
    );
    let mut cases = vec![clang];
    cases.extend(
        ["/usr/bin/g++", "/usr/bin/c++"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file()),
    );
    for compiler in cases {
        let env = hermetic(tmp.path())
            .set(Var::CudaPath, &a)
            .set(Var::Cudacxx, format!("{} -std=c++17", compiler.display()));
        let d = discover(&env);
        assert_eq!(d.selected_toolkit().unwrap().root, canon(&a));
        let about: Vec<String> = d
            .conflicts
            .iter()
            .map(|c| c.message.clone())
            .chain(env.check())
            .filter(|m| m.contains("CUDACXX"))
            .collect();
        assert_eq!(about.len(), 1, "{}: {about:?}", compiler.display());
        assert!(about[0].starts_with("CUDACXX="), "{about:?}");
        assert!(about[0].contains("is not a working nvcc"), "{about:?}");
        assert!(about[0].contains("expected the path of nvcc"), "{about:?}");
    }
    // Not there at all: the same one warning.
    let env = hermetic(tmp.path())
        .set(Var::CudaPath, &a)
        .set(Var::Cudacxx, tmp.path().join("none/nvcc"));
    let d = discover(&env);
    assert_eq!(d.selected_toolkit().unwrap().root, canon(&a));
    assert!(
        d.conflicts
            .iter()
            .any(|c| c.message.contains("which is not a file") && c.code == "cuda-home-invalid"),
        "{:?}",
        d.conflicts
    );
    // The real nvcc with CMake-style arguments after it is a toolkit setting.
    if let Some(nvcc) = workspace_tests::nvcc13() {
        let env = hermetic(tmp.path()).set(Var::Cudacxx, format!("{} -ccbin g++", nvcc.display()));
        let sel = discover(&env).into_selected().unwrap();
        assert_eq!(sel.found_via.to_string(), "CUDACXX");
        assert_eq!(sel.version, Some(v("13.0.88")));
    }
}

#[test]
fn broken_lower_explicit_setting_is_reported_not_fatal() {
    let tmp = tempfile::tempdir().unwrap();
    let a = fake_toolkit(&tmp.path().join("a"), "12.4.131", Layout::Installer);
    let env = hermetic(tmp.path())
        .set(Var::CudaHome, &a)
        .set(Var::CudaPath, "/nonexistent/cuda");
    let d = discover(&env);
    assert_eq!(d.selected_toolkit().unwrap().root, canon(&a));
    assert!(
        d.conflicts
            .iter()
            .any(|c| c.code == "cuda-home-invalid" && c.message.contains("CUDA_PATH")),
        "{:?}",
        d.conflicts
    );
}

// ---------------------------------------------------------------- bad input

fn explicit_error(env: Env) -> cuda_toolchain::Error {
    match toolkit::discover(&env, &DiscoverOptions::default()) {
        Ok(d) => panic!("expected an error, got {:?}", d.candidates),
        Err(e) => {
            assert!(!e.help.is_empty(), "no help in {e}");
            e
        }
    }
}

#[test]
fn cuda_home_bad_values_are_errors_naming_the_variable() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    // A good toolkit is findable elsewhere: a broken explicit setting must not fall back to it.
    let good = fake_toolkit(&t.join("usr/local/cuda"), "12.4.131", Layout::Installer);
    let base = hermetic(t).set(Var::Path, good.join("bin"));
    let cases: Vec<(std::ffi::OsString, &str)> = vec![
        ("".into(), "empty string"),
        ("   ".into(), "empty string"),
        ("cuda-12.4".into(), "relative path"),
        (t.join("missing").into(), "does not exist"),
        (good.join("bin/nvcc").into(), "is a file"),
        (t.join("usr").into(), "has no bin/nvcc"),
    ];
    for (value, expected) in cases {
        let e = explicit_error(base.clone().set(Var::CudaHome, &value));
        assert_eq!(e.code, "cuda-home-invalid", "{e}");
        assert!(e.message.contains("CUDA_HOME"), "{e}");
        assert!(e.message.contains(expected), "{value:?}: {e}");
        assert!(e.help.iter().any(|h| h.contains("CUDA_HOME")), "{e}");
    }
    // Helpful guesses: the bin dir, or nvcc itself.
    let e = explicit_error(base.clone().set(Var::CudaHome, good.join("bin")));
    assert!(
        e.help
            .iter()
            .any(|h| h.contains(&format!("CUDA_HOME={}", good.display()))),
        "{e}"
    );
    let e = explicit_error(base.clone().set(Var::CudaHome, good.join("bin/nvcc")));
    assert!(e.help.iter().any(|h| h.contains("NVCC=")), "{e}");
    // A dangling symlink.
    symlink(t.join("gone"), t.join("cuda-link")).unwrap();
    let e = explicit_error(base.set(Var::CudaHome, t.join("cuda-link")));
    assert!(
        e.message.contains("symlink") && e.message.contains("gone"),
        "{e}"
    );
}

#[test]
fn nvcc_variable_bad_values() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let root = fake_toolkit(&t.join("cuda"), "12.4.131", Layout::Installer);
    let base = hermetic(t).set(Var::Path, root.join("bin"));
    for (value, expected) in [
        ("", "empty"),
        ("bin/nvcc", "relative"),
        ("/nonexistent/nvcc", "does not exist"),
        ("no-such-nvcc", "not on PATH"),
    ] {
        let e = explicit_error(base.clone().set(Var::Nvcc, value));
        assert!(
            e.message.contains("NVCC") && e.message.contains(expected),
            "{e}"
        );
    }
    let e = explicit_error(base.clone().set(Var::Nvcc, root.join("bin")));
    assert!(e.message.contains("directory"), "{e}");
    // A bare name is looked up on PATH, like CC=gcc.
    let d = discover(&base.clone().set(Var::Nvcc, "nvcc"));
    assert_eq!(
        d.selected_toolkit().unwrap().found_via,
        FoundVia::EnvVar("NVCC".into())
    );
}

#[test]
fn nvcc_not_executable() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fake_toolkit(&tmp.path().join("cuda"), "12.4.131", Layout::Installer);
    let nvcc = root.join("bin/nvcc");
    std::fs::set_permissions(&nvcc, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = explicit_error(hermetic(tmp.path()).set(Var::CudaHome, &root));
    assert_eq!(e.code, "nvcc-not-executable");
    assert!(
        e.message.contains("CUDA_HOME") && e.message.contains(&canon(&nvcc).display().to_string()),
        "{e}"
    );
    assert!(e.help.iter().any(|h| h.contains("chmod +x")), "{e}");
    // Found by a search rule instead, it is a problem on the candidate.
    let d = discover(&hermetic(tmp.path()).set(Var::Path, root.join("bin")));
    assert_eq!(d.candidates[0].problems[0].code, "nvcc-not-executable");
    assert_eq!(d.selected, None);
}

#[test]
fn nvcc_that_hangs_crashes_or_prints_garbage() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    for (name, body, code) in [
        ("hangs", "sleep 30", "nvcc-timeout"),
        (
            "crashes",
            "echo 'Segmentation fault' >&2; kill -SEGV $$",
            "nvcc-failed",
        ),
        (
            "fails",
            "echo 'nvcc: error while loading shared libraries' >&2; exit 127",
            "nvcc-failed",
        ),
        (
            "garbage",
            "head -c 64 /dev/urandom | od -An",
            "nvcc-bad-version",
        ),
    ] {
        let root = fake_toolkit(&t.join(name), "12.4.131", Layout::Installer);
        write_script(&root.join("bin/nvcc"), body);
        let start = Instant::now();
        let e = explicit_error(
            hermetic(t)
                .set(Var::CudaHome, &root)
                .set(Var::CudaBuildTimeout, "0.5"),
        );
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{name} took {:?}",
            start.elapsed()
        );
        assert_eq!(e.code, code, "{name}: {e}");
        assert!(
            e.message.contains("CUDA_HOME") && e.message.contains(name),
            "{e}"
        );
        // Found by a search rule, the same nvcc is a problem on its candidate, not an error.
        let d = discover(
            &hermetic(t)
                .set(Var::Path, root.join("bin"))
                .set(Var::CudaBuildTimeout, "0.5"),
        );
        assert_eq!(d.candidates[0].problems[0].code, code, "{name}");
    }
}

#[test]
fn malformed_version_json_is_reported_with_the_path() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fake_toolkit(&tmp.path().join("cuda"), "12.4.131", Layout::Installer);
    write(&root.join("version.json"), "{\"cuda\": {\"version\": ");
    let d = discover(&hermetic(tmp.path()).set(Var::CudaHome, &root));
    let tk = d.selected_toolkit().unwrap();
    assert_eq!(
        tk.version,
        Some(v("12.4.131")),
        "nvcc --version still answers"
    );
    let p = tk
        .problems
        .iter()
        .find(|p| p.code == "toolkit-version-json")
        .expect("problem");
    assert!(
        p.message.contains("version.json") && p.message.contains("not valid JSON"),
        "{}",
        p.message
    );
    assert!(p.fix.is_some());
}

#[test]
fn version_files_are_cross_checked_against_nvcc() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fake_toolkit(&tmp.path().join("cuda"), "12.4.131", Layout::Installer);
    write(
        &root.join("version.json"),
        r#"{"cuda": {"version": "12.6.3"}, "cuda_nvcc": {"version": "12.6.85"}}"#,
    );
    let d = discover(&hermetic(tmp.path()).set(Var::CudaHome, &root));
    let p = d.candidates[0]
        .problems
        .iter()
        .find(|p| p.code == "toolkit-version-mismatch")
        .expect("mismatch");
    assert!(
        p.message.contains("12.6.85") && p.message.contains("12.4.131"),
        "{}",
        p.message
    );
    // A stale version.json does not speak for ptxas and cicc: they are asked,
    // agree with nvcc, and the toolkit is not called a mixed release.
    assert!(
        errors(&d.candidates[0]).is_empty(),
        "{:?}",
        d.candidates[0].problems
    );
    std::fs::remove_file(root.join("version.json")).unwrap();
    write(&root.join("version.txt"), "CUDA Version 11.2.152\n");
    let d = discover(&hermetic(tmp.path()).set(Var::CudaHome, &root));
    assert!(d.candidates[0]
        .problems
        .iter()
        .any(|p| p.code == "toolkit-version-mismatch"));
}

#[test]
fn spaces_and_non_ascii_in_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fake_toolkit(
        &tmp.path().join("Program Files/CUDA ü 12.4"),
        "12.4.131",
        Layout::Installer,
    );
    let d = discover(&hermetic(tmp.path()).set(Var::CudaHome, &root));
    let tk = d.selected_toolkit().unwrap();
    assert_eq!(tk.version, Some(v("12.4.131")));
    assert_eq!(
        tk.include_dirs,
        vec![canon(&root).join("targets/x86_64-linux/include")]
    );
    assert!(tk.problems.is_empty(), "{:?}", tk.problems);
}

// ---------------------------------------------------------------- integrity

#[test]
fn missing_or_unusable_parts_are_toolkit_incomplete() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let check = |name: &str, damage: &dyn Fn(&Path), expect: &str| {
        let root = fake_toolkit(&t.join(name), "12.4.131", Layout::Installer);
        damage(&root);
        let d = discover(&hermetic(t).set(Var::CudaHome, &root));
        let errs = errors(&d.candidates[0]);
        assert!(
            errs.iter()
                .any(|e| e.starts_with("toolkit-incomplete") && e.contains(expect)),
            "{name}: {errs:?}"
        );
        let e = d.into_selected().unwrap_err();
        assert_eq!(e.code, "toolkit-incomplete");
        assert!(!e.help.is_empty());
    };
    check(
        "no-cicc",
        &|r| std::fs::remove_file(r.join("nvvm/bin/cicc")).unwrap(),
        "`cicc` is missing",
    );
    check(
        "no-nvlink",
        &|r| std::fs::remove_file(r.join("bin/nvlink")).unwrap(),
        "`nvlink` is missing",
    );
    check(
        "no-fatbinary",
        &|r| std::fs::remove_file(r.join("bin/fatbinary")).unwrap(),
        "`fatbinary` is missing",
    );
    check(
        "ptxas-not-exec",
        &|r| {
            std::fs::set_permissions(r.join("bin/ptxas"), std::fs::Permissions::from_mode(0o644))
                .unwrap()
        },
        "ptxas` is not executable",
    );
    check(
        "no-runtime-h",
        &|r| std::fs::remove_file(r.join("targets/x86_64-linux/include/cuda_runtime.h")).unwrap(),
        "cuda_runtime.h",
    );
    check(
        "no-cccl",
        &|r| std::fs::remove_dir_all(r.join("targets/x86_64-linux/include/nv")).unwrap(),
        "nv/target",
    );
}

#[test]
fn cicc_or_ptxas_from_another_release_is_a_mixed_release() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fake_toolkit(&tmp.path().join("cuda"), "13.0.88", Layout::Wheel);
    write_script(&root.join("nvvm/bin/cicc"), "# Cuda compilation tools, release 13.5, V13.5.37, Build cuda_13.5.r13.5/compiler.39125733_0\nexit 1");
    let d = discover(&hermetic(tmp.path()).set(Var::CudaHome, &root));
    let errs = errors(&d.candidates[0]);
    assert!(
        errs.iter().any(|e| e.starts_with("toolkit-incomplete")
            && e.contains("cicc 13.5.37")
            && e.contains("Unsupported .version")),
        "{errs:?}"
    );
    // ptxas from 12.9 (its real --version text) under nvcc 13.0.
    let root = fake_toolkit(&tmp.path().join("cuda2"), "13.0.88", Layout::Wheel);
    tool(
        &root.join("bin/ptxas"),
        &fixture("ptxas-version-12.9.86.txt"),
        None,
    );
    let d = discover(&hermetic(tmp.path()).set(Var::CudaHome, &root));
    let errs = errors(&d.candidates[0]);
    assert!(errs.iter().any(|e| e.contains("ptxas 12.9.86")), "{errs:?}");
}

#[test]
fn real_ptxas_of_other_releases_is_caught() {
    let (Some(root), Some(p12), Some(p11)) = (
        workspace_tests::cu13_root(),
        workspace_tests::ptxas12(),
        workspace_tests::ptxas11(),
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    for (ptxas, ver) in [(p12, "12.9.86"), (p11, "11.8.89")] {
        // A copy of the real 13.0 layout (symlinked parts) with a real older ptxas.
        let fake = tmp.path().join(format!("cu13-with-{ver}"));
        std::fs::create_dir_all(fake.join("bin")).unwrap();
        for part in ["include", "lib", "nvvm"] {
            symlink(root.join(part), fake.join(part)).unwrap();
        }
        // nvcc must really live here (a symlink would resolve to the real toolkit).
        for f in ["nvcc", "nvcc.profile"] {
            let (from, to) = (root.join("bin").join(f), fake.join("bin").join(f));
            if std::fs::hard_link(&from, &to).is_err() {
                std::fs::copy(&from, &to).unwrap();
            }
        }
        for f in ["fatbinary", "nvlink", "cudafe++"] {
            symlink(root.join("bin").join(f), fake.join("bin").join(f)).unwrap();
        }
        symlink(&ptxas, fake.join("bin/ptxas")).unwrap();
        let d = discover(&hermetic(tmp.path()).set(Var::CudaHome, &fake));
        let tk = &d.candidates[0];
        assert_eq!(tk.version, Some(v("13.0.88")));
        let errs = errors(tk);
        assert!(
            errs.iter()
                .any(|e| e.starts_with("toolkit-incomplete")
                    && e.contains(&format!("ptxas {ver}"))),
            "{errs:?}"
        );
    }
}

// ---------------------------------------------------------------- caching

#[test]
fn nvcc_version_runs_once_per_build() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let root = fake_toolkit(&t.join("cuda"), "12.4.131", Layout::Installer);
    let count = t.join("count");
    tool(&root.join("bin/nvcc"), &nvcc_text("12.4.131"), Some(&count));
    let cache = t.join("cache");
    let env = hermetic(t)
        .set(Var::CudaHome, &root)
        .set(Var::CudaBuildCacheDir, &cache);
    for _ in 0..3 {
        assert_eq!(discover(&env).candidates[0].version, Some(v("12.4.131")));
    }
    assert_eq!(std::fs::read_to_string(&count).unwrap().lines().count(), 1);
    // A script's answer depends on what it runs, so it is not kept on disk.
    assert!(
        !cache.join("tool-versions").exists()
            || std::fs::read_dir(cache.join("tool-versions"))
                .unwrap()
                .all(|e| {
                    !std::fs::read_to_string(e.unwrap().path())
                        .unwrap()
                        .contains("V12.4.131")
                })
    );
    // A changed nvcc (new size) is asked again.
    tool(&root.join("bin/nvcc"), &nvcc_text("13.0.88"), Some(&count));
    assert_eq!(discover(&env).candidates[0].version, Some(v("13.0.88")));
    assert_eq!(std::fs::read_to_string(&count).unwrap().lines().count(), 2);
}

/// A wheel toolkit's tree outside any site-packages: its binaries hard-linked
/// (symlinks would lead back into the site), headers and libraries symlinked.
fn linked_copy(root: &Path, copy: &Path) -> PathBuf {
    for rel in ["bin", "nvvm/bin"] {
        std::fs::create_dir_all(copy.join(rel)).unwrap();
        for e in std::fs::read_dir(root.join(rel)).unwrap().flatten() {
            if e.path().is_file() {
                std::fs::hard_link(e.path(), copy.join(rel).join(e.file_name())).unwrap();
            }
        }
    }
    for rel in ["include", "lib"] {
        symlink(root.join(rel), copy.join(rel)).unwrap();
    }
    copy.to_path_buf()
}

/// The on-disk cache entries discovery wrote, as text.
fn cache_files(cache: &Path) -> Vec<String> {
    std::fs::read_dir(cache.join("tool-versions"))
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect()
}

#[test]
fn real_nvcc_answers_are_cached_on_disk() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache dir");
    let env = hermetic(tmp.path())
        .set(Var::CudaHome, &root)
        .set(Var::CudaBuildCacheDir, &cache);
    assert_eq!(discover(&env).candidates[0].version, Some(v("13.0.88")));
    let files = cache_files(&cache);
    assert!(
        files
            .iter()
            .any(|f| f.contains("nvcc: NVIDIA (R) Cuda compiler driver") && f.contains("V13.0.88")),
        "{files:?}"
    );
    // In a wheel install the wheels' RECORDs say which release ptxas and cicc
    // came from: neither is run nor scanned (the cold path's main cost).
    assert!(
        !files
            .iter()
            .any(|f| f.contains("Ptx optimizing assembler") || f.contains("<scan>")),
        "{files:?}"
    );

    // The same binaries outside a site-packages (no wheel answers for them):
    // ptxas is asked and cicc is scanned, both cached.
    let copy = linked_copy(&root, &tmp.path().join("cuda copy"));
    let env = hermetic(tmp.path())
        .set(Var::CudaHome, &copy)
        .set(Var::CudaBuildCacheDir, &cache);
    let d = discover(&env);
    assert_eq!(d.candidates[0].version, Some(v("13.0.88")));
    assert!(
        errors(&d.candidates[0]).is_empty(),
        "{:?}",
        d.candidates[0].problems
    );
    let files = cache_files(&cache);
    assert!(
        files
            .iter()
            .any(|f| f.contains("ptxas: NVIDIA (R) Ptx optimizing assembler")),
        "{files:?}"
    );
    assert!(
        files
            .iter()
            .any(|f| f.contains("<scan>") && f.contains("\"output\":\"13.0.88\"")),
        "{files:?}"
    );
}
