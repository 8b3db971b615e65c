//! libclang, loaded at run time from a file this crate chose.
//!
//! clang-sys (1.9) can only load libclang through its own search, which
//! reads `LIBCLANG_PATH` from the process environment and, when it is unset,
//! runs `llvm-config` with no timeout; its `SharedLibrary` has no public
//! constructor taking a path. Steering it would mean `std::env::set_var` from
//! library code. So the directory is found here ([`find_libclang_dir`], with
//! llvm-config under a timeout), the file is opened with libloading, and the
//! functions the reader calls are resolved from it once per process. clang-sys
//! still provides libclang's C types and constants (re-exported below; the
//! functions defined here shadow its same-named ones).

// libclang's function names keep their C spelling (`clang_Cursor_getArgument`).
#![allow(non_snake_case)]

use std::os::raw::{c_char, c_int, c_uint};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub(super) use clang_sys::*;

use cuda_toolchain::env::{Env, Var};

/// Declares the libclang functions used: a table of pointers resolved from
/// one file, and a free function per entry that calls through it.
macro_rules! libclang_functions {
    ($(fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)?;)+) => {
        /// The functions the reader calls, resolved from one libclang file.
        pub(super) struct Libclang {
            $($name: unsafe extern "C" fn($($ty),*) $(-> $ret)?,)+
            /// Kept open for the process's lifetime: the pointers point into it.
            _library: libloading::Library,
        }

        impl Libclang {
            /// Opens `path` and resolves every function, or says which is missing.
            fn open(path: &Path) -> Result<Libclang, String> {
                // SAFETY: opening a shared library runs its initialisers; this
                // is the libclang the user installed or named.
                let library = unsafe { libloading::Library::new(path) }.map_err(|e| {
                    format!("the libclang at {} could not be opened: {e}", path.display())
                })?;
                $(
                    // SAFETY: the type is libclang's C signature of this symbol.
                    let $name = unsafe {
                        library.get::<unsafe extern "C" fn($($ty),*) $(-> $ret)?>(
                            concat!(stringify!($name), "\0").as_bytes(),
                        )
                    }
                    .map(|f| *f)
                    .map_err(|_| {
                        format!(
                            "the libclang at {} has no `{}`: it is older than 7.0",
                            path.display(),
                            stringify!($name)
                        )
                    })?;
                )+
                Ok(Libclang { $($name,)+ _library: library })
            }
        }

        $(
            /// libclang's function of the same name.
            ///
            /// # Safety
            /// As in libclang's C API; call only after [`load`] succeeded.
            #[allow(clippy::too_many_arguments)] // libclang's own signature
            pub(super) unsafe fn $name($($arg: $ty),*) $(-> $ret)? {
                (loaded().$name)($($arg),*)
            }
        )+
    };
}

