//! `deploy/` on the test bed: the CRD is Established, the controller's RBAC allows what a
//! sync needs (and not more), the Deployment is accepted, and an Argo CD Application converted
//! by changing its apiVersion is accepted, with a patchable status subresource.

mod common;

use common::support::{apply, namespace, testbed, wait_until};
use common::{deploy_objects, install_crd};
use serde_json::{Value, json};

/// Whether the controller's ServiceAccount may do `verb` on `resource` (SubjectAccessReview).
async fn allowed(
    cluster: &plumb_cluster::Cluster,
    verb: &str,
    group: &str,
    resource: &str,
    subresource: &str,
) -> bool {
    let review = json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": "system:serviceaccount:plumb-system:plumb-controller",
            "groups": ["system:serviceaccounts", "system:serviceaccounts:plumb-system", "system:authenticated"],
            "resourceAttributes": {
                "verb": verb, "group": group, "resource": resource,
                "subresource": subresource, "namespace": "somewhere"
            }
        }
    });
    let answer = cluster
        .create_object(&review, "plumb-test")
        .await
        .expect("SubjectAccessReview");
    answer.pointer("/status/allowed") == Some(&Value::Bool(true))
}

/// `kubectl apply --server-side --dry-run=server ARGS…` against the test bed must succeed
/// (skipped, saying so, without kubectl unless `REQUIRE_KUBECTL=1`).
fn kubectl_dry_run(args: &[&str], target: std::path::PathBuf) {
    let kubeconfig = std::env::var("KUBECONFIG").expect("KUBECONFIG");
    match std::process::Command::new("kubectl")
        .args(["apply", "--server-side", "--dry-run=server"])
        .args(args)
        .arg(&target)
        .env("KUBECONFIG", kubeconfig)
        .output()
    {
        Ok(out) => assert!(
            out.status.success(),
            "kubectl apply --server-side --dry-run=server {args:?} {}: {}",
            target.display(),
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) if std::env::var("REQUIRE_KUBECTL").as_deref() != Ok("1") => {
            eprintln!("SKIP kubectl dry run: {e}")
        }
        Err(e) => panic!("kubectl: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deploy_manifests_install_and_accept_applications() {
    let Some(cluster) = testbed("deploy_manifests").await else {
        return;
    };
    install_crd(&cluster).await;
    let rbac = apply(&cluster, deploy_objects("rbac.yaml")).await;
    assert_eq!(
        rbac.len(),
        6,
        "namespace, service account, cluster role and binding, cluster-Secret role and binding"
    );
    let controller = apply(&cluster, deploy_objects("controller.yaml")).await;
    assert_eq!(controller[0]["spec"]["replicas"], 2);
    assert_eq!(
        controller[0]["spec"]["template"]["spec"]["serviceAccountName"],
        "plumb-controller"
    );
    let container = &controller[0]["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["args"],
        json!([
            "controller",
            "--listen=0.0.0.0:8082",
            "--plugins=/etc/plumb/plugins"
        ])
    );
    // Config management plugins: the optional ConfigMap `plumb-plugins`, mounted read-only
    // where --plugins reads.
    let pod = &controller[0]["spec"]["template"]["spec"];
    let volume = pod["volumes"]
        .as_array()
        .and_then(|v| v.iter().find(|v| v["name"] == "plugins"))
        .expect("a plugins volume");
    assert_eq!(
        volume["configMap"],
        json!({"name": "plumb-plugins", "optional": true, "defaultMode": 420})
    );
    let mount = container["volumeMounts"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["name"] == "plugins"))
        .expect("a plugins mount");
    assert_eq!(mount["mountPath"], "/etc/plumb/plugins");
    assert_eq!(mount["readOnly"], true);
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["port"], "metrics");
    assert_eq!(container["ports"][0]["containerPort"], 8082);

    // Least privilege, as the API server's authorizer sees it.
    for (verb, group, resource, sub) in [
        ("list", "apps", "deployments", ""),
        ("watch", "", "secrets", ""),
        ("patch", "apps", "deployments", ""),
        ("update", "apps", "deployments", ""),
        ("delete", "", "configmaps", ""),
        ("create", "", "namespaces", ""),
        ("patch", "plumb.dev", "applications", "status"),
        ("list", "plumb.dev", "applications", ""),
        ("create", "coordination.k8s.io", "leases", ""),
        ("update", "coordination.k8s.io", "leases", ""),
    ] {
        // New RBAC objects reach the authorizer's cache quickly, but not at once.
        wait_until(
            &format!("the controller being allowed to {verb} {resource}/{sub} in {group:?}"),
            || async {
                allowed(&cluster, verb, group, resource, sub)
                    .await
                    .then_some(())
            },
        )
        .await;
    }
    for (verb, group, resource) in [
        ("impersonate", "", "users"),
        ("escalate", "rbac.authorization.k8s.io", "clusterroles"),
        ("bind", "rbac.authorization.k8s.io", "clusterroles"),
        ("deletecollection", "", "configmaps"),
    ] {
        assert!(
            !allowed(&cluster, verb, group, resource, "").await,
            "the controller must not be allowed to {verb} {resource}"
        );
    }

    // An Argo CD Application (the shipped example), converted by changing its apiVersion.
    let ns = namespace(&cluster, "deploy-apps", json!({})).await;
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/payments/app.yaml");
    let mut app = plumb_render::load_file(&path)
        .expect("example app")
        .remove(0)
        .object;
    assert_eq!(app["apiVersion"], "argoproj.io/v1alpha1");
    app["apiVersion"] = json!("plumb.dev/v1alpha1");
    app["metadata"]["namespace"] = json!(ns);
    let stored = apply(&cluster, vec![app.clone()]).await.remove(0);
    // Everything Argo CD's spec says survives (no field pruned by the structural schema).
    assert_eq!(stored["spec"], app["spec"]);

    let status = json!({"status": {
        "sync": {"status": "OutOfSync", "revision": "b5e2be1", "comparedTo": {"source": app["spec"]["source"]}},
        "health": {"status": "Healthy"},
        "history": [{"id": 0, "revision": "b5e2be1", "deployedAt": "2026-09-22T19:57:06Z",
                     "source": app["spec"]["source"], "initiatedBy": {"automated": true}}],
        "operationState": {"phase": "Succeeded", "message": "successfully synced (all tasks run)"}
    }});
    let patched = cluster
        .patch_application_status(&ns, "payments-prod", &status)
        .await
        .expect("status patch");
    assert_eq!(patched["status"]["sync"]["status"], "OutOfSync");
    assert_eq!(patched["status"]["history"][0]["revision"], "b5e2be1");
    // The status subresource does not change the spec, and vice versa.
    let spec_patch =
        json!({"spec": {"revisionHistoryLimit": 3}, "status": {"health": {"status": "Degraded"}}});
    let patched = cluster
        .patch_application(&ns, "payments-prod", &spec_patch)
        .await
        .expect("spec patch");
    assert_eq!(patched["spec"]["revisionHistoryLimit"], 3);
    assert_eq!(patched["status"]["health"]["status"], "Healthy");

    let listed = cluster.list_applications(Some(&ns)).await.expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["kind"], "Application");

    // A spec the schema refuses: destination missing, a wrong type.
    let mut bad = app.clone();
    bad["metadata"]["name"] = json!("bad");
    bad["spec"]["syncPolicy"]["automated"]["prune"] = json!("yes");
    let refused = cluster.apply(vec![bad], "plumb-test", true).await.remove(0);
    let message = refused.expect_err("schema validation").to_string();
    assert!(message.contains("prune"), "{message}");

    // Clean up what is not namespaced to the test (the controller Deployment stays harmless:
    // no kubelet runs it), and the namespace.
    let _ = cluster
        .delete_object(
            &plumb_core::ResourceKey {
                group: String::new(),
                kind: "Namespace".into(),
                namespace: String::new(),
                name: ns,
            },
            plumb_cluster::Propagation::Background,
        )
        .await;
}

