//! The runnable example bundles under `examples/` (issue 6, item 9): each is a source tree
//! (`repo/`) and a cluster snapshot (`live/`: the Application with its history, the live
//! objects with their `managedFields`, and the context a diagnosis needs). These tests run
//! the real binary on every bundle and pin its diagnosis: the verdict, the key finding (path,
//! git's and the cluster's values, the cause, where git declares it, the fixes in order), the
//! markdown report, that no Secret value is ever printed, and that `plumb diff --app` agrees.

mod common;
use common::{TmpDir, copy_tree, err, out, tmp};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn plumb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(args)
        .current_dir(root())
        .env_remove("KUBECTL_EXTERNAL_DIFF")
        .output()
        .expect("plumb runs")
}

/// Standard base64 (with padding), as a Secret's `data` holds its values.
fn base64(s: &str) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let b = s.as_bytes();
    let mut o = String::new();
    for c in b.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                o.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                o.push('=');
            }
        }
    }
    o
}

/// The finding a bundle is about.
struct Key {
    group: &'static str,
    kind: &'static str,
    namespace: &'static str,
    name: &'static str,
    path: &'static str,
    /// `None`: the side does not have the field (omitted from the JSON).
    desired: Option<Value>,
    live: Option<Value>,
    cause_type: &'static str,
    cause_name: &'static str,
    cause_manager: Option<&'static str>,
    file: &'static str,
    line: u64,
    fixes: &'static [&'static str],
}

struct Bundle {
    /// `examples/<dir>`.
    dir: &'static str,
    app: &'static str,
    verdict: &'static str,
    /// Syncs of the last revision in a row (`loop.syncs`).
    syncs: u64,
    key: Key,
    /// Secret values the bundle holds (git's `stringData`, the live Secrets' `data` and
    /// their last-applied copies): never printed, plain or base64.
    secrets: &'static [&'static str],
}

impl Bundle {
    fn live(&self) -> String {
        format!("examples/{}/live", self.dir)
    }

    fn repo(&self) -> String {
        format!("examples/{}/repo", self.dir)
    }

    fn doctor(&self, format: &str) -> Output {
        let (live, repo) = (self.live(), self.repo());
        plumb(&[
            "doctor", self.app, "--live", &live, "--repo", &repo, "-o", format,
        ])
    }

    fn diff(&self, format: &str) -> Output {
        let (live, repo) = (self.live(), self.repo());
        let app = format!("examples/{}/app.yaml", self.dir);
        plumb(&[
            "diff", "--app", &app, "--repo", &repo, "--live", &live, "-o", format,
        ])
    }

