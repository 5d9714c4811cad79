//! Progressive sync (`strategy.type: RollingSync`), pure: which Applications of an
//! ApplicationSet sync now, step by step, as Argo CD's ApplicationSet controller decides it.
//!
//! - Each Application belongs to the first step whose `matchExpressions` select its labels
//!   (one that matches no step is never synced by the ApplicationSet).
//! - The generated Applications lose `syncPolicy.automated`: the ApplicationSet syncs them
//!   (an `operation` on the Application, initiated by `applicationset-controller`).
//! - A step opens once every Application of the steps before it is `Healthy` (synced and
//!   healthy). In an open step, Applications with changes (`Waiting`) start (`Pending`), at most
//!   `maxUpdate` (a count or a percentage of the step, rounded down, at least 1; default all)
//!   being `Pending` or `Progressing` at once.
//! - An Application's progress is `status.applicationStatus`: `Waiting`, `Pending`,
//!   `Progressing`, `Healthy`, with its step and a transition time.

use crate::AppSetError;
use serde_json::{Value, json};

/// One step of a RollingSync.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// `matchExpressions` over the Applications' labels.
    pub match_expressions: Value,
    /// `maxUpdate`, resolved against the step's size by [`MaxUpdate::of`].
    pub max_update: MaxUpdate,
}

/// `maxUpdate`: a count or a percentage of the step's Applications.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MaxUpdate {
    Count(usize),
    Percent(u32),
}

impl MaxUpdate {
    /// How many Applications of a step of `size` may be updating at once.
    pub fn of(self, size: usize) -> usize {
        match self {
            // `0` updates none (a frozen step), as Argo CD reads it.
            MaxUpdate::Count(n) => n,
            MaxUpdate::Percent(0) => 0,
            MaxUpdate::Percent(p) => (size * p as usize / 100).max(1),
        }
    }
}

/// The RollingSync steps of `appset`, `None` when it has no RollingSync strategy.
pub fn steps(appset: &Value) -> Result<Option<Vec<Step>>, AppSetError> {
    let name = appset
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let fail = |m: String| AppSetError(format!("ApplicationSet {name}: spec.strategy{m}"));
    let Some(strategy) = appset.pointer("/spec/strategy").filter(|s| !s.is_null()) else {
        return Ok(None);
    };
    match strategy.get("type").and_then(Value::as_str).unwrap_or("") {
        "" | "AllAtOnce" => return Ok(None),
        "RollingSync" => {}
        other => {
            return Err(fail(format!(
                ".type: {other:?} is not AllAtOnce or RollingSync"
            )));
        }
    }
    let list = strategy
        .pointer("/rollingSync/steps")
        .and_then(Value::as_array)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| fail(".rollingSync.steps: at least one step is required".into()))?;
    let mut out = Vec::new();
    for (i, s) in list.iter().enumerate() {
        let at = format!(".rollingSync.steps[{i}]");
        let exprs = s.get("matchExpressions").cloned().unwrap_or(json!([]));
        if !exprs.is_array() {
            return Err(fail(format!("{at}.matchExpressions: expected a list")));
        }
        plumb_core::selector::validate(Some(&json!({"matchExpressions": exprs})))
            .map_err(|e| fail(format!("{at}: {e}")))?;
        let max_update = match s.get("maxUpdate") {
            None | Some(Value::Null) => MaxUpdate::Percent(100),
            Some(Value::Number(n)) => MaxUpdate::Count(
                n.as_u64()
                    .ok_or_else(|| fail(format!("{at}.maxUpdate: {n} is not a count")))?
                    as usize,
            ),
            Some(Value::String(p)) => match p.strip_suffix('%').map(str::parse::<u32>) {
                Some(Ok(v)) if v <= 100 => MaxUpdate::Percent(v),
                _ => match p.parse::<usize>() {
                    Ok(n) => MaxUpdate::Count(n),
                    Err(_) => {
                        return Err(fail(format!(
                            "{at}.maxUpdate: {p:?} is not a count or a percentage"
                        )));
                    }
                },
            },
            Some(_) => {
                return Err(fail(format!(
                    "{at}.maxUpdate: expected a count or a percentage"
                )));
            }
        };
        out.push(Step {
            match_expressions: exprs,
            max_update,
        });
    }
    Ok(Some(out))
}

