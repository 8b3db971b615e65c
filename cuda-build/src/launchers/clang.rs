//! Reading kernel signatures with libclang (through `clang-sys`, loaded at run time).
//!
//! A source is parsed as C++17 with a prelude that defines what nvcc provides
//! implicitly (`__global__` and friends, `__half`, the vector types), and with
//! function bodies skipped: only declarations are read, so device builtins and
//! intrinsics need no definitions and no CUDA headers are needed. `__global__`
//! becomes an `annotate` attribute, which marks the kernels in the AST.

// libclang's constants keep their C names, and are matched on in patterns.
#![allow(non_upper_case_globals)]

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_uint, c_ulong};
use std::path::{Path, PathBuf};

use super::libclang::{self, *};

use super::{Kernel, Param, ParamKind, Scalar, Shown};
use cuda_toolchain::env::{Env, Var};
use cuda_toolchain::Error;

/// Where the prelude and the stand-in CUDA headers live: they are libclang
/// "unsaved files", so nothing is written to disk.
const VIRTUAL_DIR: &str = "/__cuda_build_launchers__";
const PRELUDE: &str = include_str!("prelude.h");
/// The annotation `__global__` expands to in the prelude.
const GLOBAL_ANNOTATION: &str = "cuda_build_global";
/// CUDA headers a kernel file commonly includes; each resolves to an empty
/// stand-in, since the prelude already declares what signatures use.
const STAND_IN_HEADERS: &[&str] = &[
    "cuda_runtime.h",
    "cuda_runtime_api.h",
    "cuda.h",
    "cuda_fp16.h",
    "cuda_bf16.h",
    "vector_types.h",
    "device_launch_parameters.h",
    "cuda_device_runtime_api.h",
];

/// The result of reading one source.
pub(super) struct Parsed {
    /// Kernels that get a typed launcher.
    pub(super) kernels: Vec<Kernel>,
    /// Kernels skipped, with why (`file:line: kernel ...`).
    pub(super) notes: Vec<String>,
}

/// Proof that libclang is loaded (once per process, shared by every thread
/// that parses): reading sources needs one.
pub(super) struct Session {
    _loaded: (),
}

impl Session {
    /// Loads libclang once per process, from `LIBCLANG_PATH` or the
    /// directory [`libclang::find_libclang_dir`] finds.
    pub(super) fn load(env: &Env) -> Result<Session, Error> {
        match libclang::load(env) {
            Ok(()) => Ok(Session { _loaded: () }),
            Err(why) => Err(libclang_missing(env, &why)),
        }
    }

    /// Reads the kernels of one source. Never fails: whatever goes wrong is a note.
    pub(super) fn parse(
        &self,
        source: &Path,
        include_dirs: &[PathBuf],
        defines: &[(String, Option<String>)],
        shown: Shown<'_>,
    ) -> Parsed {
        parse_source(source, include_dirs, defines, shown)
    }
}

/// The error for a libclang that cannot be loaded, saying how to install it.
pub(super) fn libclang_missing(env: &Env, why: &str) -> Error {
    let message = match env.get_nonempty(Var::LibclangPath) {
        Some(path) => format!(
            "the `launchers` feature of cuda-build needs libclang, and LIBCLANG_PATH \
             is set to `{path}`, where no usable libclang was found"
        ),
        None => {
            "the `launchers` feature of cuda-build needs libclang, which was not found".to_string()
        }
    };
    Error::new("libclang-not-found", message)
        .with_detail(why.to_string())
        .with_help(
            "install it: `apt-get install libclang-dev` (Debian, Ubuntu), \
             `dnf install clang-devel` (Fedora), `brew install llvm` (macOS)",
        )
        .with_help(
            "or set LIBCLANG_PATH to the directory that holds libclang.so \
             (for example /usr/lib/llvm-14/lib)",
        )
        .with_help("or turn the `launchers` feature of cuda-build off")
}

/// An error diagnostic, located.
struct Diag {
    file: PathBuf,
    line: u32,
    missing_include: bool,
    text: String,
}

