//! Differential test: plumb's compare against Argo CD's own (gitops-engine's `diff.Diff`, built
//! by `testbed/build-oracle.sh`), on objects stored by the real API server of the test bed.
//!
//! A seeded generator writes desired objects of many kinds in the forms people write
//! (quantities, int-or-string, nulls, empty maps and lists, duplicate merge keys, reordered
//! lists, a CRD with defaults). Half are applied client-side (`kubectl apply`, which records
//! last-applied), half server-side. Then live changes the ways it does (edits of declared,
//! undeclared and defaulted fields by another field manager, `/scale`, a label removed, Secret
//! values, deletions) and git changes (fields removed, set to null, lists reordered). Live is
//! read back from the API server; each pair goes to plumb and to the oracle, and the verdicts
//! (modified or not) must agree, as must the normalized-live and predicted-live text of
//! modified objects, apart from the classes the book lists as deliberate differences
//! (`docs/src/argocd/differences.md`, "Where the compare differs").
//!
//! ```text
//! eval "$(testbed/up.sh --kcm)"; export PLUMB_ARGO_ORACLE=$(testbed/build-oracle.sh)
//! REQUIRE_K8S_TESTBED=1 REQUIRE_ARGO_ORACLE=1 cargo test -p plumb-diff --test differential -- --nocapture
//! PLUMB_DIFF_SEEDS=7,8 PLUMB_DIFF_OBJECTS=1000 cargo test -p plumb-diff --test differential   # any seed
//! ```
//!
//! Without a test bed or an oracle the test says so and passes, unless `REQUIRE_K8S_TESTBED=1`
//! or `REQUIRE_ARGO_ORACLE=1`.

use plumb_diff::{DiffConfig, diff};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The seeds CI runs, and how many objects each.
const SEEDS: [u64; 3] = [1, 2, 3];
const OBJECTS: usize = 400;

/// Classes where plumb deliberately differs from Argo CD (the book's
/// `docs/src/argocd/differences.md`, "Where the compare differs"). A disagreement whose case
/// carries one of these tags is counted apart.
const DOCUMENTED: &[&str] = &[];

/// SplitMix64: a fixed, tiny generator, so a seed means the same objects forever (a library
/// generator may change its sequence between versions).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Apply {
    Client,
    Server,
}

/// How live or git changes after the apply.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Change {
    None,
    /// Another field manager changes a declared field.
    Declared,
    /// Another field manager adds an undeclared field.
    Undeclared,
    /// Another field manager sets a defaulted field to a non-default value.
    Defaulted,
    /// `kubectl scale`.
    Scale,
    /// A declared label is removed from git.
    RemovedFromGit,
    /// A declared field is set to null in git.
    NullInGit,
    /// A list with a merge key is reordered in git.
    ReorderedInGit,
    /// A declared value changes in git (the last element of a merge-key list, a data key).
    ValueInGit,
    /// A Secret's value changes live.
    SecretValue,
    /// A declared label is removed live.
    LabelRemovedLive,
    /// The object is deleted live.
    Deleted,
}

const CHANGES: &[Change] = &[
    Change::None,
    Change::Declared,
    Change::Undeclared,
    Change::Defaulted,
    Change::Scale,
    Change::RemovedFromGit,
    Change::NullInGit,
    Change::ReorderedInGit,
    Change::ValueInGit,
    Change::SecretValue,
    Change::LabelRemovedLive,
    Change::Deleted,
];

struct Case {
    applied: Value,
    git: Value,
    how: Apply,
    change: Change,
    /// Forms and changes this case has, for reports and documented classes.
    tags: BTreeSet<String>,
    /// A partial object another field manager applies (server-side), if any.
    edit: Option<Value>,
}

const GROUP: &str = "difftest.plumb.dev";

fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{GROUP}")},
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "replicas": {"type": "integer", "default": 1},
                        "color": {"type": "string", "default": "blue"},
                        "size": {"x-kubernetes-int-or-string": true},
                        "memory": {"type": "string"},
                        "tags": {"type": "array", "items": {"type": "string"}},
                        "settings": {"type": "object", "additionalProperties": {"type": "string"}},
                        "ports": {"type": "array", "items": {"type": "object", "properties": {
                            "name": {"type": "string"}, "port": {"type": "integer"}}}},
                        "note": {"type": "string", "nullable": true}
                    }},
                    "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}
                }}}}]
        }
    })
}

