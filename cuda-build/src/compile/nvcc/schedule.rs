//! Running the pool's compiles, in the order given, each once it holds the
//! job slots it needs and fits in the memory budget.
//!
//! - **Slots** are cargo's jobserver tokens (the build script's own
//!   implicit one, then tokens from cargo's `-j`), else a fixed count
//!   ([`Limiter`]). A task needs [`Demand::slots`] (its nvcc
//!   `--split-compile` count: that many threads) and may take up to
//!   [`Demand::extra_slots`] more when nothing else is waiting (nvcc
//!   `--threads`, which does not change the output). Tokens are requested
//!   only for what can start now; any not needed are handed back at once.
//! - **Memory**: the sum of the running tasks' predicted peaks never goes
//!   past the budget by starting another task. Tasks start in order: one
//!   that does not fit waits, and so does everything after it (a short job
//!   slipping ahead would delay the long one the order put first). A task
//!   predicted above the whole budget starts only when nothing else runs,
//!   and nothing starts beside it.
//! - **Measured, not only predicted**: each running task's [`Watch`] holds
//!   its process tree's memory now and its peak so far. A running task
//!   counts for the larger of its prediction and its peak so far. When the
//!   tasks running together hold more than the budget (a prediction was too
//!   low: a never-compiled file, a header that grew), the one started last
//!   is stopped, its whole tree ended, and it goes back to the head of the
//!   queue, counted for the peak it had reached; it starts again when that
//!   fits. A task stopped twice runs alone. One running alone is never
//!   stopped: the budget cannot be kept by stopping it.
//! - **An idle slot lent to a guess**: a never-compiled task's prediction
//!   from its size is an upper envelope (`run/work_estimate.rs`), often
//!   well above what it needs. When the head of the queue is such a guess
//!   that does not fit beside what runs, but would fit in the budget on
//!   its own, it starts anyway on a slot that would otherwise idle, on
//!   trial ([`Grant::trial`]): one trial at a time, never beside a task
//!   that runs alone. The measurement decides. Being the task started
//!   last, a trial is the one stopped when the running tasks hold more
//!   than the budget; it then goes back to the head of the queue, counted
//!   for its guess or what it reached, and is never tried again. A trial
//!   that stays saves what waiting would have cost: the first instance of
//!   a template library no longer compiles alone only because its guess
//!   was high.
//! - **Killed, then alone**: a compile the system killed (SIGKILL, not
//!   ours: the out-of-memory killer, when other programs or build scripts
//!   took memory the budget counted on, or a peak rose between two samples)
//!   goes back to the head of the queue once and runs alone, counted for
//!   what it had reached. What the pool's compiles held when it was killed
//!   is what this machine really had for them: the rest of the build keeps
//!   within [`SAFETY`] of it, if that is below the budget. One that was
//!   killed while it ran alone is the build's failure: nothing the pool can
//!   still do would save it.
//! - **Learned from kin**: a never-compiled task is predicted from its size
//!   ([`Demand::kin`] says which others it is like: the same headers, a
//!   source of about its size, such as the instances of one template).
//!   When one of its kin finishes, what that one measured replaces the
//!   size's guess for the kin still waiting (the largest such measurement
//!   when several have finished): the first of a library's instances
//!   teaches the pool what the rest will need, in the build that meets
//!   them first.
//! - A task that needs more slots than this process can get (cargo's `-j`
//!   below its split count, or tokens that other processes keep) would wait
//!   forever: once nothing of the pool runs and no token has come for
//!   [`GRACE`], it starts with the slots it holds. The split count, which
//!   decides the output, never changes; only how many cores it is lent.

use crate::compile::nvcc::jobserver::Limiter;
use crate::compile::nvcc::memory_budget::SAFETY;
use cuda_toolchain::process::tree_memory::{Watch, INTERVAL};
use std::collections::VecDeque;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// How long a task short of slots waits for tokens when nothing of the
/// pool runs (so no slot of its own will come back).
pub(crate) const GRACE: Duration = Duration::from_secs(2);

/// How long the last task waits for tokens it could use as extra threads
/// (a jobserver answers in microseconds when it has them to give).
pub(crate) const EXTRA_WAIT: Duration = Duration::from_millis(50);

/// What a task needs before it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Demand {
    /// Job slots it must hold (its threads; at least 1).
    pub slots: usize,
    /// More slots it can use when they are free and nothing else waits.
    pub extra_slots: usize,
    /// Its predicted peak memory, in bytes, with `slots` (each extra slot
    /// adds as much again: another virtual arch's chain compiled at the
    /// same time).
    pub memory: u64,
    /// For a prediction from size alone: which other tasks it is like.
    pub kin: Option<Kin>,
    /// Its memory is a guess from its size (nothing measured it yet): it
    /// may start on trial (see the module's "An idle slot lent to a guess").
    pub guessed: bool,
}

/// What makes never-compiled tasks alike enough that one's measured peak
/// predicts another's: the same set of headers, and sources within 2× of
/// each other's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Kin {
    /// A fingerprint of the headers the source reaches.
    pub headers: u64,
    /// The source's own size, bytes.
    pub own: u64,
}

impl Kin {
    fn is_like(&self, other: &Kin) -> bool {
        self.headers == other.headers
            && self.own <= other.own.max(1).saturating_mul(2)
            && other.own <= self.own.max(1).saturating_mul(2)
    }
}

/// What a task was given when it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Grant {
    /// Slots held for its required threads (fewer than asked only after [`GRACE`]).
    pub slots: usize,
    /// Extra slots given (nvcc `--threads` beyond 1).
    pub extra: usize,
    /// Nothing else runs or will start beside it (it runs alone after
    /// stops or a kill, or is predicted above the whole budget): a kill
    /// is then final.
    pub alone: bool,
    /// Started on trial, before its guessed memory fitted beside what
    /// runs: the first stopped if the running tasks pass the budget.
    pub trial: bool,
}

