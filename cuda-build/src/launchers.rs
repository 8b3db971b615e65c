//! Typed kernel launchers generated from the CUDA sources (feature `launchers`).
//!
//! Launching through cudarc is untyped: nothing checks the pushed arguments
//! against the kernel's C signature, so an `i32` where the kernel takes a
//! `size_t` compiles and then reads garbage on the GPU. [`generate`] reads
//! every `extern "C" __global__` function with libclang and writes one Rust
//! function per kernel whose parameters are the kernel's, so rustc checks
//! each launch:
//!
//! ```text
//! extern "C" __global__ void vectorAdd(const float* a, const float* b, float* c, unsigned long long n);
//! ```
//! becomes
//! ```text
//! pub unsafe fn vector_add(
//!     stream: &::cudarc::driver::CudaStream,
//!     func: &::cudarc::driver::CudaFunction,
//!     cfg: ::cudarc::driver::LaunchConfig,
//!     a: &impl ::cudarc::driver::DevicePtr<f32>,
//!     b: &impl ::cudarc::driver::DevicePtr<f32>,
//!     c: &mut impl ::cudarc::driver::DevicePtrMut<f32>,
//!     n: u64,
//! ) -> ::std::result::Result<(), ::cudarc::driver::DriverError>
//! ```
//!
//! Per-kernel problems (an unparsable signature, a type with no mapping, a
//! template, C++ linkage, the same name in two files) become
//! [`Generated::notes`], one line each naming the file and line; they never
//! fail the build. The mapping table and the limits are in `docs/launchers.md`.

mod clang;
mod codegen;
mod libclang;

use std::path::{Path, PathBuf};

use cuda_toolchain::env::Env;
use cuda_toolchain::Error;

/// How paths appear in generated code and notes: relative to the package
/// when under it, else as given.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shown<'a>(pub(crate) Option<&'a Path>);

impl Shown<'_> {
    pub(crate) fn path(self, p: &Path) -> PathBuf {
        match self.0.and_then(|base| p.strip_prefix(base).ok()) {
            Some(rel) if !rel.as_os_str().is_empty() => rel.to_path_buf(),
            _ => p.to_path_buf(),
        }
    }
}

/// The launchers generated for a set of sources.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Generated {
    /// Rust items per source, in the order the sources were given: the typed
    /// launchers to put inside that source's module (empty when it has none).
    pub code_per_source: Vec<(PathBuf, String)>,
    /// Per-kernel problems, one line each (`file:line: ...`), meant to become
    /// `cargo:warning` lines. None of them fails the build.
    pub notes: Vec<String>,
}

/// A scalar C type with an exact Rust counterpart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scalar {
    Bool,
    /// Plain `char`, whose signedness is the host ABI's.
    CChar,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    /// `long`: 64 bits on Linux, 32 on Windows, like the host compiler's.
    CLong,
    CULong,
    Isize,
    Usize,
    F32,
    F64,
    F16,
    Bf16,
}

impl Scalar {
    /// The Rust type, spelled with full paths so that the generated code
    /// needs no `use`.
    pub(crate) fn rust(self) -> &'static str {
        match self {
            Scalar::Bool => "bool",
            Scalar::CChar => "::core::ffi::c_char",
            Scalar::I8 => "i8",
            Scalar::U8 => "u8",
            Scalar::I16 => "i16",
            Scalar::U16 => "u16",
            Scalar::I32 => "i32",
            Scalar::U32 => "u32",
            Scalar::I64 => "i64",
            Scalar::U64 => "u64",
            Scalar::CLong => "::core::ffi::c_long",
            Scalar::CULong => "::core::ffi::c_ulong",
            Scalar::Isize => "isize",
            Scalar::Usize => "usize",
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
            Scalar::F16 => "::half::f16",
            Scalar::Bf16 => "::half::bf16",
        }
    }

    /// The scalar named by a typedef or record name that must be mapped by
    /// name, before its underlying type (`size_t` is `unsigned long` on Linux
    /// but `usize` everywhere; `__half` is a struct).
    pub(crate) fn by_name(name: &str) -> Option<Scalar> {
        Some(match name {
            "size_t" | "std::size_t" => Scalar::Usize,
            "ptrdiff_t" | "std::ptrdiff_t" | "ssize_t" | "intptr_t" | "std::intptr_t" => {
                Scalar::Isize
            }
            "uintptr_t" | "std::uintptr_t" => Scalar::Usize,
            "int8_t" | "std::int8_t" => Scalar::I8,
            "uint8_t" | "std::uint8_t" => Scalar::U8,
            "int16_t" | "std::int16_t" => Scalar::I16,
            "uint16_t" | "std::uint16_t" => Scalar::U16,
            "int32_t" | "std::int32_t" => Scalar::I32,
            "uint32_t" | "std::uint32_t" => Scalar::U32,
            "int64_t" | "std::int64_t" => Scalar::I64,
            "uint64_t" | "std::uint64_t" => Scalar::U64,
            "__half" | "half" => Scalar::F16,
            "__nv_bfloat16" | "nv_bfloat16" => Scalar::Bf16,
            _ => return None,
        })
    }
}

