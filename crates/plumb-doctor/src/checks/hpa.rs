//! PD003 hpa-replicas: a `HorizontalPodAutoscaler` whose `scaleTargetRef` names the object
//! owns `/spec/replicas` (it writes it through the `scale` subresource as
//! `kube-controller-manager`).

use super::{Candidate, Check, Ctx, Field, name_of, namespace_of};
use crate::report::CauseType;
use serde_json::Value;

pub const CHECK: Check = Check {
    code: "PD003",
    name: "hpa-replicas",
    run,
};

fn run(ctx: &Ctx<'_>, f: &Field<'_>) -> Vec<Candidate> {
    if f.pointer != "/spec/replicas" {
        return Vec::new();
    }
    let mut out = Vec::new();
    for hpa in ctx.objects("autoscaling", "HorizontalPodAutoscaler") {
        let target = hpa.pointer("/spec/scaleTargetRef");
        let s = |p: &str| target.and_then(|t| t.pointer(p)).and_then(Value::as_str);
        let target_group = plumb_core::group_of_api_version(s("/apiVersion").unwrap_or(""));
        if namespace_of(hpa) != f.key.namespace
            || s("/kind") != Some(f.key.kind.as_str())
            || s("/name") != Some(f.key.name.as_str())
            || target_group != f.key.group
        {
            continue;
        }
        let owner = f
            .owners
            .iter()
            .find(|o| o.subresource == "scale" || o.manager == "kube-controller-manager");
        let mut ev = vec![format!(
            "[PD003] HorizontalPodAutoscaler {}/{} targets {} {} (min {}, max {})",
            namespace_of(hpa),
            name_of(hpa),
            f.key.kind,
            f.key.name,
            hpa.pointer("/spec/minReplicas")
                .map_or("1".into(), Value::to_string),
            hpa.pointer("/spec/maxReplicas")
                .map_or("?".into(), Value::to_string),
        )];
        if let Some(o) = owner {
            ev.push(format!(
                "[PD003] /spec/replicas is owned by {}",
                o.describe()
            ));
        }
        if let Some(d) = hpa.pointer("/status/desiredReplicas") {
            ev.push(format!("[PD003] the HPA wants {d} replicas"));
        }
        out.push(Candidate {
            code: CHECK.code,
            kind: CauseType::Controller,
            name: format!(
                "HorizontalPodAutoscaler {}/{}",
                namespace_of(hpa),
                name_of(hpa)
            ),
            manager: Some(owner.map_or("kube-controller-manager".into(), |o| o.manager.clone())),
            evidence: ev,
            score: 90,
        });
    }
    out
}
