//! PD010 kyverno-mutate: a Kyverno `ClusterPolicy` (or a `Policy` in the object's namespace)
//! with a mutate rule whose `match` selects the object (kinds, names, namespaces, selector,
//! namespaceSelector, operations; `exclude` honoured), and whose `patchStrategicMerge`,
//! `patchesJson6902` or `foreach` patch writes the field. A rule on `Pod` applies to pod
//! controllers' templates through Kyverno's auto-generation. A rule that writes the field
//! ranks first of all candidates; one that matches without writing it ranks with webhooks.

use super::{Candidate, Check, Ctx, Field, any_glob, glob, name_of, namespace_of, tokens};
use crate::report::CauseType;
use crate::selector;
use serde_json::Value;

pub const CHECK: Check = Check {
    code: "PD010",
    name: "kyverno-mutate",
    run,
};

/// The path prefix of the pod template in a pod controller, for auto-generated rules.
fn pod_template(kind: &str) -> Option<&'static [&'static str]> {
    match kind {
        "Deployment"
        | "StatefulSet"
        | "DaemonSet"
        | "ReplicaSet"
        | "Job"
        | "ReplicationController" => Some(&["spec", "template"]),
        "CronJob" => Some(&["spec", "jobTemplate", "spec", "template"]),
        _ => None,
    }
}

/// Whether a `kinds` entry (`Kind`, `Version/Kind`, `Group/Version/Kind`, wildcards) names
/// `group`/`kind`.
fn kind_matches(entry: &str, group: &str, kind: &str) -> bool {
    let parts: Vec<&str> = entry.split('/').collect();
    match parts.as_slice() {
        [k] => glob(k, kind),
        [_v, k] => glob(k, kind) && group.is_empty(),
        [g, _v, k] => glob(k, kind) && glob(g, group),
        _ => false,
    }
}

/// Does one `resources` filter select the object? Returns the path prefix the rule's patches
/// are relative to (the pod template for an auto-generated Pod rule).
fn filter_selects(ctx: &Ctx<'_>, f: &Field<'_>, res: &Value, autogen: bool) -> Option<Vec<String>> {
    let kinds: Vec<&str> = res
        .get("kinds")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let prefix = if kinds
        .iter()
        .any(|k| kind_matches(k, &f.key.group, &f.key.kind))
    {
        Vec::new()
    } else if autogen
        && kinds.iter().any(|k| kind_matches(k, "", "Pod"))
        && let Some(p) = pod_template(&f.key.kind)
    {
        p.iter().map(|s| s.to_string()).collect()
    } else {
        return None;
    };
    let names_ok = any_glob(res.get("names"), &f.key.name, true)
        && res
            .get("name")
            .and_then(Value::as_str)
            .is_none_or(|n| glob(n, &f.key.name));
    let ns_ok = any_glob(res.get("namespaces"), &f.key.namespace, true);
    let ops_ok = any_glob(res.get("operations"), "UPDATE", true);
    let labels = f.live.map(selector::labels_of).unwrap_or_default();
    let new_labels = selector::labels_of(f.desired_object);
    let sel_ok = res.get("selector").is_none_or(|s| {
        selector::matches(Some(s), &labels) || selector::matches(Some(s), &new_labels)
    });
    let nsl = ctx
        .namespaces
        .get(&f.key.namespace)
        .cloned()
        .unwrap_or_default();
    let nssel_ok = res
        .get("namespaceSelector")
        .is_none_or(|s| selector::matches(Some(s), &nsl));
    (names_ok && ns_ok && ops_ok && sel_ok && nssel_ok).then_some(prefix)
}

/// `match` / `exclude` blocks: `any`, `all`, or the legacy `resources`.
fn block_selects(
    ctx: &Ctx<'_>,
    f: &Field<'_>,
    block: &Value,
    autogen: bool,
) -> Option<Vec<String>> {
    let res_of = |e: &Value| e.get("resources").cloned().unwrap_or(Value::Null);
    if let Some(Value::Array(any)) = block.get("any") {
        return any
            .iter()
            .find_map(|e| filter_selects(ctx, f, &res_of(e), autogen));
    }
    if let Some(Value::Array(all)) = block.get("all") {
        let mut prefix = None;
        for e in all {
            prefix = Some(filter_selects(ctx, f, &res_of(e), autogen)?);
        }
        return prefix;
    }
    block
        .get("resources")
        .and_then(|r| filter_selects(ctx, f, r, autogen))
}

/// Strips a Kyverno anchor: `Some(name)` for keys that write (`name`), `None` for conditions
/// (`(name)`, `=(name)`, `<(name)`, `X(name)`, `^(name)`) and add-if-absent (`+(name)`, which
/// never overwrites a value git declares).
fn written_key(k: &str) -> Option<&str> {
    if k.ends_with(')') && (k.starts_with('(') || k[1..].starts_with('(')) {
        None
    } else {
        Some(k)
    }
}

fn condition_key(k: &str) -> Option<&str> {
    let inner = k.strip_suffix(')')?;
    inner.strip_prefix('(').or_else(|| inner.strip_prefix("=("))
}