/// How one kernel parameter is passed from Rust.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParamKind {
    /// A scalar by value.
    Value(Scalar),
    /// `const T*`: a device slice the kernel reads.
    ConstPtr(Scalar),
    /// `T*`: a device slice the kernel may write.
    MutPtr(Scalar),
}

/// One parameter of a kernel, as read from the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Param {
    /// The C name, if the parameter has one.
    pub(crate) name: Option<String>,
    /// The C type as written (for the doc comment).
    pub(crate) c_type: String,
    pub(crate) kind: ParamKind,
}

/// An `extern "C" __global__` function whose every parameter has a mapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Kernel {
    pub(crate) name: String,
    /// Where it is defined (the source or a header it includes).
    pub(crate) file: PathBuf,
    pub(crate) line: u32,
    pub(crate) params: Vec<Param>,
}

/// Reads the `extern "C" __global__` kernels of `sources` and generates a
/// typed launcher for each.
///
/// `include_dirs` and `defines` are the ones the sources are compiled with
/// (`-I`, `-D`), so that a signature using a project typedef or macro reads
/// as nvcc reads it. CUDA's own headers are not needed: `__half`,
/// `__nv_bfloat16`, the vector types and the `__global__`-style qualifiers
/// come from a built-in prelude, and `cuda_runtime.h`, `cuda_fp16.h`,
/// `cuda_bf16.h` and friends resolve to it.
///
/// Errors: libclang cannot be loaded (`libclang-not-found`, with how to
/// install it), or a source cannot be read (`launchers-source-unreadable`).
/// Everything about individual kernels is a note instead.
///
/// ```no_run
/// # use std::path::PathBuf;
/// let generated = cuda_build::launchers::generate(&[PathBuf::from("cu/vector_add.cu")], &[], &[])?;
/// for note in &generated.notes {
///     println!("cargo:warning={note}");
/// }
/// # Ok::<(), cuda_toolchain::Error>(())
/// ```
pub fn generate(
    sources: &[PathBuf],
    include_dirs: &[PathBuf],
    defines: &[(String, Option<String>)],
) -> Result<Generated, Error> {
    generate_in(&Env::from_process(), None, sources, include_dirs, defines)
}

/// [`generate`] reading variables from `env`, with every path under `base`
/// shown relative to it (in the code and the notes), so that the generated
/// module is the same in every checkout.
pub(crate) fn generate_in(
    env: &Env,
    base: Option<&Path>,
    sources: &[PathBuf],
    include_dirs: &[PathBuf],
    defines: &[(String, Option<String>)],
) -> Result<Generated, Error> {
    let session = clang::Session::load(env)?;
    let shown = Shown(base);
    let mut generated = Generated::default();
    // Kernels already seen, by C name: where, to report duplicates.
    let mut seen: Vec<(String, PathBuf, u32)> = Vec::new();
    for source in sources {
        if let Err(e) = std::fs::metadata(source) {
            return Err(Error::new(
                "launchers-source-unreadable",
                format!("cannot read the CUDA source `{}`: {e}", source.display()),
            )
            .with_help("check the path given to the build (file/files/dir/glob)"));
        }
        let parsed = session.parse(source, include_dirs, defines, shown);
        generated.notes.extend(parsed.notes);
        for kernel in &parsed.kernels {
            let same_name = seen.iter().find(|(n, _, _)| *n == kernel.name);
            // One definition in a header two sources include is not a clash.
            if same_name.is_some_and(|(_, f, l)| *f == kernel.file && *l == kernel.line) {
                continue;
            }
            if let Some((_, file, line)) = same_name {
                generated.notes.push(format!(
                    "{}:{}: kernel `{}` is also defined at {}:{}; each module gets its \
                     own launcher, but linking both into one program (rdc, a static \
                     library) fails, and loading by name is ambiguous: rename one",
                    kernel.file.display(),
                    kernel.line,
                    kernel.name,
                    file.display(),
                    line
                ));
            } else {
                seen.push((kernel.name.clone(), kernel.file.clone(), kernel.line));
            }
        }
        let (code, notes) = codegen::launchers(&shown.path(source), &parsed.kernels);
        generated.notes.extend(notes);
        generated.code_per_source.push((source.clone(), code));
    }
    Ok(generated)
}
