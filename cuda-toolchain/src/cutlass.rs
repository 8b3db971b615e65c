//! CUTLASS on the package index: which releases the `nvidia-cutlass` wheel
//! has, and which git commits of NVIDIA/cutlass have exactly the headers of
//! one of them, so a build pinned to a commit (cudaforge's
//! `with_cutlass(Some(commit))`, `cutlass = { commit = "…" }`) can use the
//! verified wheel instead of a git checkout.
//!
//! How [`COMMITS`] was made (`scripts/cutlass-commits.py` repeats it): every
//! commit of a snapshot of github.com/NVIDIA/cutlass (4,435 commits, tags up
//! to v4.7.0) had its `include/` and `tools/util/include/` trees compared,
//! blob hash by blob hash, with `cutlass_library/source/include/` and
//! `cutlass_library/source/tools/util/include/` of each `nvidia-cutlass`
//! wheel on pypi.org (sha256 as the index published it). A commit is listed
//! when every file is identical and none is missing or extra. Two findings:
//!
//! - the 3.3.0.0 wheel is not the `v3.3.0` tag (a75b4ac…: five CuTe headers
//!   differ); it matches four later commits, listed;
//! - the index has no 3.9, 4.0, 4.1 or 4.3+ wheel, so commits of those
//!   releases (and cudaforge's default, 7127592…, between v4.3.0 and v4.4.0)
//!   need the git form.
//!
//! cudaforge also puts the checkout's root on the include path (`-I<root>`);
//! only `include/` and `tools/util/include/` are compared, and only those
//! are in the wheel's include dirs.

/// The index package that carries CUTLASS's headers.
pub const INDEX_PACKAGE: &str = "nvidia-cutlass";

/// CUTLASS's repository, as the git form names it.
pub const REPOSITORY: &str = "https://github.com/NVIDIA/cutlass";

/// The `nvidia-cutlass` releases on pypi.org when [`COMMITS`] was made,
/// oldest first (all of them: 3.3 to 3.8, then 4.2).
pub const INDEX_RELEASES: [&str; 9] = [
    "3.3.0.0", "3.4.0.0", "3.4.1.0", "3.5.0.0", "3.5.1.0", "3.6.0.0", "3.7.0.0", "3.8.0.0",
    "4.2.0.0",
];

