//! The ApplicationSet controller on the test bed, with the real `plumb controller` process and a
//! real git repository: an ApplicationSet with a git directories generator creates one
//! Application per directory (owned by it), and the controller syncs them; a directory removed
//! in git deletes its Application and, with `preserveResourcesOnDeletion`, leaves its resources;
//! `create-only` never updates; a template error (`missingkey=error`) leaves every Application
//! as it was and names the field in `ErrorOccurred`; `status.resources` follows the
//! Applications' sync and health. Skipped without a test bed (`TESTBED_DIR`), unless
//! `REQUIRE_K8S_TESTBED=1`.

mod common;
#[path = "common/testbed.rs"]
mod fixture;
#[path = "../../plumb-cluster/tests/support/mod.rs"]
mod support;

use fixture::AppBed;
use plumb_cluster::Cluster;
use serde_json::{Value, json};
use std::process::{Command, Stdio};
use support::{apply, testbed, wait_until};

fn commit(bed: &AppBed, message: &str) {
    let repo = bed.dir.join("repo");
    if !repo.join(".git").exists() {
        common::git(&repo, &["init", "-q"]);
    }
    common::git(&repo, &["add", "-A"]);
    common::git(&repo, &["commit", "-q", "--allow-empty", "-m", message]);
}

fn config_map(bed: &AppBed, dir: &str) {
    fixture::write_json(
        &bed.dir.join("repo/apps").join(dir),
        "cm.json",
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("from-{dir}")}, "data": {"dir": dir}}),
    );
}

async fn appset(cluster: &Cluster, ns: &str) -> Value {
    cluster
        .get_object("plumb.dev", "ApplicationSet", ns, "dirs")
        .await
        .expect("get")
        .expect("the ApplicationSet exists")
}

fn condition<'a>(set: &'a Value, ty: &str) -> Option<&'a Value> {
    set.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == ty)
}

