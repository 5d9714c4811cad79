//! Native kustomize renderer: renders a kustomization like `kubectl kustomize`
//! (kustomize 5.5) — same objects, same order, same content — and records, for every
//! scalar of every rendered object, the file, line and column that set its value.
//!
//! The build follows kustomize's structure: a kustomization accumulates its resources
//! (files, and directories holding kustomizations, built recursively), its components,
//! then its generators (`configMapGenerator`, `secretGenerator`, then `helmCharts` through
//! `helm template`, only with [`BuildOptions::helm`]: the `helm` module), then runs its transformers in kustomize's fixed order
//! (strategic-merge patches, patches, namespace, prefix/suffix, labels, annotations,
//! JSON 6902 patches, replicas, images, replacements). At the top only, generated names
//! get their content hash, name references are repaired (with the history of every
//! rename, as kustomize's build annotations keep it), and resources are sorted.
//!
//! Fields the renderer does not implement produce [`KustomizeError::Unsupported`] so the
//! caller can fall back to the kustomize binary.
//!
//! **Origins.** Documents are parsed into `tree::Node`s whose scalars carry their origin
//! (through `yaml_fast` when a whole stream is in its subset, else serde-saphyr with `Spanned`;
//! `tests/yaml_common::check_tree` holds both to the same nodes, origins and document lines).
//! Every transformer writes origins with values. The output is each object's tree, held by a
//! `plumb_core::object::Object` that converts it to JSON plus pointer → `Origin` when first
//! read (`plumb render` prints the trees without converting them).
//! YAML is parsed without keeping comments (no limit on comment runs).
//!
//! **The modules**: `smp` (kyaml's strategic merge, quirks included), `json6902`, `patches`,
//! `generators` (hashes), `transformers`, `fieldspec` (kustomize's field-spec and
//! name-reference tables), `namerefs`, `replacements`, `select`, `kustfile` (reading a
//! kustomization), `resource` (ids and build bookkeeping), `tree` (the annotated tree).
//!
//! **Renames** are recorded as previous ids, as kustomize's build annotations record them
//! (namespace, prefix/suffix, hash, a strategic-merge patch with `allowNameChange`, and every
//! object a `patches` JSON 6902 patch selects; not the legacy `patchesJson6902`), and name
//! references follow them. A generator's merge/replace finds its object by any of its ids,
//! namespace included, and keeps a hash suffix only when both generators want one.
//!
//! **Output**: kustomize's legacy order (`LegacyKey`: kind rank, group_version_kind, then the
//! string `namespace|name` with `~X` for no namespace); empty `metadata.annotations` are dropped
//! at the end of the build and non-string annotation values become the text they were written
//! as. Files a kustomization names must be in or below its directory both lexically and with
//! symlinks followed (`SourceFs::real_path`). Cluster scope is kustomize's own table
//! (`resource::cluster_scoped`), not plumb's newer schema.
//!
//! **Performance.** The build scales linearly; no step tests every object against every other:
//! a kustomization's resource files are parsed on all cores, patch targets that name a resource
//! are found through a name index (`patches::NameIndex`, current and previous names), name
//! references through indexes of previous names and original namespaces, inline patch text
//! through the kustomization's line index, and the final JSON-with-origins conversion runs on
//! all cores, consuming the tree. Hot loops allocate little: plain selector patterns compare as
//! strings (no regex), ids are read borrowed (`resource::IdRef`; duplicate checks key them as
//! length-prefixed bytes, built without `fmt`), field-spec paths are split once,
//! label/annotation and name-reference specs are chosen once per kind, name-reference repair
//! borrows the resources' id history instead of cloning it, and setting an existing map key
//! copies no key. Benchmarks: `examples/kustomize_bench.rs` (against `kubectl kustomize`) and
//! `bench/render-scale.sh`.

mod config;
mod fieldspec;
mod generators;
mod helm;
mod json6902;
mod kustfile;
mod namerefs;
mod origin;
mod patches;
mod replacements;
mod resource;
mod select;
mod smp;
mod transformers;
mod tree;
mod vars;

use crate::LoadError;
use crate::source::{EntryKind, SourceFs, join};
pub use helm::HelmOptions;
pub use kustfile::FILE_NAMES;
use kustfile::{Kust, SUPPORTED, UNSUPPORTED};
use resource::{FastMap, Res};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
#[doc(hidden)]
pub use tree::fast_and_slow as __tree_fast_and_slow;
use tree::{Dialect, Node, Org};

pub use plumb_core::origin::{Origin, Origins};

/// One rendered object.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// The object, with the origin of every scalar leaf (JSON pointers with list indexes,
    /// RFC 6901): the build's tree, converted when first read.
    pub object: plumb_core::object::Object,
    /// File and line of the document (or generator entry) that created the object.
    pub file: String,
    pub line: usize,
}

/// Why a kustomization could not be rendered natively.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KustomizeError {
    Load(LoadError),
    /// A field/feature the native renderer does not implement: the caller falls back to
    /// the kustomize binary.
    Unsupported {
        file: String,
        field: String,
    },
}

impl fmt::Display for KustomizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KustomizeError::Load(e) => e.fmt(f),
            KustomizeError::Unsupported { file, field } => {
                write!(
                    f,
                    "{file}: field '{field}' is not supported by the native kustomize renderer"
                )
            }
        }
    }
}

impl std::error::Error for KustomizeError {}

impl From<LoadError> for KustomizeError {
    fn from(e: LoadError) -> Self {
        KustomizeError::Load(e)
    }
}

fn load_error(file: &str, org: Option<Org>, message: impl Into<String>) -> KustomizeError {
    let org = org.filter(|o| o.line > 0);
    KustomizeError::Load(LoadError {
        file: PathBuf::from(file),
        line: org.map(|o| o.line as usize),
        column: org.map(|o| o.col as usize),
        message: message.into(),
    })
}

