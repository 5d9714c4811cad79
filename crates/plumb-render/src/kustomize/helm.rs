//! `helmCharts` and `helmGlobals`: kustomize's HelmChartInflationGenerator, natively.
//!
//! Each entry is inflated as kustomize 5.5 inflates it: the chart from
//! `helmGlobals.chartHome` (default `charts/`, below the kustomization; `<name>-<version>/`
//! in it when the entry has both `repo` and `version`), else pulled from `repo` (a chart
//! repository or `oci://`) through plumb's chart cache, never written into the repository;
//! the values file (`valuesFile`, default the chart's own `values.yaml`) merged with
//! `valuesInline` as `valuesMerge` says (`override`, the default: inline wins; `merge`: the
//! file wins; `replace`: inline only; kyaml's merge2: maps merged key by key, lists
//! replaced, an inline `null` over a mapping removes it); then `helm template` with
//! kustomize's arguments (`--generate-name` without a `releaseName`, `-f` values then
//! `additionalValuesFiles`, `--api-versions`, `--kube-version`, `--include-crds`,
//! `--skip-tests`, `--no-hooks`, `--name-template`) and a private `HELM_CONFIG_HOME`. As in
//! kustomize 5.5, the kustomization's `namespace` is not passed to helm (the namespace
//! transformer sets it afterwards). The objects join the build after `configMapGenerator`
//! and `secretGenerator`, and the transformers of the kustomization (and of those that
//! include it) apply to them.
//!
//! Only with `--enable-helm` (Argo CD's `kustomize.buildOptions`); without it an entry is
//! kustomize's error. Every scalar of an inflated object is declared at the entry's `name`
//! in the kustomization: that is the line of git that brings it in.

use super::kustfile::{Kust, entry_bool, entry_str, known_fields, strings_of};
use super::resource::Res;
use super::tree::{self, Dialect, Map, Node, Org, Scalar, first_org_in};
use super::{Ctx, KustomizeError, load_error, push_object};
use crate::chart::ChartCache;
use crate::render::{Materialized, run, walk_tree};
use crate::source::{EntryKind, join};
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

/// How a build inflates `helmCharts`: given only with `--enable-helm`.
#[derive(Debug, Clone, Default)]
pub struct HelmOptions {
    /// The `helm` binary (None: not found, an error when a chart is to be inflated).
    pub command: Option<PathBuf>,
    /// Where charts from chart repositories are downloaded (None: only charts in the
    /// repository can be inflated).
    pub charts: Option<Arc<ChartCache>>,
}

/// The fields of a `helmCharts` entry (kustomize's `HelmChart`).
pub(super) const CHART_FIELDS: &[&str] = &[
    "name",
    "version",
    "repo",
    "releaseName",
    "namespace",
    "additionalValuesFiles",
    "valuesFile",
    "valuesInline",
    "valuesMerge",
    "includeCRDs",
    "skipHooks",
    "apiVersions",
    "kubeVersion",
    "nameTemplate",
    "skipTests",
    "debug",
    "devel",
];

/// The fields of `helmGlobals`.
pub(super) const GLOBAL_FIELDS: &[&str] = &["chartHome", "configHome"];

/// The objects of every `helmCharts` entry of `k`, in order.
pub(super) fn generate(ctx: &mut Ctx, k: &Kust) -> Result<Vec<Res>, KustomizeError> {
    let entries = k.maps("helmCharts").map_err(|m| ctx.kerr(k, None, m))?;
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    let home = match k.get("helmGlobals") {
        None => None,
        Some(Node::Map(g)) => {
            known_fields(g, GLOBAL_FIELDS).map_err(|m| ctx.kerr(k, first_org_in(g), m))?;
            entry_str(k, g, "chartHome")
        }
        Some(n) => return Err(ctx.kerr(k, n.org(), "helmGlobals must be a mapping")),
    };
    let mut out = Vec::new();
    for e in entries {
        out.extend(inflate(ctx, k, e, home.as_ref())?);
    }
    Ok(out)
}

/// Where an entry's chart is.
enum Chart {
    /// A directory of the repository.
    InRepo(String),
    /// A directory of the chart cache.
    Cached(PathBuf),
}

