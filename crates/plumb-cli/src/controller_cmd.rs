//! `plumb controller`: reconciles every plumb Application — refresh, automated sync,
//! self-heal with backoff, retries, resumed operations — with watches (drift is seen within
//! seconds) and a jittered refresh interval ([`plumb_sync::controller`]). Replicas elect a
//! leader with a `coordination.k8s.io` Lease, so two are safe: only the holder reconciles,
//! and a leader that loses its Lease exits. Logs are JSON lines on stderr.
//!
//! `--application-namespaces` widens the namespaces served beyond the control namespace
//! ([`plumb_sync::scope`]).

use crate::EXIT_IN_SYNC;
use crate::cluster_args::{ClusterArgs, Connected, connect};
use anyhow::{Result, anyhow};
use plumb_sync::controller::{Controller, ControllerOptions, Event};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

#[derive(clap::Args)]
pub struct ControllerArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// One pass over every Application, then exit.
    #[arg(long)]
    once: bool,
    /// Seconds between refreshes of an app (Argo CD: 180). Changes to tracked objects
    /// refresh their app within about a second regardless.
    #[arg(long, default_value_t = 180)]
    interval: u64,
    /// Up to this many seconds, at random, are added to each app's refresh interval.
    #[arg(long, default_value_t = 60)]
    jitter: u64,
    /// Applications reconciled at once.
    #[arg(long, default_value_t = 8)]
    workers: usize,
    /// The first non-zero self-heal delay, in seconds (Argo CD's flag of the same name).
    #[arg(long, default_value_t = 2)]
    self_heal_backoff_timeout_seconds: u64,
    /// The multiplier between self-heal delays (0, 2, 6, 18, … with the defaults).
    #[arg(long, default_value_t = 3.0)]
    self_heal_backoff_factor: f64,
    /// The longest self-heal delay, in seconds.
    #[arg(long, default_value_t = 300)]
    self_heal_backoff_cap_seconds: u64,
    /// How long a sync waits for a wave's resources to be healthy (and hooks to complete)
    /// before it fails, in seconds.
    #[arg(long, default_value_t = 600)]
    wave_timeout_seconds: u64,
    /// Only Applications in this namespace.
    #[arg(long = "app-namespace", short = 'N')]
    app_namespace: Option<String>,
    /// Run with namespace-scoped rights (deploy/namespaced/: Roles, no ClusterRole): watch
    /// only the Applications of --app-namespace and read live objects per namespace.
    #[arg(long, requires = "app_namespace")]
    namespaced: bool,
    /// Where AppProjects and cluster Secrets are read from (Argo CD's control namespace);
    /// default: `--app-namespace` when given, else `--lease-namespace`. Applications in
    /// other namespaces need their project's `sourceNamespaces`.
    #[arg(long, value_name = "NAMESPACE")]
    control_namespace: Option<String>,
    /// Namespaces besides the control namespace whose Applications are reconciled (Argo CD's
    /// flag): a comma list of globs and `/regex/`s; default none. Applications elsewhere
    /// are ignored (logged once, their status never written).
    #[arg(long, value_name = "PATTERNS", value_delimiter = ',')]
    application_namespaces: Vec<String>,
    /// The namespace of the leader-election Lease `plumb-controller`.
    #[arg(long, default_value = "plumb-system")]
    lease_namespace: String,
    /// Seconds a leader's Lease stays valid without renewal.
    #[arg(long, default_value_t = 30)]
    lease_duration: u64,
    /// Share the Applications with the other replicas: `auto` (each replica holds a Lease
    /// `plumb-controller-member-<id>` in --lease-namespace, and owns the apps rendezvous
    /// hashing gives it among the live members), or a count M for a static split with
    /// --shard. Leader election stays for the ApplicationSets.
    #[arg(long, value_name = "auto|M")]
    shards: Option<String>,
    /// This replica's shard in a static split (0 to M-1, with --shards M).
    #[arg(long, value_name = "N", requires = "shards")]
    shard: Option<usize>,
    /// This replica's member id with --shards auto (default: $HOSTNAME, a StatefulSet pod's
    /// stable name).
    #[arg(long, value_name = "ID", requires = "shards")]
    shard_id: Option<String>,
    /// Syncs of one revision, each followed by the same fields differing, that make a sync
    /// loop (recorded as the Application's `SyncLoop` condition and `status.syncLoop`);
    /// 0 turns loop recognition off.
    #[arg(long, default_value_t = 3)]
    loop_threshold: u32,
    /// LoopGuard for every app (otherwise only for apps with the sync option
    /// `plumb.dev/LoopGuard=true`): in a recognised loop, self-heal stops re-applying the
    /// looping fields and still heals everything else.
    #[arg(long)]
    loop_guard: bool,
    /// Serve /healthz, /readyz and /metrics (Prometheus) on this address, e.g. 0.0.0.0:8082
    /// (port 0 picks a free port; the address is logged).
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// Serve the read-only web pages of `plumb ui` under `--listen`'s `/ui/`, over this
    /// cluster with the controller's own credentials. An address other than loopback needs
    /// --ui-token-file.
    #[arg(long, requires = "listen")]
    ui: bool,
    /// A file holding the token the pages require (as `plumb ui --token-file`).
    #[arg(long, value_name = "FILE", requires = "ui")]
    ui_token_file: Option<std::path::PathBuf>,
    /// Another name the pages answer to (a `Host` header), e.g. `plumb.example.com`; as
    /// `plumb ui --allowed-host`.
    #[arg(long, value_name = "HOST[:PORT]", requires = "ui")]
    ui_allowed_host: Vec<String>,
    /// Secrets of the push webhooks served at `--listen`'s `/api/webhook`: a YAML or JSON
    /// map, or a Secret manifest (e.g. `argocd-secret`), with Argo CD's keys
    /// `webhook.github.secret`, `webhook.gitlab.secret`, `webhook.bitbucket.uuid`,
    /// `webhook.bitbucketserver.secret`, `webhook.gogs.secret`, and `webhook.gitea.secret`.
    /// A provider without a secret is accepted unauthenticated.
    #[arg(long, value_name = "FILE", requires = "listen")]
    webhook_secret_file: Option<std::path::PathBuf>,
    /// The largest push webhook body accepted, in bytes (larger: 413).
    #[arg(long, value_name = "BYTES", default_value_t = crate::serve::DEFAULT_WEBHOOK_MAX_BYTES)]
    webhook_max_payload_bytes: usize,
    /// Config management plugins: a directory of Argo CD `ConfigManagementPlugin` manifests
    /// (`NAME.yaml`, or `NAME/plugin.yaml`; in deploy/, a ConfigMap mounted there). Read once
    /// at start. Without it an Application whose source has `plugin:` gets a ComparisonError.
    #[arg(long, value_name = "DIR")]
    plugins: Option<std::path::PathBuf>,
    /// kustomize build options, as Argo CD's `kustomize.buildOptions` in argocd-cm: only
    /// `--enable-helm` (a kustomization's `helmCharts`, inflated natively with
    /// the `helm` in the image).
    #[arg(long, value_name = "OPTIONS", allow_hyphen_values = true)]
    kustomize_build_options: Option<String>,
    #[command(flatten)]
    health: crate::health_cmd::HealthScriptArgs,
    /// Namespaces besides the control namespace whose ApplicationSets are served (Argo CD's
    /// `--applicationset-namespaces`): a comma list of globs and `/regex/`s; default none. Their
    /// Applications are generated in their own namespace, which `--application-namespaces` must
    /// serve, and their project must list it in `sourceNamespaces`.
    #[arg(long, value_name = "PATTERNS", value_delimiter = ',')]
    applicationset_namespaces: Vec<String>,
    /// URL prefixes the ApplicationSet generators that call services (`pullRequest`,
    /// `scmProvider`, `plugin`) may send requests to, a comma list (Argo CD's
    /// `--allowed-scm-providers`); default: any. A request elsewhere is the ApplicationSet's
    /// error.
    #[arg(long, value_name = "URLS", value_delimiter = ',')]
    applicationset_allowed_scm_providers: Vec<String>,
    /// Seconds between two generations of an ApplicationSet whose generators name no
    /// `requeueAfterSeconds` (Argo CD: 180).
    #[arg(long, value_name = "SECONDS", default_value_t = 180)]
    applicationset_requeue: u64,
    /// The most an ApplicationSet may do to its Applications (Argo CD's `--policy`):
    /// `sync` (create, update, delete), `create-update`, `create-delete`, `create-only`; an
    /// ApplicationSet's own `syncPolicy.applicationsSync` may only be stricter.
    #[arg(long, value_name = "POLICY", default_value = "sync",
          value_parser = ["sync", "create-update", "create-delete", "create-only"])]
    applicationset_policy: String,
}