fn path_in(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// The kustomization file in `dir`, if any.
fn kustomization_file(fs: &dyn SourceFs, dir: &str) -> Result<Option<String>, LoadError> {
    let mut found = Vec::new();
    for name in FILE_NAMES {
        let p = path_in(dir, name);
        if fs.kind(&p)? == Some(EntryKind::File) {
            found.push(p);
        }
    }
    if found.len() > 1 {
        return Err(LoadError {
            file: PathBuf::from(if dir.is_empty() { "." } else { dir }),
            line: None,
            column: None,
            message: "found multiple kustomization files".into(),
        });
    }
    Ok(found.pop())
}

/// Whether `dir` holds a kustomization (kustomization.yaml, kustomization.yml or Kustomization).
pub fn is_kustomization(fs: &dyn SourceFs, dir: &str) -> Result<bool, LoadError> {
    Ok(kustomization_file(fs, dir)?.is_some())
}

/// A kustomization file's content as kustomize decodes it, as JSON: field names matched
/// ignoring case, repeated keys last-wins, spellings of one field merged, `imageTags` in
/// `images` — what `kustomize edit` works on before it writes the file back. An empty file
/// is `{}`; a field kustomize does not know is an error naming the file.
pub fn read_kustomization(text: &str, file: &str) -> Result<serde_json::Value, LoadError> {
    Ok(Node::Map(parse_kustomization(text, file)?).to_json())
}

/// A kustomization file's content as kustomize decodes it ([`read_kustomization`]).
fn parse_kustomization(text: &str, file: &str) -> Result<tree::Map, LoadError> {
    let fail = |line: Option<usize>, column: Option<usize>, message: String| LoadError {
        file: PathBuf::from(file),
        line,
        column,
        message,
    };
    let docs = tree::parse_stream(text, 0, 0, 0, Dialect::Kustomization)
        .map_err(|e| fail(e.line, e.column, format!("invalid YAML: {}", e.message)))?;
    let root = match docs.into_iter().next().map(|d| d.node) {
        None => tree::Map::new(),
        Some(Node::Map(m)) => m,
        Some(_) => return Err(fail(None, None, "kustomization is not a mapping".into())),
    };
    kustfile::normalise(root).map_err(|(message, org)| {
        fail(
            org.map(|o| o.line as usize),
            org.map(|o| o.col as usize),
            format!("invalid Kustomization: {message}"),
        )
    })
}

/// The directories `kustomize build` of `dir` reads, for running the kustomize binary on
/// them: `dir` and, recursively, every local directory its kustomizations name in
/// `resources`, `bases`, `components`, `generators`, `transformers` and `validators`.
/// Every file a kustomization names must be in or below its own directory, so these
/// subtrees hold all the build reads besides remote URLs. Sorted, each outermost directory
/// once (one inside another is covered by it). A reference that leaves the repository is
/// an error naming the kustomization (kustomize would read it).
pub fn build_dirs(fs: &dyn SourceFs, dir: &str) -> Result<Vec<String>, LoadError> {
    const DIR_FIELDS: [&str; 6] = [
        "resources",
        "bases",
        "components",
        "generators",
        "transformers",
        "validators",
    ];
    let mut seen = std::collections::BTreeSet::new();
    // Real paths already expanded: a symlink cycle ends here (kustomize refuses it).
    let mut expanded = std::collections::BTreeSet::new();
    let mut stack = vec![dir.to_string()];
    while let Some(d) = stack.pop() {
        if !seen.insert(d.clone()) {
            continue;
        }
        let Some(file) = kustomization_file(fs, &d)? else {
            continue;
        };
        // kustomize joins entries onto the directory's real path (its loader root); a
        // copy written out has no symlinks, so there the join is onto `d` as written.
        let real = fs.real_path(&d)?.unwrap_or_else(|| d.clone());
        let expand = expanded.insert(real.clone());
        // What does not parse is an error: kustomize refuses it too, and its entries
        // would go unchecked.
        let text = String::from_utf8(fs.read(&file)?).map_err(|_| LoadError {
            file: PathBuf::from(&file),
            line: None,
            column: None,
            message: "not valid UTF-8".into(),
        })?;
        let root = parse_kustomization(&text, &file)?;
        refuse_hidden_reads(fs, &root, &d, &real, &file)?;
        for field in DIR_FIELDS {
            let Some(Node::Seq(items)) = root.get(field) else {
                continue;
            };
            for item in items {
                let Some(entry) = item.as_str() else { continue };
                // Remote bases are kustomize's to fetch; inline plugin configs are no paths.
                if looks_remote(entry) || entry.contains('\n') {
                    refuse_local_remote(entry, item, field, &file)?;
                    continue;
                }
                for p in [
                    join(&d, entry, &file)?,
                    joined_on_real(&real, entry, &d, &file)?,
                ] {
                    if expand && fs.kind(&p)? == Some(EntryKind::Dir) {
                        stack.push(p);
                    }
                }
            }
        }
    }
    let mut out: Vec<String> = Vec::new();
    for d in seen {
        let covered = out
            .iter()
            .any(|o| o.is_empty() || *o == d || d.starts_with(&format!("{o}/")));
        if !covered {
            out.push(d);
        }
    }
    Ok(out)
}

/// `entry` (a path in `file`, whose directory is `dir`) joined onto `real`, the
/// directory's real path, as kustomize joins it; a `..` climbing out of the repository
/// from there is an error naming the file and the entry.
fn joined_on_real(real: &str, entry: &str, dir: &str, file: &str) -> Result<String, LoadError> {
    join(real, entry, file).map_err(|mut e| {
        if real != dir {
            e.message = format!(
                "{} (kustomize joins it onto {real:?}, where {dir:?} leads)",
                e.message
            );
        }
        e
    })
}

/// Refuses a remote base that is a repository on this machine (`file://…`,
/// `git::file://…`): kustomize would clone it, reading outside the repository.
fn refuse_local_remote(entry: &str, item: &Node, field: &str, file: &str) -> Result<(), LoadError> {
    let url = entry.trim().to_ascii_lowercase();
    if url
        .strip_prefix("git::")
        .unwrap_or(&url)
        .starts_with("file:")
    {
        return Err(LoadError {
            file: PathBuf::from(file),
            line: item.org().map(|o| o.line as usize),
            column: item.org().map(|o| o.col as usize),
            message: format!(
                "{field} entry {entry:?} is a local repository; only remote bases (https, ssh, git) and paths inside the repository are allowed"
            ),
        });
    }
    Ok(())
}

/// Refuses what the kustomize binary would read that a source never shows, so no other
/// check sees it: any entry of the kustomization in `file` (directory `dir`, really
/// `real`) with a `.git` path component (hidden by sources, a symlink out or the
/// repository's own internals), and, in a directory on disk, an entry naming a special
/// file (a FIFO would hang the build). Label and annotation values, literals and inline
/// patches are data, not paths.
fn refuse_hidden_reads(
    fs: &dyn SourceFs,
    root: &tree::Map,
    dir: &str,
    real: &str,
    file: &str,
) -> Result<(), LoadError> {
    const DATA: [&str; 5] = [
        "literals",
        "commonLabels",
        "commonAnnotations",
        "labels",
        "patch",
    ];
    let mut stack: Vec<(&str, &Node)> = root.iter().map(|(k, v)| (k.as_str(), v)).collect();
    while let Some((key, node)) = stack.pop() {
        if DATA.contains(&key) {
            continue;
        }
        let s = match node {
            Node::Map(m) => {
                stack.extend(m.iter().map(|(k, v)| (k.as_str(), v)));
                continue;
            }
            Node::Seq(items) => {
                stack.extend(items.iter().map(|v| (key, v)));
                continue;
            }
            Node::Scalar(..) => match node.as_str() {
                Some(s) => s,
                None => continue,
            },
        };
        let fail = |what: &str| LoadError {
            file: PathBuf::from(file),
            line: node.org().map(|o| o.line as usize),
            column: node.org().map(|o| o.col as usize),
            message: format!("{key} entry {s:?} {what}"),
        };
        // A path, `key=path` (generator files), or inline YAML naming paths.
        let sep: &[char] = if s.contains('\n') {
            &[
                '/', '\\', '=', ' ', '\t', '\n', '\r', ',', '[', ']', '"', '\'',
            ]
        } else {
            &['/', '\\', '=']
        };
        if s.split(sep).any(|c| c == ".git") {
            return Err(fail(
                "has a .git path component, which plumb refuses (sources hide .git; the kustomize binary would read it)",
            ));
        }
        let Some(disk) = fs.on_disk() else { continue };
        if s.contains('\n') || looks_remote(s) {
            continue;
        }
        let rel = s.rsplit_once('=').map_or(s, |(_, p)| p);
        for base in [dir, real] {
            let Ok(p) = join(base, rel, file) else {
                continue;
            };
            let special =
                std::fs::metadata(disk.join(&p)).is_ok_and(|m| !m.is_file() && !m.is_dir());
            if special {
                return Err(fail("is not a regular file or directory"));
            }
        }
    }
    Ok(())
}

/// Renders the kustomization in `dir` like `kubectl kustomize` (kustomize 5.5).
pub fn build(fs: &dyn SourceFs, dir: &str) -> Result<Vec<Rendered>, KustomizeError> {
    build_with(fs, dir, &BuildOptions::default())
}

/// What a build may do beyond reading the source (Argo CD's `kustomize.buildOptions`).
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// `--enable-helm`: `helmCharts` are inflated with this helm and chart cache.
    pub helm: Option<HelmOptions>,
}

