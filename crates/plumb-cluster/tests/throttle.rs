//! An API server that turns requests away (429 Too Many Requests with `Retry-After`):
//! plumb retries them with backoff, no sooner than `Retry-After` (capped at
//! `plumb_core::limits::MAX_RETRY_AFTER_SECS`), a bounded number of times.
//!
//! `support::proxy`, a TLS proxy in front of the test bed's real API server, answers chosen
//! requests with 429 and records when each arrived, which is what the assertions are about.

mod support;

use plumb_cluster::RETRY_ATTEMPTS;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::proxy::{Proxy, Rule, Seen};

fn config_map(namespace: &str, name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace}, "data": {"k": value}})
}

/// Asserts that consecutive requests arrived at least `gap` apart.
fn assert_spaced(seen: &[Seen], gap: Duration) {
    for pair in seen.windows(2) {
        let waited = pair[1].at.duration_since(pair[0].at);
        assert!(
            waited >= gap,
            "a retry came {waited:?} after the 429, wanted >= {gap:?}"
        );
    }
}

/// Reads the ConfigMap `read-me` (stored first, `data.k: one`, in a new namespace) through a
/// proxy that refuses the first `refusals` reads with `Retry-After: retry_after`; returns the
/// namespace and the requests the proxy saw, once the read succeeded after them.
async fn read_after_refusals(
    direct: &plumb_cluster::Cluster,
    refusals: usize,
    retry_after: u64,
) -> (String, Vec<Seen>) {
    let ns = support::namespace(direct, "throttle", json!({})).await;
    support::apply(direct, vec![config_map(&ns, "read-me", "one")]).await;
    let proxy = Proxy::start(Rule {
        method: axum::http::Method::GET,
        path: format!("/namespaces/{ns}/configmaps/read-me"),
        refusals,
        retry_after,
        race: None,
        watch_gone: None,
    })
    .await;
    let cluster = proxy.connect().await;
    let live = cluster
        .get_object("", "ConfigMap", &ns, "read-me")
        .await
        .expect("the read succeeds after the 429s")
        .expect("the ConfigMap exists");
    assert_eq!(live.pointer("/data/k"), Some(&json!("one")));
    let seen = proxy.seen();
    let mut want = vec![true; refusals];
    want.push(false);
    assert_eq!(
        seen.iter().map(|s| s.refused).collect::<Vec<_>>(),
        want,
        "{refusals} refused requests, then one passed"
    );
    (ns, seen)
}

#[tokio::test]
async fn reads_and_applies_turned_away_with_429_are_retried_after_retry_after() {
    let Some(direct) = support::testbed("throttle_read_apply").await else {
        return;
    };
    // A read: two 429s, then the object.
    let (ns, seen) = read_after_refusals(&direct, 2, 1).await;
    assert_spaced(&seen, Duration::from_secs(1));

    // A server-side apply (PATCH): one 429, then applied once.
    let proxy = Proxy::start(Rule {
        method: axum::http::Method::PATCH,
        path: format!("/namespaces/{ns}/configmaps/applied"),
        refusals: 1,
        retry_after: 1,
        race: None,
        watch_gone: None,
    })
    .await;
    let cluster = proxy.connect().await;
    let results = cluster
        .apply(vec![config_map(&ns, "applied", "two")], "plumb-test", true)
        .await;
    assert_eq!(results.len(), 1);
    assert!(results[0].is_ok(), "apply after a 429: {:?}", results[0]);
    let seen = proxy.seen();
    assert_eq!(
        seen.iter().map(|s| s.refused).collect::<Vec<_>>(),
        [true, false]
    );
    assert_spaced(&seen, Duration::from_secs(1));
    let stored = direct
        .get_object("", "ConfigMap", &ns, "applied")
        .await
        .expect("read")
        .expect("applied");
    assert_eq!(stored.pointer("/data/k"), Some(&json!("two")));
}

#[tokio::test]
async fn a_server_that_keeps_answering_429_fails_the_request_after_bounded_retries() {
    let Some(direct) = support::testbed("throttle_bounded").await else {
        return;
    };
    let ns = support::namespace(&direct, "throttle", json!({})).await;
    let proxy = Proxy::start(Rule {
        method: axum::http::Method::GET,
        path: format!("/namespaces/{ns}/configmaps/never"),
        refusals: usize::MAX,
        retry_after: 0,
        race: None,
        watch_gone: None,
    })
    .await;
    let cluster = proxy.connect().await;
    let started = Instant::now();
    let err = cluster
        .get_object("", "ConfigMap", &ns, "never")
        .await
        .expect_err("always refused");
    let message = err.to_string();
    assert!(
        message.contains("429") || message.to_lowercase().contains("too many"),
        "{message}"
    );
    let seen = proxy.seen();
    assert_eq!(
        seen.len(),
        1 + RETRY_ATTEMPTS as usize,
        "one request and {} retries",
        RETRY_ATTEMPTS
    );
    // Backoff, not a busy loop: the retries waited at least the first backoff each.
    assert_spaced(&seen, plumb_cluster::RETRY_MIN_DELAY);
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[tokio::test]
async fn a_retry_after_of_an_hour_is_capped() {
    let Some(direct) = support::testbed("throttle_capped").await else {
        return;
    };
    let (_, seen) = read_after_refusals(&direct, 1, 3600).await;
    // The retry waited the cap (not the backoff alone), and nowhere near the hour asked for.
    let cap = Duration::from_secs(plumb_core::limits::MAX_RETRY_AFTER_SECS);
    let waited = seen[1].at.duration_since(seen[0].at);
    assert!(waited >= Duration::from_secs(1), "retried after {waited:?}");
    assert!(
        waited >= cap,
        "retried after {waited:?}, before the {cap:?} cap"
    );
    assert!(
        waited < Duration::from_secs(600),
        "retried after {waited:?}: the 3600 s Retry-After was not capped"
    );
}
