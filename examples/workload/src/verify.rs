//! Random inputs, CPU references and the tolerances each kernel is held to.
//!
//! Tolerances are stated, not tuned: vectorAdd and SAXPY are exactly
//! rounded on both sides (a + b; fmaf / `f32::mul_add`), so they must match
//! bit for bit. Sums and dot products are held to the standard worst-case
//! bound of floating-point summation: |error| <= L * eps * sum |terms| for
//! chains of length L (Higham, "Accuracy and Stability of Numerical
//! Algorithms", §4.2), with eps = 2^-23 (f32) — a bug is off by O(1).

use serde::Serialize;

/// Deterministic uniform floats in [-1, 1) (xorshift64*, seeded).
pub fn random_vec(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            let bits = s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40; // 24 random bits
            bits as f32 / (1u32 << 23) as f32 - 1.0
        })
        .collect()
}

/// The outcome of one comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// Elements compared.
    pub compared: u64,
    /// Elements outside the tolerance.
    pub failures: u64,
    /// Largest |gpu - reference|.
    pub max_abs_error: f64,
    /// The tolerance, in words.
    pub tolerance: String,
    /// The first failing element, described.
    pub first_failure: Option<String>,
}

impl Check {
    /// Whether every compared element was within tolerance.
    pub fn passed(&self) -> bool {
        self.failures == 0 && self.compared > 0
    }
}

/// Exact comparison (for results both sides round once).
pub fn exact(gpu: &[f32], reference: impl Fn(usize) -> f32, what: &str) -> Check {
    let mut check = Check {
        compared: gpu.len() as u64,
        failures: 0,
        max_abs_error: 0.0,
        tolerance: format!("bit-exact ({what} rounds once on both sides)"),
        first_failure: None,
    };
    for (i, &g) in gpu.iter().enumerate() {
        let r = reference(i);
        if g.to_bits() != r.to_bits() && !(g == 0.0 && r == 0.0) {
            check.failures += 1;
            check.max_abs_error = check.max_abs_error.max((g as f64 - r as f64).abs());
            check
                .first_failure
                .get_or_insert_with(|| format!("element {i}: GPU {g:e}, CPU {r:e}"));
        }
    }
    check
}

/// CPU vectorAdd reference: exactly what the kernel computes.
pub fn vector_add_ref<'a>(a: &'a [f32], b: &'a [f32]) -> impl Fn(usize) -> f32 + 'a {
    move |i| a[i] + b[i]
}

/// CPU SAXPY reference with one rounding per element, like the kernel's fmaf.
pub fn saxpy_ref<'a>(alpha: f32, x: &'a [f32], y: &'a [f32]) -> impl Fn(usize) -> f32 + 'a {
    move |i| alpha.mul_add(x[i], y[i])
}

/// The reduction's tolerance: each GPU thread sums at most `chain` values
/// per f32 accumulator before everything is folded in f64
/// (+8 covers the remainder loop and the float4 lanes' own additions).
pub fn check_sum(gpu: f64, x: &[f32], chain: u64) -> Check {
    let (exact, abs): (f64, f64) = x.iter().fold((0.0, 0.0), |(s, a), &v| {
        (s + v as f64, a + (v as f64).abs())
    });
    let tol = (chain.max(1) + 8) as f64 * f32::EPSILON as f64 * abs;
    let err = (gpu - exact).abs();
    // NaN compares false: a NaN result fails.
    let failed = !within(err, tol);
    Check {
        compared: 1,
        failures: failed as u64,
        max_abs_error: err,
        tolerance: format!(
            "|sum - f64 sum| <= (L + 8) * 2^-23 * sum|x| with L = {chain} f32 additions per chain = {tol:.3e}"
        ),
        first_failure: failed.then(|| format!("GPU {gpu:.9e}, CPU (f64) {exact:.9e}")),
    }
}

/// Which arithmetic a GEMM result was computed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GemmPrecision {
    /// FP32 inputs and products.
    Fp32,
    /// Inputs rounded to TF32 (10-bit mantissa, unit roundoff 2^-11).
    Tf32,
}