/// [`build`] with `options`.
pub fn build_with(
    fs: &dyn SourceFs,
    dir: &str,
    options: &BuildOptions,
) -> Result<Vec<Rendered>, KustomizeError> {
    let mut ctx = Ctx {
        fs,
        helm: options.helm.as_ref(),
        openapi: None,
        files: Vec::new(),
        file_idx: FastMap::default(),
        stack: Vec::new(),
        generated_hooks: false,
        origin: None,
    };
    let kust = ctx.load_kustomization(dir, None)?;
    let metadata = kust
        .strings("buildMetadata")
        .map_err(|m| ctx.kerr(&kust, None, m))?;
    let metadata: Vec<String> = metadata.into_iter().map(|s| s.value).collect();
    let tracking = origin::Tracking::of(&metadata).map_err(|v| KustomizeError::Unsupported {
        file: kust.path.clone(),
        field: format!("buildMetadata: {v}"),
    })?;
    ctx.origin = tracking.on.then(String::new);
    let mut ra = Vec::new();
    ctx.stack.push(dir.to_string());
    let acc = ctx.accumulate(&kust, &mut ra)?;
    // Top level only, as kustomize does: hash suffixes, then name references.
    for r in ra.iter_mut() {
        if r.needs_hash {
            let hash = generators::hash_suffix(&r.node);
            let org = r
                .node
                .path(&["metadata", "name"])
                .and_then(Node::org)
                .unwrap_or(Org::NONE);
            let name = format!("{}-{hash}", r.name());
            r.store_previous_id();
            r.set_name(name, org);
        }
    }
    namerefs::fix(&mut ra, &acc.config.name_refs()).map_err(|m| load_error(&kust.path, None, m))?;
    // With the names final, the vars.
    vars::resolve(&mut ra, &acc.vars, &acc.config.var_references()).map_err(|(file, m)| {
        load_error(if file.is_empty() { &kust.path } else { &file }, None, m)
    })?;
    ra.retain(|r| {
        r.node.path_str(&[
            "metadata",
            "annotations",
            "config.kubernetes.io/local-config",
        ]) != Some("true")
    });
    // kustomize writes annotations back as strings, and only when there are some:
    // `annotations: null` and `annotations: {}` leave its output, and a value written as
    // a number, boolean or null comes out as the text it was written as (`0755`, `~`);
    // labels stay as written.
    let mut lines = SourceLines::default();
    for r in ra.iter_mut() {
        // What kustomize's readers and origins left (or the source said) it never writes.
        origin::strip(&mut r.node, tracking.keep);
        if let Some(meta) = r.node.get_mut("metadata").and_then(Node::as_map_mut) {
            match meta.get_mut("annotations") {
                Some(Node::Map(m)) if !m.is_empty() => {
                    for v in m.values_mut() {
                        if let Node::Scalar(tree::Scalar::Str(s), org) = v {
                            // A plain timestamp was read in Go's form: back to its spelling.
                            if s.starts_with(|c: char| c.is_ascii_digit())
                                && tree::looks_like_timestamp(s)
                                && let Some(raw) = lines.raw_scalar(&ctx, *org)
                                && raw.starts_with(|c: char| c.is_ascii_digit())
                            {
                                *s = raw.into();
                            }
                        } else if let Node::Scalar(_, org) = v {
                            let org = *org;
                            let text = lines
                                .raw_scalar(&ctx, org)
                                .or_else(|| v.scalar_text())
                                .unwrap_or_default();
                            *v = Node::str(text, org);
                        }
                    }
                }
                Some(a) if a.is_null() || a.as_map().is_some() => {
                    meta.remove("annotations");
                }
                _ => {}
            }
        }
    }
    sort(&ctx, &kust, &mut ra)?;
    let files = ctx.file_names();
    // On every core: what each resource held besides its tree (ids, renames) is freed there.
    Ok(plumb_core::parallel::map_owned(ra, |r| rendered(&files, r)))
}

/// The objects of one manifest file (a directory source's file), with the origin of
/// every scalar, validated as kustomize validates resources (`kind: List` expanded).
pub fn load_file(fs: &dyn SourceFs, path: &str) -> Result<Vec<Rendered>, LoadError> {
    let mut ctx = Ctx {
        fs,
        helm: None,
        openapi: None,
        files: Vec::new(),
        file_idx: FastMap::default(),
        stack: Vec::new(),
        generated_hooks: true,
        origin: None,
    };
    let res = ctx.load_resources(path).map_err(|e| match e {
        KustomizeError::Load(e) => e,
        other => LoadError {
            file: PathBuf::from(path),
            line: None,
            column: None,
            message: other.to_string(),
        },
    })?;
    let files = ctx.file_names();
    Ok(res.into_iter().map(|r| rendered(&files, r)).collect())
}

