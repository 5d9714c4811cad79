//! The controller's HTTP endpoint (`plumb controller --listen ADDR`): `/healthz` for a
//! liveness probe, `/readyz` (200 once this replica reconciles or follows a leader), and
//! `/metrics` in Prometheus' text format — reconciles and syncs counted by outcome, reconcile
//! time, whether this replica leads, the watch cache's size, and `plumb_app_info` per
//! Application (its sync and health status), as Argo CD's `argocd_app_info`, and
//! `plumb_app_sync_loop` per Application (1 while it is in a recognised sync loop).
//!
//! `POST /api/webhook` takes git push webhooks (GitHub, GitLab, Bitbucket Cloud and Server,
//! Gitea, Gogs; [`plumb_sync::webhook`]) and refreshes the apps they concern at once
//! ([`plumb_sync::controller::PushRefresher`]).
//!
//! Routes are an `axum` router served by hyper's HTTP/1.1 connection, one request per
//! connection: at most [`MAX_CONNECTIONS`] at once, each given [`IO_TIMEOUT`] to send its
//! request and read the answer, request heads up to 16 KiB, webhook bodies up to
//! `--webhook-max-payload-bytes` (axum's `DefaultBodyLimit`: 413 beyond, before any of it is
//! read into memory). A connection ends with a lingering close, so that the sender of a
//! refused body reads its 413. Metrics are fed by the controller's events. The webhook's
//! [`plumb_sync::controller::PushRefresher`] is the leader's, attached once this replica
//! leads: 503 before.

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use plumb_sync::controller::{Event, PushRefresher};
use plumb_sync::webhook::{Headers, Received, Secrets, receive};
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// What the endpoint reports; updated from the controller's events.
#[derive(Default)]
pub struct Metrics {
    ready: AtomicBool,
    leader: AtomicBool,
    cached_objects: AtomicU64,
    watched_kinds: AtomicU64,
    inner: Mutex<Counters>,
}

#[derive(Default)]
struct Counters {
    /// Reconciles by result (`ok`, `error`).
    reconciles: BTreeMap<&'static str, u64>,
    /// Syncs by phase (`Succeeded`, `Failed`) and trigger (`manual`, `automated`,
    /// `self-heal`).
    syncs: BTreeMap<(&'static str, &'static str), u64>,
    reconcile_seconds_sum: f64,
    reconcile_seconds_count: u64,
    /// Per app (namespace, name): sync status, health status.
    apps: BTreeMap<(String, String), (String, String)>,
    /// Per app: whether it is in a recognised sync loop.
    loops: BTreeMap<(String, String), bool>,
    watch_lagged: u64,
    /// Sharded: this replica's id, the members, the apps it owns, reassignments seen.
    shard: Option<(String, u64, u64)>,
    reassignments: u64,
    /// Apps not reconciled in two refresh intervals, at the last count.
    stale: u64,
}

impl Metrics {
    /// This replica is up: leading (`true`) or following.
    pub fn set_ready(&self, leader: bool) {
        self.leader.store(leader, Ordering::Relaxed);
        self.ready.store(true, Ordering::Relaxed);
    }

    /// The watch cache's size.
    pub fn set_cache(&self, kinds: usize, objects: usize) {
        self.watched_kinds.store(kinds as u64, Ordering::Relaxed);
        self.cached_objects.store(objects as u64, Ordering::Relaxed);
    }

