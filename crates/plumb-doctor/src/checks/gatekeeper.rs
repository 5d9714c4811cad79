//! PD011 gatekeeper-mutation: a Gatekeeper `Assign`, `AssignMetadata`, `AssignImage` or
//! `ModifySet` whose `applyTo` and `match` (scope, kinds, namespaces with `*` globs,
//! excludedNamespaces, labelSelector, namespaceSelector, name) select the object, and whose
//! `location` (`spec.containers[name:*].imagePullPolicy`) is the field or above it. Mutators
//! whose location does not reach the field are not candidates: Gatekeeper says exactly what
//! it writes.

use super::{Candidate, Check, Ctx, Field, any_glob, glob, name_of, tokens};
use crate::report::CauseType;
use crate::selector;
use serde_json::Value;

pub const CHECK: Check = Check {
    code: "PD011",
    name: "gatekeeper-mutation",
    run,
};

#[derive(Debug, PartialEq)]
enum Seg {
    Field(String),
    /// `[key: value]`; value `*` matches any element with the key.
    Elem(String, String),
}

/// Parses a Gatekeeper location: `.`-separated fields, `[key: value]` list selectors,
/// double-quoted names.
fn parse_location(loc: &str) -> Vec<Seg> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = loc.chars().peekable();
    let flush = |cur: &mut String, out: &mut Vec<Seg>| {
        if !cur.is_empty() {
            out.push(Seg::Field(std::mem::take(cur)));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                for c in chars.by_ref() {
                    if c == '"' {
                        break;
                    }
                    cur.push(c);
                }
            }
            '.' => flush(&mut cur, &mut out),
            '[' => {
                flush(&mut cur, &mut out);
                let inner: String = chars.by_ref().take_while(|c| *c != ']').collect();
                let (k, v) = inner.split_once(':').unwrap_or((&inner, "*"));
                let clean = |s: &str| s.trim().trim_matches('"').to_string();
                out.push(Seg::Elem(clean(k), clean(v)));
            }
            c => cur.push(c),
        }
    }
    flush(&mut cur, &mut out);
    out
}

/// Whether the location is the field at `toks` or one of its ancestors.
fn location_reaches(segs: &[Seg], toks: &[String], live: Option<&Value>) -> bool {
    let mut cur = live;
    let mut ti = 0;
    let mut si = 0;
    while si < segs.len() {
        let Some(t) = toks.get(ti) else {
            return false;
        };
        match &segs[si] {
            Seg::Field(name) => {
                if name != t {
                    return false;
                }
                cur = cur.and_then(|c| c.get(t.as_str()));
            }
            Seg::Elem(k, v) => {
                let Ok(i) = t.parse::<usize>() else {
                    return false;
                };
                let elem = cur.and_then(|c| c.get(i));
                let ok = match elem.and_then(|e| e.get(k.as_str())) {
                    Some(Value::String(have)) => glob(v, have),
                    // A number key (`containerPort: 8080`) compares by its JSON text.
                    Some(have) => {
                        v == "*" || serde_json::from_str::<Value>(v).is_ok_and(|w| w == *have)
                    }
                    None => false,
                };
                if !ok {
                    return false;
                }
                cur = elem;
            }
        }
        si += 1;
        ti += 1;
    }
    true
}

fn selects(ctx: &Ctx<'_>, f: &Field<'_>, m: &Value, api_version_group: &str) -> bool {
    let _ = api_version_group;
    let kinds_ok = match m.get("kinds").and_then(Value::as_array) {
        Some(ks) if !ks.is_empty() => ks.iter().any(|k| {
            any_glob(k.get("apiGroups"), &f.key.group, true)
                && any_glob(k.get("kinds"), &f.key.kind, true)
        }),
        _ => true,
    };
    let scope_ok = match m.get("scope").and_then(Value::as_str).unwrap_or("*") {
        "Namespaced" => !f.key.namespace.is_empty(),
        "Cluster" => f.key.namespace.is_empty(),
        _ => true,
    };
    let ns = &f.key.namespace;
    let ns_ok = any_glob(m.get("namespaces"), ns, true)
        && !any_glob(m.get("excludedNamespaces"), ns, false);
    let name_ok = m
        .get("name")
        .and_then(Value::as_str)
        .is_none_or(|n| glob(n, &f.key.name));
    let labels = f.live.map(selector::labels_of).unwrap_or_default();
    let sel_ok = selector::matches(m.get("labelSelector"), &labels)
        || selector::matches(
            m.get("labelSelector"),
            &selector::labels_of(f.desired_object),
        );
    let nsl = ctx.namespaces.get(ns).cloned().unwrap_or_default();
    let nssel_ok = ns.is_empty() || selector::matches(m.get("namespaceSelector"), &nsl);
    kinds_ok && scope_ok && ns_ok && name_ok && sel_ok && nssel_ok
}

fn run(ctx: &Ctx<'_>, f: &Field<'_>) -> Vec<Candidate> {
    let toks = tokens(f.pointer);
    let mut out = Vec::new();
    for kind in ["Assign", "AssignMetadata", "AssignImage", "ModifySet"] {
        for m in ctx.objects("mutations.gatekeeper.sh", kind) {
            let Some(spec) = m.get("spec") else {
                continue;
            };
            let apply_ok = match spec.get("applyTo").and_then(Value::as_array) {
                Some(a) => a.iter().any(|t| {
                    any_glob(t.get("groups"), &f.key.group, false)
                        && any_glob(t.get("kinds"), &f.key.kind, false)
                        && any_glob(t.get("versions"), f.version(), false)
                }),
                None => kind == "AssignMetadata",
            };
            if !apply_ok
                || !selects(
                    ctx,
                    f,
                    spec.get("match").unwrap_or(&Value::Null),
                    &f.key.group,
                )
            {
                continue;
            }
            let Some(loc) = spec.get("location").and_then(Value::as_str) else {
                continue;
            };
            if !location_reaches(&parse_location(loc), &toks, f.live) {
                continue;
            }
            let mut ev = vec![format!(
                "[PD011] Gatekeeper {kind} {} selects {} {} and writes location {loc}",
                name_of(m),
                f.key.kind,
                f.key.name
            )];
            if let Some(v) = spec.pointer("/parameters/assign/value") {
                ev.push(format!("[PD011] assigns {v}"));
            }
            out.push(Candidate {
                code: CHECK.code,
                kind: CauseType::MutatingPolicy,
                name: format!("{kind} {}", name_of(m)),
                manager: None,
                evidence: ev,
                score: 100,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn locations() {
        let segs = parse_location("spec.template.spec.containers[name:*].imagePullPolicy");
        assert_eq!(segs[3], Seg::Field("containers".into()));
        assert_eq!(segs[4], Seg::Elem("name".into(), "*".into()));
        let live = json!({"spec": {"template": {"spec": {"containers": [{"name": "api"}]}}}});
        let toks = tokens("/spec/template/spec/containers/0/imagePullPolicy");
        assert!(location_reaches(&segs, &toks, Some(&live)));
        let only_side = parse_location("spec.template.spec.containers[name: side].imagePullPolicy");
        assert!(!location_reaches(&only_side, &toks, Some(&live)));
        let label = parse_location("metadata.labels.\"team.io/owner\"");
        assert_eq!(label[2], Seg::Field("team.io/owner".into()));
    }
}
