//! The Application and AppProject objects plumb-sync's tests build, in one place: the
//! runner's unit tests on the in-memory cluster (`src/run/tests.rs`, `orphan_tests.rs`; `run`
//! includes this file by path) and the test-bed tests (through `tests/common`) build them the
//! same way.
//! Plain JSON, no cluster.

#![allow(dead_code)] // each user takes its own subset

use serde_json::{Value, json};

/// A plumb.dev Application (as an Argo CD one would be, apiVersion changed) in project
/// `default`, rendering `path` of `repo_url` at `HEAD` into the in-cluster `destination`.
pub fn application(
    name: &str,
    namespace: &str,
    repo_url: &str,
    path: &str,
    destination: &str,
    sync_policy: Value,
) -> Value {
    json!({
        "apiVersion": "plumb.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "project": "default",
            "source": {"repoURL": repo_url, "path": path, "targetRevision": "HEAD"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": destination},
            "syncPolicy": sync_policy
        }
    })
}

/// A plumb.dev AppProject.
pub fn app_project(name: &str, namespace: &str, spec: Value) -> Value {
    json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "AppProject",
        "metadata": {"name": name, "namespace": namespace}, "spec": spec})
}

/// A project spec allowing every repository and destination, with a deny window open now
/// for every app (`* * * * *`, 1 h); `manual_sync` lets manual syncs through it.
pub fn deny_window_spec(manual_sync: bool) -> Value {
    json!({"sourceRepos": ["*"], "destinations": [{"server": "*", "namespace": "*"}],
        "syncWindows": [{"kind": "deny", "schedule": "* * * * *", "duration": "1h",
            "applications": ["*"], "manualSync": manual_sync}]})
}
