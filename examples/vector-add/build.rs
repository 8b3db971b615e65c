// TEMPORARY stub until cuda_build::compile::Build lands: an empty module with
// the generated shape, so dependent crates type-check. Not a real build.
fn main() {
    let out = std::env::var("OUT_DIR").unwrap();
    let m = |entries: &str, archs: &str| format!("pub const SOURCE: &str = \"\"; pub const KIND: &str = \"fatbin\"; pub const IMAGE: &[u8] = &[]; pub const ENTRIES: &[&str] = &[{entries}]; pub const ARCHS: &[&str] = &[{archs}];");
    let a = "\"sm_80\", \"sm_90\", \"compute_90\"";
    let k = format!("pub const TOOLKIT_VERSION: &str = \"13.0.88\"; pub const ARCHS: &[&str] = &[{a}]; pub mod vector_add {{ {} }} pub mod saxpy {{ {} }} pub mod reduce {{ {} }} pub mod sgemm {{ {} }} pub mod sgemm_tf32 {{ {} }}",
        m("\"vectorAdd\"", a), m("\"saxpy\"", a), m("\"reduceSumPartial\", \"reduceSumFinal\"", a), m("\"sgemm\"", a), m("\"sgemmTf32\"", a));
    std::fs::write(format!("{out}/kernels.rs"), k).unwrap();
    let mm = format!("pub const TOOLKIT_VERSION: &str = \"13.0.88\"; pub const ARCHS: &[&str] = &[\"sm_75\"]; pub mod vector_add {{ {} }}", m("\"vectorAdd\"", "\"sm_75\""));
    std::fs::write(format!("{out}/mismatch.rs"), mm).unwrap();
}
