//! One job pool for every build of a build script, driving the stages: each
//! prepared build is planned (`plan_jobs.rs`), the jobs left to compile from
//! all builds run together (`compile_job.rs`) under cargo's jobserver and
//! the memory budget (`nvcc/schedule.rs`), then each build is finished
//! (`finish.rs`). A static library's objects so start while PTX files still
//! compile, and the longest file does not start last.
//!
//! Order: split jobs (`--split-compile`, several slots each) first; then
//! jobs whose cost is not recorded in the cache (`durations` records,
//! `incremental/cost.rs`), which may be long, biggest estimated work first
//! (`work_estimate.rs`: the source and its headers, times the device passes
//! its targets take, so an object that also runs ptxas goes before a PTX
//! file of its size); then the others, longest recorded time first. A
//! corrupt record is ignored with a note.
//!
//! Memory: each job's predicted peak is its recorded one, else one from
//! its estimated work, replaced by what the first finished job with the
//! same headers and flags measured (`schedule.rs`, kin); one with only the
//! estimate may start on trial on a slot that would idle (`schedule.rs`);
//! a job predicted above the whole budget runs alone, and a warning names
//! it. After each compile its wall time, its tree's peak memory and its
//! threads are recorded for the next build. With `CUDA_BUILD_TIMINGS` the pool writes
//! its timings report (`output/timings.rs`).

use crate::compile::incremental::cost::Cost;
use crate::compile::nvcc::jobserver::Limiter;
use crate::compile::nvcc::memory_budget::{Budget, SAFETY};
use crate::compile::nvcc::progress::Event;
use crate::compile::nvcc::schedule::{self, Demand, Grant, Killed, Kin, Span, Stop, Task, Trial};
use crate::compile::output::artifacts::Artifacts;
use crate::compile::output::timings::{self, show_bytes, Report};
use crate::compile::run::collisions::{collisions, shared_output};
use crate::compile::run::context::{JobDone, Outcome, Planned, Run, Stage};
use crate::compile::run::job::Job;
use crate::compile::run::work_estimate::{
    device_chains, device_passes, include_dirs, predicted_peak, Estimate, Work,
};
use crate::compile::settings::package::package_dir;
use crate::compile::settings::spec::Prepared;
use cuda_toolchain::diagnose::Code;
use cuda_toolchain::env::{Env, Var};
use cuda_toolchain::process::tree_memory::Watch;
use cuda_toolchain::Error;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// One pending compile: which build, which job, and what the pool knows of its cost.
struct Pending {
    build: usize,
    job: usize,
    /// What it cost last time (None: never recorded).
    cost: Option<Cost>,
    /// Without a record: the estimated work ([`Estimate`]), bytes.
    work: u64,
    /// Its place among never-recorded jobs: the work times the device
    /// passes nvcc runs for its targets ([`device_passes`]).
    weight: u64,
    /// Its predicted peak memory with one target at a time, bytes.
    memory: u64,
    /// `memory` is a guess from its size: no peak was ever recorded.
    guessed: bool,
    /// Without a record: which other jobs it is like ([`Kin`]).
    kin: Option<Kin>,
}

impl Pending {
    /// Where its predicted memory came from, for messages.
    fn basis(&self) -> String {
        match self.cost {
            Some(_) => "its last compile's peak".to_string(),
            None => format!(
                "estimated from its {} of source and headers",
                show_bytes(self.work)
            ),
        }
    }
}

