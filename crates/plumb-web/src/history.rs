//! The history page: the Application's `status.history` as a table and as a timeline drawn on
//! the server (SVG, no script): one lane per revision, one mark per sync, its shape saying who
//! started it (automated, self-heal, a person), the gaps between syncs of one revision labelled
//! (a backoff shows as growing gaps), and, for a loop, the banner naming the writers.
//!
//! A sync is **self-heal** when automated and of the same revision as the sync before it
//! (automated sync starts only for a new revision; Argo CD's self-heal re-applies the same
//! one), **automated** otherwise when automated, else **manual** (by its `username`).

use crate::server::short;
use plumb_core::argo::model::ApplicationStatus;
use plumb_core::time::format_rfc3339;
use serde::Serialize;
use serde_json::Value;
use std::time::SystemTime;

/// Who started a sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trigger {
    Automated,
    SelfHeal,
    Manual,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Automated => "automated",
            Trigger::SelfHeal => "self-heal",
            Trigger::Manual => "manual",
        }
    }
}

/// One sync of the history.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sync {
    pub id: i64,
    pub revision: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployed_at: Option<String>,
    /// Seconds from start to finish.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds: Option<u64>,
    pub trigger: Trigger,
    /// The user of a manual sync.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub username: String,
    #[serde(skip)]
    at: Option<SystemTime>,
}

/// The syncs of `app`'s `status.history`, oldest first.
pub fn syncs(app: &Value) -> Vec<Sync> {
    let (status, _) = ApplicationStatus::read_lenient(app);
    let mut out: Vec<Sync> = Vec::new();
    for e in &status.history {
        let revision = if e.revision.is_empty() {
            e.revisions.join(",")
        } else {
            e.revision.clone()
        };
        let trigger = if !e.initiated_by.automated {
            Trigger::Manual
        } else if out.last().is_some_and(|p| p.revision == revision) {
            Trigger::SelfHeal
        } else {
            Trigger::Automated
        };
        out.push(Sync {
            id: e.id,
            seconds: match (e.deploy_started_at, e.deployed_at) {
                (Some(a), Some(b)) => b.duration_since(a).ok().map(|d| d.as_secs()),
                _ => None,
            },
            started_at: e.deploy_started_at.map(format_rfc3339),
            deployed_at: e.deployed_at.map(format_rfc3339),
            revision,
            trigger,
            username: e.initiated_by.username.clone(),
            at: e.deployed_at.or(e.deploy_started_at),
        });
    }
    out
}