    /// Runs every check; returns the JSON report and the key finding for more.
    fn check(&self) -> (Value, Value) {
        let k = &self.key;
        let o = self.doctor("json");
        assert_eq!(o.status.code(), Some(1), "{}{}", out(&o), err(&o));
        let doc: Value = serde_json::from_str(&out(&o)).expect("one JSON document");
        assert_eq!(doc["app"], self.app);
        assert_eq!(doc["verdict"], self.verdict, "{doc:#}");
        assert_eq!(doc["loop"]["syncs"], self.syncs, "{doc:#}");
        let finding = doc["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .find(|f| {
                f["resource"]
                    == json!({"group": k.group, "kind": k.kind, "namespace": k.namespace, "name": k.name})
                    && f["path"] == k.path
            })
            .unwrap_or_else(|| panic!("no finding for {} {}: {doc:#}", k.name, k.path))
            .clone();
        assert_eq!(finding.get("desired"), k.desired.as_ref(), "{finding:#}");
        assert_eq!(finding.get("live"), k.live.as_ref(), "{finding:#}");
        assert_eq!(finding["cause"]["type"], k.cause_type, "{finding:#}");
        assert_eq!(finding["cause"]["name"], k.cause_name, "{finding:#}");
        if let Some(m) = k.cause_manager {
            assert_eq!(finding["cause"]["manager"], m, "{finding:#}");
        }
        assert_eq!(finding["declaredAt"]["file"], k.file, "{finding:#}");
        assert_eq!(finding["declaredAt"]["line"], k.line, "{finding:#}");
        let fixes: Vec<&str> = finding["fixes"]
            .as_array()
            .expect("fixes")
            .iter()
            .map(|f| f["type"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(fixes, k.fixes, "{finding:#}");

        let md = self.doctor("markdown");
        assert_eq!(md.status.code(), Some(1), "{}", err(&md));
        let heading = format!("### plumb doctor: `{}` — **{}**", self.app, self.verdict);
        assert!(out(&md).contains(&heading), "{}", out(&md));
        assert!(out(&md).contains(k.cause_name), "{}", out(&md));
        assert!(out(&md).contains(k.path), "{}", out(&md));

        let text = self.doctor("text");
        assert_eq!(text.status.code(), Some(1), "{}", err(&text));

        // The page: the writer, the field, where git declares it with that line's text from
        // the file at the rendered revision, and nothing loaded from elsewhere.
        let html = self.doctor("html");
        assert_eq!(html.status.code(), Some(1), "{}", err(&html));
        let page = out(&html);
        assert!(page.starts_with("<!doctype html>"), "{page}");
        assert!(page.contains(k.cause_name), "{page}");
        assert!(page.contains(&format!("<code>{}</code>", k.path)), "{page}");
        assert!(
            page.contains(&format!("<code>{}:{}</code>", k.file, k.line)),
            "{page}"
        );
        let declared_line = std::fs::read_to_string(root().join(self.repo()).join(k.file))
            .expect("declaring file")
            .lines()
            .nth(k.line as usize - 1)
            .expect("declared line")
            .to_string();
        let shown = format!(
            "<span class=\"here\"><span class=\"lineno\">{:>4} </span>{}",
            k.line,
            declared_line.replace('\'', "&#39;").replace('"', "&#34;")
        );
        assert!(page.contains(&shown), "{shown} in {page}");
        for external in ["<script", "src=", "http://", "https://", "url("] {
            assert!(!page.contains(external), "{external} in {page}");
        }
        // Links only within the page.
        assert!(
            page.split("href=\"")
                .skip(1)
                .all(|rest| rest.starts_with('#')),
            "{page}"
        );

        let diff = self.diff("argocd");
        assert_eq!(diff.status.code(), Some(1), "{}{}", out(&diff), err(&diff));
        let header = format!(
            "===== {}/{} {}/{} ======",
            k.group, k.kind, k.namespace, k.name
        );
        assert!(out(&diff).contains(&header), "{}", out(&diff));
        let diff_json = self.diff("json");
        assert_eq!(diff_json.status.code(), Some(1), "{}", err(&diff_json));

        for o in [&o, &md, &text, &html, &diff, &diff_json] {
            let all = format!("{}{}", out(o), err(o));
            for s in self.secrets {
                let b = base64(s);
                for needle in [s.to_string(), b.trim_end_matches('=').to_string()] {
                    assert!(!all.contains(&needle), "a Secret value leaks: {needle}");
                }
            }
        }
        (doc, finding)
    }
}

fn payments() -> Bundle {
    Bundle {
        dir: "payments",
        app: "payments-prod",
        verdict: "loop",
        syncs: 5,
        key: Key {
            group: "apps",
            kind: "Deployment",
            namespace: "pay-prod",
            name: "payments-api",
            path: "/spec/template/spec/containers/0/imagePullPolicy",
            desired: Some(json!("IfNotPresent")),
            live: Some(json!("Always")),
            cause_type: "mutating-webhook",
            cause_name: "platform-policy-mutate",
            cause_manager: None,
            file: "overlays/prod/pull-policy.yaml",
            line: 10,
            fixes: &["stop-declaring", "ignore-differences", "server-side-diff"],
        },
        secrets: &["correct-horse-battery-staple", "rotated-by-hand-at-3am"],
    }
}

#[test]
fn payments_webhook_fight() {
    let (_, finding) = payments().check();
    let stop = &finding["fixes"][0];
    assert_eq!(stop["action"], "delete-file");
    assert_eq!(
        stop["kustomization"]["file"],
        "overlays/prod/kustomization.yaml"
    );
}

#[test]
fn payments_secret_value_is_declared_in_string_data() {
    let o = payments().doctor("json");
    let doc: Value = serde_json::from_str(&out(&o)).expect("json");
    let secret = doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["resource"]["kind"] == "Secret" && f["path"] == "/data/password")
        .expect("the Secret's password differs");
    assert_eq!(
        secret["declaredAt"],
        json!({"file": "base/secret.yaml", "line": 7, "kustomization": "base/kustomization.yaml"})
    );
}

fn hpa_replicas() -> Bundle {
    Bundle {
        dir: "hpa-replicas",
        app: "storefront-prod",
        verdict: "loop",
        syncs: 7,
        key: Key {
            group: "apps",
            kind: "Deployment",
            namespace: "shop-prod",
            name: "storefront-web",
            path: "/spec/replicas",
            desired: Some(json!(2)),
            live: Some(json!(7)),
            cause_type: "controller",
            cause_name: "HorizontalPodAutoscaler shop-prod/storefront-web",
            cause_manager: Some("kube-controller-manager"),
            file: "base/deployment.yaml",
            line: 8,
            fixes: &["stop-declaring", "ignore-differences"],
        },
        secrets: &["9f3c1e7a-storefront-prod-signing-key"],
    }
}

