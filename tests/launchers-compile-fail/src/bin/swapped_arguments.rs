//! The scalar first and a slice last: arguments out of order must not compile.
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig};

pub fn add(
    s: &CudaStream,
    f: &CudaFunction,
    a: &CudaSlice<f32>,
    b: &CudaSlice<f32>,
    c: &mut CudaSlice<f32>,
) {
    let cfg = LaunchConfig::for_num_elems(1);
    let _ = unsafe {
        launchers_fixture::vector_add::vector_add(s, f, cfg, 1, a, b, c) // ERROR E0308
    };
}

fn main() {}
