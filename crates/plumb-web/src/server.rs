//! The pages `plumb ui` serves, as an axum [`Router`] over a [`Backend`] that reads the apps
//! (from a snapshot or a cluster: the caller's).
//!
//! - `GET /`: the apps, filtered by the query string (`q`, `project`, `sync`, `health`,
//!   `verdict`) and paged on the server ([`PAGE_SIZE`] rows).
//! - `GET /apps/{namespace}/{name}`: the app's page, the doctor's report.
//! - `GET /apps/{namespace}/{name}/diff`: per resource, live against desired, unified or side
//!   by side (`view=split`), each changed line badged with the manager that last wrote it;
//!   `hide=MANAGER` leaves out the lines that manager wrote.
//! - `GET /apps/{namespace}/{name}/history`: the syncs as a table and a timeline (SVG).
//! - `GET /apps/{namespace}/{name}/history/diff?from=ID&to=ID`: what changed in git between
//!   two syncs: the app rendered at each one's revision, per object.
//! - `GET /actors`: the fleet by cause — each writer the doctor finds fighting git, with the
//!   apps and fields it fights (`sort=apps|fields|name`).
//! - Each also answers `?format=json` with the data it shows.
//!
//! Secure by default ([`Access`]): every request's `Host` must be one the server was started
//! for (no DNS rebinding: 421 otherwise); with a token, every request must carry it (`Bearer`),
//! or the session cookie it was exchanged for (`?token=` once: an HttpOnly, SameSite=Strict
//! cookie, then a redirect to the same page without it); only GET and HEAD (405); every
//! response carries the page's Content-Security-Policy, `nosniff`, `no-referrer` and
//! `no-store`. Every link is made by [`app_href`]/[`list_href`] from plumb's own paths, each
//! segment percent-encoded: no value from git or the cluster becomes a link of its own.

use crate::{Chrome, StatusView, render, report_page, status_view, sync_view, verdict_view};
use askama::Template;
use axum::Router;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use plumb_doctor::{Report, Verdict};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Rows on one page of the list.
pub const PAGE_SIZE: usize = 100;

/// The session cookie a URL token is exchanged for.
const COOKIE: &str = "plumb_ui_session";

/// One row of the list: what an Application's status says.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppRow {
    pub namespace: String,
    pub name: String,
    pub project: String,
    /// `Synced`, `OutOfSync`, `Unknown`.
    pub sync: String,
    /// `Healthy`, `Degraded`, …
    pub health: String,
    pub revision: String,
    /// RFC 3339.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_sync: Option<String>,
    /// The doctor's verdict from the status alone (`None`: never compared).
    pub verdict: Option<Verdict>,
}

/// An app's page: the doctor's report, and the repository files its `declaredAt`s name (read
/// at the rendered revision; a Secret's never).
pub struct AppView {
    pub report: Report,
    pub files: BTreeMap<String, String>,
    /// The resources that differ, for the diff page.
    pub changes: Vec<crate::diff::ResourceChange>,
    /// The Application as read (its `status.history`, for the history page).
    pub application: serde_json::Value,
    /// The live objects of its destination, for the resource tree (owner references; only
    /// names and kinds are shown).
    pub live: Vec<serde_json::Value>,
}

/// Where the pages' data comes from. Called off the async runtime (it may block).
pub trait Backend: Send + Sync + 'static {
    /// Every Application.
    fn apps(&self) -> Result<Vec<AppRow>, String>;
    /// One Application's diagnosis; `Ok(None)` when there is no such Application.
    fn app(&self, namespace: &str, name: &str) -> Result<Option<AppView>, String>;
    /// Refreshes an Application now (compare, status written): the one write the pages may
    /// ask for, only when [`Access::refresh`] allows it. `Ok(false)`: no such Application.
    fn refresh(&self, _namespace: &str, _name: &str) -> Result<bool, String> {
        Err("refreshing is not enabled".into())
    }
    /// The objects the app's source renders at `revision` (Secrets in clear: the page masks
    /// them), for the diff between two syncs of the history.
    fn render_at(
        &self,
        _namespace: &str,
        _name: &str,
        _revision: &str,
    ) -> Result<Vec<serde_json::Value>, String> {
        Err("rendering another revision is not available here".into())
    }
}

