//! PyTorch's `TORCH_CUDA_ARCH_LIST`, read as PyTorch reads it.
//!
//! Source: `torch/utils/cpp_extension.py`, `_get_cuda_arch_flags` (PyTorch
//! 2.8): spaces become `;`, architecture names are replaced textually
//! (combined names first), and each item must be `X.Y` (or `X.Ya`), with an
//! optional `+PTX`. `X.Y` gives `-gencode=arch=compute_XY,code=sm_XY` (SASS
//! only); `+PTX` adds `code=compute_XY`. An unset or `native` list means the
//! visible GPUs. (Unlike CMake, where a plain `86` means SASS *and* PTX.)

use crate::arch::{Arch, ArchRequest, ArchSpec, ArchTarget, CodeKind, Variant};
use crate::Error;

/// PyTorch 2.8's named architectures, combined names first (the order in
/// which it replaces them). Older PyTorch releases expand `Blackwell` to
/// `10.0;12.0+PTX` and `Blackwell+Tegra` to `10.1` (sm_101 became sm_110 in
/// CUDA 13).
const NAMED: &[(&str, &str)] = &[
    ("Kepler+Tesla", "3.7"),
    ("Kepler", "3.5+PTX"),
    ("Maxwell+Tegra", "5.3"),
    ("Maxwell", "5.0;5.2+PTX"),
    ("Pascal", "6.0;6.1+PTX"),
    ("Volta+Tegra", "7.2"),
    ("Volta", "7.0+PTX"),
    ("Turing", "7.5+PTX"),
    ("Ampere+Tegra", "8.7"),
    ("Ampere", "8.0;8.6+PTX"),
    ("Ada", "8.9+PTX"),
    ("Hopper", "9.0+PTX"),
    ("Blackwell+Tegra", "11.0"),
    ("Blackwell", "10.0;10.3;12.0;12.1+PTX"),
];

/// What a valid `TORCH_CUDA_ARCH_LIST` looks like, for messages.
pub const EXPECTED: &str = crate::env::TORCH_ARCHS_EXPECTED;

/// Parses a `TORCH_CUDA_ARCH_LIST` value into an arch list with PyTorch's
/// meaning: `8.6` is SASS only, `8.6+PTX` SASS and PTX.
///
/// ```
/// use cuda_toolchain::interop::torch::parse;
/// let spec = parse("8.0 Ampere+Tegra;9.0a+PTX").unwrap();
/// assert_eq!(spec.to_string(), "80-real;87-real;90a");
/// assert_eq!(parse("Ampere").unwrap().to_string(), "80-real;86");
/// assert!(parse("sm_86").is_err(), "PyTorch wants 8.6");
/// ```
pub fn parse(value: &str) -> Result<ArchSpec, Error> {
    let trimmed = value.trim();
    if trimmed.eq_ignore_ascii_case("native") {
        return Ok(ArchSpec(vec![ArchRequest::Native]));
    }
    let mut text = trimmed.replace(char::is_whitespace, ";");
    for (name, archs) in NAMED {
        text = text.replace(name, archs);
    }
    let mut out = Vec::new();
    for item in text.split(';').filter(|i| !i.is_empty()) {
        out.push(ArchRequest::Target(item_target(item).map_err(|why| {
            Error::new(
                "arch-invalid",
                format!(
                    "TORCH_CUDA_ARCH_LIST={} is not a PyTorch arch list: {why}",
                    crate::error::show_value(value)
                ),
            )
            .with_help(format!("expected {EXPECTED}"))
        })?));
    }
    if out.is_empty() {
        return Err(Error::new(
            "arch-invalid",
            "TORCH_CUDA_ARCH_LIST is set but names no architecture",
        )
        .with_help(format!("expected {EXPECTED}")));
    }
    Ok(ArchSpec(out))
}

/// One `X.Y`, `X.Ya`, `X.Y+PTX` item.
fn item_target(item: &str) -> Result<ArchTarget, String> {
    let (body, kind) = match item.strip_suffix("+PTX") {
        Some(b) => (b, CodeKind::Both),
        None => (item, CodeKind::Real),
    };
    let shown: String = item.chars().take(40).collect();
    let (num, variant) = match body.strip_suffix('a') {
        Some(n) => (n, Variant::Specific),
        None => (body, Variant::Plain),
    };
    let Some((major, minor)) = num.split_once('.') else {
        return Err(format!(
            "`{shown}` is not `X.Y` (PyTorch writes 8.6, not 86 or sm_86)"
        ));
    };
    let digits = |s: &str, max: usize| {
        (!s.is_empty() && s.len() <= max && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<u32>().ok())
            .flatten()
    };
    match (digits(major, 2), digits(minor, 1)) {
        (Some(major), Some(minor)) if major > 0 => Ok(ArchTarget {
            arch: Arch::new(major, minor).with_variant(variant),
            kind,
        }),
        _ => Err(format!(
            "`{shown}` is not `X.Y` with a one- or two-digit major and a one-digit minor"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytorch_forms() {
        let p = |s: &str| parse(s).map(|a| a.to_string());
        assert_eq!(p("8.0;8.6+PTX").unwrap(), "80-real;86");
        assert_eq!(p("6.1 7.5  8.6+PTX").unwrap(), "61-real;75-real;86");
        assert_eq!(p("Hopper").unwrap(), "90");
        assert_eq!(p("Blackwell").unwrap(), "100-real;103-real;120-real;121");
        assert_eq!(p("Blackwell+Tegra").unwrap(), "110-real");
        assert_eq!(p("Kepler+Tesla;Volta").unwrap(), "37-real;70");
        assert_eq!(p("10.0a;12.0").unwrap(), "100a-real;120-real");
        assert_eq!(p(" native ").unwrap(), "native");
        assert_eq!(p("8.6;").unwrap(), "86-real", "an empty item is skipped");
    }

    #[test]
    fn garbage_names_the_variable_and_the_form() {
        for bad in [
            "86", "sm_86", "8.6+ptx", "eight", "8.", ".6", "8.66", "100.0", "0.5", ";", "Amperes",
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.message.contains("TORCH_CUDA_ARCH_LIST"), "{bad}: {e}");
            assert!(
                e.help.iter().any(|h| h.contains("8.0;8.6+PTX")),
                "{bad}: {e}"
            );
        }
        let long = "x".repeat(10_000);
        assert!(parse(&long).unwrap_err().message.len() < 400);
    }
}