/// The names Argo CD's install gives its application controller (a StatefulSet; a
/// Deployment with dynamic cluster distribution).
const ARGOCD_CONTROLLER: &str = "argocd-application-controller";

/// Argo CD's ApplicationSet controller (a Deployment).
const ARGOCD_APPSET_CONTROLLER: &str = "argocd-applicationset-controller";

/// An Argo CD application controller deployed in `namespace` (replicas above zero), named:
/// two controllers writing the same Applications would fight over every status.
async fn argocd_controller_in(
    cluster: &plumb_cluster::Cluster,
    namespace: &str,
) -> Result<Option<String>> {
    argocd_workload_in(cluster, namespace, ARGOCD_CONTROLLER).await
}

/// The workload `name` (a StatefulSet or Deployment) in `namespace` when it runs (replicas
/// above zero), named.
async fn argocd_workload_in(
    cluster: &plumb_cluster::Cluster,
    namespace: &str,
    name: &str,
) -> Result<Option<String>> {
    for kind in ["StatefulSet", "Deployment"] {
        let found = cluster
            .get_object("apps", kind, namespace, name)
            .await
            .map_err(|e| anyhow!("looking for Argo CD's {name}: {e}"))?;
        if let Some(w) = found {
            // Kubernetes defaults replicas to 1.
            let replicas = w
                .pointer("/spec/replicas")
                .and_then(serde_json::Value::as_i64);
            if replicas.unwrap_or(1) > 0 {
                return Ok(Some(format!(
                    "{kind} {namespace}/{name} ({} replicas)",
                    replicas.unwrap_or(1)
                )));
            }
        }
    }
    Ok(None)
}