/// When a task ran, and what let it start.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span {
    pub start: Instant,
    pub end: Instant,
    pub grant: Grant,
    /// The memory it was counted for while it ran, in bytes.
    pub memory: u64,
    /// The task whose end let this one start (its slots or its memory);
    /// None for a task started at once or by a token from cargo.
    pub after: Option<usize>,
    /// Its earlier attempts stopped to keep the memory budget: how many,
    /// and the first one.
    pub stops: u32,
    pub first_stop: Option<Stop>,
    /// The finished kin whose measured peak it was counted for, instead of
    /// its size's guess.
    pub learned_from: Option<usize>,
    /// An attempt killed from outside before it ran again alone.
    pub killed: Option<Killed>,
    /// Its first attempt started on trial: whether it stayed, or how it
    /// was stopped (not counted in `stops`: a trial is the pool's gamble,
    /// not a prediction that failed).
    pub trial: Option<Trial>,
}

/// How a task's attempt on trial ended (see [`Grant::trial`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trial {
    /// It ran to the end beside the others.
    Stayed,
    /// It was stopped to keep the budget after this long, and ran again.
    Stopped(Duration),
}

/// An attempt the system killed (see [`run_all`]'s `killed`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Killed {
    /// How long it had run.
    pub ran: Duration,
    /// Its own peak by then, bytes.
    pub peak: u64,
    /// The pool's other compiles that ran beside it.
    pub beside: usize,
    /// The budget the rest of the build kept to, when the kill lowered it.
    pub lowered_to: Option<u64>,
}

/// An attempt stopped to keep the memory budget.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stop {
    /// How long it had run.
    pub ran: Duration,
    /// What the running tasks held together when it was stopped, bytes.
    pub held: u64,
    /// Its own peak by then, bytes.
    pub peak: u64,
    /// What it was counted for when it started, bytes.
    pub counted: u64,
}

/// A task: run with what it was granted, reporting its memory to the
/// watch, which may stop it. A stopped attempt's result is discarded and
/// the task is run again, so it must be callable more than once.
pub(crate) type Task<'a, T> = Box<dyn FnMut(Grant, &Arc<Watch>) -> T + Send + 'a>;

enum Slot {
    Implicit,
    Fixed,
    Token(#[allow(dead_code)] jobserver::Acquired),
}

/// The slots held and not in use.
struct Hand {
    implicit: bool,
    fixed: usize,
    tokens: Vec<jobserver::Acquired>,
}

impl Hand {
    fn count(&self) -> usize {
        usize::from(self.implicit) + self.fixed + self.tokens.len()
    }

    fn take(&mut self, n: usize) -> Vec<Slot> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            if self.implicit {
                self.implicit = false;
                out.push(Slot::Implicit);
            } else if self.fixed > 0 {
                self.fixed -= 1;
                out.push(Slot::Fixed);
            } else if let Some(t) = self.tokens.pop() {
                out.push(Slot::Token(t));
            } else {
                break;
            }
        }
        out
    }

    fn put(&mut self, slots: Vec<Slot>) {
        for s in slots {
            match s {
                Slot::Implicit => self.implicit = true,
                Slot::Fixed => self.fixed += 1,
                Slot::Token(t) => self.tokens.push(t),
            }
        }
    }
}

enum Msg<T> {
    Token(std::io::Result<jobserver::Acquired>),
    Done(usize, std::thread::Result<T>, Vec<Slot>, Instant),
}

/// A task started: its slots, memory and when.
struct Started {
    start: Instant,
    grant: Grant,
    memory: u64,
    after: Option<usize>,
    watch: Arc<Watch>,
    /// The other tasks that ran beside it (started before it ended).
    company: usize,
}

impl Started {
    /// What it counts for now: its prediction, or more once it used more.
    fn counted(&self) -> u64 {
        self.memory.max(self.watch.peak())
    }
}

