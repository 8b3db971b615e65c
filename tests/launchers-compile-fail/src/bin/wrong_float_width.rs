//! `typedefs` takes `real_t a` (a typedef of float): an f64 must not compile.
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig};

pub fn axpy(s: &CudaStream, f: &CudaFunction, x: &CudaSlice<f32>, y: &mut CudaSlice<f32>, a: f64) {
    let cfg = LaunchConfig::for_num_elems(1);
    let _ = unsafe {
        launchers_fixture::types::typedefs(s, f, cfg, x, y, a) // ERROR E0308
    };
}

fn main() {}
