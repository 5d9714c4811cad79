//! Refresh on push: the controller's side of a git push webhook. Which apps a push concerns
//! is [`crate::webhook::refreshes`] over the Applications in the watch cache (no request to
//! the API server); those apps' repository mirrors are expired, so that the refresh fetches
//! the pushed commit instead of reading a mirror fetched moments before (within the 30 s
//! interval; `RepoCache::expire`), and the apps are sent on a channel into the controller's
//! loop ([`super::Schedule::refresh_now`]: due now with trigger `webhook`, or once more right
//! after a reconcile under way). [`PushRefresher`] comes from
//! [`Controller::push_refresher`](super::Controller::push_refresher).

use super::{AppKey, app_key, application_kind};
use crate::scope::AppScope;
use crate::webhook::{Push, refreshes};
use plumb_cluster::LiveCache;
use plumb_render::remote::RepoCache;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Refreshes the apps a push concerns; cheap to clone, usable from any task.
#[derive(Clone)]
pub struct PushRefresher {
    cache: LiveCache,
    scope: AppScope,
    app_namespace: Option<String>,
    /// The API group of the Applications served.
    app_group: &'static str,
    repos: Arc<RepoCache>,
    queue: mpsc::UnboundedSender<Vec<AppKey>>,
}

impl PushRefresher {
    pub(super) fn new(
        cache: LiveCache,
        scope: AppScope,
        app_namespace: Option<String>,
        app_group: &'static str,
        repos: Arc<RepoCache>,
        queue: mpsc::UnboundedSender<Vec<AppKey>>,
    ) -> PushRefresher {
        PushRefresher {
            cache,
            scope,
            app_namespace,
            app_group,
            repos,
            queue,
        }
    }

    /// The served Applications `push` concerns (sorted), after queueing them for a refresh
    /// now and expiring the mirrors of the pushed repository.
    pub fn refresh(&self, push: &Push) -> Vec<AppKey> {
        let apps: Vec<Arc<Value>> = self.cache.list(
            &application_kind(self.app_group),
            self.app_namespace.as_deref(),
        );
        let mut keys: Vec<AppKey> = apps
            .iter()
            .filter(|app| refreshes(app, push))
            .filter_map(|app| app_key(app))
            .filter(|key| self.scope.serves(&key.0))
            .collect();
        keys.sort();
        if !keys.is_empty() {
            self.repos.expire(|url| push.names_repo(url));
            let _ = self.queue.send(keys.clone());
        }
        keys
    }
}
