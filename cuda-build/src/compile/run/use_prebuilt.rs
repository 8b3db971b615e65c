//! Shipped kernel images in the engine's stages: the plan stage loads them
//! (and, with no toolkit found, plans with a stand-in naming their nvcc
//! version), the reuse stage settles a job from them when the manifest
//! matches what nvcc would compile (`prebuilt/serve.rs`), or says why it
//! cannot be compiled either: no nvcc, or `CUDA_BUILD_PREBUILT=require`.

use crate::compile::incremental::manifest::{Entry, Manifest, Stamp};
use crate::compile::output::artifacts::OutputKind;
use crate::compile::prebuilt::in_use::InUse;
use crate::compile::prebuilt::manifest::Record;
use crate::compile::prebuilt::origin::{self, Origin};
use crate::compile::prebuilt::policy::policy;
use crate::compile::prebuilt::serve::{self, Want};
use crate::compile::prebuilt::shipped::Shipped;
use crate::compile::prebuilt::staging;
use crate::compile::prebuilt::stored::{self, RestoreError};
use crate::compile::run::context::{JobDone, Outcome, Run, Tools};
use crate::compile::run::job::Job;
use crate::compile::settings::host_toolchain::triples;
use cuda_toolchain::env::Var;
use cuda_toolchain::metadata::prebuilt::Policy;
use cuda_toolchain::toolkit::Toolkit;
use cuda_toolchain::Error;
use std::path::PathBuf;

/// The manifest key of an entry settled from shipped images: this prefix,
/// then the images' SHA-256s.
pub(crate) const KEY_PREFIX: &str = "prebuilt:";

/// Why no shipped image settles a job.
#[derive(Debug, Clone)]
pub(crate) struct NotServed {
    pub code: &'static str,
    pub what: String,
    pub help: String,
}

/// A job as the manifest records it: the parts that must match.
pub(crate) struct Identity {
    /// The source, package-relative with `/` (None: outside the package).
    pub source: Option<String>,
    /// The target triple (static libraries only).
    pub target: Option<String>,
    pub flags: Vec<String>,
    pub defines: Vec<String>,
}