/// Checks entries of the row-major n x n product C = A * B against f64 dot
/// products: every entry when `samples` is None, else that many
/// pseudo-random ones. Bound: |c - ref| <= (K * 2^-23 + input rounding) *
/// sum_k |a_ik b_kj|.
pub fn check_gemm(
    n: usize,
    a: &[f32],
    b: &[f32],
    c: &[f32],
    samples: Option<usize>,
    precision: GemmPrecision,
) -> Check {
    let input_rounding = match precision {
        GemmPrecision::Fp32 => 0.0,
        // Each TF32 product carries two roundings of 2^-11.
        GemmPrecision::Tf32 => 2.0 * (2.0f64).powi(-11),
    };
    let rel = n as f64 * f32::EPSILON as f64 + input_rounding;
    let entries: Vec<(usize, usize)> = match samples {
        None => (0..n * n).map(|e| (e / n, e % n)).collect(),
        Some(s) => {
            let mut state = 0x0005_DEEC_E66D_u64;
            (0..s)
                .map(|_| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let e = (state >> 33) as usize % (n * n);
                    (e / n, e % n)
                })
                .collect()
        }
    };
    // A full check walks every column of B: transpose it once so each dot
    // product reads memory in order.
    let bt: Option<Vec<f32>> = samples.is_none().then(|| {
        let mut t = vec![0f32; n * n];
        for k in 0..n {
            for j in 0..n {
                t[j * n + k] = b[k * n + j];
            }
        }
        t
    });
    let b_at = |k: usize, j: usize| match &bt {
        Some(t) => t[j * n + k],
        None => b[k * n + j],
    };
    let results = parallel_map(&entries, |&(i, j)| {
        let (mut dot, mut abs) = (0.0f64, 0.0f64);
        for k in 0..n {
            let p = a[i * n + k] as f64 * b_at(k, j) as f64;
            dot += p;
            abs += p.abs();
        }
        let err = (c[i * n + j] as f64 - dot).abs();
        (i, j, dot, err, rel * abs)
    });
    let mut check = Check {
        compared: entries.len() as u64,
        failures: 0,
        max_abs_error: 0.0,
        tolerance: format!(
            "|c - f64 dot| <= {rel:.3e} * sum_k |a_ik b_kj| (K * 2^-23{})",
            if precision == GemmPrecision::Tf32 {
                " + 2 * 2^-11 TF32 input rounding"
            } else {
                ""
            }
        ),
        first_failure: None,
    };
    for (i, j, dot, err, tol) in results {
        check.max_abs_error = check.max_abs_error.max(err);
        if !within(err, tol) {
            check.failures += 1;
            check.first_failure.get_or_insert_with(|| {
                format!("C[{i}][{j}]: GPU {:e}, CPU (f64) {dot:e}", c[i * n + j])
            });
        }
    }
    check
}

/// `err <= tol`, false for NaN.
fn within(err: f64, tol: f64) -> bool {
    matches!(
        err.partial_cmp(&tol),
        Some(std::cmp::Ordering::Less | std::cmp::Ordering::Equal)
    )
}