fn meta(name: &str, ns: &str, rng: &mut Rng, tags: &mut BTreeSet<String>) -> Value {
    let mut m = json!({"name": name, "namespace": ns,
        "labels": {"app": name, "tier": "backend"}});
    match rng.below(6) {
        0 => {
            m["annotations"] = json!({});
            tags.insert("empty-annotations".into());
        }
        1 => {
            m["annotations"] = Value::Null;
            tags.insert("null-annotations".into());
        }
        2 => {
            m["annotations"] = json!({"team": "payments", "note": "x < y & z"});
        }
        _ => {}
    }
    m
}

fn quantity_cpu(rng: &mut Rng, tags: &mut BTreeSet<String>) -> Value {
    let q = rng
        .pick(&[
            json!("100m"),
            json!("0.5"),
            json!(1),
            json!("1000m"),
            json!("250m"),
            json!(0.25),
        ])
        .clone();
    tags.insert("quantity".into());
    q
}

fn quantity_mem(rng: &mut Rng) -> Value {
    rng.pick(&[
        json!("64Mi"),
        json!("1Gi"),
        json!("1024Mi"),
        json!("128M"),
        json!("0.5Gi"),
    ])
    .clone()
}

fn container(name: &str, rng: &mut Rng, tags: &mut BTreeSet<String>) -> Value {
    let mut c = json!({"name": name, "image": format!("registry.invalid/{name}:1")});
    if rng.chance(60) {
        let mut env = vec![
            json!({"name": "A", "value": "1"}),
            json!({"name": "B", "value": "two"}),
            json!({"name": "C", "value": ""}),
        ];
        if rng.chance(15) {
            env.push(json!({"name": "A", "value": "again"}));
            tags.insert("duplicate-merge-key".into());
        }
        c["env"] = Value::Array(env);
    } else if rng.chance(20) {
        c["env"] = json!([]);
        tags.insert("empty-list".into());
    }
    if rng.chance(50) {
        c["ports"] = json!([{"name": "http", "containerPort": 8080},
            {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}]);
    }
    if rng.chance(60) {
        let mut r =
            json!({"requests": {"cpu": quantity_cpu(rng, tags), "memory": quantity_mem(rng)}});
        if rng.chance(40) {
            r["limits"] = json!({"memory": rng.pick(&[json!("2Gi"), json!("2048Mi")]).clone()});
        }
        c["resources"] = r;
    } else if rng.chance(20) {
        c["resources"] = json!({});
        tags.insert("empty-map".into());
    }
    if rng.chance(20) {
        c["imagePullPolicy"] = json!("IfNotPresent");
    }
    c
}

fn pod_spec(rng: &mut Rng, tags: &mut BTreeSet<String>, restart_never: bool) -> Value {
    let mut containers = vec![container("app", rng, tags)];
    if rng.chance(30) {
        let mut sidecar = container("sidecar", rng, tags);
        if let Some(o) = sidecar.as_object_mut() {
            o.remove("ports");
        }
        containers.push(sidecar);
    }
    let mut s = json!({"containers": containers});
    if restart_never {
        s["restartPolicy"] = json!("Never");
    }
    match rng.below(6) {
        0 => {
            s["nodeSelector"] = Value::Null;
            tags.insert("null-field".into());
        }
        1 => {
            s["volumes"] = json!([{"name": "cfg", "configMap": {"name": "cfg"}},
                {"name": "tmp", "emptyDir": {}}]);
        }
        2 => {
            s["terminationGracePeriodSeconds"] = json!(30);
        }
        _ => {}
    }
    s
}

fn template(name: &str, rng: &mut Rng, tags: &mut BTreeSet<String>, restart_never: bool) -> Value {
    json!({"metadata": {"labels": {"app": name}}, "spec": pod_spec(rng, tags, restart_never)})
}

