//! Text output of `argocd app diff`: YAML rendering and line diffs.
//!
//! Argo CD prints each differing resource by marshalling both sides with
//! `sigs.k8s.io/yaml` (JSON-marshal, then go-yaml v2 re-marshals it) into two
//! temporary files and running `diff LIVE TARGET` on them. This module
//! reproduces both steps byte for byte:
//!
//! * [`to_yaml`] renders a JSON value the way `sigs.k8s.io/yaml.Marshal` does
//!   (go-yaml v2 emitter: key order, scalar styles, quoting, 80-column folding).
//! * [`normal_diff`] and [`unified_diff`] print GNU diffutils' default
//!   ("normal") and `-u` formats. They reimplement GNU diff's own line
//!   matching (identical prefix/suffix trimming, discarding of unmatchable
//!   lines, Myers' middle-snake search, boundary shifting), so that hunks land
//!   where GNU diff puts them, not just somewhere valid.
//!
//! Known differences from the Go and C originals, all outside what real
//! Kubernetes objects contain:
//!
//! * Strings that make Go's `JSONToYAML` fail (raw U+007F or C1 control
//!   characters other than U+0085, keys containing U+0085) are rendered
//!   escaped instead of failing.
//! * When go-yaml's key order is cyclic for a map (e.g. keys `a1`, `a01`,
//!   `a0b`), Go's output depends on map iteration order and varies between
//!   runs; this module picks one fixed order.
//! * Non-ASCII keys are ordered with `char::is_alphabetic`/`is_numeric`
//!   standing in for Go's `unicode.IsLetter`/`IsDigit`.
//! * GNU diff's binary-file detection (NUL bytes) is not reproduced.
//!
//! The parts, one file each:
//!
//! * `yaml.rs`: what the object looks like by the time go-yaml emits it (the
//!   JSON round trip, key order, the style asked for each string); [`to_yaml`]
//!   and [`to_yaml_with_comments`].
//! * `yaml_resolve.rs`: whether a plain string would read back as a string,
//!   which decides its quotes.
//! * `yaml_emit.rs`: libyaml's emitter as go-yaml v2 runs it (style fallbacks,
//!   escapes, folding, indentation, keys).
//! * `diff_algo.rs`: which lines changed, as GNU diff decides it.
//! * `diff_output.rs`: GNU diff's normal and `-u` formats of those changes;
//!   [`normal_diff`] and [`unified_diff`].
//!
//! The header per resource (`===== … ======`) is the
//! caller's (`plumb diff`'s output module), not this module's.

mod diff_algo;
mod diff_output;
mod yaml;
mod yaml_emit;
mod yaml_resolve;

pub use diff_output::{Hunk, Line, hunks, normal_diff, unified_diff};
pub use yaml::{object_to_yaml, to_yaml, to_yaml_with_comments, write_object_yaml};

#[cfg(test)]
mod tests {
    //! The two halves together: objects rendered with `to_yaml`, then diffed as
    //! `argocd app diff` prints them (and as GNU diff does, when installed).
    //! Also the helpers the parts' tests share.

    use super::*;
    use serde_json::{Value, json};

    /// Strips the newline that follows the opening quote of an expectation.
    pub(super) fn doc(s: &str) -> &str {
        s.strip_prefix('\n').unwrap_or(s)
    }

    pub(super) fn yaml_of(json_text: &str) -> String {
        let v: Value = serde_json::from_str(json_text).expect("test input is JSON");
        to_yaml(&v)
    }

