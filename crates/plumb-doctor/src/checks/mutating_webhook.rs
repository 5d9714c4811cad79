//! PD001 mutating-webhook: a `MutatingWebhookConfiguration` webhook whose rules, scope,
//! `namespaceSelector` and `objectSelector` select the sync's `UPDATE` of the object.
//! A webhook that does not match is never a candidate. A webhook's code is opaque, so a match
//! says it *may* rewrite the field; PD008 (a value git never sent under plumb's or Argo CD's
//! own manager) is what makes it likely.

use super::{Candidate, Check, Ctx, Field, name_of, subject};
use crate::admission::{self, Match};
use crate::report::CauseType;
use serde_json::Value;

pub const CHECK: Check = Check {
    code: "PD001",
    name: "mutating-webhook",
    run,
};

fn run(ctx: &Ctx<'_>, f: &Field<'_>) -> Vec<Candidate> {
    let subj = subject(ctx, f);
    let mut out = Vec::new();
    for cfg in ctx.objects(
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
    ) {
        let Some(Value::Array(hooks)) = cfg.get("webhooks") else {
            continue;
        };
        for hook in hooks {
            let hook_name = hook.get("name").and_then(Value::as_str).unwrap_or("");
            let (evidence, score) = match admission::matches(hook, "rules", None, &subj) {
                Match::Yes(e) => (e, 60),
                Match::Unverified(e) => (e, 30),
                Match::No(_) => continue,
            };
            let mut ev = vec![format!(
                "[PD001] MutatingWebhookConfiguration {} webhook {hook_name} is called on this write",
                name_of(cfg)
            )];
            ev.extend(evidence.into_iter().map(|e| format!("[PD001] {e}")));
            out.push(Candidate {
                code: CHECK.code,
                kind: CauseType::MutatingWebhook,
                name: name_of(cfg).to_string(),
                manager: None,
                evidence: ev,
                score,
            });
        }
    }
    out
}
