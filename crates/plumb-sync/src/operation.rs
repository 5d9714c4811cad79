//! A sync operation's bookkeeping: hook deletion policies, when a task is done (hooks by
//! their completion, resources by their health, as gitops-engine judges them), generated
//! hook names, and the progress a running operation keeps in `status.operationState` so a
//! restarted controller resumes it.
//!
//! gitops-engine (`pkg/sync/sync_context.go`, `hook/delete_policy.go`) facts used:
//! - a hook's delete policies come from `argocd.argoproj.io/hook-delete-policy`
//!   (`HookSucceeded`, `HookFailed`, `BeforeHookCreation`) or Helm's `helm.sh/hook-delete-policy`
//!   (`hook-succeeded`, `hook-failed`, `before-hook-creation`); none given means
//!   `BeforeHookCreation`;
//! - a running hook is Succeeded when its health is Healthy or it has no health check,
//!   Failed when Degraded, still running otherwise;
//! - an applied resource whose wave is followed by more tasks (or whose sync has hooks) is
//!   waited for: Healthy or no health check ⇒ done, Degraded ⇒ the task fails, anything else
//!   ⇒ `waiting for healthy state of <group>/<kind>/<name>`;
//! - without hooks, the last wave is not waited for ("successfully synced (no more tasks)");
//!   with hooks, every task is ("successfully synced (all tasks run)").

use crate::options::annotation_csv;
use plumb_core::ResourceKey;
use plumb_health::HealthStatus;
use serde_json::Value;
use std::collections::BTreeMap;

/// `argocd.argoproj.io/hook-delete-policy`.
pub const HOOK_DELETE_POLICY_ANNOTATION: &str = "argocd.argoproj.io/hook-delete-policy";
/// `helm.sh/hook-delete-policy`.
pub const HELM_HOOK_DELETE_POLICY_ANNOTATION: &str = "helm.sh/hook-delete-policy";

/// When a hook object is deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeletePolicy {
    /// After the hook succeeded.
    pub hook_succeeded: bool,
    /// After the hook failed.
    pub hook_failed: bool,
    /// Before the hook is created again (the default when no policy is given).
    pub before_hook_creation: bool,
}

impl DeletePolicy {
    /// Reads the policies from a hook's annotations.
    pub fn of(annotations: &BTreeMap<String, String>) -> DeletePolicy {
        let mut p = DeletePolicy::default();
        let mut any = false;
        for key in [
            HOOK_DELETE_POLICY_ANNOTATION,
            HELM_HOOK_DELETE_POLICY_ANNOTATION,
        ] {
            for v in annotations
                .get(key)
                .map(|v| annotation_csv(v))
                .unwrap_or_default()
            {
                match v {
                    "HookSucceeded" | "hook-succeeded" => p.hook_succeeded = true,
                    "HookFailed" | "hook-failed" => p.hook_failed = true,
                    "BeforeHookCreation" | "before-hook-creation" => p.before_hook_creation = true,
                    _ => continue,
                }
                any = true;
            }
        }
        if !any {
            p.before_hook_creation = true;
        }
        p
    }

    /// Whether a hook that ended so is deleted at the end of the operation.
    pub fn deletes_after(&self, succeeded: bool) -> bool {
        if succeeded {
            self.hook_succeeded
        } else {
            self.hook_failed
        }
    }
}

/// Where a task that has been started stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskState {
    Running(String),
    Succeeded(String),
    Failed(String),
}

/// `<group>/<kind>/<name>` as gitops-engine names a task in messages (core group: `/Kind/name`).
pub fn task_name(key: &ResourceKey) -> String {
    format!("{}/{}/{}", key.group, key.kind, key.name)
}

/// A started task's state from its live object's health ([`plumb_health::check`]: user Lua,
/// built-in, generic): Healthy or no health check ⇒ done, Degraded ⇒ failed, otherwise (or not
/// there yet) still running with `waiting`.
fn by_health(live: Option<&Value>, waiting: impl FnOnce() -> String) -> TaskState {
    match live.map(|l| plumb_health::check(l).checked()) {
        Some(None) => TaskState::Succeeded(String::new()),
        Some(Some(h)) if h.status == HealthStatus::Healthy => TaskState::Succeeded(h.message),
        Some(Some(h)) if h.status == HealthStatus::Degraded => TaskState::Failed(h.message),
        _ => TaskState::Running(waiting()),
    }
}

/// A started hook's state from its live object (`None`: not created yet or gone).
pub fn hook_state(key: &ResourceKey, live: Option<&Value>) -> TaskState {
    by_health(live, || {
        format!("waiting for completion of hook {}", task_name(key))
    })
}

/// An applied resource's state from its live object, for wave gating.
pub fn resource_state(key: &ResourceKey, live: Option<&Value>) -> TaskState {
    by_health(live, || {
        format!("waiting for healthy state of {}", task_name(key))
    })
}