/// One desired object of kind number `k`.
fn object(k: usize, name: &str, ns: &str, rng: &mut Rng, tags: &mut BTreeSet<String>) -> Value {
    let m = meta(name, ns, rng, tags);
    match k {
        0 => {
            let mut o = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": m,
                "data": {"a": "1", "b": "x: y\n"}});
            if rng.chance(20) {
                o["data"] = json!({});
                tags.insert("empty-map".into());
            }
            o
        }
        1 => {
            let mut o = json!({"apiVersion": "v1", "kind": "Secret", "metadata": m, "type": "Opaque",
                "data": {"k1": "czE=", "k2": "czI="}});
            if rng.chance(40) {
                o["stringData"] = json!({"k3": "plain"});
                tags.insert("stringData".into());
            }
            o
        }
        2 => {
            let target = if rng.chance(50) {
                tags.insert("int-or-string".into());
                json!("http")
            } else {
                json!(8080)
            };
            json!({"apiVersion": "v1", "kind": "Service", "metadata": m,
                "spec": {"selector": {"app": name},
                    "ports": [{"name": "http", "port": 80, "targetPort": target},
                              {"name": "https", "port": 443, "targetPort": 8443}]}})
        }
        3 => json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": m}),
        4 => {
            let mut o = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": m,
                "spec": {"replicas": 1 + rng.below(3), "selector": {"matchLabels": {"app": name}},
                    "template": template(name, rng, tags, false)}});
            if rng.chance(30) {
                tags.insert("int-or-string".into());
                o["spec"]["strategy"] = json!({"type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": rng.pick(&[json!("25%"), json!(1)]).clone(), "maxUnavailable": 0}});
            }
            o
        }
        5 => json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": m,
            "spec": {"serviceName": name, "replicas": 1, "selector": {"matchLabels": {"app": name}},
                "template": template(name, rng, tags, false)}}),
        6 => json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": m,
            "spec": {"selector": {"matchLabels": {"app": name}},
                "template": template(name, rng, tags, false)}}),
        7 => {
            // A Job whose template carries no labels of its own (the API server adds them).
            let mut t = template(name, rng, tags, true);
            if rng.chance(50) {
                t["metadata"] = json!({});
                tags.insert("job-unlabelled-template".into());
            }
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": m,
                "spec": {"backoffLimit": 0, "suspend": true, "template": t}})
        }
        8 => json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": m,
            "spec": {"schedule": "*/5 * * * *", "suspend": true,
                "jobTemplate": {"spec": {"template": template(name, rng, tags, true)}}}}),
        9 => {
            let mut o = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": m,
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]});
            if rng.chance(20) {
                o["rules"] = json!([]);
                tags.insert("empty-rules".into());
            }
            o
        }
        10 => {
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": m,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": ns}]})
        }
        11 => json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": m,
            "spec": {"accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": quantity_mem(rng)}}}}),
        12 => {
            tags.insert("quantity".into());
            json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": m,
                "spec": {"hard": {"pods": rng.pick(&[json!("10"), json!(10)]).clone(),
                    "requests.cpu": quantity_cpu(rng, tags), "requests.memory": quantity_mem(rng)}}})
        }
        13 => json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": m,
            "spec": {"limits": [{"type": "Container", "default": {"cpu": quantity_cpu(rng, tags)},
                "defaultRequest": {"memory": quantity_mem(rng)}}]}}),
        14 => {
            let mut o = json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": m,
                "spec": {"podSelector": {"matchLabels": {"app": name}},
                    "ingress": [{"ports": [{"port": 8080}, {"port": "http", "protocol": "TCP"}]}]}});
            if rng.chance(30) {
                o["spec"]["podSelector"] = json!({});
                tags.insert("empty-map".into());
            }
            o
        }
        15 => {
            tags.insert("int-or-string".into());
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": m,
                "spec": {"selector": {"matchLabels": {"app": name}},
                    "minAvailable": rng.pick(&[json!(1), json!("50%")]).clone()}})
        }
        16 => {
            json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": m,
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                "minReplicas": 1, "maxReplicas": 3,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80}}}]}})
        }
        17 => json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": m,
            "spec": {"rules": [{"host": format!("{name}.example.invalid"), "http": {"paths": [
                {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": name,
                    "port": {"number": 80}}}}]}}]}}),
        _ => {
            tags.insert("custom-resource".into());
            let mut spec = json!({"tags": ["b", "a"], "ports": [{"name": "x", "port": 1}, {"name": "y", "port": 2}],
                "memory": "1Gi"});
            if rng.chance(50) {
                spec["replicas"] = json!(2);
            }
            if rng.chance(40) {
                spec["size"] = rng.pick(&[json!(3), json!("3"), json!("small")]).clone();
                tags.insert("int-or-string".into());
            }
            if rng.chance(30) {
                spec["settings"] = json!({});
                tags.insert("empty-map".into());
            }
            if rng.chance(20) {
                spec["note"] = Value::Null;
                tags.insert("null-field".into());
            }
            json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Widget", "metadata": m, "spec": spec})
        }
    }
}