fn parse_source(
    source: &Path,
    include_dirs: &[PathBuf],
    defines: &[(String, Option<String>)],
    shown: Shown<'_>,
) -> Parsed {
    let display = shown.path(source).display().to_string();
    let mut notes = Vec::new();
    let mut args: Vec<String> = vec![
        "-x".into(),
        "c++".into(),
        "-std=c++17".into(),
        "-ferror-limit=0".into(),
        // The stand-ins come first, so a toolkit include dir does not bring
        // in the real headers, which clang cannot read without CUDA mode.
        format!("-I{VIRTUAL_DIR}/include"),
    ];
    args.extend(include_dirs.iter().map(|d| format!("-I{}", d.display())));
    for (name, value) in defines {
        args.push(match value {
            Some(v) => format!("-D{name}={v}"),
            None => format!("-D{name}"),
        });
    }
    args.push("-include".into());
    args.push(format!("{VIRTUAL_DIR}/prelude.h"));

    let mut virtual_files: Vec<(CString, CString)> = vec![(
        cstring(&format!("{VIRTUAL_DIR}/prelude.h")),
        cstring(PRELUDE),
    )];
    for header in STAND_IN_HEADERS {
        virtual_files.push((
            cstring(&format!("{VIRTUAL_DIR}/include/{header}")),
            cstring("#pragma once\n"),
        ));
    }
    let mut unsaved: Vec<CXUnsavedFile> = virtual_files
        .iter()
        .map(|(name, contents)| CXUnsavedFile {
            Filename: name.as_ptr(),
            Contents: contents.as_ptr(),
            Length: contents.as_bytes().len() as c_ulong,
        })
        .collect();
    let c_args: Vec<CString> = args.iter().map(|a| cstring(a)).collect();
    let c_arg_ptrs: Vec<*const c_char> = c_args.iter().map(|a| a.as_ptr()).collect();
    let c_source = cstring(&source.to_string_lossy());

    // SAFETY: every pointer passed lives until the translation unit and the
    // index are disposed of at the end of this block.
    unsafe {
        let index = clang_createIndex(0, 0);
        let mut tu: CXTranslationUnit = std::ptr::null_mut();
        let code = clang_parseTranslationUnit2(
            index,
            c_source.as_ptr(),
            c_arg_ptrs.as_ptr(),
            c_arg_ptrs.len() as i32,
            unsaved.as_mut_ptr(),
            unsaved.len() as c_uint,
            CXTranslationUnit_SkipFunctionBodies | CXTranslationUnit_KeepGoing,
            &mut tu,
        );
        if code != CXError_Success || tu.is_null() {
            notes.push(format!(
                "{display}: libclang could not parse this file (error code {code}); \
                 no typed launchers for its kernels"
            ));
            clang_disposeIndex(index);
            return Parsed {
                kernels: Vec::new(),
                notes,
            };
        }
        let diags = diagnostics(tu);
        let mut walker = Walker {
            tu,
            source,
            display: &display,
            shown,
            diags: &diags,
            kernels: Vec::new(),
            notes: Vec::new(),
            seen_names: Vec::new(),
            tokens: HashMap::new(),
        };
        walker.walk(clang_getTranslationUnitCursor(tu));
        walker.report_lost_kernels();
        let Walker {
            kernels,
            notes: walk_notes,
            ..
        } = walker;
        notes.extend(walk_notes);
        clang_disposeTranslationUnit(tu);
        clang_disposeIndex(index);
        Parsed { kernels, notes }
    }
}

struct Walker<'a> {
    tu: CXTranslationUnit,
    source: &'a Path,
    /// The source as shown in notes.
    display: &'a str,
    shown: Shown<'a>,
    diags: &'a [Diag],
    kernels: Vec<Kernel>,
    notes: Vec<String>,
    /// Every kernel name met in the AST (kept or skipped), to find the ones
    /// libclang dropped entirely.
    seen_names: Vec<String>,
    /// Each file's tokens, read once.
    tokens: HashMap<PathBuf, Vec<Tok>>,
}

/// A token of a file: its kind, text, line and byte offset.
struct Tok {
    kind: CXTokenKind,
    text: String,
    line: u32,
    offset: u32,
}

