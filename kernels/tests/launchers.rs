//! The typed launchers cuda-build generates for `cu/*.cu` exist and have
//! exactly the kernels' C signatures.
//!
//! Each launcher is coerced to a function-pointer type spelled out here from
//! the `.cu` signature. That is checked by rustc: changing a kernel's
//! parameter (`unsigned long long n` to `int n`, `const float*` to `float*`,
//! an argument more or fewer) or losing a launcher fails to compile this
//! test. At run time the table is compared with every module's `ENTRIES`, so
//! a kernel added without a checked launcher fails too. No GPU needed.

use cuda_kernels::kernels;
use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, CudaView, CudaViewMut, DriverError, LaunchConfig,
};

type R = Result<(), DriverError>;

/// `vectorAdd(const float* a, const float* b, float* c, unsigned long long n)`
/// with owned slices.
type VectorAdd = unsafe fn(
    &CudaStream,
    &CudaFunction,
    LaunchConfig,
    &CudaSlice<f32>,
    &CudaSlice<f32>,
    &mut CudaSlice<f32>,
    u64,
) -> R;
/// `saxpy(float alpha, const float* x, float* y, unsigned long long n)`.
type Saxpy = unsafe fn(
    &CudaStream,
    &CudaFunction,
    LaunchConfig,
    f32,
    &CudaSlice<f32>,
    &mut CudaSlice<f32>,
    u64,
) -> R;
/// `reduceSumPartial(const float* x, unsigned long long n, double* partial)`.
type ReducePartial = unsafe fn(
    &CudaStream,
    &CudaFunction,
    LaunchConfig,
    &CudaSlice<f32>,
    u64,
    &mut CudaSlice<f64>,
) -> R;
/// `reduceSumFinal(const double* partial, unsigned int count, double* out)`.
type ReduceFinal = unsafe fn(
    &CudaStream,
    &CudaFunction,
    LaunchConfig,
    &CudaSlice<f64>,
    u32,
    &mut CudaSlice<f64>,
) -> R;
/// `sgemm` and `sgemmTf32`: `(int M, int N, int K, float alpha, const float* A,
/// const float* B, float beta, float* C)`; the crate declares it, since the
/// workload picks either kernel through one pointer type.
type Gemm = cuda_kernels::GemmLauncher;

/// Every kernel entry (module, C name) whose launcher is checked: each is
/// coerced to its expected type here. (Function addresses are not compared:
/// identical launchers such as sgemm's and sgemmTf32's may be merged.)
fn checked_launchers() -> Vec<(&'static str, &'static str)> {
    let _: VectorAdd = kernels::vector_add::vector_add;
    let _: Saxpy = kernels::saxpy::saxpy;
    let _: ReducePartial = kernels::reduce::reduce_sum_partial;
    let _: ReduceFinal = kernels::reduce::reduce_sum_final;
    let _: Gemm = kernels::sgemm::sgemm;
    let _: Gemm = kernels::sgemm_tf32::sgemm_tf32;
    vec![
        ("vector_add", "vectorAdd"),
        ("saxpy", "saxpy"),
        ("reduce", "reduceSumPartial"),
        ("reduce", "reduceSumFinal"),
        ("sgemm", "sgemm"),
        ("sgemm_tf32", "sgemmTf32"),
    ]
}

/// vectorAdd's launcher taking views: `a` a view, `b` a mutable view read
/// through, `c` a mutable view.
type VectorAddViews<'a> = unsafe fn(
    &CudaStream,
    &CudaFunction,
    LaunchConfig,
    &CudaView<'a, f32>,
    &CudaViewMut<'a, f32>,
    &mut CudaViewMut<'a, f32>,
    u64,
) -> R;
/// reduceSumPartial's launcher taking views.
type ReducePartialViews<'a> = unsafe fn(
    &CudaStream,
    &CudaFunction,
    LaunchConfig,
    &CudaView<'a, f32>,
    u64,
    &mut CudaViewMut<'a, f64>,
) -> R;

/// Views work where the launchers take `DevicePtr`/`DevicePtrMut`: a
/// sub-range of a buffer is launched the same way (compile-time only).
fn views_are_accepted() {
    let _: VectorAddViews<'_> = kernels::vector_add::vector_add;
    let _: ReducePartialViews<'_> = kernels::reduce::reduce_sum_partial;
}

#[test]
fn every_entry_has_a_launcher_with_its_c_signature() {
    let table = checked_launchers();
    views_are_accepted();
    let modules: [(&str, &[&str]); 5] = [
        ("vector_add", kernels::vector_add::ENTRIES),
        ("saxpy", kernels::saxpy::ENTRIES),
        ("reduce", kernels::reduce::ENTRIES),
        ("sgemm", kernels::sgemm::ENTRIES),
        ("sgemm_tf32", kernels::sgemm_tf32::ENTRIES),
    ];
    let mut entries: Vec<(&str, &str)> = modules
        .iter()
        .flat_map(|(m, es)| es.iter().map(move |e| (*m, *e)))
        .collect();
    let mut checked = table;
    entries.sort_unstable();
    checked.sort_unstable();
    assert_eq!(
        checked, entries,
        "each module's ENTRIES must match the launchers this test checks"
    );
}