/// The names of the Applications of `ns`, sorted.
async fn app_names(cluster: &Cluster, ns: &str) -> Vec<String> {
    let mut names: Vec<String> = cluster
        .list_applications(Some(ns))
        .await
        .expect("list")
        .iter()
        .filter_map(|a| a.pointer("/metadata/name")?.as_str().map(str::to_string))
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_applicationset_keeps_one_application_per_git_directory() {
    let Some(cluster) = testbed("appset-controller").await else {
        return;
    };
    let bed = AppBed::new(&cluster, "appset-ctl", json!({})).await;
    let ns = bed.apps_ns.clone();
    for d in ["one", "two"] {
        config_map(&bed, d);
    }
    commit(&bed, "two directories");
    let repo = format!("file://{}", bed.dir.join("repo").display());
    let set = |sync_policy: Value, name: &str, label: &str| {
        json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "ApplicationSet",
            "metadata": {"name": "dirs", "namespace": ns},
            "spec": {
                "goTemplate": true,
                "goTemplateOptions": ["missingkey=error"],
                "generators": [{"git": {"repoURL": repo, "revision": "HEAD",
                                        "directories": [{"path": "apps/*"}]}}],
                "syncPolicy": sync_policy,
                "template": {
                    "metadata": {"name": name, "labels": {"kind": label},
                                 "finalizers": ["resources-finalizer.argocd.argoproj.io"]},
                    "spec": {"project": "default",
                        "source": {"repoURL": repo, "targetRevision": "HEAD",
                                   "path": "{{ .path.path }}"},
                        "destination": {"server": "https://kubernetes.default.svc",
                                        "namespace": bed.dest},
                        "syncPolicy": {"automated": {"prune": true}}}}}})
    };
    let name = "dir-{{ .path.basename }}";
    apply(
        &cluster,
        vec![set(
            json!({"preserveResourcesOnDeletion": true}),
            name,
            "first",
        )],
    )
    .await;
    let log = bed.dir.join("controller.log");
    let _ctl = fixture::controller_with(&ns, &log, &["--applicationset-requeue", "1"]);
    let logs = || std::fs::read_to_string(&log).unwrap_or_default();

    // One Application per directory, owned by the ApplicationSet, each synced.
    wait_until(
        "both ConfigMaps synced by their generated Applications",
        || async {
            for d in ["one", "two"] {
                cluster
                    .get_object("", "ConfigMap", &bed.dest, &format!("from-{d}"))
                    .await
                    .ok()??;
            }
            Some(())
        },
    )
    .await;
    assert_eq!(app_names(&cluster, &ns).await, ["dir-one", "dir-two"]);
    let uid = appset(&cluster, &ns).await["metadata"]["uid"].clone();
    let one = fixture::app(&cluster, &ns, "dir-one").await;
    assert_eq!(one["metadata"]["ownerReferences"][0]["uid"], uid);
    assert_eq!(
        one["metadata"]["ownerReferences"][0]["kind"],
        "ApplicationSet"
    );
    assert_eq!(one["spec"]["source"]["path"], "apps/one");
    let resources = wait_until(
        "status.resources with both apps Synced and Healthy",
        || async {
            let s = appset(&cluster, &ns).await;
            let r = s.pointer("/status/resources")?.as_array()?.clone();
            (r.len() == 2
                && r.iter()
                    .all(|x| x["status"] == "Synced" && x["health"]["status"] == "Healthy"))
            .then_some(r)
        },
    )
    .await;
    assert_eq!(resources[0]["name"], "dir-one");
    let s = appset(&cluster, &ns).await;
    assert_eq!(
        condition(&s, "ErrorOccurred").expect("condition")["status"],
        "False"
    );
    assert_eq!(
        condition(&s, "ResourcesUpToDate").expect("condition")["status"],
        "True"
    );

    // An Application deleted by hand comes back.
    cluster
        .delete_object(
            &plumb_core::ResourceKey {
                group: "plumb.dev".into(),
                kind: "Application".into(),
                namespace: ns.clone(),
                name: "dir-one".into(),
            },
            plumb_cluster::Propagation::Background,
        )
        .await
        .expect("delete");
    wait_until("dir-one recreated", || async {
        let a = cluster.get_application(&ns, "dir-one").await.ok()??;
        (a["metadata"]["uid"] != one["metadata"]["uid"]
            && a.pointer("/metadata/deletionTimestamp").is_none())
        .then_some(())
    })
    .await;

    // A directory removed from git: its Application goes, its ConfigMap stays
    // (preserveResourcesOnDeletion).
    std::fs::remove_dir_all(bed.dir.join("repo/apps/two")).expect("rm");
    commit(&bed, "remove two");
    wait_until("dir-two deleted", || async {
        (app_names(&cluster, &ns).await == ["dir-one"]).then_some(())
    })
    .await;
    assert!(
        cluster
            .get_object("", "ConfigMap", &bed.dest, "from-two")
            .await
            .expect("get")
            .is_some(),
        "the resources of a deleted Application stay; log:\n{}",
        logs()
    );

    // create-only: a new directory is created, the existing Application is not updated.
    apply(
        &cluster,
        vec![set(
            json!({"applicationsSync": "create-only"}),
            name,
            "second",
        )],
    )
    .await;
    config_map(&bed, "three");
    commit(&bed, "add three");
    wait_until("dir-three created", || async {
        (app_names(&cluster, &ns).await == ["dir-one", "dir-three"]).then_some(())
    })
    .await;
    let three = fixture::app(&cluster, &ns, "dir-three").await;
    assert_eq!(three["metadata"]["labels"]["kind"], "second");
    let one = fixture::app(&cluster, &ns, "dir-one").await;
    assert_eq!(
        one["metadata"]["labels"]["kind"], "first",
        "create-only never updates"
    );

    // A template error: nothing changes, ErrorOccurred names the field.
    apply(
        &cluster,
        vec![set(
            json!({"applicationsSync": "sync"}),
            "dir-{{ .path.nope }}",
            "third",
        )],
    )
    .await;
    let message = wait_until("ErrorOccurred naming the template", || async {
        let s = appset(&cluster, &ns).await;
        let c = condition(&s, "ErrorOccurred")?;
        (c["status"] == "True").then(|| c["message"].as_str().unwrap_or_default().to_string())
    })
    .await;
    assert!(
        message.contains("spec.generators[0]") && message.contains("nope"),
        "{message}"
    );
    assert_eq!(app_names(&cluster, &ns).await, ["dir-one", "dir-three"]);
    let s = appset(&cluster, &ns).await;
    assert_eq!(
        condition(&s, "ParametersGenerated").expect("condition")["status"],
        "False"
    );

    // Fixed, with sync: the labels are updated in place.
    apply(
        &cluster,
        vec![set(json!({"applicationsSync": "sync"}), name, "fourth")],
    )
    .await;
    wait_until("both Applications updated", || async {
        for a in ["dir-one", "dir-three"] {
            let app = cluster.get_application(&ns, a).await.ok()??;
            if app["metadata"]["labels"]["kind"] != "fourth" {
                return None;
            }
        }
        Some(())
    })
    .await;
    assert!(logs().contains("\"applicationSet\""), "{}", logs());
}