/// The timeline's drawing: lanes, marks and gap labels in SVG coordinates.
pub(crate) struct Timeline {
    pub width: u32,
    pub height: u32,
    pub lanes: Vec<Lane>,
    pub marks: Vec<Mark>,
    pub gaps: Vec<Gap>,
    /// Axis labels: x, text, and its anchor (`start`, `middle`, `end`: inside the drawing).
    pub ticks: Vec<(u32, String, &'static str)>,
}

pub(crate) struct Lane {
    pub y: u32,
    pub label: String,
}

pub(crate) struct Mark {
    /// `automated`, `self-heal`, `manual`: the shape (and its class).
    pub trigger: &'static str,
    /// The tooltip.
    pub title: String,
    /// An SVG path for the shape, centred on (x, y).
    pub path: String,
}

pub(crate) struct Gap {
    pub x: u32,
    pub y: u32,
    pub label: String,
}

const LEFT: u32 = 130;
const RIGHT: u32 = 30;
const WIDTH: u32 = 900;
const LANE: u32 = 44;
const TOP: u32 = 28;

/// The timeline of `syncs`; `None` when fewer than one sync has a time.
pub(crate) fn timeline(syncs: &[Sync]) -> Option<Timeline> {
    let timed: Vec<(&Sync, SystemTime)> = syncs.iter().filter_map(|s| Some((s, s.at?))).collect();
    let first = timed.iter().map(|(_, t)| *t).min()?;
    let last = timed.iter().map(|(_, t)| *t).max()?;
    let span = last
        .duration_since(first)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
        .max(1.0);
    let plot = f64::from(WIDTH - LEFT - RIGHT);
    let x_of = |t: SystemTime| -> u32 {
        let s = t
            .duration_since(first)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        LEFT + (s / span * plot).round() as u32
    };
    // Lanes in the order revisions first appear.
    let mut revisions: Vec<&str> = Vec::new();
    for (s, _) in &timed {
        if !revisions.contains(&s.revision.as_str()) {
            revisions.push(&s.revision);
        }
    }
    let y_of = |rev: &str| -> u32 {
        TOP + LANE / 2 + LANE * revisions.iter().position(|r| *r == rev).unwrap_or(0) as u32
    };
    let lanes = revisions
        .iter()
        .map(|r| Lane {
            y: y_of(r),
            // A lane's label has the room of 16 characters (a branch or tag name is cut).
            label: short(r).chars().take(16).collect(),
        })
        .collect();
    let mut marks = Vec::new();
    let mut gaps = Vec::new();
    let mut prev: Option<(&Sync, SystemTime)> = None;
    for &(s, t) in &timed {
        let (x, y) = (x_of(t), y_of(&s.revision));
        let who = match s.trigger {
            Trigger::Manual if !s.username.is_empty() => format!("manual, by {}", s.username),
            t => t.as_str().to_string(),
        };
        marks.push(Mark {
            trigger: s.trigger.as_str(),
            title: format!(
                "sync {} of {} at {}: {}",
                s.id,
                short(&s.revision),
                format_rfc3339(t),
                who
            ),
            path: shape(s.trigger, x, y),
        });
        if let Some((p, pt)) = prev
            && p.revision == s.revision
            && let Ok(d) = t.duration_since(pt)
        {
            gaps.push(Gap {
                x: (x_of(pt) + x) / 2,
                y: y - 12,
                label: human(d.as_secs()),
            });
        }
        prev = Some((s, t));
    }
    let ticks = [(0.0, "start"), (0.5, "middle"), (1.0, "end")]
        .iter()
        .map(|&(f, anchor)| {
            let t = first + std::time::Duration::from_secs_f64(span * f);
            (LEFT + (plot * f).round() as u32, format_rfc3339(t), anchor)
        })
        .collect();
    Some(Timeline {
        width: WIDTH,
        height: TOP + LANE * revisions.len() as u32 + 30,
        lanes,
        marks,
        gaps,
        ticks,
    })
}

/// A circle (automated), a diamond (self-heal) or a square (manual), as a path at (x, y).
fn shape(t: Trigger, x: u32, y: u32) -> String {
    let (x, y) = (i64::from(x), i64::from(y));
    match t {
        Trigger::Automated => format!("M {} {y} a 7 7 0 1 0 14 0 a 7 7 0 1 0 -14 0 Z", x - 7),
        Trigger::SelfHeal => format!(
            "M {x} {} L {} {y} L {x} {} L {} {y} Z",
            y - 8,
            x + 8,
            y + 8,
            x - 8
        ),
        Trigger::Manual => format!("M {} {} h 13 v 13 h -13 Z", x - 6, y - 6),
    }
}

fn human(secs: u64) -> String {
    plumb_doctor::report::human_span(secs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(id: i64, rev: &str, at: &str, automated: bool) -> Value {
        json!({"id": id, "revision": rev, "deployedAt": at, "deployStartedAt": at,
               "initiatedBy": if automated { json!({"automated": true}) } else { json!({"username": "ana"}) }})
    }

    #[test]
    fn triggers_and_gaps() {
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        let app = json!({"status": {"history": [
            entry(0, &a, "2026-09-22T19:00:00Z", false),
            entry(1, &b, "2026-09-22T19:00:10Z", true),
            entry(2, &b, "2026-09-22T19:00:13Z", true),
            entry(3, &b, "2026-09-22T19:00:20Z", true),
        ]}});
        let s = syncs(&app);
        let kinds: Vec<Trigger> = s.iter().map(|s| s.trigger).collect();
        assert_eq!(
            kinds,
            [
                Trigger::Manual,
                Trigger::Automated,
                Trigger::SelfHeal,
                Trigger::SelfHeal
            ]
        );
        let t = timeline(&s).expect("a timeline");
        assert_eq!(t.lanes.len(), 2);
        assert_eq!(t.marks.len(), 4);
        // Gaps between syncs of one revision only: 3 s, then 7 s.
        assert_eq!(
            t.gaps.iter().map(|g| g.label.as_str()).collect::<Vec<_>>(),
            ["3s", "7s"]
        );
        // The first (a manual square) at the left edge, the last (a self-heal diamond) at the
        // right one.
        assert!(
            t.marks[0].path.starts_with(&format!("M {} ", LEFT - 6)),
            "{}",
            t.marks[0].path
        );
        assert!(
            t.marks[3]
                .path
                .starts_with(&format!("M {} ", WIDTH - RIGHT)),
            "{}",
            t.marks[3].path
        );
    }
}
