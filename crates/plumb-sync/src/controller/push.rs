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
    /// Where the ApplicationSets a push concerns go ([`super::appsets::AppSets::run`]).
    appsets: Option<mpsc::UnboundedSender<Vec<AppKey>>>,
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
            appsets: None,
        }
    }

    /// Also regenerates, at once, the ApplicationSets whose git generators read the pushed
    /// repository: their keys go to `queue`.
    pub fn with_appsets(mut self, queue: mpsc::UnboundedSender<Vec<AppKey>>) -> PushRefresher {
        self.appsets = Some(queue);
        self
    }

    /// The served Applications `push` concerns (sorted), after queueing them for a refresh
    /// now and expiring the mirrors of the pushed repository.
    pub fn refresh(&self, push: &Push) -> Vec<AppKey> {
        let mut keys: Vec<AppKey> = Vec::new();
        self.cache.each(
            &application_kind(self.app_group),
            self.app_namespace.as_deref(),
            |app| {
                if refreshes(app, push)
                    && let Some(key) = app_key(app)
                    && self.scope.serves(&key.0)
                {
                    keys.push(key);
                }
            },
        );
        if !keys.is_empty() {
            self.repos.expire(|url| push.names_repo(url));
            let _ = self.queue.send(keys.clone());
        }
        if let Some(queue) = &self.appsets {
            let sets: Vec<AppKey> = self
                .cache
                .list(
                    &plumb_core::GroupKind::new(
                        self.app_group,
                        super::appsets::APPLICATIONSET_KIND,
                    ),
                    self.app_namespace.as_deref(),
                )
                .iter()
                .filter(|s| {
                    plumb_appset::git_repo_urls(s)
                        .iter()
                        .any(|u| push.names_repo(u))
                })
                .filter_map(|s| app_key(s))
                .filter(|key| self.scope.serves(&key.0))
                .collect();
            if !sets.is_empty() {
                self.repos.expire(|url| push.names_repo(url));
                let _ = queue.send(sets);
            }
        }
        keys
    }
}