/// A POST to `/api/webhook` at `addr`: the answer's status code.
fn post(addr: &str, headers: &[(&str, &str)], body: &[u8]) -> u16 {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    let mut head = format!(
        "POST /api/webhook HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).expect("write");
    stream.write_all(body).expect("write");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// A push webhook for the repository of an ApplicationSet's git generator regenerates it at
/// once (the requeue interval is an hour): the directory pushed becomes an Application. The
/// repository is served by a real `git daemon` and fetched through the repository cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_webhook_regenerates_the_applicationsets_of_its_repository() {
    use plumb_render::testing::GitDaemon;
    let Some(cluster) = testbed("appset-push").await else {
        return;
    };
    let bed = AppBed::new(&cluster, "appset-push", json!({})).await;
    let ns = bed.apps_ns.clone();
    let origin = bed.dir.join("served/apps.git");
    std::fs::create_dir_all(&origin).expect("mkdir");
    common::git(&origin, &["init", "-q", "--bare", "--initial-branch=main"]);
    let work = bed.dir.join("work");
    std::fs::create_dir_all(&work).expect("mkdir");
    common::git(&work, &["init", "-q", "-b", "main"]);
    let push = |dir: &str| {
        common::write(
            &work,
            &format!("apps/{dir}/cm.json"),
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("from-{dir}")}})
            .to_string(),
        );
        common::git(&work, &["add", "-A"]);
        common::git(&work, &["commit", "-qm", dir]);
        common::git(
            &work,
            &["push", "-q", origin.to_str().expect("utf-8"), "HEAD:main"],
        );
    };
    push("one");
    let daemon = GitDaemon::serve(&bed.dir.join("served")).expect("git daemon");
    let clone = daemon.url("apps.git");
    let web = format!("http://127.0.0.1:{}/apps", daemon.port());
    apply(
        &cluster,
        vec![
            json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "ApplicationSet",
            "metadata": {"name": "pushed", "namespace": ns},
            "spec": {
                "generators": [{"git": {"repoURL": clone, "revision": "HEAD",
                                        "directories": [{"path": "apps/*"}]}}],
                "template": {
                    "metadata": {"name": "{{path.basename}}"},
                    "spec": {"project": "default",
                        "source": {"repoURL": clone, "targetRevision": "HEAD", "path": "{{path}}"},
                        "destination": {"server": "https://kubernetes.default.svc",
                                        "namespace": bed.dest}}}}}),
        ],
    )
    .await;
    let log = bed.dir.join("controller.log");
    let _ctl = fixture::Controller(
        Command::new(env!("CARGO_BIN_EXE_plumb"))
            .args([
                "controller",
                "--app-namespace",
                &ns,
                "--lease-namespace",
                &ns,
            ])
            .args([
                "--lease-duration",
                "3",
                "--interval",
                "3600",
                "--jitter",
                "0",
            ])
            .args([
                "--applicationset-requeue",
                "3600",
                "--listen",
                "127.0.0.1:0",
            ])
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env("PLUMB_REPO_CACHE", bed.dir.join("cache"))
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(&log).expect("log")))
            .spawn()
            .expect("plumb controller starts"),
    );
    let logs = || std::fs::read_to_string(&log).unwrap_or_default();
    let addr = wait_until("the controller's listening address", || async {
        logs().lines().find_map(|l| {
            let v: Value = serde_json::from_str(l).ok()?;
            v.get("listening")?.as_str().map(String::from)
        })
    })
    .await;
    wait_until("the first directory's Application", || async {
        (app_names(&cluster, &ns).await == ["one"]).then_some(())
    })
    .await;
    push("two");
    let body = json!({"ref": "refs/heads/main", "before": "0".repeat(40), "after": "1".repeat(40),
        "repository": {"html_url": web, "clone_url": format!("{web}.git"), "ssh_url": clone,
                       "default_branch": "main"},
        "commits": [{"added": ["apps/two/cm.json"], "modified": [], "removed": []}]});
    let status = post(
        &addr,
        &[("X-GitHub-Event", "push")],
        &serde_json::to_vec(&body).expect("JSON"),
    );
    assert_eq!(status, 200, "{}", logs());
    wait_until("the pushed directory's Application", || async {
        (app_names(&cluster, &ns).await == ["one", "two"]).then_some(())
    })
    .await;
}