impl Run<'_> {
    /// The policy, the staging folder under `cargo cuda prebuild`, and the
    /// images this build may use. A manifest that cannot be read is kept
    /// as the reason (the build compiles, or fails naming it without nvcc).
    pub(crate) fn prebuilt_in_use(&self) -> Result<InUse, Error> {
        let (policy, policy_from) = policy(&self.env, &self.metadata)?;
        let record_into = self
            .env
            .get_os(Var::CudaBuildPrebuiltRecord)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|d| staging::records(d, &self.base));
        let mut in_use = InUse::new(policy, policy_from, record_into.clone());
        if policy == Policy::Never {
            return Ok(in_use);
        }
        let loaded = match &record_into {
            Some(d) => Shipped::load_staging(d).map(Some),
            None => Shipped::load(&self.base),
        };
        match loaded {
            Ok(s) => in_use.shipped = s,
            Err(e) => in_use.load_error = Some(e),
        }
        Ok(in_use)
    }

    /// No toolkit was found (`why`): a stand-in that names the shipped
    /// images' nvcc version, so jobs are planned and matched as that nvcc
    /// would compile them. Nothing is compiled with it: a job the images do
    /// not settle fails, naming what differs. None without shipped images.
    pub(crate) fn toolkit_for_prebuilt(&self, in_use: &mut InUse, why: &Error) -> Option<Toolkit> {
        let tk = in_use.shipped.as_ref()?.stand_in_toolkit();
        in_use.no_nvcc = Some(why.clone());
        Some(tk)
    }

    /// A job's identity: its arguments without `-ccbin` (the host compiler
    /// is recorded, not matched), arch flags (the plan is matched by the run
    /// rules), the toolkit's include dirs, and defines (matched apart);
    /// package paths relative to it, the toolkit's and the store's as
    /// `$CUDA` and `$STORE`.
    pub(crate) fn identity(&self, tools: &Tools, job: &Job) -> Identity {
        let store = cuda_toolchain::toolkit::store::root(&self.env);
        let place = |a: &str| -> String {
            let mut a = self.key_arg(a, &tools.tk);
            for (root, name) in [
                (Some(tools.tk.root.clone()), "$CUDA"),
                (store.clone(), "$STORE"),
            ] {
                if let Some(r) = root.filter(|r| r.as_os_str().len() > 1) {
                    a = a.replace(&*r.to_string_lossy(), name);
                }
            }
            a
        };
        let (mut flags, mut defines) = (Vec::new(), Vec::new());
        let mut args = job.args.iter().map(|a| a.to_string_lossy().into_owned());
        while let Some(a) = args.next() {
            match a.as_str() {
                "-ccbin" => {
                    args.next();
                }
                // The toolkit's own include dirs follow from the toolkit
                // (matched by its nvcc version), and a build without nvcc
                // has none to name: they are not part of the identity.
                "-I" | "-isystem" => {
                    let dir = place(&args.next().unwrap_or_default());
                    if dir.starts_with("$CUDA") {
                        continue;
                    }
                    if a == "-I" {
                        flags.push(format!("-I{dir}"));
                    } else {
                        flags.extend([a, dir]);
                    }
                }
                d if d.starts_with("-D") => defines.push(d.to_string()),
                _ => flags.push(place(&a)),
            }
        }
        if let Some((extra, _)) = job.calls.first() {
            for a in extra.iter().map(|a| a.to_string_lossy()) {
                let arch = a.starts_with("-arch=")
                    || a.starts_with("-gencode=")
                    || a == "-Xfatbin=-compress=false";
                if !arch {
                    flags.push(a.into_owned());
                }
            }
        }
        for v in [Var::NvccPrependFlags, Var::NvccAppendFlags] {
            if let Some(value) = self.env.get_nonempty(v) {
                flags.push(format!("{}={value}", v.name()));
            }
        }
        // The pre-included anchor header lives in OUT_DIR: its symbol says it all.
        if let Some(symbol) = &job.anchor {
            flags.push(format!("-include <{symbol}>"));
        }
        let source = job
            .source_arg
            .is_relative()
            .then(|| slash(&job.source_arg.to_string_lossy()));
        let target = (self.spec.output == OutputKind::StaticLib).then(|| {
            self.spec
                .layout
                .target
                .clone()
                .unwrap_or_else(|| triples(&self.env).0)
        });
        Identity {
            source,
            target,
            flags,
            defines,
        }
    }

    /// The job settled from shipped images: every output written from an
    /// image that serves it, checked against its SHA-256. `Ok(Err)`: why
    /// not (nothing shipped: None); `Err`: writing an output failed.
    pub(crate) fn serve_prebuilt(
        &self,
        tools: &Tools,
        job: &Job,
    ) -> Result<Result<JobDone, Option<NotServed>>, Error> {
        let in_use = &tools.prebuilt;
        let Some(shipped) = &in_use.shipped else {
            return Ok(Err(None));
        };
        let not = |what: String, help: &str| {
            Ok(Err(Some(NotServed {
                code: "prebuilt-mismatch",
                what,
                help: help.to_string(),
            })))
        };
        if self.spec.rdc && in_use.no_nvcc.is_some() {
            return not(
                format!("`{}` is relocatable device code (rdc), whose library needs nvcc's device-link step", job.display),
                "install a CUDA toolkit, or build the library without rdc",
            );
        }
        let id = self.identity(tools, job);
        let Some(source) = &id.source else {
            return not(
                format!(
                    "`{}` is outside the package, so no shipped image is for it",
                    job.display
                ),
                "compile it with nvcc",
            );
        };
        let sha_of = |p: &str| self.hashes.get(&self.base.join(p));
        let mut picks: Vec<(&PathBuf, &Record)> = Vec::new();
        for (role, path) in &job.outputs {
            let targets = role_targets(job, role);
            let want = Want {
                module: &self.spec.module_name,
                source,
                kind: self.spec.output.as_str(),
                role,
                target: id.target.as_deref(),
                flags: &id.flags,
                defines: &id.defines,
                targets: &targets,
            };
            match serve::find(&shipped.records, &want, &sha_of) {
                Ok(r) => picks.push((path, r)),
                Err(m) => return not(m.what, &m.help),
            }
        }
        for (path, r) in &picks {
            self.injected_fault(path)?;
            match stored::restore(&shipped.dir, r, path) {
                Ok(()) => {}
                Err(RestoreError::Write(e)) => return Err(e),
                Err(RestoreError::Refused(why)) => {
                    return Ok(Err(Some(NotServed {
                        code: "prebuilt-image-refused",
                        what: format!("{why}; it was refused"),
                        help: "get the package again; `cargo cuda prebuild --verify` in the package reports every such file".into(),
                    })))
                }
            }
        }
        in_use.note_served(picks.len());
        let mut deps: Vec<PathBuf> = vec![job.source.clone()];
        let mut entries: Vec<String> = Vec::new();
        for (_, r) in &picks {
            let files = r.inputs.iter().map(|(p, _)| self.base.join(p));
            for d in files.chain(shipped.files_of(r)) {
                if !deps.contains(&d) {
                    deps.push(d);
                }
            }
            for e in &r.entries {
                if !entries.contains(e) {
                    entries.push(e.clone());
                }
            }
        }
        let shas: Vec<&str> = picks.iter().map(|(_, r)| r.sha256.as_str()).collect();
        let archs = match (self.spec.output, picks.first()) {
            (OutputKind::Cubin, _) | (_, None) => job.archs.clone(),
            (_, Some((_, r))) => r.targets.clone(),
        };
        let entry = Entry {
            flags_key: job.flags_key.clone(),
            key: format!("{KEY_PREFIX}{}", shas.join(",")),
            deps: deps.iter().map(|d| Stamp::input(d, &self.hashes)).collect(),
            outputs: job.outputs.iter().map(|(_, p)| Stamp::output(p)).collect(),
            entries,
            archs,
            stderr: String::new(),
        };
        Ok(Ok(JobDone {
            entry,
            outcome: Outcome::Prebuilt,
            warnings: Vec::new(),
            took: None,
            peak_memory: None,
            threads: 1,
        }))
    }

    /// Whether a job no shipped image settled may be compiled: the error
    /// when there is no nvcc or the policy is `require`; else None (with a
    /// warning when a shipped image was refused).
    pub(crate) fn prebuilt_forbids_compile(
        &self,
        tools: &Tools,
        job: &Job,
        why: Option<NotServed>,
    ) -> Option<Error> {
        let in_use = &tools.prebuilt;
        let strict = in_use.no_nvcc.is_some() || in_use.policy == Policy::Require;
        let why = why
            .or_else(|| {
                in_use.load_error.as_ref().map(|e| NotServed {
                    code: e.code,
                    what: e.message.clone(),
                    help: e.help.first().cloned().unwrap_or_default(),
                })
            })
            .or_else(|| {
                strict.then(|| NotServed {
                    code: "prebuilt-mismatch",
                    what:
                        "the package ships no prebuilt kernel images (cuda-prebuilt/manifest.jsonl)"
                            .into(),
                    help: String::new(),
                })
            });
        if let Some(no_nvcc) = &in_use.no_nvcc {
            let why = why?;
            let version = tools
                .tk
                .version
                .as_ref()
                .map(|v| format!("{}.{}", v.major, v.minor))
                .unwrap_or_else(|| "13.0".into());
            let mut e = Error::new(
                why.code,
                format!(
                    "`{}` cannot be taken from the package's prebuilt kernel images, and there is no nvcc to compile it: {}",
                    job.display, why.what
                ),
            )
            .with_detail(no_nvcc.message.clone());
            if !why.help.is_empty() {
                e = e.with_help(why.help);
            }
            return Some(e.with_help(format!(
                "or install a CUDA toolkit so it compiles (`cargo cuda toolkit install {version}`, or set CUDA_HOME)"
            )));
        }
        let why = why?;
        if in_use.policy == Policy::Require {
            let e = Error::new(
                why.code,
                format!(
                    "the prebuilt-image policy is `require` (from {}), but `{}` would be compiled: {}",
                    in_use.policy_from, job.display, why.what
                ),
            );
            let e = if why.help.is_empty() {
                e
            } else {
                e.with_help(why.help)
            };
            return Some(e.with_help(
                "or set CUDA_BUILD_PREBUILT=prefer to compile what the shipped images do not cover",
            ));
        }
        if why.code == "prebuilt-image-refused" {
            self.warn(format!(
                "cuda-build: {}; `{}` is compiled instead",
                why.what, job.display
            ));
        }
        None
    }

    /// Whether an entry recorded in OUT_DIR may still count as up to date:
    /// one settled from shipped images only while they are in use (the
    /// policy `never` compiles it).
    pub(crate) fn prebuilt_entry_allowed(&self, tools: &Tools, e: &Entry) -> bool {
        !e.key.starts_with(KEY_PREFIX) || tools.prebuilt.shipped.is_some()
    }
}