/// Who may ask, and by which names of the server.
#[derive(Clone)]
pub struct Access {
    /// `Host` header values accepted (e.g. `127.0.0.1:8080`, `localhost:8080`).
    pub hosts: Vec<String>,
    /// The token every request must carry, when set.
    pub token: Option<String>,
    /// The session cookie's value a URL token is exchanged for (random, made at start).
    pub session: String,
    /// Whether the app pages offer "Refresh" (a POST, the only one accepted).
    pub refresh: bool,
    /// The token every Refresh form carries and every Refresh POST must send back (random,
    /// made at start): another site cannot forge one.
    pub csrf: String,
}

struct Shared {
    backend: Arc<dyn Backend>,
    access: Access,
    /// The path the pages are served under: empty for `plumb ui`, `/ui` in the controller.
    base: String,
}

impl Shared {
    /// `path` (one of plumb's own, from `/`) under the base.
    fn at(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn chrome(&self, title: String) -> Chrome {
        Chrome::served(&self.base, title)
    }
}

/// The router of every page, behind the access checks (`plumb ui`).
pub fn router(backend: Arc<dyn Backend>, access: Access) -> Router {
    router_at(backend, access, "")
}

/// The router of every page under `base` (e.g. `/ui`, to merge into the controller's
/// endpoint; then without a fallback of its own).
pub fn router_at(backend: Arc<dyn Backend>, access: Access, base: &str) -> Router {
    let base = base.trim_end_matches('/').to_string();
    let shared = Arc::new(Shared {
        backend,
        access,
        base: base.clone(),
    });
    let r = Router::new()
        .route(&format!("{base}/"), get(list))
        .route(&format!("{base}/apps/{{namespace}}/{{name}}"), get(app))
        .route(
            &format!("{base}/apps/{{namespace}}/{{name}}/diff"),
            get(diff),
        )
        .route(
            &format!("{base}/apps/{{namespace}}/{{name}}/history"),
            get(history),
        )
        .route(
            &format!("{base}/apps/{{namespace}}/{{name}}/history/diff"),
            get(history_diff),
        )
        .route(&format!("{base}/actors"), get(actors))
        .route(
            &format!("{base}/apps/{{namespace}}/{{name}}/refresh"),
            axum::routing::post(refresh),
        );
    let r = if base.is_empty() {
        r.fallback(not_found)
    } else {
        r
    };
    r.layer(middleware::from_fn_with_state(shared.clone(), guard))
        .with_state(shared)
}

/// The access checks and the headers every answer carries.
async fn guard(State(s): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let mut res = match decide(&s, &req) {
        Decision::Serve => next.run(req).await,
        Decision::Answer(r) => r,
    };
    let h = res.headers_mut();
    let policy = format!(
        "{}; frame-ancestors 'none'",
        Chrome::served("", String::new()).csp
    );
    if let Ok(v) = HeaderValue::from_str(&policy) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    res
}

enum Decision {
    /// On to the page.
    Serve,
    /// This answer instead: a refusal, or the exchange of a URL token for the cookie.
    Answer(Response),
}

fn decide(s: &Shared, req: &Request) -> Decision {
    let access = &s.access;
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if !access.hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
        return Decision::Answer(error(
            &s.base,
            StatusCode::MISDIRECTED_REQUEST,
            "Unknown host",
            "This server answers only to the names it was started for.",
        ));
    }
    // The one write: Refresh, when allowed (its CSRF token is checked by the handler).
    let refresh = access.refresh
        && req.method() == Method::POST
        && req.uri().path().ends_with("/refresh")
        && same_origin(access, req);
    if req.method() != Method::GET && req.method() != Method::HEAD && !refresh {
        let mut r = error(
            &s.base,
            StatusCode::METHOD_NOT_ALLOWED,
            "Method not allowed",
            "These pages are read-only.",
        );
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return Decision::Answer(r);
    }
    let Some(token) = &access.token else {
        return Decision::Serve;
    };
    let bearer = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.strip_prefix("Bearer "));
    if bearer.is_some_and(|b| same(b.as_bytes(), token.as_bytes()))
        || cookie(req.headers(), COOKIE)
            .is_some_and(|c| same(c.as_bytes(), access.session.as_bytes()))
    {
        return Decision::Serve;
    }
    if url_token(req).is_some_and(|t| same(t.as_bytes(), token.as_bytes())) {
        // The URL token is exchanged for the cookie, and leaves the address bar.
        return Decision::Answer(exchange(access, req));
    }
    Decision::Answer(error(
        &s.base,
        StatusCode::UNAUTHORIZED,
        "Sign-in needed",
        "Open the address plumb ui printed (with its token), or send the token as a bearer token.",
    ))
}

