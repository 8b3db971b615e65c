//! Arch flags given as flags: `-arch=sm_80` (or `--gpu-architecture`) in
//! `Build::flag` becomes the arch plan, as `Build::arch` would; `-gencode`
//! and `-code`, which would double the planned `-gencode` flags, are refused
//! with a pointer to `Build::arch`.

use cuda_toolchain::Error;

/// The nvcc option an arch flag starts with, if it is one.
pub(crate) fn arch_flag_name(flag: &str) -> Option<&'static str> {
    cuda_toolchain::interop::nvcc_flags::arch_option(flag)
}

/// An arch flag as written (`-arch=sm_80`) and the arch it plans (`80`).
pub(crate) type ArchFlag = (String, String);

/// Takes `-arch=X` / `--gpu-architecture X` out of the flags, as the arch
/// it names (in [`cuda_toolchain::arch`]'s spelling); refuses `-gencode` and `-code`,
/// which only `.arch()` can plan. Returns the other flags and (text, arch).
pub(crate) fn split_arch_flags(
    flags: &[String],
    method: &str,
) -> Result<(Vec<String>, Option<ArchFlag>), Error> {
    let mut rest = Vec::new();
    let mut arch: Option<ArchFlag> = None;
    let mut i = 0;
    while i < flags.len() {
        let f = flags[i].trim();
        let Some(name) = arch_flag_name(f) else {
            rest.push(flags[i].clone());
            i += 1;
            continue;
        };
        let (value, text) = match f.split_once('=') {
            Some((_, v)) => (v.to_string(), f.to_string()),
            None => match flags.get(i + 1) {
                Some(v) => {
                    i += 1;
                    (v.trim().to_string(), format!("{f} {}", v.trim()))
                }
                None => (String::new(), f.to_string()),
            },
        };
        i += 1;
        if matches!(name, "-arch" | "--gpu-architecture")
            && !value.is_empty()
            && !value.contains(',')
        {
            let planned = match value.strip_prefix("sm_") {
                // nvcc's -arch=sm_80 is SASS plus PTX for 8.0: `80` here.
                Some(rest) => rest.to_string(),
                None => value.clone(),
            };
            cuda_toolchain::arch::parse_arch_list(&planned)
                .map_err(|e| e.with_help(format!("{method}(\"{text}\") names this arch")))?;
            if let Some((first, _)) = &arch {
                return Err(Error::new(
                    "arch-invalid",
                    format!("{method} got two arch flags: `{first}` and `{text}`"),
                )
                .with_help("list every arch in one Build::arch call, e.g. .arch(\"80;90\")"));
            }
            arch = Some((text, planned));
            continue;
        }
        return Err(Error::new(
            "arch-invalid",
            format!("{method}(\"{text}\") sets the GPU code by hand, which would double the planned -gencode flags"),
        )
        .with_help("use Build::arch instead: .arch(\"80;90\") for SASS+PTX, .arch(\"sm_80;compute_90\") for SASS only / PTX only")
        .with_help("the plan then decides every -gencode and the generated module's ARCHS say what was built"));
    }
    Ok((rest, arch))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn arch_flags_become_the_plan() {
        let (rest, arch) = split_arch_flags(&v(&["-O3", "-arch=sm_80", "-lineinfo"]), "f").unwrap();
        assert_eq!(rest, ["-O3", "-lineinfo"]);
        assert_eq!(arch.unwrap().1, "80");
        let (_, arch) = split_arch_flags(&v(&["--gpu-architecture", "compute_90"]), "f").unwrap();
        assert_eq!(
            arch.unwrap(),
            (
                "--gpu-architecture compute_90".to_string(),
                "compute_90".to_string()
            )
        );
        let (_, arch) = split_arch_flags(&v(&["-arch=sm_90a"]), "f").unwrap();
        assert_eq!(arch.unwrap().1, "90a");
        // Not arch flags: -arch-like prefixes of other options.
        let (rest, arch) = split_arch_flags(&v(&["--architecture-hint", "-codegen"]), "f").unwrap();
        assert_eq!((rest.len(), arch), (2, None));
    }

    #[test]
    fn gencode_and_code_are_refused_with_a_pointer_to_arch() {
        for f in [
            v(&["-gencode", "arch=compute_80,code=sm_80"]),
            v(&["-gencode=arch=compute_80,code=sm_80"]),
            v(&["--generate-code=arch=compute_80,code=sm_80"]),
            v(&["-code=sm_80"]),
            v(&["--gpu-code", "sm_80"]),
        ] {
            let e = split_arch_flags(&f, "Build::flag").unwrap_err();
            assert_eq!(e.code, "arch-invalid");
            assert!(e.to_string().contains("use Build::arch"), "{e}");
        }
        let e = split_arch_flags(&v(&["-arch=sm_80", "-arch=sm_90"]), "Build::flag").unwrap_err();
        assert!(e.message.contains("two arch flags"), "{e}");
        let e = split_arch_flags(&v(&["-arch=sm_8x"]), "Build::flag").unwrap_err();
        assert!(e.to_string().contains("-arch=sm_8x"), "{e}");
    }
}