impl Walker<'_> {
    unsafe fn walk(&mut self, parent: CXCursor) {
        for cursor in children(parent) {
            match clang_getCursorKind(cursor) {
                // libclang before 16 reports `extern "C"` blocks as UnexposedDecl.
                CXCursor_LinkageSpec | CXCursor_Namespace | CXCursor_UnexposedDecl => {
                    self.walk(cursor)
                }
                CXCursor_FunctionDecl => self.function(cursor),
                CXCursor_FunctionTemplate => self.template(cursor),
                _ => {}
            }
        }
    }

    /// `file:line` of a cursor, as shown in notes and generated code.
    unsafe fn location(&self, cursor: CXCursor) -> Option<(PathBuf, u32)> {
        let loc = clang_getCursorLocation(cursor);
        if clang_Location_isInSystemHeader(loc) != 0 {
            return None;
        }
        let (path, line) = file_line(loc)?;
        if path.starts_with(VIRTUAL_DIR) {
            return None;
        }
        if clang_Location_isFromMainFile(loc) != 0 {
            return Some((PathBuf::from(self.display), line));
        }
        Some((self.shown.path(&path), line))
    }

    /// Where a kernel definition is, and its name; None for anything else
    /// (not `__global__`, or a declaration alone, which puts no entry into
    /// this module). Every kernel met is remembered for `report_lost_kernels`.
    unsafe fn kernel_definition(&mut self, cursor: CXCursor) -> Option<(PathBuf, u32, String)> {
        let (file, line) = self.location(cursor)?;
        let name = take(clang_getCursorSpelling(cursor));
        let shape = self.shape(cursor, &name);
        if !(shape.global || self.annotated(cursor)) {
            return None;
        }
        self.seen_names.push(name.clone());
        shape.body.then_some((file, line, name))
    }

    unsafe fn template(&mut self, cursor: CXCursor) {
        let Some((file, line, name)) = self.kernel_definition(cursor) else {
            return;
        };
        self.notes.push(format!(
            "{}:{line}: kernel `{name}` is a template: skipped (its instances have \
             C++-mangled names; wrap each instance you launch in an `extern \"C\"` \
             kernel to get a typed launcher)",
            file.display()
        ));
    }

    unsafe fn function(&mut self, cursor: CXCursor) {
        let Some((file, line, name)) = self.kernel_definition(cursor) else {
            return;
        };
        let at = format!("{}:{line}: kernel `{name}`", file.display());
        if let Some(diag) = self.error_within(cursor) {
            self.notes.push(format!(
                "{at}: its signature could not be parsed ({}){}; no typed launcher",
                diag.text,
                self.missing_include_hint()
            ));
            return;
        }
        if clang_isInvalidDeclaration(cursor) != 0 {
            self.notes.push(format!(
                "{at}: its signature could not be parsed{}; no typed launcher",
                self.missing_include_hint()
            ));
            return;
        }
        let mangled = take(clang_Cursor_getMangling(cursor));
        if !mangled.is_empty() && mangled != name {
            self.notes.push(format!(
                "{at}: has C++ linkage (symbol `{mangled}`): skipped; declare it \
                 `extern \"C\"` to get a typed launcher"
            ));
            return;
        }
        let count = clang_Cursor_getNumArguments(cursor);
        let mut params = Vec::new();
        for i in 0..count.max(0) as c_uint {
            let arg = clang_Cursor_getArgument(cursor, i);
            let arg_name = take(clang_getCursorSpelling(arg));
            let ty = clang_getCursorType(arg);
            let c_type = take(clang_getTypeSpelling(ty));
            match map_type(ty) {
                Ok(kind) => params.push(Param {
                    name: (!arg_name.is_empty()).then_some(arg_name),
                    c_type,
                    kind,
                }),
                Err(why) => {
                    let which = if arg_name.is_empty() {
                        format!("parameter {}", i + 1)
                    } else {
                        format!("parameter `{arg_name}`")
                    };
                    self.notes.push(format!(
                        "{at}: {which} has type `{c_type}`, {why}; no typed launcher \
                         (launch it through the raw entry point)"
                    ));
                    return;
                }
            }
        }
        self.kernels.push(Kernel {
            name,
            file,
            line,
            params,
        });
    }

    /// The first error diagnostic inside the cursor's extent.
    unsafe fn error_within(&self, cursor: CXCursor) -> Option<&Diag> {
        let extent = clang_getCursorExtent(cursor);
        let (file, first) = file_line(clang_getRangeStart(extent))?;
        let (_, last) = file_line(clang_getRangeEnd(extent))?;
        self.diags
            .iter()
            .find(|d| d.file == file && (first..=last).contains(&d.line))
    }

    /// "(earlier: x.h not found ...)" when a missing include may explain an
    /// invalid signature.
    fn missing_include_hint(&self) -> String {
        match self.diags.iter().find(|d| d.missing_include) {
            Some(d) => format!(
                " (earlier: {}:{}: {}; pass its directory as an include dir)",
                self.shown.path(&d.file).display(),
                d.line,
                d.text
            ),
            None => String::new(),
        }
    }

    /// Kernels the token stream shows but the AST lost (a syntax error in the
    /// signature can drop the whole declaration).
    unsafe fn report_lost_kernels(&mut self) {
        let source = self.source.to_path_buf();
        let mut lost = Vec::new();
        let tokens = self.file_tokens(&source);
        for (i, tok) in tokens.iter().enumerate() {
            if tok.text != "__global__" {
                continue;
            }
            // The first identifier followed by `(`, skipping attribute-like
            // macros such as `__launch_bounds__(256)`.
            let mut depth = 0usize;
            for j in i + 1..tokens.len().saturating_sub(1).min(i + 40) {
                let t = &tokens[j];
                match t.text.as_str() {
                    "(" => depth += 1,
                    ")" => depth = depth.saturating_sub(1),
                    ";" | "{" | "}" | "#" => break,
                    _ => {}
                }
                let attribute_like = t.text.starts_with("__") && t.text.ends_with("__");
                if depth == 0
                    && t.kind == CXToken_Identifier
                    && !attribute_like
                    && tokens[j + 1].text == "("
                {
                    lost.push((t.text.clone(), t.line));
                    break;
                }
            }
        }
        for (name, line) in lost {
            if self.seen_names.contains(&name) {
                continue;
            }
            self.seen_names.push(name.clone());
            let why = self
                .diags
                .iter()
                .find(|d| d.file == self.source && d.line >= line)
                .map(|d| format!(" (line {}: {})", d.line, d.text))
                .unwrap_or_default();
            self.notes.push(format!(
                "{}:{line}: kernel `{name}`: its signature could not be parsed{why}; \
                 no typed launcher",
                self.display
            ));
        }
    }

    /// Whether the prelude's `__global__` annotation is on the function.
    unsafe fn annotated(&self, cursor: CXCursor) -> bool {
        children(cursor).into_iter().any(|c| {
            clang_getCursorKind(c) == CXCursor_AnnotateAttr
                && take(clang_getCursorSpelling(c)) == GLOBAL_ANNOTATION
        })
    }

    /// What the raw tokens around a function's name say: whether
    /// `__global__` precedes it (a header may have redefined the macro) and
    /// whether a body follows its parameter list. (With bodies skipped,
    /// libclang no longer calls a definition one.)
    unsafe fn shape(&mut self, cursor: CXCursor, name: &str) -> Shape {
        // The expansion location: where the name is in the file.
        let mut file: CXFile = std::ptr::null_mut();
        let mut offset: c_uint = 0;
        clang_getExpansionLocation(
            clang_getCursorLocation(cursor),
            &mut file,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut offset,
        );
        // When the name is not where expected (built by a macro), assume a
        // definition: a launcher too many fails no build.
        let unknown = Shape {
            global: false,
            body: true,
        };
        if file.is_null() {
            return unknown;
        }
        let path = PathBuf::from(take(clang_getFileName(file)));
        let tokens = self.file_tokens(&path);
        let Ok(at) = tokens.binary_search_by_key(&offset, |t| t.offset) else {
            return unknown;
        };
        if tokens[at].text != name {
            return unknown;
        }
        let global = tokens[..at]
            .iter()
            .rev()
            .take_while(|t| !matches!(t.text.as_str(), ";" | "{" | "}"))
            .any(|t| t.text == "__global__");
        let mut depth = 0usize;
        let mut body = false;
        for t in &tokens[at + 1..] {
            match t.text.as_str() {
                "(" => depth += 1,
                ")" => depth = depth.saturating_sub(1),
                "{" if depth == 0 => {
                    body = true;
                    break;
                }
                ";" if depth == 0 => break,
                _ => {}
            }
        }
        Shape { global, body }
    }

    /// The tokens of a whole file (cached).
    unsafe fn file_tokens(&mut self, path: &Path) -> &[Tok] {
        let tu = self.tu;
        self.tokens
            .entry(path.to_path_buf())
            .or_insert_with(|| tokenize_file(tu, path))
    }
}

