//! Shared helpers of the integration tests: the test bed, namespaces, objects.
//!
//! Tests run against the real API server of `testbed/up.sh` when `TESTBED_DIR`
//! is set (with `KUBECONFIG` pointing at it). Otherwise they print a skip notice
//! and pass, unless `REQUIRE_K8S_TESTBED=1`, which makes them fail.
//!
//! Shared by plumb-cli's and plumb-sync's test-bed tests too (through `#[path]`): the waits
//! every test-bed test uses — `wait_until` (a condition, [`DEADLINE`] = 90 s, failing with
//! what was awaited), `deployment_observed` (kube-controller-manager done writing a new
//! Deployment) and `webhook::wait_effective` (a dry run comes back mutated). Each webhook
//! test selects namespaces by a label value of its own (`webhook::selector_value`).

// Each test binary uses its own subset of these helpers.
#![allow(dead_code)]

pub mod proxy;
pub mod second_bed;
pub mod webhook;

use plumb_cluster::{Cluster, ConnectOptions};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The test bed's cluster, or `None` (after a notice) when there is none.
pub async fn testbed(test: &str) -> Option<Cluster> {
    if std::env::var_os("TESTBED_DIR").is_none() {
        if std::env::var("REQUIRE_K8S_TESTBED").as_deref() == Ok("1") {
            panic!("{test}: REQUIRE_K8S_TESTBED=1 but TESTBED_DIR is not set (run testbed/up.sh)");
        }
        eprintln!(
            "SKIP {test}: no Kubernetes test bed (TESTBED_DIR unset; eval \"$(testbed/up.sh)\")"
        );
        return None;
    }
    match Cluster::connect(&ConnectOptions::default()).await {
        Ok(cluster) => Some(cluster),
        Err(e) => panic!("{test}: TESTBED_DIR is set but the test bed does not answer: {e}"),
    }
}

/// A real token of the ServiceAccount `ns/sa` (a TokenRequest, valid an hour).
pub async fn sa_token(admin: &Cluster, ns: &str, sa: &str) -> String {
    let request = http::Request::post(format!(
        "/api/v1/namespaces/{ns}/serviceaccounts/{sa}/token"
    ))
    .header("content-type", "application/json")
    .body(
        serde_json::to_vec(
            &serde_json::json!({"apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}}),
        )
        .expect("json"),
    )
    .expect("request");
    let answer: Value = admin.client().request(request).await.expect("TokenRequest");
    answer["status"]["token"]
        .as_str()
        .expect("token")
        .to_string()
}

/// Whether `user` (a ServiceAccount's user name) may `verb` the `resource` of `group` in
/// `namespace` ("" for cluster-wide), as the API server's authorizer answers now (a
/// SubjectAccessReview); `None` when the review itself fails. What a test waits on before it
/// acts as the user: RBAC changes take effect a moment after they are written.
pub async fn may(
    admin: &Cluster,
    user: &str,
    verb: &str,
    group: &str,
    resource: &str,
    namespace: &str,
) -> Option<bool> {
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": user, "groups": ["system:serviceaccounts", "system:authenticated"],
            "resourceAttributes": {"verb": verb, "group": group, "resource": resource,
                "namespace": namespace}}});
    let got = admin.create_object(&review, "plumb-test").await.ok()?;
    Some(
        got.pointer("/status/allowed")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    )
}

/// The test bed directory (certificates, kubeconfig).
pub fn testbed_dir() -> std::path::PathBuf {
    std::env::var_os("TESTBED_DIR")
        .map(Into::into)
        .expect("TESTBED_DIR")
}

/// A name unique to this run: `<prefix>-<hex>`.
pub fn unique(prefix: &str) -> String {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(
        "{prefix}-{:x}{n}",
        (nanos as u64 ^ u64::from(std::process::id())) & 0xff_ffff
    )
}

/// Applies (server-side, for real) and returns the stored objects; panics on error.
pub async fn apply(cluster: &Cluster, objects: Vec<Value>) -> Vec<Value> {
    cluster
        .apply(objects, "plumb-test", true)
        .await
        .into_iter()
        .map(|r| r.unwrap_or_else(|e| panic!("apply failed: {e}")))
        .collect()
}

/// Creates a namespace with a unique name and the given labels.
pub async fn namespace(cluster: &Cluster, prefix: &str, labels: Value) -> String {
    let name = unique(prefix);
    apply(
        cluster,
        vec![json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": labels}})],
    )
    .await;
    name
}

/// A small Deployment.
pub fn deployment(namespace: &str, name: &str, pull_policy: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "registry.invalid/app:1",
                    "imagePullPolicy": pull_policy}]}
            }
        }
    })
}

/// A ConfigMap with one key.
pub fn configmap(namespace: &str, name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "data": {"key": name}})
}

/// How long a test waits for anything the cluster, a controller or a process does
/// asynchronously. Generous on purpose: CI runs on a busy 2-core machine, and a deadline
/// only bounds how long a broken test takes to fail; a passing test never waits for it.
pub const DEADLINE: Duration = Duration::from_secs(90);

