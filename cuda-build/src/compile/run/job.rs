//! One source as a job: its nvcc arguments (paths relative to the package,
//! so outputs do not depend on where the checkout lives), its outputs, and
//! the keys that decide whether it must be compiled again.

use crate::compile::incremental::hash::KeyHasher;
use crate::compile::output::artifacts::OutputKind;
use crate::compile::run::context::Run;
use cuda_toolchain::arch::Arch;
use cuda_toolchain::env::Var;
use cuda_toolchain::fsutil;
use cuda_toolchain::plan::ArchPlan;
use cuda_toolchain::toolkit::Toolkit;
use cuda_toolchain::Error;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Extra arguments of one nvcc call, and its output's role (file name in the cache).
pub(crate) type Call = (Vec<OsString>, String);

/// One source to build.
pub(crate) struct Job {
    pub source: PathBuf,
    /// The source as nvcc is given it: relative to the package when inside it.
    pub source_arg: PathBuf,
    pub display: String,
    pub name: String,
    pub plan: ArchPlan,
    pub archs: Vec<String>,
    /// Arguments shared by every nvcc call for this source (no output, no arch for cubins).
    pub args: Vec<OsString>,
    /// Per-call extra arguments and the output role (file name in the cache).
    pub calls: Vec<Call>,
    /// Final output path for each role.
    pub outputs: Vec<(String, PathBuf)>,
    pub flags_key: String,
    /// The build's include dirs (absolute), for [`crate::compile::run::work_estimate::Estimate`].
    pub includes: Vec<PathBuf>,
}