/// `deploy/install.yaml` is what `deploy/gen-install.sh` makes of crd.yaml, rbac.yaml and
/// controller.yaml (one source: edit the pieces, run the script).
#[test]
fn install_manifest_is_generated_from_its_pieces() {
    let out = std::process::Command::new("bash")
        .arg(common::deploy_dir().join("gen-install.sh"))
        .arg("--check")
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let install = deploy_objects("install.yaml");
    let pieces: Vec<Value> = ["crd.yaml", "rbac.yaml", "controller.yaml"]
        .iter()
        .flat_map(|f| deploy_objects(f))
        .collect();
    assert_eq!(install, pieces);
    let kinds: Vec<&str> = install
        .iter()
        .map(|o| o["kind"].as_str().unwrap_or(""))
        .collect();
    for kind in [
        "CustomResourceDefinition",
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Deployment",
    ] {
        assert!(
            kinds.contains(&kind),
            "install.yaml lacks a {kind}: {kinds:?}"
        );
    }
}

/// The controller's image is `localhost/plumb:<workspace version>` (the tag policy the book's
/// docs/src/operations/install.md and deploy/controller.yaml state), runs as a non-root user on
/// a read-only root filesystem.
#[test]
fn controller_image_is_tagged_with_the_workspace_version() {
    let deployment = deploy_objects("controller.yaml").remove(0);
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    assert_eq!(
        container["image"],
        format!("localhost/plumb:{}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    // The Containerfile's user is the one the Deployment runs as.
    let containerfile = std::fs::read_to_string(common::deploy_dir().join("../Containerfile"))
        .expect("Containerfile");
    let uid = pod["securityContext"]["runAsUser"].to_string();
    assert!(
        containerfile.contains(&format!("USER {uid}:{uid}")),
        "the Containerfile runs as {uid}"
    );
}

/// The kustomize base renders the same objects as install.yaml (kubectl's kustomize).
#[test]
fn kustomize_base_renders_the_install_manifest() {
    let out = match std::process::Command::new("kubectl")
        .arg("kustomize")
        .arg(common::deploy_dir())
        .output()
    {
        Ok(out) => out,
        Err(e) if std::env::var("REQUIRE_KUBECTL").as_deref() != Ok("1") => {
            eprintln!("SKIP kustomize_base_renders_the_install_manifest: kubectl: {e}");
            return;
        }
        Err(e) => panic!("kubectl: {e}"),
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rendered: Vec<Value> = plumb_render::parse_str(
        &String::from_utf8_lossy(&out.stdout),
        std::path::Path::new("kustomize-output.yaml"),
    )
    .expect("kustomize output")
    .into_iter()
    .map(|m| m.object)
    .collect();
    let key = |o: &Value| {
        format!(
            "{}/{}/{}",
            o["kind"].as_str().unwrap_or(""),
            o["metadata"]["namespace"].as_str().unwrap_or(""),
            o["metadata"]["name"].as_str().unwrap_or("")
        )
    };
    let mut want = deploy_objects("install.yaml");
    let mut got = rendered;
    want.sort_by_key(key);
    got.sort_by_key(key);
    assert_eq!(got, want);
}

/// `deploy/install.yaml` as users apply it, as a server-side dry run on the test bed: every
/// object is accepted (schema, RBAC objects, the Deployment's pod spec).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_manifest_passes_a_server_side_dry_run() {
    let Some(cluster) = testbed("install_manifest_dry_run").await else {
        return;
    };
    // A dry-run Namespace is not stored, so the objects in it would be refused for a missing
    // namespace: the namespace exists for real first (as `kubectl apply` creates it first).
    let objects = deploy_objects("install.yaml");
    let ns: Vec<Value> = objects
        .iter()
        .filter(|o| o["kind"] == "Namespace")
        .cloned()
        .collect();
    assert_eq!(ns.len(), 1);
    apply(&cluster, ns).await;
    let results = cluster
        .dry_run_apply(objects.clone(), "plumb-install", true)
        .await;
    assert_eq!(results.len(), objects.len());
    for (obj, result) in objects.iter().zip(results) {
        let stored = result.unwrap_or_else(|e| {
            panic!(
                "{} {}: refused by the server-side dry run: {e}",
                obj["kind"], obj["metadata"]["name"]
            )
        });
        assert_eq!(stored["metadata"]["name"], obj["metadata"]["name"]);
    }
    // kubectl, as the book says to install it (docs/src/operations/install.md).
    kubectl_dry_run(&["-f"], common::deploy_dir().join("install.yaml"));
}

/// `deploy/argocd/` (plumb serving Argo CD's `argoproj.io` Applications): no plumb CRD, the
/// controller with `--api-group=argoproj.io`, rights on Argo CD's group and the Secrets of
/// `argocd`; accepted by a server-side dry run of `kubectl apply -k`, as the book says to
/// install it (docs/src/operations/argocd-mode.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn argocd_mode_manifest_passes_a_server_side_dry_run() {
    let objects = deploy_objects("argocd/install.yaml");
    let kinds: Vec<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
    assert!(!kinds.contains(&"CustomResourceDefinition"), "{kinds:?}");
    let controller = objects
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .expect("the controller");
    let args = &controller["spec"]["template"]["spec"]["containers"][0]["args"];
    assert!(
        args.as_array()
            .is_some_and(|a| a.iter().any(|x| x == "--api-group=argoproj.io")),
        "{args}"
    );
    assert!(objects.iter().any(|o| o["kind"] == "ClusterRole"
        && o["rules"].as_array().is_some_and(|r| r.iter().any(|rule| {
            rule["apiGroups"][0] == "argoproj.io" && rule["resources"][1] == "applications/status"
        }))));
    let Some(cluster) = testbed("argocd_mode_manifest_dry_run").await else {
        return;
    };
    let ns = ["plumb-system", "argocd"]
        .map(|n| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}));
    apply(&cluster, ns.to_vec()).await;
    // Forced: the shared test bed may hold plumb's own install (another test's), whose
    // controller args this mode changes; a dry run only checks that the server accepts it.
    kubectl_dry_run(
        &["--force-conflicts", "-k"],
        common::deploy_dir().join("argocd"),
    );
}

