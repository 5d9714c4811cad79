//! `patches`, `patchesStrategicMerge` and `patchesJson6902`.

use super::kustfile::{Kust, entry_bool, entry_str};
use super::resource::Res;
use super::select::Selector;
use super::tree::{self, Dialect, Node, Org};
use super::{Ctx, KustomizeError, json6902, smp};

/// A loaded patch document set.
enum Patch {
    /// Strategic merge patches (one per document).
    Smp(Vec<Node>),
    /// A JSON 6902 operation list.
    Json(Vec<json6902::Op>),
}

/// The line/column shift for text embedded as a scalar of the kustomization: block
/// scalars start on the next line at their indentation, quoted/plain ones where written.
fn inline_offsets(src: &str, org: Org) -> (u32, u32) {
    let lines: Vec<&str> = src.lines().collect();
    let Some(line) = lines.get(org.line.saturating_sub(1) as usize) else {
        return (org.line.saturating_sub(1), 0);
    };
    let rest: String = line
        .chars()
        .skip(org.col.saturating_sub(1) as usize)
        .collect();
    if rest.starts_with('|') || rest.starts_with('>') {
        let indent = lines
            .iter()
            .skip(org.line as usize)
            .find(|l| !l.trim().is_empty())
            .map_or(0, |l| l.len() - l.trim_start().len());
        (org.line, indent as u32)
    } else {
        let quoted = rest.starts_with('"') || rest.starts_with('\'');
        (
            org.line.saturating_sub(1),
            org.col.saturating_sub(1) + u32::from(quoted),
        )
    }
}

/// Parses patch text (from a file, or inline at `org` in the kustomization).
fn parse_patch(
    ctx: &mut Ctx,
    k: &Kust,
    text: &str,
    file: Option<(&str, u32)>,
    org: Org,
) -> Result<Patch, KustomizeError> {
    let (fid, loff, coff, fname) = match file {
        Some((p, id)) => (id, 0, 0, p.to_string()),
        None => {
            let (l, c) = inline_offsets(&k.src, org);
            (k.file, l, c, k.path.clone())
        }
    };
    let docs = tree::parse_stream(text, fid, loff, coff, Dialect::Resource).map_err(|e| {
        super::load_error(
            &fname,
            e.line.map(|l| Org {
                file: fid,
                line: l as u32,
                col: e.column.unwrap_or(0) as u32,
            }),
            format!("invalid patch YAML: {}", e.message),
        )
    })?;
    let _ = ctx;
    if docs.is_empty() {
        return Err(ctx_err(k, org, "patch is empty"));
    }
    if docs.len() == 1 && docs[0].node.as_seq().is_some() {
        let ops = json6902::parse_ops(&docs[0].node).map_err(|m| ctx_err(k, org, m))?;
        return Ok(Patch::Json(ops));
    }
    if docs.iter().all(|d| d.node.as_map().is_some()) {
        return Ok(Patch::Smp(docs.into_iter().map(|d| d.node).collect()));
    }
    Err(ctx_err(
        k,
        org,
        format!("unable to parse SM or JSON patch from {text:?}"),
    ))
}

fn ctx_err(k: &Kust, org: Org, m: impl Into<String>) -> KustomizeError {
    let org = (org.file == k.file).then_some(org);
    super::load_error(&k.path, org, m)
}

/// Applies one strategic merge patch to a resource (kustomize's `ApplySmPatch`): the
/// name, kind and namespace are restored afterwards unless the patch may change them.
/// Returns false when the patch deleted the resource.
fn apply_smp(
    r: &mut Res,
    patch: &Node,
    allow_name: bool,
    allow_kind: bool,
) -> Result<bool, String> {
    let name = r.node.path(&["metadata", "name"]).cloned();
    let namespace = r.node.path(&["metadata", "namespace"]).cloned();
    let kind = r.node.get("kind").cloned();
    let api_version = r.api_version().to_string();
    let kind_s = r.kind().to_string();
    if allow_name || allow_kind {
        r.store_previous_id();
    }
    let mut patch = patch.clone();
    if let Some(m) = patch.as_map_mut()
        && let Some(av) = r.node.get("apiVersion")
    {
        m.insert("apiVersion".into(), av.clone());
    }
    let dest = std::mem::replace(&mut r.node, Node::empty_map());
    match smp::apply(dest, patch, &api_version, &kind_s)? {
        None => return Ok(false),
        Some(n) => r.node = n,
    }
    if r.is_empty() {
        return Ok(false);
    }
    let restore = |r: &mut Res, path: &[&str], v: Option<Node>| {
        let (last, parents) = path.split_last().expect("non-empty path");
        if let Some(m) = r.node.map_at(parents) {
            match v {
                Some(v) => {
                    m.insert(last.to_string(), v);
                }
                None => {
                    m.remove(*last);
                }
            }
        }
    };
    if !allow_kind {
        restore(r, &["kind"], kind);
    }
    if !allow_name {
        restore(r, &["metadata", "name"], name);
    }
    restore(r, &["metadata", "namespace"], namespace);
    Ok(true)
}

