//! The ApplicationSet controller: keeps the Applications each ApplicationSet generates.
//!
//! For every ApplicationSet of a served namespace (the same namespaces as Applications,
//! [`crate::scope::AppScope`]) it generates the Applications ([`plumb_appset::generate`]: git
//! generators through the repository cache, the clusters generator from the cluster Secrets
//! of the control namespace), plans what to create, update and delete
//! ([`plumb_appset::reconcile::plan`], which also honours `syncPolicy.applicationsSync`,
//! `preserveResourcesOnDeletion` and `ignoreApplicationDifferences`), writes it (field manager
//! `plumb-applicationset`; an update carries the stored `resourceVersion`, so a write made in
//! between makes it fail and the next pass does it again) and writes the ApplicationSet's
//! status (its conditions and `resources`; only when it changed).
//!
//! When: at once when an ApplicationSet is created or its spec changes (its
//! `metadata.generation`; status writes do not count), every requeue interval (the smallest
//! `requeueAfterSeconds` of its generators, else [`AppSetOptions::requeue`]), and, without
//! generating again, when one of its Applications changes or goes (so `status.resources`
//! follows their sync and health, and an Application deleted by hand comes back). A deleted
//! ApplicationSet's Applications go with it through their owner references (the garbage
//! collector). An error (an invalid spec, a template, an unreachable repository) is written as
//! the `ErrorOccurred` condition and changes no Application.
//!
//! A git push webhook naming the repository of one of its git generators regenerates it at
//! once ([`super::PushRefresher::with_appsets`]).
//!
//! An ApplicationSet outside the control namespace may not template `project` (Argo CD's rule;
//! an `ErrorOccurred` condition).
//!
//! Progressive sync (`strategy.type: RollingSync`, [`plumb_appset::progressive`]): the
//! generated Applications lose automated sync, and each reconcile starts the syncs its steps
//! allow (an `operation` on the Application, which the Application controller runs) and writes
//! `status.applicationStatus`; an Application's change reconciles its ApplicationSet, so the
//! next step starts as soon as the previous one is healthy.

use crate::scope::AppScope;
use plumb_appset::progressive;
use plumb_appset::reconcile::{self, ApplicationsSync, Policy};
use plumb_appset::{Cluster as GenCluster, Inputs, Repos};
use plumb_cluster::{Cluster, LiveCache, Propagation};
use plumb_core::argo::AppSource;
use plumb_core::{GroupKind, ResourceKey};
use plumb_render::fetch::{Overrides, fetch, locate};
use plumb_render::remote::RepoCache;
use plumb_render::source::{EntryKind, SourceFs};
use serde_json::{Value, json};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, watch};

/// The kind served.
pub const APPLICATIONSET_KIND: &str = "ApplicationSet";

/// The field manager of the ApplicationSet controller's writes.
pub const FIELD_MANAGER: &str = "plumb-applicationset";

/// How the ApplicationSet controller runs.
#[derive(Clone)]
pub struct AppSetOptions {
    /// Where cluster Secrets are read (the control namespace).
    pub control_namespace: String,
    /// Which namespaces' ApplicationSets are served.
    pub scope: AppScope,
    /// How often an ApplicationSet is generated again when its generators name no
    /// `requeueAfterSeconds` (Argo CD: 180 s).
    pub requeue: Duration,
    /// `--applicationset-policy`: the most an ApplicationSet may do (its own
    /// `applicationsSync` may only be stricter).
    pub policy: Option<ApplicationsSync>,
    /// Where remote repositories are mirrored.
    pub repos: Arc<RepoCache>,
    /// `--repo`: every `repoURL` served from this directory (tests, local runs).
    pub repo_override: Option<PathBuf>,
    /// `--applicationset-allowed-scm-providers`: the URL prefixes the service generators may
    /// send requests to (None: any).
    pub allowed_urls: Option<Vec<String>>,
}

/// One ApplicationSet: namespace and name.
pub type Key = (String, String);

/// A git repository at a revision, opened once per generation (blocking; used on a
/// blocking thread). Also what `plumb appset generate` reads repositories with.
pub struct FetchRepos {
    overrides: Overrides,
    base: Option<PathBuf>,
    cache: Arc<RepoCache>,
    opened: RefCell<HashMap<(String, String), std::rc::Rc<dyn SourceFs>>>,
    /// Each repository's file list at a revision, walked once (a matrix runs its second git
    /// generator once per parameter set of the first).
    listed: RefCell<HashMap<(String, String), Vec<String>>>,
}

