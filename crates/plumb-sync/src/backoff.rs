//! The two backoffs of automated sync: Argo CD's self-heal backoff (controller flags
//! `--self-heal-backoff-timeout-seconds` 2, `--self-heal-backoff-factor` 3,
//! `--self-heal-backoff-cap-seconds` 300) and the retry backoff of `syncPolicy.retry`.

use crate::duration::{DurationError, GoDuration, parse_argo_duration};
use plumb_core::argo::model::{self, ModelError, RetryStrategy};
use serde_json::Value;
use std::time::Duration;

/// Argo CD's self-heal backoff: a `k8s.io/apimachinery` `wait.Backoff{Duration: base, Factor:
/// factor, Cap: cap}` stepped once per previous self-heal attempt.
///
/// With the defaults the delay before a self-heal, after N consecutive self-heal attempts, is
/// 0, 2, 6, 18, 54, 162, 300, 300, … seconds. The delay is measured from the end of the last
/// sync operation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SelfHealBackoff {
    /// The first non-zero delay (Argo CD: `--self-heal-backoff-timeout-seconds`, 2 s).
    pub base: Duration,
    /// The multiplier between steps (`--self-heal-backoff-factor`, 3). `0` keeps `base`
    /// forever, as `wait.Backoff` does.
    pub factor: f64,
    /// The largest delay (`--self-heal-backoff-cap-seconds`, 300 s); zero means no cap.
    pub cap: Duration,
}

impl Default for SelfHealBackoff {
    fn default() -> Self {
        SelfHealBackoff {
            base: Duration::from_secs(2),
            factor: 3.0,
            cap: Duration::from_secs(300),
        }
    }
}

impl SelfHealBackoff {
    /// The delay before the next self-heal after `attempts` consecutive self-heal attempts.
    ///
    /// This is `wait.Backoff.Step()` called `attempts` times on a fresh copy, keeping the last
    /// result: no attempts yet means no delay; each step returns the current duration and then
    /// multiplies it, and once the product passes the cap every later step returns the cap.
    pub fn delay(&self, attempts: u32) -> Duration {
        let cap = self.cap.as_nanos() as f64;
        // `wait.Backoff` state: the current duration and the steps left.
        let mut duration = self.base.as_nanos() as f64;
        let mut steps_left = attempts;
        let mut result = 0.0;
        for _ in 0..attempts {
            if steps_left == 0 {
                // Capped earlier: `Step()` now returns the (capped) duration unchanged, and so
                // will every remaining call.
                result = duration;
                break;
            }
            steps_left -= 1;
            result = duration;
            if self.factor != 0.0 {
                // Go: time.Duration(float64(d) * factor), truncated to whole nanoseconds.
                duration = (duration * self.factor).trunc();
                if cap > 0.0 && duration > cap {
                    duration = cap;
                    steps_left = 0;
                }
            }
            if steps_left > 0 && (!duration.is_finite() || duration >= u64::MAX as f64) {
                return Duration::MAX;
            }
            if duration == result {
                break; // a fixed point (factor 0 or 1): every later step returns the same
            }
        }
        nanos_to_duration(result)
    }

    /// How long to wait from now, when the last sync operation finished `elapsed` ago.
    pub fn remaining(&self, attempts: u32, elapsed: Duration) -> Duration {
        self.delay(attempts).saturating_sub(elapsed)
    }
}

fn nanos_to_duration(nanos: f64) -> Duration {
    if !nanos.is_finite() || nanos <= 0.0 {
        return Duration::ZERO;
    }
    if nanos >= u64::MAX as f64 {
        return Duration::MAX;
    }
    Duration::from_nanos(nanos as u64)
}

/// Argo CD's defaults for `syncPolicy.retry.backoff` (`common.DefaultSyncRetry*`).
pub const DEFAULT_RETRY_DURATION: Duration = Duration::from_secs(5);
pub const DEFAULT_RETRY_FACTOR: i64 = 2;
pub const DEFAULT_RETRY_MAX_DURATION: Duration = Duration::from_secs(180);
/// The retry limit an automated sync gets when `syncPolicy.retry` is absent.
pub const AUTOMATED_DEFAULT_RETRY_LIMIT: i64 = 5;

