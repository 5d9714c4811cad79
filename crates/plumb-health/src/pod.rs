//! `v1` Pod (gitops-engine `health_pod.go`).
//!
//! The restart policy decides how much a Pod may tell: a Pod with `restartPolicy: Always`
//! is a long-running workload, while `OnFailure`/`Never` Pods are treated as finite
//! (typically sync hooks), so a waiting error or a Running phase never fails them early.
//! The annotation `argocd.argoproj.io/ignore-restart-policy: "true"` makes a non-hook Pod
//! count as `Always` (Argo CD 3.x, alpha; ignored on hook Pods).
//!
//! 1. `Always`: any `status.containerStatuses[].state.waiting.reason` starting with `Err`
//!    or ending with `Error` or `BackOff` (ErrImagePull, ImagePullBackOff,
//!    CrashLoopBackOff, CreateContainerConfigError, ...) ⇒ Degraded, the waiting messages
//!    joined with `", "`. Init containers are not inspected here.
//! 2. By `status.phase`: Pending ⇒ Progressing; Succeeded ⇒ Healthy; Failed ⇒ Degraded
//!    with `status.message`, else the first init/app container's terminated message,
//!    `OOMKilled`, or `container "x" failed with exit code N`; Running ⇒ for `Always`,
//!    Healthy when the `Ready` condition is `True`, Degraded when a container has a
//!    `lastState.terminated`, else Progressing; for `OnFailure`/`Never` Progressing.
//! 3. Anything else (phase `Unknown`, no phase, an unset restart policy while Running) ⇒
//!    Unknown. Messages are `status.message` unless stated.

use serde_json::Value;

use crate::conditions::cond;
use crate::object::{Gvk, annotation, array_at, get, go_quote, int_at, is_hook, str_at};
use crate::{Health, HealthStatus};

/// Annotation that makes a non-hook Pod's health ignore its `OnFailure`/`Never` policy.
pub const ANNOTATION_IGNORE_RESTART_POLICY: &str = "argocd.argoproj.io/ignore-restart-policy";

/// Waiting reasons Argo CD treats as failures.
fn degraded_waiting_reason(reason: &str) -> bool {
    reason.starts_with("Err") || reason.ends_with("Error") || reason.ends_with("BackOff")
}

/// Why a container of a Failed Pod failed, `""` when its state says nothing.
fn fail_message(ctr: &Value) -> String {
    let Some(term) = get(ctr, &["state", "terminated"]) else {
        return String::new();
    };
    let message = str_at(term, &["message"]);
    if !message.is_empty() {
        return message.to_owned();
    }
    if str_at(term, &["reason"]) == "OOMKilled" {
        return "OOMKilled".to_owned();
    }
    let code = int_at(term, &["exitCode"]);
    if code != 0 {
        return format!(
            "container {} failed with exit code {code}",
            go_quote(str_at(ctr, &["name"]))
        );
    }
    String::new()
}

pub(crate) fn health(pod: &Value, gvk: &Gvk<'_>) -> Health {
    if gvk.version != "v1" {
        return gvk.unsupported("Pod");
    }
    let mut restart_policy = str_at(pod, &["spec", "restartPolicy"]);
    if annotation(pod, ANNOTATION_IGNORE_RESTART_POLICY) == Some("true") && !is_hook(pod) {
        restart_policy = "Always";
    }
    let statuses = array_at(pod, &["status", "containerStatuses"]);

    if restart_policy == "Always" {
        let messages: Vec<&str> = statuses
            .iter()
            .filter_map(|cs| get(cs, &["state", "waiting"]))
            .filter(|w| degraded_waiting_reason(str_at(w, &["reason"])))
            .map(|w| str_at(w, &["message"]))
            .collect();
        if !messages.is_empty() {
            return Health::new(HealthStatus::Degraded, messages.join(", "));
        }
    }

    let message = str_at(pod, &["status", "message"]);
    match str_at(pod, &["status", "phase"]) {
        "Pending" => Health::new(HealthStatus::Progressing, message),
        "Succeeded" => Health::new(HealthStatus::Healthy, message),
        "Failed" => {
            if !message.is_empty() {
                return Health::new(HealthStatus::Degraded, message);
            }
            let init = array_at(pod, &["status", "initContainerStatuses"]);
            let reason = init
                .iter()
                .chain(statuses)
                .map(fail_message)
                .find(|m| !m.is_empty())
                .unwrap_or_default();
            Health::new(HealthStatus::Degraded, reason)
        }
        "Running" => match restart_policy {
            "Always" => {
                let ready = cond(pod, "Ready").is_some_and(|c| c.is_true());
                if ready {
                    Health::new(HealthStatus::Healthy, message)
                } else if statuses
                    .iter()
                    .any(|cs| get(cs, &["lastState", "terminated"]).is_some())
                {
                    Health::new(HealthStatus::Degraded, message)
                } else {
                    Health::new(HealthStatus::Progressing, message)
                }
            }
            "OnFailure" | "Never" => Health::new(HealthStatus::Progressing, message),
            _ => Health::new(HealthStatus::Unknown, message),
        },
        _ => Health::new(HealthStatus::Unknown, message),
    }
}

