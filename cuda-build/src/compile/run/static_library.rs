//! The static library, a step of the finish stage: objects, an optional
//! device-link step, `ar`, and the link lines for cargo (cudart static,
//! shared or left to the crate). The library's key comes from the objects'
//! input keys, so a rerun that compiles nothing reads no object.

use crate::compile::incremental::hash::KeyHasher;
use crate::compile::incremental::manifest::Manifest;
use crate::compile::nvcc::runner::Runner;
use crate::compile::output::artifacts::KernelArtifact;
use crate::compile::output::validate;
use crate::compile::output::write_error::write_error;
use crate::compile::run::context::{Run, Tools};
use crate::compile::settings::host_toolchain::archiver_args;
use crate::compile::settings::spec::Cudart;
use cuda_toolchain::plan::ArchPlan;
use cuda_toolchain::Error;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

impl Run<'_> {
    /// Objects → (device link) → `lib<name>.a`, and the cargo link lines.
    /// `keys`: each kernel's full key.
    pub(crate) fn link_library(
        &self,
        tools: &Tools,
        plan: &ArchPlan,
        kernels: &[KernelArtifact],
        keys: &[String],
        manifest: &mut Manifest,
    ) -> Result<PathBuf, Error> {
        let name = &self.spec.module_name;
        let lib = self.out_root.join(format!("lib{name}.a"));
        let mut objects: Vec<PathBuf> = kernels.iter().map(|k| k.output.clone()).collect();
        let mut k = KeyHasher::new("cuda-build library v2");
        k.str(&format!("rdc={}", self.spec.rdc));
        for f in plan.gencode_flags() {
            k.str(&f);
        }
        // Each object's key covers its flags and every input's content.
        for (o, key) in objects.iter().zip(keys) {
            k.str(&o.to_string_lossy());
            k.str(key);
        }
        let key = k.finish();
        if manifest.library_key.as_deref() != Some(key.as_str()) || !lib.is_file() {
            if self.spec.rdc {
                objects.push(self.device_link(&tools.runner, plan, &objects)?);
            }
            self.archive(&lib, &objects, &tools.runner)?;
            manifest.library_key = Some(key);
        }
        self.link_lines(tools)?;
        Ok(lib)
    }

    /// `nvcc -dlink` over the relocatable objects: the device-link object.
    fn device_link(
        &self,
        runner: &Runner,
        plan: &ArchPlan,
        objects: &[PathBuf],
    ) -> Result<PathBuf, Error> {
        let name = &self.spec.module_name;
        let dlink = self.out_root.join(format!("{name}_dlink.o"));
        let mut args: Vec<OsString> = vec!["-dlink".into()];
        if !self.msvc {
            args.extend(["-Xcompiler".into(), "-fPIC".into()]);
        }
        args.extend(plan.gencode_flags().into_iter().map(OsString::from));
        args.extend(objects.iter().map(|o| o.clone().into_os_string()));
        args.push("-o".into());
        args.push(dlink.clone().into());
        runner.run(&args).map_err(|f| {
            Error::new("nvcc-failed", format!("the device-link step for `lib{name}.a` failed ({})", f.status))
                .with_detail(format!("command: {}", f.command))
                .with_detail(f.stderr)
                .with_help("relocatable device code needs every object built with rdc(true); check for undefined device symbols above")
        })?;
        Ok(dlink)
    }

    /// The archive, written beside `lib` and renamed into place once it
    /// holds every object.
    fn archive(&self, lib: &Path, objects: &[PathBuf], runner: &Runner) -> Result<(), Error> {
        self.injected_fault(lib)?;
        let tmp = cuda_toolchain::fsutil::temp_path_for(lib);
        // The archiver cc chose for TARGET (see host_toolchain.rs); `ar` when unset.
        let ar = self
            .spec
            .archiver
            .clone()
            .unwrap_or_else(|| PathBuf::from("ar"));
        let args = archiver_args(&ar, &tmp, objects);
        let out = cuda_toolchain::process::run(&ar, &args, runner.timeout);
        let ok = matches!(&out, Ok(o) if o.status.success());
        if !ok {
            let _ = std::fs::remove_file(&tmp);
            let detail = match out {
                Ok(o) => o.combined(),
                Err(e) => e.to_string(),
            };
            return Err(Error::new(
                "archive-failed",
                format!("`{}` could not create `{}`", ar.display(), lib.display()),
            )
            .with_detail(detail)
            .with_help("install binutils (ar), or set AR / AR_<target> to a working archiver; check free space in OUT_DIR"));
        }
        let bytes = std::fs::read(&tmp).unwrap_or_default();
        if let Err(why) = validate::archive(&bytes).and_then(|n| {
            if n >= objects.len() {
                Ok(n)
            } else {
                Err(format!("{n} members for {} objects", objects.len()))
            }
        }) {
            let _ = std::fs::remove_file(&tmp);
            return Err(Error::new(
                "archive-failed",
                format!(
                    "`ar` exited successfully but produced a bad `{}`: {why}",
                    lib.display()
                ),
            )
            .with_help("check that `ar` on PATH is binutils' ar, and the free space in OUT_DIR"));
        }
        std::fs::rename(&tmp, lib).map_err(|e| write_error(lib, &e))
    }

    /// The `cargo:` link lines: the library, the toolkit's lib directories,
    /// cudadevrt for rdc, cudart as chosen, and the C++ runtime.
    fn link_lines(&self, tools: &Tools) -> Result<(), Error> {
        let name = &self.spec.module_name;
        self.cargo(&format!(
            "rustc-link-search=native={}",
            self.out_root.display()
        ));
        let kind = self.spec.layout.static_link_kind()?;
        self.cargo(&format!("rustc-link-lib={kind}={name}"));
        for d in &tools.tk.lib_dirs {
            self.cargo(&format!("rustc-link-search=native={}", d.display()));
        }
        if self.spec.rdc {
            self.cargo("rustc-link-lib=static=cudadevrt");
        }
        match self.spec.layout.cudart {
            Cudart::Static => self.cargo("rustc-link-lib=static=cudart_static"),
            Cudart::Shared => self.cargo("rustc-link-lib=dylib=cudart"),
            Cudart::None => {}
        }
        // The host objects are C++ (nvcc's host compiler), and cudart_static
        // needs the dynamic loader, clock and threads; MSVC links its own runtime.
        if !self.msvc {
            let libs: &[&str] = if self.spec.layout.cudart == Cudart::Static {
                &["stdc++", "dl", "rt", "pthread"]
            } else {
                &["stdc++"]
            };
            for l in libs {
                self.cargo(&format!("rustc-link-lib=dylib={l}"));
            }
        }
        Ok(())
    }
}
