//! Making one source's [`Job`] (a step of the plan stage): the arguments
//! every nvcc call for it shares, the calls and outputs its output kind
//! needs, and its flags key.

use crate::compile::incremental::hash::KeyHasher;
use crate::compile::output::artifacts::OutputKind;
use crate::compile::run::context::Run;
use crate::compile::run::job::{Call, Job};
use crate::compile::run::module_anchor;
use crate::compile::settings::presets;
use cuda_toolchain::arch::Arch;
use cuda_toolchain::env::Var;
use cuda_toolchain::fsutil;
use cuda_toolchain::plan::ArchPlan;
use cuda_toolchain::toolkit::Toolkit;
use cuda_toolchain::Error;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// A job's nvcc calls, its outputs (role, final path) and the archs it builds.
type CallsAndOutputs = (Vec<Call>, Vec<(String, PathBuf)>, Vec<String>);

/// A job's include directories, absolute: the crate's own (`-I`), and its
/// header dependencies' (`-isystem`).
pub(crate) struct IncludeDirs<'a> {
    pub(crate) user: &'a [PathBuf],
    pub(crate) system: &'a [PathBuf],
}

impl Run<'_> {
    /// One source as a job: `name` is its Rust module name, `file_name` the
    /// stem of its output files.
    pub(crate) fn job(
        &self,
        tk: &Toolkit,
        source: &Path,
        name: &str,
        file_name: &str,
        plan: ArchPlan,
        dirs: IncludeDirs<'_>,
    ) -> Result<Job, Error> {
        let (includes, system_includes) = (dirs.user, dirs.system);
        let mut args = self.shared_args(tk, source, includes, system_includes);
        let (calls, outputs, archs) = self.calls_and_outputs(&plan, file_name)?;
        let source_arg = self.nvcc_path(source);
        args.extend(module_id_path(&source_arg));
        let anchor = self
            .spec
            .stable_module_ids
            .then(|| module_anchor::symbol(&self.env, &self.spec.module_name, &source_arg));
        let flags_key = self.flags_key(tk, &args, &calls, &source_arg, anchor.as_deref());
        let split = self.split_count(&args, source);
        Ok(Job {
            source: source.to_path_buf(),
            source_arg,
            display: self.display_path(source),
            name: name.to_string(),
            archs,
            args,
            calls,
            outputs,
            flags_key,
            includes: includes.iter().chain(system_includes).cloned().collect(),
            split,
            anchor,
        })
    }

    /// The source's `--split-compile` count from its arguments (the last
    /// one given; 1 when none). A `0` (one part per CPU) makes the output
    /// depend on the machine: warned, and counted as one slot.
    fn split_count(&self, args: &[OsString], source: &Path) -> u32 {
        let mut n = None;
        let mut it = args.iter().map(|a| a.to_string_lossy());
        while let Some(a) = it.next() {
            let value = match a.split_once('=') {
                Some(("--split-compile" | "-split-compile", v)) => Some(v.to_string()),
                None if a == "--split-compile" || a == "-split-compile" => {
                    it.next().map(|v| v.into_owned())
                }
                _ => continue,
            };
            n = value.and_then(|v| v.trim().parse::<u32>().ok());
        }
        if n == Some(0) {
            self.warn(format!(
                "cuda-build: `{}` is compiled with nvcc's --split-compile 0 (one part per CPU of the building machine); the split count changes the output, so its kernels differ between machines: use Build::split_compile(n) with a fixed n",
                self.display_path(source)
            ));
        }
        n.filter(|&n| n > 0).unwrap_or(1)
    }

    /// A path as nvcc is given it: relative to the package directory (nvcc
    /// runs there) when inside it, so `__FILE__` is the same in every
    /// checkout (the internal names: [`module_id_path`]).
    fn nvcc_path(&self, p: &Path) -> PathBuf {
        let n = fsutil::normalize(p);
        match n.strip_prefix(&self.base) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel.to_path_buf(),
            Ok(_) => PathBuf::from("."),
            Err(_) => n,
        }
    }

    /// The arguments every nvcc call for `source` shares: `-ccbin`, `-std`,
    /// `-I`, `-isystem` (header dependencies, then the toolkit's include
    /// dirs: warnings from their headers are not the crate's), `-D`, the
    /// build's flags and the source's own.
    fn shared_args(
        &self,
        tk: &Toolkit,
        source: &Path,
        includes: &[PathBuf],
        system_includes: &[PathBuf],
    ) -> Vec<OsString> {
        let spec = self.spec;
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
        // nvcc passes `-isystem` to the host compiler's passes, host and
        // device; a dir given with `-I` too (the toolkit's, by nvcc.profile)
        // is then searched as a system dir, in the same order.
        for inc in system_includes.iter().chain(&tk.include_dirs) {
            args.push("-isystem".into());
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
        // The split count: the source's own, else the build's.
        let split = spec
            .file_splits
            .iter()
            .rev()
            .find(|(f, _)| self.base.join(f) == source)
            .map(|(_, n)| *n)
            .or(spec.split_compile);
        if let Some(n) = split.filter(|&n| n > 1) {
            args.push("--split-compile".into());
            args.push(n.to_string().into());
        }
        args.extend(presets::file_flags(spec, &self.nvcc_path(source)).map(OsString::from));
        args
    }

    /// The nvcc calls the output kind needs (one per cubin arch, else one),
    /// the outputs they write, and the archs they build.
    fn calls_and_outputs(&self, plan: &ArchPlan, stem: &str) -> Result<CallsAndOutputs, Error> {
        let top = plan
            .ptx
            .or_else(|| plan.sass.last().copied())
            .ok_or_else(|| {
                Error::new("arch-invalid", "the arch plan has no targets")
                    .with_help("set Build::arch, e.g. \"90\"")
            })?;
        let dir = &self.kernel_dir;
        Ok(match self.spec.output {
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
                if !self.msvc && self.spec.pic.unwrap_or(true) {
                    a.extend(["-Xcompiler".into(), "-fPIC".into()]);
                }
                if self.spec.rdc {
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
        })
    }

    /// The flags key: the output kind, the nvcc version, every argument
    /// (package paths as `$ROOT`), the variables nvcc reads itself, and the
    /// source's place.
    fn flags_key(
        &self,
        tk: &Toolkit,
        args: &[OsString],
        calls: &[Call],
        source_arg: &Path,
        anchor: Option<&str>,
    ) -> String {
        let mut k = KeyHasher::new("cuda-build flags v2");
        k.str(self.spec.output.as_str());
        match &tk.version {
            Some(v) => k.str(&v.to_string()),
            None => k.str(&tk.nvcc.to_string_lossy()),
        };
        for a in args {
            k.str(&self.key_arg(&a.to_string_lossy(), tk));
        }
        for (extra, role) in calls {
            k.str(role);
            for a in extra {
                k.str(&a.to_string_lossy());
            }
        }
        // nvcc reads these itself: they change the output as much as flags do.
        for v in [Var::NvccPrependFlags, Var::NvccAppendFlags] {
            k.str(self.env.get(v).unwrap_or("\u{0}unset"));
        }
        // The source's place is part of the key: nvcc sees its relative path.
        k.str(&source_arg.to_string_lossy());
        // The anchor header's path is the build's own (OUT_DIR), not an input.
        if let Some(symbol) = anchor {
            k.str("module anchor");
            k.str(symbol);
        }
        // Line info and debug info hold absolute paths (cicc's PTX `.file`
        // lines, a cubin's `.debug_line`, a host object's DWARF), which no
        // prefix map of nvcc 13 changes: such an output is keyed by where
        // the package and the toolkit are, so a checkout elsewhere (or
        // another machine, through Redis) never gets paths not its own.
        let nvcc_vars = [Var::NvccPrependFlags, Var::NvccAppendFlags]
            .map(|v| self.env.get(v).unwrap_or("").to_string());
        let flags = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .chain(
                calls
                    .iter()
                    .flat_map(|(extra, _)| extra.iter().map(|a| a.to_string_lossy().into_owned())),
            )
            .chain(
                nvcc_vars
                    .iter()
                    .flat_map(|v| v.split_whitespace().map(str::to_string)),
            );
        if flags.into_iter().any(|a| embeds_paths(&a)) {
            k.str(&self.base.to_string_lossy());
            k.str(&tk.root.to_string_lossy());
        }
        k.finish()
    }

    /// An argument as it enters the flags key: the package directory as
    /// `$ROOT`, a path in the toolkit (its include dirs) toolkit-relative.
    pub(crate) fn key_arg(&self, a: &str, tk: &Toolkit) -> String {
        if Path::new(a).starts_with(&tk.root) {
            return self.key_path(Path::new(a), tk);
        }
        let base = self.base.to_string_lossy();
        if base.len() > 1 {
            a.replace(base.as_ref(), "$ROOT")
        } else {
            a.to_string()
        }
    }
}

/// Whether an nvcc argument (or one of the values of an `-Xcompiler=…`
/// style argument) asks for line or debug info, which embeds absolute
/// source paths in the output.
fn embeds_paths(arg: &str) -> bool {
    arg.split(['=', ',']).any(|a| {
        matches!(
            a,
            "-lineinfo"
                | "--generate-line-info"
                | "-G"
                | "--device-debug"
                | "-g"
                | "--debug"
                | "/Zi"
                | "/Z7"
        ) || ["-ggdb", "-gdwarf", "-g1", "-g2", "-g3"]
            .iter()
            .any(|p| a.starts_with(p))
    })
}

/// nvcc names a source's internal-linkage entities (anonymous namespaces,
/// non-inlined `static __device__` functions) after a hash of its absolute
/// path, which it hands cudafe++ and cicc as `--orig_src_path_name`: PTX,
/// cubins and host symbols then differ between checkouts. Naming the
/// package-relative path last (the last one wins) makes them the same
/// everywhere; `.file` lines for line info keep the absolute path. A source
/// outside the package, or whose path has other characters than
/// `[A-Za-z0-9/._+-]`, keeps nvcc's default: nvcc splits `-X` values at
/// commas and hands them on unquoted, so a space or quote would break them.
fn module_id_path(source_arg: &Path) -> Vec<OsString> {
    let Some(rel) = source_arg.to_str() else {
        return Vec::new();
    };
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._+-".contains(c);
    if source_arg.is_absolute() || !rel.chars().all(plain) {
        return Vec::new();
    }
    // One value per tool (nvcc splits it at the comma): a separate path
    // argument would read as a second input to sccache's nvcc parser.
    let value = format!("--orig_src_path_name,{rel}");
    ["-Xcudafe", "-Xcicc"]
        .into_iter()
        .flat_map(|tool| [tool.into(), value.clone().into()])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_id_path_names_plain_relative_paths_only() {
        let args: Vec<String> = module_id_path(Path::new("src/cuda/a_b-1.cu"))
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        assert_eq!(
            args,
            [
                "-Xcudafe",
                "--orig_src_path_name,src/cuda/a_b-1.cu",
                "-Xcicc",
                "--orig_src_path_name,src/cuda/a_b-1.cu"
            ]
        );
        for kept in ["/abs/k.cu", "cu dir/k.cu", "a,b.cu", "it's.cu"] {
            assert!(module_id_path(Path::new(kept)).is_empty(), "{kept}");
        }
    }
}
