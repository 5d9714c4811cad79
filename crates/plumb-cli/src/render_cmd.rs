//! `plumb render`: what a source renders to, as a YAML stream, optionally with the
//! origin (`# file:line`) of every scalar.

use crate::EXIT_IN_SYNC;
use crate::source_args::{AppFrom, SourceArgs, render_sources_on};
use anyhow::{Result, anyhow};
use plumb_core::argo::Application;
use std::io::Write;
use std::path::PathBuf;

/// Objects written into one buffer, on one core, by `plumb render`: at 2,000 objects, 63
/// buffers for two cores to share.
const EMIT_CHUNK: usize = 32;

#[derive(clap::Args)]
pub struct RenderArgs {
    #[command(flatten)]
    source: SourceArgs,
    /// An Argo CD Application whose spec.source (repoURL, path, targetRevision,
    /// directory, kustomize, helm) drives the render.
    #[arg(long, value_name = "FILE")]
    app: Option<PathBuf>,
    /// After each scalar, a comment with the file and line that set it.
    #[arg(long)]
    show_origins: bool,
    /// With --cluster: charts are rendered for that cluster's version and API versions
    /// (helm template --kube-version/--api-versions), as Argo CD renders them.
    #[command(flatten)]
    cluster: crate::cluster_args::ClusterArgs,
}

pub fn run(args: RenderArgs) -> Result<u8> {
    let app = match &args.app {
        Some(p) => Some((crate::diff_cmd::load_app(p)?, p.clone())),
        None => None,
    };
    let connected = if args.cluster.cluster {
        Some(crate::cluster_args::connect(&args.cluster)?)
    } else {
        None
    };
    let sources = render_sources_on(
        &args.source,
        app.as_ref()
            .map(|(a, p): &(Application, PathBuf)| (a, AppFrom::File(p.as_path()))),
        connected.as_ref(),
    )?;
    let mut out = crate::output::buffered_stdout();
    for source in sources {
        let rendered = source.rendered;
        writeln!(
            out,
            "# {} source {} at {}: {} objects",
            rendered.source_type.as_str(),
            source.path,
            rendered.revision,
            rendered.objects.len()
        )?;
        let mut objects = rendered.objects;
        // Secret values never leave plumb, rendered or not.
        for obj in &mut objects {
            plumb_diff::mask::hide_rendered_secret(&mut obj.object);
        }
        // The objects' YAML on every core (the emitter is the larger part of a big render's
        // time), written in order; a renderer's tree is written as it is, never converted.
        // A run of objects shares one buffer, which grows a few times, where a buffer per
        // object grew from nothing six or seven times.
        let chunks: Vec<_> = objects.chunks(EMIT_CHUNK).collect();
        let emit = |chunk: &&[plumb_render::render::RenderedObject]| {
            let mut text = String::new();
            for obj in *chunk {
                text.push_str("---\n");
                plumb_diff::text::write_object_yaml(&mut text, &obj.object, args.show_origins);
            }
            text
        };
        let texts = plumb_core::parallel::map_coarse(&chunks, emit);
        for text in &texts {
            out.write_all(text.as_bytes())?;
        }
        // The command ends after this: the objects and texts are not freed one by one (8 of
        // the 60 ms of CPU at 2,000 objects); the system takes the memory back at exit.
        std::mem::forget(texts);
        std::mem::forget(objects);
    }
    out.flush().map_err(|e| anyhow!(e))?;
    Ok(EXIT_IN_SYNC)
}
