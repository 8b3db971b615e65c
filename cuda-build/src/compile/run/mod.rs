//! The compile engine, in stages. `pool.rs` drives them for every build of
//! a build script:
//!
//! ```text
//! prepared builds (settings/prepare.rs)
//!   → plan_jobs   sources, toolkit, arch plans (arch_plan.rs), jobs (job_args.rs),
//!                 collisions (collisions.rs); jobs already current, shipped
//!                 prebuilt (use_prebuilt.rs) or cached settled (reuse.rs)
//!   → compile_job the rest, in one job pool, longest first (work_estimate.rs);
//!                 a failure explained (failure.rs)
//!   → finish      static library (static_library.rs), typed launchers
//!                 (splice_launchers.rs), manifest, generated module; the
//!                 outputs recorded under `cargo cuda prebuild` (record_prebuilt.rs)
//! ```
//!
//! Below the stages, shared by all of them: `context.rs` (one build's `Run`,
//! the `Tools` its jobs run with, `JobDone`/`Outcome`, a build between stages
//! as `Planned`), `job.rs` (one source's `Job`), `module_anchor.rs` (its anchor, with
//! `Build::stable_module_ids`) and `keys.rs` (its cache keys).
//! Each stage imports only what is below it.
pub(crate) mod arch_plan;
pub(crate) mod collisions;
pub(crate) mod compile_job;
pub(crate) mod context;
pub(crate) mod failure;
pub(crate) mod finish;
pub(crate) mod job;
pub(crate) mod job_args;
pub(crate) mod keys;
pub(crate) mod module_anchor;
pub(crate) mod plan_jobs;
pub(crate) mod pool;
pub(crate) mod record_prebuilt;
pub(crate) mod reuse;
pub(crate) mod splice_launchers;
pub(crate) mod static_library;
pub(crate) mod use_prebuilt;
pub(crate) mod work_estimate;
