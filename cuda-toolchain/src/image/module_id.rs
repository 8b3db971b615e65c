//! nvcc's module ids in names and images (docs/prebuilt.md, "Reproducible
//! outputs"): what `inspect --compare` takes out before it says two builds
//! differ.
//!
//! A module id sits in every internal-linkage name of a source, as
//! `_GLOBAL__N__<path hash>_<n>_<file>_<suffix>` (anonymous namespaces) or
//! `_INTERNAL_<path hash>_<n>_<file>_<suffix>` (other internal entities).
//! The path hash depends on where the source was compiled; the suffix names
//! the source's first ordinary external definition, or ends in nvcc's
//! process id (`<hex>_<pid>`) when it has none.

/// The two markers nvcc starts a module id with.
const MARKERS: [&[u8]; 2] = [b"_GLOBAL__N__", b"_INTERNAL_"];

/// Bytes (a name, PTX, an ELF image) with the path hash of every module id
/// zeroed in place: the hex run right after a marker.
pub fn zero_path_hashes(bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for marker in MARKERS {
        let mut i = 0;
        while let Some(at) = memchr::memmem::find(&out[i..], marker) {
            let start = i + at + marker.len();
            let hex = hex_run(&out[start..]);
            if (1..=16).contains(&hex) && out.get(start + hex) == Some(&b'_') {
                out[start..start + hex].fill(b'0');
            }
            i = start;
        }
    }
    out
}

/// Bytes with every whole module id taken out: a mangled name's
/// `<length><marker><id>` becomes `<marker>#`, so names that differ only in
/// their path hash or process id (whose lengths differ) compare equal. A
/// marker outside a mangled name keeps its id, with the path hash zeroed.
pub fn strip_module_ids(bytes: &[u8]) -> Vec<u8> {
    let zeroed = zero_path_hashes(bytes);
    let mut out = Vec::with_capacity(zeroed.len());
    let mut i = 0;
    while let Some((digits, start, end)) = next_mangled_id(&zeroed, i) {
        out.extend_from_slice(&zeroed[i..start - digits]);
        let marker = MARKERS
            .iter()
            .find(|m| zeroed[start..].starts_with(m))
            .expect("next_mangled_id starts at a marker");
        out.extend_from_slice(marker);
        out.push(b'#');
        i = end;
    }
    out.extend_from_slice(&zeroed[i..]);
    out
}

/// The next module id at or after `from` that is a mangled source name:
/// (how many length digits precede it, where its marker starts, where it
/// ends).
fn next_mangled_id(b: &[u8], from: usize) -> Option<(usize, usize, usize)> {
    let mut i = from;
    loop {
        let (at, marker) = MARKERS
            .iter()
            .filter_map(|m| memchr::memmem::find(&b[i..], m).map(|at| (i + at, m.len())))
            .min()?;
        if let Some((digits, end)) = mangled_extent(b, at, marker) {
            if at - digits >= from {
                return Some((digits, at, end));
            }
        }
        i = at + marker;
    }
}

/// The extent of the module id whose marker starts at `at`, from the
/// Itanium length before it: the fewest trailing digits whose length makes
/// the id `<marker><hex>_<n>_<file of n bytes>_<suffix>` with a suffix that
/// is a name or `<hex>[_<pid>]`. Fewest, because the digits before the
/// length may be the end of the name before it (`…_17915` then `42`).
fn mangled_extent(b: &[u8], at: usize, marker: usize) -> Option<(usize, usize)> {
    let suffix_start = suffix_start(b, at + marker)?;
    let digits = b[..at]
        .iter()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .count();
    (1..=digits.min(5)).find_map(|k| {
        let len: usize = std::str::from_utf8(&b[at - k..at]).ok()?.parse().ok()?;
        let end = at.checked_add(len)?;
        let suffix = b.get(suffix_start..end)?;
        plausible_suffix(suffix).then_some((k, end))
    })
}

