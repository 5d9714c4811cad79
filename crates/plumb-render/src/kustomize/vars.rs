//! `vars` (deprecated in kustomize, still common in kubeflow and kubebuilder trees), as
//! kustomize resolves them:
//!
//! - at the end of each kustomization's own transformations, each var is attached to the one
//!   object its `objref` names (group, version, kind and name, exactly, against the object's
//!   current or earlier ids; the namespace too when the objref gives one); two matches are an
//!   error, none is not (yet);
//! - vars are collected over the whole build; a name declared twice is an error;
//! - after name references are repaired, each var's value is its object's `fieldref.fieldPath`
//!   (default `metadata.name`) — an unattached var or a missing field is an error — and
//!   `$(NAME)` is replaced in the fields of the `varReference` field specs (kustomize's builtin
//!   list plus those of `configurations`): string scalars, string map values and lists of
//!   strings. `$$` escapes `$`; an unknown `$(X)` stays; a value that is exactly `$(NAME)`
//!   takes the var's type (a port stays a number).

use super::fieldspec::{FieldSpec, Leaf, walk};
use super::kustfile::{Kust, entry_str};
use super::resource::{Res, ResId};
use super::tree::{Node, Org, Scalar};
use super::{Ctx, KustomizeError};
use std::collections::BTreeMap;

/// One declared var.
#[derive(Clone, Debug)]
pub struct Var {
    pub name: String,
    target: ResId,
    field_path: String,
    /// Where it was declared (the kustomization and its entry), for messages.
    file: String,
    org: Org,
}

impl Var {
    /// kustomize's way of naming a var in messages.
    fn display(&self) -> String {
        format!(
            "{} (objref {}, fieldPath {})",
            self.name,
            self.target.display(),
            self.field_path
        )
    }
}

/// The vars of `k`, read.
pub fn read(ctx: &Ctx, k: &Kust) -> Result<Vec<Var>, KustomizeError> {
    let mut out = Vec::new();
    for e in k.maps("vars").map_err(|m| ctx.kerr(k, None, m))? {
        let at = e.values().find_map(Node::org);
        let name = entry_str(k, e, "name").map(|s| s.value).unwrap_or_default();
        if name.is_empty() {
            return Err(ctx.kerr(k, at, "var has no name"));
        }
        let objref = e.get("objref").and_then(Node::as_map);
        let s = |f: &str| {
            objref
                .and_then(|m| entry_str(k, m, f))
                .map(|s| s.value)
                .unwrap_or_default()
        };
        let (mut group, mut version) = (s("group"), s("version"));
        let api_version = s("apiVersion");
        if !api_version.is_empty() {
            match api_version.split_once('/') {
                Some((g, v)) => (group, version) = (g.to_string(), v.to_string()),
                None => (group, version) = (String::new(), api_version),
            }
        }
        let field_path = e
            .get("fieldref")
            .and_then(Node::as_map)
            .and_then(|m| entry_str(k, m, "fieldPath"))
            .map(|s| s.value)
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "metadata.name".to_string());
        out.push(Var {
            name,
            target: ResId {
                group: group.into(),
                version: version.into(),
                kind: s("kind").into(),
                name: s("name").into(),
                namespace: s("namespace").into(),
            },
            field_path,
            file: k.path.clone(),
            org: at.unwrap_or(Org::NONE),
        });
    }
    Ok(out)
}

/// Attaches each of `vars` to the object it names in `ra` and adds them to `set`.
pub fn merge(
    ctx: &Ctx,
    k: &Kust,
    vars: Vec<Var>,
    ra: &mut [Res],
    set: &mut BTreeMap<String, Var>,
) -> Result<(), KustomizeError> {
    for v in &vars {
        let exact = !v.target.namespace.is_empty() || v.target.is_cluster_scoped();
        let matched: Vec<usize> = ra
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                r.all_ids().iter().any(|id| {
                    if exact {
                        id.equals(&v.target)
                    } else {
                        id.gvk_equals(&v.target) && id.name == v.target.name
                    }
                })
            })
            .map(|(i, _)| i)
            .collect();
        if matched.len() > 1 {
            return Err(ctx.kerr(
                k,
                Some(v.org),
                format!(
                    "found {} resId matches for var {} (unable to disambiguate)",
                    matched.len(),
                    v.display()
                ),
            ));
        }
        if let Some(&i) = matched.first() {
            ra[i].ref_vars.push(v.name.clone());
        }
    }
    merge_set(ctx, k, vars, set)
}

/// Adds `vars` to `set`; a name already there is an error.
pub fn merge_set(
    ctx: &Ctx,
    k: &Kust,
    vars: impl IntoIterator<Item = Var>,
    set: &mut BTreeMap<String, Var>,
) -> Result<(), KustomizeError> {
    for v in vars {
        if set.contains_key(&v.name) {
            return Err(ctx.kerr(
                k,
                Some(v.org),
                format!("var '{}' already encountered", v.name),
            ));
        }
        set.insert(v.name.clone(), v);
    }
    Ok(())
}