impl FetchRepos {
    /// Repositories located as the pipeline locates sources (`repo`: every `repoURL` from
    /// this directory; `base`: where relative local paths start), fetched through `cache`.
    pub fn new(repo: Option<PathBuf>, base: Option<PathBuf>, cache: Arc<RepoCache>) -> Self {
        FetchRepos {
            overrides: Overrides {
                repo,
                ..Overrides::default()
            },
            base,
            cache,
            opened: RefCell::new(HashMap::new()),
            listed: RefCell::new(HashMap::new()),
        }
    }

    fn open(&self, repo_url: &str, revision: &str) -> Result<std::rc::Rc<dyn SourceFs>, String> {
        let key = (repo_url.to_string(), revision.to_string());
        if let Some(fs) = self.opened.borrow().get(&key) {
            return Ok(fs.clone());
        }
        let source = AppSource {
            repo_url: repo_url.to_string(),
            target_revision: revision.to_string(),
            ..AppSource::default()
        };
        let at =
            locate(&source, &self.overrides, self.base.as_deref()).map_err(|e| e.to_string())?;
        let fetched = fetch(&at, &self.cache).map_err(|e| e.to_string())?;
        let fs: std::rc::Rc<dyn SourceFs> = std::rc::Rc::from(fetched.fs);
        self.opened.borrow_mut().insert(key, fs.clone());
        Ok(fs)
    }
}

impl Repos for FetchRepos {
    fn files(&self, repo_url: &str, revision: &str) -> Result<Vec<String>, String> {
        let key = (repo_url.to_string(), revision.to_string());
        if let Some(files) = self.listed.borrow().get(&key) {
            return Ok(files.clone());
        }
        let fs = self.open(repo_url, revision)?;
        // The source walk every renderer uses: symlink cycles end, the walk is bounded.
        let mut out = Vec::new();
        plumb_render::render::walk_tree(fs.as_ref(), &[String::new()], &mut |rel, kind| {
            if kind == EntryKind::File {
                out.push(rel.to_string());
            }
            Ok(())
        })
        .map_err(|e| e.to_string())?;
        out.sort();
        self.listed.borrow_mut().insert(key, out.clone());
        Ok(out)
    }

    fn read(&self, repo_url: &str, revision: &str, path: &str) -> Result<Vec<u8>, String> {
        self.open(repo_url, revision)?
            .read(path)
            .map_err(|e| e.to_string())
    }
}

/// What the service-reading generators read ([`plumb_appset::services::Services`]): objects
/// given as manifests first (`plumb appset generate --objects`), else the cluster's namespace
/// given (the ApplicationSet's own, in the controller); HTTP with a deadline (`PLUMB_HTTP_TIMEOUT`, default 30 s). Blocking: call it
/// outside the runtime's worker threads (a blocking thread, or the CLI's main thread).
pub struct GenServices {
    /// The cluster, the runtime to wait on it with, and the namespace read.
    pub cluster: Option<(Arc<Cluster>, tokio::runtime::Handle, String)>,
    /// Objects given as manifests: Secrets, ConfigMaps, decision resources.
    pub objects: Vec<Value>,
    /// The URL prefixes requests may go to (None: any).
    pub allowed_urls: Option<Vec<String>>,
}

impl GenServices {
    fn given<'a>(&'a self, kind: &'a str, name: &'a str) -> impl Iterator<Item = &'a Value> {
        self.objects.iter().filter(move |o| {
            o.get("kind").and_then(Value::as_str) == Some(kind)
                && o.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
        })
    }

    fn get(&self, group: &str, kind: &str, name: &str) -> Result<Option<Value>, String> {
        if let Some(o) = self.given(kind, name).next() {
            return Ok(Some(o.clone()));
        }
        let Some((cluster, rt, ns)) = &self.cluster else {
            return Err(format!(
                "{kind} {name}: not given and no cluster to read it from"
            ));
        };
        rt.block_on(cluster.get_object(group, kind, ns, name))
            .map_err(|e| format!("{kind} {ns}/{name}: {e}"))
    }
}

