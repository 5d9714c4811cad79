//! `plumb render --plugins DIR` end to end: an Application with `spec.source.plugin` rendered
//! from a git revision by a config management plugin, the refusal without `--plugins`, a bad
//! plugin manifest, and a plugin that hangs (killed, with what it started, at
//! `PLUMB_TOOL_TIMEOUT`).

mod common;
use common::{err, git, out, tmp, write};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn plumb(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(args)
        .current_dir(dir)
        .envs(env.iter().copied())
        .output()
        .expect("plumb runs")
}

const APP: &str = "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: guestbook, namespace: argocd}
spec:
  destination: {namespace: web, server: https://kubernetes.default.svc}
  source:
    repoURL: .
    path: app
    plugin:
      name: PLUGIN_NAME
      env: [{name: GREETING, value: hello-$ARGOCD_APP_NAME}]
";

const PLUGIN: &str = "apiVersion: argoproj.io/v1alpha1
kind: ConfigManagementPlugin
metadata: {name: greet}
spec:
  version: v2
  init:
    command: [sh, -c, 'echo \"preparing\" >&2']
  generate:
    command: [sh, -c]
    args:
      - |
        cat <<EOF
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: greeting, namespace: $ARGOCD_APP_NAMESPACE}
        data: {greeting: $ARGOCD_ENV_GREETING, rev: '$ARGOCD_APP_REVISION_SHORT'}
        ---
        EOF
        cat *.yaml
  discover:
    fileName: '*.yaml'
";

#[test]
fn render_with_a_plugin_end_to_end() {
    let d = tmp("plugins", "render");
    write(
        &d,
        "app/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: committed\n",
    );
    git(&d, &["init", "-q"]);
    git(&d, &["add", "."]);
    git(&d, &["commit", "-qm", "one"]);
    let short = git(&d, &["rev-parse", "--short=7", "HEAD"]);
    // The work tree differs from the revision: the plugin sees the revision.
    write(
        &d,
        "app/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: uncommitted\n",
    );
    write(&d, "plugins/greet.yaml", PLUGIN);
    write(&d, "app.yaml", &APP.replace("PLUGIN_NAME", "greet-v2"));
    let o = plumb(
        &d,
        &["render", "--app", "app.yaml", "--plugins", "plugins"],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    assert!(text.starts_with("# Plugin source app at HEAD ("), "{text}");
    for want in [
        "name: greeting",
        "namespace: web",
        "greeting: hello-guestbook",
        "name: committed",
    ] {
        assert!(text.contains(want), "{want} in {text}");
    }
    // A short SHA of digits only is quoted (a string, not a number), in either style.
    assert!(
        [
            format!("rev: {short}"),
            format!("rev: '{short}'"),
            format!("rev: \"{short}\"")
        ]
        .iter()
        .any(|want| text.contains(want.as_str())),
        "{text}"
    );
    assert!(!text.contains("uncommitted"), "{text}");

    // Without --plugins: refused, saying why.
    let o = plumb(&d, &["render", "--app", "app.yaml"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("no --plugins directory was given"),
        "{}",
        err(&o)
    );

    // A name no plugin has.
    write(&d, "app.yaml", &APP.replace("PLUGIN_NAME", "greet"));
    let o = plumb(
        &d,
        &["render", "--app", "app.yaml", "--plugins", "plugins"],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("name it greet-v2"), "{}", err(&o));

    // A bad manifest in the directory: one line naming the file and place.
    write(&d, "bad-plugins/broken.yaml", "apiVersion: [\n");
    let o = plumb(
        &d,
        &["render", "--app", "app.yaml", "--plugins", "bad-plugins"],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    let e = err(&o);
    assert!(
        e.starts_with("error: --plugins: ") && e.contains("broken.yaml:1:"),
        "{e}"
    );
}

#[test]
fn a_hanging_plugin_is_killed_with_what_it_started_at_the_deadline() {
    let d = tmp("plugins", "hang");
    write(
        &d,
        "app/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
    );
    let pid_file = d.join("bg.pid");
    write(
        &d,
        "plugins/hang.yaml",
        &format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: ConfigManagementPlugin\nmetadata: {{name: hang}}\n\
             spec:\n  generate:\n    command: [sh, -c, 'sleep 300 & echo $! > {}; echo stuck >&2; sleep 300']\n",
            pid_file.display()
        ),
    );
    write(
        &d,
        "app.yaml",
        &APP.replace("PLUGIN_NAME", "hang")
            .replace("repoURL: .", &format!("repoURL: {}", d.display())),
    );
    // The message is the evidence of the deadline (no elapsed-time assertion: a busy machine
    // would fail one; without the kill, plumb would wait for the 300 s sleep and say nothing).
    let o = plumb(
        &d,
        &["render", "--app", "app.yaml", "--plugins", "plugins"],
        &[("PLUMB_TOOL_TIMEOUT", "1")],
    );
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    let e = err(&o);
    assert!(
        e.contains(
            "plugin hang: generate (sh): timed out after 1s (PLUMB_TOOL_TIMEOUT); killed: stuck"
        ),
        "{e}"
    );
    // The background process the plugin started is gone too (its process group was killed).
    let pid = std::fs::read_to_string(&pid_file).expect("the plugin wrote its child's pid");
    let stat = format!("/proc/{}/stat", pid.trim());
    let gone = || {
        std::fs::read_to_string(&stat)
            .map(|s| s.split(") ").nth(1).is_some_and(|r| r.starts_with('Z')))
            .unwrap_or(true)
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while !gone() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(gone(), "pid {} still runs", pid.trim());
}
