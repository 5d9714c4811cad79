//! PD002 mutating-policy: a `MutatingAdmissionPolicy` bound by a
//! `MutatingAdmissionPolicyBinding`, where the policy's `matchConstraints` and the binding's
//! `matchResources` (when set) both select the sync's `UPDATE` of the object. A policy without
//! a binding does nothing and is not a candidate. When a mutation's CEL expression names the
//! field, the policy ranks as a policy known to touch it.

use super::{Candidate, Check, Ctx, Field, name_of, subject};
use crate::admission::{self, Match};
use crate::report::CauseType;
use serde_json::Value;

pub const CHECK: Check = Check {
    code: "PD002",
    name: "mutating-policy",
    run,
};

fn run(ctx: &Ctx<'_>, f: &Field<'_>) -> Vec<Candidate> {
    let subj = subject(ctx, f);
    let field = f
        .tokens()
        .into_iter()
        .rev()
        .find(|t| t.parse::<usize>().is_err())
        .unwrap_or_default();
    let mut out = Vec::new();
    let group = "admissionregistration.k8s.io";
    for policy in ctx.objects(group, "MutatingAdmissionPolicy") {
        let pname = name_of(policy);
        let Some(spec) = policy.get("spec") else {
            continue;
        };
        let constraints = spec.get("matchConstraints").cloned().unwrap_or(Value::Null);
        let pm = admission::matches(
            &constraints,
            "resourceRules",
            Some("excludeResourceRules"),
            &subj,
        );
        let (Match::Yes(mut evidence) | Match::Unverified(mut evidence)) = pm.clone() else {
            continue;
        };
        for binding in ctx.objects(group, "MutatingAdmissionPolicyBinding") {
            if binding.pointer("/spec/policyName").and_then(Value::as_str) != Some(pname) {
                continue;
            }
            let bm = match binding.pointer("/spec/matchResources") {
                None | Some(Value::Null) => Match::Yes(Vec::new()),
                Some(mr) => {
                    // matchResources without rules narrows by selectors only.
                    let mut mr = mr.clone();
                    if mr.get("resourceRules").is_none() {
                        mr["resourceRules"] = serde_json::json!([{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}]);
                    }
                    admission::matches(&mr, "resourceRules", Some("excludeResourceRules"), &subj)
                }
            };
            let (verified, more) = match (&pm, bm) {
                (_, Match::No(_)) => continue,
                (Match::Yes(_), Match::Yes(e)) => (true, e),
                (_, Match::Yes(e) | Match::Unverified(e)) => (false, e),
            };
            evidence.extend(more);
            let names_field = !field.is_empty()
                && spec
                    .get("mutations")
                    .and_then(Value::as_array)
                    .is_some_and(|ms| {
                        ms.iter().any(|m| {
                            ["/applyConfiguration/expression", "/jsonPatch/expression"]
                                .iter()
                                .filter_map(|p| m.pointer(p).and_then(Value::as_str))
                                .any(|e| e.contains(field.as_str()))
                        })
                    });
            let mut ev = vec![format!(
                "[PD002] MutatingAdmissionPolicy {pname}, bound by {}, is applied on this write",
                name_of(binding)
            )];
            ev.extend(evidence.iter().map(|e| format!("[PD002] {e}")));
            if names_field {
                ev.push(format!("[PD002] a mutation's expression names `{field}`"));
            }
            out.push(Candidate {
                code: CHECK.code,
                kind: CauseType::MutatingPolicy,
                name: pname.to_string(),
                manager: None,
                evidence: ev,
                score: match (verified, names_field) {
                    (_, true) => 95,
                    (true, false) => 62,
                    (false, false) => 30,
                },
            });
        }
    }
    out
}