/// Lines of source files, read on demand, to recover how a scalar was spelled.
#[derive(Default)]
struct SourceLines {
    files: FastMap<u32, Vec<String>>,
}

impl SourceLines {
    /// The text of the plain scalar at `org` as written (`None` when unknown). A null
    /// written as nothing at all (`key:`) is the empty string.
    fn raw_scalar(&mut self, ctx: &Ctx, org: Org) -> Option<String> {
        if org.file == u32::MAX || org.line == 0 {
            return None;
        }
        let lines = match self.files.entry(org.file) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let text = ctx.read_text(ctx.files.get(org.file as usize)?).ok()?;
                e.insert(text.lines().map(str::to_owned).collect())
            }
        };
        let line = lines.get(org.line as usize - 1)?;
        tree::raw_scalar_in_line(line, org.col)
    }
}

impl Ctx<'_> {
    /// The file table, shared by the origins of every object.
    fn file_names(&self) -> Arc<Vec<Arc<str>>> {
        Arc::new(self.files.iter().map(|f| Arc::from(f.as_str())).collect())
    }
}

/// A resource as the API hands it out: its tree, with the origins of its scalars, to be
/// converted to JSON when something reads it.
fn rendered(files: &Arc<Vec<Arc<str>>>, r: Res) -> Rendered {
    Rendered {
        object: plumb_core::object::Object::from_tree(r.node, files.clone()),
        file: files
            .get(r.file as usize)
            .map(|f| f.to_string())
            .unwrap_or_default(),
        line: r.line as usize,
    }
}

/// kustomize's legacy order (the default), or `sortOptions` of the top kustomization.
fn sort(ctx: &Ctx, kust: &Kust, ra: &mut [Res]) -> Result<(), KustomizeError> {
    let mut first: Vec<String> = [
        "Namespace",
        "ResourceQuota",
        "StorageClass",
        "CustomResourceDefinition",
        "ServiceAccount",
        "PodSecurityPolicy",
        "Role",
        "ClusterRole",
        "RoleBinding",
        "ClusterRoleBinding",
        "ConfigMap",
        "Secret",
        "Endpoints",
        "Service",
        "LimitRange",
        "PriorityClass",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "Deployment",
        "StatefulSet",
        "CronJob",
        "PodDisruptionBudget",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut last: Vec<String> = vec![
        "MutatingWebhookConfiguration".into(),
        "ValidatingWebhookConfiguration".into(),
    ];
    if let Some(so) = kust.get("sortOptions").filter(|so| !so.is_null()) {
        let m = so
            .as_map()
            .ok_or_else(|| ctx.kerr(kust, so.org(), "sortOptions must be a mapping"))?;
        let order = m.get("order").and_then(Node::as_str).unwrap_or("");
        let legacy_options = m.get("legacySortOptions").filter(|o| !o.is_null());
        match order {
            "fifo" if legacy_options.is_some() => {
                return Err(ctx.kerr(
                    kust,
                    legacy_options.and_then(Node::org),
                    "the field 'sortOptions.legacySortOptions' is set but the selected sort order is 'fifo', not 'legacy'",
                ));
            }
            "fifo" => return Ok(()),
            "legacy" => {}
            other => {
                return Err(ctx.kerr(
                    kust,
                    None,
                    format!(
                        "the field 'sortOptions.order' must be one of [fifo, legacy], got {other:?}"
                    ),
                ));
            }
        }
        if let Some(lo) = m.get("legacySortOptions").and_then(Node::as_map) {
            let list = |f: &str| -> Option<Vec<String>> {
                lo.get(f)?.as_seq().map(|s| {
                    s.iter()
                        .filter_map(|n| n.as_str().map(String::from))
                        .collect()
                })
            };
            // Given, the two lists replace the default ones, each empty when left out.
            first = list("orderFirst").unwrap_or_default();
            last = list("orderLast").unwrap_or_default();
        }
    }
    // kustomize keeps the places in a map filled from `orderFirst`, then `orderLast`: a kind
    // listed twice takes its last place, and one in both lists its place in `orderLast`.
    let rank = |kind: &str| -> i64 {
        if let Some(i) = last.iter().rposition(|k| k == kind) {
            1 + i as i64
        } else if let Some(i) = first.iter().rposition(|k| k == kind) {
            i as i64 - first.len() as i64
        } else {
            0
        }
    };
    // The key of each resource is computed once.
    ra.sort_by_cached_key(|r| {
        let id = r.cur_id_ref();
        let or = resource::or_str;
        LegacyKey {
            rank: rank(id.kind),
            namespace_kind: id.kind == "Namespace",
            no_group: id.group.is_empty(),
            gvk: id.gvk_string(),
            ns_name: [or(id.namespace, "~X"), or(id.name, "~N")].join("|"),
        }
    });
    Ok(())
}

/// kustomize's legacy order of one resource: the rank of its kind, then its
/// `group_version_kind` string (reversed between two `Namespace` kinds when one has no
/// group, as kustomize compares them), then the string `namespace|name` with `~X` for no
/// namespace and `~N` for no name (so namespaced resources come before those without).
#[derive(PartialEq, Eq)]
struct LegacyKey {
    rank: i64,
    namespace_kind: bool,
    no_group: bool,
    gvk: String,
    ns_name: String,
}

impl Ord for LegacyKey {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        if self.gvk != o.gvk {
            if self.rank != o.rank {
                return self.rank.cmp(&o.rank);
            }
            if self.namespace_kind && o.namespace_kind && (self.no_group || o.no_group) {
                return o.gvk.cmp(&self.gvk);
            }
            return self.gvk.cmp(&o.gvk);
        }
        self.ns_name.cmp(&o.ns_name)
    }
}

impl PartialOrd for LegacyKey {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

/// What a kustomization's build hands up to the one including it, besides its objects.
#[derive(Default)]
struct Accumulated {
    config: config::Config,
    vars: std::collections::BTreeMap<String, vars::Var>,
}

impl Accumulated {
    /// `sub`'s config and vars added (a var declared twice is an error, named in `k`).
    fn merge(&mut self, ctx: &Ctx, k: &Kust, sub: Accumulated) -> Result<(), KustomizeError> {
        self.config.merge(&sub.config);
        vars::merge_set(ctx, k, sub.vars.into_values(), &mut self.vars)
    }
}

/// Build state: the source, the file table origins point into, the kustomization stack.
pub(crate) struct Ctx<'a> {
    fs: &'a dyn SourceFs,
    /// How `helmCharts` are inflated: None without `--enable-helm`.
    helm: Option<&'a HelmOptions>,
    /// A kustomization's `openapi` document, which replaces Kubernetes' schema for strategic
    /// merge patches in the whole build (the top kustomization's, else the first one loaded).
    openapi: Option<Arc<plumb_core::schema::Schema>>,
    files: Vec<String>,
    file_idx: FastMap<String, u32>,
    stack: Vec<String>,
    /// A directory source (not kustomize, which refuses them) accepts hooks named by
    /// `metadata.generateName`.
    generated_hooks: bool,
    /// With origins tracked (`buildMetadata`), the path of the kustomization being
    /// accumulated, relative to the top one (`""` at the top).
    origin: Option<String>,
}