/// The id a target-less strategic merge patch names.
fn patch_id(p: &Node) -> super::resource::ResId {
    let r = Res::new(p.clone(), 0, 0);
    r.cur_id()
}

/// Applies a patch by its own id (no target): exactly one resource must match.
fn apply_by_id(
    k: &Kust,
    ra: &mut Vec<Res>,
    p: &Node,
    org: Org,
    allow_name: bool,
    allow_kind: bool,
) -> Result<(), KustomizeError> {
    let id = patch_id(p);
    let matches: Vec<usize> = ra
        .iter()
        .enumerate()
        .filter(|(_, r)| r.all_ids().iter().any(|x| x.equals(&id)))
        .map(|(i, _)| i)
        .collect();
    match matches.len() {
        0 => Err(ctx_err(
            k,
            org,
            format!(
                "no matches for Id {}; failed to find unique target for patch {}",
                id.display(),
                id.display()
            ),
        )),
        1 => {
            let i = matches[0];
            let keep =
                apply_smp(&mut ra[i], p, allow_name, allow_kind).map_err(|m| ctx_err(k, org, m))?;
            if !keep {
                ra.remove(i);
            }
            Ok(())
        }
        _ => Err(ctx_err(
            k,
            org,
            format!(
                "multiple matches for Id {}; failed to find unique target for patch",
                id.display()
            ),
        )),
    }
}

/// Patch text, the file it came from (path and file id; none when inline), and where
/// it was named.
type Loaded = (String, Option<(String, u32)>, Org);

/// Loads `path` (a file under the kustomization) or takes inline text.
fn load_text(
    ctx: &mut Ctx,
    k: &Kust,
    path: Option<&super::kustfile::Spanned>,
    inline: Option<&super::kustfile::Spanned>,
    at: Org,
) -> Result<Loaded, KustomizeError> {
    match (path, inline) {
        (Some(p), None) => {
            let fp = ctx.file_under(k, &p.value, p.org)?;
            let text = ctx.read_text(&fp)?;
            let id = ctx.file_id(&fp);
            Ok((text, Some((fp, id)), p.org))
        }
        (None, Some(t)) => Ok((t.value.clone(), None, t.org)),
        (Some(_), Some(_)) => Err(ctx_err(
            k,
            at,
            "patch and path can't be set at the same time",
        )),
        (None, None) => Err(ctx_err(k, at, "must specify one of patch and path")),
    }
}

