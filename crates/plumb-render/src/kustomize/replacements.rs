//! `replacements`: copy a field of one resource into fields of others.

use super::kustfile::{Kust, known_fields};
use super::resource::{Res, ResId};
use super::select::LabelSelector;
use super::tree::{self, Dialect, Map, Node, Org, Scalar};
use super::{Ctx, KustomizeError};

fn kerr(k: &Kust, org: Option<Org>, m: impl Into<String>) -> KustomizeError {
    super::load_error(&k.path, org.filter(|o| o.file == k.file), m)
}

fn s(m: &Map, f: &str) -> String {
    m.get(f).and_then(Node::scalar_text).unwrap_or_default()
}

fn res_id(m: &Map) -> ResId {
    ResId {
        group: s(m, "group").into(),
        version: s(m, "version").into(),
        kind: s(m, "kind").into(),
        name: s(m, "name").into(),
        namespace: s(m, "namespace").into(),
    }
}

/// The value at `field_path` (a replacement source's syntax: `spec.ports.0.port`,
/// `spec.containers.[name=web].image`) of `node`, if any.
pub(super) fn read_field(node: &Node, field_path: &str) -> Result<Option<Node>, String> {
    let mut node = node.clone();
    let mut hit = None;
    find(&mut node, &split_path(field_path), false, None, &mut |n| {
        if hit.is_none() {
            hit = Some(n.clone());
        }
        Ok(())
    })?;
    Ok(hit)
}

