//! Health-gated waves for custom resources on the test bed: a wave with a CRD and a custom
//! resource of it waits until the CRD is Established; a custom resource judged by a user Lua
//! script holds the next wave while Progressing, lets it go once a status update makes it
//! Healthy, and fails the sync with the script's message when Degraded (or when it never
//! becomes healthy, after the wave timeout).
//!
//! The test bed has no operator for the test's kinds: the test writes their status.

mod common;

use common::support::{apply, eventually, patch_status, testbed};
use common::{get_app, history};
use plumb_cluster::Cluster;
use plumb_health::{Checker, Customizations, LuaCheck, LuaLimits};
use plumb_sync::history::InitiatedBy;
use plumb_sync::run::{RunOptions, SyncOutcome, sync_app};
use serde_json::{Value, json};
use std::time::{Duration, Instant, SystemTime};

const GROUP: &str = "health.plumb.test";

/// The user script for `health.plumb.test/Gizmo`, in Argo CD's interface.
const GIZMO_LUA: &str = r#"
hs = {}
if obj.status ~= nil and obj.status.phase == "Ready" then
  hs.status = "Healthy"
  hs.message = "gizmo is ready"
elseif obj.status ~= nil and obj.status.phase == "Broken" then
  hs.status = "Degraded"
  hs.message = "gizmo is broken: " .. obj.status.reason
else
  hs.status = "Progressing"
  hs.message = "gizmo is warming up"
end
return hs
"#;

/// Installs the process's health checker with the Gizmo script (the first call wins; every
/// test installs the same).
fn install_lua() {
    let mut custom = Customizations::new();
    custom.push(LuaCheck {
        group: GROUP.into(),
        kind: "Gizmo".into(),
        script: GIZMO_LUA.into(),
        use_open_libs: false,
        origin: "health_waves.rs".into(),
    });
    let _ = plumb_health::install(Checker::new(custom, LuaLimits::default()));
}

fn opts(wave_timeout: Duration) -> RunOptions {
    RunOptions {
        poll_interval: Duration::from_millis(100),
        wave_timeout,
        prune_wait: Duration::from_secs(20),
        ..RunOptions::default()
    }
}

fn to_json(v: Value) -> String {
    serde_json::to_string_pretty(&v).expect("json")
}

fn crd(plural: &str, kind: &str, wave: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{GROUP}"),
                     "annotations": {"argocd.argoproj.io/sync-wave": wave}},
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    })
}

/// A kind of its own for one test run, with its plural: the CRD is cluster-wide and stays on
/// the test bed, so a later run (tests/stress.sh reuses one test bed) must not find it.
fn fresh_kind(kind: &str) -> (String, String) {
    let run = common::support::unique("k");
    let tag = run.trim_start_matches("k-");
    let kind = format!("{kind}{tag}");
    (format!("{}s", kind.to_lowercase()), kind)
}

fn custom(kind: &str, name: &str, wave: &str) -> String {
    to_json(json!({"apiVersion": format!("{GROUP}/v1"), "kind": kind,
        "metadata": {"name": name, "annotations": {"argocd.argoproj.io/sync-wave": wave}},
        "spec": {"size": 3}}))
}

fn configmap(name: &str, wave: &str) -> String {
    to_json(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "annotations": {"argocd.argoproj.io/sync-wave": wave}},
        "data": {"k": name}}))
}

async fn get(cluster: &Cluster, group: &str, kind: &str, ns: &str, name: &str) -> Option<Value> {
    cluster
        .get_object(group, kind, ns, name)
        .await
        .expect("get object")
}

fn established(crd: &Value) -> bool {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        })
}

/// Installs the Gizmo CRD (outside any app) and waits until it is served.
async fn install_gizmo_crd(cluster: &Cluster) {
    let mut c = crd("gizmos", "Gizmo", "0");
    if let Some(m) = c.pointer_mut("/metadata").and_then(Value::as_object_mut) {
        m.remove("annotations");
    }
    apply(cluster, vec![c]).await;
    let served = eventually(Duration::from_secs(30), || async {
        let crd = get(
            cluster,
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            "",
            &format!("gizmos.{GROUP}"),
        )
        .await?;
        if !established(&crd) {
            return None;
        }
        cluster.discover().await.ok()?;
        Some(())
    })
    .await;
    assert!(served.is_some(), "gizmos never became Established");
}

/// What the gizmo operator would do: write the Gizmo's status.
async fn set_gizmo_status(cluster: &Cluster, ns: &str, name: &str, status: Value) {
    patch_status(
        cluster,
        &format!("/apis/{GROUP}/v1/namespaces/{ns}/gizmos"),
        name,
        status,
    )
    .await;
}