/// `patches`.
pub fn patches(ctx: &mut Ctx, k: &Kust, ra: &mut Vec<Res>) -> Result<(), KustomizeError> {
    for e in k.maps("patches").map_err(|m| ctx_err(k, Org::NONE, m))? {
        let at = e.values().find_map(Node::org).unwrap_or(Org::NONE);
        for key in e.keys() {
            if !["path", "patch", "target", "options"].contains(&key.as_str()) {
                return Err(ctx_err(k, at, format!("json: unknown field \"{key}\"")));
            }
        }
        let (text, file, org) = load_text(
            ctx,
            k,
            entry_str(k, e, "path").as_ref(),
            entry_str(k, e, "patch").as_ref(),
            at,
        )?;
        let patch = parse_patch(
            ctx,
            k,
            &text,
            file.as_ref().map(|(p, i)| (p.as_str(), *i)),
            org,
        )?;
        let (allow_name, allow_kind) = match e.get("options").and_then(Node::as_map) {
            Some(o) => (
                entry_bool(o, "allowNameChange"),
                entry_bool(o, "allowKindChange"),
            ),
            None => (false, false),
        };
        let target = match e.get("target").filter(|t| !t.is_null()) {
            Some(t) => {
                let m = t
                    .as_map()
                    .ok_or_else(|| ctx_err(k, at, "target must be a mapping"))?;
                Some(Selector::parse(m, &|n| k.text(n)).map_err(|m| ctx_err(k, at, m))?)
            }
            None => None,
        };
        match (patch, target) {
            (Patch::Smp(docs), None) => {
                for d in docs {
                    apply_by_id(k, ra, &d, org, allow_name, allow_kind)?;
                }
            }
            (Patch::Smp(docs), Some(sel)) => {
                let selected: Vec<bool> = ra.iter().map(|r| sel.matches(r)).collect();
                let mut keep = Vec::with_capacity(ra.len());
                for (r, s) in std::mem::take(ra).into_iter().zip(selected) {
                    let mut r = r;
                    let mut alive = true;
                    if s {
                        for d in &docs {
                            if !apply_smp(&mut r, d, allow_name, allow_kind)
                                .map_err(|m| ctx_err(k, org, m))?
                            {
                                alive = false;
                                break;
                            }
                        }
                    }
                    if alive {
                        keep.push(r);
                    }
                }
                *ra = keep;
            }
            (Patch::Json(_), None) => {
                return Err(ctx_err(k, at, "must specify a target for JSON patch"));
            }
            (Patch::Json(ops), Some(sel)) => {
                for r in ra.iter_mut().filter(|r| sel.matches(r)) {
                    json6902::apply(&mut r.node, &ops).map_err(|m| ctx_err(k, org, m))?;
                }
            }
        }
    }
    Ok(())
}

/// `patchesStrategicMerge`: file paths or inline documents, applied by their own ids.
pub fn patches_strategic_merge(
    ctx: &mut Ctx,
    k: &Kust,
    ra: &mut Vec<Res>,
) -> Result<(), KustomizeError> {
    for s in k
        .strings("patchesStrategicMerge")
        .map_err(|m| ctx_err(k, Org::NONE, m))?
    {
        let is_file = !s.value.contains('\n')
            && super::super::source::join(&k.dir, &s.value, &k.path)
                .ok()
                .and_then(|p| ctx.fs.kind(&p).ok().flatten())
                .is_some();
        let (text, file, org) = if is_file {
            load_text(ctx, k, Some(&s), None, s.org)?
        } else {
            load_text(ctx, k, None, Some(&s), s.org)?
        };
        match parse_patch(
            ctx,
            k,
            &text,
            file.as_ref().map(|(p, i)| (p.as_str(), *i)),
            org,
        )? {
            Patch::Smp(docs) => {
                for d in docs {
                    apply_by_id(k, ra, &d, org, false, false)?;
                }
            }
            Patch::Json(_) => {
                return Err(ctx_err(
                    k,
                    org,
                    "patchesStrategicMerge entry is a JSON patch",
                ));
            }
        }
    }
    Ok(())
}

/// `patchesJson6902`: a target and a JSON patch (file or inline).
pub fn patches_json6902(ctx: &mut Ctx, k: &Kust, ra: &mut [Res]) -> Result<(), KustomizeError> {
    for e in k
        .maps("patchesJson6902")
        .map_err(|m| ctx_err(k, Org::NONE, m))?
    {
        let at = e.values().find_map(Node::org).unwrap_or(Org::NONE);
        for key in e.keys() {
            if !["path", "patch", "target"].contains(&key.as_str()) {
                return Err(ctx_err(k, at, format!("json: unknown field \"{key}\"")));
            }
        }
        let Some(t) = e.get("target").and_then(Node::as_map) else {
            return Err(ctx_err(
                k,
                at,
                "must specify the target field in patchesJson6902",
            ));
        };
        let sel = Selector::parse(t, &|n| k.text(n)).map_err(|m| ctx_err(k, at, m))?;
        let (text, file, org) = load_text(
            ctx,
            k,
            entry_str(k, e, "path").as_ref(),
            entry_str(k, e, "patch").as_ref(),
            at,
        )?;
        let ops = match parse_patch(
            ctx,
            k,
            &text,
            file.as_ref().map(|(p, i)| (p.as_str(), *i)),
            org,
        )? {
            Patch::Json(ops) => ops,
            Patch::Smp(_) => {
                return Err(ctx_err(k, org, "patchesJson6902 entry is not a JSON patch"));
            }
        };
        for r in ra.iter_mut().filter(|r| sel.matches(r)) {
            json6902::apply(&mut r.node, &ops).map_err(|m| ctx_err(k, org, m))?;
        }
    }
    Ok(())
}
