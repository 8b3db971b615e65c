//! Wheel (zip) unpacking into a staging directory: pip's layout as is, or
//! one standard toolkit root (bin/, include/, lib64/, nvvm/).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// Where a wheel's files go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `nvidia/cu13/bin/nvcc` → `bin/nvcc`, `lib/` → `lib64/`, no `*.dist-info`.
    Root,
    /// Every file where pip puts it (`pip install --target`).
    Wheel,
}

/// Maps a path inside a wheel to its place under the destination, or `None` to skip it.
fn place(layout: Layout, inner: &Path) -> Option<PathBuf> {
    if layout == Layout::Wheel {
        return Some(inner.to_path_buf());
    }
    let mut parts = inner.components();
    if parts.next()?.as_os_str() != "nvidia" {
        return None; // *.dist-info and anything outside nvidia/
    }
    parts.next()?; // cu13 (13.x) or cuda_nvcc (split 11.x/12.x layouts)
    let rest: PathBuf = parts.collect();
    let mut it = rest.components();
    let head = it.next()?;
    if head.as_os_str() == "lib" {
        return Some(Path::new("lib64").join(it.as_path()));
    }
    Some(rest)
}

/// Unpacks one wheel into `dest`; returns the bytes written.
pub fn unpack(wheel: &Path, dest: &Path, layout: Layout) -> io::Result<u64> {
    let mut zip = zip::ZipArchive::new(File::open(wheel)?)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    let mut written = 0;
    for i in 0..zip.len() {
        let mut entry = zip
            .by_index(i)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        // `enclosed_name` refuses `../` and absolute paths (zip-slip).
        let Some(inner) = entry.enclosed_name() else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("entry `{}` points outside the wheel", entry.name()),
            ));
        };
        let Some(rel) = place(layout, &inner) else {
            continue;
        };
        let out = dest.join(rel);
        if entry.is_dir() {
            std::fs::create_dir_all(&out)?;
            continue;
        }
        if let Some(parent) = out.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let mut f = File::create(&out)?;
        written += io::copy(&mut entry, &mut f)?;
        #[cfg(unix)]
        if let Some(mode) = entry.unix_mode() {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&out, std::fs::Permissions::from_mode(mode & 0o755 | 0o644))?;
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_layout_places() {
        let p = |s: &str| place(Layout::Root, Path::new(s));
        assert_eq!(p("nvidia/cu13/bin/nvcc"), Some(PathBuf::from("bin/nvcc")));
        assert_eq!(
            p("nvidia/cu13/lib/libcudart.so.13"),
            Some(PathBuf::from("lib64/libcudart.so.13"))
        );
        assert_eq!(
            p("nvidia/cu13/nvvm/bin/cicc"),
            Some(PathBuf::from("nvvm/bin/cicc"))
        );
        assert_eq!(p("nvidia_nvvm-13.0.88.dist-info/RECORD"), None);
        assert_eq!(
            place(
                Layout::Wheel,
                Path::new("nvidia_nvvm-13.0.88.dist-info/RECORD")
            ),
            Some(PathBuf::from("nvidia_nvvm-13.0.88.dist-info/RECORD"))
        );
    }
}
