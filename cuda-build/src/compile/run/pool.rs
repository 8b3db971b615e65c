//! One job pool for every build of a build script, driving the stages: each
//! prepared build is planned (`plan_jobs.rs`), the jobs left to compile from
//! all builds run together under cargo's jobserver (`compile_job.rs`),
//! longest first, then each build is finished (`finish.rs`). A static
//! library's objects so start while PTX files still compile, and the longest
//! file does not start last.
//!
//! Order: jobs whose last compile time is recorded in the cache
//! (`durations` records) come after new jobs (which may be long), and among
//! each group the longest (by recorded time, else by the size of the source
//! and the headers it includes, `work_estimate.rs`) starts first. A corrupt
//! record is ignored with a note.

use crate::compile::incremental::cache::Cache;
use crate::compile::nvcc::jobserver::{self, Limiter, Task};
use crate::compile::nvcc::progress::Event;
use crate::compile::output::artifacts::Artifacts;
use crate::compile::run::collisions::{collisions, shared_output};
use crate::compile::run::context::{JobDone, Planned, Run, Stage};
use crate::compile::run::job::Job;
use crate::compile::run::work_estimate::Estimate;
use crate::compile::settings::package::package_dir;
use crate::compile::settings::spec::Prepared;
use cuda_toolchain::env::Env;
use cuda_toolchain::Error;

/// One pending compile: which build, which job, and its ordering facts.
struct Pending {
    build: usize,
    job: usize,
    /// Seconds it took last time (None: never recorded).
    secs: Option<f64>,
    /// Without `secs`: the estimated work ([`Estimate`]).
    size: u64,
}

/// A job's last compile time, as stored in the cache.
#[derive(serde::Serialize, serde::Deserialize)]
struct Duration {
    secs: f64,
}

/// Every build's result and its `cargo:` lines (without the prefix), from
/// each build's environment and its prepared settings (see `settings/prepare.rs`).
pub(crate) fn build_all(
    prepared: Vec<(Env, Result<Prepared, Error>)>,
) -> Vec<(Result<Artifacts, Error>, Vec<String>)> {
    let (envs, prepared): (Vec<Env>, Vec<Result<Prepared, Error>>) = prepared.into_iter().unzip();
    let runs: Vec<Result<Run, Error>> = prepared
        .iter()
        .zip(&envs)
        .map(|(p, env)| match p {
            Ok(p) => Run::new(&p.spec, env.clone(), p.metadata.clone()),
            Err(e) => Err(e.clone()),
        })
        .collect();
    let mut stages = plan_all(&runs);
    compile_pending(&runs, &mut stages);
    runs.iter()
        .zip(stages)
        .zip(&prepared)
        .zip(&envs)
        .map(|(((run, stage), prep), env)| finish(run, stage, prep, env))
        .collect()
}

/// The plan stage of every build. Two builds with the same module or
/// manifest are refused before anything runs; with the same output file (a
/// shared `output_dir`), once their jobs are known.
fn plan_all(runs: &[Result<Run, Error>]) -> Vec<Result<Stage, Error>> {
    let clashes = collisions(runs, &|_, _| false);
    let mut stages: Vec<Result<Stage, Error>> = runs
        .iter()
        .zip(clashes)
        .map(|(r, clash)| match (r, clash) {
            (Err(e), _) => Err(e.clone()),
            (Ok(_), Some(e)) => Err(e),
            (Ok(run), None) => run.plan_jobs(),
        })
        .collect();
    let clashes = collisions(runs, &|i, j| shared_output(&stages[i], &stages[j]));
    for (stage, clash) in stages.iter_mut().zip(clashes) {
        if let (Ok(_), Some(e)) = (&*stage, clash) {
            *stage = Err(e);
        }
    }
    stages
}

/// The compile stage: every job no build could settle, from all builds,
/// in one pool, longest first; each result (and its duration, for the next
/// build's order) handed back to its build.
fn compile_pending(runs: &[Result<Run, Error>], stages: &mut [Result<Stage, Error>]) {
    let ready = |bi: usize| match (&runs[bi], &stages[bi]) {
        (Ok(run), Ok(Stage::Ready(p))) => Some((run, &**p)),
        _ => None,
    };
    let pending = pending_longest_first(&ready, runs.len());
    let limiter = runs
        .iter()
        .flatten()
        .next()
        .map(|r| Limiter::from_env(&r.env))
        .unwrap_or(Limiter::Fixed(1));
    // nvcc's --threads for multi-arch sources when there are fewer sources than slots.
    let threads = (limiter.capacity().max(1) / pending.len().max(1)).max(1);
    let mut order = Vec::with_capacity(pending.len());
    let mut tasks: Vec<Task<'_, Result<JobDone, Error>>> = Vec::with_capacity(pending.len());
    for pj in pending {
        let Some((run, p)) = ready(pj.build) else {
            continue;
        };
        let job = &p.jobs[pj.job];
        order.push(pj);
        tasks.push(Box::new(move || compile_one(run, p, job, threads)));
    }
    let compiled = jobserver::run_all(tasks, &limiter);
    // One-line notices of each build's nvcc runner (sccache skipped or bypassed).
    for bi in 0..runs.len() {
        if let Some((run, p)) = ready(bi) {
            for n in p.tools.runner.take_notices() {
                run.warn(n);
            }
        }
    }

    for (pj, r) in order.iter().zip(compiled) {
        let (Ok(run), Ok(Stage::Ready(p))) = (&runs[pj.build], &mut stages[pj.build]) else {
            continue;
        };
        if let (Ok(done), Some(cache)) = (&r, &p.tools.cache) {
            if let Some(took) = done.took {
                let key = run.duration_key(&p.tools.tk, &p.jobs[pj.job]);
                let _ = cache.put_json(
                    "durations",
                    &key,
                    &Duration {
                        secs: took.as_secs_f64(),
                    },
                );
            }
        }
        p.results[pj.job] = Some(r);
    }
}

