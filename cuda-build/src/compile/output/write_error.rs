//! An I/O error while writing an output (a kernel, the manifest, the
//! module, the library, a cache entry), as an error with a fix: a full disk
//! and a read-only directory each get their own code.

use cuda_toolchain::Error;
use std::path::Path;

/// Maps an I/O error while writing `path` to an error with a fix.
pub(crate) fn write_error(path: &Path, e: &std::io::Error) -> Error {
    let shown = path.display();
    match e.raw_os_error() {
        Some(28) => Error::new(
            "disk-full",
            format!("no space left on device while writing `{shown}`"),
        )
        .with_detail(e.to_string())
        .with_help("free space on that file system (or point CARGO_TARGET_DIR / CUDA_BUILD_CACHE_DIR elsewhere), then build again; nothing partial was kept"),
        Some(13) | Some(1) | Some(30) => Error::new(
            "out-dir-not-writable",
            format!("cannot write `{shown}`: {e}"),
        )
        .with_help("make the directory writable (or choose another with CARGO_TARGET_DIR / Build::out_dir)"),
        _ => Error::new("write-failed", format!("cannot write `{shown}`: {e}"))
            .with_help("check the path, its permissions and the free space"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enospc_is_disk_full() {
        let e = write_error(
            Path::new("/o/k.fatbin"),
            &std::io::Error::from_raw_os_error(28),
        );
        assert_eq!(e.code, "disk-full");
        assert!(e.message.contains("/o/k.fatbin"));
    }
}