/// A POST from a page of this server: its `Origin`, when sent, names an allowed host.
fn same_origin(access: &Access, req: &Request) -> bool {
    match req
        .headers()
        .get(header::ORIGIN)
        .and_then(|h| h.to_str().ok())
    {
        None => true,
        Some(origin) => origin
            .strip_prefix("http://")
            .is_some_and(|host| access.hosts.iter().any(|h| h.eq_ignore_ascii_case(host))),
    }
}

/// For a request whose URL carries the right token: the session cookie, and a redirect to the
/// same page without the token.
fn exchange(access: &Access, req: &Request) -> Response {
    let rest: Vec<(String, String)> = query_pairs(req.uri().query().unwrap_or(""))
        .into_iter()
        .filter(|(k, _)| k != "token")
        .collect();
    let mut location = req.uri().path().to_string();
    if !rest.is_empty() {
        location.push('?');
        location.push_str(&encode_query(&rest));
    }
    let mut r = StatusCode::SEE_OTHER.into_response();
    let h = r.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&location) {
        h.insert(header::LOCATION, v);
    }
    if let Ok(v) = HeaderValue::from_str(&format!(
        "{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/",
        access.session
    )) {
        h.insert(header::SET_COOKIE, v);
    }
    r
}

fn url_token(req: &Request) -> Option<String> {
    query_pairs(req.uri().query()?)
        .into_iter()
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v)
}

fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|h| h.to_str().ok())
        .flat_map(|h| h.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Equal, in time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The list's filters and page, from the query string.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(default)]
pub struct ListQuery {
    pub q: String,
    pub project: String,
    pub sync: String,
    pub health: String,
    pub verdict: String,
    pub page: usize,
    #[serde(skip_serializing)]
    pub format: String,
}

impl ListQuery {
    fn filtered(&self) -> bool {
        !(self.q.is_empty()
            && self.project.is_empty()
            && self.sync.is_empty()
            && self.health.is_empty()
            && self.verdict.is_empty())
    }

    fn keeps(&self, r: &AppRow) -> bool {
        let q = self.q.to_lowercase();
        (q.is_empty()
            || [&r.name, &r.namespace, &r.project]
                .iter()
                .any(|f| f.to_lowercase().contains(&q)))
            && (self.project.is_empty() || r.project == self.project)
            && (self.sync.is_empty() || r.sync == self.sync)
            && (self.health.is_empty() || r.health == self.health)
            && (self.verdict.is_empty()
                || r.verdict.map_or("unknown", Verdict::as_str) == self.verdict)
    }
}

#[derive(Template)]
#[template(path = "list.html")]
struct ListPage {
    chrome: Chrome,
    query: ListQuery,
    filtered: bool,
    total: usize,
    page: usize,
    pages: usize,
    rows: Vec<RowView>,
    self_href: String,
    prev_href: Option<String>,
    next_href: Option<String>,
    sync_options: Vec<(String, bool)>,
    health_options: Vec<(String, bool)>,
    verdict_options: Vec<(String, bool)>,
}

struct RowView {
    href: String,
    name: String,
    namespace: String,
    project: String,
    sync: StatusView,
    health: StatusView,
    verdict: StatusView,
    revision: String,
    last_sync: String,
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage<'a> {
    chrome: Chrome,
    heading: &'a str,
    message: &'a str,
}

fn error(base: &str, status: StatusCode, heading: &str, message: &str) -> Response {
    let page = ErrorPage {
        chrome: Chrome::served(base, heading.to_string()),
        heading,
        message,
    };
    (status, html_headers(), render(&page)).into_response()
}

fn html_headers() -> [(header::HeaderName, &'static str); 1] {
    [(header::CONTENT_TYPE, "text/html; charset=utf-8")]
}

fn json(v: serde_json::Value) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        format!("{v:#}\n"),
    )
        .into_response()
}

