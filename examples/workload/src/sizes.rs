//! Problem sizes: parsed and checked before anything is launched.
//!
//! The checks are pure functions of the size and the device's free memory,
//! so CI tests them without a GPU. A refused size never reaches a kernel.

use cuda_toolchain::Error;

/// Smallest element count the bandwidth kernels time: below this, launch
/// overhead and not memory is what gets measured.
pub const MIN_VECTOR_LEN: u64 = 1024;
/// Element counts must be whole float4 vectors (the kernels' 16-byte loads).
pub const VECTOR_MULTIPLE: u64 = 4;
/// SGEMM sizes must be whole 128 x 128 tiles (and so whole k-steps of 16 / 32).
pub const GEMM_TILE: u64 = 128;
/// Device memory left free for the context, cuBLAS's workspace and the
/// allocator's rounding: a size that fits only without it is refused.
pub const MEMORY_HEADROOM: u64 = 256 << 20;

/// Parses an element count: digits with optional `_` separators, or a
/// binary suffix `Ki`, `Mi`, `Gi` (`256Mi` = 268435456), or `2^N`.
///
/// ```ignore
/// assert_eq!(parse_count("--size", "256Mi").unwrap(), 1 << 28);
/// ```
pub fn parse_count(flag: &str, text: &str) -> Result<u64, Error> {
    let bad = || {
        Error::new(
            "invalid-size",
            format!("{flag} `{text}` is not a size: expected a whole number of elements"),
        )
        .with_help(format!(
            "write it as digits (`{flag} 268435456`, `{flag} 268_435_456`), with a binary suffix (`{flag} 256Mi`) or as a power of two (`{flag} 2^28`)"
        ))
    };
    let t = text.trim();
    if let Some(exp) = t.strip_prefix("2^") {
        let e: u32 = exp.parse().map_err(|_| bad())?;
        return 1u64.checked_shl(e).filter(|_| e < 64).ok_or_else(bad);
    }
    let (digits, scale) = match t {
        _ if t.ends_with("Ki") => (&t[..t.len() - 2], 1u64 << 10),
        _ if t.ends_with("Mi") => (&t[..t.len() - 2], 1u64 << 20),
        _ if t.ends_with("Gi") => (&t[..t.len() - 2], 1u64 << 30),
        _ => (t, 1),
    };
    let cleaned: String = digits.chars().filter(|&c| c != '_').collect();
    if cleaned.is_empty() || !cleaned.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    cleaned
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(bad)
}

/// Checks the element count of the memory-bound kernels (vectorAdd, SAXPY,
/// reduction), which need `buffers` f32 arrays of `n` elements on the
/// device. `free_bytes` is the device's free memory (None: not known yet,
/// so only the shape is checked).
pub fn validate_vector_len(
    flag: &str,
    n: u64,
    buffers: u64,
    free_bytes: Option<u64>,
) -> Result<u64, Error> {
    if n == 0 {
        return Err(Error::new(
            "invalid-size",
            format!("{flag} 0: there is nothing to compute"),
        )
        .with_help(format!(
            "give at least {MIN_VECTOR_LEN} elements, e.g. `{flag} 256Mi`"
        )));
    }
    if n < MIN_VECTOR_LEN {
        return Err(Error::new(
            "invalid-size",
            format!("{flag} {n}: too small to measure, launch overhead would dominate"),
        )
        .with_help(format!(
            "give at least {MIN_VECTOR_LEN} elements; far above the GPU's L2 (e.g. `{flag} 256Mi`) to measure memory bandwidth"
        )));
    }
    if !n.is_multiple_of(VECTOR_MULTIPLE) {
        let down = n / VECTOR_MULTIPLE * VECTOR_MULTIPLE;
        return Err(Error::new(
            "invalid-size",
            format!(
                "{flag} {n}: not a multiple of {VECTOR_MULTIPLE}; the timed kernels load whole float4 vectors"
            ),
        )
        .with_help(format!("use {down} or {}", down + VECTOR_MULTIPLE)));
    }
    check_memory(flag, n, n.checked_mul(4 * buffers), free_bytes)?;
    Ok(n)
}