const KINDS: usize = 19;

/// The first list of env entries (or container ports) with two or more entries.
fn merge_list_mut(o: &mut Value) -> Option<&mut Vec<Value>> {
    let spec = match o["kind"].as_str()? {
        "CronJob" => o.pointer_mut("/spec/jobTemplate/spec/template/spec")?,
        "Deployment" | "StatefulSet" | "DaemonSet" | "Job" => {
            o.pointer_mut("/spec/template/spec")?
        }
        "Service" => return o.pointer_mut("/spec/ports")?.as_array_mut(),
        _ => return None,
    };
    let c = spec.pointer_mut("/containers/0")?;
    if c["env"].as_array().is_some_and(|e| e.len() >= 2) {
        return c["env"].as_array_mut();
    }
    if c["ports"].as_array().is_some_and(|e| e.len() >= 2) {
        return c["ports"].as_array_mut();
    }
    None
}

fn partial(o: &Value) -> Value {
    json!({"apiVersion": o["apiVersion"], "kind": o["kind"],
        "metadata": {"name": o["metadata"]["name"], "namespace": o["metadata"]["namespace"]}})
}

/// What another field manager applies for `change`, and git after it.
fn change_case(case: &mut Case) {
    let kind = case.git["kind"].as_str().unwrap_or("").to_string();
    let mut edit = partial(&case.applied);
    let change = case.change;
    match change {
        Change::None | Change::Deleted | Change::LabelRemovedLive => {}
        Change::Declared => {
            edit["metadata"]["labels"] = json!({"tier": "frontend"});
            case.edit = Some(edit);
        }
        Change::Undeclared => {
            edit["metadata"]["annotations"] = json!({"editor.example/touched": "yes"});
            if kind == "ConfigMap" {
                edit["data"] = json!({"added": "by-editor"});
            }
            case.edit = Some(edit);
        }
        Change::Defaulted => {
            match kind.as_str() {
                "Deployment" => {
                    edit["spec"] =
                        json!({"revisionHistoryLimit": 3, "progressDeadlineSeconds": 300})
                }
                "Service" => edit["spec"] = json!({"sessionAffinity": "ClientIP"}),
                "CronJob" => edit["spec"] = json!({"successfulJobsHistoryLimit": 1}),
                "StatefulSet" | "DaemonSet" => edit["spec"] = json!({"revisionHistoryLimit": 4}),
                "Widget" => edit["spec"] = json!({"color": "red"}),
                "Secret" | "ConfigMap" => edit["immutable"] = json!(false),
                _ => edit["metadata"]["annotations"] = json!({"editor.example/touched": "yes"}),
            }
            case.edit = Some(edit);
        }
        Change::Scale => {}
        Change::RemovedFromGit => {
            if let Some(l) = case
                .git
                .pointer_mut("/metadata/labels")
                .and_then(Value::as_object_mut)
            {
                l.remove("tier");
            }
        }
        Change::NullInGit => {
            if kind == "Widget" {
                case.git["spec"]["memory"] = Value::Null;
            } else {
                case.git["metadata"]["labels"]["tier"] = Value::Null;
            }
        }
        Change::ReorderedInGit => {
            if let Some(list) = merge_list_mut(&mut case.git) {
                list.reverse();
            } else if kind == "Widget"
                && let Some(p) = case.git["spec"]["ports"].as_array_mut()
            {
                p.reverse();
            }
        }
        Change::ValueInGit => {
            if let Some(last) = merge_list_mut(&mut case.git).and_then(|l| l.last_mut()) {
                if last.get("value").is_some() {
                    last["value"] = json!("changed-in-git");
                } else if last.get("containerPort").is_some() {
                    last["containerPort"] = json!(7070);
                } else if last.get("targetPort").is_some() {
                    last["targetPort"] = json!("https-alt");
                }
            } else {
                match kind.as_str() {
                    "ConfigMap" => case.git["data"]["a"] = json!("changed-in-git"),
                    "Secret" => case.git["data"]["k2"] = json!("Z2l0"),
                    "Widget" => case.git["spec"]["memory"] = json!("2Gi"),
                    _ => case.git["metadata"]["labels"]["tier"] = json!("changed-in-git"),
                }
            }
        }
        Change::SecretValue => {
            edit["data"] = json!({"k1": "Y2hhbmdlZA=="});
            case.edit = Some(edit);
        }
    }
}