/// The fields of a pod spec where kustomize replaces vars, under `spec` of `kind`, and its
/// NFS volume server at `volumes`.
fn pod_references(v: &mut Vec<FieldSpec>, kind: &str, spec: &str, volumes: &str) {
    const POD_FIELDS: [&str; 8] = [
        "containers/args",
        "containers/command",
        "containers/env/value",
        "containers/volumeMounts/mountPath",
        "initContainers/args",
        "initContainers/command",
        "initContainers/env/value",
        "initContainers/volumeMounts/mountPath",
    ];
    for f in POD_FIELDS {
        v.push(FieldSpec::new("", "", kind, &format!("{spec}{f}"), false));
    }
    v.push(FieldSpec::new("", "", kind, volumes, false));
}

/// kustomize's builtin `varReference` field specs (behaviour facts, in kustomize's order).
pub fn builtin_references() -> Vec<FieldSpec> {
    const TEMPLATE: &str = "spec/template/spec/";
    const TEMPLATE_NFS: &str = "spec/template/spec/volumes/nfs/server";
    let mut v = Vec::new();
    pod_references(
        &mut v,
        "CronJob",
        "spec/jobTemplate/spec/template/spec/",
        "spec/jobTemplate/spec/template/volumes/nfs/server",
    );
    pod_references(&mut v, "DaemonSet", TEMPLATE, TEMPLATE_NFS);
    pod_references(&mut v, "Deployment", TEMPLATE, TEMPLATE_NFS);
    let plain = |kind: &str, path: &str| FieldSpec::new("", "", kind, path, false);
    v.push(plain("Deployment", "spec/template/metadata/annotations"));
    for path in ["spec/rules/host", "spec/tls/hosts", "spec/tls/secretName"] {
        v.push(plain("Ingress", path));
    }
    pod_references(&mut v, "Job", TEMPLATE, TEMPLATE_NFS);
    pod_references(&mut v, "Pod", "spec/", "spec/volumes/nfs/server");
    pod_references(&mut v, "ReplicaSet", TEMPLATE, TEMPLATE_NFS);
    v.push(plain("Service", "spec/ports/port"));
    v.push(plain("Service", "spec/ports/targetPort"));
    pod_references(
        &mut v,
        "StatefulSet",
        TEMPLATE,
        "spec/volumeClaimTemplates/spec/nfs/server",
    );
    v.push(plain("PersistentVolume", "spec/nfs/server"));
    v.push(plain("", "metadata/labels"));
    v.push(plain("", "metadata/annotations"));
    v
}

/// Resolves the build's vars and replaces `$(NAME)` where `references` point.
pub fn resolve(
    ra: &mut [Res],
    set: &BTreeMap<String, Var>,
    references: &[FieldSpec],
) -> Result<(), (String, String)> {
    if set.is_empty() {
        return Ok(());
    }
    let mut values: BTreeMap<&str, Node> = BTreeMap::new();
    for (name, v) in set {
        let Some(r) = ra.iter().find(|r| r.ref_vars.iter().any(|n| n == name)) else {
            return Err((
                v.file.clone(),
                format!(
                    "var '{}' cannot be mapped to a field in the set of known resources",
                    v.display()
                ),
            ));
        };
        let value = super::replacements::read_field(&r.node, &index_as_field(&v.field_path))
            .ok()
            .flatten()
            .filter(|n| !n.is_null())
            .ok_or_else(|| {
                (
                    v.file.clone(),
                    format!(
                        "field specified in var '{}' not found in corresponding resource",
                        v.display()
                    ),
                )
            })?;
        // A mapping or a list is no value to put in a string: kustomize leaves the var's
        // references as written, as an unknown var's.
        if matches!(value, Node::Scalar(..)) {
            values.insert(name, value);
        }
    }
    for r in ra.iter_mut() {
        let id = r.cur_id();
        for fs in references.iter().filter(|f| f.selects(id.as_ref())) {
            walk(&mut r.node, fs.segments(), false, Leaf::Scalar, &mut |n| {
                replace_in(n, &values)
            })
            .map_err(|m| (String::new(), m))?;
        }
    }
    Ok(())
}