/// Runs every task in the given order under the limiter's slots and the
/// memory budget (bytes; `u64::MAX` for none), and returns each result
/// with when it ran, in task order. `taught` is the peak a result teaches
/// its kin: none for a failed compile (an error ends early, below what its
/// kin will need) or an unmeasured one (under sccache nvcc runs in the
/// server, outside the watched tree). `killed` says a result is an attempt
/// the system killed: one that did not run alone is discarded and run
/// again, alone.
pub(crate) fn run_all<'a, T: Send + 'static>(
    tasks: Vec<(Demand, Task<'a, T>)>,
    limiter: &Limiter,
    budget: u64,
    taught: &dyn Fn(&T) -> Option<u64>,
    killed: &dyn Fn(&T) -> bool,
) -> Vec<(T, Span)> {
    // Lowered by a kill (see the module's "Killed, then alone").
    let mut budget = budget;
    let n = tasks.len();
    if n == 0 {
        return Vec::new();
    }
    let mut results: Vec<Option<T>> = (0..n).map(|_| None).collect();
    let mut spans: Vec<Option<Span>> = vec![None; n];
    let mut started: Vec<Option<Started>> = (0..n).map(|_| None).collect();
    let mut stops: Vec<(u32, Option<Stop>)> = vec![(0, None); n];
    let mut kills: Vec<Option<Killed>> = vec![None; n];
    let mut trials: Vec<Option<Trial>> = vec![None; n];
    // What finished kin measured (their kin, peak per target, which task),
    // and which one each waiting task's prediction came from.
    let mut learned: Vec<(Kin, u64, usize)> = Vec::new();
    let mut learned_from: Vec<Option<usize>> = vec![None; n];
    let (tx, rx) = mpsc::channel::<Msg<T>>();
    // A fixed limit below a task's slots can never grow: the task gets all of it.
    let cap = match limiter {
        Limiter::Fixed(k) => (*k).max(1),
        Limiter::Jobserver(_) => usize::MAX,
    };
    // Each task, borrowed by the thread that runs it (again after a stop).
    let (demands, store): (Vec<Demand>, Vec<std::sync::Mutex<Task<'a, T>>>) = tasks
        .into_iter()
        .map(|(d, t)| (d, std::sync::Mutex::new(t)))
        .unzip();
    // Still counted for its size's guess alone: never started (a stopped
    // or killed attempt counts for what it reached) nor taught by kin.
    let mut guess: Vec<bool> = demands.iter().map(|d| d.guessed).collect();
    std::thread::scope(|scope| {
        let mut queue: VecDeque<(usize, Demand)> = demands.iter().copied().enumerate().collect();
        let mut hand = Hand {
            implicit: true,
            fixed: match limiter {
                Limiter::Fixed(k) => k.saturating_sub(1),
                Limiter::Jobserver(_) => 0,
            },
            tokens: Vec::new(),
        };
        let helper = match limiter {
            Limiter::Jobserver(c) => {
                let tx = tx.clone();
                c.clone()
                    .into_helper_thread(move |t| {
                        let _ = tx.send(Msg::Token(t));
                    })
                    .ok()
            }
            Limiter::Fixed(_) => None,
        };
        // No (more) tokens will come: a broken or absent jobserver.
        let mut tokens_dry = helper.is_none();
        let mut requested = 0usize;
        let mut running = 0usize;
        let mut panicked = None;
        // Set while the head waits for slots with nothing of the pool running.
        let mut short_since: Option<Instant> = None;
        // Set while the last task waits briefly for tokens to use as extra threads.
        let mut extra_since: Option<Instant> = None;
        // The task whose end this round of starts follows.
        let mut after: Option<usize> = None;
        // The task asked to stop, and what the running ones held then.
        let mut stopping: Option<(usize, u64)> = None;
        loop {
            let committed = committed(&started);
            // Start, in order, every task that can start now.
            let mut committed_now = committed;
            while let Some((idx, d)) = queue.front() {
                let need = d.slots.clamp(1, cap);
                let alone = stops[*idx].0 >= 2 || kills[*idx].is_some();
                let fits =
                    running == 0 || (!alone && committed_now.saturating_add(d.memory) <= budget);
                let trial = !fits && may_try(d, guess[*idx], budget, &started);
                if !fits && !trial {
                    break;
                }
                let have = hand.count();
                if have < need {
                    let given_up = running == 0
                        && have >= 1
                        && (tokens_dry || short_since.is_some_and(|t| t.elapsed() >= GRACE));
                    if !given_up {
                        if running == 0 && short_since.is_none() {
                            short_since = Some(Instant::now());
                        }
                        break;
                    }
                }
                // The last task asks cargo for tokens it could use as threads.
                let extra_wanted = queue.len() == 1 && d.extra_slots > 0 && !tokens_dry;
                if extra_wanted
                    && have < need + d.extra_slots
                    && extra_since.is_none_or(|t| t.elapsed() < EXTRA_WAIT)
                {
                    extra_since.get_or_insert_with(Instant::now);
                    break;
                }
                // Nothing will start beside it: it runs alone, or above the
                // whole budget (see `fits`).
                let alone = running == 0 && (alone || d.memory > budget);
                let (idx, d) = queue.pop_front().expect("queue is not empty");
                let mut slots = hand.take(need);
                // Extra threads only at the end, when nothing else waits for the slots.
                let mut extra = if queue.is_empty() {
                    d.extra_slots.min(hand.count())
                } else {
                    0
                };
                let memory_with = |extra: usize| d.memory.saturating_mul(1 + extra as u64);
                while extra > 0
                    && running > 0
                    && committed_now.saturating_add(memory_with(extra)) > budget
                {
                    extra -= 1;
                }
                slots.extend(hand.take(extra));
                let grant = Grant {
                    slots: slots.len() - extra,
                    extra,
                    alone,
                    trial,
                };
                if trial {
                    trials[idx] = Some(Trial::Stayed);
                }
                guess[idx] = false;
                let memory = memory_with(extra);
                running += 1;
                committed_now = committed_now.saturating_add(memory);
                short_since = None;
                extra_since = None;
                let watch = Watch::new();
                for s in started.iter_mut().flatten() {
                    s.company += 1;
                }
                started[idx] = Some(Started {
                    start: Instant::now(),
                    grant,
                    memory,
                    after,
                    watch: watch.clone(),
                    company: running - 1,
                });
                let tx = tx.clone();
                let task = &store[idx];
                scope.spawn(move || {
                    // A panicking task still reports back (and frees its
                    // slots), or the loop would wait for it forever.
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        let mut task = task.lock().unwrap_or_else(|e| e.into_inner());
                        task(grant, &watch)
                    }));
                    let _ = tx.send(Msg::Done(idx, r, slots, Instant::now()));
                });
            }
            after = None;
            if let Some(h) = &helper {
                // Tokens for what could start now: the head and the tasks
                // after it that fit in memory beside it; and the last
                // task's extra threads while it waits for them.
                let tryable = |i: usize, d: &Demand| may_try(d, guess[i], budget, &started);
                let mut want =
                    startable_slots(&queue, running, committed_now, budget, cap, &tryable);
                if extra_since.is_some() {
                    want += queue.front().map_or(0, |(_, d)| d.extra_slots);
                }
                let short = want.saturating_sub(hand.count());
                while requested < short {
                    h.request_token();
                    requested += 1;
                }
                // Tokens nothing can use now go back to cargo.
                while !hand.tokens.is_empty() && hand.count() > want {
                    hand.tokens.pop();
                }
            }
            if running == 0 && queue.is_empty() {
                break;
            }
            // Over the budget by measurement: stop the task started last.
            let watching = budget != u64::MAX && running >= 2;
            if watching && stopping.is_none() {
                let held: u64 = started.iter().flatten().map(|s| s.watch.live()).sum();
                if held > budget {
                    let youngest = (0..n)
                        .filter_map(|i| started[i].as_ref().map(|s| (i, s.start)))
                        .max_by_key(|&(_, t)| t)
                        .map(|(i, _)| i);
                    if let Some(i) = youngest {
                        started[i].as_ref().expect("running").watch.request_stop();
                        stopping = Some((i, held));
                    }
                }
            }
            let deadline = [
                short_since.filter(|_| running == 0).map(|t| t + GRACE),
                extra_since.map(|t| t + EXTRA_WAIT),
                watching.then(|| Instant::now() + INTERVAL),
            ]
            .into_iter()
            .flatten()
            .min();
            let msg = match deadline {
                Some(at) => match rx.recv_timeout(at.saturating_duration_since(Instant::now())) {
                    Ok(m) => m,
                    Err(mpsc::RecvTimeoutError::Timeout) => continue,
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                },
                None => match rx.recv() {
                    Ok(m) => m,
                    Err(_) => break,
                },
            };
            match msg {
                Msg::Token(Ok(tok)) => {
                    requested = requested.saturating_sub(1);
                    hand.tokens.push(tok);
                }
                // A broken jobserver: carry on with the slots held.
                Msg::Token(Err(_)) => {
                    requested = requested.saturating_sub(1);
                    tokens_dry = true;
                }
                Msg::Done(idx, r, slots, end) => {
                    running -= 1;
                    hand.put(slots);
                    let held = match stopping {
                        Some((i, held)) if i == idx => {
                            stopping = None;
                            Some(held)
                        }
                        _ => None,
                    };
                    let Some(s) = started[idx].take() else {
                        continue;
                    };
                    after = Some(idx);
                    if s.watch.was_stopped() && r.is_ok() && s.grant.trial {
                        // A trial that did not fit: again when it does, never on trial.
                        trials[idx] = Some(Trial::Stopped(end.saturating_duration_since(s.start)));
                        requeue(&mut queue, idx, demands[idx], s.watch.peak());
                        continue;
                    }
                    if s.watch.was_stopped() && r.is_ok() {
                        // Discarded: it runs again, counted for what it reached.
                        let peak = s.watch.peak();
                        let (count, first) = &mut stops[idx];
                        *count += 1;
                        first.get_or_insert(Stop {
                            ran: end.saturating_duration_since(s.start),
                            held: held.unwrap_or(0),
                            peak,
                            counted: s.memory,
                        });
                        requeue(&mut queue, idx, demands[idx], peak);
                        continue;
                    }
                    if !s.grant.alone && kills[idx].is_none() && r.as_ref().is_ok_and(killed) {
                        // Killed from outside while it did not run alone:
                        // once more, alone, counted for what it reached.
                        let peak = s.watch.peak();
                        let held = started
                            .iter()
                            .flatten()
                            .fold(peak, |sum, o| sum.saturating_add(o.watch.live()));
                        let fits = (held as f64 * SAFETY) as u64;
                        let lowered_to = (fits < budget).then(|| {
                            budget = fits;
                            fits
                        });
                        kills[idx] = Some(Killed {
                            ran: end.saturating_duration_since(s.start),
                            peak,
                            beside: s.company,
                            lowered_to,
                        });
                        requeue(&mut queue, idx, demands[idx], peak);
                        continue;
                    }
                    let (count, first) = stops[idx];
                    spans[idx] = Some(Span {
                        start: s.start,
                        end,
                        grant: s.grant,
                        memory: s.memory,
                        after: s.after,
                        stops: count,
                        first_stop: first,
                        learned_from: learned_from[idx],
                        killed: kills[idx],
                        trial: trials[idx],
                    });
                    let peak = r.as_ref().ok().and_then(taught);
                    if let (Some(kin), Some(peak)) = (demands[idx].kin, peak) {
                        let per_target = peak / (1 + s.grant.extra as u64);
                        if per_target > 0 {
                            learned.push((kin, per_target, idx));
                            let reached = |i: usize| {
                                stops[i].0 > 0
                                    || kills[i].is_some()
                                    || matches!(trials[i], Some(Trial::Stopped(_)))
                            };
                            learn(&mut queue, &learned, &reached, &mut learned_from);
                            for (g, from) in guess.iter_mut().zip(&learned_from) {
                                *g &= from.is_none();
                            }
                        }
                    }
                    match r {
                        Ok(r) => results[idx] = Some(r),
                        Err(payload) => panicked = panicked.or(Some(payload)),
                    }
                }
            }
        }
        drop(helper);
        // The other tasks have finished; the panic goes on as the task's own.
        if let Some(payload) = panicked {
            std::panic::resume_unwind(payload);
        }
    });
    results
        .into_iter()
        .zip(spans)
        .map(|(r, s)| (r.expect("every task ran"), s.expect("every task ran")))
        .collect()
}

