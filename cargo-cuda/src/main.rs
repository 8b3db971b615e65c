//! `cargo cuda`. OWNER: cli helper.
fn main() {}