impl Run<'_> {
    /// The finish stage's part: the one line naming the manifest when this
    /// run took images from it, and the origin file `cargo cuda inspect`
    /// reads (every output still settled from shipped images; removed when
    /// none is).
    pub(crate) fn report_prebuilt(
        &self,
        tools: &Tools,
        jobs: &[Job],
        manifest: &Manifest,
    ) -> Result<(), Error> {
        let in_use = &tools.prebuilt;
        if let Some(e) = &in_use.load_error {
            self.warn(format!(
                "cuda-build: the package's prebuilt kernel images are not used: {}",
                e.message
            ));
        }
        let path = self.out_root.join(origin::FILE);
        let Some(shipped) = &in_use.shipped else {
            let _ = std::fs::remove_file(&path);
            return Ok(());
        };
        let mut origins = Vec::new();
        for job in jobs {
            let Some(e) = manifest.sources.get(&job.source) else {
                continue;
            };
            let Some(shas) = e.key.strip_prefix(KEY_PREFIX) else {
                continue;
            };
            for ((_, output), sha) in job.outputs.iter().zip(shas.split(',')) {
                if let Some(r) = shipped.records.iter().find(|r| r.sha256 == sha) {
                    origins.push(Origin {
                        manifest: shipped.manifest.clone(),
                        output: output.clone(),
                        record: r.clone(),
                    });
                }
            }
        }
        if origins.is_empty() {
            let _ = std::fs::remove_file(&path);
        } else {
            let text = origin::render(&origins);
            if std::fs::read(&path).ok().as_deref() != Some(text.as_slice()) {
                self.write_out(&path, &text)?;
            }
        }
        let served = in_use.served();
        if served > 0 {
            let nvcc = match &in_use.no_nvcc {
                Some(_) => " (no nvcc here)".to_string(),
                None => String::new(),
            };
            self.warn(format!(
                "cuda-build: build `{}` used {served} prebuilt kernel image{} from `{}`{nvcc}",
                self.spec.module_name,
                if served == 1 { "" } else { "s" },
                shipped.manifest.display()
            ));
        }
        Ok(())
    }
}

/// The targets an output role holds: a cubin's arch, else the job's.
pub(crate) fn role_targets(job: &Job, role: &str) -> Vec<String> {
    match role.strip_suffix(".cubin") {
        Some(sm) => vec![sm.to_string()],
        None => job.archs.clone(),
    }
}

/// A path with `/` separators.
pub(crate) fn slash(p: &str) -> String {
    p.replace('\\', "/")
}
