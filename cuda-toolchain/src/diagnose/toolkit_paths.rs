//! Toolkit paths made malformed by a variable, seen only inside another
//! tool's error: Python's `FileNotFoundError: ... '/usr/local/cuda-12.1:/bin/nvcc'`,
//! a quoted CUDA_HOME pasted into a path (`'"/usr/local/cuda"/bin/nvcc'`),
//! a stray `:` or space. No tool splits or unquotes CUDA_HOME.

use super::codes::Code;
use super::scan::{Fact, LineCx};

/// Paths to a toolkit program, in quotes, on the line: from the quote
/// after the program's name back to the same quote before it (nested
/// quotes, as in a Python list repr `['/x/bin/nvcc', '-V']`, stay apart).
fn quoted_tool_paths(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for tool in ["bin/nvcc", "bin\\nvcc", "bin/ptxas", "bin\\ptxas"] {
        for (p, _) in line.match_indices(tool) {
            let mut end = p + tool.len();
            if line[end..].starts_with(".exe") {
                end += 4;
            }
            let Some(q) = line[end..]
                .chars()
                .next()
                .filter(|c| matches!(c, '\'' | '"' | '`'))
            else {
                continue;
            };
            let Some(start) = line[..p].rfind(q) else {
                continue;
            };
            let inside = &line[start + 1..end];
            if inside.len() < 512 && !inside.contains(" -") {
                out.push(inside);
            }
        }
    }
    out
}

/// What is wrong with a toolkit path, if anything.
fn malformed(path: &str) -> Option<&'static str> {
    // A Windows drive (`C:\`) is the only colon a path may hold.
    let after_drive = match path.as_bytes() {
        [d, b':', b'\\' | b'/', ..] if d.is_ascii_alphabetic() => &path[2..],
        _ => path,
    };
    if after_drive.contains(':') {
        Some("holds a `:`: CUDA_HOME (or CUDA_PATH) is several paths joined like PATH, or has a stray colon, and was used as one directory")
    } else if path.contains('"') || path.contains('\'') {
        Some("holds a quote character: CUDA_HOME was set with quotes inside its value (`CUDA_HOME='\"/usr/local/cuda\"'`), which no tool strips")
    } else if path != path.trim() {
        Some("starts or ends with a space: CUDA_HOME has stray whitespace")
    } else {
        None
    }
}

pub(crate) fn extract(cx: &mut LineCx) {
    if cx.gave(Code::CudaHomeInvalid) {
        return;
    }
    let lower = cx.line.to_ascii_lowercase();
    // The path failed (a tool could not run it), rather than merely appearing.
    let failed = [
        "no such file",
        "not found",
        "cannot find",
        "errno",
        "failed",
        "error",
        "is not recognized",
    ]
    .iter()
    .any(|w| lower.contains(w));
    for p in quoted_tool_paths(cx.line) {
        if let Some(why) = malformed(p) {
            let note = format!("`{p}` {why}.");
            cx.hit_as(
                Code::CudaHomeInvalid,
                Fact::Text(note),
                if failed { 0.8 } else { 0.45 },
            );
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_malformed_paths_from_good_ones() {
        assert!(malformed("/usr/local/cuda-12.1:/bin/nvcc").is_some());
        assert!(malformed("\"/usr/local/cuda\"/bin/nvcc").is_some());
        assert!(malformed(":/usr/local/cuda/bin/nvcc").is_some());
        assert!(malformed(
            "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.4\\bin\\nvcc.exe"
        )
        .is_none());
        assert!(malformed("/usr/local/cuda/bin/nvcc").is_none());
    }
}
