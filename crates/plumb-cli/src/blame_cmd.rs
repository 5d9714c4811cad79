//! `plumb blame KIND/NAME`: an object's YAML with, after each value, who last wrote it
//! (manager, operation, subresource, time) from its `managedFields` — like kubectl-blame.

use crate::EXIT_IN_SYNC;
use crate::cluster_args::{ClusterArgs, connect};
use anyhow::{Result, anyhow, bail};
use plumb_core::GroupKind;
use plumb_core::fieldpath::owners;
use serde_json::Value;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct BlameArgs {
    /// The object: `KIND/NAME`, KIND as `Deployment`, `deployment`, `deployments` or
    /// `Deployment.apps`.
    object: String,
    /// The object's namespace.
    #[arg(short = 'n', long, default_value = "default")]
    namespace: String,
    /// A snapshot directory (`plumb snapshot`) or manifests to read the object from.
    #[arg(
        long,
        value_name = "DIR",
        required_unless_present = "cluster",
        conflicts_with = "cluster"
    )]
    live: Option<PathBuf>,
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// `Deployment.apps/web` → (kind or plural as typed, group, name).
fn parse_object(s: &str) -> Result<(String, Option<String>, String)> {
    let (kind, name) = s
        .split_once('/')
        .filter(|(k, n)| !k.is_empty() && !n.is_empty())
        .ok_or_else(|| anyhow!("expected KIND/NAME, got {s:?}"))?;
    let (kind, group) = match kind.split_once('.') {
        Some((k, g)) => (k.to_string(), Some(g.to_string())),
        None => (kind.to_string(), None),
    };
    Ok((kind, group, name.to_string()))
}

/// Whether `obj`'s kind is what the user typed (kind, lower-case kind, or plural).
fn kind_matches(obj: &Value, kind: &str, group: Option<&str>) -> bool {
    let k = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_group = plumb_core::group_of_api_version(
        obj.get("apiVersion").and_then(Value::as_str).unwrap_or(""),
    );
    let typed = kind.to_ascii_lowercase();
    let lower = k.to_ascii_lowercase();
    (typed == lower || typed == format!("{lower}s") || typed == format!("{lower}es"))
        && group.is_none_or(|g| g == api_group)
}

pub fn run(args: BlameArgs) -> Result<u8> {
    let (kind, group, name) = parse_object(&args.object)?;
    let candidates: Vec<Value> = if let Some(dir) = &args.live {
        plumb_render::load_paths(std::slice::from_ref(dir))
            .map_err(|e| anyhow!("{e}"))?
            .into_iter()
            .map(|m| m.object)
            .collect()
    } else {
        if !args.cluster.cluster {
            bail!("pass --live DIR or --cluster");
        }
        let c = connect(&args.cluster)?;
        let resources = c
            .block_on(c.cluster.api_resources())
            .map_err(|e| anyhow!("{e}"))?;
        let info = resources
            .iter()
            .find(|r| {
                let typed = kind.to_ascii_lowercase();
                (r.kind.to_ascii_lowercase() == typed || r.resource_name() == typed)
                    && group.as_deref().is_none_or(|g| g == r.group)
            })
            .ok_or_else(|| anyhow!("the server has no kind {kind:?}"))?
            .clone();
        let kinds = [GroupKind {
            group: info.group.clone(),
            kind: info.kind.clone(),
        }];
        let ns = info.namespaced.then(|| vec![args.namespace.clone()]);
        c.block_on(c.cluster.list_live(&kinds, ns.as_deref(), None))
            .map_err(|e| anyhow!("{e}"))?
    };
    let obj = candidates
        .into_iter()
        .find(|o| {
            kind_matches(o, &kind, group.as_deref())
                && o.pointer("/metadata/name").and_then(Value::as_str) == Some(&name)
                && o.pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .is_none_or(|n| n == args.namespace)
        })
        .ok_or_else(|| {
            anyhow!(
                "{}/{name} not found in namespace {:?}",
                kind,
                args.namespace
            )
        })?;
    if obj
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        eprintln!(
            "note: the object has no managedFields (read it with them kept, e.g. from `plumb snapshot`)"
        );
    }
    let mut shown = obj.clone();
    if let Some(meta) = shown.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    // Secret values never leave plumb.
    plumb_diff::mask::hide_secret_data(&mut [&mut shown], &[]);
    let text = plumb_diff::text::to_yaml_with_comments(&shown, &|pointer| {
        let owners = owners(&obj, pointer);
        (!owners.is_empty()).then(|| {
            owners
                .iter()
                .map(|o| {
                    let sub = if o.subresource.is_empty() {
                        String::new()
                    } else {
                        format!(" /{}", o.subresource)
                    };
                    format!("{} ({}{sub}) {}", o.manager, o.operation, o.time)
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
    });
    crate::output::stdout(&text)?;
    Ok(EXIT_IN_SYNC)
}