async fn not_found() -> Response {
    error("", StatusCode::NOT_FOUND, "Not found", "No page here.")
}

/// Runs a backend call off the runtime (it may block on git or a cluster).
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| format!("the page's work stopped: {e}"))?
}

async fn list(State(s): State<Arc<Shared>>, Query(query): Query<ListQuery>) -> Response {
    let backend = s.backend.clone();
    let rows = match blocking(move || backend.apps()).await {
        Ok(rows) => rows,
        Err(e) => {
            return error(
                &s.base,
                StatusCode::INTERNAL_SERVER_ERROR,
                "Cannot list the apps",
                &e,
            );
        }
    };
    list_response(&s.base, rows, query)
}

/// The list page (or its JSON) for `rows`, filtered and paged as `query` asks.
pub fn list_response(base: &str, mut rows: Vec<AppRow>, query: ListQuery) -> Response {
    rows.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    let options = |values: Vec<&str>, chosen: &str| -> Vec<(String, bool)> {
        let mut v: Vec<String> = values.into_iter().map(str::to_string).collect();
        v.sort();
        v.dedup();
        std::iter::once(String::new())
            .chain(v)
            .map(|o| {
                let selected = o == chosen;
                (o, selected)
            })
            .collect()
    };
    let sync_options = options(rows.iter().map(|r| r.sync.as_str()).collect(), &query.sync);
    let health_options = options(
        rows.iter().map(|r| r.health.as_str()).collect(),
        &query.health,
    );
    let verdict_options = options(
        ["loop", "drift", "out-of-sync", "in-sync", "unknown"].to_vec(),
        &query.verdict,
    );
    let kept: Vec<AppRow> = rows.into_iter().filter(|r| query.keeps(r)).collect();
    let total = kept.len();
    let pages = total.div_ceil(PAGE_SIZE).max(1);
    let page = query.page.clamp(1, pages);
    let shown: Vec<AppRow> = kept
        .into_iter()
        .skip((page - 1) * PAGE_SIZE)
        .take(PAGE_SIZE)
        .collect();
    if query.format == "json" {
        return json(serde_json::json!({
            "apps": shown, "total": total, "page": page, "pages": pages, "pageSize": PAGE_SIZE,
        }));
    }
    let at = |p: usize| {
        list_href(&ListQuery {
            page: p,
            ..query.clone()
        })
    };
    let page_view = ListPage {
        chrome: Chrome::served(base, "plumb: applications".into()),
        filtered: query.filtered(),
        total,
        page,
        pages,
        rows: shown
            .iter()
            .map(|r| RowView {
                href: format!("{base}{}", app_href(&r.namespace, &r.name)),
                name: r.name.clone(),
                namespace: r.namespace.clone(),
                project: r.project.clone(),
                sync: sync_view(&r.sync),
                health: status_view(if r.health.is_empty() {
                    "Unknown"
                } else {
                    &r.health
                }),
                verdict: verdict_view(r.verdict),
                revision: short(&r.revision),
                last_sync: r.last_sync.clone().unwrap_or_default(),
            })
            .collect(),
        self_href: at(page),
        prev_href: (page > 1).then(|| at(page - 1)),
        next_href: (page < pages).then(|| at(page + 1)),
        sync_options,
        health_options,
        verdict_options,
        query,
    };
    (html_headers(), render(&page_view)).into_response()
}

/// The app's view from the backend, or the page that says why there is none.
async fn app_view(s: &Shared, namespace: &str, name: &str) -> Result<AppView, Response> {
    let backend = s.backend.clone();
    let (ns, n) = (namespace.to_string(), name.to_string());
    match blocking(move || backend.app(&ns, &n)).await {
        Ok(Some(v)) => Ok(v),
        Ok(None) => Err(error(
            &s.base,
            StatusCode::NOT_FOUND,
            "No such app",
            &format!("There is no Application {namespace}/{name}."),
        )),
        Err(e) => Err(error(
            &s.base,
            StatusCode::INTERNAL_SERVER_ERROR,
            "Cannot diagnose the app",
            &e,
        )),
    }
}