fn inflate(
    ctx: &mut Ctx,
    k: &Kust,
    e: &Map,
    home: Option<&super::kustfile::Spanned>,
) -> Result<Vec<Res>, KustomizeError> {
    let at = e
        .get("name")
        .and_then(Node::org)
        .or_else(|| first_org_in(e));
    let err = |ctx: &Ctx, m: String| ctx.kerr(k, at, format!("helmCharts: {m}"));
    known_fields(e, CHART_FIELDS).map_err(|m| err(ctx, m))?;
    let s = |f: &str| entry_str(k, e, f).map(|s| s.value).unwrap_or_default();
    let name = s("name");
    // kustomize asks for --enable-helm before it reads the entry.
    let Some(opts) = ctx.helm else {
        let chart = if name.is_empty() {
            String::new()
        } else {
            format!("chart {name}: ")
        };
        return Err(err(
            ctx,
            format!(
                "{chart}must specify --enable-helm (Argo CD: kustomize.buildOptions: --enable-helm)"
            ),
        ));
    };
    if name.is_empty() {
        return Err(err(ctx, "chart name cannot be empty".into()));
    }
    let Some(helm) = opts.command.clone() else {
        return Err(err(
            ctx,
            format!(
                "chart {name}: `helm` is not on PATH (kustomize inflates charts with `helm template`)"
            ),
        ));
    };
    let (version, repo) = (s("version"), s("repo"));
    // The chart home: below the kustomization, as kustomize's loader requires.
    let home_rel = home.map(|h| h.value.as_str()).unwrap_or("charts");
    let mut chart_rel = home_rel.trim_end_matches('/').to_string();
    if !version.is_empty() && !repo.is_empty() {
        chart_rel = format!("{chart_rel}/{name}-{version}");
    }
    let chart_rel = format!("{chart_rel}/{name}");
    let in_repo = join(&k.dir, &chart_rel, &k.path)
        .map_err(|le| ctx.kerr(k, home.map(|h| h.org).or(at), le.message))?;
    let chart = if ctx.fs.kind(&in_repo)? == Some(EntryKind::Dir) {
        Chart::InRepo(in_repo.clone())
    } else if repo.is_empty() {
        return Err(err(
            ctx,
            format!("no repo specified for pull, no chart found at '{in_repo}'"),
        ));
    } else {
        let Some(cache) = &opts.charts else {
            return Err(err(
                ctx,
                format!("chart {name} from {repo}: no chart cache to download it into"),
            ));
        };
        let got = cache
            .get(&repo, &name, &version, false)
            .map_err(|c| err(ctx, format!("chart {name}: {}", c.0)))?;
        Chart::Cached(got.root.join(&name))
    };

    // The values: the file as it is, or merged with valuesInline.
    let values_file = entry_str(k, e, "valuesFile");
    let file_values: Vec<u8> = match &values_file {
        Some(v) => {
            let p = ctx.file_under(k, &v.value, v.org)?;
            ctx.read(&p)?
        }
        None => match &chart {
            Chart::InRepo(_) => {
                // Read as kustomize reads it, through its loader: in or below the
                // kustomization's directory.
                let p = ctx.file_under(
                    k,
                    &format!("{chart_rel}/values.yaml"),
                    at.unwrap_or(Org::NONE),
                )?;
                ctx.read(&p)?
            }
            Chart::Cached(dir) => std::fs::read(dir.join("values.yaml")).map_err(|_| {
                err(
                    ctx,
                    format!("chart {name}: the chart has no values.yaml (set valuesFile)"),
                )
            })?,
        },
    };
    let inline = match e.get("valuesInline") {
        None | Some(Node::Scalar(Scalar::Null, _)) => None,
        Some(Node::Map(m)) if m.is_empty() => None,
        Some(Node::Map(m)) => Some(m.clone()),
        Some(n) => return Err(ctx.kerr(k, n.org(), "helmCharts: valuesInline must be a mapping")),
    };
    let values: Vec<u8> = match inline {
        None => file_values,
        Some(inline) => {
            let mode = entry_str(k, e, "valuesMerge");
            let mode = mode.as_ref().map(|m| m.value.as_str()).unwrap_or("");
            let merged = match mode {
                "" | "override" | "merge" => {
                    let text = String::from_utf8(file_values)
                        .map_err(|_| err(ctx, "the values file is not UTF-8".into()))?;
                    let file = parse_values(&text).map_err(|m| err(ctx, m))?;
                    if mode == "merge" {
                        merge(Node::Map(file), Node::Map(inline))
                    } else {
                        merge(Node::Map(inline), Node::Map(file))
                    }
                }
                "replace" => Node::Map(inline),
                _ => {
                    return Err(err(
                        ctx,
                        "valuesMerge must be one of [merge override replace]".into(),
                    ));
                }
            };
            serde_json::to_vec(&merged.to_json()).unwrap_or_default()
        }
    };
    let mut additional = Vec::new();
    for f in strings_of(k, e.get("additionalValuesFiles"), "additionalValuesFiles")
        .map_err(|m| err(ctx, m))?
    {
        let p = ctx.file_under(k, &f.value, f.org)?;
        additional.push(ctx.read(&p)?);
    }

    // The chart on disk for helm, and a private scratch directory (values, helm's homes).
    let scratch = Materialized::of(ctx.fs, &[])?;
    let copy;
    let chart_dir = match &chart {
        Chart::Cached(dir) => dir.clone(),
        Chart::InRepo(dir) => match ctx.fs.on_disk() {
            Some(root) => {
                // In place, once the walk has proved it holds no symlink out.
                walk_tree(ctx.fs, std::slice::from_ref(dir), &mut |_, _| Ok(()))?;
                root.join(dir)
            }
            None => {
                copy = Materialized::of(ctx.fs, std::slice::from_ref(dir))?;
                copy.root.join(dir)
            }
        },
    };
    let write = |name: &str, bytes: &[u8]| -> Result<PathBuf, KustomizeError> {
        let p = scratch.root.join(name);
        std::fs::write(&p, bytes).map_err(|e| load_error(&k.path, at, e.to_string()))?;
        Ok(p)
    };
    let mut cmd = Command::new(helm);
    cmd.arg("template");
    match entry_str(k, e, "releaseName") {
        Some(r) if !r.value.is_empty() => {
            // Never an option on helm's command line (`--post-renderer=…` would run a program).
            if !crate::render::valid_release_name(&r.value) {
                return Err(ctx.kerr(
                    k,
                    Some(r.org),
                    format!(
                        "helmCharts: releaseName {:?} is not a valid release name (lower-case letters, digits, '-' and '.', at most 53)",
                        r.value
                    ),
                ));
            }
            cmd.arg(r.value)
        }
        _ => cmd.arg("--generate-name"),
    };
    cmd.arg(&chart_dir);
    for f in ["namespace", "nameTemplate"] {
        if let Some(v) = entry_str(k, e, f).filter(|v| !v.value.is_empty()) {
            if v.value.starts_with('-') {
                return Err(ctx.kerr(
                    k,
                    Some(v.org),
                    format!("helmCharts: {f} may not start with '-'"),
                ));
            }
            cmd.arg(if f == "namespace" {
                "--namespace"
            } else {
                "--name-template"
            })
            .arg(v.value);
        }
    }
    cmd.arg("-f").arg(write("values.yaml", &values)?);
    for (i, bytes) in additional.iter().enumerate() {
        cmd.arg("-f")
            .arg(write(&format!("values-{i}.yaml"), bytes)?);
    }
    for v in strings_of(k, e.get("apiVersions"), "apiVersions").map_err(|m| err(ctx, m))? {
        cmd.arg("--api-versions").arg(v.value);
    }
    if let Some(v) = entry_str(k, e, "kubeVersion").filter(|v| !v.value.is_empty()) {
        cmd.arg("--kube-version").arg(v.value);
    }
    for (field, flag) in [
        ("includeCRDs", "--include-crds"),
        ("skipTests", "--skip-tests"),
        ("skipHooks", "--no-hooks"),
        ("devel", "--devel"),
    ] {
        if entry_bool(e, field) {
            cmd.arg(flag);
        }
    }
    let helm_home = scratch.root.join("helm");
    cmd.env("HELM_CONFIG_HOME", &helm_home)
        .env("HELM_CACHE_HOME", helm_home.join(".cache"))
        .env("HELM_DATA_HOME", helm_home.join(".data"));
    let stdout =
        run(cmd, &k.path).map_err(|le| err(ctx, format!("chart {name}: {}", le.message)))?;
    objects(ctx, k, &name, &stdout, at.unwrap_or(Org::NONE))
}