#[test]
fn hpa_owns_replicas() {
    let (doc, finding) = hpa_replicas().check();
    assert_eq!(doc["findings"].as_array().map(Vec::len), Some(1), "{doc:#}");
    assert_eq!(doc["loop"]["spanSeconds"], 749);
    let evidence = finding["cause"]["evidence"].to_string();
    assert!(evidence.contains("subresource scale"), "{evidence}");
    assert!(evidence.contains("the HPA wants 7 replicas"), "{evidence}");
    // The seed's documented pattern: remove replicas from the Deployment in git…
    assert_eq!(finding["fixes"][0]["action"], "remove-lines");
    assert_eq!(finding["fixes"][0]["file"], "base/deployment.yaml");
    assert_eq!(finding["fixes"][0]["lines"], json!([8]));
    // …or ignore what the HPA's manager writes, and keep sync from re-applying it.
    assert_eq!(
        finding["fixes"][1]["rule"],
        json!({"group": "apps", "kind": "Deployment", "name": "storefront-web",
               "managedFieldsManagers": ["kube-controller-manager"]})
    );
    assert_eq!(
        finding["fixes"][1]["syncOptions"],
        json!(["RespectIgnoreDifferences=true"])
    );
}

#[test]
fn hpa_loop_counts_self_heal_attempts() {
    let o = hpa_replicas().doctor("json");
    let doc: Value = serde_json::from_str(&out(&o)).expect("json");
    assert_eq!(doc["loop"]["selfHealAttempts"], 6, "{doc:#}");
}

fn cert_manager() -> Bundle {
    let vwc = root().join(
        "examples/cert-manager-cabundle/live/validatingwebhookconfiguration-tenant-guard.json",
    );
    let live: Value = serde_json::from_slice(&std::fs::read(vwc).expect("snapshot")).expect("json");
    let ca = live
        .pointer("/webhooks/0/clientConfig/caBundle")
        .cloned()
        .expect("cainjector's CA");
    Bundle {
        dir: "cert-manager-cabundle",
        app: "tenant-guard",
        verdict: "loop",
        syncs: 5,
        key: Key {
            group: "admissionregistration.k8s.io",
            kind: "ValidatingWebhookConfiguration",
            namespace: "",
            name: "tenant-guard",
            path: "/webhooks/0/clientConfig/caBundle",
            desired: Some(json!("Cg==")),
            live: Some(ca),
            cause_type: "controller",
            cause_name: "cert-manager cainjector",
            cause_manager: Some("cainjector"),
            file: "base/webhook.yaml",
            line: 15,
            fixes: &["stop-declaring", "ignore-differences"],
        },
        secrets: &["hec-3f0a9c1e-77b2-4d5e-a8c6-tenantguard"],
    }
}

#[test]
fn cainjector_fills_ca_bundle() {
    let (doc, finding) = cert_manager().check();
    assert_eq!(doc["findings"].as_array().map(Vec::len), Some(1), "{doc:#}");
    let evidence = finding["cause"]["evidence"].to_string();
    assert!(
        evidence.contains("cert-manager.io/inject-ca-from: tenant-guard/tenant-guard-serving"),
        "{evidence}"
    );
    assert_eq!(finding["fixes"][0]["lines"], json!([15]));
    assert_eq!(
        finding["fixes"][1]["rule"]["managedFieldsManagers"],
        json!(["cainjector"])
    );
}

fn hand_edit() -> Bundle {
    Bundle {
        dir: "hand-edit",
        app: "checkout-staging",
        verdict: "drift",
        syncs: 1,
        key: Key {
            group: "",
            kind: "Service",
            namespace: "checkout-staging",
            name: "checkout-api",
            path: "/spec/selector/app",
            desired: Some(json!("checkout-api")),
            live: Some(json!("checkout-api-debug")),
            cause_type: "manual-edit",
            cause_name: "kubectl-edit",
            cause_manager: Some("kubectl-edit"),
            file: "base/service.yaml",
            line: 8,
            fixes: &["sync"],
        },
        secrets: &["sandbox-7Qm2xV9kR4wLp8Zt"],
    }
}

#[test]
fn kubectl_edit_is_drift_one_sync_fixes() {
    let (doc, finding) = hand_edit().check();
    assert_eq!(doc["findings"].as_array().map(Vec::len), Some(1), "{doc:#}");
    let evidence = finding["cause"]["evidence"].to_string();
    assert!(evidence.contains("2026-11-05T02:14:37Z"), "{evidence}");
    assert!(evidence.contains("after the last sync"), "{evidence}");
    assert_eq!(
        finding["fixes"][0]["command"],
        "argocd app sync checkout-staging"
    );
}

