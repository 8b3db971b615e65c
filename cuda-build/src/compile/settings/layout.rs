//! Where outputs go and how the crate links: the builder settings that let a
//! crate keep the layout it already has (`$OUT_DIR/<stem>.ptx`), turn the
//! generated module off, pick shared or static cudart, and ask for the arch
//! plan before compiling. The settings themselves ([`OutputNames`],
//! [`Cudart`], `Layout`) are plain data in `spec.rs`.

use crate::compile::prebuilt::shipped;
use crate::compile::settings::builder::Build;
use crate::compile::settings::package;
use crate::compile::settings::presets;
use crate::compile::settings::spec::{Cudart, OutputNames};
use crate::compile::settings::toolchain;
use cuda_toolchain::env::Env;
use cuda_toolchain::plan::{ArchInputs, ArchPlan};
use cuda_toolchain::Error;
use std::path::Path;

impl Build {
    /// Where the compiled files go: a path relative to `OUT_DIR` (or
    /// absolute). Default `cuda-build/<module_name>`. `output_dir(".")` with
    /// [`OutputNames::SourceStem`] gives candle's `$OUT_DIR/affine.ptx`. The
    /// manifest stays in `cuda-build/<module_name>`; a layout that would
    /// overwrite a source file is refused.
    pub fn output_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.spec.layout.output_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// How output files are named (default [`OutputNames::Module`]).
    pub fn output_names(&mut self, names: OutputNames) -> &mut Self {
        self.spec.layout.names = names;
        self
    }

    /// Whether to write the generated module `$OUT_DIR/<module_name>.rs`
    /// (default true). Crates that `include_str!` the outputs themselves
    /// turn it off, so it cannot collide with their own files.
    pub fn generate_module(&mut self, on: bool) -> &mut Self {
        self.spec.layout.module = on;
        self
    }

    /// How a static library links the CUDA runtime (default [`Cudart::Static`]).
    pub fn cudart(&mut self, cudart: Cudart) -> &mut Self {
        self.spec.layout.cudart = cudart;
        self
    }

    /// Adds a rustc link modifier to the static library's
    /// `rustc-link-lib=static:<modifiers>=<name>` line, as cc's method of the
    /// same name does: `"-bundle"` keeps the archive out of the rlib, so the
    /// final link takes it from `OUT_DIR` (a smaller rlib, and less for rustc
    /// to copy on every rebuild); `"+whole-archive"` keeps unreferenced
    /// objects. Only for [`OutputKind::StaticLib`](crate::compile::OutputKind).
    pub fn link_lib_modifier(&mut self, modifier: &str) -> &mut Self {
        self.spec.layout.link_modifiers.push(modifier.to_string());
        self
    }

    /// The target triple (default: cargo's `TARGET`). For `*-msvc` targets
    /// nvcc gets no `-Xcompiler -fPIC` and no GNU link libraries are printed.
    pub fn target(&mut self, triple: &str) -> &mut Self {
        self.spec.layout.target = Some(triple.to_string());
        self
    }

    /// The arch plan the build would use for sources without an override,
    /// without compiling anything (e.g. to decide `-DNO_BF16_KERNEL` below
    /// sm_80). It finds the toolkit and may ask nvcc for its arch list.
    /// When the package ships kernel images (docs/prebuilt.md), it is the
    /// plan the build makes with them: their arch set is the last fallback,
    /// and with no toolkit found it plans as their nvcc would.
    pub fn plan(&self) -> Result<ArchPlan, Error> {
        let env = self.spec.env.clone().unwrap_or_else(Env::from_process);
        let dir = package::package_dir(&env);
        let md = package::metadata(&dir)?;
        let shipped = shipped::for_plan(&env, &md, &dir);
        let tk = match self.spec.toolkit.toolkit() {
            Some(tk) => tk.clone(),
            None => match (toolchain::find_toolkit(&env, &md), &shipped) {
                (Ok((tk, _)), _) => tk,
                (Err(_), Some(s)) => s.stand_in_toolkit(),
                (Err(e), None) => return Err(e),
            },
        };
        let inputs = ArchInputs {
            explicit: self.spec.arch.clone(),
            metadata: md.arch.clone(),
            fallback: (self.spec.fallback_arch.clone())
                .or(md.fallback_arch.clone())
                .or(shipped
                    .as_ref()
                    .and_then(|s| s.declared_arch().map(str::to_string))),
        };
        let plan = toolchain::arch_plan(&env, &tk, &inputs)?;
        Ok(presets::shape_plan(self.spec.preset, plan))
    }
}
