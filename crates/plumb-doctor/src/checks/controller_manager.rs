//! PD007 controller-manager: another manager (not plumb's or Argo CD's, not a person) owns the
//! field in `managedFields`: an operator or controller writes it.

use super::{Candidate, Check, Ctx, Field};
use crate::managed::{is_gitops, is_person};
use crate::report::CauseType;

pub const CHECK: Check = Check {
    code: "PD007",
    name: "controller-manager",
    run,
};

fn run(ctx: &Ctx<'_>, f: &Field<'_>) -> Vec<Candidate> {
    let Some(o) = f
        .owners
        .iter()
        .find(|o| !is_gitops(&o.manager) && !is_person(&o.manager))
    else {
        return Vec::new();
    };
    let mut ev = vec![format!("[PD007] the field is owned by {}", o.describe())];
    if let (Some(at), Some(sync)) = (o.at, ctx.last_sync)
        && at > sync
    {
        ev.push("[PD007] written after the last sync".into());
    }
    vec![Candidate {
        code: CHECK.code,
        kind: CauseType::Controller,
        name: o.manager.clone(),
        manager: Some(o.manager.clone()),
        evidence: ev,
        score: 70,
    }]
}