impl Ctx<'_> {
    /// The schema strategic merge patches follow: an `openapi` document's, else Kubernetes'.
    pub(crate) fn schema(&self) -> &plumb_core::schema::Schema {
        self.openapi
            .as_deref()
            .unwrap_or_else(|| plumb_core::schema::Schema::builtin())
    }

    fn file_id(&mut self, path: &str) -> u32 {
        if let Some(i) = self.file_idx.get(path) {
            return *i;
        }
        let i = self.files.len() as u32;
        self.files.push(path.to_string());
        self.file_idx.insert(path.to_string(), i);
        i
    }

    fn read(&self, path: &str) -> Result<Vec<u8>, KustomizeError> {
        Ok(self.fs.read(path)?)
    }

    fn read_text(&self, path: &str) -> Result<String, KustomizeError> {
        String::from_utf8(self.read(path)?).map_err(|_| load_error(path, None, "not valid UTF-8"))
    }

    /// An error located in a kustomization file.
    fn kerr(&self, k: &Kust, org: Option<Org>, message: impl Into<String>) -> KustomizeError {
        let org = org.filter(|o| o.file == k.file || o.file == u32::MAX);
        load_error(&k.path, org, message)
    }

    /// A file referenced by a kustomization, which kustomize requires to be in or below
    /// the kustomization's directory.
    fn file_under(&self, k: &Kust, rel: &str, org: Org) -> Result<String, KustomizeError> {
        let p = join(&k.dir, rel, &k.path).map_err(|e| self.kerr(k, Some(org), e.message))?;
        let inside = k.dir.is_empty() || p == k.dir || p.starts_with(&format!("{}/", k.dir));
        if !inside {
            return Err(self.kerr(
                k,
                Some(org),
                format!(
                    "security; file '{p}' is not in or below '{}'",
                    if k.dir.is_empty() { "." } else { &k.dir }
                ),
            ));
        }
        match self.fs.kind(&p)? {
            Some(EntryKind::File) => {
                // As kustomize: the file itself (a symlink followed) must be in or below
                // the kustomization's directory (itself with symlinks followed).
                let real = self.fs.real_path(&p)?.unwrap_or_else(|| p.clone());
                let d = &k.real_dir;
                if real != p && !(d.is_empty() || real.starts_with(&format!("{d}/"))) {
                    return Err(self.kerr(
                        k,
                        Some(org),
                        format!(
                            "security; file '{p}' is not in or below '{}'",
                            if k.dir.is_empty() { "." } else { &k.dir }
                        ),
                    ));
                }
                Ok(p)
            }
            Some(EntryKind::Dir) => {
                Err(self.kerr(k, Some(org), format!("'{p}' is a directory, not a file")))
            }
            None => Err(self.kerr(k, Some(org), format!("file '{p}' does not exist"))),
        }
    }

    /// Loads the kustomization of a directory. `referrer` names the file referring to it.
    fn load_kustomization(
        &mut self,
        dir: &str,
        referrer: Option<(&Kust, Org)>,
    ) -> Result<Kust, KustomizeError> {
        let Some(path) = kustomization_file(self.fs, dir)? else {
            let msg = format!(
                "unable to find one of 'kustomization.yaml', 'kustomization.yml' or 'Kustomization' in directory '{}'",
                if dir.is_empty() { "." } else { dir }
            );
            return Err(match referrer {
                Some((k, o)) => self.kerr(k, Some(o), msg),
                None => load_error(if dir.is_empty() { "." } else { dir }, None, msg),
            });
        };
        let src = self.read_text(&path)?;
        let file = self.file_id(&path);
        let docs = tree::parse_stream(&src, file, 0, 0, Dialect::Kustomization).map_err(|e| {
            KustomizeError::Load(LoadError {
                file: PathBuf::from(&path),
                line: e.line,
                column: e.column,
                message: format!("invalid YAML: {}", e.message),
            })
        })?;
        if docs.len() > 1 {
            return Err(load_error(
                &path,
                None,
                "a kustomization must be a single YAML document",
            ));
        }
        let root = match docs.into_iter().next().map(|d| d.node) {
            None => tree::Map::new(),
            Some(Node::Map(m)) => kustfile::normalise(m).map_err(|(message, org)| {
                load_error(&path, org, format!("invalid Kustomization: {message}"))
            })?,
            Some(_) => {
                return Err(load_error(
                    &path,
                    None,
                    "invalid Kustomization: not a mapping",
                ));
            }
        };
        // As kustomize: a kustomization that sets nothing (no field, or only null ones,
        // besides apiVersion and kind) is an error, even a 0-byte file.
        if root
            .iter()
            .all(|(k, v)| k == "apiVersion" || k == "kind" || v.is_null())
        {
            return Err(load_error(&path, None, "kustomization.yaml is empty"));
        }
        let real_dir = self.fs.real_path(dir)?.unwrap_or_else(|| dir.to_string());
        let kust = Kust {
            path: path.clone(),
            dir: dir.to_string(),
            real_dir,
            file,
            line_starts: kustfile::line_starts(&src),
            src,
            is_component: root.get("kind").and_then(Node::as_str) == Some("Component"),
            root,
        };
        for (key, v) in &kust.root {
            if UNSUPPORTED.contains(&key.as_str()) {
                let empty = match v {
                    Node::Scalar(tree::Scalar::Null, _) => true,
                    Node::Seq(s) => s.is_empty(),
                    Node::Map(m) => m.is_empty(),
                    _ => false,
                };
                if !empty {
                    return Err(KustomizeError::Unsupported {
                        file: path,
                        field: key.to_string(),
                    });
                }
            } else if !SUPPORTED.contains(&key.as_str()) {
                return Err(load_error(
                    &path,
                    v.org(),
                    format!("invalid Kustomization: json: unknown field \"{key}\""),
                ));
            }
        }
        let kind = kust.get("kind").and_then(Node::as_str).unwrap_or("");
        let av = kust.get("apiVersion").and_then(Node::as_str).unwrap_or("");
        match kind {
            "" | "Kustomization" => {
                if !av.is_empty() && av != "kustomize.config.k8s.io/v1beta1" {
                    return Err(load_error(
                        &path,
                        None,
                        "apiVersion for Kustomization should be kustomize.config.k8s.io/v1beta1",
                    ));
                }
            }
            "Component" => {
                if av != "kustomize.config.k8s.io/v1alpha1" {
                    return Err(load_error(
                        &path,
                        None,
                        "apiVersion for Component should be kustomize.config.k8s.io/v1alpha1",
                    ));
                }
            }
            other => {
                return Err(load_error(
                    &path,
                    None,
                    format!("kind should be Kustomization or Component, not {other:?}"),
                ));
            }
        }
        self.load_openapi(&kust, referrer.is_none())?;
        Ok(kust)
    }

    /// A kustomization's `openapi: {path: FILE}`: its document replaces Kubernetes' schema
    /// for the strategic merge patches of the whole build, as kyaml's global schema does —
    /// the top kustomization's always, another's only when none is set yet. `openapi:
    /// {version: …}` (one of kustomize's built-in schemas) falls back to the binary.
    fn load_openapi(&mut self, k: &Kust, top: bool) -> Result<(), KustomizeError> {
        let Some(field) = k.get("openapi") else {
            return Ok(());
        };
        let Node::Map(m) = field else {
            return Err(self.kerr(k, field.org(), "openapi: expected a mapping"));
        };
        // A null version decodes to "", which kustomize takes as no version.
        if m.get("version")
            .and_then(Node::scalar_text)
            .is_some_and(|v| !v.is_empty())
        {
            return Err(KustomizeError::Unsupported {
                file: k.path.clone(),
                field: "openapi: version".into(),
            });
        }
        let Some(path) = kustfile::entry_str(k, m, "path") else {
            return Ok(());
        };
        if !top && self.openapi.is_some() {
            return Ok(());
        }
        let file = self.file_under(k, &path.value, path.org)?;
        let text = self.read_text(&file)?;
        let doc: serde_json::Value = if text.trim_start().starts_with('{') {
            serde_json::from_str(&text)
                .map_err(|e| load_error(&file, None, format!("invalid JSON: {e}")))?
        } else {
            serde_saphyr::from_str(&text)
                .map_err(|e| load_error(&file, None, crate::yaml_reason(&e)))?
        };
        let schema = plumb_core::schema::Schema::from_openapi_v2(&doc)
            .map_err(|e| load_error(&file, None, format!("not an OpenAPI document: {e}")))?;
        self.openapi = Some(Arc::new(schema));
        Ok(())
    }

    /// Accumulates a kustomization's resources, components and generated objects into
    /// `ra`, then runs its transformers over `ra`.
    /// Returns the transformer config and the vars of the build so far (those of `k` and of
    /// everything it includes: [`config`], [`vars`]).
    fn accumulate(&mut self, k: &Kust, ra: &mut Vec<Res>) -> Result<Accumulated, KustomizeError> {
        let mut acc = Accumulated::default();
        let mut entries = k.strings("resources").map_err(|m| self.kerr(k, None, m))?;
        entries.extend(k.strings("bases").map_err(|m| self.kerr(k, None, m))?);
        let mut seen = None;
        let parsed = self.parse_resource_files(k, &entries);
        // Room for every file's resources at once, not a list doubling file by file.
        let files: usize = parsed.iter().flatten().flatten().map(Vec::len).sum();
        ra.reserve(files);
        let mut parsed = parsed.into_iter();
        for e in entries {
            let parsed = parsed.next().flatten();
            if looks_remote(&e.value) {
                return Err(KustomizeError::Unsupported {
                    file: k.path.clone(),
                    field: "resources".into(),
                });
            }
            // kustomize joins onto the directory's real path (its loader root), so `..`
            // climbs from where a symlinked directory leads.
            let p = join(&k.real_dir, &e.value, &k.path)
                .map_err(|le| self.kerr(k, Some(e.org), le.message))?;
            match self.fs.kind(&p)? {
                Some(EntryKind::Dir) => {
                    let sub = self.load_kustomization(&p, Some((k, e.org)))?;
                    if sub.is_component {
                        return Err(self.kerr(
                            k,
                            Some(e.org),
                            format!("expected kind != 'Component' for path '{p}'"),
                        ));
                    }
                    let mut sub_ra = Vec::new();
                    self.enter(k, &p, e.org)?;
                    let outer = self.enter_origin(&e.value);
                    let sub_acc = self.accumulate(&sub, &mut sub_ra)?;
                    self.origin = outer;
                    acc.merge(self, k, sub_acc)?;
                    self.stack.pop();
                    append(self, k, ra, &mut seen, sub_ra, Some(e.org))?;
                }
                Some(EntryKind::File) => {
                    let mut rs = match parsed {
                        Some(rs) => rs?,
                        None => {
                            let p = self.file_under(k, &e.value, e.org)?;
                            self.load_resources(&p)?
                        }
                    };
                    if let Some(o) = &self.origin {
                        let value = origin::of_file(&origin::join(o, &e.value))
                            .ok_or_else(|| unquoted_origin(k))?;
                        rs.iter_mut().for_each(|r| origin::annotate(r, &value));
                    }
                    append(self, k, ra, &mut seen, rs, Some(e.org))?;
                }
                None => {
                    return Err(self.kerr(
                        k,
                        Some(e.org),
                        format!("accumulating resources: '{p}': no such file or directory"),
                    ));
                }
            }
        }
        // Generators, before the components: kustomize 5.5 runs a kustomization's own
        // generators first (a component's labels reach a ConfigMap generated here, and its
        // `behavior: merge` generator merges into it; the reverse order fails in kustomize).
        let global = generators::read_options(k, k.get("generatorOptions"), "generatorOptions")
            .map_err(|m| self.kerr(k, None, m))?;
        for (field, kind) in [
            ("configMapGenerator", "ConfigMapGenerator"),
            ("secretGenerator", "SecretGenerator"),
        ] {
            for mut g in generators::generate(self, k, field, &global)? {
                self.annotate_generated(k, &mut g, kind)?;
                absorb(self, k, ra, g)?;
            }
        }
        for mut g in helm::generate(self, k)? {
            self.annotate_generated(k, &mut g, "HelmChartInflationGenerator")?;
            absorb(self, k, ra, g)?;
        }
        for c in k.strings("components").map_err(|m| self.kerr(k, None, m))? {
            if looks_remote(&c.value) {
                return Err(KustomizeError::Unsupported {
                    file: k.path.clone(),
                    field: "components".into(),
                });
            }
            let p = join(&k.real_dir, &c.value, &k.path)
                .map_err(|le| self.kerr(k, Some(c.org), le.message))?;
            if self.fs.kind(&p)? != Some(EntryKind::Dir) {
                return Err(self.kerr(
                    k,
                    Some(c.org),
                    format!("component '{p}' is not a directory"),
                ));
            }
            let comp = self.load_kustomization(&p, Some((k, c.org)))?;
            if !comp.is_component {
                return Err(self.kerr(
                    k,
                    Some(c.org),
                    format!("expected kind 'Component' for path '{p}' but got 'Kustomization'"),
                ));
            }
            self.enter(k, &p, c.org)?;
            let outer = self.enter_origin(&c.value);
            let comp_acc = self.accumulate(&comp, ra)?;
            self.origin = outer;
            acc.merge(self, k, comp_acc)?;
            self.stack.pop();
        }
        acc.config.merge(&config::read(self, k)?);
        acc.config.merge(&config::read_crds(self, k)?);
        transformers::run(self, k, ra, &acc.config)?;
        let declared = vars::read(self, k)?;
        vars::merge(self, k, declared, ra, &mut acc.vars)?;
        Ok(acc)
    }

    /// With origins tracked, moves them into the kustomization the entry `entry` names:
    /// the origin to restore after it.
    fn enter_origin(&mut self, entry: &str) -> Option<String> {
        let inner = self.origin.as_deref().map(|o| origin::join(o, entry));
        std::mem::replace(&mut self.origin, inner)
    }

    /// With origins tracked, the origin of a resource generated by the built-in generator
    /// `kind` of `k`.
    fn annotate_generated(&self, k: &Kust, r: &mut Res, kind: &str) -> Result<(), KustomizeError> {
        if let Some(o) = &self.origin {
            let file = k.path.rsplit('/').next().unwrap_or(&k.path);
            let value = origin::of_generator(&origin::join(o, file), kind)
                .ok_or_else(|| unquoted_origin(k))?;
            origin::annotate(r, &value);
        }
        Ok(())
    }

    /// Pushes a kustomization directory on the stack, refusing cycles.
    fn enter(&mut self, k: &Kust, dir: &str, org: Org) -> Result<(), KustomizeError> {
        if let Some(i) = self.stack.iter().position(|d| d == dir) {
            let mut cycle: Vec<String> = self.stack[i..]
                .iter()
                .map(|d| {
                    if d.is_empty() {
                        ".".to_string()
                    } else {
                        d.clone()
                    }
                })
                .collect();
            cycle.push(if dir.is_empty() {
                ".".into()
            } else {
                dir.to_string()
            });
            return Err(self.kerr(
                k,
                Some(org),
                format!("cycle detected: {}", cycle.join(" -> ")),
            ));
        }
        self.stack.push(dir.to_string());
        Ok(())
    }

    /// The objects of a resource file (`kind: List` expanded).
    fn load_resources(&mut self, path: &str) -> Result<Vec<Res>, KustomizeError> {
        let file = self.file_id(path);
        parse_resources(self.fs, path, file, self.generated_hooks)
    }

    /// The resource files among a kustomization's `resources` entries, read and parsed on
    /// all cores (each file is independent); `None` for other entries, which the caller
    /// handles in order (as it does any error here, so that the first entry's error wins).
    fn parse_resource_files(
        &mut self,
        k: &Kust,
        entries: &[kustfile::Spanned],
    ) -> Vec<Option<Result<Vec<Res>, KustomizeError>>> {
        let jobs: Vec<Option<(String, u32)>> = entries
            .iter()
            .map(|e| {
                if looks_remote(&e.value) {
                    return None;
                }
                let p = join(&k.real_dir, &e.value, &k.path).ok()?;
                if self.fs.kind(&p).ok()?? != EntryKind::File {
                    return None;
                }
                let p = self.file_under(k, &e.value, e.org).ok()?;
                let file = self.file_id(&p);
                Some((p, file))
            })
            .collect();
        if jobs.iter().flatten().count() < 2 {
            return jobs.iter().map(|_| None).collect();
        }
        let (fs, hooks) = (self.fs, self.generated_hooks);
        plumb_core::parallel::map_coarse(&jobs, |j| {
            j.as_ref()
                .map(|(p, file)| parse_resources(fs, p, *file, hooks))
        })
    }
}

