//! The controller with namespace-scoped rights only (deploy/namespaced/): the real `plumb
//! controller` process, authenticated as a ServiceAccount (a TokenRequest token) bound only to
//! Roles — in its control namespace and in one destination namespace — syncs an app there. What
//! needs cluster-wide rights fails clearly: an app declaring a ClusterRole fails its sync naming
//! the resource, and the controller run without `--namespaced` exits 2 with one line saying what
//! it could not list, never a panic. `plumb doctor NAMESPACE/NAME --cluster` works with the same
//! rights.

mod common;
#[path = "common/testbed.rs"]
mod fixture;
#[path = "../../plumb-cluster/tests/support/mod.rs"]
mod support;

use fixture::{deploy, install_application_crd};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{apply, may, namespace, sa_token, testbed, testbed_dir, unique, wait_until};

/// `obj` moved to `ns` (and its ServiceAccount subjects to `sa_ns`).
fn moved(mut obj: Value, ns: &str, sa_ns: &str) -> Value {
    obj["metadata"]["namespace"] = json!(ns);
    if let Some(subjects) = obj.get_mut("subjects").and_then(Value::as_array_mut) {
        for s in subjects {
            s["namespace"] = json!(sa_ns);
        }
    }
    obj
}

/// A kubeconfig for the test bed that authenticates with `token`.
fn token_kubeconfig(dir: &Path, token: &str) -> PathBuf {
    let admin =
        std::fs::read_to_string(testbed_dir().join("admin.kubeconfig")).expect("kubeconfig");
    let kc: Value = serde_saphyr::from_str(&admin).expect("kubeconfig YAML");
    let cluster = &kc["clusters"][0]["cluster"];
    let config = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "testbed", "cluster": cluster}],
        "users": [{"name": "plumb", "user": {"token": token}}],
        "contexts": [{"name": "plumb", "context": {"cluster": "testbed", "user": "plumb"}}],
        "current-context": "plumb",
    });
    let path = dir.join("kubeconfig");
    std::fs::write(&path, serde_json::to_string(&config).expect("json")).expect("write kubeconfig");
    path
}

struct Run {
    code: Option<i32>,
    stderr: String,
}