/// Checks the side of the square SGEMM (`n x n x n`), which needs three
/// `n x n` f32 matrices on the device and an `int` side for the kernel.
pub fn validate_gemm_dim(flag: &str, n: u64, free_bytes: Option<u64>) -> Result<u64, Error> {
    if n < GEMM_TILE {
        return Err(Error::new(
            "invalid-size",
            format!(
                "{flag} {n}: smaller than one {GEMM_TILE} x {GEMM_TILE} tile of the SGEMM kernels"
            ),
        )
        .with_help(format!(
            "give a multiple of {GEMM_TILE}, e.g. `{flag} 8192`"
        )));
    }
    if !n.is_multiple_of(GEMM_TILE) {
        let down = n / GEMM_TILE * GEMM_TILE;
        return Err(Error::new(
            "invalid-size",
            format!("{flag} {n}: not a multiple of {GEMM_TILE}, the SGEMM kernels' tile"),
        )
        .with_help(format!("use {down} or {}", down + GEMM_TILE)));
    }
    if n > i32::MAX as u64 {
        return Err(Error::new(
            "invalid-size",
            format!("{flag} {n}: larger than the kernels' 32-bit matrix side"),
        )
        .with_help(format!(
            "give at most {}",
            i32::MAX as u64 / GEMM_TILE * GEMM_TILE
        )));
    }
    let bytes = n.checked_mul(n).and_then(|e| e.checked_mul(3 * 4));
    check_memory(flag, n, bytes, free_bytes)?;
    Ok(n)
}

/// Largest side of the SGEMM checked in full: the CPU reference costs n^3
/// multiply-adds in f64 (4096: 69 G, seconds on a few cores).
pub const MAX_VERIFY_GEMM: u64 = 4096;

/// Checks the side of the SGEMM verified entry by entry on the CPU.
pub fn validate_verify_gemm_dim(flag: &str, n: u64) -> Result<u64, Error> {
    if n > MAX_VERIFY_GEMM {
        return Err(Error::new(
            "invalid-size",
            format!(
                "{flag} {n}: the CPU reference would need {n}^3 multiply-adds; at most {MAX_VERIFY_GEMM} is checked in full"
            ),
        )
        .with_help(format!(
            "give a multiple of {GEMM_TILE} up to {MAX_VERIFY_GEMM} (default 1024); the timed --gemm-size is sample-checked at any size"
        )));
    }
    Ok(n)
}

fn check_memory(
    flag: &str,
    n: u64,
    bytes: Option<u64>,
    free_bytes: Option<u64>,
) -> Result<(), Error> {
    let Some(free) = free_bytes else {
        // Still refuse sizes no device could hold (the byte count overflows).
        return match bytes {
            Some(_) => Ok(()),
            None => Err(too_big(flag, n, None, None)),
        };
    };
    match bytes {
        Some(b) if b.saturating_add(MEMORY_HEADROOM) <= free => Ok(()),
        b => Err(too_big(flag, n, b, Some(free))),
    }
}

fn too_big(flag: &str, n: u64, bytes: Option<u64>, free: Option<u64>) -> Error {
    let need = match bytes {
        Some(b) => format!("{} of device memory", gib(b)),
        None => "more bytes than a 64-bit size can count".to_string(),
    };
    let have = match free {
        Some(f) => format!(", but {} is free", gib(f)),
        None => String::new(),
    };
    Error::new("out-of-memory", format!("{flag} {n}: needs {need}{have}")).with_help(format!(
        "choose a smaller {flag}; {} stays free for the CUDA context and cuBLAS",
        gib(MEMORY_HEADROOM)
    ))
}