/// A var's `fieldPath` in replacements' syntax: `ports[0]` is `ports.0` (kyaml reads a
/// trailing `[N]` as a list index); `[name=x]` stays; an escaped dot (`dotted\.key`) is part
/// of its field's name (`[dotted.key]`).
fn index_as_field(path: &str) -> String {
    let mut parts = vec![String::new()];
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'.') => {
                chars.next();
                parts.last_mut().expect("one part at least").push('.');
            }
            '.' => parts.push(String::new()),
            c => parts.last_mut().expect("one part at least").push(c),
        }
    }
    parts
        .iter()
        .map(|part| {
            if part.contains('.') && !part.starts_with('[') {
                return format!("[{part}]");
            }
            match part
                .strip_suffix(']')
                .and_then(|p| p.rsplit_once('['))
                .filter(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            {
                Some(("", n)) => n.to_string(),
                Some((field, n)) => format!("{field}.{n}"),
                None => part.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join(".")
}

fn is_string(n: &Node) -> bool {
    matches!(n, Node::Scalar(Scalar::Str(_), _))
}

fn replace_in(n: &mut Node, values: &BTreeMap<&str, Node>) -> Result<(), String> {
    match n {
        Node::Scalar(Scalar::Str(_), _) => expand_node(n, values),
        Node::Scalar(..) => {}
        Node::Map(m) => {
            for (_, v) in m.iter_mut() {
                if is_string(v) {
                    expand_node(v, values);
                }
            }
        }
        Node::Seq(items) => {
            for it in items.iter_mut() {
                if !is_string(it) {
                    return Err("invalid value type expect a string".into());
                }
                expand_node(it, values);
            }
        }
    }
    Ok(())
}

/// `$(NAME)` expanded in a string scalar, in place.
fn expand_node(n: &mut Node, values: &BTreeMap<&str, Node>) {
    let Node::Scalar(Scalar::Str(s), org) = n else {
        return;
    };
    let org = *org;
    // A value that is exactly one reference takes the var's value, with its type.
    if let Some(name) = s.strip_prefix("$(").and_then(|r| r.strip_suffix(')'))
        && !name.contains(')')
        && let Some(v) = values.get(name)
    {
        let mut v = v.clone();
        v.set_org(org);
        *n = match v {
            Node::Scalar(Scalar::Str(_) | Scalar::Num(_) | Scalar::Bool(_), _) => v,
            other => Node::str(other.scalar_text().unwrap_or_default(), org),
        };
        return;
    }
    let out = expand(s, |name| {
        values
            .get(name)
            .map(|v| v.scalar_text().unwrap_or_default())
    });
    *s = out.into();
}

/// Kubernetes' `$(VAR)` expansion: `$$` is `$`, an unknown `$(X)` stays as written.
fn expand(input: &str, lookup: impl Fn(&str) -> Option<String>) -> String {
    let b = input.as_bytes();
    let mut out = String::with_capacity(input.len());
    let mut i = 0;
    let mut checkpoint = 0;
    while i < b.len() {
        if b[i] == b'$' && i + 1 < b.len() {
            out.push_str(&input[checkpoint..i]);
            match b[i + 1] {
                b'$' => {
                    out.push('$');
                    i += 2;
                }
                b'(' => match input[i + 2..].find(')') {
                    Some(end) => {
                        let name = &input[i + 2..i + 2 + end];
                        match lookup(name) {
                            Some(v) => out.push_str(&v),
                            None => {
                                out.push_str("$(");
                                out.push_str(name);
                                out.push(')');
                            }
                        }
                        i += 2 + end + 1;
                    }
                    None => {
                        out.push_str("$(");
                        i += 2;
                    }
                },
                _ => {
                    out.push('$');
                    i += 1;
                }
            }
            checkpoint = i;
            continue;
        }
        i += 1;
    }
    out.push_str(&input[checkpoint..]);
    out
}

#[cfg(test)]
mod tests {
    use super::{expand, index_as_field};

    #[test]
    fn list_indexes_in_field_paths() {
        assert_eq!(index_as_field("spec.ports[0].port"), "spec.ports.0.port");
        assert_eq!(index_as_field("metadata.name"), "metadata.name");
        assert_eq!(index_as_field("spec.a[12]"), "spec.a.12");
        assert_eq!(index_as_field("data.dotted\\.key"), "data.[dotted.key]");
        assert_eq!(index_as_field("a\\.b\\.c.d"), "[a.b.c].d");
        assert_eq!(
            index_as_field("spec.containers.[name=web].image"),
            "spec.containers.[name=web].image"
        );
    }

    #[test]
    fn expansion_follows_kubernetes() {
        let look = |n: &str| (n == "A").then(|| "x".to_string());
        for (input, want) in [
            ("$(A)", "x"),
            ("a-$(A)-b", "a-x-b"),
            ("$(B)", "$(B)"),
            ("$$(A)", "$(A)"),
            ("$$", "$"),
            ("$", "$"),
            ("a$", "a$"),
            ("$(A", "$(A"),
            ("$x", "$x"),
            ("$(A)$(A)", "xx"),
        ] {
            assert_eq!(expand(input, look), want, "{input}");
        }
    }
}