const LEASE: &str = "plumb-controller";

/// Who holds the Lease after an attempt to take or renew it.
enum Leadership {
    Leader,
    Follower(String),
}

fn micro_time(t: SystemTime) -> String {
    let s = plumb_sync::time::format_rfc3339(t);
    match s.strip_suffix('Z') {
        Some(base) if !base.contains('.') => format!("{base}.000000Z"),
        _ => s,
    }
}

/// Takes the Lease when it is free, expired or already ours (renewing it); optimistic
/// concurrency (the Lease's resourceVersion) makes two replicas agree on one winner.
async fn elect(
    cluster: &plumb_cluster::Cluster,
    ns: &str,
    me: &str,
    duration: u64,
    now: SystemTime,
) -> Result<Leadership> {
    let stamp = micro_time(now);
    let lease = cluster
        .get_object("coordination.k8s.io", "Lease", ns, LEASE)
        .await
        .map_err(|e| anyhow!("{e}"))?;
    let Some(mut lease) = lease else {
        let fresh = serde_json::json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": LEASE, "namespace": ns},
            "spec": {"holderIdentity": me, "leaseDurationSeconds": duration,
                "acquireTime": stamp, "renewTime": stamp, "leaseTransitions": 0}});
        return Ok(match cluster.create_object(&fresh, "plumb").await {
            Ok(_) => Leadership::Leader,
            Err(plumb_cluster::ClusterError::Api { code: 409, .. }) => {
                Leadership::Follower("another replica".into())
            }
            Err(e) => return Err(anyhow!("{e}")),
        });
    };
    let spec = &lease["spec"];
    let holder = spec["holderIdentity"].as_str().unwrap_or("").to_string();
    let valid_for = spec["leaseDurationSeconds"].as_u64().unwrap_or(duration);
    let renewed = spec["renewTime"]
        .as_str()
        .and_then(|t| plumb_sync::time::parse_rfc3339(t).ok());
    let expired = renewed.is_none_or(|r| r + Duration::from_secs(valid_for) < now);
    if holder != me && !holder.is_empty() && !expired {
        return Ok(Leadership::Follower(holder));
    }
    if holder != me {
        let transitions = spec["leaseTransitions"].as_u64().unwrap_or(0) + 1;
        lease["spec"]["leaseTransitions"] = transitions.into();
        lease["spec"]["acquireTime"] = stamp.clone().into();
    }
    lease["spec"]["holderIdentity"] = me.into();
    lease["spec"]["leaseDurationSeconds"] = duration.into();
    lease["spec"]["renewTime"] = stamp.into();
    Ok(match cluster.replace_object(&lease, "plumb").await {
        Ok(_) => Leadership::Leader,
        Err(plumb_cluster::ClusterError::Api { code: 409, .. }) => {
            Leadership::Follower("another replica".into())
        }
        Err(e) => return Err(anyhow!("{e}")),
    })
}

/// Gives the Lease up (on exit), so another replica takes over at once.
async fn release(cluster: &plumb_cluster::Cluster, ns: &str, me: &str) {
    if let Ok(Some(mut lease)) = cluster
        .get_object("coordination.k8s.io", "Lease", ns, LEASE)
        .await
        && lease["spec"]["holderIdentity"] == me
    {
        lease["spec"]["holderIdentity"] = "".into();
        let _ = cluster.replace_object(&lease, "plumb").await;
    }
}

fn log_line(v: serde_json::Value) {
    eprintln!("{v}");
}

