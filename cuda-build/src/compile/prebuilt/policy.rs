//! Whether a build uses the images its package ships: `CUDA_BUILD_PREBUILT`,
//! else `[package.metadata.cuda] prebuilt` (its `policy`), else `prefer`.

use cuda_toolchain::env::{Env, Var};
use cuda_toolchain::metadata::prebuilt::Policy;
use cuda_toolchain::metadata::CudaMetadata;
use cuda_toolchain::Error;

/// The policy in force, and where it came from (for messages).
pub(crate) fn policy(env: &Env, metadata: &CudaMetadata) -> Result<(Policy, &'static str), Error> {
    if let Some(v) = env.get_os(Var::CudaBuildPrebuilt) {
        let text = v.to_string_lossy();
        if !text.trim().is_empty() {
            return match Policy::parse(&text) {
                Some(p) => Ok((p, "CUDA_BUILD_PREBUILT")),
                None => Err(Error::new(
                    "prebuilt-policy-invalid",
                    format!(
                        "CUDA_BUILD_PREBUILT={} is not a policy",
                        cuda_toolchain::env::show_value(&text)
                    ),
                )
                .with_help(format!(
                    "set it to one of {} (unset: prefer)",
                    Policy::NAMES.join(", ")
                ))),
            };
        }
    }
    Ok(match metadata.prebuilt.as_ref().and_then(|p| p.policy) {
        Some(p) => (p, "[package.metadata.cuda] prebuilt"),
        None => (Policy::Prefer, "the default"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuda_toolchain::metadata::prebuilt::Prebuilt;

    #[test]
    fn variable_then_metadata_then_prefer() {
        let md = CudaMetadata {
            prebuilt: Some(Prebuilt {
                policy: Some(Policy::Require),
                ..Prebuilt::default()
            }),
            ..CudaMetadata::default()
        };
        let env = Env::empty();
        assert_eq!(
            policy(&env, &CudaMetadata::default()).unwrap().0,
            Policy::Prefer
        );
        assert_eq!(policy(&env, &md).unwrap().0, Policy::Require);
        let env = env.set(Var::CudaBuildPrebuilt, "never");
        assert_eq!(
            policy(&env, &md).unwrap(),
            (Policy::Never, "CUDA_BUILD_PREBUILT")
        );
        let e = policy(&Env::empty().set(Var::CudaBuildPrebuilt, "sometimes"), &md).unwrap_err();
        assert_eq!(e.code, "prebuilt-policy-invalid");
        assert!(e.message.contains("sometimes"), "{e}");
    }
}