/// What the tokens say about a function declaration.
struct Shape {
    global: bool,
    body: bool,
}

unsafe fn tokenize_file(tu: CXTranslationUnit, path: &Path) -> Vec<Tok> {
    let c_path = cstring(&path.to_string_lossy());
    let file = clang_getFile(tu, c_path.as_ptr());
    if file.is_null() {
        return Vec::new();
    }
    let mut size: usize = 0;
    if clang_getFileContents(tu, file, &mut size).is_null() {
        return Vec::new();
    }
    let range = clang_getRange(
        clang_getLocationForOffset(tu, file, 0),
        clang_getLocationForOffset(tu, file, size as c_uint),
    );
    let mut tokens: *mut CXToken = std::ptr::null_mut();
    let mut count: c_uint = 0;
    clang_tokenize(tu, range, &mut tokens, &mut count);
    if tokens.is_null() {
        return Vec::new();
    }
    let out = std::slice::from_raw_parts(tokens, count as usize)
        .iter()
        .map(|&t| {
            let mut line: c_uint = 0;
            let mut offset: c_uint = 0;
            clang_getFileLocation(
                clang_getTokenLocation(tu, t),
                std::ptr::null_mut(),
                &mut line,
                std::ptr::null_mut(),
                &mut offset,
            );
            Tok {
                kind: clang_getTokenKind(t),
                text: take(clang_getTokenSpelling(tu, t)),
                line,
                offset,
            }
        })
        .collect();
    clang_disposeTokens(tu, tokens, count);
    out
}