/// `syncPolicy.retry.backoff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryBackoff {
    /// `duration` (default 5 s): the wait before the first retry.
    pub duration: GoDuration,
    /// `factor` (default 2): an integer in Argo CD's API.
    pub factor: i64,
    /// `maxDuration` (default 3 m); zero or negative means no cap.
    pub max_duration: GoDuration,
}

impl RetryBackoff {
    /// The wait before retry number `attempts + 1` (Argo CD's `NextRetryAt`):
    /// `duration × factor^attempts`, capped at `maxDuration` when that is positive; computed in
    /// floating point as Argo CD does, then truncated to whole nanoseconds (negative → zero).
    pub fn delay(&self, attempts: u32) -> Duration {
        let base = self.duration.as_nanos() as f64;
        let exp = i32::try_from(attempts).unwrap_or(i32::MAX);
        let mut wait = base * (self.factor as f64).powi(exp);
        let max = self.max_duration.as_nanos();
        if max > 0 {
            wait = wait.min(max as f64);
        }
        nanos_to_duration(wait)
    }
}

impl Default for RetryBackoff {
    fn default() -> Self {
        RetryBackoff {
            duration: GoDuration(DEFAULT_RETRY_DURATION.as_nanos() as i64),
            factor: DEFAULT_RETRY_FACTOR,
            max_duration: GoDuration(DEFAULT_RETRY_MAX_DURATION.as_nanos() as i64),
        }
    }
}

/// `syncPolicy.retry`: how often, and how far apart, a failed sync is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// `limit`: the number of retries after the first failed attempt. `0` never retries
    /// (Go's zero value, so `retry: {backoff: ...}` without a limit retries nothing);
    /// a negative limit retries forever.
    pub limit: i64,
    pub backoff: RetryBackoff,
    /// `refresh`: retry with the latest revision instead of the one the sync started with.
    pub refresh: bool,
}

impl Default for RetryPolicy {
    /// No retries: what a manual sync without `syncPolicy.retry` gets.
    fn default() -> Self {
        RetryPolicy::none()
    }
}

/// A `syncPolicy.retry` that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RetryPolicyError {
    #[error("syncPolicy.retry.{field}: {source}")]
    Duration {
        field: &'static str,
        source: DurationError,
    },
    #[error("syncPolicy.retry.{field}: expected {expected}")]
    Type {
        field: &'static str,
        expected: &'static str,
    },
    #[error("syncPolicy.retry.{0}")]
    Model(ModelError),
}

impl RetryPolicy {
    /// No retries (`limit: 0`).
    pub fn none() -> RetryPolicy {
        RetryPolicy {
            limit: 0,
            backoff: RetryBackoff::default(),
            refresh: false,
        }
    }

    /// What Argo CD gives an automated sync when `syncPolicy.retry` is absent: `{limit: 5}`
    /// with the default backoff.
    pub fn automated_default() -> RetryPolicy {
        RetryPolicy {
            limit: AUTOMATED_DEFAULT_RETRY_LIMIT,
            ..RetryPolicy::none()
        }
    }

    /// Reads `syncPolicy.retry` (`{limit, backoff: {duration, factor, maxDuration}, refresh}`)
    /// from JSON; see [`RetryPolicy::from_strategy`].
    pub fn from_value(v: &Value) -> Result<RetryPolicy, RetryPolicyError> {
        let strategy: RetryStrategy = model::read(v).map_err(RetryPolicyError::Model)?;
        RetryPolicy::from_strategy(&strategy)
    }

    /// The policy of a typed `syncPolicy.retry`. Durations are strings (`"5s"`, or `"5"` for
    /// seconds); a number is taken as seconds too.
    pub fn from_strategy(r: &RetryStrategy) -> Result<RetryPolicy, RetryPolicyError> {
        let mut policy = RetryPolicy::none();
        if let Some(limit) = r.limit {
            policy.limit = limit;
        }
        policy.refresh = r.refresh;
        if let Some(b) = &r.backoff {
            if let Some(d) = duration_field(b.duration.as_ref(), "backoff.duration")? {
                policy.backoff.duration = d;
            }
            if let Some(d) = duration_field(b.max_duration.as_ref(), "backoff.maxDuration")? {
                policy.backoff.max_duration = d;
            }
            if let Some(f) = b.factor.as_ref().filter(|f| !f.is_null()) {
                policy.backoff.factor = int_field(f, "backoff.factor")?;
            }
        }
        Ok(policy)
    }

