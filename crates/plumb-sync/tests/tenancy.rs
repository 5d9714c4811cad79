//! Projects and destinations on the test bed: an Application whose destination no cluster
//! Secret declares is applied nowhere and carries an `InvalidSpecError` condition; a project
//! refuses a ClusterRoleBinding it does not whitelist before anything of the app is written
//! (dry run too), a destination namespace it excludes, a repository it does not list; a
//! deny sync window holds automated syncs and lets a manual one through with `manualSync`;
//! a malformed cluster Secret is named in the condition; an Application outside the control
//! namespace needs its project's `sourceNamespaces`; and, from the API server's audit log
//! (`testbed/up.sh --audit`, `REQUIRE_K8S_AUDIT=1` to insist), that a refused operation sends no
//! write and no request for the app's resources under plumb's own identity.

mod common;

use common::objects::{app_project, deny_window_spec};
use common::support::{Audited, apply, audited_since, eventually, namespace};
use common::{app_testbed, application, get_app, git_repo};
use plumb_cluster::Cluster;
use plumb_sync::history::InitiatedBy;
use plumb_sync::request::SyncRequest;
use plumb_sync::run::{
    ReconcileState, RunOptions, reconcile_once, refresh_app, sync_app, sync_app_with,
};
use serde_json::{Value, json};
use std::time::{Duration, SystemTime};

fn opts() -> RunOptions {
    RunOptions {
        poll_interval: Duration::from_millis(100),
        wave_timeout: Duration::from_secs(60),
        ..RunOptions::default()
    }
}

fn to_json(v: &Value) -> String {
    serde_json::to_string_pretty(v).expect("json")
}

/// Waits until `appprojects.plumb.dev` is served.
async fn projects_served(cluster: &Cluster, ns: &str) {
    let served = eventually(Duration::from_secs(30), || async {
        cluster.discover().await.ok()?;
        cluster
            .get_object("plumb.dev", "AppProject", ns, "none")
            .await
            .ok()
            .map(|_| ())
    })
    .await;
    assert!(served.is_some(), "appprojects.plumb.dev is not served");
}

async fn project(cluster: &Cluster, ns: &str, name: &str, spec: Value) {
    apply(cluster, vec![app_project(name, ns, spec)]).await;
}

async fn exists(cluster: &Cluster, group: &str, kind: &str, ns: &str, name: &str) -> bool {
    cluster
        .get_object(group, kind, ns, name)
        .await
        .expect("get")
        .is_some()
}

fn condition(app: &Value) -> String {
    let c = &app["status"]["conditions"][0];
    format!(
        "{}: {}",
        c["type"].as_str().unwrap_or_default(),
        c["message"].as_str().unwrap_or_default()
    )
}

async fn put_app(cluster: &Cluster, mut app: Value) -> Value {
    if let Some(m) = app.as_object_mut() {
        m.remove("status");
    }
    if let Some(meta) = app.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in [
            "managedFields",
            "resourceVersion",
            "uid",
            "creationTimestamp",
            "generation",
        ] {
            meta.remove(f);
        }
    }
    apply(cluster, vec![app.clone()]).await;
    let ns = app["metadata"]["namespace"].as_str().expect("ns");
    let name = app["metadata"]["name"].as_str().expect("name");
    get_app(cluster, ns, name).await
}

