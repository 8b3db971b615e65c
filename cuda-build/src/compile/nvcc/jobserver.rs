//! Running one nvcc per source at once, bounded by cargo's jobserver.
//!
//! A build script holds one implicit job token. Each further concurrent nvcc
//! waits for a token from cargo's jobserver (`-j`), so a workspace build
//! never runs more compilers than cargo allows. Without a jobserver (a
//! build script run by hand, or a test) the limit is `NUM_JOBS`, else the
//! number of CPUs.

use cuda_toolchain::env::{Env, Var};
use std::collections::VecDeque;
use std::sync::mpsc;
use std::sync::OnceLock;

/// How many compilers may run at once.
#[derive(Clone)]
pub(crate) enum Limiter {
    /// Cargo's (or make's) jobserver.
    Jobserver(jobserver::Client),
    /// A fixed limit.
    Fixed(usize),
}

impl Limiter {
    /// The jobserver when one is inherited, else NUM_JOBS, else the CPU count.
    pub(crate) fn from_env(env: &Env) -> Limiter {
        static CLIENT: OnceLock<Option<jobserver::Client>> = OnceLock::new();
        // SAFETY: the descriptors are only taken from the inherited environment
        // once per process (cached), and `check_pipe` verifies they are a pipe.
        let client =
            CLIENT.get_or_init(|| unsafe { jobserver::Client::from_env_ext(true) }.client.ok());
        match client {
            Some(c) => Limiter::Jobserver(c.clone()),
            None => Limiter::Fixed(fixed_limit(env)),
        }
    }

    /// The most jobs this limiter could allow right now, for sizing `--threads`.
    pub(crate) fn capacity(&self) -> usize {
        match self {
            Limiter::Fixed(n) => *n,
            Limiter::Jobserver(c) => 1 + c.available().unwrap_or(0),
        }
    }
}