    /// Counts one controller event.
    pub fn record(&self, e: &Event<'_>) {
        let Ok(mut c) = self.inner.lock() else {
            return;
        };
        match e {
            Event::Reconciled {
                app, outcome, took, ..
            } => {
                *c.reconciles.entry("ok").or_default() += 1;
                c.reconcile_seconds_sum += took.as_secs_f64();
                c.reconcile_seconds_count += 1;
                if let Some(sync) = &outcome.sync {
                    *c.syncs
                        .entry((sync.phase, sync.trigger.as_str()))
                        .or_default() += 1;
                }
                let key = (app.0.clone(), app.1.clone());
                if outcome.deletion.is_some() {
                    // Being deleted: its series goes (the watch reports when it is gone).
                    c.apps.remove(&key);
                    c.loops.remove(&key);
                } else {
                    c.loops.insert(key.clone(), outcome.looping);
                    let status = (
                        format!("{:?}", outcome.status.sync),
                        outcome.status.health.to_string(),
                    );
                    c.apps.insert(key, status);
                }
            }
            Event::Failed { .. } => *c.reconciles.entry("error").or_default() += 1,
            Event::Lagged { missed } => c.watch_lagged += *missed,
            Event::Removed { app } => {
                c.apps.remove(&(app.0.clone(), app.1.clone()));
                c.loops.remove(&(app.0.clone(), app.1.clone()));
            }
            Event::Shard {
                members,
                owned,
                reassigned,
            } => {
                let me = c.shard.as_ref().map(|s| s.0.clone()).unwrap_or_default();
                c.shard = Some((me, members.len() as u64, *owned as u64));
                c.reassignments += reassigned;
            }
            Event::Stale { apps } => c.stale = apps.len() as u64,
            Event::Ignored { .. } | Event::DestinationDropped { .. } => {}
        }
    }

    /// This replica's shard id (sharded controllers: the label of `plumb_shard_apps`).
    pub fn set_shard(&self, me: &str) {
        if let Ok(mut c) = self.inner.lock() {
            let (members, owned) = c.shard.as_ref().map_or((1, 0), |s| (s.1, s.2));
            c.shard = Some((me.to_string(), members, owned));
        }
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let one = |v: u64| vec![(String::new(), v.to_string())];
        section(
            &mut out,
            "plumb_leader",
            "gauge",
            "1 when this replica holds the leader Lease and reconciles.",
            &one(u64::from(self.leader.load(Ordering::Relaxed))),
        );
        section(
            &mut out,
            "plumb_watched_kinds",
            "gauge",
            "Kinds the watch cache lists and watches.",
            &one(self.watched_kinds.load(Ordering::Relaxed)),
        );
        section(
            &mut out,
            "plumb_cached_objects",
            "gauge",
            "Objects in the watch cache when the controller started.",
            &one(self.cached_objects.load(Ordering::Relaxed)),
        );
        let Ok(c) = self.inner.lock() else {
            return out;
        };
        let by = |label: &str, m: &BTreeMap<&'static str, u64>| -> Vec<(String, String)> {
            m.iter()
                .map(|(k, v)| (format!("{{{label}=\"{}\"}}", escape(k)), v.to_string()))
                .collect()
        };
        if let Some((me, members, owned)) = &c.shard {
            section(
                &mut out,
                "plumb_shard_members",
                "gauge",
                "Live controller replicas sharing the Applications (member Leases).",
                &one(*members),
            );
            section(
                &mut out,
                "plumb_shard_apps",
                "gauge",
                "Applications this replica owns.",
                &[(format!("{{shard=\"{}\"}}", escape(me)), owned.to_string())],
            );
            section(
                &mut out,
                "plumb_shard_reassignments_total",
                "counter",
                "Applications whose owner changed with a change of members, as this replica saw it.",
                &one(c.reassignments),
            );
        }
        section(
            &mut out,
            "plumb_app_stale",
            "gauge",
            "Applications not reconciled in two refresh intervals (whoever owns them).",
            &one(c.stale),
        );
        section(
            &mut out,
            "plumb_app_reconcile_total",
            "counter",
            "Application reconciles by result.",
            &by("result", &c.reconciles),
        );
        let syncs: Vec<(String, String)> = c
            .syncs
            .iter()
            .map(|((phase, trigger), v)| {
                (
                    format!(
                        "{{phase=\"{}\",trigger=\"{}\"}}",
                        escape(phase),
                        escape(trigger)
                    ),
                    v.to_string(),
                )
            })
            .collect();
        section(
            &mut out,
            "plumb_app_sync_total",
            "counter",
            "Sync operations run by the controller, by phase and trigger (manual, automated, self-heal).",
            &syncs,
        );
        let _ = writeln!(
            out,
            "# HELP plumb_app_reconcile_seconds Time per Application reconcile.\n\
             # TYPE plumb_app_reconcile_seconds summary\n\
             plumb_app_reconcile_seconds_sum {}\nplumb_app_reconcile_seconds_count {}",
            c.reconcile_seconds_sum, c.reconcile_seconds_count
        );
        let apps: Vec<(String, String)> = c
            .apps
            .iter()
            .map(|((ns, name), (sync, health))| {
                (
                    format!(
                        "{{namespace=\"{}\",name=\"{}\",sync_status=\"{}\",health_status=\"{}\"}}",
                        escape(ns),
                        escape(name),
                        escape(sync),
                        escape(health)
                    ),
                    "1".to_string(),
                )
            })
            .collect();
        section(
            &mut out,
            "plumb_app_info",
            "gauge",
            "One series per Application, labelled with its last sync and health status.",
            &apps,
        );
        let loops: Vec<(String, String)> = c
            .loops
            .iter()
            .map(|((ns, name), looping)| {
                (
                    format!("{{namespace=\"{}\",name=\"{}\"}}", escape(ns), escape(name)),
                    u8::from(*looping).to_string(),
                )
            })
            .collect();
        section(
            &mut out,
            "plumb_app_sync_loop",
            "gauge",
            "1 while the Application is in a recognised sync loop (its SyncLoop condition), else 0.",
            &loops,
        );
        section(
            &mut out,
            "plumb_watch_lagged_total",
            "counter",
            "Watch events the controller's queue dropped (it re-lists instead).",
            &one(c.watch_lagged),
        );
        out
    }
}