/// Reads and parses a resource file: its objects (`kind: List` expanded), origins stamped
/// with `file`.
fn parse_resources(
    fs: &dyn SourceFs,
    path: &str,
    file: u32,
    generated_hooks: bool,
) -> Result<Vec<Res>, KustomizeError> {
    let text =
        String::from_utf8(fs.read(path)?).map_err(|_| load_error(path, None, "not valid UTF-8"))?;
    // A directory source's file is read as Argo CD reads manifests; kustomize is stricter.
    let dialect = if generated_hooks {
        Dialect::Resource
    } else {
        Dialect::KustomizeResource
    };
    let docs = tree::parse_stream(&text, file, 0, 0, dialect).map_err(|e| {
        KustomizeError::Load(LoadError {
            file: PathBuf::from(path),
            line: e.line,
            column: e.column,
            message: format!("invalid YAML: {}", e.message),
        })
    })?;
    let mut out = Vec::with_capacity(docs.len());
    for d in docs {
        push_object(path, file, d.line, d.node, generated_hooks, &mut out)?;
    }
    Ok(out)
}

fn push_object(
    path: &str,
    file: u32,
    line: u32,
    node: Node,
    generated_hooks: bool,
    out: &mut Vec<Res>,
) -> Result<(), KustomizeError> {
    let at = Some(Org { file, line, col: 1 });
    let Node::Map(m) = node else {
        return Err(load_error(
            path,
            at,
            "document is not a Kubernetes object (expected a mapping)",
        ));
    };
    let kind = m.get("kind").and_then(Node::as_str).unwrap_or("");
    if kind.ends_with("List") && m.get("items").is_some_and(|i| i.as_seq().is_some()) {
        if let Some(Node::Seq(items)) = m.get("items") {
            for it in items {
                let l = first_line(it).unwrap_or(line);
                push_object(path, file, l, it.clone(), generated_hooks, out)?;
            }
        }
        return Ok(());
    }
    if kind.is_empty() {
        return Err(load_error(
            path,
            at,
            "missing Resource metadata: kind is required",
        ));
    }
    let node = Node::Map(m);
    let generated_hook = generated_hooks
        && node
            .path_str(&["metadata", "generateName"])
            .is_some_and(|n| !n.is_empty())
        && [
            plumb_core::HOOK_ANNOTATION,
            plumb_core::HELM_HOOK_ANNOTATION,
        ]
        .iter()
        .any(|k| node.path_str(&["metadata", "annotations", k]).is_some());
    if !generated_hook
        && node
            .path_str(&["metadata", "name"])
            .is_none_or(str::is_empty)
    {
        return Err(load_error(path, at, "missing metadata.name in object"));
    }
    out.push(Res::new(node, file, line));
    Ok(())
}