/// Runs `plumb args` with `kubeconfig`, bounded in time, and checks it never panics.
fn plumb(kubeconfig: &Path, args: &[&str]) -> Run {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("plumb starts");
    let mut err_pipe = child.stderr.take().expect("stderr");
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err_pipe, &mut s).ok();
        s
    });
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(180) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("plumb {args:?} ran longer than 180 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let run = Run {
        code: status.code(),
        stderr: err.join().unwrap_or_default(),
    };
    assert!(
        !run.stderr.contains("panicked"),
        "plumb {args:?} panicked:\n{}",
        run.stderr
    );
    run
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_scoped_controller_syncs_its_namespace() {
    let Some(admin) = testbed("a_namespace_scoped_controller_syncs_its_namespace").await else {
        return;
    };
    install_application_crd(&admin).await;
    let control = namespace(&admin, "lp-control", json!({})).await;
    let dest = namespace(&admin, "lp-dest", json!({})).await;
    // deploy/namespaced/ as shipped, moved to this test's namespaces.
    let control_objects: Vec<Value> = deploy("namespaced/control.yaml")
        .into_iter()
        .filter(|o| o["kind"] != "Namespace")
        .map(|o| moved(o, &control, &control))
        .collect();
    assert_eq!(
        control_objects.len(),
        3,
        "ServiceAccount, Role, RoleBinding"
    );
    apply(&admin, control_objects).await;
    let dest_objects: Vec<Value> = deploy("namespaced/destination.yaml")
        .into_iter()
        .map(|o| moved(o, &dest, &control))
        .collect();
    assert_eq!(dest_objects.len(), 2, "Role, RoleBinding");
    apply(&admin, dest_objects).await;
    let sa = "plumb-controller";
    let user = format!("system:serviceaccount:{control}:{sa}");

    let token = sa_token(&admin, &control, sa).await;
    let scratch = std::env::temp_dir().join(unique("plumb-lp"));
    std::fs::create_dir_all(scratch.join("repo/good")).expect("mkdir");
    std::fs::create_dir_all(scratch.join("repo/cluster-wide")).expect("mkdir");
    let kubeconfig = token_kubeconfig(&scratch, &token);

    // The Roles are effective (the authorizer's cache) before the controller starts: the
    // ServiceAccount may patch in the destination, and may not list cluster-wide.
    for (verb, ns, allowed) in [("patch", dest.as_str(), true), ("list", "", false)] {
        wait_until(&format!("{user} {verb} in {ns:?} = {allowed}"), || async {
            (may(&admin, &user, verb, "", "configmaps", ns).await? == allowed).then_some(())
        })
        .await;
    }

    std::fs::write(
        scratch.join("repo/good/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  k: v\n",
    )
    .expect("write");
    let role_name = unique("lp-clusterrole");
    std::fs::write(
        scratch.join("repo/cluster-wide/role.yaml"),
        format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {role_name}\nrules: []\n"
        ),
    )
    .expect("write");
    let app = |name: &str, path: &str| {
        json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
            "metadata": {"name": name, "namespace": control},
            "spec": {"project": "default",
                "source": {"repoURL": format!("file://{}", scratch.join("repo").display()),
                           "path": path, "targetRevision": "HEAD"},
                "destination": {"server": "https://kubernetes.default.svc", "namespace": dest},
                "syncPolicy": {"automated": {"prune": true}}}})
    };
    apply(
        &admin,
        vec![app("good", "good"), app("cluster-wide", "cluster-wide")],
    )
    .await;

    let control_flag = format!("--app-namespace={control}");
    let lease_flag = format!("--lease-namespace={control}");
    let run = plumb(
        &kubeconfig,
        &[
            "controller",
            "--once",
            "--namespaced",
            &control_flag,
            &lease_flag,
        ],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);

    // The app in the namespace it may write: synced, its ConfigMap there, one history entry.
    let cm = admin
        .get_object("", "ConfigMap", &dest, "settings")
        .await
        .expect("get")
        .expect("the ConfigMap was applied");
    assert_eq!(cm["data"]["k"], "v");
    let good = admin
        .get_application(&control, "good")
        .await
        .expect("get")
        .expect("app");
    assert_eq!(good["status"]["sync"]["status"], "Synced", "{}", run.stderr);
    assert_eq!(good["status"]["history"].as_array().map(Vec::len), Some(1));
    // Its Events, written with the namespaced Role's rights (`--once` flushes them first).
    let events = admin
        .list_live(
            &[plumb_core::GroupKind::new("", "Event")],
            Some(std::slice::from_ref(&control)),
            None,
        )
        .await
        .expect("list events");
    let reasons: Vec<&str> = events
        .iter()
        .filter(|e| e.pointer("/involvedObject/name").and_then(Value::as_str) == Some("good"))
        .filter_map(|e| e["reason"].as_str())
        .collect();
    for reason in ["OperationStarted", "OperationCompleted", "ResourceUpdated"] {
        assert!(reasons.contains(&reason), "{reason} in {reasons:?}");
    }
    assert!(!run.stderr.contains("eventError"), "{}", run.stderr);

    // The app that declares a cluster-scoped resource: refused by the API server, named, and
    // nothing created; the controller went on (the other app synced) and exited 0.
    assert!(
        admin
            .get_object("rbac.authorization.k8s.io", "ClusterRole", "", &role_name)
            .await
            .expect("get")
            .is_none()
    );
    let line = run
        .stderr
        .lines()
        .find(|l| l.contains("\"app\":") && l.contains("cluster-wide"))
        .unwrap_or_else(|| panic!("no log line for the cluster-wide app:\n{}", run.stderr));
    let stored = admin
        .get_application(&control, "cluster-wide")
        .await
        .expect("get")
        .expect("app");
    let said = format!("{line}\n{}", stored["status"]);
    assert!(
        said.contains("forbidden") && said.contains("clusterroles"),
        "the refusal names the resource: {said}"
    );

    // The doctor with the same rights: NAMESPACE/NAME is looked up in that namespace only
    // (what it may not list, e.g. webhooks, is skipped), and the synced app has no finding.
    let good_app = format!("{control}/good");
    let run = plumb(&kubeconfig, &["doctor", &good_app, "--cluster"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    // A bare name needs a list of every namespace, which it may not: said, not "not found".
    let run = plumb(&kubeconfig, &["doctor", "good", "--cluster"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    let last = run.stderr.lines().last().unwrap_or("");
    assert!(
        last.contains("forbidden") && last.contains("NAMESPACE/good"),
        "{}",
        run.stderr
    );

    // Without --namespaced, the cluster-wide watches cannot start: one line, exit 2.
    let run = plumb(
        &kubeconfig,
        &["controller", "--once", &control_flag, &lease_flag],
    );
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    let last = run.stderr.lines().last().unwrap_or("");
    assert!(
        last.starts_with("error: ") && last.contains("--namespaced"),
        "{}",
        run.stderr
    );

    let _ = std::fs::remove_dir_all(&scratch);
}

/// `plumb controller --shards auto` with rights on its Applications but none on Leases: one
/// line naming the permission missing, exit 2, before it reconciles anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharding_without_lease_rights_names_the_permission() {
    let Some(admin) = testbed("sharding_without_lease_rights_names_the_permission").await else {
        return;
    };
    install_application_crd(&admin).await;
    let ns = namespace(&admin, "lp-shard", json!({})).await;
    let sa = "no-leases";
    apply(
        &admin,
        vec![
            json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": sa, "namespace": ns}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": sa, "namespace": ns},
                "rules": [{"apiGroups": ["plumb.dev"], "resources": ["*"],
                    "verbs": ["get", "list", "watch", "patch", "update"]},
                    {"apiGroups": [""], "resources": ["*"], "verbs": ["get", "list", "watch"]}]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": sa, "namespace": ns},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": sa},
                "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}]}),
        ],
    )
    .await;
    let user = format!("system:serviceaccount:{ns}:{sa}");
    wait_until(&format!("{user} may list Applications in {ns}"), || async {
        may(&admin, &user, "list", "plumb.dev", "applications", &ns)
            .await?
            .then_some(())
    })
    .await;
    let scratch = std::env::temp_dir().join(unique("plumb-lp-shard"));
    std::fs::create_dir_all(&scratch).expect("mkdir");
    let kubeconfig = token_kubeconfig(&scratch, &sa_token(&admin, &ns, sa).await);
    let run = plumb(
        &kubeconfig,
        &[
            "controller",
            "--namespaced",
            "--app-namespace",
            &ns,
            "--lease-namespace",
            &ns,
            "--shards",
            "auto",
            "--shard-id",
            "a",
        ],
    );
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("error"))
        .collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].contains("--shards auto: cannot get Lease")
            && lines[0].contains("leases.coordination.k8s.io"),
        "{}",
        run.stderr
    );
    let _ = std::fs::remove_dir_all(&scratch);
}