/// One metric: its HELP and TYPE lines, then a line per (labels, value).
fn section(out: &mut String, name: &str, kind: &str, help: &str, lines: &[(String, String)]) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    for (labels, value) in lines {
        let _ = writeln!(out, "{name}{labels} {value}");
    }
}

/// Escapes a Prometheus label value.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Connections served at once; more are closed at once (a probe or a scrape needs one).
pub const MAX_CONNECTIONS: usize = 32;
/// How long a client may take to send its request (a webhook's body included) and read
/// the answer: the read deadline.
pub const IO_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// After answering, how long the rest of a refused body is read and dropped, so that the
/// client reads the answer instead of a connection reset.
const LINGER: std::time::Duration = std::time::Duration::from_secs(2);
/// The default `--webhook-max-payload-bytes`: 1 MiB.
pub const DEFAULT_WEBHOOK_MAX_BYTES: usize = 1 << 20;

/// `POST /api/webhook`'s configuration, and the controller's handle once this replica leads.
pub struct Webhook {
    secrets: Secrets,
    max_bytes: usize,
    target: OnceLock<PushRefresher>,
}

impl Webhook {
    pub fn new(secrets: Secrets, max_bytes: usize) -> Webhook {
        Webhook {
            secrets,
            max_bytes,
            target: OnceLock::new(),
        }
    }

    /// This replica leads: pushes refresh its controller's apps from now on.
    pub fn attach(&self, refresher: PushRefresher) {
        let _ = self.target.set(refresher);
    }
}

impl Default for Webhook {
    fn default() -> Webhook {
        Webhook::new(Secrets::default(), DEFAULT_WEBHOOK_MAX_BYTES)
    }
}

#[derive(Clone)]
struct Shared {
    metrics: Arc<Metrics>,
    webhook: Arc<Webhook>,
}

fn text(status: StatusCode, content_type: &'static str, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, content_type)], body).into_response()
}

