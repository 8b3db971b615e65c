//! One job pool for every build of a build script: the jobs of all builds
//! given to [`compile_all`](crate::compile::compile_all) run together under cargo's
//! jobserver, longest first, so a static library's objects start while PTX
//! files still compile and the longest file does not start last.
//!
//! Order: jobs whose last compile time is recorded in the cache
//! (`durations` records) come after new jobs (which may be long), and among
//! each group the longest (by recorded time, else by the size of the source
//! and the headers it includes, `estimate.rs`) starts first. A corrupt record
//! is ignored with a note.

use crate::compile::incremental::cache::Cache;
use crate::compile::nvcc::jobserver::{self as jobs, Limiter, Task};
use crate::compile::nvcc::progress::Event;
use crate::compile::output::artifacts::Artifacts;
use crate::compile::run::context::{JobDone, Run, Stage};
use crate::compile::settings::spec::Prepared;
use cuda_toolchain::env::Env;
use cuda_toolchain::Error;
use std::collections::HashSet;

/// One pending compile: which build, which job, and its ordering facts.
struct Pending {
    build: usize,
    job: usize,
    /// Seconds it took last time (None: never recorded).
    secs: Option<f64>,
    /// Without `secs`: the estimated work ([`crate::compile::run::work_estimate::Estimate`]).
    size: u64,
}

/// A job's last compile time, as stored in the cache.
#[derive(serde::Serialize, serde::Deserialize)]
struct Duration {
    secs: f64,
}

