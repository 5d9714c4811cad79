//! The controller's HTTP endpoint (`plumb controller --listen ADDR`): `/healthz` for a
//! liveness probe, `/readyz` (200 once this replica reconciles or follows a leader), and
//! `/metrics` in Prometheus' text format — reconciles and syncs counted by outcome, reconcile
//! time, whether this replica leads, the watch cache's size, and `plumb_app_info` per
//! Application (its sync and health status), as Argo CD's `argocd_app_info`.
//!
//! A deliberately small HTTP/1.1 responder on tokio (GET only, one request per connection,
//! 8 KiB request limit): three fixed routes do not need a web framework.

use plumb_sync::controller::Event;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
    watch_lagged: u64,
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
                } else {
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
            }
            Event::Ignored { .. } | Event::DestinationDropped { .. } => {}
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
const MAX_CONNECTIONS: usize = 32;
/// How long a client may take to send its request or read the answer.
const IO_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Serves `metrics` on `listener` until the task is dropped. Each connection is bounded in
/// time and size, and their number is capped, so no client can hold the controller's file
/// descriptors or CPU.
pub async fn serve(listener: TcpListener, metrics: std::sync::Arc<Metrics>) {
    let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
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
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(IO_TIMEOUT, respond(stream, &metrics)).await;
            drop(slot);
        });
    }
}

/// Reads one request (up to 8 KiB, until the blank line) and answers it.
async fn respond(mut stream: tokio::net::TcpStream, metrics: &Metrics) {
    let mut buf = vec![0u8; 8192];
    let mut len = 0;
    while len < buf.len() {
        match stream.read(&mut buf[len..]).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                // Only the new bytes (and three before them) can complete the blank line.
                let from = len.saturating_sub(3);
                len += n;
                if buf[from..len].windows(4).any(|w| w == b"\r\n\r\n") {
                    break;
                }
            }
        }
    }
    let request = String::from_utf8_lossy(&buf[..len]);
    let mut words = request.split_whitespace();
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let (status, content_type, body) = match (method, path) {
        ("GET", "/healthz") => ("200 OK", "text/plain", "ok\n".to_string()),
        ("GET", "/readyz") if metrics.ready.load(Ordering::Relaxed) => {
            ("200 OK", "text/plain", "ok\n".to_string())
        }
        ("GET", "/readyz") => (
            "503 Service Unavailable",
            "text/plain",
            "starting\n".to_string(),
        ),
        ("GET", "/metrics") => ("200 OK", "text/plain; version=0.0.4", metrics.render()),
        ("GET", _) => ("404 Not Found", "text/plain", "not found\n".to_string()),
        _ => (
            "405 Method Not Allowed",
            "text/plain",
            "GET only\n".to_string(),
        ),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let _ = stream.shutdown().await;
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
        tokio::spawn(serve(listener, metrics.clone()));
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
}