    /// Whether another retry is allowed after `attempts` retries (Argo CD retries while
    /// `retryCount < limit || limit < 0`).
    pub fn allows(&self, attempts: u32) -> bool {
        self.limit < 0 || i64::from(attempts) < self.limit
    }

    /// The wait before the next retry, when `attempts` retries have already been made
    /// (Argo CD's `RetryStrategy.NextRetryAt`): `duration × factor^attempts`, capped at
    /// `maxDuration` when that is positive. `None` when the limit is exhausted.
    pub fn next_delay(&self, attempts: u32) -> Option<Duration> {
        self.allows(attempts).then(|| self.backoff.delay(attempts))
    }
}

/// Whether a finished sync should be retried: it failed and the policy still allows a retry
/// after `attempts` retries. Unlike Argo CD (argo-cd#18442), plumb also retries a failed
/// automated sync of a revision it has already attempted.
pub fn should_retry(failed: bool, attempts: u32, retry: &RetryPolicy) -> bool {
    failed && retry.allows(attempts)
}

fn int_field(v: &Value, field: &'static str) -> Result<i64, RetryPolicyError> {
    let ty = || RetryPolicyError::Type {
        field,
        expected: "an integer",
    };
    match v {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
            .ok_or_else(ty),
        // int64 fields may arrive as strings from some YAML tooling; Go would reject them.
        _ => Err(ty()),
    }
}