fn log_event(e: Event<'_>) {
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    match e {
        Event::Reconciled {
            app,
            outcome,
            took,
            trigger,
        } => {
            let mut line = json!({
                "app": format!("{}/{}", app.0, app.1),
                "trigger": trigger.as_str(),
                "sync": format!("{:?}", outcome.status.sync),
                "health": outcome.status.health.to_string(),
                "revision": outcome.status.revision_label,
                "synced": outcome.sync.is_some(),
                "resumed": outcome.resumed,
                "operation": outcome.sync.as_ref().map(|s| s.phase),
                "syncTrigger": outcome.sync.as_ref().map(|s| s.trigger.as_str()),
                "deletion": outcome.deletion.as_ref().map(|d| d.message.as_str()),
                "ms": ms(took),
            });
            // An automated sync a sync window holds back: which window.
            if let (Some(blocked), Some(m)) = (&outcome.blocked_by, line.as_object_mut()) {
                m.insert("blocked".into(), json!(blocked));
            }
            log_line(line)
        }
        Event::Failed {
            app,
            error,
            trigger,
        } => log_line(json!({
            "app": format!("{}/{}", app.0, app.1),
            "trigger": trigger.as_str(),
            "error": error.to_string(),
        })),
        Event::Lagged { missed } => log_line(json!({"watch": "lagged", "missed": missed})),
        Event::Removed { app } => {
            log_line(json!({"app": format!("{}/{}", app.0, app.1), "removed": true}))
        }
        Event::Ignored { app } => log_line(json!({
            "app": format!("{}/{}", app.0, app.1),
            "ignored": "its namespace is neither the control namespace nor in --application-namespaces",
        })),
        Event::DestinationDropped { secret } => log_line(json!({
            "destination": secret,
            "dropped": "no app used it in two refresh intervals",
        })),
        Event::Shard {
            members,
            owned,
            reassigned,
        } => log_line(json!({"members": members, "owned": owned, "reassigned": reassigned})),
        Event::Stale { apps: [] } => {}
        Event::Stale { apps } => log_line(json!({
            "stale": apps.iter().map(|(ns, n)| format!("{ns}/{n}")).collect::<Vec<_>>(),
            "reason": "not reconciled in two refresh intervals",
        })),
    }
}

/// The webhook secrets of `--webhook-secret-file` (none without it). Errors name the file
/// and key, never a value.
fn webhook_secrets(path: Option<&std::path::Path>) -> Result<plumb_sync::webhook::Secrets> {
    let Some(path) = path else {
        return Ok(plumb_sync::webhook::Secrets::default());
    };
    let shown = path.display();
    let meta =
        std::fs::metadata(path).map_err(|e| anyhow!("--webhook-secret-file {shown}: {e}"))?;
    if meta.len() > 1 << 20 {
        return Err(anyhow!(
            "--webhook-secret-file {shown}: larger than 1 MiB; expected a map of webhook secrets"
        ));
    }
    let text =
        std::fs::read_to_string(path).map_err(|e| anyhow!("--webhook-secret-file {shown}: {e}"))?;
    // The parser's message may quote the file: a secret. Only say what was expected.
    let doc: serde_json::Value = serde_saphyr::from_str(&text).map_err(|_| {
        anyhow!("--webhook-secret-file {shown}: not a YAML or JSON map of webhook secrets")
    })?;
    let secrets = plumb_sync::webhook::Secrets::from_document(&doc)
        .map_err(|e| anyhow!("--webhook-secret-file {shown}: {e}"))?;
    log_line(json!({"webhookSecrets": secrets.configured()}));
    Ok(secrets)
}

/// `--shards`/`--shard`/`--shard-id` as the controller's sharding (`None`: not sharded).
fn sharding(args: &ControllerArgs) -> Result<Option<plumb_sync::shard::Sharding>> {
    use plumb_sync::shard::Sharding;
    let Some(shards) = &args.shards else {
        return Ok(None);
    };
    if args.cluster.api_group == plumb_core::ARGO_GROUP {
        return Err(anyhow!(
            "--shards with --api-group argoproj.io: Argo CD's Application schema drops status.controller, the record that fences an app's owner; shard plumb.dev Applications, or scale Argo CD's controller instead"
        ));
    }
    if shards == "auto" {
        if let Some(n) = args.shard {
            return Err(anyhow!(
                "--shard {n} is a static split's (--shards M); --shards auto finds the members by their Leases"
            ));
        }
        let id = args
            .shard_id
            .clone()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .filter(|i| !i.is_empty())
            .ok_or_else(|| {
                anyhow!("--shards auto: no member id; pass --shard-id ID (a StatefulSet pod's $HOSTNAME is one)")
            })?;
        let valid = id.len() <= 63
            && id
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
            && !id.starts_with(['-', '.'])
            && !id.ends_with(['-', '.']);
        if !valid {
            return Err(anyhow!(
                "--shard-id {id:?}: a member id names a Lease: lowercase letters, digits, '-' and '.', at most 63"
            ));
        }
        return Ok(Some(Sharding::Auto { me: id }));
    }
    let count: usize = shards.parse().ok().filter(|&c| c > 0).ok_or_else(|| {
        anyhow!("--shards {shards:?}: expected auto or a count of shards (1 or more)")
    })?;
    let index = args
        .shard
        .ok_or_else(|| anyhow!("--shards {count}: pass --shard N (0 to {})", count - 1))?;
    if index >= count {
        return Err(anyhow!(
            "--shard {index}: out of range for --shards {count} (0 to {})",
            count - 1
        ));
    }
    Ok(Some(Sharding::Static { index, count }))
}

