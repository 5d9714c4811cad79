//! API-server defaults for the common built-in kinds, applied as Argo CD applies
//! its scheme defaulting: only fields that are missing are filled, on both the
//! predicted and the live object, so a field desired introduces (a new container,
//! a replaced atomic list) compares equal to what the API server will store.
//!
//! Reimplemented from the behaviour of Kubernetes' `SetDefaults_*` functions
//! (pkg/apis/*/v1/defaults.go) for the kinds GitOps repositories hold most.

use crate::ObjectType;
use serde_json::{Map, Value, json};

fn obj(v: &mut Value) -> Option<&mut Map<String, Value>> {
    v.as_object_mut()
}

fn set(m: &mut Map<String, Value>, k: &str, v: Value) {
    if !m.contains_key(k) || m[k].is_null() {
        m.insert(k.to_string(), v);
    }
}

fn child<'a>(m: &'a mut Map<String, Value>, k: &str) -> Option<&'a mut Map<String, Value>> {
    m.get_mut(k).and_then(Value::as_object_mut)
}

fn each<'a>(
    m: &'a mut Map<String, Value>,
    k: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    m.get_mut(k)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

/// Applies defaults to a built-in object in place. Unknown kinds are left alone.
pub fn apply(object: &mut Value) {
    let ObjectType {
        api_version,
        group,
        kind,
    } = ObjectType::of(object);
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let Some(o) = obj(object) else { return };
    match (group.as_str(), kind.as_str()) {
        ("apps" | "extensions", "Deployment") => {
            if let Some(spec) = child(o, "spec") {
                deployment_spec(spec);
            }
        }
        ("apps", "StatefulSet") => {
            if let Some(spec) = child(o, "spec") {
                set(spec, "replicas", json!(1));
                set(spec, "podManagementPolicy", json!("OrderedReady"));
                set(spec, "revisionHistoryLimit", json!(10));
                set(spec, "updateStrategy", json!({"type": "RollingUpdate"}));
                if let Some(us) = child(spec, "updateStrategy")
                    && us.get("type").and_then(Value::as_str) == Some("RollingUpdate")
                {
                    set(us, "rollingUpdate", json!({}));
                    if let Some(ru) = child(us, "rollingUpdate") {
                        set(ru, "partition", json!(0));
                    }
                }
                set(spec, "persistentVolumeClaimRetentionPolicy", json!({}));
                if let Some(p) = child(spec, "persistentVolumeClaimRetentionPolicy") {
                    set(p, "whenDeleted", json!("Retain"));
                    set(p, "whenScaled", json!("Retain"));
                }
                for pvc in each(spec, "volumeClaimTemplates") {
                    if let Some(s) = child(pvc, "spec") {
                        pvc_spec(s);
                    }
                }
                pod_template(spec);
            }
        }
        ("apps" | "extensions", "DaemonSet") => {
            if let Some(spec) = child(o, "spec") {
                set(spec, "revisionHistoryLimit", json!(10));
                set(spec, "updateStrategy", json!({"type": "RollingUpdate"}));
                if let Some(us) = child(spec, "updateStrategy")
                    && us.get("type").and_then(Value::as_str) == Some("RollingUpdate")
                {
                    set(us, "rollingUpdate", json!({}));
                    if let Some(ru) = child(us, "rollingUpdate") {
                        set(ru, "maxUnavailable", json!(1));
                        set(ru, "maxSurge", json!(0));
                    }
                }
                pod_template(spec);
            }
        }
        ("apps" | "extensions", "ReplicaSet") | ("", "ReplicationController") => {
            if let Some(spec) = child(o, "spec") {
                set(spec, "replicas", json!(1));
                pod_template(spec);
            }
        }
        ("batch", "Job") => {
            if let Some(spec) = child(o, "spec") {
                job_spec(spec);
            }
        }
        ("batch", "CronJob") => {
            if let Some(spec) = child(o, "spec") {
                set(spec, "concurrencyPolicy", json!("Allow"));
                set(spec, "suspend", json!(false));
                set(spec, "successfulJobsHistoryLimit", json!(3));
                set(spec, "failedJobsHistoryLimit", json!(1));
                // Only the pod template inside: the Job defaults are the Job's own (the API
                // server stores a CronJob's jobTemplate without them).
                if let Some(js) = child(spec, "jobTemplate").and_then(|t| child(t, "spec")) {
                    pod_template(js);
                }
            }
        }
        ("", "Pod") => {
            if let Some(spec) = child(o, "spec") {
                pod_spec(spec);
                set(spec, "enableServiceLinks", json!(true));
            }
        }
        ("", "PodTemplate") => {
            if let Some(t) = child(o, "template").and_then(|t| child(t, "spec")) {
                pod_spec(t);
            }
        }
        ("", "Service") => {
            if let Some(spec) = child(o, "spec") {
                service_spec(spec);
            }
        }
        ("", "PersistentVolumeClaim") => {
            if let Some(spec) = child(o, "spec") {
                pvc_spec(spec);
            }
        }
        ("", "Secret") => set(o, "type", json!("Opaque")),
        ("", "LimitRange") => {
            if let Some(spec) = child(o, "spec") {
                for item in each(spec, "limits") {
                    limit_range_item(item);
                }
            }
        }
        ("", "Namespace") if !name.is_empty() => {
            set(o, "metadata", json!({}));
            if let Some(meta) = child(o, "metadata") {
                set(meta, "labels", json!({}));
                if let Some(labels) = child(meta, "labels") {
                    set(labels, "kubernetes.io/metadata.name", json!(name));
                }
            }
        }
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            for s in each(o, "subjects") {
                // A ServiceAccount's group is "", which Go's omitempty does not write.
                let api_group = match s.get("kind").and_then(Value::as_str) {
                    Some("User" | "Group") => "rbac.authorization.k8s.io",
                    _ => continue,
                };
                set(s, "apiGroup", json!(api_group));
            }
        }
        ("autoscaling", "HorizontalPodAutoscaler") => {
            if let Some(spec) = child(o, "spec") {
                set(spec, "minReplicas", json!(1));
                if api_version == "autoscaling/v2" && !spec.contains_key("metrics") {
                    spec.insert(
                        "metrics".into(),
                        json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]),
                    );
                }
            }
        }
        ("networking.k8s.io", "NetworkPolicy") => {
            if let Some(spec) = child(o, "spec") {
                for dir in ["ingress", "egress"] {
                    for rule in each(spec, dir) {
                        for p in each(rule, "ports") {
                            set(p, "protocol", json!("TCP"));
                        }
                    }
                }
                if !spec.contains_key("policyTypes") {
                    let mut types = vec![json!("Ingress")];
                    if spec
                        .get("egress")
                        .and_then(Value::as_array)
                        .is_some_and(|e| !e.is_empty())
                    {
                        types.push(json!("Egress"));
                    }
                    spec.insert("policyTypes".into(), Value::Array(types));
                }
            }
        }
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
        ) => {
            let v1 = api_version.ends_with("/v1");
            let mutating = kind.starts_with("Mutating");
            for w in each(o, "webhooks") {
                set(
                    w,
                    "failurePolicy",
                    json!(if v1 { "Fail" } else { "Ignore" }),
                );
                set(
                    w,
                    "matchPolicy",
                    json!(if v1 { "Equivalent" } else { "Exact" }),
                );
                set(w, "namespaceSelector", json!({}));
                set(w, "objectSelector", json!({}));
                set(w, "timeoutSeconds", json!(if v1 { 10 } else { 30 }));
                if mutating {
                    set(w, "reinvocationPolicy", json!("Never"));
                }
                if !v1 {
                    set(w, "sideEffects", json!("Unknown"));
                    set(w, "admissionReviewVersions", json!(["v1beta1"]));
                }
                for r in each(w, "rules") {
                    set(r, "scope", json!("*"));
                }
                if let Some(svc) = child(w, "clientConfig").and_then(|c| child(c, "service")) {
                    set(svc, "port", json!(443));
                }
            }
        }
        _ => {}
    }
}

