//! What a job's last compile cost: the cache's `durations` records (one
//! per job's duration key, `run/keys.rs`), read by the pool to order jobs
//! and to predict their memory, written after each compile. Per machine:
//! never shared through the Redis tier.

use crate::compile::incremental::cache::Cache;

/// The record namespace (its name predates the memory field).
const NS: &str = "durations";

/// One job's recorded cost.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Cost {
    /// nvcc's wall time, in seconds, for every call of the job.
    pub secs: f64,
    /// The peak resident memory of nvcc's process tree, in bytes (None:
    /// not measured, e.g. under sccache, or a record from before it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_bytes: Option<u64>,
    /// The nvcc `--threads` it ran with (targets compiled at once).
    #[serde(default = "one")]
    pub threads: u32,
}

fn one() -> u32 {
    1
}

impl Cost {
    /// The peak memory predicted for `threads` targets at once: the
    /// recorded peak scaled by the threads it ran with.
    pub(crate) fn peak_for(&self, threads: u32) -> Option<u64> {
        let per_thread = self.peak_bytes? / u64::from(self.threads.max(1));
        Some(per_thread.saturating_mul(u64::from(threads.max(1))))
    }
}

impl Cache {
    /// A job's record: None when absent, `Err` (why) when present but unreadable.
    pub(crate) fn read_cost(&self, key: &str) -> Option<Result<Cost, String>> {
        match self.read_json::<Cost>(NS, key)? {
            Ok(c) if c.secs.is_finite() && c.secs >= 0.0 => Some(Ok(c)),
            Ok(c) => Some(Err(format!("a duration of {} s", c.secs))),
            Err(why) => Some(Err(why)),
        }
    }

    /// Records a job's cost.
    pub(crate) fn put_cost(&self, key: &str, cost: &Cost) -> std::io::Result<()> {
        self.put_json(NS, key, cost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_old_ones_still_read() {
        let d = tempfile::tempdir().unwrap();
        let cache = Cache::new(d.path());
        let c = Cost {
            secs: 2.5,
            peak_bytes: Some(3 << 30),
            threads: 2,
        };
        cache.put_cost("abcd", &c).unwrap();
        assert_eq!(cache.read_cost("abcd"), Some(Ok(c)));
        assert_eq!(c.peak_for(1), Some(3 << 29));
        // A record written before memory was measured.
        cache
            .put_json(NS, "old1", &serde_json::json!({"secs": 4.0}))
            .unwrap();
        let old = cache.read_cost("old1").unwrap().unwrap();
        assert_eq!((old.peak_bytes, old.threads), (None, 1));
        assert_eq!(old.peak_for(1), None);
        assert!(cache.read_cost("none").is_none());
        cache
            .put_json(NS, "bad1", &serde_json::json!({"secs": -1.0}))
            .unwrap();
        assert!(cache.read_cost("bad1").unwrap().is_err());
    }
}