/// Maps a parameter type, or says why it has no mapping.
unsafe fn map_type(ty: CXType) -> Result<ParamKind, String> {
    let ty = strip_sugar(ty);
    match ty.kind {
        CXType_Pointer => {
            let pointee = clang_getPointeeType(ty);
            let is_const = clang_isConstQualifiedType(pointee) != 0;
            if let Some(s) = scalar(pointee) {
                return Ok(if is_const {
                    ParamKind::ConstPtr(s)
                } else {
                    ParamKind::MutPtr(s)
                });
            }
            let inner = clang_getCanonicalType(pointee);
            Err(match inner.kind {
                CXType_Pointer => "a pointer to a pointer, which has no mapping (pass a \
                                   flat buffer and offsets)"
                    .into(),
                CXType_Void => "a void pointer, which has no element type to check \
                                (use a typed pointer)"
                    .into(),
                CXType_Record => "a pointer to a struct, which has no mapping (its \
                                  layout is not known to Rust)"
                    .into(),
                _ => "a pointer to a type with no mapping".into(),
            })
        }
        CXType_LValueReference | CXType_RValueReference => {
            Err("a reference, which a kernel cannot take from the host".into())
        }
        _ => match scalar(ty) {
            Some(s) => Ok(ParamKind::Value(s)),
            None => Err(match clang_getCanonicalType(ty).kind {
                CXType_Record => "a struct passed by value, which has no mapping (pass \
                                  its fields, or a pointer to device memory)"
                    .into(),
                CXType_Enum => "an enum, which has no mapping (pass its underlying \
                                integer type)"
                    .into(),
                CXType_LongDouble => "long double, which device code does not support".into(),
                _ => "which has no mapping".into(),
            }),
        },
    }
}

/// Removes elaboration (`struct X`, `ns::X`) and parentheses.
unsafe fn strip_sugar(mut ty: CXType) -> CXType {
    loop {
        match ty.kind {
            CXType_Elaborated => ty = clang_Type_getNamedType(ty),
            CXType_Unexposed => {
                let canonical = clang_getCanonicalType(ty);
                if canonical.kind == CXType_Unexposed {
                    return ty;
                }
                ty = canonical;
            }
            _ => return ty,
        }
    }
}