/// Where the suffix of a module id begins, given where its path hash does:
/// after `<hex>_<n>_<file of n bytes>_`.
fn suffix_start(b: &[u8], hash: usize) -> Option<usize> {
    let hex = hex_run(b.get(hash..)?);
    let mut i = hash + hex;
    (hex > 0 && b.get(i) == Some(&b'_')).then_some(())?;
    i += 1;
    let n_digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    let n: usize = std::str::from_utf8(&b[i..i + n_digits])
        .ok()?
        .parse()
        .ok()?;
    i += n_digits;
    (b.get(i) == Some(&b'_')).then_some(())?;
    i = i.checked_add(1 + n)?;
    (b.get(i) == Some(&b'_')).then_some(i + 1)
}

/// A module id's suffix: `<hex>` or `<hex>_<pid>`, or a definition's name.
fn plausible_suffix(s: &[u8]) -> bool {
    let word = |c: &u8| c.is_ascii_alphanumeric() || *c == b'_';
    !s.is_empty() && s.iter().all(word)
}

fn hex_run(b: &[u8]) -> usize {
    b.iter().take_while(|c| c.is_ascii_hexdigit()).count()
}

/// Two names that are the same but for their module ids differ in more
/// than the path hash: the suffix, which holds nvcc's process id for a
/// source with no ordinary external definition.
pub fn differ_beyond_path_hash(a: &str, b: &str) -> bool {
    zero_path_hashes(a.as_bytes()) != zero_path_hashes(b.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip(s: &str) -> String {
        String::from_utf8(strip_module_ids(s.as_bytes())).unwrap()
    }

    #[test]
    fn whole_ids_come_out_of_mangled_names() {
        // Two compiles of one template-only source (nvcc 13.0.88): the ids
        // end in nvcc's process id, 17915 and 322, of different lengths.
        let a = "_ZN40_INTERNAL_2ca5e196_4_s_cu_43c59218_1791542_GLOBAL__N__2ca5e196_4_s_cu_43c59218_179155twiceEi";
        let b = "_ZN38_INTERNAL_2ca5e196_4_s_cu_43c59218_32240_GLOBAL__N__2ca5e196_4_s_cu_43c59218_3225twiceEi";
        assert_eq!(strip(a), "_ZN_INTERNAL_#_GLOBAL__N__#5twiceEi");
        assert_eq!(strip(a), strip(b));
        assert!(differ_beyond_path_hash(a, b));
        // A suffix that is a definition's name, and one from another path.
        let c = "_ZN30_INTERNAL_4f8a4b37_4_d_cu_kern32_GLOBAL__N__4f8a4b37_4_d_cu_kern5twiceEi";
        let d = "_ZN30_INTERNAL_eb6d7ae1_4_d_cu_kern32_GLOBAL__N__eb6d7ae1_4_d_cu_kern5twiceEi";
        assert_eq!(strip(c), strip(d));
        assert!(!differ_beyond_path_hash(c, d));
        // Other sources' or other entities' names stay apart.
        let e = "_ZN30_INTERNAL_4f8a4b37_4_d_cu_kern32_GLOBAL__N__4f8a4b37_4_d_cu_kern6thriceEi";
        assert_ne!(strip(c), strip(e));
        // Not a module id, and one outside a mangled name (path hash zeroed).
        assert_eq!(strip("_GLOBAL__N_1 x"), "_GLOBAL__N_1 x");
        assert_eq!(
            strip("x _INTERNAL_4f8a4b37_4_d_cu_kern y"),
            "x _INTERNAL_00000000_4_d_cu_kern y"
        );
    }

    #[test]
    fn path_hashes_are_zeroed_in_place() {
        assert_eq!(
            zero_path_hashes(b"_ZN12_GLOBAL__N__eb6d7ae1_1_a_cu_f1Ev"),
            b"_ZN12_GLOBAL__N__00000000_1_a_cu_f1Ev"
        );
    }
}