/// Splits a field path at dots outside brackets.
fn split_path(p: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0;
    for c in p.chars() {
        match c {
            '[' => {
                depth += 1;
                cur.push(c);
            }
            ']' => {
                depth -= 1;
                cur.push(c);
            }
            '.' if depth == 0 => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    // kyaml skips empty elements: `.metadata.namespace` is `metadata.namespace`.
    out.retain(|s| !s.is_empty());
    out
}

/// Options of a source or target.
#[derive(Default)]
struct Opts {
    delimiter: String,
    index: i64,
    create: bool,
}

fn opts(m: Option<&Node>) -> Opts {
    let Some(m) = m.and_then(Node::as_map) else {
        return Opts::default();
    };
    Opts {
        delimiter: s(m, "delimiter"),
        index: match m.get("index") {
            Some(Node::Scalar(Scalar::Num(n), _)) => n.as_i64().unwrap_or(0),
            _ => 0,
        },
        create: super::kustfile::entry_bool(m, "create"),
    }
}

/// Runs the kustomization's replacements in order.
pub fn run(ctx: &mut Ctx, k: &Kust, ra: &mut [Res]) -> Result<(), KustomizeError> {
    let entries = k.maps("replacements").map_err(|m| kerr(k, None, m))?;
    for e in entries {
        if let Some(p) = super::kustfile::entry_str(k, e, "path") {
            let fp = ctx.file_under(k, &p.value, p.org)?;
            let text = ctx.read_text(&fp)?;
            let fid = ctx.file_id(&fp);
            let docs =
                tree::parse_stream(&text, fid, 0, 0, Dialect::Kustomization).map_err(|err| {
                    kerr(
                        k,
                        Some(p.org),
                        format!("invalid replacement file: {}", err.message),
                    )
                })?;
            for d in docs {
                let list: Vec<Node> = match d.node {
                    Node::Seq(items) => items,
                    other => vec![other],
                };
                for r in list {
                    let m = r
                        .as_map()
                        .ok_or_else(|| kerr(k, Some(p.org), "a replacement must be a mapping"))?;
                    apply(k, m, ra).map_err(|msg| kerr(k, Some(p.org), msg))?;
                }
            }
        } else {
            let at = super::tree::first_org_in(e);
            apply(k, e, ra).map_err(|msg| kerr(k, at, msg))?;
        }
    }
    Ok(())
}

fn apply(k: &Kust, rep: &Map, ra: &mut [Res]) -> Result<(), String> {
    known_fields(rep, &["source", "targets"])?;
    const INCOMPLETE: &str = "replacements must specify a source and at least one target";
    if !matches!(rep.get("targets"), Some(Node::Seq(t)) if !t.is_empty()) {
        return Err(INCOMPLETE.into());
    }
    let src = rep.get("source").and_then(Node::as_map).ok_or(INCOMPLETE)?;
    let sel = res_id(src);
    let mut found: Option<usize> = None;
    for (i, r) in ra.iter().enumerate() {
        if r.all_ids().iter().any(|id| id.selected_by(&sel)) {
            if found.is_some() {
                return Err(format!("multiple matches for selector {}", sel.display()));
            }
            found = Some(i);
        }
    }
    let i = found.ok_or_else(|| format!("nothing selected by {}", sel.display()))?;
    let mut fp = s(src, "fieldPath");
    if fp.is_empty() {
        fp = "metadata.name".into();
    }
    let path = split_path(&fp);
    let mut value = {
        let mut node = ra[i].node.clone();
        let mut hits = Vec::new();
        find(&mut node, &path, false, None, &mut |n| {
            hits.push(n.clone());
            Ok(())
        })?;
        match hits.into_iter().next() {
            Some(v) if !v.is_null() => v,
            _ => {
                return Err(format!(
                    "fieldPath `{fp}` is missing for replacement source {}",
                    sel.display()
                ));
            }
        }
    };
    let so = opts(src.get("options"));
    if !so.delimiter.is_empty() {
        let text = value.scalar_text().unwrap_or_default();
        let parts: Vec<&str> = text.split(so.delimiter.as_str()).collect();
        if so.index < 0 || so.index as usize >= parts.len() {
            return Err(format!(
                "options.index {} is out of bounds for value {text}",
                so.index
            ));
        }
        value = Node::str(parts[so.index as usize], value.org().unwrap_or(Org::NONE));
    }
    let targets = match rep.get("targets") {
        Some(Node::Seq(t)) => t.clone(),
        _ => Vec::new(),
    };
    for t in &targets {
        let tm = t.as_map().ok_or("a replacement target must be a mapping")?;
        let select = tm
            .get("select")
            .and_then(Node::as_map)
            .ok_or("target must specify resources to select")?;
        let sel = res_id(select);
        let ls = s(select, "labelSelector");
        let asel = s(select, "annotationSelector");
        let ls = (!ls.is_empty())
            .then(|| LabelSelector::parse(&ls))
            .transpose()?;
        let asel = (!asel.is_empty())
            .then(|| LabelSelector::parse(&asel))
            .transpose()?;
        let rejects: Vec<(ResId, Option<LabelSelector>, Option<LabelSelector>)> =
            match tm.get("reject") {
                Some(Node::Seq(r)) => r
                    .iter()
                    .filter_map(Node::as_map)
                    .map(|m| {
                        let l = s(m, "labelSelector");
                        let a = s(m, "annotationSelector");
                        Ok((
                            res_id(m),
                            (!l.is_empty())
                                .then(|| LabelSelector::parse(&l))
                                .transpose()?,
                            (!a.is_empty())
                                .then(|| LabelSelector::parse(&a))
                                .transpose()?,
                        ))
                    })
                    .collect::<Result<_, String>>()?,
                _ => Vec::new(),
            };
        // No field paths (none, null or an empty list): the name, as kustomize defaults them.
        let field_paths: Vec<(String, Org)> = match tm.get("fieldPaths") {
            Some(Node::Seq(f)) if !f.is_empty() => f
                .iter()
                .map(|n| (k.text(n).unwrap_or_default(), n.org().unwrap_or(Org::NONE)))
                .collect(),
            _ => vec![("metadata.name".into(), Org::NONE)],
        };
        let to = opts(tm.get("options"));
        for r in ra.iter_mut() {
            if let Some(l) = &ls
                && !l.matches(&r.string_map("labels"))
            {
                continue;
            }
            if let Some(a) = &asel
                && !a.matches(&r.string_map("annotations"))
            {
                continue;
            }
            let ids = r.all_ids();
            let rejected = rejects.iter().any(|(rid, rl, rann)| {
                let id_hit = *rid != ResId::default() && ids.iter().any(|id| id.selected_by(rid));
                let l_hit = rl
                    .as_ref()
                    .is_some_and(|l| l.matches(&r.string_map("labels")));
                let a_hit = rann
                    .as_ref()
                    .is_some_and(|a| a.matches(&r.string_map("annotations")));
                id_hit || l_hit || a_hit
            });
            if rejected || !ids.iter().any(|id| id.selected_by(&sel)) {
                continue;
            }
            for (fp, org) in &field_paths {
                let path = split_path(fp);
                let mut count = 0;
                let create = to.create.then(|| value.clone());
                find(&mut r.node, &path, to.create, create.as_ref(), &mut |n| {
                    count += 1;
                    set_value(n, &value, &to, *org)
                })?;
                if count == 0 {
                    return Err(if to.create {
                        format!("unable to find or create field {fp:?} in replacement target")
                    } else {
                        format!("unable to find field {fp:?} in replacement target")
                    });
                }
            }
        }
    }
    Ok(())
}

/// Walks a replacement field path (`a.b.[k=v].c`, `*`, indexes), creating missing parts
/// when asked.
fn find(
    n: &mut Node,
    path: &[String],
    create: bool,
    leaf: Option<&Node>,
    f: &mut dyn FnMut(&mut Node) -> Result<(), String>,
) -> Result<(), String> {
    let Some((first, rest)) = path.split_first() else {
        return f(n);
    };
    if let Some(inner) = first.strip_prefix('[').and_then(|x| x.strip_suffix(']')) {
        if let Some((key, val)) = inner.split_once('=') {
            let Node::Seq(items) = n else {
                return Ok(());
            };
            let mut any = false;
            for it in items.iter_mut() {
                let hit = if key.is_empty() {
                    it.scalar_text().as_deref() == Some(val)
                } else {
                    it.get(key).and_then(Node::scalar_text).as_deref() == Some(val)
                };
                if hit {
                    any = true;
                    find(it, rest, create, leaf, f)?;
                }
            }
            if !any && create {
                let mut m = Map::new();
                m.insert(key.to_string(), Node::str(val, Org::NONE));
                let mut el = if key.is_empty() {
                    Node::str(val, Org::NONE)
                } else {
                    Node::Map(m)
                };
                find(&mut el, rest, create, leaf, f)?;
                items.push(el);
            }
            return Ok(());
        }
        // `[a.b]`: a literal key containing dots.
        return field(n, inner, rest, create, leaf, f);
    }
    if first == "*" {
        match n {
            Node::Seq(items) => {
                for it in items.iter_mut() {
                    find(it, rest, create, leaf, f)?;
                }
            }
            Node::Map(m) => {
                for v in m.values_mut() {
                    find(v, rest, create, leaf, f)?;
                }
            }
            _ => {}
        }
        return Ok(());
    }
    if let Node::Seq(items) = n {
        // An index: the element, or with `create` one past the last, appended (kyaml's path
        // getter). Anything else (`-` included) finds nothing in a list.
        if let Ok(i) = first.parse::<usize>() {
            if let Some(it) = items.get_mut(i) {
                find(it, rest, create, leaf, f)?;
            } else if create && i == items.len() {
                let mut el = new_node(rest, leaf);
                find(&mut el, rest, create, leaf, f)?;
                items.push(el);
            }
        }
        return Ok(());
    }
    field(n, first, rest, create, leaf, f)
}

/// A node created on the way to the rest of a path `rest`: the leaf's kind at its end, a
/// list before a `[key=value]` or index segment, else a mapping.
fn new_node(rest: &[String], leaf: Option<&Node>) -> Node {
    match rest.first() {
        None => match leaf {
            Some(Node::Map(_)) => Node::empty_map(),
            Some(Node::Seq(_)) => Node::Seq(Vec::new()),
            _ => Node::Scalar(Scalar::Null, Org::NONE),
        },
        Some(next)
            if (next.starts_with('[') && next.contains('=')) || next.parse::<usize>().is_ok() =>
        {
            Node::Seq(Vec::new())
        }
        Some(_) => Node::empty_map(),
    }
}

fn field(
    n: &mut Node,
    name: &str,
    rest: &[String],
    create: bool,
    leaf: Option<&Node>,
    f: &mut dyn FnMut(&mut Node) -> Result<(), String>,
) -> Result<(), String> {
    let Node::Map(m) = n else {
        return Ok(());
    };
    if !m.contains_key(name) || m.get(name).is_some_and(Node::is_null) && create {
        if !create {
            return Ok(());
        }
        m.insert(name.to_string(), new_node(rest, leaf));
    }
    let child = m.get_mut(name).expect("present or created");
    find(child, rest, create, leaf, f)
}

/// Resolves text as a plain YAML scalar.
fn resolve_plain(text: &str, org: Org) -> Node {
    match tree::parse_stream(text, org.file, 0, 0, Dialect::Resource) {
        Ok(mut d) if d.len() == 1 && matches!(d[0].node, Node::Scalar(..)) => {
            let mut n = d.remove(0).node;
            n.set_org(org);
            n
        }
        _ => Node::str(text, org),
    }
}

/// kustomize's setFieldValue: scalars keep their type, other nodes are replaced.
fn set_value(target: &mut Node, value: &Node, o: &Opts, org: Org) -> Result<(), String> {
    let mut value = value.clone();
    if !o.delimiter.is_empty() {
        let Node::Scalar(..) = target else {
            return Err("delimiter option can only be used with scalar nodes".into());
        };
        let cur = target.scalar_text().unwrap_or_default();
        let mut parts: Vec<String> = cur.split(o.delimiter.as_str()).map(String::from).collect();
        let v = value.scalar_text().unwrap_or_default();
        if o.index < 0 {
            parts.insert(0, v);
        } else if o.index as usize >= parts.len() {
            parts.push(v);
        } else {
            parts[o.index as usize] = v;
        }
        value = Node::str(parts.join(&o.delimiter), org);
    }
    match target {
        Node::Scalar(old, _) => {
            let text = match &value {
                Node::Scalar(..) => value.scalar_text().unwrap_or_default(),
                _ => String::new(),
            };
            *target = match old {
                Scalar::Str(_) => Node::str(text, org),
                Scalar::Null => resolve_plain(&text, org),
                Scalar::Num(_) | Scalar::Bool(_) => match resolve_plain(&text, org) {
                    n @ Node::Scalar(Scalar::Num(_) | Scalar::Bool(_), _) => n,
                    _ => Node::str(text, org),
                },
            };
        }
        _ => {
            value.set_org(org);
            *target = value;
        }
    }
    Ok(())
}