fn generate(seed: u64, n: usize, ns: &str) -> Vec<Case> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|i| {
            let k = i % KINDS;
            let mut tags = BTreeSet::new();
            let name = format!("o{i}");
            let applied = object(k, &name, ns, &mut rng, &mut tags);
            let mut how = if rng.chance(50) {
                Apply::Client
            } else {
                Apply::Server
            };
            // Server-side apply refuses duplicate merge keys; kubectl's client-side apply
            // stores them.
            if tags.contains("duplicate-merge-key") {
                how = Apply::Client;
            }
            let kind = applied["kind"].as_str().unwrap_or("").to_string();
            let mut change = *rng.pick(CHANGES);
            // Changes that make no sense for the kind become a plain edit of a declared field.
            let scalable = matches!(kind.as_str(), "Deployment" | "StatefulSet" | "Widget");
            // A deleted PVC stays, Terminating, while kube-controller-manager's pvc-protection
            // controller takes its time: its live state would depend on timing.
            if (change == Change::Scale && !scalable)
                || (change == Change::SecretValue && kind != "Secret")
                || (change == Change::Deleted && kind == "PersistentVolumeClaim")
            {
                change = Change::Declared;
            }
            tags.insert(format!("kind:{kind}"));
            tags.insert(format!("apply:{how:?}"));
            tags.insert(format!("change:{change:?}"));
            let mut case = Case {
                git: applied.clone(),
                applied,
                how,
                change,
                tags,
                edit: None,
            };
            change_case(&mut case);
            case
        })
        .collect()
}

fn kubectl() -> String {
    std::env::var("PLUMB_KUBECTL").unwrap_or_else(|_| "kubectl".into())
}

/// Runs kubectl with `args`; returns (success, stdout, stderr).
fn run_kubectl(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(kubectl())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run kubectl: {e}"));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn write_list(dir: &Path, file: &str, items: Vec<Value>) -> PathBuf {
    let p = dir.join(file);
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    std::fs::write(&p, serde_json::to_vec(&list).expect("json")).expect("write list");
    p
}

