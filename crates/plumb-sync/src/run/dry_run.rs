//! `plumb app sync --dry-run`: the sync's plan, with every apply sent as a server-side dry
//! run (admission webhooks and validation run, nothing is stored) and prunes only reported.
//! Hooks do not run; the Application's status and history are not written.

use super::*;
use crate::plan::Step;
use crate::request::SyncRequest;

pub(super) async fn dry_run(
    cluster: &dyn ClusterApi,
    app: &Value,
    opts: &RunOptions,
    request: &SyncRequest,
    admission: &super::tenancy::Admission,
) -> Result<SyncOutcome> {
    let started = Instant::now();
    // Judged before any request for the app's resources (a refused kind is not even listed).
    let mut obs = observe_desired(cluster, app, opts, request.revision.as_deref(), &[]).await?;
    super::refuse_resources(admission, &obs)?;
    observe_live(cluster, app, opts, &mut obs).await?;
    let planned: Vec<PlanResource> = obs
        .resources
        .iter()
        .filter(|r| crate::request::selects(&request.resources, &r.key))
        .cloned()
        .collect();
    // CreateNamespace=true and no namespace yet: the sync would create it first; objects in it
    // cannot be dry-run until it exists.
    let sync_opts = execute::sync_options_now(cluster, &obs).await?;
    let missing_namespace = sync_opts
        .destination_namespace
        .as_ref()
        .filter(|d| sync_opts.create_namespace && !d.exists)
        .map(|d| d.name.clone());
    let plan =
        plan(&planned, &sync_opts, false, false, request.prune).map_err(|e| RunError::App {
            app: obs.name.clone(),
            reason: e.to_string(),
        })?;
    let result = |step: &Step, status: &'static str, message: String| {
        ResourceResult::of_step(step, step.key.clone(), status, message)
    };
    let mut results = Vec::new();
    let mut applies: Vec<(usize, Value, &Step)> = Vec::new();
    for step in plan.steps.iter().filter(|s| s.is_task()) {
        let kind = step.key.kind.to_lowercase();
        let r = match step.action {
            _ if step.source == StepSource::Hook => continue,
            _ if step.source == StepSource::CreateNamespace => result(
                step,
                "Synced",
                format!("namespace/{} created (dry run)", step.key.name),
            ),
            Action::Apply | Action::Replace
                if missing_namespace.as_deref() == Some(step.key.namespace.as_str()) =>
            {
                result(
                    step,
                    "Synced",
                    format!(
                        "{kind} serverside-applied (dry run; namespace {} is created first)",
                        step.key.namespace
                    ),
                )
            }
            Action::Apply | Action::Replace => match execute::apply_object(&obs, &step.key) {
                Ok(obj) => {
                    applies.push((results.len(), obj, step));
                    result(
                        step,
                        "Synced",
                        format!("{kind} serverside-applied (server dry run)"),
                    )
                }
                Err(e) => result(step, "SyncFailed", e),
            },
            Action::Prune if step.requires_confirmation => result(
                step,
                "PruneSkipped",
                "ignored (requires confirmation: Prune=confirm)".into(),
            ),
            Action::Prune => result(step, "Pruned", "pruned (dry run)".into()),
            Action::Skip(why @ (SkipReason::PruneDisabled | SkipReason::NoPrune)) => {
                result(step, "PruneSkipped", why.message().into())
            }
            Action::Skip(why) => result(step, "Synced", why.message().into()),
        };
        results.push(r);
    }
    // Kinds this sync's CRDs define: their custom resources cannot be dry-run while the CRD
    // is new, so their dry run is skipped (as Argo CD).
    let defined: Vec<plumb_core::GroupKind> = applies
        .iter()
        .filter_map(|(_, obj, _)| plumb_core::GroupKind::defined_by(obj))
        .collect();
    let steps: Vec<(usize, &Step)> = applies.iter().map(|(i, _, s)| (*i, *s)).collect();
    let objects = applies.into_iter().map(|(_, o, s)| (o, s.validate));
    let answers = cluster
        .apply_validating(objects.collect(), FIELD_MANAGER, true, true)
        .await;
    for ((i, step), answer) in steps.into_iter().zip(answers) {
        match answer {
            Err(ClusterError::UnknownKind { .. }) if step.skip_dry_run_on_missing_resource => {
                results[i].message = format!(
                    "{} dry run skipped (SkipDryRunOnMissingResource=true: the cluster does not serve the kind yet)",
                    step.key.kind.to_lowercase()
                );
            }
            Err(ClusterError::UnknownKind { .. })
                if defined
                    .iter()
                    .any(|gk| gk.group == step.key.group && gk.kind == step.key.kind) =>
            {
                results[i].message = format!(
                    "{} dry run skipped (its CustomResourceDefinition is applied by this sync)",
                    step.key.kind.to_lowercase()
                );
            }
            Err(e) => {
                results[i].status = "SyncFailed";
                results[i].message = e.to_string();
            }
            Ok(_) => {}
        }
    }
    let failed = results.iter().any(|r| r.status == "SyncFailed");
    Ok(SyncOutcome {
        phase: if failed { "Failed" } else { "Succeeded" },
        message: if failed {
            "dry run: one or more objects failed to apply".into()
        } else {
            "dry run: nothing was changed".into()
        },
        revision: obs.revision.clone(),
        history_id: None,
        results,
        timings: Timings {
            render: obs.render_time,
            compare: obs.compare_time,
            total: started.elapsed(),
            ..Timings::default()
        },
        status: obs.status,
        trigger: SyncTrigger::Manual,
    })
}