/// `app` without `spec.syncPolicy.automated` (its `prune` returned: the sync the
/// ApplicationSet starts prunes as automated sync would have).
pub fn without_automated(app: &mut Value) -> bool {
    let prune = app
        .pointer("/spec/syncPolicy/automated/prune")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if let Some(sp) = app
        .pointer_mut("/spec/syncPolicy")
        .and_then(Value::as_object_mut)
    {
        sp.remove("automated");
    }
    prune
}

/// The step (0-based) of an Application with `labels`, `None` when no step selects it.
pub fn step_of(steps: &[Step], labels: &serde_json::Map<String, Value>) -> Option<usize> {
    steps.iter().position(|s| {
        plumb_core::selector::matches(
            Some(&json!({"matchExpressions": s.match_expressions})),
            labels,
        )
    })
}

/// The message of an Application whose sync was asked for and has not finished.
const SYNC_PROGRESSING: &str = "Application resource became Progressing";
/// The message of one synced but not yet healthy.
const HEALTH_PROGRESSING: &str = "Application resource is synced, not healthy yet";

/// What progressive sync does now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Progress {
    /// `status.applicationStatus`.
    pub statuses: Vec<Value>,
    /// The Applications to sync now, by name.
    pub sync: Vec<String>,
}

fn text<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or("")
}