/// Progressive sync (Argo CD's documented RollingSync example: `env: dev`, then `env: prod`):
/// the generated Applications lose automated sync; the ApplicationSet syncs `dev`, and `prod`
/// waits while `dev` is not healthy (a Deployment that cannot become available on a test bed
/// without nodes); once `dev` is healthy (git replaces the Deployment with a ConfigMap, the
/// sync prunes it, as the template's `automated.prune` says), `prod` syncs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolling_sync_waits_for_the_first_steps_health() {
    let Some(cluster) = testbed("appset-rolling").await else {
        return;
    };
    let bed = AppBed::new(&cluster, "appset-roll", json!({})).await;
    let ns = bed.apps_ns.clone();
    let write = |rel: &str, obj: Value| {
        let (dir, file) = rel.split_once('/').expect("dir/file");
        fixture::write_json(&bed.dir.join("repo/apps").join(dir), file, &obj);
    };
    write(
        "dev/deploy.json",
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "dev-web"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "web", "image": "registry.example.com/web:1"}]}}}}),
    );
    write(
        "prod/cm.json",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "prod-cm"}}),
    );
    commit(&bed, "dev and prod");
    let repo = format!("file://{}", bed.dir.join("repo").display());
    apply(
        &cluster,
        vec![json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "ApplicationSet",
            "metadata": {"name": "envs", "namespace": ns},
            "spec": {
                "generators": [{"list": {"elements": [{"env": "dev"}, {"env": "prod"}]}}],
                "strategy": {"type": "RollingSync", "rollingSync": {"steps": [
                    {"matchExpressions": [{"key": "env", "operator": "In", "values": ["dev"]}]},
                    {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]}]}},
                "template": {
                    "metadata": {"name": "{{env}}", "labels": {"env": "{{env}}"}},
                    "spec": {"project": "default",
                        "source": {"repoURL": repo, "targetRevision": "HEAD", "path": "apps/{{env}}"},
                        "destination": {"server": "https://kubernetes.default.svc",
                                        "namespace": bed.dest},
                        "syncPolicy": {"automated": {"prune": true}}}}}})],
    )
    .await;
    let log = bed.dir.join("controller.log");
    let _ctl = fixture::controller_with(&ns, &log, &["--applicationset-requeue", "3600"]);
    let logs = || std::fs::read_to_string(&log).unwrap_or_default();
    let progress = |set: &Value| -> Vec<(String, String)> {
        set.pointer("/status/applicationStatus")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|s| {
                        (
                            s["application"].as_str().unwrap_or("").to_string(),
                            s["status"].as_str().unwrap_or("").to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    // dev synced (its Deployment applied, never available); prod waits.
    wait_until("dev synced and Progressing, prod Waiting", || async {
        let dev = cluster.get_application(&ns, "dev").await.ok()??;
        if fixture::op(&dev, "phase") != "Succeeded" {
            return None;
        }
        let set = cluster
            .get_object("plumb.dev", "ApplicationSet", &ns, "envs")
            .await
            .ok()??;
        (progress(&set)
            == [
                ("dev".to_string(), "Progressing".to_string()),
                ("prod".to_string(), "Waiting".to_string()),
            ])
        .then_some(())
    })
    .await;
    assert!(
        cluster
            .get_object("apps", "Deployment", &bed.dest, "dev-web")
            .await
            .expect("get")
            .is_some()
    );
    let prod = fixture::app(&cluster, &ns, "prod").await;
    assert_eq!(
        fixture::op(&prod, "phase"),
        "",
        "prod has not synced: {}",
        logs()
    );
    assert!(
        prod.pointer("/spec/syncPolicy/automated").is_none(),
        "automated sync removed: {}",
        prod["spec"]
    );
    assert_eq!(
        fixture::op(
            &fixture::app(&cluster, &ns, "dev").await,
            "operation/initiatedBy/username"
        ),
        "applicationset-controller"
    );
    assert!(
        cluster
            .get_object("", "ConfigMap", &bed.dest, "prod-cm")
            .await
            .expect("get")
            .is_none()
    );

    // dev becomes healthy: prod syncs.
    std::fs::remove_file(bed.dir.join("repo/apps/dev/deploy.json")).expect("rm");
    write(
        "dev/cm.json",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dev-cm"}}),
    );
    commit(&bed, "dev healthy");
    fixture::ask_refresh(&cluster, &ns, "dev").await;
    wait_until("prod synced after dev became healthy", || async {
        cluster
            .get_object("", "ConfigMap", &bed.dest, "prod-cm")
            .await
            .ok()??;
        Some(())
    })
    .await;
    assert!(
        cluster
            .get_object("apps", "Deployment", &bed.dest, "dev-web")
            .await
            .expect("get")
            .is_none(),
        "pruned, as the template's automated.prune says"
    );
    wait_until("both Healthy in status.applicationStatus", || async {
        let set = cluster
            .get_object("plumb.dev", "ApplicationSet", &ns, "envs")
            .await
            .ok()??;
        (progress(&set)
            == [
                ("dev".to_string(), "Healthy".to_string()),
                ("prod".to_string(), "Healthy".to_string()),
            ])
        .then_some(())
    })
    .await;
}

/// Clusters × git directories on two API servers (the test bed and a second one started here):
/// a matrix ApplicationSet creates one Application per directory and cluster (the second
/// cluster from its cluster Secret, the first as Argo CD's `in-cluster`), and each syncs to its
/// own cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clusters_times_directories_on_two_clusters() {
    use plumb_cluster::ConnectOptions;
    use support::second_bed::SecondBed;
    let Some(home) = testbed("appset-two-clusters").await else {
        return;
    };
    let bed = AppBed::new(&home, "appset-mc", json!({})).await;
    let ns = bed.apps_ns.clone();
    let bed_b = SecondBed::start();
    let b = Cluster::connect(&ConnectOptions {
        kubeconfig: Some(bed_b.kubeconfig()),
        context: None,
    })
    .await
    .expect("second test bed");
    apply(
        &b,
        vec![json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": bed.dest}})],
    )
    .await;
    for d in ["one", "two"] {
        config_map(&bed, d);
    }
    commit(&bed, "two directories");
    let repo = format!("file://{}", bed.dir.join("repo").display());
    let config = json!({"tlsClientConfig": {
        "caData": bed_b.kubeconfig_field("certificate-authority-data"),
        "certData": bed_b.kubeconfig_field("client-certificate-data"),
        "keyData": bed_b.kubeconfig_field("client-key-data"),
    }});
    apply(
        &home,
        vec![
            json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "bed-b", "namespace": ns,
                    "labels": {"argocd.argoproj.io/secret-type": "cluster"}},
                "stringData": {"name": "bed-b", "server": bed_b.server(),
                    "config": config.to_string()}}),
            json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "ApplicationSet",
                "metadata": {"name": "estate", "namespace": ns},
                "spec": {"goTemplate": true,
                    "generators": [{"matrix": {"generators": [
                        {"git": {"repoURL": repo, "revision": "HEAD",
                                 "directories": [{"path": "apps/*"}]}},
                        {"clusters": {}}]}}],
                    "template": {
                        "metadata": {"name": "{{.path.basename}}-{{.name}}"},
                        "spec": {"project": "default",
                            "source": {"repoURL": repo, "targetRevision": "HEAD",
                                       "path": "{{.path.path}}"},
                            "destination": {"server": "{{.server}}", "namespace": bed.dest},
                            "syncPolicy": {"automated": {}}}}}}),
        ],
    )
    .await;
    let log = bed.dir.join("controller.log");
    let _ctl = fixture::controller_with(&ns, &log, &[]);
    let logs = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_until("four Applications, each synced to its cluster", || async {
        if app_names(&home, &ns).await
            != ["one-bed-b", "one-in-cluster", "two-bed-b", "two-in-cluster"]
        {
            return None;
        }
        for d in ["one", "two"] {
            for c in [&home, &b] {
                c.get_object("", "ConfigMap", &bed.dest, &format!("from-{d}"))
                    .await
                    .ok()??;
            }
        }
        Some(())
    })
    .await;
    let far = wait_until("one-bed-b's status Synced", || async {
        let a = home.get_application(&ns, "one-bed-b").await.ok()??;
        (a["status"]["sync"]["status"] == "Synced").then_some(a)
    })
    .await;
    assert_eq!(far["spec"]["destination"]["server"], bed_b.server());
    assert!(
        !logs().contains(&bed_b.kubeconfig_field("client-key-data")),
        "credentials never logged"
    );
}