fn crd_default() -> Bundle {
    Bundle {
        dir: "crd-default",
        app: "order-events",
        verdict: "loop",
        syncs: 5,
        key: Key {
            group: "events.example.com",
            kind: "Topic",
            namespace: "events",
            name: "order-events",
            path: "/spec/retentionHours",
            desired: Some(json!(72)),
            live: None,
            cause_type: "api-server-default",
            cause_name: "CustomResourceDefinition topics.events.example.com",
            cause_manager: None,
            file: "topics/order-events.yaml",
            line: 9,
            fixes: &["stop-declaring", "ignore-differences"],
        },
        secrets: &["Zx8-consumer-ohQu4aiK-prod"],
    }
}

#[test]
fn crd_schema_prunes_a_declared_field() {
    let (doc, finding) = crd_default().check();
    assert_eq!(doc["findings"].as_array().map(Vec::len), Some(1), "{doc:#}");
    let evidence = finding["cause"]["evidence"].to_string();
    assert!(
        evidence.contains("has no field `retentionHours` under /spec"),
        "{evidence}"
    );
    assert_eq!(
        finding["fixes"][1]["rule"]["jsonPointers"],
        json!(["/spec/retentionHours"])
    );
}

/// A scratch copy of `examples/<example>`, to change for one test.
fn example_copy(example: &str) -> TmpDir {
    let d = tmp("doctor", example);
    copy_tree(&root().join("examples").join(example), &d);
    d
}

#[test]
fn crd_null_in_git_is_not_a_difference() {
    // crd-default with payment-events declaring `cleanupPolicy: null` (meaning: the
    // default): the API server dropped the null and defaulted `delete`; Argo CD's
    // last-applied keeps the null.
    let d = example_copy("crd-default");
    let yaml = d.join("repo/topics/payment-events.yaml");
    let text = std::fs::read_to_string(&yaml).expect("yaml");
    std::fs::write(
        &yaml,
        text.replace("cleanupPolicy: compact", "cleanupPolicy: null"),
    )
    .expect("write");
    let live = d.join("live/topic-payment-events.json");
    let mut topic: Value =
        serde_json::from_slice(&std::fs::read(&live).expect("live")).expect("json");
    topic["spec"]["cleanupPolicy"] = json!("delete");
    let la = "kubectl.kubernetes.io/last-applied-configuration";
    let applied = topic["metadata"]["annotations"][la]
        .as_str()
        .expect("last-applied")
        .replace("\"cleanupPolicy\":\"compact\"", "\"cleanupPolicy\":null");
    topic["metadata"]["annotations"][la] = json!(applied);
    std::fs::write(&live, serde_json::to_vec_pretty(&topic).expect("json")).expect("write");

    let (live_dir, repo_dir) = (d.join("live"), d.join("repo"));
    let o = plumb(&[
        "doctor",
        "order-events",
        "--live",
        live_dir.to_str().expect("utf-8"),
        "--repo",
        repo_dir.to_str().expect("utf-8"),
        "-o",
        "json",
    ]);
    let doc: Value = serde_json::from_str(&out(&o)).expect("json");
    let names: Vec<&str> = doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["resource"]["name"].as_str())
        .collect();
    assert_eq!(names, ["order-events"], "{doc:#}");
}

#[test]
fn an_app_name_in_two_namespaces_is_named_with_its_namespace() {
    // The payments bundle with a second Application `payments-prod`, in `team-b` (Argo CD's
    // apps in any namespace): the bare name is refused, naming both namespaces; the
    // `NAMESPACE/NAME` form picks one.
    let d = example_copy("payments");
    let app_file = d.join("live/application-payments-prod.json");
    let mut other: Value =
        serde_json::from_slice(&std::fs::read(&app_file).expect("app")).expect("json");
    other["metadata"]["namespace"] = json!("team-b");
    std::fs::write(
        d.join("live/application-team-b-payments-prod.json"),
        serde_json::to_vec_pretty(&other).expect("json"),
    )
    .expect("write");
    let (live, repo) = (d.join("live"), d.join("repo"));
    let doctor = |app: &str| {
        plumb(&[
            "doctor",
            app,
            "--live",
            live.to_str().expect("utf-8"),
            "--repo",
            repo.to_str().expect("utf-8"),
            "-o",
            "json",
        ])
    };

    let o = doctor("payments-prod");
    assert_eq!(o.status.code(), Some(2), "{}{}", out(&o), err(&o));
    assert_eq!(
        err(&o).trim(),
        "error: Application payments-prod: there is one in each of the namespaces argocd, \
         team-b; name one as NAMESPACE/payments-prod"
    );
    assert!(out(&o).is_empty(), "{}", out(&o));

    let o = doctor("argocd/payments-prod");
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let doc: Value = serde_json::from_str(&out(&o)).expect("json");
    assert_eq!(doc["verdict"], "loop", "{doc:#}");

    let o = doctor("team-c/payments-prod");
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("not found"), "{}", err(&o));
}
