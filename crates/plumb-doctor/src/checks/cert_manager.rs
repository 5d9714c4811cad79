//! PD004 cert-manager-cainjector: an object annotated `cert-manager.io/inject-ca-from`
//! (or `inject-ca-from-secret`, `inject-apiserver-ca`) has its `caBundle` fields written by
//! cert-manager's cainjector.

use super::{Candidate, Check, Ctx, Field};
use crate::report::CauseType;

pub const CHECK: Check = Check {
    code: "PD004",
    name: "cert-manager-cainjector",
    run,
};

const ANNOTATIONS: &[&str] = &[
    "cert-manager.io/inject-ca-from",
    "cert-manager.io/inject-ca-from-secret",
    "cert-manager.io/inject-apiserver-ca",
];

fn run(_ctx: &Ctx<'_>, f: &Field<'_>) -> Vec<Candidate> {
    if !f.pointer.ends_with("/caBundle") {
        return Vec::new();
    }
    let annotated = ANNOTATIONS.iter().find_map(|a| {
        [f.live, Some(f.desired_object)]
            .into_iter()
            .flatten()
            .find_map(|o| plumb_core::value::annotation(o, a))
            .map(|v| (*a, v.to_string()))
    });
    let owner = f.owners.iter().find(|o| o.manager.contains("cainjector"));
    let (evidence, manager) = match (annotated, owner) {
        (Some((a, v)), owner) => {
            let mut ev = vec![format!(
                "[PD004] annotation {a}: {v}: cert-manager's cainjector fills caBundle"
            )];
            if let Some(o) = owner {
                ev.push(format!("[PD004] caBundle is owned by {}", o.describe()));
            }
            (
                ev,
                owner.map_or("cert-manager-cainjector".into(), |o| o.manager.clone()),
            )
        }
        (None, Some(o)) => (
            vec![format!("[PD004] caBundle is owned by {}", o.describe())],
            o.manager.clone(),
        ),
        (None, None) => return Vec::new(),
    };
    vec![Candidate {
        code: CHECK.code,
        kind: CauseType::Controller,
        name: "cert-manager cainjector".into(),
        manager: Some(manager),
        evidence,
        score: 90,
    }]
}