async fn app(
    State(s): State<Arc<Shared>>,
    Path((namespace, name)): Path<(String, String)>,
    Query(q): Query<BTreeMap<String, String>>,
) -> Response {
    let view = match app_view(&s, &namespace, &name).await {
        Ok(v) => v,
        Err(page) => return page,
    };
    if q.get("format").is_some_and(|f| f == "json") {
        return json(view.report.to_json());
    }
    let files = view.files;
    let page = report_page(
        &view.report,
        &|path: &str| files.get(path).cloned(),
        s.chrome(format!("plumb: {namespace}/{name}")),
    )
    .with_links(
        s.at(&(app_href(&namespace, &name) + "/diff")),
        s.at(&(app_href(&namespace, &name) + "/history")),
    )
    .with_refresh(s.access.refresh.then(|| {
        (
            s.at(&(app_href(&namespace, &name) + "/refresh")),
            s.access.csrf.clone(),
        )
    }))
    .with_extras(crate::app::extras(
        &view.application,
        &view.live,
        &view.changes.iter().map(|c| c.resource.clone()).collect(),
        &view.report,
    ));
    (html_headers(), render(&page)).into_response()
}

/// The diff page's query: `view=split` for side by side, `hide=MANAGER`, `format=json`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct DiffQuery {
    view: String,
    hide: String,
    format: String,
}

#[derive(Template)]
#[template(path = "diff.html")]
struct DiffPage {
    chrome: Chrome,
    /// What the page compares: `diff`, or `from … to …` for two syncs.
    title: String,
    /// The column headings of the two sides.
    old_label: String,
    new_label: String,
    /// The explanation under the heading.
    about: String,
    app: String,
    app_href: String,
    split: bool,
    unified_href: String,
    split_href: String,
    actors: Vec<ActorView>,
    resources: Vec<crate::diff::ResourceView>,
}

struct ActorView {
    name: String,
    lines: usize,
    hidden: bool,
    toggle: String,
}

async fn diff(
    State(s): State<Arc<Shared>>,
    Path((namespace, name)): Path<(String, String)>,
    Query(q): Query<DiffQuery>,
) -> Response {
    let view = match app_view(&s, &namespace, &name).await {
        Ok(v) => v,
        Err(page) => return page,
    };
    let hide = Some(q.hide.as_str()).filter(|h| !h.is_empty());
    let (resources, actors) = crate::diff::views(&view.changes, hide);
    if q.format == "json" {
        let resources: Vec<serde_json::Value> = resources
            .iter()
            .map(crate::diff::ResourceView::to_json)
            .collect();
        return json(serde_json::json!({"resources": resources, "actors": actors}));
    }
    let base = s.at(&(app_href(&namespace, &name) + "/diff"));
    let href = |view: &str, hide: &str| {
        let pairs: Vec<(String, String)> = [("view", view), ("hide", hide)]
            .into_iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        if pairs.is_empty() {
            base.clone()
        } else {
            format!("{base}?{}", encode_query(&pairs))
        }
    };
    let split = q.view == "split";
    let view_param = if split { "split" } else { "" };
    let page = DiffPage {
        chrome: s.chrome(format!("plumb: {namespace}/{name} diff")),
        title: "diff".into(),
        old_label: "Live".into(),
        new_label: "After a sync".into(),
        about: "Live (−) against what a sync would make it (+), as plumb diff -o unified shows them; each changed line names the manager that last wrote that field in the cluster. Secret values are masked.".into(),
        app: format!("{namespace}/{name}"),
        app_href: s.at(&app_href(&namespace, &name)),
        split,
        unified_href: href("", &q.hide),
        split_href: href("split", &q.hide),
        actors: actors
            .into_iter()
            .map(|(name, lines)| {
                let hidden = hide == Some(name.as_str());
                let toggle = href(view_param, if hidden { "" } else { &name });
                ActorView {
                    name,
                    lines,
                    hidden,
                    toggle,
                }
            })
            .collect(),
        resources,
    };
    (html_headers(), render(&page)).into_response()
}

#[derive(Template)]
#[template(path = "history.html")]
struct HistoryPage {
    chrome: Chrome,
    app: String,
    app_href: String,
    diff_href: String,
    loop_banner: Option<String>,
    syncs: Vec<crate::history::Sync>,
    timeline: Option<crate::history::Timeline>,
    /// The compare form: where it goes, and the two syncs it proposes (the last two of
    /// different revisions, else the last two).
    compare_action: String,
    default_from: i64,
    default_to: i64,
}