/// Commits of NVIDIA/cutlass whose headers are identical to a wheel's:
/// (full commit, `nvidia-cutlass` version), sorted by commit.
pub const COMMITS: &[(&str, &str)] = &[
    ("012b04d1b2b5bcd77c07909d2f8f250be5560e5a", "3.5.0.0"),
    ("07a02380222b8099045fa3b8d10378648a52cd38", "3.4.0.0"),
    ("082a375c14ba07be4d666243779266f9d8722bd9", "3.5.0.0"),
    ("0dfe6db77bc270e0e380e12711ae0915fd41948e", "3.4.1.0"),
    ("0e83a8aa1338c79ea811361f3fc807a9d1589a2b", "4.2.0.0"),
    ("17e7c7a42abeef087b807ac4aaf6ec61e4cf7ad6", "3.6.0.0"),
    ("19ea5bad59878d8752f74cc8f97fcb0291d9bb5b", "3.5.1.0"),
    ("1a7869aea4052c3840bcde08fc428ce2cbc0960f", "3.7.0.0"),
    ("25ccb875b8f19017d44778b03af8c982e7dc9af3", "4.2.0.0"),
    ("29c1ad704a3cbd1883850428e8161b0fea88c030", "4.2.0.0"),
    ("31ac5ba2758945a89b242f845b01ee6cc5fd1f8c", "3.5.0.0"),
    ("3729680f59a8c34c7c6b9e69679f056e42e8dd6a", "3.6.0.0"),
    ("3d261a5974e1c3793acbe8e3c1f91c2a5b26e909", "3.6.0.0"),
    ("3f6e0172ae31dc5905f3273f0334bbbd5f5ff7b7", "3.5.0.0"),
    ("4015cee097dfc754124fc450a24bfeda8e243e9e", "3.7.0.0"),
    ("4511d709f34ad37d84ed55dadd0a017890877c82", "3.7.0.0"),
    ("4b80b75c538a9d7c939f4b119d3cde12e6dec492", "4.2.0.0"),
    ("4bd19b460cbcba428fb3c93078915278bb1cc22f", "3.8.0.0"),
    ("4dbf5dbed2331b948b75a3dbeaf760d76b3b5964", "3.5.1.0"),
    ("564f36a783944012de14be77d06ef03416cb5bf1", "3.8.0.0"),
    ("57e3cfb47a2d9e0d46eb6335c3dc411498efa198", "4.2.0.0"),
    ("59b61c606fe7aa4d33e60d3e6352cbfde98361c3", "4.2.0.0"), // tag v4.2.0
    ("64579189ecd323165974f8191c3d4200ef7281bc", "4.2.0.0"),
    ("65cdd6992d45d33afab28da3431b3a887b54e9e4", "4.2.0.0"),
    ("6b73aedb1166c70e49f46e699e964b6794449c82", "4.2.0.0"),
    ("718ba3fcb4973a62fecbade0df6facb63e972d87", "4.2.0.0"),
    ("74825181f2fb5f2c6d9b7a735ca514dd6b6986a0", "4.2.0.0"),
    ("751eb9a8859ac36bfc77551f9e4a957c31a5a8b1", "3.4.0.0"), // tag v3.4.0
    ("7817e47154d7869320f3fa6b409ec8c5e5958970", "4.2.0.0"),
    ("7b68ff97cdf992fd1ce97e2aac2a14176c7fac22", "3.8.0.0"),
    ("7d49e6c7e2f8896c47f586706e67e1fb215529dc", "3.5.0.0"), // tag v3.5.0
    ("87eaa6965a23b210faad62b386009546c311e37e", "3.6.0.0"),
    ("8825e8be4f0ee9b55ce6198271b7a16d6b473f02", "4.2.0.0"),
    ("897a91d1e2aebb137bfc040a2137b1d6b54dfa4d", "3.8.0.0"),
    ("8b0646e90a696143393beaab4a2f9e2585f6fa67", "3.6.0.0"),
    ("9146dba0877f8fe8119b9eb72d5a57ee65296310", "3.6.0.0"),
    ("94aa33b8dc1420c351c59fb18908b484f05cd676", "3.7.0.0"),
    ("9b3772dfa64da305612a0e4cafc51bd1bcb3f74d", "3.8.0.0"),
    ("9cf4ee60e925f469b5e33fe9d183b181a73e70aa", "3.7.0.0"),
    ("9eb01fa0b03c30ba8003b409bf66f0422280268f", "3.7.0.0"),
    ("a49f8062e367d01b80ea5f2909214299a0751162", "4.2.0.0"),
    ("a73b6d06a1fe9d8564f14a88c3662f0562f7c828", "3.8.0.0"),
    ("ab4d6a2494b1d1e83524d7adc659ccc8f051525c", "4.2.0.0"),
    ("add42b68f37289aa3d53b6a59967fa6a2d89cf56", "3.5.1.0"),
    ("ae8d57240e939795d3f73cc2346e070833c13e3f", "3.8.0.0"),
    ("afa1772203677c5118fcd82537a9c8fefbcc7008", "3.8.0.0"), // tag v3.8.0
    ("b234a8c024580194712d211124b09c663de678c1", "4.2.0.0"),
    ("b78588d1630aa6643bf021613717bafb705df4ef", "3.7.0.0"), // tag v3.7.0
    ("b795edec5b022eeb8d8a0e52091d897f9ac298f9", "3.3.0.0"),
    ("bbb1cdbc640c1a471721a20bb33b1fbfcc78aa62", "3.5.0.0"),
    ("bbe579a9e3beb6ea6626d9227ec32d0dae119a49", "3.4.1.0"), // tag v3.4.1
    ("bc5a3fb0b803b258f2e6d470cbd80aab964728eb", "4.2.0.0"),
    ("bda6591c142ea8077ad462d6c2c7c68b90a73be9", "4.2.0.0"),
    ("bf9da7b76c766d7ee7d536afc77880a4ef1f1156", "3.6.0.0"), // tag v3.6.0
    ("c008b4aea869adac8cd77ecf663d93a09e776bf3", "3.3.0.0"),
    ("cc5e635969591be1230525f2bb5257dcb5a4efb4", "3.4.1.0"),
    ("cd65e18e57b53aafca34da0c1c32437a227df0ca", "3.7.0.0"),
    ("cffd5d32b760f95f39d263c59bb8e34a882e13f4", "3.6.0.0"),
    ("d299be9ac859f18bfdeb658a7be1bb5cb0bf588f", "3.4.0.0"),
    ("d33ded5090d1f0ea84576e7f5e060236ce4122e0", "4.2.0.0"),
    ("d39181a5d1a20c1f37a8158708e01142f5a4081b", "3.7.0.0"),
    ("db9d5f50084033c5d46b1e9bb3f79c0646305be6", "3.7.0.0"),
    ("df3923b0bb8fe5d91564f51a173965ce49f4ad58", "4.2.0.0"),
    ("e5c6ae8e7684779bd31f081ee36614afb6ed22f2", "3.3.0.0"),
    ("e62ecdd188c9e8217ac75d4a6a415cde89aca57d", "3.5.1.0"),
    ("ebf5e5effdba54f9e0f341ba9beee9a25b09604f", "4.2.0.0"),
    ("ec382f6d3eb9316608e534e149b01ec9bb01a69e", "3.7.0.0"),
    ("f7b19de32c5d1f3cedfc735c2849f12b537522ee", "3.5.1.0"), // tag v3.5.1
    ("fbc7aae6ab9259323aa180e820356e48ba8743c4", "3.3.0.0"),
    ("feda926b6aab00ac60a74da636bdd598f6454e5f", "4.2.0.0"),
];

