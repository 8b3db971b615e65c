//! Why there is no usable GPU, in cuda-build's words: the probe looks at the
//! machine (driver, device nodes, libcuda, containers) and the diagnosis
//! engine turns the failure text into a cause and a fix.

use std::time::Duration;

use cuda_toolchain::diagnose::{self, Context, Diagnosis};
use cuda_toolchain::env::{Env, Var};
use serde::Serialize;

/// A failure explained.
#[derive(Debug, Clone, Serialize)]
pub struct Explained {
    /// Stable diagnosis code (`libcuda-not-found`, `no-device-visible`, …).
    pub code: String,
    /// What failed, as the driver or loader said it.
    pub failure: String,
    /// The rendered diagnosis (or the error with its help lines).
    pub text: String,
}

/// Runs the probe (bounded well under the 2 s the workload allows itself
/// without a GPU) and the diagnosis engine on `failure`.
pub fn explain(env: &Env, failure: &str) -> Explained {
    let options = cuda_toolchain::probe::ProbeOptions {
        timeout: Duration::from_millis(1200),
        // The driver API is what just failed (or would panic cudarc).
        skip_driver_api: true,
        ..Default::default()
    };
    let report = cuda_toolchain::probe::probe(env, &options);
    let ctx = Context {
        probe: Some(report),
        ..Default::default()
    };
    from_diagnoses(failure, &diagnose::diagnose(failure, &ctx))
}

/// Explains a failure whose code is already known (a pre-load check), with
/// the engine's words for the driver error that code stands for.
pub fn explain_code(code: &'static str, evidence: &str) -> Explained {
    let failure = match code {
        "no-kernel-image-for-device" => {
            "CUDA_ERROR_NO_BINARY_FOR_GPU: no kernel image is available for execution on the device"
        }
        "ptx-too-new-for-driver" => {
            "CUDA_ERROR_UNSUPPORTED_PTX_VERSION: the provided PTX was compiled with an unsupported toolchain."
        }
        _ => "",
    };
    let diagnoses = diagnose::diagnose(&format!("{failure}\n{evidence}"), &Context::default());
    let mut e = from_diagnoses(failure, &diagnoses);
    if !diagnoses.iter().any(|d| d.code == code) {
        // The engine did not name it: say it ourselves, from the catalogue.
        let title = diagnose::codes::lookup(code).map_or(code, |d| d.title);
        e.text = format!("error[{code}]: {title}\n{evidence}");
    }
    e.code = code.to_string();
    e
}

fn from_diagnoses(failure: &str, diagnoses: &[Diagnosis]) -> Explained {
    match diagnoses.first() {
        Some(d) => Explained {
            code: d.code.to_string(),
            failure: failure.to_string(),
            text: diagnose::render(d),
        },
        None => Explained {
            code: "cuda-init-failed".into(),
            failure: failure.to_string(),
            text: format!(
                "error[cuda-init-failed]: {failure}\n  = help: run `cargo cuda doctor` for a full check of the driver and GPUs"
            ),
        },
    }
}

/// What `CUDA_VISIBLE_DEVICES` leaves visible, read the way the driver
/// reads it (cuda-build's parser: indices, `GPU-`/`MIG-` UUID prefixes, the
/// list ends at the first entry that is neither, an empty value hides every GPU).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Visible {
    /// Not set: every GPU.
    All,
    /// Set: these entries, in order.
    Listed(Vec<String>),
}

/// Reads `CUDA_VISIBLE_DEVICES` through the project's env registry.
/// Errors (`no-device-visible`) when the value hides every GPU; a list cut
/// short by a bad entry later on is returned with a warning.
pub fn visible_devices(env: &Env) -> Result<(Visible, Option<String>), cuda_toolchain::Error> {
    let Some(raw) = env.get(Var::CudaVisibleDevices) else {
        return Ok((Visible::All, None));
    };
    let name = Var::CudaVisibleDevices.name();
    let value = raw.trim();
    if value.is_empty() {
        return Err(cuda_toolchain::Error::new(
            "no-device-visible",
            format!("{name} is set but empty: the driver hides every GPU from this process"),
        )
        .with_help(format!(
            "unset {name}, or list the GPUs to use, e.g. `{name}=0`"
        )));
    }
    let parsed = cuda_toolchain::probe::visible::parse(value);
    if parsed.entries.is_empty() {
        let first = value.split(',').next().unwrap_or(value).trim();
        return Err(cuda_toolchain::Error::new(
            "no-device-visible",
            format!("{name}=`{value}`: the first entry `{first}` is not a device index or a GPU-/MIG- UUID, so the driver shows no GPU"),
        )
        .with_help(format!(
            "use indices (`{name}=0,1`) or UUIDs from `nvidia-smi -L` (`{name}=GPU-8f3a…`), or unset it"
        )));
    }
    let listed = parsed.entries.iter().map(|e| e.to_string()).collect();
    Ok((Visible::Listed(listed), parsed.problem))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_with(value: Option<&str>) -> Env {
        match value {
            Some(v) => Env::empty().set(Var::CudaVisibleDevices, v),
            None => Env::empty(),
        }
    }

    #[test]
    fn driver_errors_of_a_mismatch_get_their_codes() {
        // What `--force-arch-mismatch` and the pre-load check rely on: the
        // engine names the driver's own words with the expected codes.
        let cases = [
            (
                "CUDA_ERROR_NO_BINARY_FOR_GPU: no kernel image is available for execution on the device",
                "no-kernel-image-for-device",
            ),
            (
                "CUDA_ERROR_UNSUPPORTED_PTX_VERSION: the provided PTX was compiled with an unsupported toolchain.",
                "ptx-too-new-for-driver",
            ),
        ];
        for (text, code) in cases {
            let first = diagnose::diagnose(text, &Context::default());
            assert_eq!(first.first().map(|d| d.code.as_str()), Some(code), "{text}");
            let e = explain_code(code, "  sm_75: SASS for CC 7.x does not run on CC 9.0");
            assert_eq!(e.code, code);
            assert!(e.text.contains(code), "{}", e.text);
        }
    }

    #[test]
    fn unset_means_all() {
        assert_eq!(
            visible_devices(&env_with(None)).unwrap(),
            (Visible::All, None)
        );
    }

    #[test]
    fn empty_hides_everything() {
        for v in ["", "  "] {
            let e = visible_devices(&env_with(Some(v))).unwrap_err();
            assert_eq!(e.code, "no-device-visible");
            assert!(
                e.message.contains("CUDA_VISIBLE_DEVICES is set but empty"),
                "{e}"
            );
        }
    }

    #[test]
    fn invalid_first_entry_hides_everything() {
        for v in ["abc", "-1", "gpu0", ",0"] {
            let e = visible_devices(&env_with(Some(v))).unwrap_err();
            assert_eq!(e.code, "no-device-visible", "{v}");
            assert!(e.message.contains("first entry"), "{v}: {e}");
        }
    }

    #[test]
    fn list_is_cut_at_the_first_bad_entry() {
        let (visible, warning) = visible_devices(&env_with(Some("1,0,x,2"))).unwrap();
        assert_eq!(visible, Visible::Listed(vec!["1".into(), "0".into()]));
        assert!(warning.unwrap().contains("`x`"));
        let (visible, warning) = visible_devices(&env_with(Some("GPU-8f3a12,0"))).unwrap();
        assert_eq!(
            visible,
            Visible::Listed(vec!["gpu-8f3a12".into(), "0".into()])
        );
        assert_eq!(warning, None);
    }
}
