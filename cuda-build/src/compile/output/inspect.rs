//! Reading what nvcc produced. The reader lives in [`cuda_toolchain::image`] (one
//! bounds-checked reader for fatbins, cubins and PTX, usable without the
//! build engine); these names stay for the compile engine and its tests.

pub use cuda_toolchain::image::{
    elf_section, fatbin_kernels, read_cubin, read_fatbin, read_ptx, CubinInfo, FatbinEntry,
    FatbinKind, PtxInfo,
};
