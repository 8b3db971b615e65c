//! The generated modules hold what the workload loads: real images of the
//! planned kind, the entry points it launches by name, and the arch list.

use cuda_kernels::{kernels, mismatch};

/// The fatbin container's magic (little-endian 0xBA55ED50), as nvcc writes it.
const FATBIN_MAGIC: [u8; 4] = [0x50, 0xED, 0x55, 0xBA];
const ELF_MAGIC: [u8; 4] = [0x7F, b'E', b'L', b'F'];

struct Module {
    name: &'static str,
    kind: &'static str,
    image: &'static [u8],
    entries: &'static [&'static str],
    archs: &'static [&'static str],
}

fn modules() -> Vec<Module> {
    macro_rules! m {
        ($m:ident) => {
            Module {
                name: stringify!($m),
                kind: kernels::$m::KIND,
                image: kernels::$m::IMAGE,
                entries: kernels::$m::ENTRIES,
                archs: kernels::$m::ARCHS,
            }
        };
    }
    vec![
        m!(vector_add),
        m!(saxpy),
        m!(reduce),
        m!(sgemm),
        m!(sgemm_tf32),
    ]
}

#[test]
fn every_kernel_the_workload_launches_is_an_entry() {
    let want: &[(&str, &[&str])] = &[
        ("vector_add", &["vectorAdd"]),
        ("saxpy", &["saxpy"]),
        ("reduce", &["reduceSumFinal", "reduceSumPartial"]),
        ("sgemm", &["sgemm"]),
        ("sgemm_tf32", &["sgemmTf32"]),
    ];
    for m in modules() {
        let (_, entries) = want
            .iter()
            .find(|(n, _)| *n == m.name)
            .expect("known module");
        let mut got = m.entries.to_vec();
        got.sort_unstable();
        assert_eq!(got, *entries, "{}", m.name);
    }
}

#[test]
fn images_are_fatbins_for_the_planned_archs() {
    assert!(!kernels::TOOLKIT_VERSION.is_empty());
    // SASS for every real arch and PTX for the highest (the fatbin default);
    // at least one of each, whatever CUDA_ARCHS chose.
    assert!(
        kernels::ARCHS.iter().any(|a| a.starts_with("sm_")),
        "{:?}",
        kernels::ARCHS
    );
    assert!(
        kernels::ARCHS.iter().any(|a| a.starts_with("compute_")),
        "{:?}",
        kernels::ARCHS
    );
    for m in modules() {
        assert_eq!(m.kind, "fatbin", "{}", m.name);
        assert!(m.image.len() > 1024, "{}: {} bytes", m.name, m.image.len());
        assert_eq!(m.image[..4], FATBIN_MAGIC, "{}", m.name);
        assert_eq!(m.archs, kernels::ARCHS, "{}", m.name);
    }
}

#[test]
fn the_mismatch_module_is_turing_sass_only() {
    use mismatch::vector_add as v;
    assert_eq!(v::KIND, "cubin");
    assert_eq!(v::IMAGE[..4], ELF_MAGIC);
    assert_eq!(v::ARCHS, [cuda_kernels::MISMATCH_ARCH]);
    assert_eq!(mismatch::ARCHS, [cuda_kernels::MISMATCH_ARCH]);
    assert_eq!(v::ENTRIES, ["vectorAdd"]);
    // No PTX: nothing a newer GPU could JIT.
    assert!(!v::ARCHS.iter().any(|a| a.starts_with("compute_")));
}
