//! Every variable the project reads (`Var::ALL`, walked whole): a value that
//! is not UTF-8, or that does not parse, gets a warning naming it (or, for
//! the few checked where they are used, that place's error). A variable
//! added to the table is covered without a change here, unless its values
//! may be anything: then it must be listed below, with the reason.

use cuda_toolchain::env::{Env, Var};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

/// Not UTF-8 (a Latin-1 path, say).
const NOT_UTF8: &[u8] = b"/tmp/caf\xe9-\xff";

/// No variable's shape fits this: a control character, a space, a symbol.
const GARBAGE: &str = "\u{1}garbage \u{2603} {{";

/// Used only as the bytes the OS gave (a search path, a program to run,
/// "set at all"), so any bytes are a valid value.
const ANY_BYTES: &[&str] = &[
    "PATH",
    "LD_LIBRARY_PATH",
    "XDG_CACHE_HOME",
    "NO_COLOR",
    "DOCS_RS",
    "CARGO",
    "CARGO_CUDA_PROGRESS",
];

/// Any text is a valid value: "set at all" switches, and text handed on
/// unread (nvcc's own flag variables, cargo-style host lists).
const ANY_TEXT: &[&str] = &[
    "NO_COLOR",
    "DOCS_RS",
    "CI",
    "NVCC_PREPEND_FLAGS",
    "NVCC_APPEND_FLAGS",
    "CUDA_NVCC_FLAGS",
    "NO_PROXY",
    "no_proxy",
    // Cargo's own: any package name and version cargo accepted (the
    // timings report's label; hashed into module anchors), and rustflags
    // (only `-C target-cpu` is read from them).
    "CARGO_PKG_NAME",
    "CARGO_PKG_VERSION",
    "CARGO_ENCODED_RUSTFLAGS",
];

#[test]
fn every_variable_that_is_not_utf8_is_named() {
    for var in Var::ALL {
        let name = var.name();
        let w = Env::empty().set(*var, OsStr::from_bytes(NOT_UTF8)).check();
        if ANY_BYTES.contains(&name) {
            assert_eq!(w, Vec::<String>::new(), "{name} takes any bytes");
            continue;
        }
        assert_eq!(w.len(), 1, "{name}: {w:?}");
        assert!(
            w[0].starts_with(&format!(
                "{name} is not valid UTF-8, so it is ignored; set it to "
            )),
            "{name}: {w:?}"
        );
    }
}

#[test]
fn every_variable_with_garbage_is_named() {
    for var in Var::ALL {
        let name = var.name();
        let env = Env::empty().set(*var, GARBAGE);
        let w = env.check();
        match name {
            _ if ANY_TEXT.contains(&name) => {
                assert_eq!(w, Vec::<String>::new(), "{name} takes any text");
            }
            // The kernel cache parses its URL, and says what is wrong once:
            // in the build's warning and in `info`/`doctor` (cache_status).
            "CUDA_BUILD_CACHE_REDIS" => {
                assert_eq!(w, Vec::<String>::new(), "{name}: not twice");
                let st = cuda_build::compile::cache_status(&env);
                assert!(
                    st.remote_problem
                        .as_deref()
                        .is_some_and(|p| p.contains("redis://")),
                    "{st:?}"
                );
            }
            // The arch list in use fails the plan, naming the variable.
            "CUDA_ARCHS" | "CUDAARCHS" | "CUDA_COMPUTE_CAP" => {
                assert_eq!(
                    w,
                    Vec::<String>::new(),
                    "{name}: the plan's error, not a warning too"
                );
                let e = cuda_toolchain::plan::resolve_spec(&env, &Default::default()).unwrap_err();
                assert!(e.message.contains(name), "{name}: {e}");
            }
            _ => {
                assert_eq!(w.len(), 1, "{name}: {w:?}");
                assert!(w[0].starts_with(name), "{name}: {w:?}");
                assert!(
                    w[0].contains("expected") || w[0].contains("unset it"),
                    "{name}: {w:?}"
                );
            }
        }
    }
}

/// A non-UTF-8 `CUDA_BUILD_CACHE_REDIS` was silently ignored: `info` and
/// `doctor` (through cache_status) say so now.
#[test]
fn a_redis_url_that_is_not_utf8_is_not_silently_ignored() {
    let env = Env::empty().set(Var::CudaBuildCacheRedis, OsStr::from_bytes(NOT_UTF8));
    let st = cuda_build::compile::cache_status(&env);
    assert!(
        st.remote_problem
            .as_deref()
            .is_some_and(|p| p.contains("CUDA_BUILD_CACHE_REDIS is not valid UTF-8")),
        "{st:?}"
    );
}