fn router(metrics: Arc<Metrics>, webhook: Arc<Webhook>) -> Router {
    let max_bytes = webhook.max_bytes;
    Router::new()
        .route(
            "/healthz",
            get(|| async { text(StatusCode::OK, "text/plain", "ok\n".into()) }),
        )
        .route(
            "/readyz",
            get(|State(s): State<Shared>| async move {
                if s.metrics.ready.load(Ordering::Relaxed) {
                    text(StatusCode::OK, "text/plain", "ok\n".into())
                } else {
                    text(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "text/plain",
                        "starting\n".into(),
                    )
                }
            }),
        )
        .route(
            "/metrics",
            get(|State(s): State<Shared>| async move {
                text(
                    StatusCode::OK,
                    "text/plain; version=0.0.4",
                    s.metrics.render(),
                )
            }),
        )
        .route(
            "/api/webhook",
            post(push_webhook).layer(DefaultBodyLimit::max(max_bytes)),
        )
        .fallback(|| async { text(StatusCode::NOT_FOUND, "text/plain", "not found\n".into()) })
        .method_not_allowed_fallback(|| async {
            text(
                StatusCode::METHOD_NOT_ALLOWED,
                "text/plain",
                "method not allowed\n".into(),
            )
        })
        .with_state(Shared { metrics, webhook })
}

/// `POST /api/webhook`: 200 with the apps refreshed (JSON), 400 for an unknown or malformed
/// request, 401 when a configured secret is not proven, 413 for a body over the limit, 503
/// while this replica does not lead. Each request is logged as a JSON line (never a secret).
async fn push_webhook(
    State(s): State<Shared>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let pairs = headers
        .iter()
        .filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?)));
    let received = receive(&Headers::from_pairs(pairs), &body, &s.webhook.secrets);
    let (status, answer) = match received {
        Err(e) => {
            let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
            (status, json!({"refused": e.to_string()}))
        }
        Ok(Received::Ignored { provider, event }) => (
            StatusCode::OK,
            json!({"provider": provider.as_str(), "event": event, "ignored": "not a push"}),
        ),
        Ok(Received::Push(push)) => match s.webhook.target.get() {
            None => (
                StatusCode::SERVICE_UNAVAILABLE,
                json!({"provider": push.provider.as_str(),
                    "refused": "this replica does not lead (not reconciling); the leader takes webhooks"}),
            ),
            Some(refresher) => {
                let apps: Vec<String> = refresher
                    .refresh(&push)
                    .into_iter()
                    .map(|(ns, name)| format!("{ns}/{name}"))
                    .collect();
                (
                    StatusCode::OK,
                    json!({"provider": push.provider.as_str(), "repos": push.repo_urls,
                        "revisions": push.revisions, "refreshed": apps}),
                )
            }
        },
    };
    eprintln!("{}", json!({"webhook": answer, "status": status.as_u16()}));
    let mut body = answer.to_string();
    body.push('\n');
    text(status, "application/json", body)
}

/// Serves `metrics` and `webhook` on `listener` until the task is dropped. Each connection
/// is bounded in time and size, and their number is capped, so no client can hold the
/// controller's file descriptors, memory or CPU.
pub async fn serve_with_webhook(
    listener: TcpListener,
    metrics: Arc<Metrics>,
    webhook: Arc<Webhook>,
    ui: Option<Router>,
) {
    let app = router(metrics, webhook);
    // The web pages under their own path (`plumb controller --ui`), behind their own checks.
    let app = match ui {
        Some(ui) => app.merge(ui),
        None => app,
    };
    serve_router(listener, app).await;
}

/// Serves `app` on `listener` until the task is dropped, each connection bounded in time and
/// size and their number capped (the controller's endpoint and `plumb ui` alike).
pub async fn serve_router(listener: TcpListener, app: Router) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(c) => c,
            Err(_) => {
                // Out of descriptors, say: back off instead of spinning.
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            drop(stream);
            continue;
        };
        let app = app.clone();
        tokio::spawn(async move {
            connection(stream, app).await;
            drop(slot);
        });
    }
}

