//! The bench's stand-in for the crate's lib.rs: the real one needs candle
//! (and its CUDA build) for everything but the kernels, which are what the
//! bench measures.
extern "C" {
    pub fn copy_blocks_f32();
}