#[tokio::test]
async fn an_unknown_destination_is_applied_nowhere_and_says_why() {
    let Some((cluster, apps, dest)) = app_testbed("tenancy-dest", "tdest").await else {
        return;
    };
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web"},
        "data": {"k": "v"}});
    let (repo, _) = git_repo("tenancy-dest", &[("app/cm.json", &to_json(&cm))]);
    let mut app = application("far", &apps, &repo, "app", &dest, json!({}));
    app["spec"]["destination"] =
        json!({"server": "https://prod-eu.example:6443", "namespace": dest});
    let app = put_app(&cluster, app).await;
    for dry_run in [true, false] {
        let request = SyncRequest {
            dry_run,
            ..SyncRequest::default()
        };
        let err = sync_app_with(
            &cluster,
            &app,
            &opts(),
            &request,
            InitiatedBy::user("t"),
            SystemTime::now(),
        )
        .await
        .expect_err("refused");
        assert!(
            err.to_string()
                .contains("cluster 'https://prod-eu.example:6443' has not been configured"),
            "{err}"
        );
    }
    assert!(!exists(&cluster, "", "ConfigMap", &dest, "web").await);
    let stored = get_app(&cluster, &apps, "far").await;
    assert_eq!(
        condition(&stored),
        "InvalidSpecError: application destination spec is invalid: cluster 'https://prod-eu.example:6443' has not been configured"
    );
    assert_eq!(stored["status"]["sync"]["status"], "Unknown");
    // `plumb app get` shows the condition (format_get is the CLI's; here the status).

    // A cluster Secret with malformed config: the condition names the Secret and the field.
    apply(
        &cluster,
        vec![json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "eu", "namespace": apps,
                "labels": {"argocd.argoproj.io/secret-type": "cluster"}},
            "stringData": {"name": "prod-eu", "server": "https://prod-eu.example:6443",
                "config": "{not json"}})],
    )
    .await;
    let mut by_name = stored.clone();
    by_name["spec"]["destination"] = json!({"name": "prod-eu", "namespace": dest});
    let by_name = put_app(&cluster, by_name).await;
    let err = sync_app(
        &cluster,
        &by_name,
        &opts(),
        InitiatedBy::user("t"),
        SystemTime::now(),
    )
    .await
    .expect_err("refused");
    let text = err.to_string();
    assert!(
        text.contains("there are no clusters with this name: prod-eu"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "cluster Secret {apps}/eu: data.config: invalid JSON"
        )),
        "{text}"
    );
    assert!(!exists(&cluster, "", "ConfigMap", &dest, "web").await);

    // The in-cluster destination by name syncs here and drops the condition.
    let mut here = get_app(&cluster, &apps, "far").await;
    here["spec"]["destination"] = json!({"name": "in-cluster", "namespace": dest});
    let here = put_app(&cluster, here).await;
    let out = sync_app(
        &cluster,
        &here,
        &opts(),
        InitiatedBy::user("t"),
        SystemTime::now(),
    )
    .await
    .expect("sync");
    assert!(out.succeeded(), "{}", out.message);
    assert!(exists(&cluster, "", "ConfigMap", &dest, "web").await);
    assert!(
        get_app(&cluster, &apps, "far").await["status"]
            .get("conditions")
            .is_none()
    );
}

#[tokio::test]
async fn a_project_refuses_before_any_write() {
    let Some((cluster, apps, dest)) = app_testbed("tenancy-project", "tproj").await else {
        return;
    };
    projects_served(&cluster, &apps).await;
    let crb_name = format!("{dest}-admin");
    let crb = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": crb_name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": dest}]});
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web"},
        "data": {"k": "v"}});
    let (repo, _) = git_repo(
        "tenancy-project",
        &[
            ("app/crb.json", &to_json(&crb)),
            ("app/cm.json", &to_json(&cm)),
        ],
    );
    project(&cluster, &apps, "team", json!({"sourceRepos": ["*"],
        "destinations": [{"server": "https://kubernetes.default.svc", "namespace": "!kube-system"}]}))
    .await;
    let mut app = application("grab", &apps, &repo, "app", &dest, json!({}));
    app["spec"]["project"] = json!("team");
    let app = put_app(&cluster, app).await;
    for dry_run in [true, false] {
        let request = SyncRequest {
            dry_run,
            ..SyncRequest::default()
        };
        let err = sync_app_with(
            &cluster,
            &app,
            &opts(),
            &request,
            InitiatedBy::user("t"),
            SystemTime::now(),
        )
        .await
        .expect_err("refused");
        assert!(
            err.to_string().contains(&format!(
                "resource rbac.authorization.k8s.io:ClusterRoleBinding {crb_name} is not permitted in project team: not in clusterResourceWhitelist"
            )),
            "{err}"
        );
    }
    assert!(
        !exists(
            &cluster,
            "rbac.authorization.k8s.io",
            "ClusterRoleBinding",
            "",
            &crb_name
        )
        .await
    );
    assert!(!exists(&cluster, "", "ConfigMap", &dest, "web").await);

    // kube-system excluded by the project's destinations.
    let mut system = application("sys", &apps, &repo, "app", "kube-system", json!({}));
    system["spec"]["project"] = json!("team");
    let system = put_app(&cluster, system).await;
    let err = sync_app(
        &cluster,
        &system,
        &opts(),
        InitiatedBy::user("t"),
        SystemTime::now(),
    )
    .await
    .expect_err("refused");
    assert!(
        err.to_string().contains(
            "namespace 'kube-system' do not match any of the allowed destinations in project 'team'"
        ),
        "{err}"
    );
    assert!(condition(&get_app(&cluster, &apps, "sys").await).starts_with("InvalidSpecError: "));

    // sourceRepos not matching.
    project(
        &cluster,
        &apps,
        "team",
        json!({"sourceRepos": ["https://git.example.com/*"],
        "destinations": [{"server": "*", "namespace": "*"}]}),
    )
    .await;
    let err = refresh_app(&cluster, &app, &opts(), SystemTime::now())
        .await
        .expect_err("refused");
    assert!(
        err.to_string()
            .contains("is not permitted in project 'team'"),
        "{err}"
    );

    // A project that does not exist; an invalid one (named object and field).
    let mut missing = get_app(&cluster, &apps, "grab").await;
    missing["spec"]["project"] = json!("nobody");
    let missing = put_app(&cluster, missing).await;
    let err = refresh_app(&cluster, &missing, &opts(), SystemTime::now())
        .await
        .expect_err("refused");
    assert!(
        err.to_string()
            .contains("Application referencing project nobody which does not exist"),
        "{err}"
    );
    project(
        &cluster,
        &apps,
        "team",
        json!({"sourceRepos": ["*"],
        "destinations": [{"server": "*", "namespace": "*"}],
        "syncWindows": [{"kind": "deny", "schedule": "not a cron", "duration": "1h"}]}),
    )
    .await;
    let err = refresh_app(&cluster, &app, &opts(), SystemTime::now())
        .await
        .expect_err("refused");
    assert!(
        err.to_string()
            .contains("AppProject team: spec.syncWindows[0].schedule"),
        "{err}"
    );
    assert!(!exists(&cluster, "", "ConfigMap", &dest, "web").await);
}

