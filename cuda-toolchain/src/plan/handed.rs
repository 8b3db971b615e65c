//! The arch plan `cargo cuda` resolved, handed to build scripts in one
//! serialised, versioned form (`CARGO_CUDA_PLAN`), so they do not probe the
//! GPUs and ask nvcc again.
//!
//! The value records every input the plan was made from. A build script
//! uses it only when its own inputs are the same, so the plan it uses is the
//! one it would have made itself: `cargo build` and `cargo cuda build` give
//! the same kernels, and the variable is not a build input
//! ([`crate::env::Var::is_build_input`]).

use std::path::PathBuf;

use crate::env::{Env, Var};
use crate::toolkit::Toolkit;

use super::{ArchInputs, ArchPlan, ArchSource};

/// The format version of [`HandedPlan`]; a value of another version is ignored.
pub const HANDED_PLAN_VERSION: u32 = 1;

/// Everything a plan depends on besides the GPUs present.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PlanInputs {
    /// The nvcc the plan was checked against.
    pub nvcc: PathBuf,
    /// Its version, when known.
    pub toolkit_version: Option<String>,
    /// `Build::arch`.
    pub explicit: Option<String>,
    /// `[package.metadata.cuda] arch`.
    pub metadata: Option<String>,
    /// The fallback list (compared only for a plan that used it).
    pub fallback: Option<String>,
    /// The variables of [`super::INPUT_VARS`] as set (None when unset).
    pub vars: Vec<(String, Option<String>)>,
}

impl PlanInputs {
    /// The inputs as this process sees them.
    pub fn of(env: &Env, toolkit: &Toolkit, inputs: &ArchInputs) -> PlanInputs {
        PlanInputs {
            nvcc: toolkit.nvcc.clone(),
            toolkit_version: toolkit.version.as_ref().map(|v| v.to_string()),
            explicit: inputs.explicit.clone(),
            metadata: inputs.metadata.clone(),
            fallback: inputs.fallback.clone(),
            vars: super::INPUT_VARS
                .iter()
                .map(|v| {
                    (
                        v.name().to_string(),
                        env.get_os(*v).map(|s| s.to_string_lossy().into_owned()),
                    )
                })
                .collect(),
        }
    }
}

/// The `CARGO_CUDA_PLAN` value: the plan and the inputs it came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HandedPlan {
    /// [`HANDED_PLAN_VERSION`].
    pub version: u32,
    /// What the plan was made from.
    pub inputs: PlanInputs,
    /// The plan.
    pub plan: ArchPlan,
}

impl HandedPlan {
    /// Records `plan`, made by [`super::plan_for_toolkit`] from these inputs.
    pub fn new(env: &Env, toolkit: &Toolkit, inputs: &ArchInputs, plan: &ArchPlan) -> HandedPlan {
        HandedPlan {
            version: HANDED_PLAN_VERSION,
            inputs: PlanInputs::of(env, toolkit, inputs),
            plan: plan.clone(),
        }
    }

    /// The value to put in `CARGO_CUDA_PLAN` (one line of JSON).
    pub fn encode(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The handed plan, when `CARGO_CUDA_PLAN` holds one of this version that
    /// was made from exactly the inputs this build script sees. Anything
    /// else (unset, another version, garbage, other inputs) gives `None`:
    /// the caller plans on its own.
    pub fn take(env: &Env, toolkit: &Toolkit, inputs: &ArchInputs) -> Option<ArchPlan> {
        let raw = env.get_nonempty(Var::CargoCudaPlan)?;
        let handed: HandedPlan = serde_json::from_str(raw).ok()?;
        if handed.version != HANDED_PLAN_VERSION {
            return None;
        }
        let mine = PlanInputs::of(env, toolkit, inputs);
        let mut theirs = handed.inputs.clone();
        // The fallback list matters only to a plan that fell back to it.
        if handed.plan.source != ArchSource::Fallback {
            theirs.fallback = mine.fallback.clone();
        }
        (theirs == mine).then_some(handed.plan)
    }
}