async fn history(
    State(s): State<Arc<Shared>>,
    Path((namespace, name)): Path<(String, String)>,
    Query(q): Query<BTreeMap<String, String>>,
) -> Response {
    let view = match app_view(&s, &namespace, &name).await {
        Ok(v) => v,
        Err(page) => return page,
    };
    let syncs = crate::history::syncs(&view.application);
    if q.get("format").is_some_and(|f| f == "json") {
        return json(serde_json::json!({"syncs": syncs, "loop": crate::loop_banner(&view.report)}));
    }
    let default_to = syncs.last().map_or(0, |x| x.id);
    let default_from = syncs
        .iter()
        .rev()
        .find(|x| syncs.last().is_some_and(|l| l.revision != x.revision))
        .or_else(|| syncs.iter().rev().nth(1))
        .map_or(default_to, |x| x.id);
    let page = HistoryPage {
        chrome: s.chrome(format!("plumb: {namespace}/{name} history")),
        app: format!("{namespace}/{name}"),
        app_href: s.at(&app_href(&namespace, &name)),
        diff_href: s.at(&(app_href(&namespace, &name) + "/diff")),
        loop_banner: crate::loop_banner(&view.report),
        timeline: crate::history::timeline(&syncs),
        compare_action: s.at(&(app_href(&namespace, &name) + "/history/diff")),
        default_to,
        default_from,
        syncs,
    };
    (html_headers(), render(&page)).into_response()
}

/// One writer of the fleet: who, its cause, and per app the fields it rewrites.
#[derive(Debug, Clone, Serialize)]
pub struct Actor {
    pub name: String,
    /// The doctor's cause type (`mutating-webhook`, `controller`, `manual-edit`, …).
    pub cause: String,
    /// `NAMESPACE/NAME` → the fields (`GROUP/KIND NS/NAME PATH`).
    pub apps: BTreeMap<String, Vec<String>>,
}

/// The writers the doctor finds in `reports` (each with its app's namespace and name), but
/// `unknown` and the objects git lacks or has extra (no writer to name).
pub fn actors_of(reports: &[(String, String, Report)]) -> Vec<Actor> {
    let mut by: BTreeMap<(String, String), Actor> = BTreeMap::new();
    for (ns, name, report) in reports {
        for f in &report.findings {
            let cause = f.cause.kind.as_str();
            if cause == "unknown" || f.cause.name.is_empty() || f.path.is_empty() {
                continue;
            }
            let a = by
                .entry((f.cause.name.clone(), cause.to_string()))
                .or_insert_with(|| Actor {
                    name: f.cause.name.clone(),
                    cause: cause.to_string(),
                    apps: BTreeMap::new(),
                });
            a.apps
                .entry(format!("{ns}/{name}"))
                .or_default()
                .push(format!("{} {}", f.resource, f.path));
        }
    }
    by.into_values().collect()
}

#[derive(Template)]
#[template(path = "actors.html")]
struct ActorsPage {
    chrome: Chrome,
    diagnosed: usize,
    sort: String,
    by_name: String,
    by_apps: String,
    by_fields: String,
    actors: Vec<ActorRowView>,
    errors: Vec<String>,
}

struct ActorRowView {
    name: String,
    cause: String,
    fields: usize,
    apps: Vec<ActorAppView>,
}

struct ActorAppView {
    name: String,
    href: String,
    fields: Vec<String>,
}