fn duration_field(
    v: Option<&Value>,
    field: &'static str,
) -> Result<Option<GoDuration>, RetryPolicyError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => parse_argo_duration(s)
            .map(Some)
            .map_err(|source| RetryPolicyError::Duration { field, source }),
        Some(Value::Number(n)) => {
            n.as_i64()
                .map(|s| Some(GoDuration::from_secs(s)))
                .ok_or(RetryPolicyError::Type {
                    field,
                    expected: "a duration string",
                })
        }
        Some(_) => Err(RetryPolicyError::Type {
            field,
            expected: "a duration string",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn secs(list: &[u64]) -> Vec<Duration> {
        list.iter().map(|s| Duration::from_secs(*s)).collect()
    }

    #[test]
    fn self_heal_backoff_is_0_2_6_18_54_162_then_300() {
        let b = SelfHealBackoff::default();
        let got: Vec<Duration> = (0..8).map(|n| b.delay(n)).collect();
        assert_eq!(got, secs(&[0, 2, 6, 18, 54, 162, 300, 300]));
        assert_eq!(b.delay(40), Duration::from_secs(300));
        assert_eq!(b.delay(u32::MAX), Duration::from_secs(300));
    }

    #[test]
    fn self_heal_backoff_matches_argo_test_with_a_two_minute_cap() {
        // TestSelfHealRemainingBackoff: cap 2m → 0, 2, 6, 18, 54, 120, 120; 40 attempts with the
        // last operation 1 minute ago → 60 s remaining.
        let b = SelfHealBackoff {
            cap: Duration::from_secs(120),
            ..SelfHealBackoff::default()
        };
        let got: Vec<Duration> = (0..7).map(|n| b.delay(n)).collect();
        assert_eq!(got, secs(&[0, 2, 6, 18, 54, 120, 120]));
        assert_eq!(
            b.remaining(40, Duration::from_secs(60)),
            Duration::from_secs(60)
        );
        assert_eq!(b.remaining(1, Duration::from_secs(5)), Duration::ZERO);
    }

    #[test]
    fn self_heal_backoff_is_configurable() {
        let b = SelfHealBackoff {
            base: Duration::from_secs(1),
            factor: 2.0,
            cap: Duration::from_secs(10),
        };
        let got: Vec<Duration> = (0..7).map(|n| b.delay(n)).collect();
        assert_eq!(got, secs(&[0, 1, 2, 4, 8, 10, 10]));
        // Factor 0 keeps the base; no cap grows without bound.
        let flat = SelfHealBackoff {
            factor: 0.0,
            ..SelfHealBackoff::default()
        };
        assert_eq!(flat.delay(5), Duration::from_secs(2));
        let uncapped = SelfHealBackoff {
            cap: Duration::ZERO,
            ..SelfHealBackoff::default()
        };
        assert_eq!(uncapped.delay(7), Duration::from_secs(2 * 729));
    }

    #[test]
    fn retry_defaults_are_5s_factor_2_max_3m() {
        let p = RetryPolicy {
            limit: -1,
            ..RetryPolicy::none()
        };
        let got: Vec<Duration> = (0..8).map(|n| p.next_delay(n).unwrap()).collect();
        assert_eq!(got, secs(&[5, 10, 20, 40, 80, 160, 180, 180]));
    }

    #[test]
    fn retry_limit_is_exhausted_after_limit_retries() {
        let table: &[(i64, u32, bool)] = &[
            (0, 0, false), // limit 0: never retried
            (1, 0, true),
            (1, 1, false),
            (5, 4, true),
            (5, 5, false),
            (-1, 0, true), // negative: unlimited
            (-1, 1_000_000, true),
        ];
        for (limit, attempts, retried) in table {
            let p = RetryPolicy {
                limit: *limit,
                ..RetryPolicy::none()
            };
            assert_eq!(
                p.next_delay(*attempts).is_some(),
                *retried,
                "{limit}/{attempts}"
            );
            assert_eq!(should_retry(true, *attempts, &p), *retried);
            assert!(
                !should_retry(false, *attempts, &p),
                "a success is never retried"
            );
        }
        let auto = RetryPolicy::automated_default();
        assert_eq!(auto.limit, 5);
        assert_eq!(auto.next_delay(5), None);
    }

    #[test]
    fn retry_policy_reads_argo_json() {
        let p = RetryPolicy::from_value(&json!({
            "limit": 3,
            "backoff": {"duration": "30s", "factor": 3, "maxDuration": "5m"}
        }))
        .unwrap();
        let got: Vec<Option<Duration>> = (0..4).map(|n| p.next_delay(n)).collect();
        assert_eq!(
            got,
            vec![
                Some(Duration::from_secs(30)),
                Some(Duration::from_secs(90)),
                Some(Duration::from_secs(270)),
                None
            ]
        );
        // Bare integers are seconds; a maxDuration of 0 disables the cap.
        let p = RetryPolicy::from_value(&json!({
            "limit": -1, "backoff": {"duration": "10", "maxDuration": "0"}
        }))
        .unwrap();
        assert_eq!(p.next_delay(10), Some(Duration::from_secs(10 * 1024)));
        // No limit given: Go's zero value, no retries.
        let p = RetryPolicy::from_value(&json!({"backoff": {"duration": "1s"}})).unwrap();
        assert_eq!(p.limit, 0);
        assert_eq!(p.next_delay(0), None);
        let err = RetryPolicy::from_value(&json!({"backoff": {"duration": "soon"}})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "syncPolicy.retry.backoff.duration: unable to parse soon as a duration"
        );
        let err = RetryPolicy::from_value(&json!({"limit": "three"})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "syncPolicy.retry.limit: invalid type: string \"three\", expected i64"
        );
        // A number of seconds where a duration string belongs.
        let p = RetryPolicy::from_value(&json!({"limit": 1, "backoff": {"duration": 7}})).unwrap();
        assert_eq!(p.next_delay(0), Some(Duration::from_secs(7)));
    }

    #[test]
    fn retry_with_one_hour_two_minute_three_second_duration() {
        let p = RetryPolicy::from_value(&json!({
            "limit": 2, "backoff": {"duration": "1h2m3s", "factor": 1, "maxDuration": "2h"}
        }))
        .unwrap();
        assert_eq!(p.next_delay(1), Some(Duration::from_secs(3723)));
    }
}