/// The progress of the stored Applications `apps` (those generated, as stored), given the
/// ApplicationSet's previous `status.applicationStatus` (`previous`), at `now` (RFC 3339).
pub fn progress(
    steps: &[Step],
    generated: &[Value],
    apps: &[Value],
    previous: &[Value],
    now: &str,
) -> Progress {
    struct Row {
        name: String,
        step: usize,
        status: &'static str,
        message: &'static str,
        stored: bool,
    }
    let mut rows: Vec<Row> = Vec::new();
    for g in generated {
        let labels = plumb_core::selector::labels_of(g);
        let Some(step) = step_of(steps, &labels) else {
            continue;
        };
        let name = text(g, "/metadata/name").to_string();
        let Some(app) = apps.iter().find(|a| text(a, "/metadata/name") == name) else {
            // Generated, not stored yet: not healthy, nothing to sync.
            rows.push(Row {
                name,
                step,
                status: "Waiting",
                message: "Application is not created yet",
                stored: false,
            });
            continue;
        };
        let prev = previous.iter().find(|p| p["application"] == name.as_str());
        let prev_status = prev.map(|p| text(p, "/status")).unwrap_or("");
        let synced = text(app, "/status/sync/status") == "Synced";
        let healthy = text(app, "/status/health/status") == "Healthy";
        let requested = app.get("operation").is_some_and(|o| !o.is_null());
        let running = text(app, "/status/operationState/phase") == "Running";
        // A sync asked for (Pending) or seen (Progressing) whose operation has not finished
        // since: the Application controller clears the request before it writes `Running`, and
        // in between the Application must not look like it waits again (a second sync).
        let syncing = prev_status == "Pending"
            || (prev_status == "Progressing"
                && prev.map(|p| text(p, "/message")) == Some(SYNC_PROGRESSING));
        let unfinished = syncing && {
            let since = prev.map(|p| text(p, "/lastTransitionTime")).unwrap_or("");
            let finished = text(app, "/status/operationState/finishedAt");
            finished.is_empty() || finished < since
        };
        let pending = prev_status == "Pending" && unfinished;
        let (status, message) = if requested || running {
            ("Progressing", SYNC_PROGRESSING)
        } else if synced && healthy {
            ("Healthy", "Application resource became Healthy")
        } else if pending && !synced {
            (
                "Pending",
                "Application moved to Pending status, watching for the Application resource to start Progressing",
            )
        } else if unfinished && !synced {
            ("Progressing", SYNC_PROGRESSING)
        } else if !synced {
            // Changes to sync (again): Argo CD's "outdated".
            (
                "Waiting",
                "Application has pending changes, setting status to Waiting",
            )
        } else {
            ("Progressing", HEALTH_PROGRESSING)
        };
        rows.push(Row {
            name,
            step,
            status,
            message,
            stored: true,
        });
    }
    rows.sort_by(|a, b| (a.step, &a.name).cmp(&(b.step, &b.name)));
    let mut sync = Vec::new();
    for (step, spec) in steps.iter().enumerate() {
        let earlier_healthy = rows
            .iter()
            .filter(|r| r.step < step)
            .all(|r| r.status == "Healthy");
        if !earlier_healthy {
            break;
        }
        let size = rows.iter().filter(|r| r.step == step).count();
        let busy = rows
            .iter()
            .filter(|r| r.step == step && matches!(r.status, "Pending" | "Progressing"))
            .count();
        let mut room = spec.max_update.of(size).saturating_sub(busy);
        for r in rows.iter_mut().filter(|r| r.step == step) {
            if room == 0 {
                break;
            }
            if r.status == "Waiting" && r.stored {
                r.status = "Pending";
                r.message = "Application moved to Pending status, watching for the Application resource to start Progressing";
                sync.push(r.name.clone());
                room -= 1;
            }
        }
    }
    let statuses = rows
        .iter()
        .map(|r| {
            let since = previous
                .iter()
                .find(|p| p["application"] == r.name.as_str() && p["status"] == r.status)
                .and_then(|p| p.get("lastTransitionTime").cloned())
                .unwrap_or_else(|| Value::String(now.to_string()));
            json!({"application": r.name, "status": r.status, "message": r.message,
                   "step": (r.step + 1).to_string(), "lastTransitionTime": since})
        })
        .collect();
    Progress { statuses, sync }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(steps: Value) -> Value {
        json!({"metadata": {"name": "envs"},
               "spec": {"strategy": {"type": "RollingSync", "rollingSync": {"steps": steps}}}})
    }

    fn app(name: &str, env: &str, sync: &str, health: &str) -> Value {
        json!({"metadata": {"name": name, "labels": {"env": env}},
               "status": {"sync": {"status": sync}, "health": {"status": health}}})
    }

    fn by_env() -> Vec<Step> {
        steps(&set(json!([
            {"matchExpressions": [{"key": "env", "operator": "In", "values": ["dev"]}]},
            {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}],
             "maxUpdate": "50%"}])))
        .unwrap()
        .unwrap()
    }

    /// Argo CD's documented example (Progressive Syncs): dev first, then prod once dev is
    /// healthy, prod at most half at a time.
    #[test]
    fn a_step_starts_once_the_previous_is_healthy_and_max_update_limits_it() {
        let s = by_env();
        let apps = vec![
            app("dev", "dev", "OutOfSync", "Healthy"),
            app("prod-a", "prod", "OutOfSync", "Healthy"),
            app("prod-b", "prod", "OutOfSync", "Healthy"),
            app("other", "qa", "OutOfSync", "Healthy"),
        ];
        let p = progress(&s, &apps, &apps, &[], "t0");
        assert_eq!(p.sync, ["dev"]);
        let st: Vec<(&str, &str)> = p
            .statuses
            .iter()
            .map(|s| (text(s, "/application"), text(s, "/status")))
            .collect();
        assert_eq!(
            st,
            [
                ("dev", "Pending"),
                ("prod-a", "Waiting"),
                ("prod-b", "Waiting")
            ],
            "an app no step selects is not listed"
        );
        // dev synced and healthy: prod opens, one at a time (50% of 2).
        let mut apps2 = apps.clone();
        apps2[0] = app("dev", "dev", "Synced", "Healthy");
        let p2 = progress(&s, &apps2, &apps2, &p.statuses, "t1");
        assert_eq!(p2.sync, ["prod-a"]);
        // While prod-a is progressing, prod-b waits.
        let mut apps3 = apps2.clone();
        apps3[1]["status"]["operationState"] = json!({"phase": "Running"});
        let p3 = progress(&s, &apps3, &apps3, &p2.statuses, "t2");
        assert!(p3.sync.is_empty(), "{:?}", p3.sync);
        assert_eq!(
            p3.statuses[0]["lastTransitionTime"], "t1",
            "dev Healthy since t1"
        );
    }

    #[test]
    fn a_progressing_earlier_step_holds_the_later_ones() {
        let s = by_env();
        let apps = vec![
            app("dev", "dev", "Synced", "Progressing"),
            app("prod-a", "prod", "OutOfSync", "Healthy"),
        ];
        let prev = vec![json!({"application": "dev", "status": "Pending"})];
        let p = progress(&s, &apps, &apps, &prev, "t");
        assert!(p.sync.is_empty());
        assert_eq!(p.statuses[0]["status"], "Progressing");
    }

    #[test]
    fn pending_lasts_until_the_sync_ends_and_a_new_change_waits_again() {
        let s = by_env();
        let prev = vec![json!({"application": "dev", "status": "Pending",
                               "lastTransitionTime": "2026-12-05T10:00:00Z"})];
        // Asked for, not seen running yet (an older operation finished before): Pending, not
        // synced twice.
        let mut dev = app("dev", "dev", "OutOfSync", "Healthy");
        dev["status"]["operationState"] =
            json!({"phase": "Succeeded", "finishedAt": "2026-12-05T09:00:00Z"});
        let p = progress(
            &s,
            std::slice::from_ref(&dev),
            std::slice::from_ref(&dev),
            &prev,
            "2026-12-05T10:00:01Z",
        );
        assert!(p.sync.is_empty());
        assert_eq!(p.statuses[0]["status"], "Pending");
        // It ran and failed: OutOfSync again, so Waiting, and synced again.
        dev["status"]["operationState"] =
            json!({"phase": "Failed", "finishedAt": "2026-12-05T10:00:05Z"});
        let p = progress(
            &s,
            std::slice::from_ref(&dev),
            std::slice::from_ref(&dev),
            &prev,
            "2026-12-05T10:00:06Z",
        );
        assert_eq!(p.sync, ["dev"]);
        // A Progressing app with a new change waits, then syncs again.
        let prev = vec![json!({"application": "dev", "status": "Progressing"})];
        let waiting = [app("dev", "dev", "OutOfSync", "Progressing")];
        let p = progress(&s, &waiting, &waiting, &prev, "t");
        assert_eq!(p.sync, ["dev"]);
        // Asked for and seen (Progressing with the sync's message), then the request cleared
        // before the operation writes `Running`: still Progressing, not synced a second time.
        let prev = vec![json!({"application": "dev", "status": "Progressing",
            "message": SYNC_PROGRESSING, "lastTransitionTime": "2026-12-05T10:00:00Z"})];
        let p = progress(&s, &waiting, &waiting, &prev, "2026-12-05T10:00:01Z");
        assert!(p.sync.is_empty());
        assert_eq!(p.statuses[0]["status"], "Progressing");
    }

    #[test]
    fn an_earlier_step_not_created_yet_holds_the_later_ones() {
        let s = by_env();
        let generated = vec![
            app("dev", "dev", "", ""),
            app("prod", "prod", "OutOfSync", "Healthy"),
        ];
        let stored = vec![app("prod", "prod", "OutOfSync", "Healthy")];
        let p = progress(&s, &generated, &stored, &[], "t");
        assert!(p.sync.is_empty(), "{:?}", p.sync);
        assert_eq!(p.statuses[0]["status"], "Waiting");
    }

    #[test]
    fn bad_strategies_are_one_line_and_all_at_once_is_none() {
        assert_eq!(
            steps(&json!({"spec": {"strategy": {"type": "AllAtOnce"}}})).unwrap(),
            None
        );
        let e = steps(&set(json!([]))).unwrap_err().0;
        assert_eq!(
            e,
            "ApplicationSet envs: spec.strategy.rollingSync.steps: at least one step is required"
        );
        let e = steps(&set(json!([{"maxUpdate": "lots"}]))).unwrap_err().0;
        assert!(e.contains("steps[0].maxUpdate"), "{e}");
        assert_eq!(MaxUpdate::Percent(10).of(3), 1, "at least one");
        assert_eq!(MaxUpdate::Percent(50).of(5), 2);
        assert_eq!(MaxUpdate::Count(0).of(5), 0, "a frozen step");
        assert_eq!(MaxUpdate::Percent(0).of(5), 0);
    }

    #[test]
    fn automated_sync_is_removed_and_its_prune_kept() {
        let mut a =
            json!({"spec": {"syncPolicy": {"automated": {"prune": true}, "syncOptions": ["x"]}}});
        assert!(without_automated(&mut a));
        assert_eq!(a, json!({"spec": {"syncPolicy": {"syncOptions": ["x"]}}}));
    }
}