    fn deployment(image: &str, replicas: u32, extra_env: bool, tier: bool) -> Value {
        let mut env = vec![
            json!({"name": "A", "value": "1"}),
            json!({"name": "C", "value": "3"}),
        ];
        if extra_env {
            env.insert(1, json!({"name": "B", "value": "2"}));
        }
        let mut labels = json!({"app": "web"});
        if tier {
            labels["tier"] = json!("frontend");
        }
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "prod", "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
              "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                {"name": "app", "image": image, "env": env, "ports": [{"containerPort": 80, "protocol": "TCP"}]},
                {"name": "sidecar", "image": "envoy:1.0", "args": ["--log-level", "info"]}]}}}
        })
    }

    #[test]
    fn deployment_diff_as_argocd_prints_it() {
        let live = to_yaml(&deployment("nginx:1.25", 2, false, false));
        let target = to_yaml(&deployment("nginx:1.26", 3, true, true));
        assert_eq!(
            normal_diff(&live, &target),
            "5a6\n>     tier: frontend\n9c10\n<   replicas: 2\n---\n>   replicas: 3\n21a23,24\n>         - name: B\n>           value: \"2\"\n24c27\n<         image: nginx:1.25\n---\n>         image: nginx:1.26\n"
        );
        assert_eq!(
            unified_diff(&live, &target, "live", "target"),
            "--- live\n+++ target\n@@ -3,10 +3,11 @@\n metadata:\n   labels:\n     app: web\n+    tier: frontend\n   name: web\n   namespace: prod\n spec:\n-  replicas: 2\n+  replicas: 3\n   selector:\n     matchLabels:\n       app: web\n@@ -19,9 +20,11 @@\n       - env:\n         - name: A\n           value: \"1\"\n+        - name: B\n+          value: \"2\"\n         - name: C\n           value: \"3\"\n-        image: nginx:1.25\n+        image: nginx:1.26\n         name: app\n         ports:\n         - containerPort: 80\n"
        );
    }

    // --- random texts for property tests

    pub(super) struct XorShift(pub(super) u64);

    impl XorShift {
        pub(super) fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            usize::try_from(self.0 % u64::try_from(n).expect("small")).expect("small")
        }
    }

    pub(super) fn random_text(r: &mut XorShift, alphabet: &[&str], max_lines: usize) -> String {
        let n = r.below(max_lines + 1);
        let mut s = String::new();
        for i in 0..n {
            s.push_str(alphabet[r.below(alphabet.len())]);
            if i + 1 < n || r.below(4) != 0 {
                s.push('\n');
            }
        }
        s
    }

    // --- exact match against the real GNU diff, when it is installed

    pub(super) const GNU_DIFF: &str = "/usr/bin/diff";

    fn gnu_diff(args: &[&str], old: &str, new: &str, tag: &str) -> Option<String> {
        if !std::path::Path::new(GNU_DIFF).exists() {
            return None;
        }
        let dir = std::env::temp_dir();
        let pa = dir.join(format!("plumb-text-{}-{tag}-old", std::process::id()));
        let pb = dir.join(format!("plumb-text-{}-{tag}-new", std::process::id()));
        std::fs::write(&pa, old).ok()?;
        std::fs::write(&pb, new).ok()?;
        let out = std::process::Command::new(GNU_DIFF)
            .args(args)
            .arg(&pa)
            .arg(&pb)
            .output()
            .ok()?;
        let _ = std::fs::remove_file(&pa);
        let _ = std::fs::remove_file(&pb);
        String::from_utf8(out.stdout).ok()
    }

    pub(super) fn assert_same_as_gnu(old: &str, new: &str, tag: &str) -> bool {
        let Some(want) = gnu_diff(&[], old, new, tag) else {
            return false;
        };
        assert_eq!(
            normal_diff(old, new),
            want,
            "normal diff of\n{old}\n---- vs ----\n{new}"
        );
        let want_u = gnu_diff(
            &["-u", "--label", "live", "--label", "target"],
            old,
            new,
            tag,
        )
        .unwrap_or_default();
        assert_eq!(
            unified_diff(old, new, "live", "target"),
            want_u,
            "unified diff of\n{old}\n---- vs ----\n{new}"
        );
        true
    }

    /// Realistic objects and edits: every pair is rendered with `to_yaml` and
    /// diffed by both implementations.
    fn yaml_corpus() -> Vec<(Value, Value)> {
        let cm = |data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "prod"}, "data": data});
        let svc = |ports: Value| json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": {"ports": ports, "selector": {"app": "web"}, "type": "ClusterIP"}});
        let port = |name: &str, n: u16| json!({"name": name, "port": n, "protocol": "TCP", "targetPort": n});
        let base = deployment("nginx:1.25", 2, false, false);
        let mut with_probe = base.clone();
        with_probe["spec"]["template"]["spec"]["containers"][0]["readinessProbe"] =
            json!({"httpGet": {"path": "/healthz", "port": 80}, "periodSeconds": 10});
        let mut two_apps = base.clone();
        let first = two_apps["spec"]["template"]["spec"]["containers"][0].clone();
        if let Some(list) = two_apps["spec"]["template"]["spec"]["containers"].as_array_mut() {
            list.insert(0, first);
        }
        vec![
            (base.clone(), deployment("nginx:1.26", 2, false, false)),
            (base.clone(), deployment("nginx:1.25", 5, true, true)),
            (deployment("nginx:1.25", 2, true, false), base.clone()),
            (base.clone(), with_probe.clone()),
            (with_probe, deployment("nginx:1.27", 1, true, true)),
            (base.clone(), two_apps),
            (Value::Null, base.clone()),
            (base.clone(), Value::Null),
            (
                cm(json!({"app.properties": "a=1\nb=2\nc=3\n", "flag": "true"})),
                cm(json!({"app.properties": "a=1\nb=20\nc=3\nd=4\n", "flag": "false", "new": "x"})),
            ),
            (
                cm(json!({"script.sh": "#!/bin/sh\nset -e\necho start\n\necho done\n"})),
                cm(json!({"script.sh": "#!/bin/sh\nset -e\necho start\necho middle\n\necho done"})),
            ),
            (
                svc(json!([port("http", 80), port("https", 443)])),
                svc(json!([port("https", 443), port("http", 80)])),
            ),
            (
                svc(json!([port("http", 80)])),
                svc(json!([
                    port("http", 80),
                    port("metrics", 9090),
                    port("grpc", 9091)
                ])),
            ),
        ]
    }

    #[test]
    fn yaml_object_diffs_match_gnu_diff() {
        let render = |v: &Value| {
            if v.is_null() {
                String::new()
            } else {
                to_yaml(v)
            }
        };
        let mut compared = 0;
        for (i, (live, target)) in yaml_corpus().iter().enumerate() {
            if assert_same_as_gnu(&render(live), &render(target), &format!("yaml{i}")) {
                compared += 1;
            }
        }
        if compared == 0 {
            eprintln!("skipped: {GNU_DIFF} not found");
        }
    }
}