/// The name a `generateName` hook gets in one operation: the prefix and a suffix derived from
/// the operation (its start time and the app), so a resumed operation finds the hook it created
/// and the next operation creates a new one.
pub fn generated_name(prefix: &str, operation_id: &str) -> String {
    // FNV-1a, printed as 5 base-36 digits (as Kubernetes' generated suffixes look).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in operation_id.bytes().chain(prefix.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut suffix = String::with_capacity(5);
    for _ in 0..5 {
        suffix.push(DIGITS[(h % 36) as usize] as char);
        h /= 36;
    }
    format!("{prefix}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ann(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn key(kind: &str, group: &str) -> ResourceKey {
        ResourceKey {
            group: group.into(),
            kind: kind.into(),
            namespace: "ns".into(),
            name: "x".into(),
        }
    }

    #[test]
    fn delete_policy_defaults_to_before_hook_creation() {
        assert_eq!(
            DeletePolicy::of(&ann(&[])),
            DeletePolicy {
                before_hook_creation: true,
                ..Default::default()
            }
        );
        let p = DeletePolicy::of(&ann(&[(
            HOOK_DELETE_POLICY_ANNOTATION,
            "HookSucceeded, HookFailed",
        )]));
        assert!(p.hook_succeeded && p.hook_failed && !p.before_hook_creation);
        assert!(p.deletes_after(true) && p.deletes_after(false));
        let helm = DeletePolicy::of(&ann(&[(
            HELM_HOOK_DELETE_POLICY_ANNOTATION,
            "hook-succeeded",
        )]));
        assert!(helm.hook_succeeded && !helm.hook_failed && !helm.before_hook_creation);
        assert!(helm.deletes_after(true) && !helm.deletes_after(false));
        // Unknown values alone leave the default.
        let odd = DeletePolicy::of(&ann(&[(HOOK_DELETE_POLICY_ANNOTATION, "Sometimes")]));
        assert!(odd.before_hook_creation);
    }

    #[test]
    fn hooks_complete_by_health() {
        let job = |conds: Value| {
            json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "x", "namespace": "ns"}, "spec": {}, "status": conds})
        };
        let k = key("Job", "batch");
        assert!(
            matches!(hook_state(&k, None), TaskState::Running(m) if m == "waiting for completion of hook batch/Job/x")
        );
        let done =
            job(json!({"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}));
        assert!(matches!(
            hook_state(&k, Some(&done)),
            TaskState::Succeeded(_)
        ));
        let failed = job(
            json!({"failed": 1, "conditions": [{"type": "Failed", "status": "True", "message": "BackoffLimitExceeded"}]}),
        );
        assert!(matches!(
            hook_state(&k, Some(&failed)),
            TaskState::Failed(_)
        ));
        let running = job(json!({"active": 1}));
        assert!(matches!(
            hook_state(&k, Some(&running)),
            TaskState::Running(_)
        ));
        // A kind without a health check is done once it exists.
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
        assert!(matches!(
            hook_state(&key("ConfigMap", ""), Some(&cm)),
            TaskState::Succeeded(_)
        ));
    }

    #[test]
    fn resources_gate_on_health() {
        let deploy = |status: Value| {
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "x", "namespace": "ns", "generation": 1},
            "spec": {"replicas": 1}, "status": status})
        };
        let k = key("Deployment", "apps");
        let progressing = deploy(json!({"observedGeneration": 1}));
        assert_eq!(
            resource_state(&k, Some(&progressing)),
            TaskState::Running("waiting for healthy state of apps/Deployment/x".into())
        );
        let healthy = deploy(json!({"observedGeneration": 1, "replicas": 1,
            "updatedReplicas": 1, "availableReplicas": 1, "readyReplicas": 1}));
        assert!(matches!(
            resource_state(&k, Some(&healthy)),
            TaskState::Succeeded(_)
        ));
        let degraded = deploy(json!({"observedGeneration": 1, "conditions": [
            {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
             "message": "deadline exceeded"}]}));
        assert!(
            matches!(resource_state(&k, Some(&degraded)), TaskState::Failed(m) if m.contains("deadline"))
        );
        assert_eq!(task_name(&key("ConfigMap", "")), "/ConfigMap/x");
    }

    #[test]
    fn generated_names_are_stable_per_operation() {
        let a = generated_name("migrate-", "app@2026-11-29T22:00:00Z");
        assert_eq!(a, generated_name("migrate-", "app@2026-11-29T22:00:00Z"));
        assert_ne!(a, generated_name("migrate-", "app@2026-11-29T22:05:00Z"));
        assert!(a.starts_with("migrate-") && a.len() == "migrate-".len() + 5);
        assert!(
            a["migrate-".len()..]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() && !c.is_ascii_uppercase())
        );
    }
}