async fn actors(
    State(s): State<Arc<Shared>>,
    Query(q): Query<BTreeMap<String, String>>,
) -> Response {
    let backend = s.backend.clone();
    // Every app that is not in sync, diagnosed as its page would be.
    let found = blocking(move || {
        let rows = backend.apps()?;
        let mut reports = Vec::new();
        let mut errors = Vec::new();
        for r in rows.iter().filter(|r| r.verdict != Some(Verdict::InSync)) {
            match backend.app(&r.namespace, &r.name) {
                Ok(Some(v)) => reports.push((r.namespace.clone(), r.name.clone(), v.report)),
                Ok(None) => {}
                Err(e) => errors.push(format!("{}/{}: {e}", r.namespace, r.name)),
            }
        }
        Ok((reports, errors))
    })
    .await;
    let (reports, errors) = match found {
        Ok(v) => v,
        Err(e) => {
            return error(
                &s.base,
                StatusCode::INTERNAL_SERVER_ERROR,
                "Cannot list the apps",
                &e,
            );
        }
    };
    let mut list = actors_of(&reports);
    let fields = |a: &Actor| a.apps.values().map(Vec::len).sum::<usize>();
    let sort = q.get("sort").map_or("apps", String::as_str);
    match sort {
        "name" => list.sort_by(|a, b| a.name.cmp(&b.name)),
        "fields" => list.sort_by(|a, b| fields(b).cmp(&fields(a)).then(a.name.cmp(&b.name))),
        _ => list.sort_by(|a, b| b.apps.len().cmp(&a.apps.len()).then(a.name.cmp(&b.name))),
    }
    if q.get("format").is_some_and(|f| f == "json") {
        return json(
            serde_json::json!({"actors": list, "diagnosed": reports.len(), "errors": errors}),
        );
    }
    let page = ActorsPage {
        chrome: s.chrome("plumb: who rewrites declared fields".into()),
        diagnosed: reports.len(),
        sort: sort.to_string(),
        by_name: s.at("/actors?sort=name"),
        by_apps: s.at("/actors?sort=apps"),
        by_fields: s.at("/actors?sort=fields"),
        actors: list
            .iter()
            .map(|a| ActorRowView {
                name: a.name.clone(),
                cause: a.cause.clone(),
                fields: fields(a),
                apps: a
                    .apps
                    .iter()
                    .map(|(app, fs)| {
                        let (ns, n) = app.split_once('/').unwrap_or(("", app));
                        ActorAppView {
                            name: app.clone(),
                            href: s.at(&app_href(ns, n)),
                            fields: fs.clone(),
                        }
                    })
                    .collect(),
            })
            .collect(),
        errors,
    };
    (html_headers(), render(&page)).into_response()
}

/// The history diff's query: two ids of `status.history`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct HistoryDiffQuery {
    from: Option<i64>,
    to: Option<i64>,
    view: String,
    format: String,
}

async fn history_diff(
    State(s): State<Arc<Shared>>,
    Path((namespace, name)): Path<(String, String)>,
    Query(q): Query<HistoryDiffQuery>,
) -> Response {
    let view = match app_view(&s, &namespace, &name).await {
        Ok(v) => v,
        Err(page) => return page,
    };
    let syncs = crate::history::syncs(&view.application);
    let pick = |id: Option<i64>| id.and_then(|id| syncs.iter().find(|x| x.id == id));
    let (Some(from), Some(to)) = (pick(q.from), pick(q.to)) else {
        return error(
            &s.base,
            StatusCode::BAD_REQUEST,
            "Two syncs are needed",
            "Pick two entries of the history (from=ID&to=ID).",
        );
    };
    let (from, to) = (from.clone(), to.clone());
    let backend = s.backend.clone();
    let (ns, n) = (namespace.clone(), name.clone());
    let (a_rev, b_rev) = (from.revision.clone(), to.revision.clone());
    let rendered = blocking(move || {
        Ok((
            backend.render_at(&ns, &n, &a_rev)?,
            backend.render_at(&ns, &n, &b_rev)?,
        ))
    })
    .await;
    let (a, b) = match rendered {
        Ok(v) => v,
        Err(e) => {
            return error(
                &s.base,
                StatusCode::INTERNAL_SERVER_ERROR,
                "Cannot render the revisions",
                &e,
            );
        }
    };
    let changes = crate::diff::between(a, b);
    let (resources, _) = crate::diff::views(&changes, None);
    if q.format == "json" {
        return json(serde_json::json!({
            "from": from, "to": to,
            "resources": resources.iter().map(crate::diff::ResourceView::to_json).collect::<Vec<_>>(),
        }));
    }
    let base = s.at(&(app_href(&namespace, &name) + "/history/diff"));
    let href = |view: &str| {
        let mut pairs = vec![
            ("from".to_string(), from.id.to_string()),
            ("to".to_string(), to.id.to_string()),
        ];
        if !view.is_empty() {
            pairs.push(("view".into(), view.into()));
        }
        format!("{base}?{}", encode_query(&pairs))
    };
    let short = |r: &str| short(r);
    let page = DiffPage {
        chrome: s.chrome(format!("plumb: {namespace}/{name} history diff")),
        title: format!("sync {} ({}) to sync {} ({})", from.id, short(&from.revision), to.id, short(&to.revision)),
        old_label: format!("Sync {}", from.id),
        new_label: format!("Sync {}", to.id),
        about: "What git changed between the two syncs: the app rendered at each one's revision, per object. Secret values are masked.".into(),
        app: format!("{namespace}/{name}"),
        app_href: s.at(&app_href(&namespace, &name)),
        split: q.view == "split",
        unified_href: href(""),
        split_href: href("split"),
        actors: Vec::new(),
        resources,
    };
    (html_headers(), render(&page)).into_response()
}