/// `deploy/sharded/` (the controller sharded across replicas): a StatefulSet of 3 replicas,
/// each with `--shards=auto` and its pod name as member id, the CRDs and RBAC of `deploy/`
/// (Lease rights included), accepted by a server-side dry run of `kubectl apply -k`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_manifest_passes_a_server_side_dry_run() {
    let statefulset = deploy_objects("sharded/install.yaml")
        .into_iter()
        .find(|o| o["kind"] == "StatefulSet")
        .expect("the StatefulSet");
    assert_eq!(statefulset["spec"]["replicas"], 3);
    let args = &statefulset["spec"]["template"]["spec"]["containers"][0]["args"];
    for want in ["--shards=auto", "--shard-id=$(POD_NAME)"] {
        assert!(
            args.as_array().is_some_and(|a| a.iter().any(|x| x == want)),
            "{want}: {args}"
        );
    }
    let Some(cluster) = testbed("sharded_manifest_dry_run").await else {
        return;
    };
    install_crd(&cluster).await;
    apply(&cluster, deploy_objects("rbac.yaml")).await;
    for verb in ["get", "list", "create", "update"] {
        assert!(
            allowed(&cluster, verb, "coordination.k8s.io", "leases", "").await,
            "the controller may not {verb} Leases"
        );
    }
    kubectl_dry_run(
        &["--force-conflicts", "-k"],
        common::deploy_dir().join("sharded"),
    );
}