/// Polls `check` every 100 ms until it returns `Some`, for at most `timeout`.
pub async fn eventually<T, F, Fut>(timeout: Duration, mut check: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return Some(v);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Polls `check` until it returns `Some`, for at most [`DEADLINE`]; panics naming `what`
/// (what was awaited) when it never does.
pub async fn wait_until<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    eventually(DEADLINE, check)
        .await
        .unwrap_or_else(|| panic!("{what}: not within {DEADLINE:?}"))
}

/// [`wait_until`] for blocking tests (and conditions that are not async): polls `check`
/// every 100 ms, panicking after [`DEADLINE`] with `what` and `context()` (a log, say).
pub fn wait_until_blocking<T>(
    what: &str,
    mut check: impl FnMut() -> Option<T>,
    context: impl Fn() -> String,
) -> T {
    let started = std::time::Instant::now();
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "{what}: not within {DEADLINE:?}\n{}",
            context()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until kube-controller-manager is done with a new Deployment: it has observed its
/// generation, given it a revision, created its ReplicaSet's Pods and reported them. Until
/// then the controller writes the Deployment (annotations, status) at moments of its own
/// choosing; after it, nothing does (no kubelet runs Pods on the test bed, so they stay
/// unavailable and the status stays as it is). The Deployment as it is then.
pub async fn deployment_observed(cluster: &Cluster, namespace: &str, name: &str) -> Value {
    let what = format!(
        "kube-controller-manager observing Deployment {namespace}/{name} (is KCM running?)"
    );
    wait_until(&what, || async {
        let d = cluster
            .get_object("apps", "Deployment", namespace, name)
            .await
            .ok()??;
        let generation = d.pointer("/metadata/generation")?.as_i64()?;
        let replicas = d
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        let status = |field: &str| {
            d.pointer(&format!("/status/{field}"))
                .and_then(Value::as_i64)
                .unwrap_or(0)
        };
        let available_reported = d
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|c| c.iter().any(|c| c["type"] == "Available"));
        (status("observedGeneration") >= generation
            && d.pointer("/metadata/annotations/deployment.kubernetes.io~1revision")
                .is_some()
            && status("replicas") == replicas
            && status("updatedReplicas") == replicas
            && available_reported)
            .then_some(d)
    })
    .await
}

/// The names of objects, sorted.
pub fn names(objects: &[Value]) -> Vec<String> {
    let mut names: Vec<String> = objects
        .iter()
        .filter_map(|o| o.pointer("/metadata/name").and_then(Value::as_str))
        .map(String::from)
        .collect();
    names.sort();
    names
}

/// Merges `status` into the status subresource of `name` in the collection at `path` (e.g.
/// `/api/v1/namespaces/NS/services`): what a controller the test bed does not run would write.
pub async fn patch_status(cluster: &Cluster, path: &str, name: &str, status: Value) {
    let request = kube::core::Request::new(path.to_string())
        .patch_subresource(
            "status",
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({ "status": status })),
        )
        .expect("status request");
    cluster
        .client()
        .request::<Value>(request)
        .await
        .expect("status patch");
}

/// What a cloud controller does: the LoadBalancer Service `ns/name` gets an address.
pub async fn assign_lb(cluster: &Cluster, ns: &str, name: &str) {
    patch_status(
        cluster,
        &format!("/api/v1/namespaces/{ns}/services"),
        name,
        json!({"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}}),
    )
    .await;
}

/// One audit event of the API server's log: who, what, where.
#[derive(Debug)]
pub struct Audited {
    pub user: String,
    pub verb: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    pub uri: String,
}

impl Audited {
    /// A request that changes something (a dry run counts: see `uri`).
    pub fn is_write(&self) -> bool {
        matches!(
            self.verb.as_str(),
            "create" | "update" | "patch" | "delete" | "deletecollection"
        )
    }
}

/// The complete audit events written after byte `from` of the log.
pub fn audited_since(log: &std::path::Path, from: u64) -> Vec<Audited> {
    use std::io::{Read, Seek};
    let mut f = std::fs::File::open(log).expect("audit log");
    f.seek(std::io::SeekFrom::Start(from)).expect("seek");
    let mut text = String::new();
    f.read_to_string(&mut text).expect("read audit log");
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    let s = |e: &Value, p: &str| {
        e.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    complete
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|e| Audited {
            user: s(&e, "/user/username"),
            verb: s(&e, "/verb"),
            resource: s(&e, "/objectRef/resource"),
            subresource: s(&e, "/objectRef/subresource"),
            namespace: s(&e, "/objectRef/namespace"),
            name: s(&e, "/objectRef/name"),
            uri: s(&e, "/requestURI"),
        })
        .collect()
}

/// The test bed's audit log (`testbed/up.sh --audit`) and its length now, to read what comes
/// after with [`audited_since`]; `None` without one, unless `REQUIRE_K8S_AUDIT=1` (then the test
/// fails).
pub fn audit_log_from_now() -> Option<(std::path::PathBuf, u64)> {
    let log = testbed_dir().join("audit.log");
    match std::fs::metadata(&log) {
        Ok(m) => Some((log, m.len())),
        Err(_) => {
            assert!(
                std::env::var("REQUIRE_K8S_AUDIT").as_deref() != Ok("1"),
                "REQUIRE_K8S_AUDIT=1 but the test bed has no audit log: start it with testbed/up.sh --audit"
            );
            eprintln!("no audit log (testbed/up.sh --audit): its checks are skipped");
            None
        }
    }
}