/// One job compiled, with its start and end progress events.
fn compile_one(run: &Run, p: &Planned, job: &Job, threads: usize) -> Result<JobDone, Error> {
    let archs = job.archs.join(",");
    p.tools.progress.event(Event::Start, &job.display, &archs);
    let r = run.compile_job(&p.tools, job, threads);
    let ev = if r.is_ok() {
        Event::Done
    } else {
        Event::Failed
    };
    p.tools.progress.event(ev, &job.display, &archs);
    r
}

/// Every job still to compile, from every ready build (`ready`), longest
/// first: never-recorded jobs (by estimated work), then by recorded time.
fn pending_longest_first<'a, 'b: 'a>(
    ready: &dyn Fn(usize) -> Option<(&'a Run<'b>, &'a Planned)>,
    builds: usize,
) -> Vec<Pending> {
    let mut estimate = Estimate::default();
    let mut pending = Vec::new();
    for bi in 0..builds {
        let Some((run, p)) = ready(bi) else {
            continue;
        };
        for (ji, job) in p.jobs.iter().enumerate() {
            if p.results[ji].is_some() {
                continue;
            }
            let secs = p
                .tools
                .cache
                .as_ref()
                .and_then(|c| recorded_secs(run, c, &run.duration_key(&p.tools.tk, job), job));
            pending.push(Pending {
                build: bi,
                job: ji,
                secs,
                size: if secs.is_none() {
                    estimate.work(&job.source, &job.includes)
                } else {
                    0
                },
            });
        }
    }
    pending.sort_by(|a, b| {
        let time = |p: &Pending| p.secs.unwrap_or(f64::INFINITY);
        time(b).total_cmp(&time(a)).then(b.size.cmp(&a.size))
    });
    pending
}

/// The recorded compile time of a job; a record that exists but does not
/// parse is ignored with a note (the job is then ordered by size).
fn recorded_secs(run: &Run, cache: &Cache, key: &str, job: &Job) -> Option<f64> {
    match cache.read_json::<Duration>("durations", key)? {
        Ok(d) if d.secs.is_finite() && d.secs >= 0.0 => Some(d.secs),
        Ok(_) => None,
        Err(why) => {
            run.warn(format!(
                "cuda-build: ignored the corrupt job-duration record for `{}` ({why}); it is ordered by size and recorded again",
                job.display
            ));
            None
        }
    }
}

/// The finish stage of one build, and every `cargo:` line it prints: its
/// rerun triggers and warnings first, then the build's own lines.
fn finish(
    run: &Result<Run, Error>,
    stage: Result<Stage, Error>,
    prep: &Result<Prepared, Error>,
    env: &Env,
) -> (Result<Artifacts, Error>, Vec<String>) {
    let mut lines = env_lines(env, prep);
    if let Ok(p) = prep {
        lines.extend(p.rerun.iter().cloned());
    }
    let result = match (run, stage) {
        (Ok(run), Ok(Stage::Ready(p))) => {
            let r = run.finish(*p);
            lines.extend(run.take_cargo_lines());
            r
        }
        (Ok(run), Ok(Stage::Done(a))) => {
            lines.extend(run.take_cargo_lines());
            Ok(*a)
        }
        (Ok(run), Err(e)) => {
            lines.extend(run.take_cargo_lines());
            Err(e)
        }
        (Err(e), _) => Err(e.clone()),
    };
    let notes = prep.as_ref().map(|p| p.notes.clone()).unwrap_or_default();
    lines.extend(notes.iter().map(|n| format!("warning={n}")));
    let result = result.map(|mut a| {
        a.warnings.extend(notes);
        a
    });
    (result, lines)
}

/// A build's rerun triggers and setting warnings. Only build inputs are
/// rerun triggers: side channels (the progress file, colours) differ
/// between `cargo` and `cargo cuda` and must not dirty a build.
fn env_lines(env: &Env, prep: &Result<Prepared, Error>) -> Vec<String> {
    let md_warnings = prep
        .as_ref()
        .map(|p| p.metadata.warnings.clone())
        .unwrap_or_default();
    // `[package.metadata.cuda]` (arch, toolkit, deploy, header-deps)
    // is an input too: editing a pin reruns the script, which compiles
    // only what the change affects.
    let manifest = package_dir(env).join("Cargo.toml");
    let manifest = manifest
        .is_file()
        .then(|| format!("rerun-if-changed={}", manifest.display()));
    manifest
        .into_iter()
        .chain(
            cuda_toolchain::env::build_inputs()
                .map(|v| format!("rerun-if-env-changed={}", v.name())),
        )
        .chain(env.check().into_iter().map(|w| format!("warning={w}")))
        .chain(md_warnings.into_iter().map(|w| format!("warning={w}")))
        .collect()
}