/// A container limit: the default limit falls back to max, the default request to the
/// default limit, then to min, resource by resource.
fn limit_range_item(item: &mut Map<String, Value>) {
    if item.get("type").and_then(Value::as_str) != Some("Container") {
        return;
    }
    let resources = |item: &Map<String, Value>, k: &str| -> Map<String, Value> {
        item.get(k)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let (max, min) = (resources(item, "max"), resources(item, "min"));
    let mut default = resources(item, "default");
    for (k, v) in max {
        default.entry(k).or_insert(v);
    }
    let mut request = resources(item, "defaultRequest");
    for (k, v) in default.iter().chain(&min) {
        request.entry(k.clone()).or_insert_with(|| v.clone());
    }
    // Empty maps are not written (omitempty).
    for (k, m) in [("default", default), ("defaultRequest", request)] {
        if !m.is_empty() {
            item.insert(k.into(), Value::Object(m));
        }
    }
}

fn deployment_spec(spec: &mut Map<String, Value>) {
    set(spec, "replicas", json!(1));
    set(spec, "revisionHistoryLimit", json!(10));
    set(spec, "progressDeadlineSeconds", json!(600));
    set(spec, "strategy", json!({}));
    if let Some(st) = child(spec, "strategy") {
        set(st, "type", json!("RollingUpdate"));
        if st.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
            set(st, "rollingUpdate", json!({}));
            if let Some(ru) = child(st, "rollingUpdate") {
                set(ru, "maxUnavailable", json!("25%"));
                set(ru, "maxSurge", json!("25%"));
            }
        }
    }
    pod_template(spec);
}