#[tokio::test]
async fn a_deny_window_holds_automated_syncs_and_manual_sync_lets_a_manual_one_through() {
    let Some((cluster, apps, dest)) = app_testbed("tenancy-window", "twin").await else {
        return;
    };
    projects_served(&cluster, &apps).await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web"},
        "data": {"k": "v"}});
    let (repo, _) = git_repo("tenancy-window", &[("app/cm.json", &to_json(&cm))]);
    let window = deny_window_spec;
    project(&cluster, &apps, "default", window(false)).await;
    let app = put_app(
        &cluster,
        application("held", &apps, &repo, "app", &dest, json!({"automated": {}})),
    )
    .await;
    let mut state = ReconcileState { options: opts() };
    let out = reconcile_once(&cluster, &app, SystemTime::now(), &mut state)
        .await
        .expect("reconcile");
    assert!(out.sync.is_none());
    assert!(
        out.blocked_by
            .as_deref()
            .is_some_and(|b| b.starts_with("blocked by sync window deny '* * * * *' for 1h")),
        "{:?}",
        out.blocked_by
    );
    let err = sync_app(
        &cluster,
        &get_app(&cluster, &apps, "held").await,
        &opts(),
        InitiatedBy::user("t"),
        SystemTime::now(),
    )
    .await
    .expect_err("blocked");
    assert!(
        err.to_string()
            .contains("Cannot sync: blocked by sync window"),
        "{err}"
    );
    assert!(!exists(&cluster, "", "ConfigMap", &dest, "web").await);
    project(&cluster, &apps, "default", window(true)).await;
    let out = sync_app(
        &cluster,
        &get_app(&cluster, &apps, "held").await,
        &opts(),
        InitiatedBy::user("t"),
        SystemTime::now(),
    )
    .await
    .expect("manual sync");
    assert!(out.succeeded(), "{}", out.message);
    assert!(exists(&cluster, "", "ConfigMap", &dest, "web").await);
}