/// `kubectl <args> -f <list of items>`; returns stderr lines of failures (kubectl goes on
/// past a refused object).
fn kubectl_list(dir: &Path, file: &str, items: Vec<Value>, args: &[&str]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let p = write_list(dir, file, items);
    let path = p.to_string_lossy().to_string();
    let mut a: Vec<&str> = args.to_vec();
    a.extend(["-f", &path]);
    let (ok, _, err) = run_kubectl(&a);
    if ok {
        String::new()
    } else {
        err.lines()
            .filter(|l| !l.starts_with("Warning:"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

fn resource(o: &Value) -> String {
    let kind = o["kind"].as_str().unwrap_or("").to_lowercase();
    let name = o["metadata"]["name"].as_str().unwrap_or("");
    if kind == "widget" {
        format!("widgets.{GROUP}/{name}")
    } else {
        format!("{kind}/{name}")
    }
}

fn key(o: &Value) -> (String, String) {
    (
        o["kind"].as_str().unwrap_or("").to_string(),
        o["metadata"]["name"].as_str().unwrap_or("").to_string(),
    )
}

/// Applies the cases to namespace `ns`, changes them, and returns live as read back.
fn apply_and_change(cases: &[Case], ns: &str, dir: &Path) -> BTreeMap<(String, String), Value> {
    let client: Vec<Value> = cases
        .iter()
        .filter(|c| c.how == Apply::Client)
        .map(|c| c.applied.clone())
        .collect();
    let server: Vec<Value> = cases
        .iter()
        .filter(|c| c.how == Apply::Server)
        .map(|c| c.applied.clone())
        .collect();
    let e1 = kubectl_list(dir, "client.json", client, &["apply"]);
    let e2 = kubectl_list(
        dir,
        "server.json",
        server,
        &[
            "apply",
            "--server-side",
            "--field-manager=argocd-controller",
        ],
    );
    for e in [e1, e2] {
        if !e.is_empty() {
            eprintln!("apply refused some objects (left out of the comparison):\n{e}");
        }
    }
    // Edits are merge patches, as a person's `kubectl edit` or another controller's update:
    // a server-side apply would take over the fields of kubectl's client-side apply (kubectl
    // migrates them to the new manager) and drop what the partial object lacks.
    for c in cases {
        let Some(edit) = &c.edit else { continue };
        let mut patch = edit.clone();
        if let Some(m) = patch.as_object_mut() {
            m.remove("apiVersion");
            m.remove("kind");
        }
        if let Some(m) = patch.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("name");
            m.remove("namespace");
            if m.is_empty() {
                patch.as_object_mut().map(|p| p.remove("metadata"));
            }
        }
        let body = patch.to_string();
        let res = resource(&c.applied);
        let (ok, _, err) = run_kubectl(&[
            "patch",
            "-n",
            ns,
            &res,
            "--type=merge",
            "--field-manager=editor",
            "-p",
            &body,
        ]);
        if !ok {
            // Live stays as it was: still a case to compare.
            eprintln!("edit of {res} refused: {err}");
        }
    }
    let mut by_replicas: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (i, c) in cases
        .iter()
        .enumerate()
        .filter(|(_, c)| c.change == Change::Scale)
    {
        by_replicas
            .entry(4 + i % 2)
            .or_default()
            .push(resource(&c.applied));
    }
    for (n, res) in by_replicas {
        let r = format!("--replicas={n}");
        let mut a = vec!["scale", "-n", ns, r.as_str()];
        a.extend(res.iter().map(String::as_str));
        let (ok, _, err) = run_kubectl(&a);
        assert!(ok, "kubectl scale: {err}");
    }
    let unlabel: Vec<String> = cases
        .iter()
        .filter(|c| c.change == Change::LabelRemovedLive)
        .map(|c| resource(&c.applied))
        .collect();
    if !unlabel.is_empty() {
        let mut a = vec!["label", "-n", ns];
        a.extend(unlabel.iter().map(String::as_str));
        a.push("tier-");
        let (ok, _, err) = run_kubectl(&a);
        assert!(ok, "kubectl label: {err}");
    }
    let deleted: Vec<Value> = cases
        .iter()
        .filter(|c| c.change == Change::Deleted)
        .map(|c| partial(&c.applied))
        .collect();
    let e = kubectl_list(
        dir,
        "deleted.json",
        deleted,
        &["delete", "--wait=true", "--ignore-not-found"],
    );
    assert!(e.is_empty(), "delete: {e}");

    let all: Vec<Value> = cases.iter().map(|c| partial(&c.applied)).collect();
    let p = write_list(dir, "all.json", all);
    let (ok, out, err) = run_kubectl(&[
        "get",
        "--ignore-not-found",
        "-o",
        "json",
        "-f",
        &p.to_string_lossy(),
    ]);
    assert!(ok, "kubectl get: {err}");
    let list: Value = serde_json::from_str(&out).expect("kubectl get -o json");
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| (key(o), o.clone()))
        .collect()
}

struct Oracle(PathBuf);

impl Oracle {
    fn find() -> Option<Oracle> {
        match std::env::var_os("PLUMB_ARGO_ORACLE") {
            Some(p) if !p.is_empty() => Some(Oracle(p.into())),
            _ => {
                assert!(
                    std::env::var("REQUIRE_ARGO_ORACLE").as_deref() != Ok("1"),
                    "REQUIRE_ARGO_ORACLE=1 but PLUMB_ARGO_ORACLE is not set (testbed/build-oracle.sh)"
                );
                None
            }
        }
    }

    /// One answer per request, in order.
    fn ask(&self, requests: &[Value]) -> Vec<Value> {
        let mut child = Command::new(&self.0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.0.display()));
        let mut input = Vec::new();
        for r in requests {
            serde_json::to_writer(&mut input, r).expect("json");
            input.push(b'\n');
        }
        let mut stdin = child.stdin.take().expect("stdin");
        let writer = std::thread::spawn(move || stdin.write_all(&input));
        let out = child.wait_with_output().expect("oracle output");
        writer.join().expect("writer").expect("write to oracle");
        assert!(out.status.success(), "oracle failed: {:?}", out.status);
        let answers: Vec<Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).expect("oracle answer"))
            .collect();
        assert_eq!(
            answers.len(),
            requests.len(),
            "one oracle answer per request"
        );
        answers
    }
}

