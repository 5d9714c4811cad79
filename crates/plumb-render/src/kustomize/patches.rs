//! `patches`, `patchesStrategicMerge` and `patchesJson6902`.

use super::kustfile::{Kust, entry_bool, entry_str, known_fields};
use super::resource::NameTable;
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
    /// Mappings kustomize does not take as strategic merge patches (its resource factory
    /// refuses them); each use of a patch says what it makes of that.
    NotSmp {
        fault: SmpFault,
        /// kustomize's name for the patch: `[patch: "…"]` or `[path: "…"]`.
        source: String,
    },
}

/// Why mappings are not strategic merge patches.
enum SmpFault {
    /// No document is left (empty mappings and empty lists are dropped).
    Empty,
    /// A document lacks `kind`, or `metadata.name` (which only a `…List` may leave out):
    /// kustomize's message.
    Meta(&'static str),
}

/// kustomize's resource factory on a patch's documents: empty mappings dropped; each other
/// with a kind and, unless the kind ends in `List`, a name; then a `…List` with `items`
/// replaced by its items (validated alike), which go after the other documents. The
/// strategic merge patches, or why there are none.
fn smp_documents(docs: Vec<Node>) -> Result<Vec<Node>, SmpFault> {
    fn text(d: &Node, path: &[&str]) -> String {
        d.path(path).and_then(Node::scalar_text).unwrap_or_default()
    }
    fn validated(docs: impl IntoIterator<Item = Node>) -> Result<Vec<Node>, SmpFault> {
        let mut kept = Vec::new();
        for d in docs {
            if d.as_map().is_some_and(|m| m.is_empty()) {
                continue;
            }
            let kind = text(&d, &["kind"]);
            if kind.is_empty() {
                return Err(SmpFault::Meta("missing kind in object"));
            }
            if !kind.ends_with("List") && text(&d, &["metadata", "name"]).is_empty() {
                return Err(SmpFault::Meta("missing metadata.name in object"));
            }
            kept.push(d);
        }
        Ok(kept)
    }
    let mut queue: std::collections::VecDeque<Node> = validated(docs)?.into();
    let mut patches = Vec::new();
    while let Some(d) = queue.pop_front() {
        let is_list = text(&d, &["kind"]).ends_with("List");
        match d.get("items") {
            Some(Node::Seq(items)) if is_list => {
                queue.extend(validated(items.iter().filter(|i| !i.is_null()).cloned())?);
            }
            // `items: null`, or not a list, gives nothing (kubectl 5.5 then reads the text
            // as a JSON patch, as for an empty list).
            Some(_) if is_list => {}
            _ => patches.push(d),
        }
    }
    if patches.is_empty() {
        Err(SmpFault::Empty)
    } else {
        Ok(patches)
    }
}

/// The line/column shift for text embedded as a scalar of the kustomization: block
/// scalars start on the next line at their indentation, quoted/plain ones where written.
fn inline_offsets(k: &Kust, org: Org) -> (u32, u32) {
    let Some(line) = k.line(org.line) else {
        return (org.line.saturating_sub(1), 0);
    };
    let rest: String = line
        .chars()
        .skip(org.col.saturating_sub(1) as usize)
        .collect();
    if rest.starts_with('|') || rest.starts_with('>') {
        let indent = (org.line + 1..)
            .map_while(|n| k.line(n))
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
    k: &Kust,
    text: &str,
    file: Option<(&str, u32, &str)>,
    org: Org,
) -> Result<Patch, KustomizeError> {
    let (fid, loff, coff, fname) = match file {
        Some((p, id, _)) => (id, 0, 0, p.to_string()),
        None => {
            let (l, c) = inline_offsets(k, org);
            (k.file, l, c, k.path.clone())
        }
    };
    // kustomize's name for the patch: the path as written, or the text trimmed.
    let source = match file {
        Some((_, _, written)) => format!("[path: {written:?}]"),
        None => format!("[patch: {:?}]", text.trim()),
    };
    // Read as kustomize reads resources (keys must be strings: a strategic merge patch
    // that adds `500:` fails as such a resource does), save for a JSON patch, whose values
    // kustomize decodes as JSON (`value: {500: x}` is the key "500").
    let parsed =
        tree::parse_stream(text, fid, loff, coff, Dialect::KustomizeResource).or_else(|strict| {
            match tree::parse_stream(text, fid, loff, coff, Dialect::Resource) {
                Ok(docs) if docs.first().is_some_and(|d| d.node.as_seq().is_some()) => Ok(docs),
                _ => Err(strict),
            }
        });
    let docs = parsed.map_err(|e| {
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
    if docs.is_empty() {
        return Err(ctx_err(k, org, "patch is empty"));
    }
    // A JSON patch is read as one YAML document: later documents are ignored, as
    // kustomize 5.5 reads it (a list of documents is no strategic merge patch either),
    // unless the text starts with `[`: it is then decoded as JSON as a whole, which
    // fails (inline text is trimmed first, a file's is not).
    let start = if file.is_some() { text } else { text.trim() };
    if docs.len() > 1 && start.starts_with('[') {
        return Err(ctx_err(
            k,
            org,
            format!("unable to parse SM or JSON patch from {source}"),
        ));
    }
    if docs[0].node.as_seq().is_some() {
        let ops = json6902::parse_ops(&docs[0].node).map_err(|m| ctx_err(k, org, m))?;
        return Ok(Patch::Json(ops));
    }
    if docs.iter().all(|d| d.node.as_map().is_some()) {
        return Ok(
            match smp_documents(docs.into_iter().map(|d| d.node).collect()) {
                Ok(docs) => Patch::Smp(docs),
                Err(fault) => Patch::NotSmp { fault, source },
            },
        );
    }
    Err(ctx_err(
        k,
        org,
        format!("unable to parse SM or JSON patch from {source}"),
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
    schema: &plumb_core::schema::Schema,
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
        m.insert("apiVersion", av.clone());
    }
    // The merge follows the schema of the patched object's type, or, when that type has
    // none, of the patch's own kind (with the object's apiVersion), as kyaml's walker
    // takes the first of its two sources whose type it knows.
    let patch_kind = patch.get("kind").and_then(Node::as_str).unwrap_or("");
    let schema_kind = if !known_type(schema, &api_version, &kind_s)
        && known_type(schema, &api_version, patch_kind)
    {
        patch_kind.to_string()
    } else {
        kind_s
    };
    let dest = std::mem::replace(&mut r.node, Node::empty_map());
    match smp::apply(dest, patch, &api_version, &schema_kind, schema)? {
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
                    m.remove(last);
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

/// Whether the built-in schema knows a type (the strategic merge then follows it).
fn known_type(schema: &plumb_core::schema::Schema, api_version: &str, kind: &str) -> bool {
    schema.root(api_version, kind).is_some()
        && schema.is_builtin(plumb_core::group_of_api_version(api_version), kind)
}

/// The resources that have or had a given name (current and previous names), so that a
/// patch naming its target finds it without testing every resource: a table of (hash of a
/// name, resource index) pairs, no name copied and no list per name. Entries are only added
/// (a patch that renames a resource adds the new name); a stale entry, or one whose hash
/// another name shares, costs a selector test, never a wrong match. Cleared when resources
/// are removed.
#[derive(Default)]
struct NameIndex {
    by_name: Option<NameTable>,
}

impl NameIndex {
    fn names(r: &Res) -> impl Iterator<Item = &str> {
        std::iter::once(r.name()).chain(r.prev.iter().map(|p| p.name.as_str()))
    }

    /// The resources that have or had `name` (and any whose name shares its hash), in order.
    fn lookup(&mut self, ra: &[Res], name: &str) -> Vec<usize> {
        self.by_name
            .get_or_insert_with(|| {
                let mut table = NameTable::with_capacity(ra.len());
                for (i, r) in ra.iter().enumerate() {
                    Self::names(r).for_each(|n| table.add(n, i));
                }
                table
            })
            .get(name)
    }

    /// Records the names resource `i` has after a patch.
    fn touched(&mut self, ra: &[Res], i: usize) {
        if let Some(table) = &mut self.by_name {
            Self::names(&ra[i]).for_each(|n| table.add(n, i));
        }
    }

    /// Resources were removed: indexes shifted.
    fn clear(&mut self) {
        self.by_name = None;
    }

    /// The resources `sel` selects, in order.
    fn select(&mut self, ra: &[Res], sel: &Selector) -> Vec<usize> {
        match sel.literal_name() {
            Some(name) => self
                .lookup(ra, name)
                .into_iter()
                .filter(|&i| sel.matches(&ra[i]))
                .collect(),
            None => (0..ra.len()).filter(|&i| sel.matches(&ra[i])).collect(),
        }
    }
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
    index: &mut NameIndex,
    p: &Node,
    org: Org,
    (allow_name, allow_kind): (bool, bool),
    schema: &plumb_core::schema::Schema,
) -> Result<(), KustomizeError> {
    let id = patch_id(p);
    let matches: Vec<usize> = index
        .lookup(ra, &id.name)
        .into_iter()
        .filter(|&i| ra[i].all_ids().iter().any(|x| x.equals(&id)))
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
            let keep = apply_smp(&mut ra[i], p, allow_name, allow_kind, schema)
                .map_err(|m| ctx_err(k, org, m))?;
            if keep {
                index.touched(ra, i);
            } else {
                ra.remove(i);
                index.clear();
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

/// [`load_patch`] of an entry's `path` or `patch` (a `patches` or `patchesJson6902` entry).
fn entry_patch(
    ctx: &mut Ctx,
    k: &Kust,
    e: &tree::Map,
    at: Org,
) -> Result<(Patch, Org), KustomizeError> {
    load_patch(
        ctx,
        k,
        entry_str(k, e, "path").as_ref(),
        entry_str(k, e, "patch").as_ref(),
        at,
    )
}

/// Loads `path` (a file under the kustomization) or takes inline text, and parses it: the
/// patch, and where it was named.
fn load_patch(
    ctx: &mut Ctx,
    k: &Kust,
    path: Option<&super::kustfile::Spanned>,
    inline: Option<&super::kustfile::Spanned>,
    at: Org,
) -> Result<(Patch, Org), KustomizeError> {
    match (path, inline) {
        (Some(p), None) => {
            let fp = ctx.file_under(k, &p.value, p.org)?;
            let text = ctx.read_text(&fp)?;
            let id = ctx.file_id(&fp);
            let patch = parse_patch(k, &text, Some((fp.as_str(), id, p.value.as_str())), p.org)?;
            Ok((patch, p.org))
        }
        (None, Some(t)) => Ok((parse_patch(k, &t.value, None, t.org)?, t.org)),
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
    let mut index = NameIndex::default();
    let entries = k.maps("patches").map_err(|m| ctx_err(k, Org::NONE, m))?;
    // Inline patches (the text in the kustomization) parsed on every core first; each is
    // taken, with its error, where the loop below reaches its entry.
    let mut inline = plumb_core::parallel::map(&entries, |e| {
        match (entry_str(k, e, "path"), entry_str(k, e, "patch")) {
            (None, Some(t)) => Some(parse_patch(k, &t.value, None, t.org).map(|p| (p, t.org))),
            _ => None,
        }
    })
    .into_iter();
    for e in entries {
        let at = e.values().find_map(Node::org).unwrap_or(Org::NONE);
        known_fields(e, &["path", "patch", "target", "options"]).map_err(|m| ctx_err(k, at, m))?;
        let (patch, org) = match inline.next().flatten() {
            Some(parsed) => parsed?,
            None => entry_patch(ctx, k, e, at)?,
        };
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
            // kustomize then reads the text as a JSON patch, which a mapping is not.
            (
                Patch::NotSmp {
                    fault: SmpFault::Empty,
                    source,
                },
                None,
            ) => {
                return Err(ctx_err(
                    k,
                    org,
                    format!("must specify a target for JSON patch {source}"),
                ));
            }
            // kustomize decodes the JSON patch for each resource the target selects.
            (
                Patch::NotSmp {
                    fault: SmpFault::Empty,
                    ..
                },
                Some(sel),
            ) => {
                if !index.select(ra, &sel).is_empty() {
                    return Err(ctx_err(
                        k,
                        org,
                        "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
                    ));
                }
            }
            (
                Patch::NotSmp {
                    fault: SmpFault::Meta(_),
                    source,
                },
                _,
            ) => {
                return Err(ctx_err(
                    k,
                    org,
                    format!("unable to parse SM or JSON patch from {source}"),
                ));
            }
            (Patch::Smp(docs), None) => {
                for d in docs {
                    apply_by_id(
                        k,
                        ra,
                        &mut index,
                        &d,
                        org,
                        (allow_name, allow_kind),
                        ctx.schema(),
                    )?;
                }
            }
            (Patch::Smp(docs), Some(sel)) => {
                let mut deleted = Vec::new();
                for i in index.select(ra, &sel) {
                    let mut alive = true;
                    for d in &docs {
                        if !apply_smp(&mut ra[i], d, allow_name, allow_kind, ctx.schema())
                            .map_err(|m| ctx_err(k, org, m))?
                        {
                            alive = false;
                            break;
                        }
                    }
                    if alive {
                        index.touched(ra, i);
                    } else {
                        deleted.push(i);
                    }
                }
                if !deleted.is_empty() {
                    let mut i = 0;
                    ra.retain(|_| {
                        i += 1;
                        deleted.binary_search(&(i - 1)).is_err()
                    });
                    index.clear();
                }
            }
            (Patch::Json(_), None) => {
                return Err(ctx_err(k, at, "must specify a target for JSON patch"));
            }
            // `[]` also reads as an empty list of strategic merge patches.
            (Patch::Json(ops), Some(_)) if ops.is_empty() => {
                return Err(ctx_err(
                    k,
                    org,
                    "illegally qualifies as both an SM and JSON patch (an empty list)",
                ));
            }
            (Patch::Json(ops), Some(sel)) => {
                apply_json(k, ra, &mut index, &sel, &ops, org, true)?;
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
    let mut index = NameIndex::default();
    // kustomize loads every entry into one list of patches: "empty" is said of the whole.
    let mut empty_at = None;
    let mut any = false;
    for s in k
        .strings("patchesStrategicMerge")
        .map_err(|m| ctx_err(k, Org::NONE, m))?
    {
        let is_file = !s.value.contains('\n')
            && super::super::source::join(&k.dir, &s.value, &k.path)
                .ok()
                .and_then(|p| ctx.fs.kind(&p).ok().flatten())
                .is_some();
        let (patch, org) = if is_file {
            load_patch(ctx, k, Some(&s), None, s.org)?
        } else {
            load_patch(ctx, k, None, Some(&s), s.org)?
        };
        match patch {
            Patch::Smp(docs) => {
                any = true;
                for d in docs {
                    apply_by_id(k, ra, &mut index, &d, org, (false, false), ctx.schema())?;
                }
            }
            Patch::Json(_) => {
                return Err(ctx_err(
                    k,
                    org,
                    "patchesStrategicMerge entry is a JSON patch",
                ));
            }
            Patch::NotSmp {
                fault: SmpFault::Empty,
                ..
            } => {
                empty_at.get_or_insert(org);
            }
            Patch::NotSmp {
                fault: SmpFault::Meta(m),
                ..
            } => return Err(ctx_err(k, org, m)),
        }
    }
    match empty_at {
        Some(org) if !any => Err(ctx_err(k, org, "patch appears to be empty")),
        _ => Ok(()),
    }
}

/// `patchesJson6902`: a target and a JSON patch (file or inline).
pub fn patches_json6902(ctx: &mut Ctx, k: &Kust, ra: &mut [Res]) -> Result<(), KustomizeError> {
    let mut index = NameIndex::default();
    for e in k
        .maps("patchesJson6902")
        .map_err(|m| ctx_err(k, Org::NONE, m))?
    {
        let at = e.values().find_map(Node::org).unwrap_or(Org::NONE);
        known_fields(e, &["path", "patch", "target"]).map_err(|m| ctx_err(k, at, m))?;
        let Some(t) = e.get("target").and_then(Node::as_map) else {
            return Err(ctx_err(
                k,
                at,
                "must specify the target field in patchesJson6902",
            ));
        };
        if t.get("name")
            .and_then(|n| k.text(n))
            .is_none_or(|n| n.is_empty())
        {
            return Err(ctx_err(
                k,
                at,
                "must specify the target name in patchesJson6902",
            ));
        }
        let sel = Selector::parse(t, &|n| k.text(n)).map_err(|m| ctx_err(k, at, m))?;
        let (patch, org) = entry_patch(ctx, k, e, at)?;
        let ops = match patch {
            Patch::Json(ops) if ops.is_empty() => {
                return Err(ctx_err(k, org, "patch appears to be empty"));
            }
            Patch::Json(ops) => ops,
            Patch::Smp(_) | Patch::NotSmp { .. } => {
                return Err(ctx_err(k, org, "patchesJson6902 entry is not a JSON patch"));
            }
        };
        apply_json(k, ra, &mut index, &sel, &ops, org, false)?;
    }
    Ok(())
}

/// Applies JSON 6902 operations to the resources `sel` selects. With `track` (a
/// `patches` entry, not the legacy `patchesJson6902`), every selected resource's id is
/// first recorded as a previous id, as kustomize does: a rename through the patch
/// (`/metadata/name`) is then followed by name references, and even an unrenamed
/// resource becomes a candidate of the name reference repair.
fn apply_json(
    k: &Kust,
    ra: &mut [Res],
    index: &mut NameIndex,
    sel: &Selector,
    ops: &[json6902::Op],
    org: Org,
    track: bool,
) -> Result<(), KustomizeError> {
    for i in index.select(ra, sel) {
        let r = &mut ra[i];
        if track {
            r.store_previous_id();
        }
        // Inline (no allocation) for a name of up to 24 bytes.
        let name = tree::Text::from(r.name());
        json6902::apply(&mut r.node, ops).map_err(|m| ctx_err(k, org, m))?;
        if r.name() != name.as_str() {
            index.touched(ra, i);
        }
    }
    Ok(())
}
