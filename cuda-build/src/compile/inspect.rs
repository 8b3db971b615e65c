//! Reading what nvcc produced. The reader lives in [`crate::image`] (one
//! bounds-checked reader for fatbins, cubins and PTX, usable without the
//! build engine); these names stay for the compile engine and its tests.

pub use crate::image::{
    elf_section, fatbin_kernels, read_cubin, read_fatbin, read_ptx, CubinInfo, FatbinEntry,
    FatbinKind, PtxInfo,
};