/// Takes or renews this member's Lease `plumb-controller-member-<me>` (it is this replica's
/// alone); a refusal names the permission missing.
async fn renew_member(
    cluster: &plumb_cluster::Cluster,
    ns: &str,
    me: &str,
    duration: u64,
    holder: &str,
) -> Result<()> {
    let name = format!("{}{me}", plumb_sync::shard::MEMBER_LEASE_PREFIX);
    let stamp = micro_time(SystemTime::now());
    let denied = |verb: &str, e: &plumb_cluster::ClusterError| {
        anyhow!(
            "--shards auto: cannot {verb} Lease {ns}/{name}: {e} ({})",
            lease_rights(ns)
        )
    };
    let lease = cluster
        .get_object("coordination.k8s.io", "Lease", ns, &name)
        .await
        .map_err(|e| denied("get", &e))?;
    match lease {
        None => {
            let fresh = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"holderIdentity": holder, "leaseDurationSeconds": duration,
                    "acquireTime": stamp, "renewTime": stamp}});
            cluster
                .create_object(&fresh, "plumb")
                .await
                .map_err(|e| denied("create", &e))?;
        }
        Some(mut lease) => {
            lease["spec"]["holderIdentity"] = holder.into();
            lease["spec"]["leaseDurationSeconds"] = duration.into();
            lease["spec"]["renewTime"] = stamp.into();
            cluster
                .replace_object(&lease, "plumb")
                .await
                .map_err(|e| denied("update", &e))?;
        }
    }
    Ok(())
}

/// What a sharded replica's role needs, for the error that says it lacks it.
fn lease_rights(ns: &str) -> String {
    format!(
        "the controller's role needs get, list, create and update on leases.coordination.k8s.io in {ns}: deploy/sharded/"
    )
}

/// The live members, from the Leases of the lease namespace.
async fn members(cluster: &plumb_cluster::Cluster, ns: &str) -> Result<Vec<String>> {
    let kind = plumb_core::GroupKind {
        group: "coordination.k8s.io".into(),
        kind: "Lease".into(),
    };
    let leases = cluster
        .list_live(&[kind], Some(&[ns.to_string()]), None)
        .await
        .map_err(|e| {
            anyhow!(
                "--shards auto: cannot list Leases in {ns}: {e} ({})",
                lease_rights(ns)
            )
        })?;
    Ok(plumb_sync::shard::live_members(&leases, SystemTime::now()))
}

/// The ApplicationSet controller while this replica leads (`leading`), until `stop`: started
/// when it comes to lead, stopped when it stops leading, started again if it leads again.
/// Pushes from the webhook are passed on to the one running.
async fn serve_appsets(
    cluster: Arc<plumb_cluster::Cluster>,
    cache: plumb_cluster::LiveCache,
    opts: plumb_sync::controller::appsets::AppSetOptions,
    mut pushed: tokio::sync::mpsc::UnboundedReceiver<Vec<plumb_sync::controller::appsets::Key>>,
    mut leading: tokio::sync::watch::Receiver<bool>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        while !*leading.borrow_and_update() {
            tokio::select! {
                r = leading.changed() => if r.is_err() { return },
                _ = stop.changed() => if *stop.borrow() { return },
            }
        }
        let sets = plumb_sync::controller::appsets::AppSets::new(
            cluster.clone(),
            cache.clone(),
            opts.clone(),
        );
        let (forward, forwarded) = tokio::sync::mpsc::unbounded_channel();
        let (end, ended) = tokio::sync::watch::channel(false);
        let run = sets.run(Arc::new(log_line), forwarded, ended);
        tokio::pin!(run);
        loop {
            tokio::select! {
                _ = &mut run => return,
                Some(keys) = pushed.recv() => { let _ = forward.send(keys); }
                r = leading.changed() => {
                    if r.is_err() || !*leading.borrow() {
                        let _ = end.send(true);
                        (&mut run).await;
                        break;
                    }
                }
                _ = stop.changed() => {
                    if *stop.borrow() {
                        let _ = end.send(true);
                        (&mut run).await;
                        return;
                    }
                }
            }
        }
    }
}

pub fn run(mut args: ControllerArgs) -> Result<u8> {
    let application_namespaces = plumb_core::glob::NamespaceList::new(&args.application_namespaces)
        .map_err(|e| anyhow!("--application-namespaces: {e}"))?;
    plumb_core::glob::NamespaceList::new(&args.applicationset_namespaces)
        .map_err(|e| anyhow!("--applicationset-namespaces: {e}"))?;
    let kustomize_build_options = match &args.kustomize_build_options {
        Some(text) => plumb_render::render::kustomize_build_options(text)
            .map_err(|e| anyhow!("--kustomize-build-options: {e}"))?,
        None => Vec::new(),
    };
    // Bad plugin manifests stop the controller before it connects, naming the file.
    if let Some(dir) = &args.plugins {
        plumb_render::plugin::Plugins::load(dir).map_err(|e| anyhow!("--plugins: {e}"))?;
    }
    let sharding = sharding(&args)?;
    // In a pod there is no kubeconfig: the in-cluster configuration applies.
    args.cluster.cluster = true;
    let Connected { rt, cluster } = connect(&args.cluster)?;
    let cluster = Arc::new(cluster);
    rt.block_on(run_async(
        args,
        cluster,
        application_namespaces,
        kustomize_build_options,
        sharding,
    ))
}