impl Run<'_> {
    /// A path as nvcc is given it: relative to the package directory (nvcc
    /// runs there) when inside it, so `__FILE__` and nvcc's internal names
    /// are the same in every checkout.
    pub(crate) fn nvcc_path(&self, p: &Path) -> PathBuf {
        let n = fsutil::normalize(p);
        match n.strip_prefix(&self.base) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel.to_path_buf(),
            Ok(_) => PathBuf::from("."),
            Err(_) => n,
        }
    }

    /// A path as it enters a cache key: package- and toolkit-relative where
    /// possible, so a second checkout or a moved toolkit shares entries.
    pub(crate) fn key_path(&self, p: &Path, tk: &Toolkit) -> String {
        let p = fsutil::normalize(p);
        if let Ok(rel) = p.strip_prefix(&self.base) {
            format!("$ROOT/{}", rel.display())
        } else if let Ok(rel) = p.strip_prefix(fsutil::normalize(&tk.root)) {
            format!("$CUDA/{}", rel.display())
        } else {
            p.to_string_lossy().into_owned()
        }
    }

    pub(crate) fn resolve_key_path(&self, s: &str, tk: &Toolkit) -> PathBuf {
        if let Some(rel) = s.strip_prefix("$ROOT/") {
            self.base.join(rel)
        } else if let Some(rel) = s.strip_prefix("$CUDA/") {
            tk.root.join(rel)
        } else {
            PathBuf::from(s)
        }
    }

    fn key_arg(&self, a: &str) -> String {
        let base = self.base.to_string_lossy();
        if base.len() > 1 {
            a.replace(base.as_ref(), "$ROOT")
        } else {
            a.to_string()
        }
    }

    pub(crate) fn job(
        &self,
        tk: &Toolkit,
        source: &Path,
        name: &str,
        file_name: &str,
        plan: ArchPlan,
        includes: &[PathBuf],
    ) -> Result<Job, Error> {
        let spec = self.spec;
        let stem = file_name;
        let mut args: Vec<OsString> = Vec::new();
        let ccbin = spec
            .ccbin
            .clone()
            .or_else(|| self.env.get_nonempty(Var::NvccCcbin).map(PathBuf::from));
        if let Some(c) = ccbin {
            args.push("-ccbin".into());
            args.push(c.into());
        }
        if let Some(std) = &spec.std {
            let std = std.trim();
            let std = if std.starts_with("c++") || std.starts_with("gnu++") {
                std.to_string()
            } else {
                format!("c++{std}")
            };
            args.push(format!("-std={std}").into());
        }
        for inc in includes {
            args.push("-I".into());
            args.push(self.nvcc_path(inc).into());
        }
        for (k, v) in &spec.defines {
            args.push(match v {
                Some(v) => format!("-D{k}={v}").into(),
                None => format!("-D{k}").into(),
            });
        }
        args.extend(spec.flags.iter().map(OsString::from));
        args.extend(
            spec.file_flags
                .iter()
                .filter(|(f, _)| self.base.join(f) == source)
                .map(|(_, fl)| OsString::from(fl)),
        );
        let top = plan
            .ptx
            .or_else(|| plan.sass.last().copied())
            .ok_or_else(|| {
                Error::new("arch-invalid", "the arch plan has no targets")
                    .with_help("set Build::arch, e.g. \"90\"")
            })?;
        let dir = &self.kernel_dir;
        let (calls, outputs, archs): (Vec<Call>, Vec<(String, PathBuf)>, Vec<String>) =
            match spec.output {
                OutputKind::Ptx => (
                    vec![(
                        vec![
                            "-ptx".into(),
                            format!("-arch={}", top.compute_name()).into(),
                        ],
                        "out.ptx".into(),
                    )],
                    vec![("out.ptx".into(), dir.join(format!("{stem}.ptx")))],
                    vec![top.compute_name()],
                ),
                OutputKind::Cubin => {
                    let sass: Vec<Arch> = if plan.sass.is_empty() {
                        vec![top]
                    } else {
                        plan.sass.clone()
                    };
                    let calls = sass
                        .iter()
                        .map(|a| {
                            (
                                vec!["-cubin".into(), format!("-arch={}", a.sm_name()).into()],
                                format!("{}.cubin", a.sm_name()),
                            )
                        })
                        .collect();
                    let outputs = sass
                        .iter()
                        .map(|a| {
                            (
                                format!("{}.cubin", a.sm_name()),
                                dir.join(format!("{stem}.{}.cubin", a.sm_name())),
                            )
                        })
                        .collect();
                    (calls, outputs, sass.iter().map(Arch::sm_name).collect())
                }
                OutputKind::Fatbin => {
                    let mut a: Vec<OsString> = vec!["-fatbin".into()];
                    a.extend(plan.gencode_flags().into_iter().map(OsString::from));
                    if plan.sass.is_empty() {
                        // PTX only: keep it uncompressed so the kernel names can be read from it.
                        a.push("-Xfatbin=-compress=false".into());
                    }
                    (
                        vec![(a, "out.fatbin".into())],
                        vec![("out.fatbin".into(), dir.join(format!("{stem}.fatbin")))],
                        plan.targets_display(),
                    )
                }
                OutputKind::StaticLib => {
                    let mut a: Vec<OsString> = vec!["-c".into()];
                    // MSVC has no -fPIC (its objects need none); cl.exe would warn on every file.
                    if !self.msvc {
                        a.extend(["-Xcompiler".into(), "-fPIC".into()]);
                    }
                    if spec.rdc {
                        a.push("-rdc=true".into());
                    }
                    a.extend(plan.gencode_flags().into_iter().map(OsString::from));
                    let obj = if self.msvc { "obj" } else { "o" };
                    (
                        vec![(a, format!("out.{obj}"))],
                        vec![(format!("out.{obj}"), dir.join(format!("{stem}.{obj}")))],
                        plan.targets_display(),
                    )
                }
            };
        let mut k = KeyHasher::new("cuda-build flags v2");
        k.str(spec.output.as_str());
        match &tk.version {
            Some(v) => k.str(&v.to_string()),
            None => k.str(&tk.nvcc.to_string_lossy()),
        };
        for a in &args {
            k.str(&self.key_arg(&a.to_string_lossy()));
        }
        for (extra, role) in &calls {
            k.str(role);
            for a in extra {
                k.str(&a.to_string_lossy());
            }
        }
        // nvcc reads these itself: they change the output as much as flags do.
        for v in [Var::NvccPrependFlags, Var::NvccAppendFlags] {
            k.str(self.env.get(v).unwrap_or("\u{0}unset"));
        }
        let source_arg = self.nvcc_path(source);
        // The source's place is part of the key: nvcc sees its relative path.
        k.str(&source_arg.to_string_lossy());
        Ok(Job {
            source: source.to_path_buf(),
            source_arg,
            display: self.display_path(source),
            name: name.to_string(),
            plan,
            archs,
            args,
            calls,
            outputs,
            flags_key: k.finish(),
            includes: includes.to_vec(),
        })
    }

    /// The full key: flags plus every input's content.
    pub(crate) fn full_key(&self, tk: &Toolkit, job: &Job, deps: &[PathBuf]) -> String {
        let mut k = KeyHasher::new("cuda-build object v1");
        k.str(&job.flags_key);
        self.hashes.prefetch(deps);
        for d in deps {
            k.str(&self.key_path(d, tk));
            k.str(self.hashes.get(d).as_deref().unwrap_or("missing"));
        }
        k.finish()
    }

    /// The key of the dependency index: flags, the source's place and content.
    pub(crate) fn deps_key(&self, tk: &Toolkit, job: &Job) -> Option<String> {
        let mut k = KeyHasher::new("cuda-build deps v1");
        k.str(&job.flags_key);
        k.str(&self.key_path(&job.source, tk));
        k.str(&self.hashes.get(&job.source)?);
        Some(k.finish())
    }

    /// The key of a job's duration record: its flags and the source's place.
    pub(crate) fn duration_key(&self, tk: &Toolkit, job: &Job) -> String {
        let mut k = KeyHasher::new("cuda-build duration v1");
        k.str(&job.flags_key);
        k.str(&self.key_path(&job.source, tk));
        k.finish()
    }
}