libclang_functions! {
    fn clang_Cursor_getArgument(cursor: CXCursor, index: c_uint) -> CXCursor;
    fn clang_Cursor_getMangling(cursor: CXCursor) -> CXString;
    fn clang_Cursor_getNumArguments(cursor: CXCursor) -> c_int;
    fn clang_Location_isFromMainFile(location: CXSourceLocation) -> c_int;
    fn clang_Location_isInSystemHeader(location: CXSourceLocation) -> c_int;
    fn clang_Type_getNamedType(type_: CXType) -> CXType;
    fn clang_createIndex(exclude: c_int, display: c_int) -> CXIndex;
    fn clang_disposeDiagnostic(diagnostic: CXDiagnostic);
    fn clang_disposeIndex(index: CXIndex);
    fn clang_disposeString(string: CXString);
    fn clang_disposeTokens(tu: CXTranslationUnit, tokens: *mut CXToken, n_tokens: c_uint);
    fn clang_disposeTranslationUnit(tu: CXTranslationUnit);
    fn clang_getCString(string: CXString) -> *const c_char;
    fn clang_getCanonicalType(type_: CXType) -> CXType;
    fn clang_getCursorExtent(cursor: CXCursor) -> CXSourceRange;
    fn clang_getCursorKind(cursor: CXCursor) -> CXCursorKind;
    fn clang_getCursorLocation(cursor: CXCursor) -> CXSourceLocation;
    fn clang_getCursorSpelling(cursor: CXCursor) -> CXString;
    fn clang_getCursorType(cursor: CXCursor) -> CXType;
    fn clang_getDiagnostic(tu: CXTranslationUnit, index: c_uint) -> CXDiagnostic;
    fn clang_getDiagnosticLocation(diagnostic: CXDiagnostic) -> CXSourceLocation;
    fn clang_getDiagnosticSeverity(diagnostic: CXDiagnostic) -> CXDiagnosticSeverity;
    fn clang_getDiagnosticSpelling(diagnostic: CXDiagnostic) -> CXString;
    fn clang_getExpansionLocation(location: CXSourceLocation, file: *mut CXFile, line: *mut c_uint, column: *mut c_uint, offset: *mut c_uint);
    fn clang_getFile(tu: CXTranslationUnit, file: *const c_char) -> CXFile;
    fn clang_getFileContents(tu: CXTranslationUnit, file: CXFile, size: *mut usize) -> *const c_char;
    fn clang_getFileLocation(location: CXSourceLocation, file: *mut CXFile, line: *mut c_uint, column: *mut c_uint, offset: *mut c_uint);
    fn clang_getFileName(file: CXFile) -> CXString;
    fn clang_getLocationForOffset(tu: CXTranslationUnit, file: CXFile, offset: c_uint) -> CXSourceLocation;
    fn clang_getNumDiagnostics(tu: CXTranslationUnit) -> c_uint;
    fn clang_getPointeeType(type_: CXType) -> CXType;
    fn clang_getRange(start: CXSourceLocation, end: CXSourceLocation) -> CXSourceRange;
    fn clang_getRangeEnd(range: CXSourceRange) -> CXSourceLocation;
    fn clang_getRangeStart(range: CXSourceRange) -> CXSourceLocation;
    fn clang_getTokenKind(token: CXToken) -> CXTokenKind;
    fn clang_getTokenLocation(tu: CXTranslationUnit, token: CXToken) -> CXSourceLocation;
    fn clang_getTokenSpelling(tu: CXTranslationUnit, token: CXToken) -> CXString;
    fn clang_getTranslationUnitCursor(tu: CXTranslationUnit) -> CXCursor;
    fn clang_getTypeDeclaration(type_: CXType) -> CXCursor;
    fn clang_getTypeSpelling(type_: CXType) -> CXString;
    fn clang_getTypedefDeclUnderlyingType(cursor: CXCursor) -> CXType;
    fn clang_isConstQualifiedType(type_: CXType) -> c_uint;
    fn clang_isInvalidDeclaration(cursor: CXCursor) -> c_uint;
    fn clang_parseTranslationUnit2(index: CXIndex, file: *const c_char, arguments: *const *const c_char, n_arguments: c_int, unsaved: *mut CXUnsavedFile, n_unsaved: c_uint, flags: CXTranslationUnit_Flags, tu: *mut CXTranslationUnit) -> CXErrorCode;
    fn clang_tokenize(tu: CXTranslationUnit, range: CXSourceRange, tokens: *mut *mut CXToken, n_tokens: *mut c_uint);
    fn clang_visitChildren(cursor: CXCursor, visitor: CXCursorVisitor, data: CXClientData) -> c_uint;
}

static LIBRARY: OnceLock<Result<Libclang, String>> = OnceLock::new();

/// Loads libclang once per process: the file `LIBCLANG_PATH` names, or the
/// newest libclang in the directory it names, else in [`find_libclang_dir`].
pub(super) fn load(env: &Env) -> Result<(), String> {
    let loaded = LIBRARY.get_or_init(|| {
        let dir = match env.get_os(Var::LibclangPath).filter(|p| !p.is_empty()) {
            Some(p) => PathBuf::from(p),
            None => find_libclang_dir(env).ok_or_else(|| {
                "no libclang in `llvm-config --libdir`, LD_LIBRARY_PATH or the usual \
                 LLVM directories"
                    .to_string()
            })?,
        };
        let file = if dir.is_file() {
            dir
        } else {
            libclang_in(&dir)
                .ok_or_else(|| format!("no libclang shared library in {}", dir.display()))?
        };
        Libclang::open(&file)
    });
    loaded.as_ref().map(|_| ()).map_err(String::clone)
}

/// The loaded library; [`load`] has succeeded before any caller gets here
/// (the reader's `Session` exists only then).
fn loaded() -> &'static Libclang {
    match LIBRARY.get() {
        Some(Ok(lib)) => lib,
        _ => unreachable!(
            "libclang functions are called only after launchers::libclang::load succeeded"
        ),
    }
}

