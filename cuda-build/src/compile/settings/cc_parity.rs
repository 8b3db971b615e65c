//! What `cc::Build` users expect: its method names (`includes`, `flags`,
//! `flag_if_supported`, `archiver`, `cargo_warnings`, `cargo_metadata`), the
//! toolkit by path, the host toolchain from `cc`, the cargo profile, and an
//! arch flag in `flag()` that becomes the plan instead of doubling it.
//!
//! The setters are here; all of it is settled once per build, before the
//! compile engine runs, by the prepare stage (`prepare.rs`).

use crate::compile::settings::builder::Build;
use crate::compile::settings::spec::ToolkitChoice;
use std::path::Path;

impl Build {
    /// Adds several include directories (cc's `includes`).
    pub fn includes<P: AsRef<Path>>(&mut self, dirs: impl IntoIterator<Item = P>) -> &mut Self {
        for d in dirs {
            self.include(d);
        }
        self
    }

    /// Adds several nvcc arguments (cc's `flags`).
    pub fn flags<S: AsRef<str>>(&mut self, flags: impl IntoIterator<Item = S>) -> &mut Self {
        for f in flags {
            self.flag(f.as_ref());
        }
        self
    }

    /// Adds an nvcc argument only if this nvcc (and its host compiler)
    /// accept it. nvcc is asked once per flag and toolkit: the answer is
    /// kept in `$OUT_DIR/cuda-build/flag-support.json`.
    pub fn flag_if_supported(&mut self, flag: &str) -> &mut Self {
        self.spec.flags_if_supported.push(flag.to_string());
        self
    }

    /// Uses the toolkit at this root (the directory holding `bin/nvcc`)
    /// instead of searching; it wins over `CUDA_HOME` and every other rule
    /// ([`Build::toolkit`] wins over it, in either order).
    pub fn toolkit_root(&mut self, root: impl AsRef<Path>) -> &mut Self {
        if !matches!(self.spec.toolkit, ToolkitChoice::Given(_)) {
            self.spec.toolkit = ToolkitChoice::Root(root.as_ref().to_path_buf());
        }
        self
    }

    /// The archiver for static libraries (default: cc's choice for TARGET:
    /// `AR_<target>`, `TARGET_AR`, `AR`, the target's prefixed `ar`).
    pub fn archiver(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.spec.archiver = Some(path.as_ref().to_path_buf());
        self
    }

    /// Whether warnings are printed as `cargo:warning=` lines (default true).
    pub fn cargo_warnings(&mut self, on: bool) -> &mut Self {
        self.spec.cargo_warnings = on;
        self
    }

    /// Whether the link lines (`cargo:rustc-link-lib`, `rustc-link-search`)
    /// are printed (default true). Like cc, this leaves the `rerun-if` lines
    /// alone; [`Build::emit_cargo`] turns every line off.
    pub fn cargo_metadata(&mut self, on: bool) -> &mut Self {
        self.spec.cargo_metadata = on;
        self
    }

    /// Whether cargo's profile adds flags (default: yes, unless
    /// `CUDA_BUILD_PROFILE_FLAGS=0`): `-lineinfo` when DEBUG is true, and the
    /// host `-O<OPT_LEVEL>` for static libraries.
    pub fn profile_flags(&mut self, on: bool) -> &mut Self {
        self.spec.profile_flags = Some(on);
        self
    }

    /// Position-independent host code for static libraries (cc's `pic`;
    /// default on, except for MSVC targets): `-Xcompiler -fPIC`.
    pub fn pic(&mut self, on: bool) -> &mut Self {
        self.spec.pic = Some(on);
        self
    }

    /// Device debug code (`-G`): no device optimisation, for cuda-gdb.
    /// Off by default, because it makes kernels much slower; also
    /// `CUDA_BUILD_DEVICE_DEBUG=1`.
    pub fn device_debug(&mut self, on: bool) -> &mut Self {
        self.spec.device_debug = Some(on);
        self
    }
}