#[derive(Default)]
struct Tally {
    objects: usize,
    agree: usize,
    documented: usize,
    modified_both: usize,
    text_agree: usize,
    disagreements: Vec<String>,
    text_disagreements: Vec<String>,
    classes: BTreeMap<String, usize>,
}

fn compare(cases: &[Case], live: &BTreeMap<(String, String), Value>, oracle: &Oracle) -> Tally {
    let mut requests = Vec::new();
    let mut used = Vec::new();
    for c in cases {
        let l = live.get(&key(&c.applied));
        if l.is_none() && c.change != Change::Deleted {
            continue; // refused by the API server at apply
        }
        requests.push(json!({"config": c.git, "live": l}));
        used.push((c, l));
    }
    let answers = oracle.ask(&requests);
    let mut t = Tally::default();
    let cfg = DiffConfig::default();
    for ((c, l), argo) in used.into_iter().zip(answers) {
        t.objects += 1;
        let name = format!(
            "{}/{}",
            c.git["kind"].as_str().unwrap_or(""),
            c.git["metadata"]["name"].as_str().unwrap_or("")
        );
        if let Some(e) = argo.get("error").and_then(Value::as_str) {
            t.disagreements.push(format!("{name}: oracle error {e}"));
            continue;
        }
        let ours = match diff(Some(&c.git), l, &cfg) {
            Ok(r) => r,
            Err(e) => {
                t.disagreements.push(format!("{name}: plumb error {e}"));
                continue;
            }
        };
        let argo_modified = argo["modified"].as_bool().unwrap_or(false);
        let documented = c.tags.iter().any(|tag| DOCUMENTED.contains(&tag.as_str()));
        if ours.modified == argo_modified {
            t.agree += 1;
        } else if documented {
            t.documented += 1;
        } else {
            for tag in &c.tags {
                *t.classes.entry(tag.clone()).or_default() += 1;
            }
            t.disagreements.push(format!(
                "{name}: plumb modified={} argo modified={} tags={:?}\n  git:  {}\n  live: {}\n  argo predicted: {}\n  plumb predicted: {}",
                ours.modified, argo_modified, c.tags, c.git,
                l.map(|l| l.to_string()).unwrap_or_default(),
                argo["predictedLive"], ours.predicted_live
            ));
        }
        if ours.modified && argo_modified && l.is_some() {
            t.modified_both += 1;
            let nl = serde_json::to_string(&ours.normalized_live).expect("json");
            let pl = serde_json::to_string(&ours.predicted_live).expect("json");
            let anl = argo["normalizedLive"].to_string();
            let apl = argo["predictedLive"].to_string();
            if nl == anl && pl == apl {
                t.text_agree += 1;
            } else if !documented {
                t.text_disagreements.push(format!(
                    "{name} tags={:?}\n  normalized live {}:\n    argo:  {anl}\n    plumb: {nl}\n  predicted live {}:\n    argo:  {apl}\n    plumb: {pl}",
                    c.tags, if nl == anl { "same" } else { "differs" },
                    if pl == apl { "same" } else { "differs" }
                ));
            }
        }
    }
    t
}