/// A discarded attempt (stopped, or killed) goes back to the head of the
/// queue: its own slots again, no extra threads (they would add their
/// memory to what it reached), counted for the peak it reached.
fn requeue(queue: &mut VecDeque<(usize, Demand)>, idx: usize, demand: Demand, peak: u64) {
    let demand = Demand {
        extra_slots: 0,
        memory: demand.memory.max(peak),
        ..demand
    };
    queue.push_front((idx, demand));
}

/// Each waiting task with kin that have finished is counted for the largest
/// peak they measured. Not one stopped or killed before, on trial or not
/// (`reached`): it counts for what it reached.
fn learn(
    queue: &mut VecDeque<(usize, Demand)>,
    learned: &[(Kin, u64, usize)],
    reached: &dyn Fn(usize) -> bool,
    learned_from: &mut [Option<usize>],
) {
    for (idx, d) in queue.iter_mut() {
        let Some(kin) = d.kin else {
            continue;
        };
        if reached(*idx) {
            continue;
        }
        if let Some(&(_, peak, from)) = learned
            .iter()
            .filter(|(k, _, _)| kin.is_like(k))
            .max_by_key(|(_, peak, _)| *peak)
        {
            d.memory = peak;
            learned_from[*idx] = Some(from);
        }
    }
}

/// Whether a task that does not fit may start on trial now (see the
/// module's "An idle slot lent to a guess"): its memory is still its
/// size's guess (`guess`: never started, nor taught by kin) and fits the
/// budget on its own, something runs, and nothing running is alone or on
/// trial.
fn may_try(d: &Demand, guess: bool, budget: u64, started: &[Option<Started>]) -> bool {
    let mut running = started.iter().flatten().peekable();
    guess
        && d.memory <= budget
        && running.peek().is_some()
        && running.all(|s| !s.grant.alone && !s.grant.trial)
}