impl plumb_appset::services::Services for GenServices {
    fn secret(&self, name: &str, key: &str) -> Result<String, String> {
        let secret = self
            .get("", "Secret", name)?
            .ok_or_else(|| format!("Secret {name} does not exist"))?;
        plumb_core::clusters::secret_string(&secret, key)
            .map_err(|(field, reason)| format!("Secret {name}: {field}: {reason}"))?
            .ok_or_else(|| format!("Secret {name} has no key {key}"))
    }

    fn config_map(&self, name: &str) -> Result<serde_json::Map<String, Value>, String> {
        let cm = self
            .get("", "ConfigMap", name)?
            .ok_or_else(|| format!("ConfigMap {name} does not exist"))?;
        Ok(cm
            .get("data")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default())
    }

    fn objects(
        &self,
        api_version: &str,
        kind: &str,
        name: Option<&str>,
        label_selector: Option<&Value>,
    ) -> Result<Vec<Value>, String> {
        let group = plumb_core::group_of_api_version(api_version);
        let selected = |o: &Value| {
            name.is_none_or(|n| o.pointer("/metadata/name").and_then(Value::as_str) == Some(n))
                && plumb_core::selector::matches(
                    label_selector,
                    &plumb_core::selector::labels_of(o),
                )
        };
        let given: Vec<Value> = self
            .objects
            .iter()
            .filter(|o| {
                o.get("kind").and_then(Value::as_str) == Some(kind)
                    && o.get("apiVersion").and_then(Value::as_str) == Some(api_version)
            })
            .filter(|o| selected(o))
            .cloned()
            .collect();
        let Some((cluster, rt, ns)) = &self.cluster else {
            return Ok(given);
        };
        if !given.is_empty() {
            return Ok(given);
        }
        let all = rt
            .block_on(cluster.list_live(
                &[GroupKind::new(group, kind)],
                Some(std::slice::from_ref(ns)),
                None,
            ))
            .map_err(|e| format!("{kind} in {ns}: {e}"))?;
        Ok(all.into_iter().filter(|o| selected(o)).collect())
    }

    fn http(
        &self,
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: Option<&[u8]>,
        insecure: bool,
    ) -> Result<plumb_appset::services::HttpAnswer, String> {
        if let Some(allowed) = &self.allowed_urls
            && !allowed.iter().any(|p| url.starts_with(p.as_str()))
        {
            return Err(format!(
                "{} is not under an allowed URL (--applicationset-allowed-scm-providers)",
                plumb_core::redact_url(url.split('?').next().unwrap_or(url))
            ));
        }
        let timeout = std::env::var("PLUMB_HTTP_TIMEOUT")
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .map_or(Duration::from_secs(30), Duration::from_secs);
        let a = plumb_render::http::request(method, url, headers, body, timeout, insecure)?;
        Ok(plumb_appset::services::HttpAnswer {
            status: a.status,
            body: a.body,
            link: a.link,
            next_page: a.next_page,
        })
    }
}

/// What one reconcile of an ApplicationSet did.
#[derive(Debug, Default)]
pub struct Outcome {
    pub created: Vec<String>,
    pub updated: Vec<String>,
    pub deleted: Vec<String>,
    /// Applications whose sync progressive sync started.
    pub synced: Vec<String>,
    /// The generation's error (nothing was changed), or a write's.
    pub error: Option<String>,
}

fn key_of(v: &Value) -> Option<Key> {
    Some((
        v.pointer("/metadata/namespace")?.as_str()?.to_string(),
        v.pointer("/metadata/name")?.as_str()?.to_string(),
    ))
}

/// The requeue interval of `appset`: the smallest `requeueAfterSeconds` among its
/// generators (at any depth), else `default`.
fn requeue_of(appset: &Value, default: Duration) -> Duration {
    fn walk(v: &Value, min: &mut Option<u64>) {
        match v {
            Value::Object(m) => {
                if let Some(s) = m.get("requeueAfterSeconds").and_then(Value::as_u64) {
                    *min = Some(min.map_or(s, |x: u64| x.min(s)));
                }
                m.values().for_each(|c| walk(c, min));
            }
            Value::Array(a) => a.iter().for_each(|c| walk(c, min)),
            _ => {}
        }
    }
    let mut min = None;
    if let Some(g) = appset.pointer("/spec/generators") {
        walk(g, &mut min);
    }
    min.map_or(default, |s| Duration::from_secs(s.max(1)))
}

