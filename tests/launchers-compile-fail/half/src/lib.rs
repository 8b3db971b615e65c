//! Stand-in for the `half` crate's 16-bit float types (storage only).
#![allow(non_camel_case_types)]

/// IEEE 754 binary16.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(transparent)]
pub struct f16(pub u16);

/// bfloat16.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(transparent)]
pub struct bf16(pub u16);

// SAFETY: plain 2-byte values, as in cudarc's impls for the real half types.
unsafe impl cudarc::driver::DeviceRepr for f16 {}
unsafe impl cudarc::driver::DeviceRepr for bf16 {}
