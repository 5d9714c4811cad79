//! PD006 manual-edit: the field is owned by a person's client (`kubectl-edit`,
//! `kubectl-patch`, `kubectl-client-side-apply`, `kubectl-scale`, `kubectl`, …). Written after
//! the last sync it is drift that one sync restores.

use super::{Candidate, Check, Ctx, Field};
use crate::managed::is_person;
use crate::report::CauseType;

pub const CHECK: Check = Check {
    code: "PD006",
    name: "manual-edit",
    run,
};

fn run(ctx: &Ctx<'_>, f: &Field<'_>) -> Vec<Candidate> {
    let Some(o) = f.owners.iter().find(|o| is_person(&o.manager)) else {
        return Vec::new();
    };
    let after = match (o.at, ctx.last_sync) {
        (Some(at), Some(sync)) => Some(at > sync),
        _ => None,
    };
    let mut ev = vec![format!(
        "[PD006] the field is owned by {}, a person's client",
        o.describe()
    )];
    ev.push(match after {
        Some(true) => "[PD006] written after the last sync: one sync restores git's value".into(),
        Some(false) => "[PD006] written before the last sync".into(),
        None => "[PD006] no sync time to compare with".into(),
    });
    vec![Candidate {
        code: CHECK.code,
        kind: CauseType::ManualEdit,
        name: o.manager.clone(),
        manager: Some(o.manager.clone()),
        evidence: ev,
        score: if after == Some(false) { 45 } else { 80 },
    }]
}