fn seeds() -> Vec<u64> {
    match std::env::var("PLUMB_DIFF_SEEDS") {
        Ok(s) if !s.trim().is_empty() => s
            .split(',')
            .map(|x| {
                x.trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("PLUMB_DIFF_SEEDS: {x:?} is not a number"))
            })
            .collect(),
        _ => SEEDS.to_vec(),
    }
}

fn objects() -> usize {
    std::env::var("PLUMB_DIFF_OBJECTS")
        .ok()
        .map(|s| {
            s.parse()
                .unwrap_or_else(|_| panic!("PLUMB_DIFF_OBJECTS: {s:?} is not a number"))
        })
        .unwrap_or(OBJECTS)
}

#[test]
fn plumb_agrees_with_argo_cd_on_stored_objects() {
    if std::env::var_os("TESTBED_DIR").is_none() {
        assert!(
            std::env::var("REQUIRE_K8S_TESTBED").as_deref() != Ok("1"),
            "REQUIRE_K8S_TESTBED=1 but TESTBED_DIR is not set (run testbed/up.sh)"
        );
        eprintln!("SKIP differential: no Kubernetes test bed (TESTBED_DIR unset)");
        return;
    }
    let Some(oracle) = Oracle::find() else {
        eprintln!(
            "SKIP differential: no Argo CD oracle (PLUMB_ARGO_ORACLE unset; testbed/build-oracle.sh)"
        );
        return;
    };
    let dir = std::env::temp_dir().join(format!("plumb-differential-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let crd_path = write_list(&dir, "crd.json", vec![crd()]);
    let (ok, _, err) = run_kubectl(&["apply", "-f", &crd_path.to_string_lossy()]);
    assert!(ok, "CRD: {err}");
    let (ok, _, err) = run_kubectl(&[
        "wait",
        "--for=condition=Established",
        "--timeout=90s",
        &format!("crd/widgets.{GROUP}"),
    ]);
    assert!(ok, "CRD not established: {err}");

    let n = objects();
    let mut failures = Vec::new();
    let mut total_modified = 0;
    let mut total_text = 0;
    for seed in seeds() {
        let ns = format!("differential-{seed}-{}", std::process::id());
        let (ok, _, err) = run_kubectl(&["create", "namespace", &ns]);
        assert!(ok, "namespace {ns}: {err}");
        let cases = generate(seed, n, &ns);
        let live = apply_and_change(&cases, &ns, &dir);
        let t = compare(&cases, &live, &oracle);
        let kinds: BTreeSet<&str> = cases
            .iter()
            .filter_map(|c| c.git["kind"].as_str())
            .collect();
        let pct = |a: usize, b: usize| {
            if b == 0 {
                100.0
            } else {
                100.0 * a as f64 / b as f64
            }
        };
        println!(
            "differential seed {seed}: {} objects of {} kinds; verdicts agree on {}/{} ({:.2}%), {} documented; \
             modified by both: {}, text agrees on {}/{} ({:.2}%)",
            t.objects,
            kinds.len(),
            t.agree,
            t.objects,
            pct(t.agree, t.objects),
            t.documented,
            t.modified_both,
            t.text_agree,
            t.modified_both,
            pct(t.text_agree, t.modified_both)
        );
        if !t.classes.is_empty() {
            println!("  disagreeing tags: {:?}", t.classes);
        }
        for d in &t.disagreements {
            println!("  DISAGREE {d}");
        }
        for d in &t.text_disagreements {
            println!("  TEXT {d}");
        }
        total_modified += t.modified_both;
        total_text += t.text_agree;
        if !t.disagreements.is_empty() {
            failures.push(format!(
                "seed {seed}: {} verdicts disagree",
                t.disagreements.len()
            ));
        }
        let _ = run_kubectl(&["delete", "namespace", &ns, "--wait=false"]);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let text_pct = if total_modified == 0 {
        100.0
    } else {
        100.0 * total_text as f64 / total_modified as f64
    };
    println!(
        "differential: text of modified objects agrees on {total_text}/{total_modified} ({text_pct:.2}%)"
    );
    assert!(
        failures.is_empty(),
        "plumb and Argo CD disagree: {failures:?}"
    );
    assert!(
        text_pct >= 99.0,
        "normalized/predicted live text agrees on only {text_pct:.2}% of modified objects"
    );
}