fn job_spec(spec: &mut Map<String, Value>) {
    if !spec.contains_key("completions") && !spec.contains_key("parallelism") {
        spec.insert("completions".into(), json!(1));
        spec.insert("parallelism".into(), json!(1));
    }
    set(spec, "parallelism", json!(1));
    set(spec, "backoffLimit", json!(6));
    set(spec, "completionMode", json!("NonIndexed"));
    set(spec, "suspend", json!(false));
    if !spec.contains_key("podFailurePolicy") {
        set(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
    }
    pod_template(spec);
}

fn pod_template(spec: &mut Map<String, Value>) {
    if let Some(ps) = child(spec, "template").and_then(|t| child(t, "spec")) {
        pod_spec(ps);
    }
}

fn pod_spec(ps: &mut Map<String, Value>) {
    set(ps, "dnsPolicy", json!("ClusterFirst"));
    set(ps, "restartPolicy", json!("Always"));
    set(ps, "terminationGracePeriodSeconds", json!(30));
    set(ps, "securityContext", json!({}));
    set(ps, "schedulerName", json!("default-scheduler"));
    for list in ["containers", "initContainers"] {
        for c in each(ps, list) {
            container(c);
        }
    }
    for v in each(ps, "volumes") {
        volume(v);
    }
}

fn container(c: &mut Map<String, Value>) {
    set(c, "terminationMessagePath", json!("/dev/termination-log"));
    set(c, "terminationMessagePolicy", json!("File"));
    if let Some(image) = c.get("image").and_then(Value::as_str) {
        let policy = if image_is_latest(image) {
            "Always"
        } else {
            "IfNotPresent"
        };
        set(c, "imagePullPolicy", json!(policy));
    }
    for p in each(c, "ports") {
        set(p, "protocol", json!("TCP"));
    }
    for e in each(c, "env") {
        if let Some(fr) = child(e, "valueFrom").and_then(|vf| child(vf, "fieldRef")) {
            set(fr, "apiVersion", json!("v1"));
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = child(c, probe) {
            set(p, "timeoutSeconds", json!(1));
            set(p, "periodSeconds", json!(10));
            set(p, "successThreshold", json!(1));
            set(p, "failureThreshold", json!(3));
            http_get(p);
        }
    }
    if let Some(lc) = child(c, "lifecycle") {
        for h in ["postStart", "preStop"] {
            if let Some(h) = child(lc, h) {
                http_get(h);
            }
        }
    }
}

fn http_get(handler: &mut Map<String, Value>) {
    if let Some(g) = child(handler, "httpGet") {
        set(g, "path", json!("/"));
        set(g, "scheme", json!("HTTP"));
    }
}

/// `imagePullPolicy` defaults to Always for `:latest` or untagged images.
fn image_is_latest(image: &str) -> bool {
    if image.contains('@') {
        return false;
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.rsplit_once(':') {
        Some((_, tag)) => tag == "latest",
        None => true,
    }
}

fn volume(v: &mut Map<String, Value>) {
    for src in ["configMap", "secret", "downwardAPI", "projected"] {
        if let Some(s) = child(v, src) {
            set(s, "defaultMode", json!(420));
        }
    }
    if let Some(h) = child(v, "hostPath") {
        set(h, "type", json!(""));
    }
    let sources = v.keys().filter(|k| k.as_str() != "name").count();
    if sources == 0 {
        v.insert("emptyDir".into(), json!({}));
    }
}

fn pvc_spec(s: &mut Map<String, Value>) {
    set(s, "volumeMode", json!("Filesystem"));
}

fn service_spec(spec: &mut Map<String, Value>) {
    set(spec, "type", json!("ClusterIP"));
    set(spec, "sessionAffinity", json!("None"));
    let ty = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
        .to_string();
    if spec.get("sessionAffinity").and_then(Value::as_str) == Some("ClientIP") {
        set(
            spec,
            "sessionAffinityConfig",
            json!({"clientIP": {"timeoutSeconds": 10800}}),
        );
    }
    for p in each(spec, "ports") {
        set(p, "protocol", json!("TCP"));
        if let Some(port) = p.get("port").cloned() {
            set(p, "targetPort", port);
        }
    }
    if ty != "ExternalName" {
        set(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if ty == "NodePort" || ty == "LoadBalancer" {
        set(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if ty == "LoadBalancer" {
        set(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployment_and_pod_defaults() {
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"},
            "spec": {"template": {"spec": {"containers": [
                {"name": "a", "image": "nginx", "ports": [{"containerPort": 80}],
                 "readinessProbe": {"httpGet": {"port": 80}}},
                {"name": "b", "image": "reg:5000/app:1.2"}],
                "volumes": [{"name": "cfg", "configMap": {"name": "x"}}, {"name": "scratch"}]}}}});
        apply(&mut d);
        assert_eq!(d.pointer("/spec/replicas"), Some(&json!(1)));
        assert_eq!(
            d.pointer("/spec/strategy/rollingUpdate/maxSurge"),
            Some(&json!("25%"))
        );
        let c = "/spec/template/spec/containers";
        assert_eq!(
            d.pointer(&format!("{c}/0/imagePullPolicy")),
            Some(&json!("Always"))
        );
        assert_eq!(
            d.pointer(&format!("{c}/1/imagePullPolicy")),
            Some(&json!("IfNotPresent"))
        );
        assert_eq!(
            d.pointer(&format!("{c}/0/ports/0/protocol")),
            Some(&json!("TCP"))
        );
        assert_eq!(
            d.pointer(&format!("{c}/0/readinessProbe/httpGet/scheme")),
            Some(&json!("HTTP"))
        );
        assert_eq!(
            d.pointer("/spec/template/spec/volumes/0/configMap/defaultMode"),
            Some(&json!(420))
        );
        assert_eq!(
            d.pointer("/spec/template/spec/volumes/1/emptyDir"),
            Some(&json!({}))
        );
        assert_eq!(
            d.pointer("/spec/template/spec/dnsPolicy"),
            Some(&json!("ClusterFirst"))
        );
    }

    #[test]
    fn defaults_never_overwrite() {
        let mut s = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"},
            "spec": {"type": "NodePort", "sessionAffinity": "ClientIP", "ports": [{"port": 80, "targetPort": "http"}]}});
        apply(&mut s);
        assert_eq!(s.pointer("/spec/ports/0/targetPort"), Some(&json!("http")));
        assert_eq!(
            s.pointer("/spec/externalTrafficPolicy"),
            Some(&json!("Cluster"))
        );
        assert_eq!(
            s.pointer("/spec/sessionAffinityConfig/clientIP/timeoutSeconds"),
            Some(&json!(10800))
        );
    }

    #[test]
    fn limit_range_defaults_and_cron_job_template() {
        let mut lr = json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "l"},
            "spec": {"limits": [{"type": "Container", "max": {"memory": "1Gi"}, "default": {"cpu": "1"},
                "min": {"ephemeral-storage": "1Mi"}}, {"type": "Pod", "max": {"cpu": "2"}}]}});
        apply(&mut lr);
        assert_eq!(
            lr.pointer("/spec/limits/0"),
            Some(
                &json!({"type": "Container", "max": {"memory": "1Gi"}, "min": {"ephemeral-storage": "1Mi"},
                "default": {"cpu": "1", "memory": "1Gi"},
                "defaultRequest": {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Mi"}})
            )
        );
        assert_eq!(
            lr.pointer("/spec/limits/1"),
            Some(&json!({"type": "Pod", "max": {"cpu": "2"}}))
        );

        let mut cj = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
                "containers": [{"name": "a", "image": "a:1"}]}}}}}});
        apply(&mut cj);
        let js = cj.pointer("/spec/jobTemplate/spec").unwrap();
        assert!(
            js.get("backoffLimit").is_none(),
            "no Job defaults in a jobTemplate: {js}"
        );
        assert_eq!(
            js.pointer("/template/spec/restartPolicy"),
            Some(&json!("Always"))
        );

        let mut rb = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "r"}, "subjects": [{"kind": "ServiceAccount", "name": "x"},
                {"kind": "User", "name": "u"}]});
        apply(&mut rb);
        assert_eq!(
            rb["subjects"][0],
            json!({"kind": "ServiceAccount", "name": "x"})
        );
        assert_eq!(
            rb["subjects"][1]["apiGroup"],
            json!("rbac.authorization.k8s.io")
        );
    }
}