/// Maps over items on every core (the GEMM references are a billion MACs).
fn parallel_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(32);
    let chunk = items.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(|| part.iter().map(&f).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_gemm(n: usize, a: &[f32], b: &[f32]) -> Vec<f32> {
        let mut c = vec![0f32; n * n];
        for i in 0..n {
            for k in 0..n {
                let aik = a[i * n + k];
                for j in 0..n {
                    c[i * n + j] += aik * b[k * n + j];
                }
            }
        }
        c
    }

    #[test]
    fn random_values_are_in_range_and_seeded() {
        let v = random_vec(10_000, 7);
        assert!(v.iter().all(|&x| (-1.0..1.0).contains(&x)));
        assert_eq!(v, random_vec(10_000, 7));
        assert_ne!(v, random_vec(10_000, 8));
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64;
        assert!(mean.abs() < 0.05, "{mean}");
    }

    #[test]
    fn exact_checks_catch_one_wrong_element() {
        let a = random_vec(1000, 1);
        let b = random_vec(1000, 2);
        let mut c: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
        assert!(exact(&c, vector_add_ref(&a, &b), "a + b").passed());
        c[777] = f32::from_bits(c[777].to_bits() + 1); // one ulp off
        let check = exact(&c, vector_add_ref(&a, &b), "a + b");
        assert_eq!(check.failures, 1);
        assert!(check.first_failure.unwrap().contains("element 777"));
    }

    #[test]
    fn saxpy_reference_is_fused() {
        let x = random_vec(4096, 3);
        let y = random_vec(4096, 4);
        let fused: Vec<f32> = x
            .iter()
            .zip(&y)
            .map(|(&a, &b)| 2.5f32.mul_add(a, b))
            .collect();
        assert!(exact(&fused, saxpy_ref(2.5, &x, &y), "fmaf").passed());
        // An unfused GPU result would differ somewhere: the check notices.
        let unfused: Vec<f32> = x.iter().zip(&y).map(|(&a, &b)| 2.5f32 * a + b).collect();
        assert!(!exact(&unfused, saxpy_ref(2.5, &x, &y), "fmaf").passed());
    }

    #[test]
    fn sum_tolerance_accepts_f32_chains_and_rejects_errors() {
        let x = random_vec(1 << 16, 5);
        // Emulate the kernel: 256 chains of f32 additions, folded in f64.
        let chains = 256;
        let mut total = 0f64;
        for c in 0..chains {
            let mut acc = 0f32;
            for v in x.iter().skip(c).step_by(chains) {
                acc += v;
            }
            total += acc as f64;
        }
        let per_chain = (x.len() / chains) as u64;
        assert!(check_sum(total, &x, per_chain).passed());
        // The worst-case bound here is about 1.0 (256 * 2^-23 * sum|x|):
        // an error of 2 is outside it, and so is NaN.
        assert!(!check_sum(total - 2.0, &x, per_chain).passed());
        assert!(!check_sum(f64::NAN, &x, per_chain).passed());
        // With short chains (the workload's odd-size tail check) the bound
        // is tight enough to catch a single element dropped.
        let small = &x[..1001];
        let exact: f64 = small.iter().map(|&v| v as f64).sum();
        assert!(check_sum(exact, small, 1).passed());
        let dropped = exact - small[1000] as f64;
        assert!(small[1000].abs() > 1e-3, "pick another element");
        assert!(!check_sum(dropped, small, 1).passed());
    }

    #[test]
    fn gemm_check_accepts_f32_products_and_catches_a_bad_entry() {
        let n = 64;
        let a = random_vec(n * n, 9);
        let b = random_vec(n * n, 10);
        let mut c = naive_gemm(n, &a, &b);
        assert!(check_gemm(n, &a, &b, &c, None, GemmPrecision::Fp32).passed());
        assert!(check_gemm(n, &a, &b, &c, Some(100), GemmPrecision::Fp32).passed());
        c[5 * n + 7] += 0.01;
        let check = check_gemm(n, &a, &b, &c, None, GemmPrecision::Fp32);
        assert_eq!(check.failures, 1);
        assert!(check.first_failure.unwrap().contains("C[5][7]"));
    }

    #[test]
    fn tf32_results_pass_only_the_tf32_bound() {
        // Round inputs to a 10-bit mantissa (to nearest), as cvt.rna.tf32 does.
        let tf32 = |v: f32| f32::from_bits((v.to_bits() + 0x1000) & !0x1FFF);
        let n = 128;
        let a = random_vec(n * n, 11);
        let b = random_vec(n * n, 12);
        let ar: Vec<f32> = a.iter().map(|&v| tf32(v)).collect();
        let br: Vec<f32> = b.iter().map(|&v| tf32(v)).collect();
        let c = naive_gemm(n, &ar, &br);
        assert!(check_gemm(n, &a, &b, &c, None, GemmPrecision::Tf32).passed());
        assert!(!check_gemm(n, &a, &b, &c, None, GemmPrecision::Fp32).passed());
    }
}