/// The ApplicationSet controller's state: the last generated Applications of each.
pub struct AppSets {
    cluster: Arc<Cluster>,
    cache: LiveCache,
    opts: AppSetOptions,
    generated: HashMap<Key, Vec<Value>>,
    generations: HashMap<Key, i64>,
    /// The last `status.applicationStatus` written (the cached ApplicationSet may not show
    /// it yet, and a sync must not be started twice).
    progress: HashMap<Key, Vec<Value>>,
    /// Per ApplicationSet, the names of the Applications whose owner references name it, kept
    /// from the watch: a reconcile reads those and the generated names from the cache, never
    /// the whole namespace (the cache parses every object it lists).
    owned: HashMap<Key, HashSet<String>>,
}

impl AppSets {
    pub fn new(cluster: Arc<Cluster>, cache: LiveCache, opts: AppSetOptions) -> AppSets {
        AppSets {
            cluster,
            cache,
            opts,
            generated: HashMap::new(),
            generations: HashMap::new(),
            progress: HashMap::new(),
            owned: HashMap::new(),
        }
    }

    fn kind(&self) -> GroupKind {
        GroupKind::new(self.cluster.app_group(), APPLICATIONSET_KIND)
    }

    fn app_kind(&self) -> GroupKind {
        GroupKind::new(self.cluster.app_group(), plumb_cluster::APPLICATION_KIND)
    }

    fn appset_key(&self, key: &Key) -> ResourceKey {
        let gk = self.kind();
        ResourceKey {
            group: gk.group,
            kind: gk.kind,
            namespace: key.0.clone(),
            name: key.1.clone(),
        }
    }

    fn appsets(&self) -> Vec<Arc<Value>> {
        self.cache
            .list(&self.kind(), self.opts.scope.only.as_deref())
            .into_iter()
            .filter(|a| key_of(a).is_some_and(|k| self.opts.scope.serves(&k.0)))
            .collect()
    }