/// What the running tasks count for together (see [`Started::counted`]).
fn committed(started: &[Option<Started>]) -> u64 {
    started
        .iter()
        .flatten()
        .fold(0u64, |sum, s| sum.saturating_add(s.counted()))
}

/// The slots the head of the queue and the tasks after it that fit in
/// memory beside it (in order, stopping at the first that does not, which
/// counts too when it may start on trial: `tryable`) need.
fn startable_slots(
    queue: &VecDeque<(usize, Demand)>,
    running: usize,
    running_memory: u64,
    budget: u64,
    cap: usize,
    tryable: &dyn Fn(usize, &Demand) -> bool,
) -> usize {
    let mut slots = 0usize;
    let mut memory = running_memory;
    for (count, (i, d)) in (running..).zip(queue) {
        if count > 0 && memory.saturating_add(d.memory) > budget {
            if tryable(*i, d) {
                slots += d.slots.clamp(1, cap);
            }
            break;
        }
        slots += d.slots.clamp(1, cap);
        memory = memory.saturating_add(d.memory);
    }
    slots
}

/// The tasks on the critical path: the one that ended last, the one whose
/// end let it start, and so on back to a task that started on its own.
pub(crate) fn critical_path(spans: &[Span]) -> Vec<usize> {
    let Some(last) = (0..spans.len()).max_by_key(|&i| spans[i].end) else {
        return Vec::new();
    };
    let mut path = vec![last];
    let mut at = last;
    while let Some(prev) = spans[at].after {
        if path.contains(&prev) {
            break;
        }
        path.push(prev);
        at = prev;
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

    /// Runs tasks that each hold their slots and memory for `ms`, and
    /// returns the most slots and memory ever held at once, and the results.
    fn peaks(
        limiter: &Limiter,
        budget: u64,
        demands: &[Demand],
        ms: u64,
    ) -> (usize, u64, Vec<(usize, Span)>) {
        let slots_now = AtomicUsize::new(0);
        let slots_max = AtomicUsize::new(0);
        let mem_now = AtomicU64::new(0);
        let mem_max = AtomicU64::new(0);
        let tasks: Vec<(Demand, Task<'_, usize>)> = demands
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let (slots_now, slots_max, mem_now, mem_max) =
                    (&slots_now, &slots_max, &mem_now, &mem_max);
                let d = *d;
                let task: Task<'_, usize> = Box::new(move |g: Grant, _: &Arc<Watch>| {
                    let held = g.slots + g.extra;
                    let mem = d.memory * (1 + g.extra as u64);
                    slots_max.fetch_max(
                        slots_now.fetch_add(held, Ordering::SeqCst) + held,
                        Ordering::SeqCst,
                    );
                    mem_max.fetch_max(
                        mem_now.fetch_add(mem, Ordering::SeqCst) + mem,
                        Ordering::SeqCst,
                    );
                    std::thread::sleep(Duration::from_millis(ms));
                    slots_now.fetch_sub(held, Ordering::SeqCst);
                    mem_now.fetch_sub(mem, Ordering::SeqCst);
                    i * 10
                });
                (d, task)
            })
            .collect();
        let r = run_all(tasks, limiter, budget, &|_| None, &|_| false);
        (
            slots_max.load(Ordering::SeqCst),
            mem_max.load(Ordering::SeqCst),
            r,
        )
    }

    /// A task whose memory was measured before (never on trial).
    fn one(memory: u64) -> Demand {
        Demand {
            slots: 1,
            extra_slots: 0,
            memory,
            kin: None,
            guessed: false,
        }
    }

    #[test]
    fn fixed_slots_are_respected_and_order_kept() {
        let (max, _, r) = peaks(&Limiter::Fixed(2), u64::MAX, &[one(0); 6], 30);
        assert_eq!(max, 2);
        let values: Vec<usize> = r.iter().map(|(v, _)| *v).collect();
        assert_eq!(values, [0, 10, 20, 30, 40, 50]);
        let (max, _, _) = peaks(&Limiter::Fixed(1), u64::MAX, &[one(0); 3], 10);
        assert_eq!(max, 1);
    }

    #[test]
    fn jobserver_tokens_bound_every_thread() {
        // 2 tokens in the pipe + the implicit one = 3 slots at once, split tasks included.
        let client = jobserver::Client::new(2).unwrap();
        let split = Demand {
            slots: 2,
            extra_slots: 0,
            memory: 0,
            kin: None,
            guessed: false,
        };
        let threads = Demand {
            slots: 1,
            extra_slots: 2,
            memory: 0,
            kin: None,
            guessed: false,
        };
        let demands = [split, split, one(0), one(0), split, one(0), threads];
        let (max, _, r) = peaks(&Limiter::Jobserver(client.clone()), u64::MAX, &demands, 40);
        assert_eq!(max, 3);
        assert!(r.iter().take(2).all(|(_, s)| s.grant.slots == 2));
        // Every token went back.
        assert_eq!(client.available().unwrap(), 2);
        // A jobserver with no spare tokens: a split task starts after the
        // grace with the implicit slot alone, and everything finishes.
        let client = jobserver::Client::new(0).unwrap();
        let t = Instant::now();
        let (max, _, r) = peaks(&Limiter::Jobserver(client), u64::MAX, &[split, one(0)], 10);
        assert_eq!(max, 1);
        assert_eq!(r[0].1.grant.slots, 1);
        assert!(t.elapsed() >= GRACE);
    }

    #[test]
    fn the_memory_budget_holds_and_a_job_above_it_runs_alone() {
        let gb = 1u64 << 30;
        // Budget 4 GB; jobs of 3, 2, 2, 1, 5 (alone), 1 GB on 4 slots.
        let demands = [
            one(3 * gb),
            one(2 * gb),
            one(2 * gb),
            one(gb),
            one(5 * gb),
            one(gb),
        ];
        let (_, mem, r) = peaks(&Limiter::Fixed(4), 4 * gb, &demands, 30);
        // The 5 GB job alone is the only time above the budget.
        assert_eq!(mem, 5 * gb);
        let big = r[4].1;
        for (i, (_, s)) in r.iter().enumerate() {
            if i != 4 {
                assert!(
                    s.end <= big.start || s.start >= big.end,
                    "task {i} overlapped the big one"
                );
            }
        }
        // Without the big one, never above the budget; and order is kept:
        // the 1 GB job does not overtake the 2 GB one that waits.
        let (_, mem, r) = peaks(&Limiter::Fixed(4), 4 * gb, &demands[..4], 30);
        assert!(mem <= 4 * gb, "{mem}");
        assert!(r[3].1.start >= r[2].1.start);
    }

    #[test]
    fn extra_threads_only_at_the_end_and_within_memory() {
        let threads = Demand {
            slots: 1,
            extra_slots: 3,
            memory: 10,
            kin: None,
            guessed: false,
        };
        let (_, _, r) = peaks(&Limiter::Fixed(4), u64::MAX, &[threads, threads], 20);
        // The first one starts while another waits: no extras. The last one
        // gets the free slots (three were free when it started).
        assert_eq!(r[0].1.grant.extra, 0);
        assert!(r[1].1.grant.extra >= 2, "{:?}", r[1].1.grant);
        // A budget that allows only one more copy of its memory.
        let (_, _, r) = peaks(&Limiter::Fixed(4), 25, &[one(5), threads], 50);
        assert!(r[1].1.grant.extra <= 1, "{:?}", r[1].1.grant);
    }

    #[test]
    fn the_last_task_takes_free_jobserver_tokens_as_threads() {
        // One multi-target task alone (a one-file edit): cargo's free tokens
        // become its threads, and go back.
        let client = jobserver::Client::new(3).unwrap();
        let threads = Demand {
            slots: 1,
            extra_slots: 2,
            memory: 0,
            kin: None,
            guessed: false,
        };
        let (max, _, r) = peaks(
            &Limiter::Jobserver(client.clone()),
            u64::MAX,
            &[threads],
            20,
        );
        assert_eq!((max, r[0].1.grant.extra), (3, 2));
        assert_eq!(client.available().unwrap(), 3);
        // None free: it starts after the short wait with its own slot.
        let client = jobserver::Client::new(0).unwrap();
        let (_, _, r) = peaks(&Limiter::Jobserver(client), u64::MAX, &[threads], 5);
        assert_eq!(r[0].1.grant.extra, 0);
    }

    #[test]
    fn a_panicking_task_panics_the_caller_instead_of_hanging() {
        let r = std::panic::catch_unwind(|| {
            let ts: Vec<(Demand, Task<'_, u32>)> = vec![
                (one(0), Box::new(|_, _| 1)),
                (one(0), Box::new(|_, _| panic!("task failed"))),
                (one(0), Box::new(|_, _| 3)),
            ];
            run_all(ts, &Limiter::Fixed(2), u64::MAX, &|_| None, &|_| false)
        });
        assert!(r.is_err());
    }

    /// Tasks that report `uses` bytes to their watch while they run (as
    /// the sampler does for nvcc), ending early and marking the watch when
    /// asked to stop (as the process runner does): (per task, how many
    /// attempts started; the most memory really held at once; the results).
    fn measured(
        budget: u64,
        predicted: &[u64],
        uses: &[u64],
        ms: u64,
    ) -> (Vec<usize>, u64, Vec<(usize, Span)>) {
        let demands: Vec<Demand> = predicted.iter().map(|&p| one(p)).collect();
        measured_demands(budget, &demands, uses, ms)
    }

    /// [`measured`] with whole demands (kin).
    fn measured_demands(
        budget: u64,
        demands: &[Demand],
        uses: &[u64],
        ms: u64,
    ) -> (Vec<usize>, u64, Vec<(usize, Span)>) {
        let attempts: Vec<AtomicUsize> = demands.iter().map(|_| AtomicUsize::new(0)).collect();
        let held = AtomicU64::new(0);
        let most = AtomicU64::new(0);
        let tasks: Vec<(Demand, Task<'_, usize>)> = demands
            .iter()
            .zip(uses)
            .enumerate()
            .map(|(i, (&d, &u))| {
                let (attempts, held, most) = (&attempts, &held, &most);
                let task: Task<'_, usize> = Box::new(move |_: Grant, w: &Arc<Watch>| {
                    attempts[i].fetch_add(1, Ordering::SeqCst);
                    most.fetch_max(held.fetch_add(u, Ordering::SeqCst) + u, Ordering::SeqCst);
                    w.record(u, u);
                    let t = Instant::now();
                    while t.elapsed() < Duration::from_millis(ms) && !w.stop_requested() {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    held.fetch_sub(u, Ordering::SeqCst);
                    w.record(0, u);
                    if w.stop_requested() {
                        w.mark_stopped();
                    }
                    i
                });
                (d, task)
            })
            .collect();
        let r = run_all(
            tasks,
            &Limiter::Fixed(4),
            budget,
            &|&i| Some(uses[i]),
            &|_| false,
        );
        (
            attempts.iter().map(|a| a.load(Ordering::SeqCst)).collect(),
            most.load(Ordering::SeqCst),
            r,
        )
    }

    #[test]
    fn a_prediction_too_low_is_caught_by_measurement() {
        // Budget 100; each predicted at 10 (all four start) but using 40:
        // the running ones hold 160. The last started are stopped until
        // what runs holds at most the budget; every task finishes once.
        let (attempts, _, r) = measured(100, &[10; 4], &[40; 4], 400);
        assert_eq!(r.iter().map(|(v, _)| *v).collect::<Vec<_>>(), [0, 1, 2, 3]);
        let stopped: u32 = r.iter().map(|(_, s)| s.stops).sum();
        assert!(stopped >= 1, "{r:?}");
        assert_eq!(
            attempts.iter().sum::<usize>() as u32,
            4 + stopped,
            "{attempts:?}"
        );
        // The finished runs never overlapped beyond the budget: at most two at once.
        let finished: Vec<Span> = r.iter().map(|(_, s)| *s).collect();
        for a in &finished {
            // Running at the moment `a` started (ends first at a tie).
            let at_once = finished
                .iter()
                .filter(|b| b.start <= a.start && a.start < b.end)
                .count();
            assert!(at_once <= 2, "{finished:?}");
        }
        // A stop records what it saw: it had reached 40, counted for 10.
        let stop = r.iter().find_map(|(_, s)| s.first_stop).unwrap();
        assert_eq!((stop.peak, stop.counted), (40, 10));
        assert!(stop.held > 100, "{stop:?}");
        // The first task, running alone or oldest, is never stopped.
        assert_eq!(r[0].1.stops, 0);
    }

    #[test]
    fn right_predictions_and_no_budget_stop_nothing() {
        let (attempts, most, _) = measured(100, &[40; 4], &[40; 4], 50);
        assert_eq!(attempts, [1; 4]);
        assert!(most <= 100, "{most}");
        let (attempts, most, _) = measured(u64::MAX, &[10; 4], &[40; 4], 50);
        assert_eq!((attempts, most), (vec![1; 4], 160));
        // A task above the whole budget alone is never stopped.
        let (attempts, _, r) = measured(100, &[10], &[400], 50);
        assert_eq!((attempts, r[0].1.stops), (vec![1], 0));
    }

    #[test]
    fn kin_that_finished_teach_the_prediction_of_those_waiting() {
        let kin = |headers, own| Kin { headers, own };
        let guessed = |k: Kin| Demand {
            kin: Some(k),
            guessed: true,
            ..one(110)
        };
        // Budget 100; three instances of one template guessed at 110 each
        // (above the budget: one at a time, none on trial), each really
        // using 30. Once the first has finished, its 30 is what the other
        // two count for: they run together, and each says what it learned
        // from.
        let a = kin(7, 400);
        let (attempts, most, r) = measured_demands(100, &[guessed(a); 3], &[30; 3], 150);
        assert_eq!(attempts, [1; 3]);
        assert!(most <= 100, "{most}");
        let s: Vec<Span> = r.iter().map(|(_, s)| *s).collect();
        assert!(s[1].start >= s[0].end && s[2].start >= s[0].end, "{s:?}");
        assert!(
            s[2].start < s[1].end && s[1].start < s[2].end,
            "the two waiting kin did not overlap: {s:?}"
        );
        assert_eq!(
            (s[0].learned_from, s[1].learned_from, s[2].learned_from),
            (None, Some(0), Some(0))
        );
        assert_eq!((s[1].memory, s[2].memory), (30, 30));
        assert!(s.iter().all(|s| s.trial.is_none()), "{s:?}");
        // Other headers, a source over twice the size, or no kin at all:
        // nothing is learned, and they run one at a time.
        let strangers = [
            guessed(a),
            guessed(kin(8, 400)),
            guessed(kin(7, 900)),
            Demand {
                guessed: true,
                ..one(110)
            },
        ];
        let (_, _, r) = measured_demands(100, &strangers, &[30; 4], 60);
        let s: Vec<Span> = r.iter().map(|(_, s)| *s).collect();
        assert!(
            s.iter()
                .all(|s| s.learned_from.is_none() && s.memory == 110),
            "{s:?}"
        );
        for w in s.windows(2) {
            assert!(w[1].start >= w[0].end, "{s:?}");
        }
        // Learned too low: the measurement still keeps the budget.
        let (attempts, _, r) = measured_demands(100, &[guessed(a); 3], &[30, 60, 60], 600);
        assert!(attempts.iter().sum::<usize>() > 3, "{attempts:?}");
        assert!(r.iter().any(|(_, s)| s.stops > 0), "{r:?}");
    }

    #[test]
    fn a_kin_that_failed_teaches_nothing() {
        // The first of three kin fails early, holding little: the second
        // keeps the guess (above the budget: one at a time); the third
        // learns from the second.
        let guessed = Demand {
            kin: Some(Kin {
                headers: 7,
                own: 400,
            }),
            guessed: true,
            ..one(110)
        };
        let tasks: Vec<(Demand, Task<'_, Result<(), ()>>)> = (0..3)
            .map(|i| {
                let t: Task<'_, Result<(), ()>> = Box::new(move |_, w: &Arc<Watch>| {
                    w.record(5, 5);
                    std::thread::sleep(Duration::from_millis(30));
                    if i == 0 {
                        Err(())
                    } else {
                        Ok(())
                    }
                });
                (guessed, t)
            })
            .collect();
        let r = run_all(
            tasks,
            &Limiter::Fixed(4),
            100,
            &|r| r.is_ok().then_some(5),
            &|_| false,
        );
        let s: Vec<Span> = r.iter().map(|(_, s)| *s).collect();
        assert_eq!(
            (
                s[1].learned_from,
                s[1].memory,
                s[2].learned_from,
                s[2].memory
            ),
            (None, 110, Some(1), 5),
            "{s:?}"
        );
        assert!(s[1].start >= s[0].end, "{s:?}");
    }

    #[test]
    fn an_idle_slot_is_lent_to_a_guess_on_trial() {
        let guess = |memory| Demand {
            guessed: true,
            ..one(memory)
        };
        let overlap = |a: &Span, b: &Span| a.start < b.end && b.start < a.end;
        // Budget 100; three guessed at 60, each really using 30. The second
        // starts on trial beside the first and stays; the third waits (one
        // trial at a time; no kin to learn from) until the trial has ended.
        let (attempts, most, r) = measured_demands(100, &[guess(60); 3], &[30; 3], 150);
        let s: Vec<Span> = r.iter().map(|(_, s)| *s).collect();
        assert_eq!(attempts, [1; 3]);
        assert!(most <= 100, "{most}");
        assert!(overlap(&s[0], &s[1]), "the guess was not tried: {s:?}");
        assert_eq!(
            (s[0].trial, s[1].trial),
            (None, Some(Trial::Stayed)),
            "{s:?}"
        );
        assert!(s[1].grant.trial && !s[0].grant.trial, "{s:?}");
        assert!(!overlap(&s[1], &s[2]), "two trials at once: {s:?}");
        // A trial that does not fit: the running pair holds 120, the trial
        // (the task started last) is stopped, not counted as a stop, and
        // runs again after the first, never on trial again.
        let (attempts, _, r) = measured_demands(100, &[guess(60); 2], &[60; 2], 400);
        let s: Vec<Span> = r.iter().map(|(_, s)| *s).collect();
        assert_eq!(attempts, [1, 2], "{s:?}");
        assert!(matches!(s[1].trial, Some(Trial::Stopped(_))), "{s:?}");
        assert_eq!((s[0].stops, s[1].stops), (0, 0), "{s:?}");
        assert!(!s[1].grant.trial && s[1].start >= s[0].end, "{s:?}");
        // Never on trial: a measured task, a guess above the whole budget,
        // or beside a task that runs alone. Each waits for the one before.
        for demands in [
            [one(60), one(60)],
            [one(60), guess(150)],
            [guess(150), guess(60)],
        ] {
            let (attempts, _, r) = measured_demands(100, &demands, &[30; 2], 60);
            let s: Vec<Span> = r.iter().map(|(_, s)| *s).collect();
            assert_eq!(attempts, [1, 1], "{demands:?}");
            assert!(s.iter().all(|s| s.trial.is_none()), "{demands:?}: {s:?}");
            assert!(s[1].start >= s[0].end, "{demands:?}: {s:?}");
        }
    }

    /// One attempt of a task: start, end, granted alone.
    type Attempt = (Instant, Instant, bool);

    /// Runs tasks that hold 7 bytes for `ms` and report "killed" on the
    /// attempts `kill(task, attempt)` names; a killed attempt ends once every
    /// task has held its memory once (so the others still run and hold it);
    /// returns each task's attempts and the spans.
    fn killing(
        demands: &[Demand],
        budget: u64,
        ms: u64,
        kill: &(dyn Fn(usize, usize) -> bool + Sync),
    ) -> (Vec<Vec<Attempt>>, Vec<Span>) {
        let attempts: Vec<std::sync::Mutex<Vec<Attempt>>> =
            demands.iter().map(|_| Default::default()).collect();
        let holding = AtomicUsize::new(0);
        let tasks: Vec<(Demand, Task<'_, bool>)> = demands
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let (attempts, holding, all) = (&attempts[i], &holding, demands.len());
                let t: Task<'_, bool> = Box::new(move |g: Grant, w: &Arc<Watch>| {
                    w.record(7, 7);
                    holding.fetch_add(1, Ordering::SeqCst);
                    let start = Instant::now();
                    let attempt = attempts.lock().unwrap().len();
                    let killed = kill(i, attempt);
                    if killed {
                        let waited = Instant::now();
                        while holding.load(Ordering::SeqCst) < all
                            && waited.elapsed() < Duration::from_secs(5)
                        {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                    } else {
                        std::thread::sleep(Duration::from_millis(ms));
                    }
                    attempts
                        .lock()
                        .unwrap()
                        .push((start, Instant::now(), g.alone));
                    killed
                });
                (*d, t)
            })
            .collect();
        let r = run_all(tasks, &Limiter::Fixed(3), budget, &|_| None, &|&k| k);
        let spans = r.iter().map(|(_, s)| *s).collect();
        let attempts = attempts
            .into_iter()
            .map(|a| a.into_inner().unwrap())
            .collect();
        (attempts, spans)
    }

    #[test]
    fn a_task_killed_beside_others_runs_again_alone_once() {
        // Three run together; the first is killed on its first attempt.
        let (a, s) = killing(&[one(10); 3], 100, 200, &|i, n| i == 0 && n == 0);
        assert_eq!(
            a.iter().map(Vec::len).collect::<Vec<_>>(),
            [2, 1, 1],
            "{a:?}"
        );
        let (again_start, again_end, alone) = a[0][1];
        assert!(alone, "the second attempt is granted alone: {a:?}");
        for other in &a[1..] {
            let (start, end, _) = other[0];
            assert!(
                end <= again_start || start >= again_end,
                "a task ran beside the one run again alone: {a:?}"
            );
        }
        let k = s[0].killed.expect("the kill is on its span");
        assert_eq!((k.beside, k.peak), (2, 7), "{k:?}");
        // The three held 21 bytes when it was killed: the rest of the
        // build keeps within 80% of that.
        assert_eq!(k.lowered_to, Some(16), "{k:?}");
        assert!(s[1].killed.is_none() && s[2].killed.is_none(), "{s:?}");
        // Killed on every attempt: once more alone, then the result stands.
        let (a, s) = killing(&[one(10); 2], 100, 30, &|i, _| i == 0);
        assert_eq!(a[0].len(), 2, "{a:?}");
        assert!(!a[0][0].2 && a[0][1].2, "{a:?}");
        assert!(s[0].killed.is_some(), "{s:?}");
        // No budget at all: the kill gives one.
        let (_, s) = killing(&[one(10); 3], u64::MAX, 200, &|i, n| i == 0 && n == 0);
        assert_eq!(s[0].killed.and_then(|k| k.lowered_to), Some(16), "{s:?}");
        // A task that already ran alone (predicted above the whole budget)
        // is not run again: nothing the pool does would change the kill.
        let (a, s) = killing(&[one(500)], 100, 10, &|_, _| true);
        assert_eq!(a[0].len(), 1, "{a:?}");
        assert!(a[0][0].2 && s[0].killed.is_none(), "{a:?}");
    }

    #[test]
    fn the_critical_path_follows_what_let_each_task_start() {
        // One slot: each task starts when the one before ends.
        let (_, _, r) = peaks(&Limiter::Fixed(1), u64::MAX, &[one(0); 3], 5);
        let spans: Vec<Span> = r.iter().map(|(_, s)| *s).collect();
        assert_eq!(critical_path(&spans), [2, 1, 0]);
    }
}
