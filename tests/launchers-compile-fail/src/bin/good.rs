//! The correct call compiles. On a GPU (`good <vector_add.ptx>`) it also
//! runs the typed vectorAdd and verifies every element.
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig};

fn add(
    stream: &Arc<CudaStream>,
    func: &CudaFunction,
    a: &CudaSlice<f32>,
    b: &CudaSlice<f32>,
    c: &mut CudaSlice<f32>,
    n: i32,
) -> Result<(), cudarc::driver::DriverError> {
    let cfg = LaunchConfig::for_num_elems(n as u32);
    // SAFETY: the grid covers n elements and every slice holds n.
    unsafe { launchers_fixture::vector_add::vector_add(stream, func, cfg, a, b, c, n) }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(ptx_path) = std::env::args().nth(1) else {
        println!("compiled; pass a vector_add.ptx to run on a GPU");
        return Ok(());
    };
    let n: usize = 1 << 20;
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let ptx = std::fs::read_to_string(&ptx_path)?;
    let module = ctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx))?;
    let func = module.load_function("vectorAdd")?;
    let a_host: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b_host: Vec<f32> = (0..n).map(|i| 2.0 * i as f32 + 0.5).collect();
    let a = stream.clone_htod(&a_host)?;
    let b = stream.clone_htod(&b_host)?;
    let mut c = stream.alloc_zeros::<f32>(n)?;
    add(&stream, &func, &a, &b, &mut c, n as i32)?;
    let c_host = stream.clone_dtoh(&c)?;
    let bad = (0..n)
        .filter(|&i| c_host[i] != a_host[i] + b_host[i])
        .count();
    if bad != 0 {
        return Err(format!("vectorAdd: {bad} of {n} elements wrong").into());
    }
    println!("vectorAdd verified: {n} elements");
    Ok(())
}
