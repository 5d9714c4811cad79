//! PD005 vpa: a `VerticalPodAutoscaler` whose `targetRef` names the object, in a mode that
//! changes resources (anything but `Off`), owns container `resources`.

use super::{Candidate, Check, Ctx, Field, name_of, namespace_of};
use crate::report::CauseType;
use serde_json::Value;

pub const CHECK: Check = Check {
    code: "PD005",
    name: "vpa",
    run,
};

fn run(ctx: &Ctx<'_>, f: &Field<'_>) -> Vec<Candidate> {
    if !f.pointer.contains("/resources/") {
        return Vec::new();
    }
    let mut out = Vec::new();
    for vpa in ctx.objects("autoscaling.k8s.io", "VerticalPodAutoscaler") {
        let t = |p: &str| vpa.pointer(p).and_then(Value::as_str);
        if namespace_of(vpa) != f.key.namespace
            || t("/spec/targetRef/kind") != Some(f.key.kind.as_str())
            || t("/spec/targetRef/name") != Some(f.key.name.as_str())
        {
            continue;
        }
        let mode = t("/spec/updatePolicy/updateMode").unwrap_or("Auto");
        if mode == "Off" {
            continue;
        }
        let mut ev = vec![format!(
            "[PD005] VerticalPodAutoscaler {}/{} targets {} {} (updateMode {mode})",
            namespace_of(vpa),
            name_of(vpa),
            f.key.kind,
            f.key.name
        )];
        let owner = f.owners.iter().find(|o| {
            o.manager.contains("vpa")
                || o.manager.contains("recommender")
                || o.manager.contains("updater")
        });
        if let Some(o) = owner {
            ev.push(format!("[PD005] the field is owned by {}", o.describe()));
        }
        out.push(Candidate {
            code: CHECK.code,
            kind: CauseType::Controller,
            name: format!(
                "VerticalPodAutoscaler {}/{}",
                namespace_of(vpa),
                name_of(vpa)
            ),
            manager: owner.map(|o| o.manager.clone()),
            evidence: ev,
            score: 85,
        });
    }
    out
}