/// The `nvidia-cutlass` version whose headers are identical to this commit's
/// (full 40-digit hash, any case), if it is a known one.
///
/// ```
/// let v = cuda_toolchain::cutlass::release_for_commit("7d49e6c7e2f8896c47f586706e67e1fb215529dc");
/// assert_eq!(v, Some("3.5.0.0")); // tag v3.5.0, candle-flash-attn 0.11.1's pin
/// ```
pub fn release_for_commit(commit: &str) -> Option<&'static str> {
    let c = commit.trim().to_ascii_lowercase();
    COMMITS
        .binary_search_by(|(k, _)| k.cmp(&c.as_str()))
        .ok()
        .map(|i| COMMITS[i].1)
}

/// Whether a git URL names NVIDIA/cutlass (https, ssh or `git@` form, with
/// or without `.git`), whose known commits can come from the index.
pub fn is_repository(url: &str) -> bool {
    let u = url.trim().trim_end_matches('/').to_ascii_lowercase();
    let u = u.strip_suffix(".git").unwrap_or(&u);
    ["github.com/nvidia/cutlass", "github.com:nvidia/cutlass"]
        .iter()
        .any(|tail| u.ends_with(tail))
}

/// How a version request is read: `3.5` is the newest 3.5.x, `3.5.0` pins
/// 3.5.0 (the wheel's fourth number is packaging), as a sentence for errors
/// and `cargo cuda info`; `None` for a full four-part version.
pub fn request_meaning(requested: &str) -> Option<String> {
    let parts: Vec<&str> = requested.trim().split('.').collect();
    match parts.len() {
        1 => Some(format!(
            "\"{requested}\" means the newest {requested}.x release (write \"{requested}.Y.Z\" to pin one)"
        )),
        2 => {
            let newest = INDEX_RELEASES
                .iter()
                .rev()
                .find(|v| crate::toolkit::store::version_matches(requested, v));
            let today = newest
                .map(|v| format!(", {v} on the index"))
                .unwrap_or_default();
            Some(format!(
                "\"{requested}\" means the newest {requested}.x release{today} (write \"{requested}.0\" to pin {requested}.0)"
            ))
        }
        3 => Some(format!("\"{requested}\" pins release {requested}")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_full_hashes_of_index_releases() {
        assert!(COMMITS.windows(2).all(|w| w[0].0 < w[1].0));
        for (c, v) in COMMITS {
            assert!(crate::metadata::is_full_commit(c) && c.len() == 40, "{c}");
            assert_eq!(c.to_ascii_lowercase(), *c);
            assert!(INDEX_RELEASES.contains(v), "{v}");
        }
        // Every release has at least one commit.
        for v in INDEX_RELEASES {
            assert!(COMMITS.iter().any(|(_, r)| *r == v), "{v}");
        }
    }

    #[test]
    fn known_and_unknown_commits() {
        // Tags: v3.5.0, v4.2.0; cudaforge 0.1.6's default (not a release).
        assert_eq!(
            release_for_commit("7D49E6C7E2F8896C47F586706E67E1FB215529DC"),
            Some("3.5.0.0")
        );
        assert_eq!(
            release_for_commit("59b61c606fe7aa4d33e60d3e6352cbfde98361c3"),
            Some("4.2.0.0")
        );
        assert_eq!(
            release_for_commit("7127592069c2fe01b041e174ba4345ef9b279671"),
            None
        );
        // The v3.3.0 tag's headers are not the 3.3.0.0 wheel's.
        assert_eq!(
            release_for_commit("a75b4ac483166189a45290783cb0a18af5ff0ea5"),
            None
        );
        assert_eq!(release_for_commit("7d49e6c"), None);
    }

    #[test]
    fn repository_spellings() {
        for u in [
            "https://github.com/NVIDIA/cutlass",
            "https://github.com/NVIDIA/cutlass.git",
            "https://github.com/nvidia/cutlass/",
            "git@github.com:NVIDIA/cutlass.git",
            "ssh://git@github.com/NVIDIA/cutlass",
        ] {
            assert!(is_repository(u), "{u}");
        }
        for u in [
            "https://github.com/me/cutlass",
            "https://example.com/NVIDIA/cutlass-fork",
        ] {
            assert!(!is_repository(u), "{u}");
        }
    }

    #[test]
    fn requests_read_as_users_read_them() {
        assert!(request_meaning("3.5")
            .unwrap()
            .contains("newest 3.5.x release, 3.5.1.0 on the index (write \"3.5.0\" to pin 3.5.0)"));
        assert!(request_meaning("3.5.0")
            .unwrap()
            .contains("pins release 3.5.0"));
        assert!(request_meaning("4").unwrap().contains("newest 4.x"));
        assert_eq!(request_meaning("3.5.0.0"), None);
    }
}