/// The directory holding libclang: `llvm-config --libdir` (under a timeout;
/// `LLVM_CONFIG_PATH` names another llvm-config), then `LD_LIBRARY_PATH`,
/// then the usual install directories, newest LLVM first.
pub(super) fn find_libclang_dir(env: &Env) -> Option<PathBuf> {
    let llvm_config = env
        .get_nonempty(Var::LlvmConfigPath)
        .unwrap_or("llvm-config");
    let timeout =
        cuda_toolchain::process::timeout_from_env(env, std::time::Duration::from_secs(10));
    let from_llvm_config = cuda_toolchain::process::run(llvm_config, ["--libdir"], timeout)
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| out.stdout.lines().next().map(|l| PathBuf::from(l.trim())))
        .filter(|d| !d.as_os_str().is_empty());
    let mut candidates: Vec<PathBuf> = from_llvm_config.into_iter().collect();
    if let Some(paths) = env.get_os(Var::LdLibraryPath) {
        candidates.extend(std::env::split_paths(paths));
    }
    // `/usr/lib/llvm-14/lib` and friends, highest version first.
    for parent in ["/usr/lib", "/usr/lib64", "/usr/local", "/opt"] {
        let mut versioned: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir(env.sys_path(parent))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let version = name.strip_prefix("llvm")?.trim_start_matches('-');
                let key = version.split('.').map(|p| p.parse().unwrap_or(0)).collect();
                Some((key, e.path().join("lib")))
            })
            .collect();
        versioned.sort();
        candidates.extend(versioned.into_iter().rev().map(|(_, p)| p));
    }
    for dir in [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/local/lib",
        "/opt/homebrew/opt/llvm/lib",
        "/usr/local/opt/llvm/lib",
        "/Library/Developer/CommandLineTools/usr/lib",
    ] {
        candidates.push(env.sys_path(dir));
    }
    candidates.into_iter().find(|d| holds_libclang(d))
}

/// Whether a directory holds a libclang shared library (not libclang-cpp).
fn holds_libclang(dir: &Path) -> bool {
    libclang_in(dir).is_some()
}

/// Whether a file name is a libclang shared library (not libclang-cpp).
fn is_libclang(name: &str) -> bool {
    name == "libclang.so"
        || name.starts_with("libclang.so.")
        || name == "libclang.dylib"
        || name == "libclang.dll"
        || (name.starts_with("libclang-")
            && !name.starts_with("libclang-cpp")
            && name.contains(".so"))
}

/// The libclang in `dir` with the highest version in its name
/// (`libclang-15.so` over `libclang.so.1`; the plain name last).
fn libclang_in(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if !is_libclang(&name) {
                return None;
            }
            let version = name
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|p| p.parse().ok())
                .collect();
            Some((version, e.path()))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, path)| path)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn libclang_dir_search_order() {
        let root = tempfile::tempdir().unwrap();
        let touch = |p: &str| {
            let p = root.path().join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, b"").unwrap();
        };
        // No llvm-config: the name resolves to nothing.
        let env = Env::empty()
            .with_root(root.path())
            .set(Var::LlvmConfigPath, root.path().join("no-llvm-config"));
        assert_eq!(find_libclang_dir(&env), None);
        // libclang-cpp alone is not libclang.
        touch("usr/lib/x86_64-linux-gnu/libclang-cpp.so.14");
        assert_eq!(find_libclang_dir(&env), None);
        touch("usr/lib/x86_64-linux-gnu/libclang-14.so.1");
        assert_eq!(
            find_libclang_dir(&env),
            Some(root.path().join("usr/lib/x86_64-linux-gnu"))
        );
        // A versioned LLVM directory wins, the newest first (15 > 9).
        touch("usr/lib/llvm-9/lib/libclang.so.1");
        touch("usr/lib/llvm-15/lib/libclang-15.so");
        assert_eq!(
            find_libclang_dir(&env),
            Some(root.path().join("usr/lib/llvm-15/lib"))
        );
        // LD_LIBRARY_PATH comes before the usual directories.
        touch("opt/mine/libclang.so");
        let env = env.set(Var::LdLibraryPath, root.path().join("opt/mine"));
        assert_eq!(find_libclang_dir(&env), Some(root.path().join("opt/mine")));
        // llvm-config --libdir comes first of all.
        touch("llvm/lib/libclang.so");
        let script = root.path().join("bin/llvm-config");
        std::fs::create_dir_all(script.parent().unwrap()).unwrap();
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\necho {}\n",
                root.path().join("llvm/lib").display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let env = env.set(Var::LlvmConfigPath, &script);
        assert_eq!(find_libclang_dir(&env), Some(root.path().join("llvm/lib")));
    }
}