/// `POST /apps/{namespace}/{name}/refresh`: refreshes the app when the form carries the
/// page's CSRF token (403 otherwise), then back to the app's page.
async fn refresh(
    State(s): State<Arc<Shared>>,
    Path((namespace, name)): Path<(String, String)>,
    axum::Form(form): axum::Form<BTreeMap<String, String>>,
) -> Response {
    let sent = form.get("csrf").map_or("", String::as_str);
    if !same(sent.as_bytes(), s.access.csrf.as_bytes()) {
        return error(
            &s.base,
            StatusCode::FORBIDDEN,
            "Refresh refused",
            "The request did not come from this server's page (its form token is missing or wrong).",
        );
    }
    let backend = s.backend.clone();
    let (ns, n) = (namespace.clone(), name.clone());
    match blocking(move || backend.refresh(&ns, &n)).await {
        Ok(true) => {
            let mut r = StatusCode::SEE_OTHER.into_response();
            if let Ok(v) = HeaderValue::from_str(&s.at(&app_href(&namespace, &name))) {
                r.headers_mut().insert(header::LOCATION, v);
            }
            r
        }
        Ok(false) => error(
            &s.base,
            StatusCode::NOT_FOUND,
            "No such app",
            &format!("There is no Application {namespace}/{name}."),
        ),
        Err(e) => error(
            &s.base,
            StatusCode::INTERNAL_SERVER_ERROR,
            "Refresh failed",
            &e,
        ),
    }
}

/// A revision as the pages show it: a commit SHA by its first 7 characters, anything else (a
/// tag, a branch, a chart version) whole.
pub(crate) fn short(revision: &str) -> String {
    if revision.len() == 40 && revision.bytes().all(|b| b.is_ascii_hexdigit()) {
        revision[..7].to_string()
    } else {
        revision.to_string()
    }
}

/// The link to an app's page: `/apps/NAMESPACE/NAME`, each segment percent-encoded.
pub fn app_href(namespace: &str, name: &str) -> String {
    format!("/apps/{}/{}", encode(namespace), encode(name))
}

/// The link to the list with `q`'s filters and page (empty ones left out).
pub fn list_href(q: &ListQuery) -> String {
    let page = if q.page > 1 {
        q.page.to_string()
    } else {
        String::new()
    };
    let pairs: Vec<(String, String)> = [
        ("q", &q.q),
        ("project", &q.project),
        ("sync", &q.sync),
        ("health", &q.health),
        ("verdict", &q.verdict),
        ("page", &page),
    ]
    .into_iter()
    .filter(|(_, v)| !v.is_empty())
    .map(|(k, v)| (k.to_string(), v.clone()))
    .collect();
    if pairs.is_empty() {
        "/".into()
    } else {
        format!("/?{}", encode_query(&pairs))
    }
}

/// Percent-encodes all but RFC 3986's unreserved characters.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn encode_query(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn query_pairs(q: &str) -> Vec<(String, String)> {
    serde_urlencoded::from_str::<Vec<(String, String)>>(q).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_plumbs_own_paths_with_encoded_segments() {
        assert_eq!(app_href("web", "api"), "/apps/web/api");
        assert_eq!(
            app_href("a/../b", "javascript:alert(1)"),
            "/apps/a%2F..%2Fb/javascript%3Aalert%281%29"
        );
        assert_eq!(list_href(&ListQuery::default()), "/");
        let q = ListQuery {
            q: "a b&c".into(),
            page: 2,
            ..ListQuery::default()
        };
        assert_eq!(list_href(&q), "/?q=a%20b%26c&page=2");
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd") && !same(b"abc", b"ab"));
    }
}