/// What the pool did: when each compiled job ran, for the timings report.
struct PoolRun {
    budget: Budget,
    fixed_slots: usize,
    /// When the pool started (wall clock and monotonic).
    t0: (SystemTime, Instant),
    /// (build, job, when it ran, on the critical path).
    spans: Vec<(usize, usize, Span, bool)>,
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
    let pool = compile_pending(&runs, &mut stages);
    write_timings(&runs, &stages, &pool);
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
/// in one pool (see the module's order); each result and its cost (for the
/// next build) handed back to its build.
fn compile_pending(runs: &[Result<Run, Error>], stages: &mut [Result<Stage, Error>]) -> PoolRun {
    let ready = |bi: usize| match (&runs[bi], &stages[bi]) {
        (Ok(run), Ok(Stage::Ready(p))) => Some((run, &**p)),
        _ => None,
    };
    let pending = pending_in_order(&ready, runs.len());
    let env = runs.iter().flatten().next().map(|r| &r.env);
    let limiter = env.map(Limiter::from_env).unwrap_or(Limiter::Fixed(1));
    let budget = env.map(Budget::from_env).unwrap_or(Budget {
        bytes: u64::MAX,
        source: "no build".into(),
    });
    let t0 = (SystemTime::now(), Instant::now());
    let mut order = Vec::with_capacity(pending.len());
    let mut tasks: Vec<(Demand, Task<'_, Result<JobDone, Error>>)> =
        Vec::with_capacity(pending.len());
    for pj in pending {
        let Some((run, p)) = ready(pj.build) else {
            continue;
        };
        let job = &p.jobs[pj.job];
        // The device chains nvcc can run at once for what this job compiles
        // (a PTX build's job has one target whatever the plan's SASS; `sm_90`
        // with its `compute_90` PTX is one chain), so no `--threads` slot is
        // taken for nothing.
        let chains = device_chains(&job.archs);
        // Not under a wrapper (sccache, ccache): `--threads` would enter its
        // key, and a changing thread count would miss its cache.
        let wrapped = p.tools.runner.wrapper.is_some();
        let extra_slots = if job.split == 1 && job.calls.len() == 1 && !wrapped {
            chains - 1
        } else {
            0
        };
        let demand = Demand {
            slots: job.split as usize,
            extra_slots,
            memory: pj.memory,
            kin: pj.kin,
            guessed: pj.guessed,
        };
        order.push(pj);
        tasks.push((
            demand,
            Box::new(move |g: Grant, w: &Arc<Watch>| compile_one(run, p, job, g, w)),
        ));
    }
    // A compile teaches its kin the peak it measured (none when it failed,
    // or ran where it could not be measured); one the system killed runs
    // again alone.
    let compiled = schedule::run_all(
        tasks,
        &limiter,
        budget.bytes,
        &|r| r.as_ref().ok().and_then(|d| d.peak_memory),
        &|r| r.as_ref().is_err_and(was_killed),
    );
    // One-line notices of each build's nvcc runner (sccache skipped or bypassed).
    for bi in 0..runs.len() {
        if let Some((run, p)) = ready(bi) {
            for n in p.tools.runner.take_notices() {
                run.warn(n);
            }
        }
    }

    // The names of the jobs others learned their memory from (for messages).
    let teachers: std::collections::HashMap<usize, String> = compiled
        .iter()
        .filter_map(|(_, s)| s.learned_from)
        .filter_map(|k| {
            let (_, p) = ready(order[k].build)?;
            Some((k, p.jobs[order[k].job].display.clone()))
        })
        .collect();
    let all: Vec<Span> = compiled.iter().map(|(_, s)| *s).collect();
    let critical = schedule::critical_path(&all);
    let mut spans = Vec::with_capacity(order.len());
    for (i, (pj, (r, span))) in order.iter().zip(compiled).enumerate() {
        spans.push((pj.build, pj.job, span, critical.contains(&i)));
        let (Ok(run), Ok(Stage::Ready(p))) = (&runs[pj.build], &mut stages[pj.build]) else {
            continue;
        };
        // Where its prediction came from, for the warnings below.
        let basis = || match span.learned_from.and_then(|k| teachers.get(&k)) {
            Some(name) => format!("the peak measured for `{name}`, which reads the same headers"),
            None => pj.basis(),
        };
        // Told after the run: a guess above the budget may have been
        // replaced by what a kin measured before it started.
        let counted = span.memory / (1 + span.grant.extra as u64);
        if counted > budget.bytes {
            run.warn(format!(
                "cuda-build: `{}` was predicted to need {} of memory ({}), more than the whole budget of {} ({}); it compiled alone (CUDA_BUILD_MEMORY_BUDGET sets the budget)",
                p.jobs[pj.job].display,
                show_bytes(counted),
                basis(),
                show_bytes(budget.bytes),
                budget.source
            ));
        }
        if let (Some(k), Ok(_)) = (span.killed, &r) {
            run.warn(killed_warning(&p.jobs[pj.job], &k, &budget));
        }
        let r = match r {
            Err(e) if was_killed(&e) => Err(killed_help(e, &span, &budget)),
            r => r,
        };
        if let Some(stop) = span.first_stop {
            run.warn(stopped_warning(
                &p.jobs[pj.job],
                &basis(),
                &span,
                &stop,
                &budget,
            ));
        }
        if let (Ok(done), Some(cache)) = (&r, &p.tools.cache) {
            if let Some(took) = done.took {
                let key = run.duration_key(&p.tools.tk, &p.jobs[pj.job]);
                // Unmeasured (under sccache): the last measured peak stays.
                let peak_bytes = done
                    .peak_memory
                    .or_else(|| pj.cost.and_then(|c| c.peak_for(done.threads)));
                let _ = cache.put_cost(
                    &key,
                    &Cost {
                        secs: took.as_secs_f64(),
                        peak_bytes,
                        threads: done.threads,
                    },
                );
            }
        }
        p.results[pj.job] = Some(r);
    }
    PoolRun {
        budget,
        fixed_slots: match limiter {
            Limiter::Fixed(n) => n,
            Limiter::Jobserver(_) => 0,
        },
        t0,
        spans,
    }
}

/// Why a job was stopped and compiled again: what ran beside it held more
/// than the budget, and what it had been counted for.
fn stopped_warning(job: &Job, basis: &str, span: &Span, stop: &Stop, budget: &Budget) -> String {
    let again = if span.stops >= 2 {
        format!(
            ", was stopped {} times, and then compiled alone",
            span.stops
        )
    } else {
        String::new()
    };
    format!(
        "cuda-build: `{}` was stopped after {} and compiled again: the compiles running with it held {}, more than the memory budget of {} ({}); it had been counted for {} ({basis}) and had reached {}{again}. Its measured peak is recorded, so the next build plans for it (CUDA_BUILD_MEMORY_BUDGET sets the budget)",
        job.display,
        cuda_toolchain::process::show_duration(stop.ran),
        show_bytes(stop.held),
        show_bytes(budget.bytes),
        budget.source,
        show_bytes(stop.counted),
        show_bytes(stop.peak),
    )
}

/// A compile the system killed (nvcc, or one of its stages, got SIGKILL
/// that the pool did not send; `run/failure.rs` gives it this code).
fn was_killed(e: &Error) -> bool {
    e.code == Code::CompilerKilled.as_str()
}

/// "1 other compile", "2 other compiles".
fn other_compiles(n: usize) -> String {
    format!("{n} other compile{}", if n == 1 { "" } else { "s" })
}

/// A job killed beside other compiles that then compiled alone.
fn killed_warning(job: &Job, k: &Killed, budget: &Budget) -> String {
    let budget = if budget.bytes == u64::MAX {
        format!("No memory budget was kept ({}); set CUDA_BUILD_MEMORY_BUDGET to what this machine has free for the build", budget.source)
    } else {
        format!(
            "The memory budget was {} ({}): memory it counted on was taken by other programs or build scripts (each build script keeps its own budget), or a peak rose faster than it is sampled; set CUDA_BUILD_MEMORY_BUDGET lower to keep such builds apart",
            show_bytes(budget.bytes),
            budget.source
        )
    };
    let lowered = match k.lowered_to {
        Some(b) => format!(
            ", and the rest of this build kept within {}, {:.0}% of what its compiles held when it was killed",
            show_bytes(b),
            SAFETY * 100.0
        ),
        None => String::new(),
    };
    format!(
        "cuda-build: `{}` was killed after {} (SIGKILL: most likely the kernel's out-of-memory killer) while {} of this build ran beside it; it had reached {}. It compiled again, alone{lowered}. {budget}",
        job.display,
        cuda_toolchain::process::show_duration(k.ran),
        other_compiles(k.beside),
        show_bytes(k.peak),
    )
}

/// The help of a compile killed while it ran alone: the pool has done what
/// it can; the machine needs more free memory for this file.
fn killed_help(mut e: Error, span: &Span, budget: &Budget) -> Error {
    let before = match span.killed {
        Some(k) => format!(
            "it was first killed beside {}, then again alone",
            other_compiles(k.beside)
        ),
        None => "it was compiling alone".to_string(),
    };
    // First: what the pool already tried decides what is left to do.
    e.help.insert(0, format!(
        "{before}, so this file needs more memory than this machine (or container) had free; the memory budget was {} ({}). Close other programs, raise the container's memory limit, or build where more memory is free",
        show_bytes(budget.bytes),
        budget.source
    ));
    e
}

/// One job compiled with `threads` nvcc threads, with its start and end
/// progress events (none for an attempt the pool stopped, or one killed
/// that will run again alone: it starts again).
fn compile_one(
    run: &Run,
    p: &Planned,
    job: &Job,
    grant: Grant,
    watch: &Arc<Watch>,
) -> Result<JobDone, Error> {
    let threads = 1 + grant.extra;
    let archs = job.archs.join(",");
    p.tools.progress.event(Event::Start, &job.display, &archs);
    let r = run.compile_job(&p.tools, job, threads, watch);
    let again = !grant.alone && r.as_ref().is_err_and(was_killed);
    if watch.was_stopped() || again {
        return r;
    }
    let ev = if r.is_ok() {
        Event::Done
    } else {
        Event::Failed
    };
    p.tools.progress.event(ev, &job.display, &archs);
    r
}

/// Every job still to compile, from every ready build (`ready`), in the
/// pool's order: split jobs, then never-recorded jobs (by estimated work),
/// then by recorded time, longest first in each group.
fn pending_in_order<'a, 'b: 'a>(
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
            let cost = p.tools.cache.as_ref().and_then(|c| {
                match c.read_cost(&run.duration_key(&p.tools.tk, job))? {
                    Ok(cost) => Some(cost),
                    Err(why) => {
                        run.warn(format!(
                            "cuda-build: ignored the corrupt job-duration record for `{}` ({why}); it is ordered by size and recorded again",
                            job.display
                        ));
                        None
                    }
                }
            });
            // The build's include dirs and every one its flags name (header
            // dependencies such as CUTLASS, `-isystem`).
            let work = match cost {
                Some(_) => Work::default(),
                None => {
                    let mut dirs = job.includes.clone();
                    for d in include_dirs(&job.args, &run.base) {
                        if !dirs.contains(&d) {
                            dirs.push(d);
                        }
                    }
                    estimate.work(&job.source, &dirs)
                }
            };
            let recorded = cost.and_then(|c| c.peak_for(1));
            let memory = recorded.unwrap_or_else(|| predicted_peak(work.bytes));
            let kin = cost.is_none().then(|| kin_of(job, &work)).flatten();
            pending.push((
                job.split,
                Pending {
                    build: bi,
                    job: ji,
                    cost,
                    work: work.bytes,
                    weight: work.bytes.saturating_mul(device_passes(&job.archs)),
                    memory,
                    guessed: recorded.is_none(),
                    kin,
                },
            ));
        }
    }
    pending.sort_by(|(sa, a), (sb, b)| {
        let time = |p: &Pending| p.cost.map_or(f64::INFINITY, |c| c.secs);
        (sb > &1)
            .cmp(&(sa > &1))
            .then(time(b).total_cmp(&time(a)))
            .then(b.weight.cmp(&a.weight))
    });
    pending.into_iter().map(|(_, p)| p).collect()
}