/// One request on `stream`, then a lingering close.
async fn connection(stream: tokio::net::TcpStream, app: Router) {
    let service = hyper_util::service::TowerToHyperService::new(app);
    let served = hyper::server::conn::http1::Builder::new()
        .keep_alive(false)
        .max_buf_size(16 * 1024)
        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
        .without_shutdown();
    let Ok(Ok(parts)) = tokio::time::timeout(IO_TIMEOUT, served).await else {
        return;
    };
    let mut stream = parts.io.into_inner();
    let _ = stream.shutdown().await;
    // A body refused unread (413) is still arriving: closing now would reset the
    // connection and could lose the answer on the client's side.
    let _ = tokio::time::timeout(LINGER, async {
        let mut buf = [0u8; 8192];
        while let Ok(n) = stream.read(&mut buf).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn ask(addr: std::net::SocketAddr, request: &[u8], bytewise: bool) -> String {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        if bytewise {
            for b in request {
                s.write_all(&[*b]).await.unwrap();
            }
        } else {
            s.write_all(request).await.unwrap();
        }
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn routes_formats_and_escaping() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let metrics = std::sync::Arc::new(Metrics::default());
        tokio::spawn(serve_with_webhook(
            listener,
            metrics.clone(),
            Arc::new(Webhook::default()),
            None,
        ));
        let r = ask(addr, b"GET /readyz HTTP/1.1\r\n\r\n", false).await;
        assert!(r.starts_with("HTTP/1.1 503"), "{r}");
        metrics.set_ready(true);
        metrics.set_cache(3, 42);
        let r = ask(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", true).await;
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        for want in [
            "# TYPE plumb_leader gauge\nplumb_leader 1\n",
            "plumb_cached_objects 42\n",
            "# TYPE plumb_app_reconcile_seconds summary\n",
        ] {
            assert!(r.contains(want), "{want:?} missing:\n{r}");
        }
        let r = ask(addr, b"POST /metrics HTTP/1.1\r\n\r\n", false).await;
        assert!(r.starts_with("HTTP/1.1 405"), "{r}");
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    /// A POST of `body` with `headers`; the body is written from another task, so that an
    /// answer sent before the whole body is read is still read.
    async fn post(addr: std::net::SocketAddr, headers: &[(&str, &str)], body: Vec<u8>) -> String {
        let s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (mut r, mut w) = s.into_split();
        let mut head = format!(
            "POST /api/webhook HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let writer = tokio::spawn(async move {
            let _ = w.write_all(head.as_bytes()).await;
            let _ = w.write_all(&body).await;
        });
        let mut out = String::new();
        r.read_to_string(&mut out).await.unwrap();
        let _ = writer.await;
        out
    }

    #[tokio::test]
    async fn webhook_answers_by_status() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let secrets = Secrets {
            github: Some("s3cret".into()),
            ..Secrets::default()
        };
        let webhook = Arc::new(Webhook::new(secrets, 64 * 1024));
        tokio::spawn(serve_with_webhook(
            listener,
            Arc::new(Metrics::default()),
            webhook,
            None,
        ));
        let body =
            br#"{"ref": "refs/heads/main", "repository": {"html_url": "https://github.com/a/b"}}"#;
        let sig = format!("sha256={}", plumb_sync::webhook::sign_hex("s3cret", body));
        let r = post(addr, &[("Content-Type", "application/json")], body.to_vec()).await;
        assert!(r.starts_with("HTTP/1.1 400"), "{r}");
        let r = post(addr, &[("X-GitHub-Event", "push")], body.to_vec()).await;
        assert!(r.starts_with("HTTP/1.1 401"), "{r}");
        assert!(r.contains("not signed"), "{r}");
        assert!(!r.contains("s3cret"), "{r}");
        // Signed, but no controller (this replica does not lead).
        let signed = [
            ("X-GitHub-Event", "push"),
            ("X-Hub-Signature-256", sig.as_str()),
        ];
        let r = post(addr, &signed, body.to_vec()).await;
        assert!(r.starts_with("HTTP/1.1 503"), "{r}");
        // Over the limit: 413, the answer readable although the body was not read.
        let r = post(addr, &signed, vec![b' '; 4 << 20]).await;
        assert!(r.starts_with("HTTP/1.1 413"), "{r}");
        let r = ask(addr, b"GET /api/webhook HTTP/1.1\r\n\r\n", false).await;
        assert!(r.starts_with("HTTP/1.1 405"), "{r}");
        let r = ask(addr, b"GET /nope HTTP/1.1\r\n\r\n", false).await;
        assert!(r.starts_with("HTTP/1.1 404"), "{r}");
    }
}