/// `helm template`'s output as resources, every scalar declared at `org`.
fn objects(
    ctx: &Ctx,
    k: &Kust,
    name: &str,
    text: &str,
    org: Org,
) -> Result<Vec<Res>, KustomizeError> {
    let docs = tree::parse_stream(text, k.file, 0, 0, Dialect::KustomizeResource).map_err(|e| {
        ctx.kerr(
            k,
            Some(org),
            format!(
                "helmCharts: chart {name}: helm printed invalid YAML (line {} of its output): {}",
                e.line.unwrap_or(0),
                e.message
            ),
        )
    })?;
    let mut out = Vec::new();
    for mut d in docs {
        if d.node.is_null() {
            continue;
        }
        d.node.set_org(org);
        push_object(&k.path, k.file, org.line, d.node, false, &mut out)?;
    }
    Ok(out)
}

/// A values file's top-level mapping (an empty file is an empty mapping).
fn parse_values(text: &str) -> Result<Map, String> {
    let docs = tree::parse_stream(text, u32::MAX, 0, 0, Dialect::Resource).map_err(|e| {
        format!(
            "the values file is invalid YAML at line {}: {}",
            e.line.unwrap_or(0),
            e.message
        )
    })?;
    match docs.into_iter().next().map(|d| d.node) {
        None | Some(Node::Scalar(Scalar::Null, _)) => Ok(Map::new()),
        Some(Node::Map(m)) => Ok(m),
        Some(_) => Err("the values file is not a mapping".into()),
    }
}