#[tokio::test]
async fn an_application_outside_the_control_namespace_is_not_synced() {
    let Some((cluster, apps, dest)) = app_testbed("tenancy-ns", "tns").await else {
        return;
    };
    projects_served(&cluster, &apps).await;
    let control = namespace(&cluster, "tns-control", json!({})).await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web"},
        "data": {"k": "v"}});
    let (repo, _) = git_repo("tenancy-ns", &[("app/cm.json", &to_json(&cm))]);
    let app = put_app(
        &cluster,
        application(
            "stray",
            &apps,
            &repo,
            "app",
            &dest,
            json!({"automated": {}}),
        ),
    )
    .await;
    let mut state = ReconcileState {
        options: RunOptions {
            control_namespace: Some(control.clone()),
            ..opts()
        },
    };
    let err = reconcile_once(&cluster, &app, SystemTime::now(), &mut state)
        .await
        .expect_err("refused");
    assert!(
        err.to_string().contains(&format!(
            "application 'stray' in namespace '{apps}' is not allowed to use project default"
        )),
        "{err}"
    );
    assert!(!exists(&cluster, "", "ConfigMap", &dest, "web").await);
    // The project of the control namespace lists the namespace: served.
    project(
        &cluster,
        &control,
        "default",
        json!({"sourceRepos": ["*"], "sourceNamespaces": [apps],
        "destinations": [{"server": "*", "namespace": "*"}]}),
    )
    .await;
    let out = reconcile_once(
        &cluster,
        &get_app(&cluster, &apps, "stray").await,
        SystemTime::now(),
        &mut state,
    )
    .await
    .expect("reconcile");
    assert!(out.sync.is_some_and(|s| s.succeeded()));
    assert!(exists(&cluster, "", "ConfigMap", &dest, "web").await);
}