fn op_field<'a>(app: &'a Value, field: &str) -> &'a str {
    app.pointer(&format!("/status/operationState/{field}"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Polls the Application until its running operation's message satisfies `want`.
async fn wait_message(
    cluster: &Cluster,
    ns: &str,
    app: &str,
    want: impl Fn(&str) -> bool,
) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let a = get_app(cluster, ns, app).await;
        let m = op_field(&a, "message").to_string();
        if op_field(&a, "phase") == "Running" && want(&m) {
            return m;
        }
        assert!(
            Instant::now() < deadline,
            "operation message never matched; last: {m:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn sync(cluster: &Cluster, apps_ns: &str, name: &str, o: &RunOptions) -> SyncOutcome {
    let app = get_app(cluster, apps_ns, name).await;
    sync_app(
        cluster,
        &app,
        o,
        InitiatedBy::user("alice"),
        SystemTime::now(),
    )
    .await
    .expect("sync runs")
}

async fn setup(
    cluster: &Cluster,
    prefix: &str,
    files: &[(&str, String)],
) -> (String, String, String) {
    common::install_crd(cluster).await;
    let apps_ns = common::support::namespace(cluster, &format!("{prefix}-apps"), json!({})).await;
    let dest = common::support::namespace(cluster, &format!("{prefix}-dest"), json!({})).await;
    let refs: Vec<(&str, &str)> = files.iter().map(|(a, b)| (*a, b.as_str())).collect();
    let (repo, _) = common::git_repo(prefix, &refs);
    let name = common::support::unique(prefix);
    apply(
        cluster,
        vec![common::application(
            &name,
            &apps_ns,
            &repo,
            "app",
            &dest,
            json!({}),
        )],
    )
    .await;
    (apps_ns, dest, name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_wave_with_a_crd_waits_until_it_is_established() {
    let Some(cluster) = testbed("health_crd_wave").await else {
        return;
    };
    install_lua();
    // Wave 0: a CRD; wave 1: a custom resource of it; wave 2: a ConfigMap.
    let (plural, kind) = fresh_kind("Sprocket");
    let files = [
        ("app/crd.json", to_json(crd(&plural, &kind, "0"))),
        ("app/sprocket.json", custom(&kind, "s1", "1")),
        ("app/after.json", configmap("after", "2")),
    ];
    let (apps_ns, dest, name) = setup(&cluster, "crdwave", &files).await;
    let out = sync(&cluster, &apps_ns, &name, &opts(Duration::from_secs(60))).await;
    assert!(out.succeeded(), "{}", out.message);
    let crd = get(
        &cluster,
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
        "",
        &format!("{plural}.{GROUP}"),
    )
    .await
    .expect("CRD applied");
    assert!(established(&crd), "{crd}");
    let sprocket = get(&cluster, GROUP, &kind, &dest, "s1")
        .await
        .expect("the custom resource was applied in wave 1");
    // Created no earlier than the CRD became Established (RFC 3339 UTC seconds compare as text).
    let established_at = crd["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Established"))
        .and_then(|c| c["lastTransitionTime"].as_str())
        .expect("Established time")
        .to_owned();
    let created = sprocket["metadata"]["creationTimestamp"]
        .as_str()
        .expect("creationTimestamp");
    assert!(
        created >= established_at.as_str(),
        "{created} < {established_at}"
    );
    assert!(
        get(&cluster, "", "ConfigMap", &dest, "after")
            .await
            .is_some()
    );
    // The CRD's result is judged by its health: Established.
    let crd_result = out
        .results
        .iter()
        .find(|r| r.key.kind == "CustomResourceDefinition")
        .expect("CRD result");
    assert_eq!(crd_result.status, "Synced", "{crd_result:?}");
}

/// One wave holding a new CRD and a custom resource of it (as Argo CD): the CRD is applied
/// first, the custom resource once the CRD is Established.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crd_and_its_custom_resource_in_the_same_wave() {
    let Some(cluster) = testbed("health_crd_same_wave").await else {
        return;
    };
    install_lua();
    let (plural, kind) = fresh_kind("Cog");
    let files = [
        ("app/crd.json", to_json(crd(&plural, &kind, "0"))),
        ("app/cog.json", custom(&kind, "c1", "0")),
    ];
    let (apps_ns, dest, name) = setup(&cluster, "crdsame", &files).await;
    // A dry run first: the custom resource's is skipped while its CRD is new.
    let app = get_app(&cluster, &apps_ns, &name).await;
    let request = plumb_sync::request::SyncRequest {
        dry_run: true,
        ..Default::default()
    };
    let dry = plumb_sync::run::sync_app_with(
        &cluster,
        &app,
        &opts(Duration::from_secs(60)),
        &request,
        InitiatedBy::user("alice"),
        SystemTime::now(),
    )
    .await
    .expect("dry run runs");
    assert!(dry.succeeded(), "{}", dry.message);
    let cog = dry
        .results
        .iter()
        .find(|r| r.key.kind == kind)
        .expect("Cog result");
    assert!(cog.message.contains("dry run skipped"), "{cog:?}");
    let crd_name = format!("{plural}.{GROUP}");
    let crd_kind = "CustomResourceDefinition";
    assert!(
        get(&cluster, "apiextensions.k8s.io", crd_kind, "", &crd_name)
            .await
            .is_none(),
        "a dry run changes nothing"
    );
    let out = sync(&cluster, &apps_ns, &name, &opts(Duration::from_secs(60))).await;
    assert!(out.succeeded(), "{}", out.message);
    assert!(
        get(&cluster, GROUP, &kind, &dest, "c1").await.is_some(),
        "the custom resource exists"
    );
    for r in &out.results {
        assert_eq!(r.status, "Synced", "{r:?}");
    }
    let app = get_app(&cluster, &apps_ns, &name).await;
    assert_eq!(
        app["status"]["sync"]["status"], "Synced",
        "{}",
        app["status"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lua_progressing_resource_holds_the_next_wave_until_healthy() {
    let Some(cluster) = testbed("health_lua_wave").await else {
        return;
    };
    install_lua();
    install_gizmo_crd(&cluster).await;
    let files = [
        ("app/gizmo.json", custom("Gizmo", "g1", "0")),
        ("app/after.json", configmap("after", "1")),
    ];
    let (apps_ns, dest, name) = setup(&cluster, "luawave", &files).await;
    let o = opts(Duration::from_secs(60));
    let app = get_app(&cluster, &apps_ns, &name).await;
    let run = sync_app(
        &cluster,
        &app,
        &o,
        InitiatedBy::user("alice"),
        SystemTime::now(),
    );
    let play = async {
        let m = wait_message(&cluster, &apps_ns, &name, |m| m.starts_with("waiting for")).await;
        assert_eq!(m, format!("waiting for healthy state of {GROUP}/Gizmo/g1"));
        // Still Progressing a moment later: wave 1 has not started.
        set_gizmo_status(&cluster, &dest, "g1", json!({"phase": "Warming"})).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(
            get(&cluster, "", "ConfigMap", &dest, "after")
                .await
                .is_none()
        );
        set_gizmo_status(&cluster, &dest, "g1", json!({"phase": "Ready"})).await;
    };
    let (out, ()) = tokio::join!(run, play);
    let out = out.expect("sync");
    assert!(out.succeeded(), "{}", out.message);
    assert!(
        get(&cluster, "", "ConfigMap", &dest, "after")
            .await
            .is_some()
    );
    assert_eq!(history(&get_app(&cluster, &apps_ns, &name).await).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lua_degraded_resource_fails_the_sync_with_its_message() {
    let Some(cluster) = testbed("health_lua_degraded").await else {
        return;
    };
    install_lua();
    install_gizmo_crd(&cluster).await;
    let files = [
        ("app/gizmo.json", custom("Gizmo", "g2", "0")),
        ("app/after.json", configmap("after", "1")),
    ];

    // Degraded: the wave fails with the script's message; wave 1 never starts.
    let (apps_ns, dest, name) = setup(&cluster, "luadegraded", &files).await;
    let o = opts(Duration::from_secs(60));
    let app = get_app(&cluster, &apps_ns, &name).await;
    let run = sync_app(
        &cluster,
        &app,
        &o,
        InitiatedBy::user("alice"),
        SystemTime::now(),
    );
    let play = async {
        wait_message(&cluster, &apps_ns, &name, |m| m.contains("Gizmo/g2")).await;
        set_gizmo_status(
            &cluster,
            &dest,
            "g2",
            json!({"phase": "Broken", "reason": "disk full"}),
        )
        .await;
    };
    let (out, ()) = tokio::join!(run, play);
    let out = out.expect("sync");
    assert!(!out.succeeded());
    assert_eq!(
        out.message,
        format!(
            "one or more synchronization tasks completed unsuccessfully, reason: {GROUP}/Gizmo {dest}/g2: gizmo is broken: disk full"
        ),
    );
    assert!(
        get(&cluster, "", "ConfigMap", &dest, "after")
            .await
            .is_none()
    );

    // Never healthy: the sync fails after the wave timeout, saying what it waited for.
    let (apps_ns, dest, name) = setup(&cluster, "luatimeout", &files).await;
    let started = Instant::now();
    let out = sync(&cluster, &apps_ns, &name, &opts(Duration::from_secs(3))).await;
    assert!(!out.succeeded());
    assert!(started.elapsed() >= Duration::from_secs(3));
    assert_eq!(
        out.message,
        format!("timed out after 3s waiting for healthy state of {GROUP}/Gizmo/g2")
    );
    assert!(
        get(&cluster, "", "ConfigMap", &dest, "after")
            .await
            .is_none()
    );
}