/// kyaml's `merge2.Merge(src, dest)`, as kustomize merges values: `src`'s fields over
/// `dest`'s, mappings merged key by key, lists and scalars replaced; a `null` in `src` over
/// a mapping removes the field, over anything else it stays a `null`.
fn merge(src: Node, dest: Node) -> Node {
    match (src, dest) {
        (Node::Map(src), Node::Map(mut dest)) => {
            for (key, v) in src {
                match dest.remove(&key) {
                    None => {
                        dest.insert(key, v);
                    }
                    Some(Node::Map(_)) if v.is_null() => {}
                    Some(old @ Node::Map(_)) if matches!(v, Node::Map(_)) => {
                        dest.insert(key, merge(v, old));
                    }
                    Some(_) => {
                        dest.insert(key, v);
                    }
                }
            }
            Node::Map(dest)
        }
        (src, _) => src,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(yaml: &str) -> Node {
        Node::Map(parse_values(yaml).unwrap())
    }

    #[test]
    fn values_merge_as_kyaml_merge2() {
        let file = node("color: blue\nlist: [1, 2]\nnested: {b: 2, gone: {x: 1}}\nkeep: 1\n");
        let inline = node("color: red\nlist: [9]\nnested: {a: 1, gone: null}\nnew: null\n");
        // override: inline over the file.
        let got = merge(inline.clone(), file.clone()).to_json();
        assert_eq!(
            got,
            serde_json::json!({"color": "red", "list": [9], "nested": {"a": 1, "b": 2}, "keep": 1, "new": null})
        );
        // merge: the file over inline.
        let got = merge(file, inline).to_json();
        assert_eq!(
            got,
            serde_json::json!({"color": "blue", "list": [1, 2], "nested": {"a": 1, "b": 2, "gone": {"x": 1}}, "keep": 1, "new": null})
        );
    }

    #[test]
    fn an_empty_values_file_is_an_empty_mapping_and_a_list_is_refused() {
        assert!(parse_values("").unwrap().is_empty());
        assert!(parse_values("# nothing\n").unwrap().is_empty());
        assert_eq!(
            parse_values("- a\n").unwrap_err(),
            "the values file is not a mapping"
        );
    }
}
