//! Where outputs go and how the crate links: the builder settings that let a
//! crate keep the layout it already has (`$OUT_DIR/<stem>.ptx`), turn the
//! generated module off, pick shared or static cudart, and ask for the arch
//! plan before compiling.

use super::builder::Build;
use crate::env::Env;
use crate::plan::{ArchInputs, ArchPlan};
use crate::Error;
use std::path::{Path, PathBuf};

/// How output files are named inside the output directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputNames {
    /// The source's Rust module name: `vector-add.cu` → `vector_add.fatbin`,
    /// with parent directories prefixed when two sources share a stem.
    #[default]
    Module,
    /// The source's file stem as it is: `affine.cu` → `affine.ptx` (two
    /// sources with the same stem are an error).
    SourceStem,
}

/// How a static library links the CUDA runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Cudart {
    /// `cudart_static`: the binary runs without libcudart.so, but every
    /// rlib that links it carries a copy (tens of MB).
    #[default]
    Static,
    /// `dylib=cudart`: small outputs; libcudart.so must be found at run time
    /// (LD_LIBRARY_PATH, or the toolkit's lib directory in the loader path).
    Shared,
    /// No cudart link line: the crate links the runtime itself (or uses the
    /// driver API only).
    None,
}

/// The layout settings (see the methods below).
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    pub output_dir: Option<PathBuf>,
    pub names: OutputNames,
    pub module: bool,
    pub cudart: Cudart,
    pub target: Option<String>,
}

impl Default for Layout {
    fn default() -> Layout {
        Layout {
            output_dir: None,
            names: OutputNames::Module,
            module: true,
            cudart: Cudart::Static,
            target: None,
        }
    }
}

impl Layout {
    /// Whether the target uses MSVC (no `-fPIC`, no GNU link libraries).
    pub(crate) fn msvc(&self) -> bool {
        self.target.as_deref().is_some_and(|t| t.ends_with("-msvc"))
    }
}

impl Build {
    /// Where the compiled files go: a path relative to `OUT_DIR` (or
    /// absolute). Default `cuda-build/<module_name>`. `output_dir(".")` with
    /// [`OutputNames::SourceStem`] gives candle's `$OUT_DIR/affine.ptx`. The
    /// manifest stays in `cuda-build/<module_name>`; a layout that would
    /// overwrite a source file is refused.
    pub fn output_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.layout.output_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// How output files are named (default [`OutputNames::Module`]).
    pub fn output_names(&mut self, names: OutputNames) -> &mut Self {
        self.layout.names = names;
        self
    }

    /// Whether to write the generated module `$OUT_DIR/<module_name>.rs`
    /// (default true). Crates that `include_str!` the outputs themselves
    /// turn it off, so it cannot collide with their own files.
    pub fn generate_module(&mut self, on: bool) -> &mut Self {
        self.layout.module = on;
        self
    }

    /// How a static library links the CUDA runtime (default [`Cudart::Static`]).
    pub fn cudart(&mut self, cudart: Cudart) -> &mut Self {
        self.layout.cudart = cudart;
        self
    }

    /// The target triple (default: cargo's `TARGET`). For `*-msvc` targets
    /// nvcc gets no `-Xcompiler -fPIC` and no GNU link libraries are printed.
    pub fn target(&mut self, triple: &str) -> &mut Self {
        self.layout.target = Some(triple.to_string());
        self
    }

    /// The arch plan the build would use for sources without an override,
    /// without compiling anything (e.g. to decide `-DNO_BF16_KERNEL` below
    /// sm_80). It finds the toolkit and may ask nvcc for its arch list.
    pub fn plan(&self) -> Result<ArchPlan, Error> {
        let env = self.env.clone().unwrap_or_else(Env::from_process);
        let base = super::run::package_dir(&env);
        let md = super::glue::metadata(&base)?;
        let tk = match &self.toolkit {
            Some(tk) => tk.clone(),
            None => super::glue::find_toolkit(&env, &md)?.0,
        };
        let inputs = ArchInputs {
            explicit: self.arch.clone(),
            metadata: md.arch.clone(),
            fallback: self.fallback_arch.clone().or(md.fallback_arch.clone()),
        };
        super::glue::plan(&env, &tk, &inputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn msvc_targets() {
        let mut l = Layout::default();
        assert!(!l.msvc());
        l.target = Some("x86_64-pc-windows-msvc".into());
        assert!(l.msvc());
        l.target = Some("x86_64-pc-windows-gnu".into());
        assert!(!l.msvc());
    }
}