async fn run_async(
    args: ControllerArgs,
    cluster: Arc<plumb_cluster::Cluster>,
    application_namespaces: plumb_core::glob::NamespaceList,
    kustomize_build_options: Vec<String>,
    sharding: Option<plumb_sync::shard::Sharding>,
) -> Result<u8> {
    let me = format!(
        "{}-{}",
        std::env::var("HOSTNAME").unwrap_or_else(|_| "plumb".into()),
        std::process::id()
    );
    let scripts = args.health.load_dir()?;
    args.health.install(&cluster, scripts).await?;
    let control = args
        .control_namespace
        .clone()
        .or_else(|| args.app_namespace.clone())
        .unwrap_or_else(|| match cluster.app_group() {
            plumb_core::ARGO_GROUP => plumb_core::ARGOCD_NAMESPACE.to_string(),
            _ => args.lease_namespace.clone(),
        });
    if cluster.app_group() == plumb_core::ARGO_GROUP
        && let Some(found) = argocd_controller_in(&cluster, &control).await?
    {
        return Err(anyhow!(
            "--api-group argoproj.io: Argo CD's application controller is deployed in {control} ({found}); two controllers would fight over the same Applications. Scale it to zero first (kubectl -n {control} scale statefulset {ARGOCD_CONTROLLER} --replicas=0)"
        ));
    }
    let renew_every = Duration::from_secs((args.lease_duration / 3).max(1));
    let metrics = Arc::new(crate::serve::Metrics::default());
    let webhook = Arc::new(crate::serve::Webhook::new(
        webhook_secrets(args.webhook_secret_file.as_deref())?,
        args.webhook_max_payload_bytes.max(1),
    ));
    if let Some(addr) = &args.listen {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| anyhow!("--listen {addr}: {e}"))?;
        let bound = listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| addr.clone());
        log_line(json!({"listening": bound}));
        let ui = if args.ui {
            let addr = listener.local_addr()?;
            let access = crate::ui_cmd::access(
                addr,
                "--listen",
                "--ui-token-file",
                args.ui_token_file.as_deref(),
                &args.ui_allowed_host,
            )?;
            log_line(json!({"ui": format!("http://{addr}/ui/")}));
            Some(plumb_web::server::router_at(
                crate::ui_cmd::cluster_backend(&args.cluster),
                access,
                "/ui",
            ))
        } else {
            None
        };
        tokio::spawn(crate::serve::serve_with_webhook(
            listener,
            metrics.clone(),
            webhook.clone(),
            ui,
        ));
    }
    let events: Arc<dyn Fn(Event<'_>) + Send + Sync> = {
        let metrics = metrics.clone();
        Arc::new(move |e: Event<'_>| {
            metrics.record(&e);
            log_event(e);
        })
    };
    // Sharded: this replica's view of the members and its fence. A member Lease is taken
    // before anything else (a missing permission is named now, not at the first renewal).
    let shard = sharding.map(plumb_sync::controller::shard::ShardView::new);
    let fence = shard
        .as_ref()
        .map(|v| plumb_sync::controller::shard::Fence::new(v.me().to_string()));
    // Acting stops this long after the last renewal: before the Lease could expire.
    let renew_deadline = Duration::from_secs((args.lease_duration * 2 / 3).max(1));
    if let (Some(view), Some(fence)) = (&shard, &fence) {
        if view.is_static() {
            fence.always();
        } else {
            let t0 = std::time::Instant::now();
            renew_member(
                &cluster,
                &args.lease_namespace,
                &fence.me,
                args.lease_duration,
                &fence.me,
            )
            .await?;
            fence.renewed(t0, renew_deadline);
            view.set_members(members(&cluster, &args.lease_namespace).await?);
        }
        metrics.set_shard(view.me());
        log_line(json!({"shard": view.me(), "members": view.members()}));
    }
    // Wait to lead (a follower with --once reports and exits). Sharded replicas do not wait:
    // each reconciles its own apps, and the leader alone serves the ApplicationSets.
    while shard.is_none() {
        match elect(
            &cluster,
            &args.lease_namespace,
            &me,
            args.lease_duration,
            SystemTime::now(),
        )
        .await?
        {
            Leadership::Leader => break,
            Leadership::Follower(holder) => {
                metrics.set_ready(false);
                log_line(json!({"leader": holder, "me": me, "reconciling": false}));
                if args.once {
                    return Ok(EXIT_IN_SYNC);
                }
                tokio::time::sleep(renew_every).await;
            }
        }
    }
    // Kubernetes Events on the Applications (written in the background, deduplicated).
    let recorder = plumb_cluster::Recorder::start(&cluster, &me);
    let run = plumb_sync::run::RunOptions {
        events: Some(plumb_sync::run::EventsHandle(Arc::new(recorder.clone()))),
        self_heal_backoff: plumb_sync::SelfHealBackoff {
            base: Duration::from_secs(args.self_heal_backoff_timeout_seconds),
            factor: args.self_heal_backoff_factor.max(0.0),
            cap: Duration::from_secs(args.self_heal_backoff_cap_seconds),
        },
        wave_timeout: Duration::from_secs(args.wave_timeout_seconds.max(1)),
        plugins: match &args.plugins {
            Some(dir) => Some(Arc::new(
                plumb_render::plugin::Plugins::load(dir).map_err(|e| anyhow!("--plugins: {e}"))?,
            )),
            None => None,
        },
        control_namespace: Some(control),
        kustomize_build_options,
        fence: fence.clone(),
        ..plumb_sync::run::RunOptions::default()
    };
    let opts = ControllerOptions {
        run,
        refresh: Duration::from_secs(args.interval.max(1)),
        jitter: Duration::from_secs(args.jitter),
        workers: args.workers.max(1),
        app_namespace: args.app_namespace.clone(),
        namespaced: args.namespaced,
        application_namespaces,
        loops: plumb_sync::loops::LoopOptions {
            threshold: args.loop_threshold,
            guard_all: args.loop_guard,
            ..plumb_sync::loops::LoopOptions::default()
        },
        shard: shard.clone(),
        ..ControllerOptions::default()
    };
    let opts_control = opts.run.control_namespace.clone();
    let appset_opts = plumb_sync::controller::appsets::AppSetOptions {
        control_namespace: opts_control.clone().unwrap_or_default(),
        scope: plumb_sync::scope::AppScope {
            others: plumb_core::glob::NamespaceList::new(&args.applicationset_namespaces)
                .map_err(|e| anyhow!("--applicationset-namespaces: {e}"))?,
            ..opts.scope()
        },
        requeue: Duration::from_secs(args.applicationset_requeue.max(1)),
        policy: plumb_appset::reconcile::ApplicationsSync::parse(&args.applicationset_policy),
        repos: opts.run.repos.clone(),
        repo_override: opts.run.repo_override.clone(),
        allowed_urls: (!args.applicationset_allowed_scm_providers.is_empty())
            .then(|| args.applicationset_allowed_scm_providers.clone()),
    };
    let started = std::time::Instant::now();
    let controller = Controller::start(cluster.clone(), opts)
        .await
        .map_err(|e| match e {
            // Cluster-wide watches need a ClusterRole (deploy/rbac.yaml).
            plumb_cluster::ClusterError::Forbidden { .. } if !args.namespaced => anyhow!(
                "{e} (with namespace-scoped rights only, run with --namespaced \
                 --app-namespace NAMESPACE: deploy/namespaced/)"
            ),
            e => anyhow!("{e}"),
        })?;
    metrics.set_cache(controller.cache().kinds().len(), controller.cache().len());
    let (appset_push, appset_pushed) = tokio::sync::mpsc::unbounded_channel();
    webhook.attach(controller.push_refresher().with_appsets(appset_push));
    // Sharded, this replica leads only once it wins the leader Lease (below).
    metrics.set_ready(shard.is_none());
    log_line(json!({
        "leader": me,
        "reconciling": true,
        "apiGroup": cluster.app_group(),
        "watching": controller.cache().kinds().len(),
        "cached": controller.cache().len(),
        "namespaces": {
            "control": opts_control,
            "applicationNamespaces": args.application_namespaces,
        },
        "ms": u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    }));

    if args.once {
        controller.pass(events.clone()).await;
        recorder.flush(Duration::from_secs(10)).await;
        controller.stop();
        release(&cluster, &args.lease_namespace, &me).await;
        return Ok(EXIT_IN_SYNC);
    }

    // Keep the Lease while running; stop on losing it or on SIGTERM / Ctrl-C.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let lost = Arc::new(std::sync::Mutex::new(None::<String>));
    // Leading: the ApplicationSets are served by the leader alone (sharded or not). An
    // unsharded leader that loses its Lease stops; a sharded replica only stops serving the
    // ApplicationSets (its apps are its shard's) and may lead again later.
    let (lead_tx, lead_rx) = tokio::sync::watch::channel(shard.is_none());
    let renewal = {
        let (cluster, ns, me, lost) = (
            cluster.clone(),
            args.lease_namespace.clone(),
            me.clone(),
            lost.clone(),
        );
        let duration = args.lease_duration;
        let stop_tx = stop_tx.clone();
        let metrics = metrics.clone();
        let sharded = shard.is_some();
        tokio::spawn(async move {
            let mut leading = !sharded;
            loop {
                if leading {
                    tokio::time::sleep(renew_every).await;
                }
                match elect(&cluster, &ns, &me, duration, SystemTime::now()).await {
                    Ok(Leadership::Leader) if !leading => {
                        leading = true;
                        metrics.set_ready(true);
                        log_line(json!({"leader": me, "applicationSets": true}));
                        let _ = lead_tx.send(true);
                    }
                    Ok(Leadership::Follower(holder)) if leading && sharded => {
                        leading = false;
                        metrics.set_ready(false);
                        log_line(json!({"leader": holder, "me": me, "applicationSets": false}));
                        let _ = lead_tx.send(false);
                    }
                    Ok(Leadership::Follower(holder)) if leading => {
                        if let Ok(mut l) = lost.lock() {
                            *l = Some(holder);
                        }
                        let _ = stop_tx.send(true);
                        return;
                    }
                    _ => {}
                }
                if !leading {
                    tokio::time::sleep(renew_every).await;
                }
            }
        })
    };
    // Sharded by Lease: the member Lease renewed, the members read, every third of its
    // duration; acting stops at the renew deadline after the last renewal that succeeded. On a
    // thread and a connection of its own, so that reconciles keeping the runtime busy never
    // delay a renewal.
    let leaving = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let membership = match (&shard, &fence) {
        (Some(view), Some(fence)) if !view.is_static() => {
            let (ns, view, fence, leaving) = (
                args.lease_namespace.clone(),
                view.clone(),
                fence.clone(),
                leaving.clone(),
            );
            // The controller's own connection settings (`run` set `cluster`).
            let own_args = args.cluster.clone();
            let duration = args.lease_duration;
            Some(std::thread::spawn(move || {
                let own = match connect(&own_args) {
                    Ok(c) => c,
                    Err(e) => {
                        // Without renewals the fence lapses: this replica stops acting.
                        log_line(json!({"shard": fence.me, "renew": e.to_string()}));
                        return;
                    }
                };
                let Connected { rt, cluster: own } = own;
                rt.block_on(async move {
                    while !leaving.load(std::sync::atomic::Ordering::Relaxed) {
                        tokio::time::sleep(renew_every).await;
                        if leaving.load(std::sync::atomic::Ordering::Relaxed) {
                            return;
                        }
                        let t0 = std::time::Instant::now();
                        let lapsed = !fence.acting();
                        let renewed = renew_member(&own, &ns, &fence.me, duration, &fence.me).await;
                        match &renewed {
                            Ok(()) => fence.renewed(t0, renew_deadline),
                            Err(e) => log_line(json!({"shard": fence.me, "renew": e.to_string()})),
                        }
                        match members(&own, &ns).await {
                            // Back after a lapse: every app is looked at again, its own
                            // claimed back.
                            Ok(m) => {
                                if !view.set_members(m) && lapsed && renewed.is_ok() {
                                    log_line(json!({"shard": fence.me, "rejoined": true}));
                                    view.rejoined();
                                }
                            }
                            Err(e) => {
                                log_line(json!({"shard": fence.me, "members": e.to_string()}))
                            }
                        }
                    }
                })
            }))
        }
        _ => None,
    };
    let signals = tokio::spawn(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending::<()>().await } } => {}
        }
        let _ = stop_tx.send(true);
    });
    // ApplicationSets, beside the Applications, on the same watch cache — unless Argo CD's
    // ApplicationSet controller still runs (it keeps them; two would fight).
    let argo_appsets = if cluster.app_group() == plumb_core::ARGO_GROUP {
        argocd_workload_in(
            &cluster,
            &appset_opts.control_namespace,
            ARGOCD_APPSET_CONTROLLER,
        )
        .await?
    } else {
        None
    };
    let appsets = match argo_appsets {
        Some(found) => {
            log_line(json!({"applicationSets": "not served", "reason": format!(
                "Argo CD's ApplicationSet controller runs ({found}); scale it to zero for plumb to serve them")}));
            tokio::spawn(async {})
        }
        None => tokio::spawn(serve_appsets(
            cluster.clone(),
            controller.cache().clone(),
            appset_opts,
            appset_pushed,
            lead_rx,
            stop_rx.clone(),
        )),
    };
    controller.run(events.clone(), stop_rx).await;
    appsets.abort();
    renewal.abort();
    signals.abort();
    leaving.store(true, std::sync::atomic::Ordering::Relaxed);
    if let Some(m) = membership {
        let _ = tokio::task::spawn_blocking(move || m.join()).await;
    }
    // A member leaving hands its apps over at once (its Lease released), not after expiry.
    if let (Some(view), Some(fence)) = (&shard, &fence)
        && !view.is_static()
    {
        let _ = renew_member(
            &cluster,
            &args.lease_namespace,
            &fence.me,
            args.lease_duration,
            "",
        )
        .await;
    }
    // The last operation's Events (its OperationCompleted) are written before exiting,
    // within a deadline well inside Kubernetes' 30 s grace period.
    recorder.flush(Duration::from_secs(5)).await;
    controller.stop();
    let lost = lost.lock().ok().and_then(|l| l.clone());
    match lost {
        Some(holder) => Err(anyhow!(
            "lost the leader Lease {}/{LEASE} to {holder}; exiting so that only one replica reconciles",
            args.lease_namespace
        )),
        None => {
            release(&cluster, &args.lease_namespace, &me).await;
            log_line(json!({"leader": me, "reconciling": false, "stopped": true}));
            Ok(EXIT_IN_SYNC)
        }
    }
}
