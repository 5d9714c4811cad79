//! Errors: unreachable servers, bad kubeconfigs, and RBAC refusals, each one
//! clear line.

mod support;

use plumb_cluster::{Cluster, ClusterError, ConnectOptions};
use plumb_core::GroupKind;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use support::{namespace, testbed, unique};

/// A scratch directory for kubeconfig files.
fn scratch_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(unique("plumb-cluster-test"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A kubeconfig (as JSON, which is YAML) with one context `ctx` for `server`.
fn kubeconfig(server: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "not-a-real-token"}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx"
    })
}

fn write(path: &PathBuf, value: &Value) {
    std::fs::write(path, serde_json::to_string_pretty(value).unwrap()).unwrap();
}

#[tokio::test]
async fn unreachable_server_fails_fast_and_names_the_server() {
    let path = scratch_dir().join("unreachable.kubeconfig");
    write(&path, &kubeconfig("https://127.0.0.1:1"));
    let started = Instant::now();
    let err = Cluster::connect(&ConnectOptions {
        kubeconfig: Some(path.clone()),
        context: None,
    })
    .await
    .unwrap_err();
    let took = started.elapsed();
    eprintln!("unreachable: {err} (after {took:?})");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    match &err {
        ClusterError::Unreachable { server, reason } => {
            assert_eq!(server, "https://127.0.0.1:1");
            assert!(!reason.is_empty());
        }
        other => panic!("expected Unreachable, got {other:?}"),
    }
    assert!(!err.to_string().contains('\n'));
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[tokio::test]
async fn silent_server_fails_within_ten_seconds() {
    // A socket that is listened on but never accepted: TCP connects (the
    // kernel's backlog), the TLS handshake never gets an answer.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let server = format!("https://{}", silent.local_addr().unwrap());
    let path = scratch_dir().join("silent.kubeconfig");
    write(&path, &kubeconfig(&server));
    let started = Instant::now();
    let err = Cluster::connect(&ConnectOptions {
        kubeconfig: Some(path.clone()),
        context: None,
    })
    .await
    .unwrap_err();
    let took = started.elapsed();
    eprintln!("silent: {err} (after {took:?})");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(
        matches!(&err, ClusterError::Unreachable { server: s, .. } if s == &server),
        "{err:?}"
    );
    drop(silent);
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[tokio::test]
async fn kubeconfig_errors_name_the_file() {
    let dir = scratch_dir();
    // Missing file.
    let missing = dir.join("missing.kubeconfig");
    let err = Cluster::connect(&ConnectOptions {
        kubeconfig: Some(missing.clone()),
        context: None,
    })
    .await
    .unwrap_err();
    assert!(
        matches!(&err, ClusterError::Kubeconfig { file, .. } if file == &missing.display().to_string()),
        "{err:?}"
    );
    assert!(err.to_string().contains("missing.kubeconfig"), "{err}");

    // Not YAML.
    let garbage = dir.join("garbage.kubeconfig");
    std::fs::write(&garbage, "clusters: [\n  - {name: c, cluster: {server: :::").unwrap();
    let err = Cluster::connect(&ConnectOptions {
        kubeconfig: Some(garbage.clone()),
        context: None,
    })
    .await
    .unwrap_err();
    assert!(matches!(err, ClusterError::Kubeconfig { .. }), "{err:?}");
    eprintln!("{err}");
    assert!(err.to_string().contains("garbage.kubeconfig"), "{err}");
    assert!(!err.to_string().contains('\n'), "{err}");

    // A context that does not exist.
    let good = dir.join("good.kubeconfig");
    write(&good, &kubeconfig("https://127.0.0.1:1"));
    let err = Cluster::connect(&ConnectOptions {
        kubeconfig: Some(good.clone()),
        context: Some("nope".into()),
    })
    .await
    .unwrap_err();
    assert!(matches!(err, ClusterError::Kubeconfig { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("good.kubeconfig") && text.contains("\"nope\""),
        "{text}"
    );
    eprintln!("{text}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// The test bed's admin kubeconfig, impersonating a user no RBAC rule names
/// (kubectl's `--as`; the admin is in system:masters, so it may impersonate).
fn nobody_kubeconfig(user: &str) -> PathBuf {
    let admin = std::env::var("KUBECONFIG").expect("KUBECONFIG");
    let text = std::fs::read_to_string(&admin).unwrap();
    let mut config: Value = serde_saphyr::from_str(&text).unwrap();
    for u in config["users"].as_array_mut().unwrap() {
        u["user"]["as"] = json!(user);
    }
    let path = scratch_dir().join("nobody.kubeconfig");
    write(&path, &config);
    path
}

fn remove_scratch(kubeconfig: &std::path::Path) {
    std::fs::remove_dir_all(kubeconfig.parent().unwrap()).unwrap();
}

#[tokio::test]
async fn forbidden_names_verb_resource_and_namespace() {
    let Some(admin) = testbed("forbidden").await else {
        return;
    };
    let ns = namespace(&admin, "forbidden", json!({})).await;
    let user = unique("nobody");
    let nobody = nobody_kubeconfig(&user);
    let cluster = Cluster::connect(&ConnectOptions {
        kubeconfig: Some(nobody.clone()),
        context: None,
    })
    .await
    .expect("/version is public: connecting works without RBAC");
    remove_scratch(&nobody);

    let err = cluster
        .list_live(
            &[GroupKind::new("", "ConfigMap")],
            Some(std::slice::from_ref(&ns)),
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ClusterError::Forbidden {
            user: Some(user.clone()),
            verb: "list".into(),
            resource: "configmaps".into(),
            namespace: ns.clone(),
        }
    );
    eprintln!("{err}");

    let err = cluster
        .list_live(&[GroupKind::new("", "Namespace")], None, None)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ClusterError::Forbidden { verb, resource, namespace, .. }
            if verb == "list" && resource == "namespaces" && namespace.is_empty()),
        "{err:?}"
    );
    assert!(err.to_string().contains("at cluster scope"), "{err}");

    let results = cluster
        .dry_run_apply(
            vec![support::deployment(&ns, "web", "Always")],
            "plumb",
            false,
        )
        .await;
    match &results[0] {
        Err(ClusterError::Forbidden {
            verb,
            resource,
            namespace,
            ..
        }) => {
            assert_eq!(verb, "patch");
            assert_eq!(resource, "deployments.apps");
            assert_eq!(namespace, &ns);
        }
        other => panic!("expected Forbidden, got {other:?}"),
    }
}

#[tokio::test]
async fn live_for_works_with_rbac_limited_to_the_apps_namespace() {
    let Some(admin) = testbed("namespace_rbac").await else {
        return;
    };
    let ns = namespace(&admin, "rbac", json!({})).await;
    let user = unique("ns-reader");
    let app = unique("app");
    support::apply(
        &admin,
        vec![
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "read-configmaps", "namespace": ns},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "read-configmaps", "namespace": ns},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read-configmaps"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}),
            support::configmap(&ns, "desired", json!({})),
            support::configmap(&ns, "extra", json!({plumb_core::INSTANCE_LABEL: app})),
        ],
    )
    .await;
    let reader = nobody_kubeconfig(&user);
    let cluster = Cluster::connect(&ConnectOptions {
        kubeconfig: Some(reader.clone()),
        context: None,
    })
    .await
    .unwrap();
    remove_scratch(&reader);

    // The namespace LIST is allowed, the cluster-wide extras LIST is not: the
    // latter is skipped, the result is still complete for the namespace.
    // (RBAC changes reach the authorizer's cache quickly, but not instantly.)
    let desired = vec![support::configmap(&ns, "desired", json!({}))];
    let live = support::eventually(support::DEADLINE, || async {
        cluster
            .live_for(&desired, Some(&app), plumb_core::INSTANCE_LABEL)
            .await
            .ok()
    })
    .await
    .expect("live_for kept failing with namespace-only RBAC");
    assert_eq!(support::names(&live), ["desired", "extra"]);
}
