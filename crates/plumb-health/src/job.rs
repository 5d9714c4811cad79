//! `batch/v1` Job (gitops-engine `health_job.go`), from `status.conditions` only:
//!
//! - a `Failed` condition ⇒ Degraded with its message;
//! - else a `Suspended` condition with status `True` ⇒ Suspended (Argo CD reports no
//!   message here);
//! - else a `Complete` condition, or a `Suspended` one with another status (a resumed
//!   Job) ⇒ Healthy with the last such condition's message;
//! - no such condition ⇒ Progressing.
//!
//! Condition statuses other than on `Suspended` are not looked at, and `spec.suspend` is
//! not read: a Job created suspended is Progressing until the Job controller adds the
//! `Suspended` condition.

use serde_json::Value;

use crate::object::{Gvk, array_at, str_at};
use crate::{Health, HealthStatus};

pub(crate) fn health(obj: &Value, gvk: &Gvk<'_>) -> Health {
    if gvk.version != "v1" {
        return gvk.unsupported("Job");
    }
    let mut failed = false;
    let mut fail_message = "";
    let mut complete = false;
    let mut message = "";
    let mut suspended = false;
    for cond in array_at(obj, &["status", "conditions"]) {
        match str_at(cond, &["type"]) {
            "Failed" => {
                failed = true;
                complete = true;
                fail_message = str_at(cond, &["message"]);
            }
            "Complete" => {
                complete = true;
                message = str_at(cond, &["message"]);
            }
            "Suspended" => {
                complete = true;
                message = str_at(cond, &["message"]);
                if str_at(cond, &["status"]) == "True" {
                    suspended = true;
                }
            }
            _ => {}
        }
    }
    if !complete {
        Health::new(HealthStatus::Progressing, message)
    } else if failed {
        Health::new(HealthStatus::Degraded, fail_message)
    } else if suspended {
        // Argo CD reports the (necessarily empty) failure message here.
        Health::new(HealthStatus::Suspended, fail_message)
    } else {
        Health::new(HealthStatus::Healthy, message)
    }
}

#[cfg(test)]
mod tests {
    use crate::HealthStatus::*;
    use crate::testutil::check_table;
    use serde_json::{Value, json};

    fn job(status: Value) -> Value {
        json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "db-migrate", "namespace": "pay-prod",
                         "labels": {"batch.kubernetes.io/job-name": "db-migrate"}},
            "spec": {
                "backoffLimit": 2,
                "completions": 1,
                "parallelism": 1,
                "completionMode": "NonIndexed",
                "suspend": false,
                "template": {"spec": {"restartPolicy": "Never",
                                      "containers": [{"name": "migrate", "image": "registry.lab/payments-api:1.4.2", "args": ["migrate"]}]}}
            },
            "status": status
        })
    }

    #[test]
    fn job_table() {
        check_table(&[
            (
                "running",
                job(
                    json!({"active": 1, "ready": 1, "startTime": "2026-09-22T19:57:06Z", "terminating": 0}),
                ),
                Progressing,
                "",
            ),
            (
                "succeeded",
                job(
                    json!({"succeeded": 1, "completionTime": "2026-09-22T19:57:35Z", "conditions": [
                        {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached", "message": "Reached expected number of succeeded pods"},
                        {"type": "Complete", "status": "True", "reason": "CompletionsReached", "message": "Reached expected number of succeeded pods"}
                    ]}),
                ),
                Healthy,
                "Reached expected number of succeeded pods",
            ),
            (
                "failed",
                job(json!({"failed": 3, "conditions": [
                    {"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"},
                    {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"}
                ]})),
                Degraded,
                "Job has reached the specified backoff limit",
            ),
            (
                "suspended",
                job(json!({"conditions": [
                    {"type": "Suspended", "status": "True", "reason": "JobSuspended", "message": "Job suspended"}
                ]})),
                Suspended,
                "",
            ),
            (
                "resumed after suspension",
                job(json!({"active": 1, "conditions": [
                    {"type": "Suspended", "status": "False", "reason": "JobResumed", "message": "Job resumed"}
                ]})),
                Healthy,
                "Job resumed",
            ),
            (
                "created suspended, controller not run yet",
                {
                    let mut j = job(Value::Null);
                    j["spec"]["suspend"] = json!(true);
                    j
                },
                Progressing,
                "",
            ),
            (
                "batch/v1beta1 unsupported",
                {
                    let mut j = job(json!({}));
                    j["apiVersion"] = json!("batch/v1beta1");
                    j
                },
                Unknown,
                "unsupported Job GVK: batch/v1beta1, Kind=Job",
            ),
        ]);
    }
}