/// Which jobs a never-compiled one is like: the same headers and flags (a
/// library's instances), less the flags that name the source itself
/// (`--orig_src_path_name`). None for a source that reads no header.
fn kin_of(job: &Job, work: &Work) -> Option<Kin> {
    let headers = work.headers?;
    let own_name = job.source_arg.to_string_lossy();
    let mut h = DefaultHasher::new();
    headers.hash(&mut h);
    job.args
        .iter()
        .filter(|a| !a.to_string_lossy().contains(own_name.as_ref()))
        .for_each(|a| a.hash(&mut h));
    job.calls.hash(&mut h);
    Some(Kin {
        headers: h.finish(),
        own: work.own,
    })
}

/// With `CUDA_BUILD_TIMINGS` set (the first build's environment): the
/// report of every job of every build, written there, and one warning
/// naming it and the three costliest compiles.
fn write_timings(runs: &[Result<Run, Error>], stages: &[Result<Stage, Error>], pool: &PoolRun) {
    let Some(first) = runs.iter().flatten().next() else {
        return;
    };
    let Some(dir) = first.env.get_nonempty(Var::CudaBuildTimings) else {
        return;
    };
    let dir = first.base.join(dir);
    let unix = |t: Instant| {
        let at = pool.t0.0 + t.saturating_duration_since(pool.t0.1);
        at.duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64())
    };
    let package = first
        .env
        .get_nonempty(Var::CargoPkgName)
        .map(str::to_string)
        .or_else(|| {
            package_dir(&first.env)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_default();
    let mut compiles = Vec::new();
    for (bi, (run, stage)) in runs.iter().zip(stages).enumerate() {
        let (Ok(run), Ok(Stage::Ready(p))) = (run, stage) else {
            continue;
        };
        for (ji, job) in p.jobs.iter().enumerate() {
            let ran = pool.spans.iter().find(|s| s.0 == bi && s.1 == ji);
            let done = p.results[ji].as_ref().and_then(|r| r.as_ref().ok());
            let outcome = match (done.map(|d| d.outcome), ran) {
                (Some(Outcome::Compiled), _) => timings::Outcome::Compiled,
                (Some(Outcome::Cached), _) => timings::Outcome::Cached,
                (Some(Outcome::UpToDate), _) => timings::Outcome::UpToDate,
                (Some(Outcome::Prebuilt), _) => timings::Outcome::Prebuilt,
                (None, _) => timings::Outcome::Failed,
            };
            let (start, end) = match ran {
                Some((_, _, s, _)) => (unix(s.start), unix(s.end)),
                None => (unix(pool.t0.1), unix(pool.t0.1)),
            };
            compiles.push(timings::Compile {
                package: package.clone(),
                module: run.spec.module_name.clone(),
                file: job.display.clone(),
                archs: job.archs.clone(),
                start,
                end,
                threads: ran.map_or(1, |s| (s.2.grant.slots + s.2.grant.extra) as u32),
                split: job.split,
                peak_bytes: done.and_then(|d| d.peak_memory),
                predicted_bytes: ran.map(|s| s.2.memory),
                outcome,
                critical: ran.is_some_and(|s| s.3),
                stopped: ran.map_or(0, |s| {
                    s.2.stops + u32::from(matches!(s.2.trial, Some(Trial::Stopped(_))))
                }),
                killed: ran.map_or(0, |s| u32::from(s.2.killed.is_some())),
                trial: ran.is_some_and(|s| s.2.trial.is_some()),
            });
        }
    }
    compiles.sort_by(|a, b| a.start.total_cmp(&b.start));
    let report = Report {
        version: timings::VERSION,
        budget_bytes: (pool.budget.bytes != u64::MAX).then_some(pool.budget.bytes),
        budget_source: pool.budget.source.clone(),
        fixed_slots: pool.fixed_slots,
        compiles,
    };
    match report.write(&dir, &package) {
        Ok(html) => first.cargo(&format!(
            "warning=cuda-build timings: {}; {}",
            html.display(),
            report.costliest_line()
        )),
        Err(e) => first.warn(format!(
            "cuda-build: could not write the timings report into {} ({e}); set CUDA_BUILD_TIMINGS to a writable directory",
            dir.display()
        )),
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
