//! Version numbers as CUDA's tools and packages write them: lenient
//! `X[.Y[.Z]]` (`13.0`, `12.4.131`, `11.8.89.post1`) and the
//! `Cuda compilation tools, release 13.0, V13.0.88` line. Below both the
//! toolkit reader (`toolkit::version`, which re-exports these) and the
//! kernel-image reader (a cubin's tool note).

/// Parses a lenient `X[.Y[.Z]]` version (`13.0`, `12.4.131`, `11.8.89.post1`).
pub fn parse_loose(text: &str) -> Option<semver::Version> {
    let mut parts = [0u64; 3];
    let mut count = 0;
    for piece in text.trim().split('.') {
        if count == 3 {
            break;
        }
        let digits: String = piece.chars().take_while(|c| c.is_ascii_digit()).collect();
        if digits.is_empty() {
            break;
        }
        parts[count] = digits.parse().ok()?;
        count += 1;
        if digits.len() != piece.len() {
            break;
        }
    }
    (count > 0).then(|| semver::Version::new(parts[0], parts[1], parts[2]))
}

/// The version in the `Cuda compilation tools, release 13.0, V13.0.88` line
/// printed by nvcc, ptxas, fatbinary, nvlink and embedded in cicc.
///
/// ```
/// # use cuda_toolchain::toolkit::version::parse_tool_version;
/// let v = parse_tool_version("Cuda compilation tools, release 13.0, V13.0.88\n").unwrap();
/// assert_eq!(v.to_string(), "13.0.88");
/// ```
pub fn parse_tool_version(text: &str) -> Option<semver::Version> {
    for line in text.lines() {
        let Some(pos) = line.find("release ") else {
            continue;
        };
        if !line.contains("compilation tools") {
            continue;
        }
        let rest = &line[pos + "release ".len()..];
        // Prefer the full `V13.0.88`; fall back to `release 13.0`.
        if let Some(v) = rest.find(", V").and_then(|i| parse_loose(&rest[i + 3..])) {
            return Some(v);
        }
        let release = rest.split(',').next().unwrap_or("");
        if let Some(v) = parse_loose(release) {
            return Some(v);
        }
    }
    None
}