/// The proof of "refused before any request" from the API server itself: with the test bed's
/// audit log on (`testbed/up.sh --audit`), plumb runs under a ServiceAccount of its own, and
/// the log shows that a sync and a dry run refused for a source repository, a destination, a
/// sync window or a resource kind the project does not permit send no write (the Application's
/// own status, where the refusal is recorded, aside) and no request at all for the app's
/// resources — while the same app in a permissive project does send them (so the check can
/// fail). Skipped (passes) without an audit log unless `REQUIRE_K8S_AUDIT=1`.
#[tokio::test]
async fn the_audit_log_shows_no_request_for_a_refused_operation() {
    let Some((admin, apps, dest)) = app_testbed("tenancy-audit", "taud").await else {
        return;
    };
    let Some((log, _)) = common::support::audit_log_from_now() else {
        return;
    };
    projects_served(&admin, &apps).await;

    // plumb's own identity: a ServiceAccount bound to cluster-admin, so only the project
    // stands between an Application and the cluster.
    let sa = common::support::unique("plumb-audit");
    apply(
        &admin,
        vec![
            json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": sa, "namespace": apps}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": sa},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": apps}]}),
        ],
    )
    .await;
    let token = std::process::Command::new("kubectl")
        .args(["create", "token", &sa, "-n", &apps, "--duration=10m"])
        .output()
        .expect("kubectl create token");
    assert!(token.status.success(), "{token:?}");
    let token = String::from_utf8(token.stdout).expect("utf-8");
    let kc = std::process::Command::new("kubectl")
        .args(["config", "view", "--raw", "-o", "json"])
        .output()
        .expect("kubectl config view");
    let kc: Value = serde_json::from_slice(&kc.stdout).expect("kubeconfig JSON");
    let at = |p: &str| kc.pointer(p).and_then(Value::as_str).expect(p).to_string();
    let secret = plumb_core::clusters::Cluster::from_secret(&json!({
        "metadata": {"name": "self", "namespace": apps,
                     "labels": {"argocd.argoproj.io/secret-type": "cluster"}},
        "stringData": {"name": "self", "server": at("/clusters/0/cluster/server"),
            "config": json!({"bearerToken": token.trim(),
                "tlsClientConfig": {"caData": at("/clusters/0/cluster/certificate-authority-data")}}).to_string()},
    }))
    .expect("cluster Secret");
    let plumb = Cluster::connect_destination(&secret)
        .await
        .expect("plumb's identity");
    let user = format!("system:serviceaccount:{apps}:{sa}");

    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web"},
        "data": {"k": "v"}});
    let crb = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": format!("{dest}-admin")},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "nobody"}]});
    let (repo, _) = git_repo(
        "tenancy-audit",
        &[
            ("app/cm.json", &to_json(&cm)),
            ("crb/cm.json", &to_json(&cm)),
            ("crb/crb.json", &to_json(&crb)),
        ],
    );
    let everywhere = json!([{"server": "*", "namespace": "*"}]);
    let cases = [
        (
            "allowed",
            "app",
            json!({"sourceRepos": ["*"], "destinations": everywhere,
            "clusterResourceWhitelist": [{"group": "*", "kind": "*"}]}),
            true,
        ),
        (
            "norepo",
            "app",
            json!({"sourceRepos": ["https://git.example.com/*"],
            "destinations": everywhere}),
            false,
        ),
        (
            "nodest",
            "app",
            json!({"sourceRepos": ["*"],
            "destinations": [{"server": "*", "namespace": "elsewhere"}]}),
            false,
        ),
        (
            "window",
            "app",
            json!({"sourceRepos": ["*"], "destinations": everywhere,
            "syncWindows": [{"kind": "deny", "schedule": "* * * * *", "duration": "1h",
                "applications": ["*"]}]}),
            false,
        ),
        (
            "nocrb",
            "crb",
            json!({"sourceRepos": ["*"], "destinations": everywhere}),
            false,
        ),
    ];
    for (name, path, spec, permitted) in cases {
        project(&admin, &apps, name, spec).await;
        let mut app = application(name, &apps, &repo, path, &dest, json!({}));
        app["spec"]["project"] = json!(name);
        put_app(&admin, app).await;
        let from = std::fs::metadata(&log).expect("audit log").len();
        for dry_run in [true, false] {
            let request = SyncRequest {
                dry_run,
                ..SyncRequest::default()
            };
            let app = get_app(&admin, &apps, name).await;
            let result = sync_app_with(
                &plumb,
                &app,
                &opts(),
                &request,
                InitiatedBy::user("t"),
                SystemTime::now(),
            )
            .await;
            match (&result, permitted) {
                (Ok(out), true) => assert!(out.succeeded(), "{name}: {}", out.message),
                (Err(_), false) => {}
                (r, _) => panic!(
                    "{name} (dry run {dry_run}): {:?}",
                    r.as_ref().map(|o| &o.message)
                ),
            }
        }
        // A marker request after the operation: once it is in the log, so is everything the
        // operation sent before it.
        let marker = format!("audit-marker-{name}");
        let _ = plumb.get_object("", "ConfigMap", &apps, &marker).await;
        let events = common::support::wait_until(&format!("{marker} in the audit log"), || {
            let events = audited_since(&log, from);
            let seen = events.iter().any(|e| e.user == user && e.name == marker);
            async move { seen.then_some(events) }
        })
        .await;
        let mine: Vec<&Audited> = events.iter().filter(|e| e.user == user).collect();
        let on_targets: Vec<&&Audited> = mine
            .iter()
            .filter(|e| e.namespace == dest || e.resource == "clusterrolebindings")
            .collect();
        let writes: Vec<&&Audited> = mine
            .iter()
            .filter(|e| e.is_write() && e.resource != "applications")
            .collect();
        if permitted {
            let applied = |dry: bool| {
                on_targets.iter().any(|e| {
                    e.verb == "patch"
                        && e.resource == "configmaps"
                        && e.name == "web"
                        && e.uri.contains("dryRun=All") == dry
                })
            };
            assert!(applied(true) && applied(false), "{name}: {on_targets:#?}");
            eprintln!(
                "{name}: {} requests by plumb, {} on the app's resources, {} writes",
                mine.len(),
                on_targets.len(),
                writes.len()
            );
        } else {
            // Every refusal comes before any request for the app's resources: `nocrb` is
            // judged on the rendered objects, before its kinds are even listed.
            assert!(
                on_targets.is_empty(),
                "{name}: requests for the app's resources: {on_targets:#?}"
            );
            assert!(writes.is_empty(), "{name}: writes: {writes:#?}");
            let status_writes = mine
                .iter()
                .filter(|e| e.is_write() && e.resource == "applications")
                .count();
            eprintln!(
                "{name}: {} requests by plumb, none on the app's resources, no write but {status_writes} to the Application's status",
                mine.len()
            );
            assert!(
                mine.iter()
                    .all(|e| e.subresource == "status" || !e.is_write())
            );
        }
    }
    assert!(
        !exists(
            &admin,
            "rbac.authorization.k8s.io",
            "ClusterRoleBinding",
            "",
            &format!("{dest}-admin")
        )
        .await
    );
    let binding = plumb_core::ResourceKey {
        group: "rbac.authorization.k8s.io".into(),
        kind: "ClusterRoleBinding".into(),
        namespace: String::new(),
        name: sa,
    };
    admin
        .delete_object(&binding, plumb_cluster::Propagation::Background)
        .await
        .ok();
}
