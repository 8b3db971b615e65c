//! `a` is `const float*`: an f64 slice must not compile.
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig};

pub fn add(
    s: &CudaStream,
    f: &CudaFunction,
    a: &CudaSlice<f64>,
    b: &CudaSlice<f32>,
    c: &mut CudaSlice<f32>,
) {
    let cfg = LaunchConfig::for_num_elems(1);
    let _ = unsafe {
        launchers_fixture::vector_add::vector_add(s, f, cfg, a, b, c, 1) // ERROR E0277
    };
}

fn main() {}