/// Bytes as GiB with two decimals.
pub fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn parses_plain_separated_suffixed_and_powers() {
        assert_eq!(parse_count("--size", "50000").unwrap(), 50_000);
        assert_eq!(parse_count("--size", "268_435_456").unwrap(), 1 << 28);
        assert_eq!(parse_count("--size", "256Mi").unwrap(), 1 << 28);
        assert_eq!(parse_count("--size", "4Ki").unwrap(), 4096);
        assert_eq!(parse_count("--size", "1Gi").unwrap(), GIB);
        assert_eq!(parse_count("--size", "2^28").unwrap(), 1 << 28);
    }

    #[test]
    fn rejects_garbage_naming_the_flag() {
        for bad in [
            "",
            "-5",
            "1.5",
            "abc",
            "12MB",
            "2^64",
            "2^x",
            "99999999999999999999",
            "Mi",
        ] {
            let e = parse_count("--size", bad).unwrap_err();
            assert_eq!(e.code, "invalid-size", "{bad}");
            assert!(e.message.contains("--size"), "{bad}: {}", e.message);
        }
        // 2^34 Gi overflows u64 after scaling.
        assert!(parse_count("--size", "17179869184Gi").is_err());
    }

    #[test]
    fn refuses_zero_one_small_and_primes() {
        let zero = validate_vector_len("--size", 0, 3, None).unwrap_err();
        assert!(zero.message.contains("nothing to compute"), "{zero}");
        let one = validate_vector_len("--size", 1, 3, None).unwrap_err();
        assert!(one.message.contains("too small"), "{one}");
        // Primes above the minimum are never whole float4 counts.
        for prime in [1031u64, 50_021, 1_000_003, 268_435_399] {
            let e = validate_vector_len("--size", prime, 3, None).unwrap_err();
            assert!(e.message.contains("multiple of 4"), "{prime}: {e}");
            let down = prime / 4 * 4;
            assert!(e.help[0].contains(&down.to_string()), "{e}");
        }
    }

    #[test]
    fn accepts_whole_vectors_that_fit() {
        assert_eq!(
            validate_vector_len("--size", 1 << 28, 3, Some(140 * GIB)).unwrap(),
            1 << 28
        );
        assert_eq!(
            validate_vector_len("--size", 50_000, 3, None).unwrap(),
            50_000
        );
        assert_eq!(
            validate_vector_len("--size", MIN_VECTOR_LEN, 1, Some(GIB)).unwrap(),
            MIN_VECTOR_LEN
        );
    }

    #[test]
    fn refuses_more_than_device_memory() {
        // 3 buffers of 16 Gi floats = 192 GiB > 141 GiB.
        let e = validate_vector_len("--size", 16 * GIB, 3, Some(141 * GIB)).unwrap_err();
        assert_eq!(e.code, "out-of-memory");
        assert!(
            e.message.contains("192.00 GiB") && e.message.contains("141.00 GiB"),
            "{e}"
        );
        // Fits only without the headroom: refused too.
        let exact = 3 * 4 * (1u64 << 28);
        assert!(validate_vector_len("--size", 1 << 28, 3, Some(exact)).is_err());
        assert!(validate_vector_len("--size", 1 << 28, 3, Some(exact + MEMORY_HEADROOM)).is_ok());
        // Byte count overflow is refused even before the device is known.
        assert_eq!(
            validate_vector_len("--size", u64::MAX / 4 * 4, 3, None)
                .unwrap_err()
                .code,
            "out-of-memory"
        );
    }

    #[test]
    fn gemm_sizes_are_whole_tiles() {
        for n in [0u64, 1, 127] {
            let e = validate_gemm_dim("--gemm-size", n, None).unwrap_err();
            assert!(e.message.contains("smaller than one"), "{n}: {e}");
        }
        let e = validate_gemm_dim("--gemm-size", 8191, None).unwrap_err(); // prime
        assert!(
            e.message.contains("multiple of 128") && e.help[0].contains("8064 or 8192"),
            "{e}"
        );
        assert_eq!(
            validate_gemm_dim("--gemm-size", 8192, Some(140 * GIB)).unwrap(),
            8192
        );
        assert_eq!(validate_gemm_dim("--gemm-size", 128, None).unwrap(), 128);
        assert_eq!(
            validate_gemm_dim("--gemm-size", 1 << 31, None)
                .unwrap_err()
                .code,
            "invalid-size"
        );
    }

    #[test]
    fn full_gemm_check_is_bounded() {
        assert_eq!(
            validate_verify_gemm_dim("--verify-gemm-size", 1024).unwrap(),
            1024
        );
        assert_eq!(
            validate_verify_gemm_dim("--verify-gemm-size", MAX_VERIFY_GEMM).unwrap(),
            MAX_VERIFY_GEMM
        );
        let e = validate_verify_gemm_dim("--verify-gemm-size", 65_536).unwrap_err();
        assert_eq!(e.code, "invalid-size");
        assert!(e.message.contains("--verify-gemm-size 65536"), "{e}");
    }

    #[test]
    fn gemm_refuses_more_than_device_memory() {
        // 3 x 65536^2 x 4 B = 48 GiB.
        let e = validate_gemm_dim("--gemm-size", 65_536, Some(40 * GIB)).unwrap_err();
        assert_eq!(e.code, "out-of-memory");
        assert!(e.message.contains("48.00 GiB"), "{e}");
        assert!(validate_gemm_dim("--gemm-size", 65_536, Some(49 * GIB)).is_ok());
    }
}