/// Every build's result and its `cargo:` lines (without the prefix), from
/// each build's environment and its prepared settings (see `parity.rs`).
pub(crate) fn build_all(
    prepared: Vec<(Env, Result<Prepared, Error>)>,
) -> Vec<(Result<Artifacts, Error>, Vec<String>)> {
    // Only build inputs are rerun triggers: side channels (the progress file,
    // colours) differ between `cargo` and `cargo cuda` and must not dirty a build.
    let env_lines = |env: &Env, prep: &Result<Prepared, Error>| -> Vec<String> {
        let md_warnings = prep
            .as_ref()
            .map(|p| p.found.metadata.warnings.clone())
            .unwrap_or_default();
        // `[package.metadata.cuda]` (arch, toolkit, deploy, header-deps)
        // is an input too: editing a pin reruns the script, which compiles
        // only what the change affects.
        let manifest = crate::compile::run::context::package_dir(env).join("Cargo.toml");
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
    };
    let (envs, prepared): (Vec<Env>, Vec<Result<Prepared, Error>>) = prepared.into_iter().unzip();
    let runs: Vec<Result<Run, Error>> = prepared
        .iter()
        .zip(&envs)
        .map(|(p, env)| match p {
            Ok(p) => Run::new(&p.spec, env.clone(), p.found.clone()),
            Err(e) => Err(e.clone()),
        })
        .collect();
    // Same module or manifest: refused before anything runs. Same output
    // file (a shared `output_dir`): known once the jobs are.
    let clashes = collisions(&runs, &|_, _| false);
    let mut stages: Vec<Result<Stage, Error>> = runs
        .iter()
        .zip(clashes)
        .map(|(r, clash)| match (r, clash) {
            (Err(e), _) => Err(e.clone()),
            (Ok(_), Some(e)) => Err(e),
            (Ok(run), None) => run.prepare(),
        })
        .collect();
    let clashes = collisions(&runs, &|i, j| shared_output(&stages[i], &stages[j]));
    for (stage, clash) in stages.iter_mut().zip(clashes) {
        if let (Ok(_), Some(e)) = (&*stage, clash) {
            *stage = Err(e);
        }
    }

    // Everything still to compile, from every build, longest first.
    let mut estimate = crate::compile::run::work_estimate::Estimate::default();
    let mut pending: Vec<(Pending, &Run, &crate::compile::run::context::Prepared)> = Vec::new();
    for (bi, (run, stage)) in runs.iter().zip(&stages).enumerate() {
        let (Ok(run), Ok(Stage::Ready(p))) = (run, stage) else {
            continue;
        };
        for (ji, job) in p.jobs.iter().enumerate() {
            if p.results[ji].is_none() {
                let secs = p
                    .cache
                    .as_ref()
                    .and_then(|c| recorded_secs(run, c, &run.duration_key(&p.tk, job), job));
                let pj = Pending {
                    build: bi,
                    job: ji,
                    secs,
                    size: if secs.is_none() {
                        estimate.work(&job.source, &job.includes)
                    } else {
                        0
                    },
                };
                pending.push((pj, run, p));
            }
        }
    }
    pending.sort_by(|(a, ..), (b, ..)| {
        let time = |p: &Pending| p.secs.unwrap_or(f64::INFINITY);
        time(b).total_cmp(&time(a)).then(b.size.cmp(&a.size))
    });

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
    for (pj, run, p) in pending {
        let job = &p.jobs[pj.job];
        order.push(pj);
        tasks.push(Box::new(move || {
            p.progress
                .event(Event::Start, &job.display, &job.archs.join(","));
            let r = run.compile_job(
                &p.tk,
                &p.other_toolkits,
                job,
                &p.runner,
                p.cache.as_ref(),
                threads,
            );
            let ev = if r.is_ok() {
                Event::Done
            } else {
                Event::Failed
            };
            p.progress.event(ev, &job.display, &job.archs.join(","));
            r
        }));
    }
    let compiled = jobs::run_all(tasks, &limiter);
    // One-line notices of each build's nvcc runner (sccache skipped or bypassed).
    for (run, stage) in runs.iter().zip(&stages) {
        if let (Ok(run), Ok(Stage::Ready(p))) = (run, stage) {
            for n in p.runner.take_notices() {
                run.warn(n);
            }
        }
    }

    for (pj, r) in order.iter().zip(compiled) {
        let (Ok(run), Ok(Stage::Ready(p))) = (&runs[pj.build], &mut stages[pj.build]) else {
            continue;
        };
        if let (Ok(done), Some(cache)) = (&r, &p.cache) {
            if let Some(took) = done.took {
                let key = run.duration_key(&p.tk, &p.jobs[pj.job]);
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

    runs.iter()
        .zip(stages)
        .zip(&prepared)
        .zip(&envs)
        .map(|(((run, stage), prep), env)| {
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
                    Ok(a)
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
        })
        .collect()
}

/// The recorded compile time of a job; a record that exists but does not
/// parse is ignored with a note (the job is then ordered by size).
fn recorded_secs(
    run: &Run,
    cache: &Cache,
    key: &str,
    job: &crate::compile::run::job::Job,
) -> Option<f64> {
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

/// Two builds writing the same module (or the same manifest, or, as
/// `same_output` says, the same output file) would overwrite each other:
/// both get an error naming both.
fn collisions(
    runs: &[Result<Run, Error>],
    same_output: &dyn Fn(usize, usize) -> bool,
) -> Vec<Option<Error>> {
    // Only called for builds whose run started.
    let describe = |i: usize| {
        let Ok(run) = &runs[i] else {
            return format!("build #{}", i + 1);
        };
        let spec = run.spec;
        let first = spec
            .files
            .first()
            .or(spec.dirs.first())
            .map(|p| p.display().to_string())
            .or_else(|| spec.globs.first().cloned())
            .unwrap_or_default();
        format!(
            "build #{} ({}, module `{}`, sources from `{first}`)",
            i + 1,
            spec.output.as_str(),
            spec.module_name
        )
    };
    let mut errors: Vec<Option<Error>> = vec![None; runs.len()];
    for i in 0..runs.len() {
        for j in i + 1..runs.len() {
            let (Ok(a), Ok(b)) = (&runs[i], &runs[j]) else {
                continue;
            };
            let same_module = a.module_path().is_some() && a.module_path() == b.module_path();
            let same_root = a.out_root == b.out_root;
            if !(same_module || same_root || same_output(i, j)) {
                continue;
            }
            let what = if same_module || same_root {
                format!("the module name `{}`", a.spec.module_name)
            } else {
                "an output file".to_string()
            };
            let e = Error::new(
                "module-name-collision",
                format!(
                    "{} and {} both write {what} in `{}`",
                    describe(i),
                    describe(j),
                    a.out_dir.display()
                ),
            )
            .with_help("give each Build its own Build::module_name (and output_dir)");
            errors[i].get_or_insert(e.clone());
            errors[j].get_or_insert(e);
        }
    }
    errors
}

fn shared_output(a: &Result<Stage, Error>, b: &Result<Stage, Error>) -> bool {
    let (Ok(Stage::Ready(a)), Ok(Stage::Ready(b))) = (a, b) else {
        return false;
    };
    let outs: HashSet<_> = a
        .jobs
        .iter()
        .flat_map(|j| j.outputs.iter().map(|(_, p)| p))
        .collect();
    b.jobs
        .iter()
        .flat_map(|j| j.outputs.iter().map(|(_, p)| p))
        .any(|p| outs.contains(p))
}
