//! PD008 admission-rewrite-of-own-field: the field is owned by plumb's (`plumb`) or Argo CD's
//! (`argocd-controller`, `argocd-application-controller`) own manager, yet holds a value git
//! never sent: it was changed during admission of the sync's own write. This check boosts the
//! admission candidates (PD001, PD002, PD010, PD011) and stands alone when none matches.

use super::{Candidate, Check, Ctx, Field};
use crate::managed::is_gitops;
use crate::report::CauseType;

pub const CHECK: Check = Check {
    code: "PD008",
    name: "admission-rewrite-of-own-field",
    run,
};

/// The score added to an admission candidate when this check fires.
pub const BOOST: u32 = 25;

fn run(_ctx: &Ctx<'_>, f: &Field<'_>) -> Vec<Candidate> {
    let Some(own) = f.owners.first().filter(|o| is_gitops(&o.manager)) else {
        return Vec::new();
    };
    if f.desired.is_none() || f.live_value.is_none() {
        return Vec::new();
    }
    vec![Candidate {
        code: CHECK.code,
        kind: CauseType::Unknown,
        name: "changed during admission".into(),
        manager: Some(own.manager.clone()),
        evidence: vec![format!(
            "[PD008] the field is owned by {}, the sync's own manager, but holds a value git never sent: it was changed during admission",
            own.describe()
        )],
        score: 50,
    }]
}