pub(crate) fn fixed_limit(env: &Env) -> usize {
    env.get_nonempty(Var::NumJobs)
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

pub(crate) type Task<'a, T> = Box<dyn FnOnce() -> T + Send + 'a>;

enum Slot {
    Implicit,
    Fixed,
    Token(#[allow(dead_code)] jobserver::Acquired),
}

enum Msg<T> {
    Token(std::io::Result<jobserver::Acquired>),
    Done(usize, std::thread::Result<T>, Slot),
}

/// Runs every task, at most as many at once as the limiter allows, and
/// returns their results in task order.
pub(crate) fn run_all<'a, T: Send + 'static>(tasks: Vec<Task<'a, T>>, limiter: &Limiter) -> Vec<T> {
    let n = tasks.len();
    let mut results: Vec<Option<T>> = (0..n).map(|_| None).collect();
    if n == 0 {
        return Vec::new();
    }
    let (tx, rx) = mpsc::channel::<Msg<T>>();
    std::thread::scope(|scope| {
        let mut queue: VecDeque<(usize, Task<'a, T>)> = tasks.into_iter().enumerate().collect();
        let mut implicit_free = true;
        let mut fixed_free = match limiter {
            Limiter::Fixed(k) => k.saturating_sub(1),
            Limiter::Jobserver(_) => 0,
        };
        let helper = match limiter {
            Limiter::Jobserver(c) if n > 1 => {
                let tx = tx.clone();
                c.clone()
                    .into_helper_thread(move |t| {
                        let _ = tx.send(Msg::Token(t));
                    })
                    .ok()
            }
            _ => None,
        };
        let mut requested = 0usize;
        let mut running = 0usize;
        let mut panicked = None;
        let start = |(idx, task): (usize, Task<'a, T>), slot: Slot, running: &mut usize| {
            *running += 1;
            let tx = tx.clone();
            scope.spawn(move || {
                // A panicking task still reports back (and frees its slot),
                // or the loop below would wait for it forever.
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(task));
                let _ = tx.send(Msg::Done(idx, r, slot));
            });
        };
        loop {
            while !queue.is_empty() && (implicit_free || fixed_free > 0) {
                let job = queue.pop_front().expect("queue is not empty");
                if implicit_free {
                    implicit_free = false;
                    start(job, Slot::Implicit, &mut running);
                } else {
                    fixed_free -= 1;
                    start(job, Slot::Fixed, &mut running);
                }
            }
            if let Some(h) = &helper {
                while requested < queue.len() {
                    h.request_token();
                    requested += 1;
                }
            }
            if running == 0 && queue.is_empty() {
                break;
            }
            match rx.recv() {
                Ok(Msg::Token(Ok(tok))) => {
                    requested = requested.saturating_sub(1);
                    if let Some(job) = queue.pop_front() {
                        start(job, Slot::Token(tok), &mut running);
                    }
                }
                // A broken jobserver: carry on with the implicit token alone.
                Ok(Msg::Token(Err(_))) => requested = requested.saturating_sub(1),
                Ok(Msg::Done(idx, r, slot)) => {
                    running -= 1;
                    match r {
                        Ok(r) => results[idx] = Some(r),
                        Err(payload) => panicked = panicked.or(Some(payload)),
                    }
                    match slot {
                        Slot::Implicit => implicit_free = true,
                        Slot::Fixed => fixed_free += 1,
                        Slot::Token(t) => drop(t),
                    }
                }
                Err(_) => break,
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
        .map(|r| r.expect("every task ran"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    fn max_concurrency(limiter: &Limiter, tasks: usize) -> (usize, Vec<usize>) {
        let now = AtomicUsize::new(0);
        let max = AtomicUsize::new(0);
        let ts: Vec<Task<'_, usize>> = (0..tasks)
            .map(|i| {
                let (now, max) = (&now, &max);
                Box::new(move || {
                    let c = now.fetch_add(1, Ordering::SeqCst) + 1;
                    max.fetch_max(c, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(30));
                    now.fetch_sub(1, Ordering::SeqCst);
                    i * 10
                }) as Task<'_, usize>
            })
            .collect();
        let r = run_all(ts, limiter);
        (max.load(Ordering::SeqCst), r)
    }

    #[test]
    fn fixed_limit_is_respected_and_order_kept() {
        let (max, r) = max_concurrency(&Limiter::Fixed(2), 6);
        assert_eq!(max, 2);
        assert_eq!(r, [0, 10, 20, 30, 40, 50]);
        let (max, _) = max_concurrency(&Limiter::Fixed(1), 3);
        assert_eq!(max, 1);
    }

    #[test]
    fn jobserver_tokens_bound_concurrency() {
        // 2 tokens in the pipe + the implicit one = 3 at once.
        let client = jobserver::Client::new(2).unwrap();
        let (max, r) = max_concurrency(&Limiter::Jobserver(client.clone()), 8);
        assert_eq!(max, 3);
        assert_eq!(r.len(), 8);
        // Every token went back.
        assert_eq!(client.available().unwrap(), 2);
        // A jobserver with no spare tokens still finishes, one at a time.
        let (max, _) = max_concurrency(&Limiter::Jobserver(jobserver::Client::new(0).unwrap()), 3);
        assert_eq!(max, 1);
    }

    #[test]
    fn a_panicking_task_panics_the_caller_instead_of_hanging() {
        let r = std::panic::catch_unwind(|| {
            let ts: Vec<Task<'_, u32>> = vec![
                Box::new(|| 1),
                Box::new(|| panic!("task failed")),
                Box::new(|| 3),
            ];
            run_all(ts, &Limiter::Fixed(2))
        });
        assert!(r.is_err());
    }

    #[test]
    fn num_jobs_parsing() {
        let env = Env::empty().set(Var::NumJobs, "3");
        assert_eq!(fixed_limit(&env), 3);
        let env = Env::empty().set(Var::NumJobs, "zero");
        assert!(fixed_limit(&env) >= 1);
    }
}