#[cfg(test)]
mod tests {
    use crate::HealthStatus::*;
    use crate::testutil::check_table;
    use serde_json::{Value, json};

    /// A Pod as the API server returns it for a node named minikube; `annotations`,
    /// `restart_policy` and `status` vary per case.
    fn pod(annotations: Value, restart_policy: &str, status: Value) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "my-pod",
                "namespace": "argocd",
                "uid": "c86e909c-f612-11e8-a057-fe5f49266390",
                "resourceVersion": "151053",
                "creationTimestamp": "2018-12-02T09:15:16Z",
                "annotations": annotations
            },
            "spec": {
                "containers": [{
                    "name": "main",
                    "image": "gcr.io/heptio-images/ks-guestbook-demo:0.3",
                    "imagePullPolicy": "Always",
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File"
                }],
                "dnsPolicy": "ClusterFirst",
                "nodeName": "minikube",
                "restartPolicy": restart_policy,
                "schedulerName": "default-scheduler",
                "serviceAccountName": "default",
                "terminationGracePeriodSeconds": 30
            },
            "status": status
        })
    }

    fn conditions(ready: bool) -> Value {
        let ready = if ready { "True" } else { "False" };
        json!([
            {"type": "Initialized", "status": "True", "lastTransitionTime": "2018-12-02T09:15:16Z"},
            {"type": "Ready", "status": ready, "lastTransitionTime": "2018-12-02T09:15:19Z"},
            {"type": "ContainersReady", "status": ready, "lastTransitionTime": "2018-12-02T09:15:19Z"},
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2018-12-02T09:15:16Z"}
        ])
    }

    fn running(ready: bool, state: Value, last_state: Value) -> Value {
        json!({
            "phase": "Running",
            "hostIP": "192.168.64.41",
            "podIP": "172.17.0.9",
            "qosClass": "BestEffort",
            "startTime": "2018-12-02T09:15:16Z",
            "conditions": conditions(ready),
            "containerStatuses": [{
                "name": "main",
                "image": "gcr.io/heptio-images/ks-guestbook-demo:0.3",
                "imageID": "",
                "ready": ready,
                "restartCount": 3,
                "state": state,
                "lastState": last_state
            }]
        })
    }

    fn waiting(reason: &str, message: &str) -> Value {
        json!({"waiting": {"reason": reason, "message": message}})
    }

    fn started() -> Value {
        json!({"running": {"startedAt": "2018-12-02T09:15:19Z"}})
    }

    fn none() -> Value {
        json!({})
    }

    fn failed(init: Value, containers: Value, message: Option<&str>) -> Value {
        let mut status = json!({
            "phase": "Failed",
            "conditions": conditions(false),
            "initContainerStatuses": init,
            "containerStatuses": containers
        });
        if let Some(m) = message {
            status["message"] = json!(m);
            status["reason"] = json!("Evicted");
        }
        status
    }

    fn terminated(name: &str, reason: &str, exit_code: i64, message: &str) -> Value {
        let mut t = json!({"reason": reason, "exitCode": exit_code,
                           "startedAt": "2018-12-02T09:15:19Z", "finishedAt": "2018-12-02T09:15:29Z"});
        if !message.is_empty() {
            t["message"] = json!(message);
        }
        json!({"name": name, "ready": false, "restartCount": 0, "image": "alpine:3.21", "imageID": "",
               "state": {"terminated": t}, "lastState": {}})
    }

    const HOOK: &str = "argocd.argoproj.io/hook";
    const IGNORE: &str = "argocd.argoproj.io/ignore-restart-policy";

    #[test]
    fn pod_table() {
        let crashloop = "Back-off 40s restarting failed container=main pod=my-pod_argocd(63674389-f613-11e8-a057-fe5f49266390)";
        let pull = "Back-off pulling image \"gcr.io/heptio-images/ks-guestbook-demo:0.3\"";
        check_table(&[
            (
                "pending, unschedulable",
                pod(
                    none(),
                    "Always",
                    json!({"phase": "Pending", "qosClass": "BestEffort", "conditions": [
                    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                     "message": "0/1 nodes are available: 1 Insufficient cpu."}]}),
                ),
                Progressing,
                "",
            ),
            (
                "pending with a status message",
                pod(
                    none(),
                    "Always",
                    json!({"phase": "Pending", "message": "Pod was rejected: Node didn't have enough resource: cpu"}),
                ),
                Progressing,
                "Pod was rejected: Node didn't have enough resource: cpu",
            ),
            (
                "running and ready",
                pod(none(), "Always", running(true, started(), none())),
                Healthy,
                "",
            ),
            (
                "running, not ready, never restarted",
                pod(none(), "Always", running(false, started(), none())),
                Progressing,
                "",
            ),
            (
                "running, not ready, restarted before",
                pod(
                    none(),
                    "Always",
                    running(
                        false,
                        started(),
                        json!({"terminated": {"reason": "Error", "exitCode": 1}}),
                    ),
                ),
                Degraded,
                "",
            ),
            (
                "CrashLoopBackOff",
                pod(
                    none(),
                    "Always",
                    running(
                        false,
                        waiting("CrashLoopBackOff", crashloop),
                        json!({"terminated": {"reason": "Error", "exitCode": 1}}),
                    ),
                ),
                Degraded,
                crashloop,
            ),
            (
                "ImagePullBackOff",
                pod(
                    none(),
                    "Always",
                    json!({"phase": "Pending", "containerStatuses": [
                    {"name": "main", "ready": false, "restartCount": 0, "image": "gcr.io/heptio-images/ks-guestbook-demo:0.3",
                     "imageID": "", "state": waiting("ImagePullBackOff", pull), "lastState": {}}]}),
                ),
                Degraded,
                pull,
            ),
            (
                "ErrImagePull",
                pod(
                    none(),
                    "Always",
                    json!({"phase": "Pending", "containerStatuses": [
                    {"name": "main", "ready": false, "state": waiting("ErrImagePull", "rpc error: code = NotFound desc = failed to pull and unpack image"), "lastState": {}}]}),
                ),
                Degraded,
                "rpc error: code = NotFound desc = failed to pull and unpack image",
            ),
            (
                "CreateContainerConfigError on one of two containers, no message",
                pod(
                    none(),
                    "Always",
                    json!({"phase": "Pending", "containerStatuses": [
                    {"name": "main", "ready": false, "state": {"waiting": {"reason": "CreateContainerConfigError"}}},
                    {"name": "sidecar", "ready": false, "state": waiting("ContainerCreating", "")}]}),
                ),
                Degraded,
                "",
            ),
            (
                "two containers failing: messages joined",
                pod(
                    none(),
                    "Always",
                    json!({"phase": "Running", "containerStatuses": [
                    {"name": "main", "state": waiting("CrashLoopBackOff", "back-off 5m0s restarting failed container=main")},
                    {"name": "proxy", "state": waiting("ImagePullBackOff", "Back-off pulling image \"envoy:bad\"")}]}),
                ),
                Degraded,
                "back-off 5m0s restarting failed container=main, Back-off pulling image \"envoy:bad\"",
            ),
            (
                "ContainerCreating is not an error",
                pod(
                    none(),
                    "Always",
                    json!({"phase": "Pending", "containerStatuses": [
                    {"name": "main", "ready": false, "state": waiting("ContainerCreating", "")}]}),
                ),
                Progressing,
                "",
            ),
            (
                "ImagePullBackOff on a Never pod (hook-like) stays Progressing",
                pod(
                    none(),
                    "Never",
                    json!({"phase": "Pending", "containerStatuses": [
                    {"name": "main", "ready": false, "state": waiting("ImagePullBackOff", pull)}]}),
                ),
                Progressing,
                "",
            ),
            (
                "running, restartPolicy Never",
                pod(none(), "Never", running(true, started(), none())),
                Progressing,
                "",
            ),
            (
                "running, restartPolicy OnFailure",
                pod(none(), "OnFailure", running(true, started(), none())),
                Progressing,
                "",
            ),
            (
                "running, Never, ignore-restart-policy",
                pod(
                    json!({IGNORE: "true"}),
                    "Never",
                    running(true, started(), none()),
                ),
                Healthy,
                "",
            ),
            (
                "running, Never, ignore-restart-policy, backoff",
                pod(
                    json!({IGNORE: "true"}),
                    "Never",
                    running(
                        false,
                        waiting("ImagePullBackOff", "Back-off pulling image \"alpine:3.21\""),
                        none(),
                    ),
                ),
                Degraded,
                "Back-off pulling image \"alpine:3.21\"",
            ),
            (
                "ignore-restart-policy is ignored on hooks",
                pod(
                    json!({IGNORE: "true", HOOK: "PostSync"}),
                    "Never",
                    running(true, started(), none()),
                ),
                Progressing,
                "",
            ),
            (
                "ignore-restart-policy must be \"true\"",
                pod(
                    json!({IGNORE: "yes"}),
                    "Never",
                    running(true, started(), none()),
                ),
                Progressing,
                "",
            ),
            (
                "failed with a pod message (eviction)",
                pod(
                    none(),
                    "Always",
                    failed(
                        json!([]),
                        json!([]),
                        Some(
                            "The node was low on resource: memory. Container main was using 1Gi, which exceeds its request of 128Mi.",
                        ),
                    ),
                ),
                Degraded,
                "The node was low on resource: memory. Container main was using 1Gi, which exceeds its request of 128Mi.",
            ),
            (
                "failed, container exit code",
                pod(
                    none(),
                    "Never",
                    failed(json!([]), json!([terminated("main", "Error", 1, "")]), None),
                ),
                Degraded,
                "container \"main\" failed with exit code 1",
            ),
            (
                "failed, termination message wins",
                pod(
                    none(),
                    "Never",
                    failed(
                        json!([]),
                        json!([terminated(
                            "main",
                            "Error",
                            2,
                            "migration 0042 failed: relation exists\n"
                        )]),
                        None,
                    ),
                ),
                Degraded,
                "migration 0042 failed: relation exists\n",
            ),
            (
                "failed, OOMKilled",
                pod(
                    none(),
                    "OnFailure",
                    failed(
                        json!([]),
                        json!([terminated("main", "OOMKilled", 137, "")]),
                        None,
                    ),
                ),
                Degraded,
                "OOMKilled",
            ),
            (
                "failed, init container checked first",
                pod(
                    none(),
                    "Never",
                    failed(
                        json!([terminated("init-db", "Error", 3, "")]),
                        json!([{"name": "main", "state": {"waiting": {"reason": "PodInitializing"}}}]),
                        None,
                    ),
                ),
                Degraded,
                "container \"init-db\" failed with exit code 3",
            ),
            (
                "failed, nothing to say",
                pod(
                    none(),
                    "Never",
                    failed(
                        json!([]),
                        json!([terminated("main", "Completed", 0, "")]),
                        None,
                    ),
                ),
                Degraded,
                "",
            ),
            (
                "succeeded",
                pod(
                    none(),
                    "Never",
                    json!({"phase": "Succeeded", "containerStatuses": [terminated("main", "Completed", 0, "")]}),
                ),
                Healthy,
                "",
            ),
            (
                "phase Unknown (node lost)",
                pod(
                    none(),
                    "Always",
                    json!({"phase": "Unknown", "message": "Node minikube which was running pod my-pod is unresponsive"}),
                ),
                Unknown,
                "Node minikube which was running pod my-pod is unresponsive",
            ),
            (
                "no status yet",
                pod(none(), "Always", json!({})),
                Unknown,
                "",
            ),
            (
                "being deleted",
                {
                    let mut p = pod(none(), "Always", running(true, started(), none()));
                    p["metadata"]["deletionTimestamp"] = json!("2018-12-03T10:00:00Z");
                    p["metadata"]["deletionGracePeriodSeconds"] = json!(30);
                    p
                },
                Progressing,
                "Pending deletion",
            ),
        ]);
    }
}
