//! PD009 api-server-default: the API server, not a writer, makes the difference. For a custom
//! resource the CRD's structural schema decides: a field git declares that the schema does
//! not have (and no `x-kubernetes-preserve-unknown-fields` / `additionalProperties` above it)
//! is pruned on every write, so live never has it; a `null` git declares is dropped and the
//! schema's `default` filled in.

use super::{Candidate, Check, Ctx, Field, name_of, tokens};
use crate::report::CauseType;
use plumb_core::value::json_eq;
use serde_json::Value;

pub const CHECK: Check = Check {
    code: "PD009",
    name: "api-server-default",
    run,
};

/// What the structural schema says about a path.
#[derive(Debug, PartialEq)]
enum Schema<'a> {
    /// The schema has the field: its schema node.
    Known(&'a Value),
    /// Unknown fields are kept from here on.
    Preserved,
    /// Pruned: the first token the schema does not have, and the path above it.
    Pruned { token: String, parent: String },
}

fn walk<'a>(mut node: &'a Value, toks: &[String]) -> Schema<'a> {
    let mut parent = String::new();
    for t in toks {
        if node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
            && node.get("properties").is_none()
            && node.get("items").is_none()
        {
            return Schema::Preserved;
        }
        let next = if let Some(items) = node.get("items").filter(|_| t.parse::<usize>().is_ok()) {
            Some(items)
        } else if let Some(p) = node.get("properties").and_then(|p| p.get(t.as_str())) {
            Some(p)
        } else {
            match node.get("additionalProperties") {
                Some(Value::Bool(true)) => return Schema::Preserved,
                Some(ap @ Value::Object(_)) => Some(ap),
                _ => None,
            }
        };
        match next {
            Some(n) => node = n,
            None => {
                if node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
                    return Schema::Preserved;
                }
                return Schema::Pruned {
                    token: t.clone(),
                    parent: if parent.is_empty() {
                        "/".into()
                    } else {
                        parent
                    },
                };
            }
        }
        parent.push('/');
        parent.push_str(t);
    }
    Schema::Known(node)
}

fn run(ctx: &Ctx<'_>, f: &Field<'_>) -> Vec<Candidate> {
    let toks = tokens(f.pointer);
    if toks
        .first()
        .is_some_and(|t| t == "metadata" || t == "apiVersion" || t == "kind")
    {
        return Vec::new();
    }
    let version = f.version().to_string();
    for crd in ctx.objects("apiextensions.k8s.io", "CustomResourceDefinition") {
        let s = |p: &str| crd.pointer(p).and_then(Value::as_str);
        if s("/spec/group") != Some(f.key.group.as_str())
            || s("/spec/names/kind") != Some(f.key.kind.as_str())
        {
            continue;
        }
        let schema = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .and_then(|vs| {
                vs.iter()
                    .find(|v| v.get("name").and_then(Value::as_str) == Some(version.as_str()))
            })
            .and_then(|v| v.pointer("/schema/openAPIV3Schema"))
            .or_else(|| crd.pointer("/spec/validation/openAPIV3Schema"));
        let Some(schema) = schema else {
            continue;
        };
        let crd_name = name_of(crd);
        let evidence = match (walk(schema, &toks), f.desired, f.live_value) {
            (Schema::Pruned { token, parent }, Some(_), None) => vec![
                format!("[PD009] CustomResourceDefinition {crd_name}'s structural schema ({version}) has no field `{token}` under {parent}"),
                "[PD009] the API server prunes unknown fields on every write: git's value is dropped, live never has it".into(),
            ],
            (Schema::Known(node), Some(Value::Null), Some(live)) => match node.get("default") {
                Some(d) if json_eq(d, live) => vec![
                    format!("[PD009] git declares null; CustomResourceDefinition {crd_name}'s schema ({version}) is not nullable there, so the API server drops the null and fills in its default {d}"),
                ],
                _ => continue,
            },
            (Schema::Known(node), Some(_), Some(live)) if f.owners.is_empty() => match node.get("default") {
                Some(d) if json_eq(d, live) => vec![format!(
                    "[PD009] live holds CustomResourceDefinition {crd_name}'s schema default {d} and no manager owns the field: the API server defaulted it"
                )],
                _ => continue,
            },
            _ => continue,
        };
        return vec![Candidate {
            code: CHECK.code,
            kind: CauseType::ApiServerDefault,
            name: format!("CustomResourceDefinition {crd_name}"),
            manager: None,
            evidence,
            score: 75,
        }];
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pruned_preserved_and_known() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "size": {"type": "integer", "default": 1},
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "items": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}}}}}});
        let t = |p: &str| tokens(p);
        assert!(matches!(walk(&s, &t("/spec/size")), Schema::Known(_)));
        assert_eq!(
            walk(&s, &t("/spec/sise")),
            Schema::Pruned {
                token: "sise".into(),
                parent: "/spec".into()
            }
        );
        assert_eq!(walk(&s, &t("/spec/extra/anything")), Schema::Preserved);
        assert!(matches!(walk(&s, &t("/spec/labels/x")), Schema::Known(_)));
        assert!(matches!(walk(&s, &t("/spec/items/0/a")), Schema::Known(_)));
        assert!(matches!(
            walk(&s, &t("/spec/items/0/b")),
            Schema::Pruned { .. }
        ));
    }
}