fn first_line(n: &Node) -> Option<u32> {
    match n {
        Node::Scalar(_, o) => Some(o.line),
        Node::Map(m) => m.values().filter_map(first_line).min(),
        Node::Seq(s) => s.iter().filter_map(first_line).min(),
    }
}

/// An origin whose path go-yaml would quote: the kustomize binary writes it.
fn unquoted_origin(k: &Kust) -> KustomizeError {
    KustomizeError::Unsupported {
        file: k.path.clone(),
        field: "buildMetadata (a path written quoted)".into(),
    }
}

fn looks_remote(s: &str) -> bool {
    s.contains("://")
        || s.starts_with("github.com/")
        || s.starts_with("gitlab.com/")
        || s.starts_with("bitbucket.org/")
        || s.starts_with("git@")
        || s.starts_with("git::")
        || s.contains("?ref=")
}

/// Appends resources, refusing a duplicate id. `seen` indexes the ids of the resources
/// accumulated so far, kept across the `resources` entries of one kustomization so that each
/// entry costs its own resources, not all earlier ones (filled from `ra` on first use; `ra`
/// only grows while it is used). On an error, `ra` holds the new resources too: the build
/// stops there.
fn append(
    ctx: &Ctx,
    k: &Kust,
    ra: &mut Vec<Res>,
    seen: &mut Option<resource::IdIndex>,
    new: Vec<Res>,
    org: Option<Org>,
) -> Result<(), KustomizeError> {
    let seen = seen.get_or_insert_with(|| {
        // Room for what the kustomization reserved (all its files' resources), not just
        // this entry's.
        let mut index = resource::IdIndex::with_capacity(ra.capacity().max(ra.len() + new.len()));
        index.first_duplicate(ra, 0);
        index
    });
    let from = ra.len();
    // Into an empty list without room for them (an overlay taking its base's resources) the
    // list itself is taken.
    if ra.is_empty() && ra.capacity() < new.len() {
        *ra = new;
    } else {
        ra.extend(new);
    }
    if let Some(i) = seen.first_duplicate(ra, from) {
        return Err(ctx.kerr(
            k,
            org,
            format!(
                "may not add resource with an already registered id: {}",
                ra[i].cur_id().display()
            ),
        ));
    }
    Ok(())
}