    /// Generates (unless `regenerate` is false and a generation is remembered), plans,
    /// writes, and writes the status of the ApplicationSet `key`.
    pub async fn reconcile(&mut self, key: &Key, regenerate: bool) -> Option<Outcome> {
        let appset = self.cache.get(&self.appset_key(key))?;
        let appset: &Value = &appset;
        let mut out = Outcome::default();
        let generated = match self.generated.get(key).filter(|_| !regenerate) {
            Some(g) => Ok(g.clone()),
            None => self.generate(appset).await,
        };
        let policy = reconcile::check_project(appset, &self.opts.control_namespace)
            .and_then(|()| Policy::of(appset))
            .map(|p| p.restricted_by(self.opts.policy))
            .map_err(|e| e.0);
        let (cache, app_kind) = (self.cache.clone(), self.app_kind());
        let uid = appset
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        // The Applications that matter: the ApplicationSet's own, and those holding a generated
        // name, each read from the cache by name (a namespace may hold thousands of others).
        let owned = self.owned.get(key).cloned().unwrap_or_default();
        let stored = |names: &HashSet<String>| -> Vec<Value> {
            let mut all: Vec<&String> = names.iter().chain(owned.iter()).collect();
            all.sort();
            all.dedup();
            all.into_iter()
                .filter_map(|n| {
                    cache.get(&ResourceKey {
                        group: app_kind.group.clone(),
                        kind: app_kind.kind.clone(),
                        namespace: key.0.clone(),
                        name: n.clone(),
                    })
                })
                .filter(|a| {
                    reconcile::owned_by(a, &uid)
                        || a.pointer("/metadata/name")
                            .and_then(Value::as_str)
                            .is_some_and(|n| names.contains(n))
                })
                .map(|a| (*a).clone())
                .collect()
        };
        let steps = progressive::steps(appset).map_err(|e| e.0);
        let (mut generated, policy, steps) = match (generated, policy, steps) {
            (Ok(g), Ok(p), Ok(s)) => (g, p, s),
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
                // Nothing changes; the error is the status.
                self.generated.remove(key);
                let status =
                    reconcile::status(appset, Err(&e), &stored(&HashSet::new()), &[], &now());
                self.write_status(appset, status).await;
                out.error = Some(e);
                return Some(out);
            }
        };
        self.generated.insert(key.clone(), generated.clone());
        // RollingSync: the ApplicationSet syncs its Applications, step by step.
        let mut prune = HashMap::new();
        if steps.is_some() {
            for app in &mut generated {
                prune.insert(name(app), progressive::without_automated(app));
            }
        }
        let names: HashSet<String> = generated.iter().map(name).collect();
        let existing = stored(&names);
        let plan = reconcile::plan(appset, &generated, &existing, &policy);
        let mut errors = Vec::new();
        for app in &plan.create {
            match self.cluster.create_object(app, FIELD_MANAGER).await {
                Ok(_) => out.created.push(name(app)),
                Err(e) => errors.push(format!("creating Application {}: {e}", name(app))),
            }
        }
        for app in &plan.update {
            match self.cluster.replace_object(app, FIELD_MANAGER).await {
                Ok(_) => out.updated.push(name(app)),
                Err(e) => errors.push(format!("updating Application {}: {e}", name(app))),
            }
        }
        for (app_name, drop_finalizer) in &plan.delete {
            if let Err(e) = self
                .delete(&existing, &key.0, app_name, *drop_finalizer)
                .await
            {
                errors.push(format!("deleting Application {app_name}: {e}"));
            } else {
                out.deleted.push(app_name.clone());
            }
        }
        let mut status =
            reconcile::status(appset, Ok(&generated), &existing, &plan.not_owned, &now());
        if let Some(steps) = &steps {
            // Only the ApplicationSet's own Applications are synced by it.
            let mine: Vec<Value> = stored(&names)
                .into_iter()
                .filter(|a| names.contains(&name(a)) && reconcile::owned_by(a, &uid))
                .collect();
            let previous = self.progress.get(key).cloned().unwrap_or_else(|| {
                appset
                    .pointer("/status/applicationStatus")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
            });
            let mut p = progressive::progress(steps, &generated, &mine, &previous, &now());
            let mut failed = Vec::new();
            for app_name in &p.sync {
                let op = json!({"operation": {
                    "initiatedBy": {"username": "applicationset-controller", "automated": true},
                    "sync": {"prune": prune.get(app_name).copied().unwrap_or(false)}}});
                if let Err(e) = self.cluster.patch_application(&key.0, app_name, &op).await {
                    errors.push(format!("syncing Application {app_name}: {e}"));
                    failed.push(app_name.clone());
                } else {
                    out.synced.push(app_name.clone());
                }
            }
            // A sync that could not be asked for waits again (not Pending forever).
            for st in &mut p.statuses {
                if failed.iter().any(|f| st["application"] == f.as_str()) {
                    st["status"] = json!("Waiting");
                    st["message"] =
                        json!("Application has pending changes, setting status to Waiting");
                }
            }
            status["applicationStatus"] = Value::Array(p.statuses.clone());
            self.progress.insert(key.clone(), p.statuses);
        }
        if !errors.is_empty() {
            let e = errors.join("; ");
            status = reconcile::status(appset, Err(&e), &existing, &[], &now());
            out.error = Some(e);
        }
        self.write_status(appset, status).await;
        Some(out)
    }

    async fn generate(&self, appset: &Value) -> Result<Vec<Value>, String> {
        // The watch cache's, as the Application controller reads them: no request per
        // generation when Secrets are watched.
        let clusters = crate::run::tenancy::cluster_secrets(
            self.cluster.as_ref(),
            Some(&self.cache),
            &self.opts.control_namespace,
        )
        .await
        .map_err(|e| format!("cluster Secrets in {}: {e}", self.opts.control_namespace))?;
        let clusters: Vec<GenCluster> = plumb_appset::clusters_from_secrets(
            clusters.iter(),
            &format!("namespace {}", self.opts.control_namespace),
        )
        .map_err(|e| e.0)?;
        let (appset, repos, repo) = (
            appset.clone(),
            self.opts.repos.clone(),
            self.opts.repo_override.clone(),
        );
        // Tokens, plugin and decision configurations are read in the ApplicationSet's own
        // namespace: an ApplicationSet of another namespace never reaches the control
        // namespace's Secrets (its author chooses where a token is sent).
        let own_namespace = appset
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or(&self.opts.control_namespace)
            .to_string();
        let services = GenServices {
            cluster: Some((
                self.cluster.clone(),
                tokio::runtime::Handle::current(),
                own_namespace,
            )),
            objects: Vec::new(),
            allowed_urls: self.opts.allowed_urls.clone(),
        };
        tokio::task::spawn_blocking(move || {
            let repos = FetchRepos::new(repo, None, repos);
            plumb_appset::generate(
                &appset,
                &Inputs {
                    repos: &repos,
                    clusters: Some(&clusters),
                    services: &services,
                    appset_name: "",
                },
            )
            .map_err(|e| e.0)
        })
        .await
        .map_err(|e| format!("generation stopped: {e}"))?
    }

    async fn delete(
        &self,
        existing: &[Value],
        namespace: &str,
        app_name: &str,
        drop_finalizer: bool,
    ) -> Result<(), String> {
        let app = existing
            .iter()
            .find(|a| a.pointer("/metadata/name").and_then(Value::as_str) == Some(app_name))
            .ok_or("not found")?;
        if drop_finalizer {
            // Its resources stay: the resources finalizer goes before the Application.
            let kept: Vec<Value> = app
                .pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .map(|f| {
                    f.iter()
                        .filter(|x| {
                            !x.as_str()
                                .is_some_and(|s| s.starts_with(reconcile::RESOURCES_FINALIZER))
                        })
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            self.cluster
                .merge_patch_object(
                    app,
                    &json!({"metadata": {"finalizers": kept}}),
                    FIELD_MANAGER,
                )
                .await
                .map_err(|e| e.to_string())?;
        }
        let gk = self.app_kind();
        self.cluster
            .delete_object(
                &ResourceKey {
                    group: gk.group,
                    kind: gk.kind,
                    namespace: namespace.to_string(),
                    name: app_name.to_string(),
                },
                Propagation::Background,
            )
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    async fn write_status(&self, appset: &Value, status: Value) {
        if appset.get("status") == Some(&status) {
            return;
        }
        if let Err(e) = self
            .cluster
            .merge_patch_status(appset, &json!({"status": status}), FIELD_MANAGER)
            .await
        {
            eprintln!(
                "{}",
                json!({"applicationSet": key_of(appset).map(|k| format!("{}/{}", k.0, k.1)),
                       "statusWrite": e.to_string()})
            );
        }
    }

    /// Runs until `stop` turns true; `log` gets one JSON object per reconcile that did
    /// something or failed.
    pub async fn run(
        mut self,
        log: Arc<dyn Fn(Value) + Send + Sync>,
        mut pushed: tokio::sync::mpsc::UnboundedReceiver<Vec<Key>>,
        mut stop: watch::Receiver<bool>,
    ) {
        if let Err(e) = self.cache.ensure_kind(&self.kind()).await {
            log(json!({"applicationSets": "not served", "reason": e.to_string()}));
            return;
        }
        let mut changes = self.cache.subscribe();
        for app in self
            .cache
            .list(&self.app_kind(), self.opts.scope.only.as_deref())
        {
            if let Some((ns, name)) = key_of(&app) {
                for owner in appset_owners(&app) {
                    self.owned
                        .entry((ns.clone(), owner))
                        .or_default()
                        .insert(name.clone());
                }
            }
        }
        let mut due: HashMap<Key, Instant> = HashMap::new();
        let mut dirty: HashMap<Key, bool> = self
            .appsets()
            .iter()
            .filter_map(|a| key_of(a))
            .map(|k| (k, true))
            .collect();
        loop {
            let mut keys: Vec<(Key, bool)> = dirty.drain().collect();
            keys.sort();
            for (key, regenerate) in keys {
                let Some(outcome) = self.reconcile(&key, regenerate).await else {
                    due.remove(&key);
                    self.generated.remove(&key);
                    continue;
                };
                if regenerate && let Some(a) = self.cache.get(&self.appset_key(&key)) {
                    due.insert(
                        key.clone(),
                        Instant::now() + requeue_of(&a, self.opts.requeue),
                    );
                }
                if outcome.error.is_some()
                    || !outcome.created.is_empty()
                    || !outcome.updated.is_empty()
                    || !outcome.deleted.is_empty()
                    || !outcome.synced.is_empty()
                {
                    log(json!({"applicationSet": format!("{}/{}", key.0, key.1),
                        "created": outcome.created, "updated": outcome.updated,
                        "deleted": outcome.deleted, "synced": outcome.synced,
                        "error": outcome.error}));
                }
            }
            let next = due.values().min().copied();
            tokio::select! {
                _ = stop.changed() => {
                    if *stop.borrow() { return; }
                }
                Some(keys) = pushed.recv() => {
                    for k in keys { dirty.insert(k, true); }
                }
                change = changes.recv() => match change {
                    Ok(c) => self.note(&c, &mut dirty),
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        for a in self.appsets() {
                            if let Some(k) = key_of(&a) { dirty.insert(k, true); }
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                _ = async {
                    match next {
                        Some(at) => tokio::time::sleep_until(at.into()).await,
                        None => std::future::pending::<()>().await,
                    }
                } => {
                    let now = Instant::now();
                    for (k, at) in &due {
                        if *at <= now { dirty.insert(k.clone(), true); }
                    }
                }
            }
        }
    }

    /// Which ApplicationSet a watched change concerns, and whether it must be generated
    /// again (its spec changed) or only planned (one of its Applications changed).
    fn note(&mut self, c: &plumb_cluster::Change, dirty: &mut HashMap<Key, bool>) {
        let gk = self.kind();
        if c.key.group == gk.group && c.key.kind == gk.kind {
            let key = (c.key.namespace.clone(), c.key.name.clone());
            if !self.opts.scope.serves(&key.0) {
                return;
            }
            let generation = c
                .object
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            let deleted = matches!(c.kind, plumb_cluster::ChangeKind::Deleted);
            if deleted {
                self.generations.remove(&key);
                self.generated.remove(&key);
                self.progress.remove(&key);
                self.owned.remove(&key);
                return;
            }
            if self.generations.insert(key.clone(), generation) != Some(generation) {
                dirty.insert(key, true);
            }
            return;
        }
        if c.key.group == gk.group && c.key.kind == plumb_cluster::APPLICATION_KIND {
            let deleted = matches!(c.kind, plumb_cluster::ChangeKind::Deleted);
            for owner in appset_owners(&c.object) {
                let key = (c.key.namespace.clone(), owner);
                let names = self.owned.entry(key.clone()).or_default();
                if deleted {
                    names.remove(&c.key.name);
                } else {
                    names.insert(c.key.name.clone());
                }
                if self.generated.contains_key(&key) {
                    dirty.entry(key).or_insert(false);
                }
            }
        }
    }
}

/// The names of the ApplicationSets an object's owner references name.
fn appset_owners(obj: &Value) -> Vec<String> {
    let mut out: Vec<String> = obj
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|o| o.get("kind").and_then(Value::as_str) == Some(APPLICATIONSET_KIND))
        .filter_map(|o| o.get("name").and_then(Value::as_str).map(str::to_string))
        .collect();
    out.sort();
    out.dedup();
    out
}

fn name(app: &Value) -> String {
    app.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

fn now() -> String {
    plumb_core::time::format_rfc3339(std::time::SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_go_only_under_the_allowed_urls() {
        use plumb_appset::services::Services as _;
        let svc = GenServices {
            cluster: None,
            objects: Vec::new(),
            allowed_urls: Some(vec!["https://api.github.com/".into()]),
        };
        let e = svc
            .http(
                "GET",
                "https://u:secret@evil.example/api?x=1",
                &[],
                None,
                false,
            )
            .unwrap_err();
        assert_eq!(
            e,
            "https://***@evil.example/api is not under an allowed URL (--applicationset-allowed-scm-providers)"
        );
    }

    #[test]
    fn the_requeue_is_the_smallest_of_the_generators() {
        let d = Duration::from_secs(180);
        let a = json!({"spec": {"generators": [{"list": {}}]}});
        assert_eq!(requeue_of(&a, d), d);
        let a = json!({"spec": {"generators": [
            {"git": {"requeueAfterSeconds": 30}},
            {"matrix": {"generators": [{"git": {"requeueAfterSeconds": 10}}]}}]}});
        assert_eq!(requeue_of(&a, d), Duration::from_secs(10));
    }
}