/// The scalar a type is, following typedefs until a name in the table or a
/// builtin type is reached.
unsafe fn scalar(ty: CXType) -> Option<Scalar> {
    let mut ty = strip_sugar(ty);
    for _ in 0..32 {
        match ty.kind {
            CXType_Typedef | CXType_Record => {
                let decl = clang_getTypeDeclaration(ty);
                let name = take(clang_getCursorSpelling(decl));
                if let Some(s) = Scalar::by_name(&name) {
                    return Some(s);
                }
                if ty.kind == CXType_Record {
                    return None;
                }
                ty = strip_sugar(clang_getTypedefDeclUnderlyingType(decl));
            }
            kind => return builtin(kind),
        }
    }
    None
}

fn builtin(kind: CXTypeKind) -> Option<Scalar> {
    Some(match kind {
        CXType_Bool => Scalar::Bool,
        CXType_Char_S | CXType_Char_U => Scalar::CChar,
        CXType_SChar => Scalar::I8,
        CXType_UChar => Scalar::U8,
        CXType_Short => Scalar::I16,
        CXType_UShort => Scalar::U16,
        CXType_Int => Scalar::I32,
        CXType_UInt => Scalar::U32,
        CXType_Long => Scalar::CLong,
        CXType_ULong => Scalar::CULong,
        CXType_LongLong => Scalar::I64,
        CXType_ULongLong => Scalar::U64,
        CXType_Float => Scalar::F32,
        CXType_Double => Scalar::F64,
        CXType_Half | CXType_Float16 => Scalar::F16,
        _ => return None,
    })
}

unsafe fn diagnostics(tu: CXTranslationUnit) -> Vec<Diag> {
    let mut out = Vec::new();
    for i in 0..clang_getNumDiagnostics(tu) {
        let diag = clang_getDiagnostic(tu, i);
        let severity = clang_getDiagnosticSeverity(diag);
        if severity >= CXDiagnostic_Error {
            if let Some((file, line)) = file_line(clang_getDiagnosticLocation(diag)) {
                let text = take(clang_getDiagnosticSpelling(diag));
                out.push(Diag {
                    // Under KeepGoing a missing include is an error, not fatal.
                    missing_include: text.ends_with("file not found"),
                    file,
                    line,
                    text,
                });
            }
        }
        clang_disposeDiagnostic(diag);
    }
    out
}

/// The file and line of a location; None where it has no file.
unsafe fn file_line(loc: CXSourceLocation) -> Option<(PathBuf, u32)> {
    let mut file: CXFile = std::ptr::null_mut();
    let mut line: c_uint = 0;
    clang_getFileLocation(
        loc,
        &mut file,
        &mut line,
        std::ptr::null_mut(),
        std::ptr::null_mut(),
    );
    (!file.is_null()).then(|| (PathBuf::from(take(clang_getFileName(file))), line))
}

unsafe fn children(cursor: CXCursor) -> Vec<CXCursor> {
    extern "C" fn visit(c: CXCursor, _parent: CXCursor, data: CXClientData) -> CXChildVisitResult {
        // SAFETY: `data` is the Vec passed below, alive for the whole visit.
        unsafe { (*(data as *mut Vec<CXCursor>)).push(c) };
        CXChildVisit_Continue
    }
    let mut out: Vec<CXCursor> = Vec::new();
    clang_visitChildren(
        cursor,
        visit,
        &mut out as *mut Vec<CXCursor> as CXClientData,
    );
    out
}

/// Converts and frees a libclang string.
unsafe fn take(s: CXString) -> String {
    let ptr = clang_getCString(s);
    let out = if ptr.is_null() {
        String::new()
    } else {
        CStr::from_ptr(ptr).to_string_lossy().into_owned()
    };
    clang_disposeString(s);
    out
}

/// A C string; interior NULs (impossible in paths and flags from cargo) are dropped.
fn cstring(s: &str) -> CString {
    CString::new(s.replace('\0', "")).unwrap_or_default()
}