/// Adds a generated resource: appended, or merged into / replacing an existing one as its
/// behavior says (kustomize's appendReplaceOrMerge).
fn absorb(ctx: &Ctx, k: &Kust, ra: &mut Vec<Res>, mut g: Res) -> Result<(), KustomizeError> {
    use resource::Behavior;
    let id = g.cur_id();
    // By any id (current or previous), namespace included: a generator named like a
    // resource of another namespace creates its own object (kustomize 5.5 has no
    // fall-back to a namespace-blind match).
    let matches: Vec<usize> = ra
        .iter()
        .enumerate()
        .filter(|(_, r)| r.all_ids().iter().any(|x| x.equals(&id)))
        .map(|(i, _)| i)
        .collect();
    let at = g.node.path(&["metadata", "name"]).and_then(Node::org);
    match matches.len() {
        0 => match g.behavior {
            Some(Behavior::Merge) | Some(Behavior::Replace) => Err(ctx.kerr(
                k,
                at,
                format!(
                    "id {} does not exist; cannot merge or replace",
                    id.display()
                ),
            )),
            _ => {
                ra.push(g);
                Ok(())
            }
        },
        1 => {
            let i = matches[0];
            let old = &ra[i];
            let merge = match g.behavior {
                Some(Behavior::Merge) => true,
                Some(Behavior::Replace) => false,
                _ => {
                    return Err(ctx.kerr(
                        k,
                        at,
                        format!(
                            "id {} exists; behavior must be merge or replace",
                            id.display()
                        ),
                    ));
                }
            };
            // Labels and annotations: the old ones overridden by the new, save for the
            // origin, which a merge keeps (kustomize keeps build annotations); name,
            // namespace and build history from the old.
            let gm = g.node.as_map_mut().expect("generated objects are mappings");
            let meta = gm.get_or_insert_with("metadata", Node::empty_map);
            for field in ["labels", "annotations"] {
                if let Some(old_map) = old.node.path(&["metadata", field]).and_then(Node::as_map) {
                    let mut merged = old_map.clone();
                    if let Some(new_map) = meta.get(field).and_then(Node::as_map) {
                        for (kk, v) in new_map {
                            merged.insert(kk.clone(), v.clone());
                        }
                    }
                    if merge && let Some(o) = old_map.get(origin::KEY) {
                        merged.insert(origin::KEY, o.clone());
                    }
                    if let Some(mm) = meta.as_map_mut() {
                        mm.insert(field.to_string(), Node::Map(merged));
                    }
                }
            }
            if let Some(mm) = meta.as_map_mut() {
                match old.node.path(&["metadata", "name"]) {
                    Some(n) => {
                        mm.insert("name", n.clone());
                    }
                    None => {
                        mm.remove("name");
                    }
                }
                match old.node.path(&["metadata", "namespace"]) {
                    Some(n) => {
                        mm.insert("namespace", n.clone());
                    }
                    None => {
                        mm.remove("namespace");
                    }
                }
            }
            if merge {
                for field in ["data", "binaryData"] {
                    if let Some(old_map) = old.node.get(field).and_then(Node::as_map) {
                        let mut merged = old_map.clone();
                        if let Some(new_map) = gm.get(field).and_then(Node::as_map) {
                            for (kk, v) in new_map {
                                merged.insert(kk.clone(), v.clone());
                            }
                        }
                        gm.insert(field.to_string(), Node::Map(merged));
                    }
                }
            }
            g.prev = old.prev.clone();
            g.prefixes = old.prefixes.clone();
            g.suffixes = old.suffixes.clone();
            // The hash suffix stays only when both sides want it: the original's build
            // annotation is kept, but dropped when the incoming generator disables it
            // (`disableNameSuffixHash` on either side leaves the plain name).
            g.needs_hash = old.needs_hash && g.needs_hash;
            g.file = old.file;
            g.line = old.line;
            ra[i] = g;
            Ok(())
        }
        _ => Err(ctx.kerr(
            k,
            at,
            format!(
                "found multiple objects that could accept merge of {}",
                id.display()
            ),
        )),
    }
}