/// Whether a strategic-merge overlay writes the field at `toks` (walking `live` alongside to
/// evaluate list elements' condition anchors).
fn overlay_touches(patch: &Value, toks: &[String], live: Option<&Value>) -> bool {
    let Some((t, rest)) = toks.split_first() else {
        return true;
    };
    match patch {
        Value::Object(m) => m.iter().any(|(k, v)| {
            written_key(k) == Some(t.as_str())
                && overlay_touches(v, rest, live.and_then(|l| l.get(t.as_str())))
        }),
        Value::Array(items) => {
            let Ok(i) = t.parse::<usize>() else {
                return false;
            };
            let elem = live.and_then(|l| l.get(i));
            items.iter().any(|item| {
                let conds_ok = item.as_object().is_none_or(|m| {
                    m.iter().all(|(k, want)| match condition_key(k) {
                        None => true,
                        Some(ck) => match (elem.and_then(|e| e.get(ck)), want) {
                            (Some(Value::String(have)), Value::String(w)) => glob(w, have),
                            (Some(have), w) => have == w,
                            (None, _) => elem.is_none(),
                        },
                    })
                });
                conds_ok && overlay_touches(item, rest, elem)
            })
        }
        _ => false,
    }
}

/// JSON 6902 patch paths from Kyverno's YAML string form (`- op: replace\n  path: /spec/…`).
fn json6902_paths(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim().trim_start_matches("- ").trim();
            l.strip_prefix("path:")
                .map(|p| p.trim().trim_matches(|c| c == '"' || c == '\'').to_string())
        })
        .collect()
}

fn rule_touches(mutate: &Value, prefix: &[String], f: &Field<'_>) -> Option<String> {
    let toks = tokens(f.pointer);
    if toks.len() < prefix.len() || toks[..prefix.len()] != *prefix {
        return None;
    }
    let rel = &toks[prefix.len()..];
    let live_base = f
        .live
        .and_then(|l| prefix.iter().try_fold(l, |cur, t| cur.get(t.as_str())));
    let mut overlays: Vec<&Value> = mutate.get("patchStrategicMerge").into_iter().collect();
    let mut texts: Vec<&str> = mutate
        .get("patchesJson6902")
        .and_then(Value::as_str)
        .into_iter()
        .collect();
    if let Some(Value::Array(fe)) = mutate.get("foreach") {
        for e in fe {
            overlays.extend(e.get("patchStrategicMerge"));
            texts.extend(e.get("patchesJson6902").and_then(Value::as_str));
        }
    }
    for o in overlays {
        if overlay_touches(o, rel, live_base) {
            return Some("patchStrategicMerge".into());
        }
    }
    let rel_pointer: String = rel
        .iter()
        .map(|t| format!("/{}", plumb_core::pointer::escape_token(t)))
        .collect();
    for t in texts {
        for p in json6902_paths(t) {
            if rel_pointer == p || rel_pointer.starts_with(&format!("{p}/")) {
                return Some(format!("patchesJson6902 path {p}"));
            }
        }
    }
    None
}

fn run(ctx: &Ctx<'_>, f: &Field<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    let policies = ctx.objects("kyverno.io", "ClusterPolicy").chain(
        ctx.objects("kyverno.io", "Policy")
            .filter(|p| namespace_of(p) == f.key.namespace),
    );
    for pol in policies {
        let autogen =
            match plumb_core::value::annotation(pol, "pod-policies.kyverno.io/autogen-controllers")
            {
                None => true,
                Some("none") => false,
                Some(list) => list.split(',').any(|c| c.trim() == f.key.kind),
            };
        let Some(Value::Array(rules)) = pol.pointer("/spec/rules") else {
            continue;
        };
        for rule in rules {
            let Some(mutate) = rule.get("mutate") else {
                continue;
            };
            let Some(prefix) = rule
                .get("match")
                .and_then(|m| block_selects(ctx, f, m, autogen))
            else {
                continue;
            };
            if rule
                .get("exclude")
                .is_some_and(|x| block_selects(ctx, f, x, autogen).is_some())
            {
                continue;
            }
            let rname = rule.get("name").and_then(Value::as_str).unwrap_or("");
            let kind = pol
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or("ClusterPolicy");
            let mut ev = vec![format!(
                "[PD010] Kyverno {kind} {} rule {rname} matches {} {}{}",
                name_of(pol),
                f.key.kind,
                f.key.name,
                if prefix.is_empty() {
                    ""
                } else {
                    " (auto-generated from its Pod rule)"
                }
            )];
            let touches = rule_touches(mutate, &prefix, f);
            if let Some(how) = &touches {
                ev.push(format!("[PD010] its {how} writes {}", f.pointer));
            }
            out.push(Candidate {
                code: CHECK.code,
                kind: CauseType::MutatingPolicy,
                name: format!("{kind} {}", name_of(pol)),
                manager: None,
                evidence: ev,
                score: if touches.is_some() { 100 } else { 55 },
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
    fn overlay_anchors() {
        let live =
            json!({"containers": [{"name": "side"}, {"name": "api", "imagePullPolicy": "Always"}]});
        let t = |p: &str| tokens(p);
        let all = json!({"containers": [{"(name)": "*", "imagePullPolicy": "Always"}]});
        assert!(overlay_touches(
            &all,
            &t("/containers/1/imagePullPolicy"),
            Some(&live)
        ));
        let side = json!({"containers": [{"(name)": "side", "imagePullPolicy": "Always"}]});
        assert!(!overlay_touches(
            &side,
            &t("/containers/1/imagePullPolicy"),
            Some(&live)
        ));
        let add = json!({"containers": [{"(name)": "*", "+(imagePullPolicy)": "Always"}]});
        assert!(!overlay_touches(
            &add,
            &t("/containers/1/imagePullPolicy"),
            Some(&live)
        ));
        assert_eq!(
            json6902_paths("- op: replace\n  path: /spec/replicas\n  value: 2\n"),
            vec!["/spec/replicas"]
        );
    }
}
