//! Config management plugins run as Argo CD runs them: selection by name and discovery, the
//! environment a plugin gets (and nothing else), parameters, the private copy of a git
//! revision, bad plugins (exit status, garbage, huge output), and a real `helm template`
//! piped into `kubectl kustomize` (skipped, saying why, without helm or kubectl, unless
//! `REQUIRE_HELM=1`). The deadline is held by `plumb-cli/tests/plugins.rs`, which can give
//! the binary `PLUMB_TOOL_TIMEOUT`.

use plumb_core::argo::AppSource;
use plumb_render::plugin::Plugins;
use plumb_render::render::{RenderOptions, Rendered, SourceType, render};
use plumb_render::source::open_source;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

struct Tmp(PathBuf);

impl Tmp {
    fn new(tag: &str) -> Tmp {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = std::env::temp_dir().join(format!(
            "plumb-plugins-test-{}-{tag}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Tmp(d)
    }
    fn write(&self, rel: &str, text: &str) -> &Tmp {
        let p = self.0.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
        self
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A plugin manifest running `script` with `sh -c`.
fn plugin(name: &str, version: &str, discover: &str, script: &str) -> String {
    let script = serde_json::to_string(script).unwrap();
    format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: ConfigManagementPlugin\nmetadata:\n  name: {name}\n\
         spec:\n  version: '{version}'\n  generate:\n    command: [sh, -c]\n    args: [{script}]\n{discover}"
    )
}

const CAT: &str = "cat *.yaml";

fn opts(plugins: &Tmp) -> RenderOptions {
    RenderOptions {
        app_name: Some("guestbook".into()),
        namespace: Some("web".into()),
        project: Some("team".into()),
        plugins: Some(Arc::new(Plugins::load(&plugins.0).expect("plugins load"))),
        ..RenderOptions::default()
    }
}

fn source(path: &str, plugin: Option<Value>) -> AppSource {
    let mut v =
        json!({"repoURL": "https://git.example.com/r.git", "path": path, "targetRevision": "main"});
    if let Some(p) = plugin {
        v["plugin"] = p;
    }
    serde_json::from_value(v).unwrap()
}

fn run(repo: &Path, path: &str, plugin: Option<Value>, plugins: &Tmp) -> Result<Rendered, String> {
    let fs = open_source(repo, None).unwrap();
    render(fs.as_ref(), path, &source(path, plugin), &opts(plugins)).map_err(|e| e.to_string())
}

fn names(r: &Rendered) -> Vec<String> {
    r.objects
        .iter()
        .map(|o| o.object["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-repo\n";

#[test]
fn a_named_plugin_renders_with_argo_cds_environment_and_nothing_else() {
    let plugins = Tmp::new("p");
    let script = r#"cat <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: env
data:
  app: '$ARGOCD_APP_NAME'
  ns: '$ARGOCD_APP_NAMESPACE'
  project: '$ARGOCD_APP_PROJECT_NAME'
  repo: '$ARGOCD_APP_SOURCE_REPO_URL'
  path: '$ARGOCD_APP_SOURCE_PATH'
  target: '$ARGOCD_APP_SOURCE_TARGET_REVISION'
  foo: '$ARGOCD_ENV_FOO'
  rev: '$ARGOCD_ENV_REV'
  params: '$ARGOCD_APP_PARAMETERS'
  str: '$PARAM_SOME_STRING'
  arr1: '$PARAM_VALUES_FILES_1'
  map: '$PARAM_HELM_PARAMETERS_IMAGE_TAG'
  pwd: '$(pwd)'
  home: '$HOME'
  names: '$(env | cut -d= -f1 | grep -v -x -e PWD -e SHLVL -e _ -e OLDPWD | sort | tr '\n' ,)'
EOF
echo ---
cat *.yaml"#;
    plugins.write("env.yaml", &plugin("env", "v1.0", "", script));
    let repo = Tmp::new("r");
    repo.write("apps/one/cm.yaml", CM);
    let r = run(
        &repo.0,
        "apps/one",
        Some(json!({
            "name": "env-v1.0",
            "env": [{"name": "FOO", "value": "bar"}, {"name": "REV", "value": "x-$ARGOCD_APP_NAME-$$"}],
            "parameters": [
                {"name": "some-string", "string": "s"},
                {"name": "values-files", "array": ["a.yaml", "b.yaml"]},
                {"name": "helm-parameters", "map": {"image.tag": "v1.2.3"}},
            ],
        })),
        &plugins,
    )
    .unwrap();
    assert_eq!(r.source_type, SourceType::Plugin);
    assert_eq!(names(&r), ["env", "from-repo"]);
    assert!(
        r.notes.iter().any(|n| n.contains("plugin env-v1.0")),
        "{:?}",
        r.notes
    );
    let d = &r.objects[0].object["data"];
    assert_eq!(d["app"], "guestbook");
    assert_eq!(d["ns"], "web");
    assert_eq!(d["project"], "team");
    assert_eq!(d["repo"], "https://git.example.com/r.git");
    assert_eq!(d["path"], "apps/one");
    assert_eq!(d["target"], "main");
    assert_eq!(d["foo"], "bar");
    assert_eq!(d["rev"], "x-guestbook-$");
    assert_eq!(
        d["params"],
        r#"[{"name":"some-string","string":"s"},{"array":["a.yaml","b.yaml"],"name":"values-files"},{"map":{"image.tag":"v1.2.3"},"name":"helm-parameters"}]"#
    );
    assert_eq!(d["str"], "s");
    assert_eq!(d["arr1"], "b.yaml");
    assert_eq!(d["map"], "v1.2.3");
    // The app's path in a private copy, HOME its root; the copy is gone afterwards.
    let pwd = d["pwd"].as_str().unwrap();
    let home = d["home"].as_str().unwrap();
    assert_eq!(pwd, format!("{home}/apps/one"));
    assert!(!pwd.starts_with(repo.0.to_str().unwrap()));
    assert!(!Path::new(home).exists(), "the private copy is removed");
    // Nothing of plumb's environment but PATH.
    assert_eq!(
        d["names"],
        "ARGOCD_APP_NAME,ARGOCD_APP_NAMESPACE,ARGOCD_APP_PARAMETERS,ARGOCD_APP_PROJECT_NAME,\
         ARGOCD_APP_REVISION,ARGOCD_APP_REVISION_SHORT,ARGOCD_APP_REVISION_SHORT_8,\
         ARGOCD_APP_SOURCE_PATH,ARGOCD_APP_SOURCE_REPO_URL,ARGOCD_APP_SOURCE_TARGET_REVISION,\
         ARGOCD_ENV_FOO,ARGOCD_ENV_REV,HOME,KUBE_API_VERSIONS,KUBE_VERSION,PARAM_HELM_PARAMETERS_IMAGE_TAG,\
         PARAM_SOME_STRING,PARAM_VALUES_FILES_0,PARAM_VALUES_FILES_1,PATH,"
    );

    // The bare name of a versioned plugin is not its name (Argo CD's socket is NAME-VERSION).
    let e = run(&repo.0, "apps/one", Some(json!({"name": "env"})), &plugins).unwrap_err();
    assert!(
        e.contains("no plugin env") && e.contains("name it env-v1.0"),
        "{e}"
    );
    // Without --plugins the source is refused, saying so.
    let fs = open_source(&repo.0, None).unwrap();
    let e = render(
        fs.as_ref(),
        "apps/one",
        &source("apps/one", Some(json!({"name": "env-v1.0"}))),
        &RenderOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("no --plugins directory was given"), "{e}");
}

#[test]
fn a_git_revision_is_copied_from_the_object_database_and_revision_variables_are_set() {
    let plugins = Tmp::new("p");
    plugins.write(
        "rev/plugin.yaml",
        &plugin(
            "rev",
            "",
            "",
            "printf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: rev\\ndata:\\n  r: \"%s\"\\n  s: \"%s\"\\n  s8: \"%s\"\\n' \"$ARGOCD_APP_REVISION\" \"$ARGOCD_APP_REVISION_SHORT\" \"$ARGOCD_APP_REVISION_SHORT_8\"; echo ---; cat *.yaml",
        ),
    );
    let repo = Tmp::new("g");
    repo.write("app/cm.yaml", CM);
    let git = |args: &[&str]| {
        let o = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(&repo.0)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "one"]);
    let commit = git(&["rev-parse", "HEAD"]).trim().to_string();
    // The work tree changes; the revision does not.
    repo.write(
        "app/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: work-tree\n",
    );
    let fs = open_source(&repo.0, Some("HEAD")).unwrap();
    let fetched = plumb_render::fetch::Fetched {
        dir: repo.0.clone(),
        mirrored: false,
        fs,
        commit: commit.clone(),
        revision_label: None,
    };
    let r = plumb_render::render::render_fetched(
        &fetched,
        &source("app", Some(json!({"name": "rev"}))),
        &opts(&plugins),
    )
    .unwrap();
    assert_eq!(names(&r), ["rev", "from-repo"]);
    let d = &r.objects[0].object["data"];
    assert_eq!(d["r"], commit.as_str());
    assert_eq!(d["s"], &commit[..7]);
    assert_eq!(d["s8"], &commit[..8]);
}

#[test]
fn discovery_picks_the_one_plugin_that_matches() {
    let plugins = Tmp::new("p");
    plugins
        .write(
            "by-file.yaml",
            &plugin(
                "by-file",
                "",
                "  discover:\n    fileName: '*.jsonnet'\n",
                "echo 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: by-file}\ndata: {p: \"'\"${ARGOCD_APP_PARAMETERS-unset}\"'\"}'",
            ),
        )
        .write(
            "by-glob.yaml",
            &plugin(
                "by-glob",
                "",
                "  discover:\n    find:\n      glob: '**/marker.txt'\n",
                "echo 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: by-glob}'",
            ),
        )
        .write(
            "by-command.yaml",
            &plugin(
                "by-command",
                "",
                "  discover:\n    find:\n      command: [sh, -c, 'test -f special && echo yes']\n",
                "echo 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: by-command}'",
            ),
        )
        .write(
            "by-sub.yaml",
            &plugin("by-sub", "", "  discover:\n    fileName: './sub*/s[aeiou]?.yaml'\n", "echo 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: by-sub}'"),
        )
        .write(
            "undiscoverable.yaml",
            &plugin("undiscoverable", "", "", CAT),
        )
        .write("not-a-plugin.txt", "ignored");
    let repo = Tmp::new("r");
    repo.write("a/main.jsonnet", "{}")
        .write("b/deep/er/marker.txt", "")
        .write("c/special", "")
        .write("c/cm.yaml", CM)
        .write("d/main.jsonnet", "{}")
        .write("d/x/marker.txt", "")
        .write("e/cm.yaml", CM)
        .write("f/sub/main.jsonnet", "{}")
        .write("g/subdir/set.yaml", "")
        .write("h/subdir/deeper/set.yaml", "")
        .write("h/cm.yaml", CM);
    let one = |path: &str, p: Option<Value>| run(&repo.0, path, p, &plugins).map(|r| names(&r));
    assert_eq!(one("a", Some(json!({}))).unwrap(), ["by-file"]);
    assert_eq!(one("b", Some(json!({}))).unwrap(), ["by-glob"]);
    assert_eq!(one("c", Some(json!({}))).unwrap(), ["by-command"]);
    // A source naming no type goes through discovery too, as in Argo CD ...
    assert_eq!(one("a", None).unwrap(), ["by-file"]);
    // ... (Argo CD passes parameters only to a source with `plugin:`).
    let params = |p| run(&repo.0, "a", p, &plugins).unwrap().objects[0].object["data"]["p"].clone();
    assert_eq!(params(None), "unset");
    assert_eq!(params(Some(json!({}))), "null");
    // ... and renders as a directory when nothing matches; `plugin: {}` is then an error.
    let r = run(&repo.0, "e", None, &plugins).unwrap();
    assert_eq!(
        (r.source_type, names(&r)),
        (SourceType::Directory, vec!["from-repo".into()])
    );
    let e = one("e", Some(json!({}))).unwrap_err();
    assert!(
        e.contains("no plugin in the --plugins directory discovers this source"),
        "{e}"
    );
    // `fileName` is Go's filepath.Glob: `*` stops at `/`.
    assert!(one("f", Some(json!({}))).is_err());
    // Segment by segment: `./sub*/s[aeiou]?.yaml` is `g/subdir/set.yaml`, not one level down.
    assert_eq!(one("g", Some(json!({}))).unwrap(), ["by-sub"]);
    assert_eq!(one("h", None).unwrap(), ["from-repo"]);
    // Several matches: an error naming them.
    let e = one("d", Some(json!({}))).unwrap_err();
    assert!(
        e.contains("2 plugins discover this source (by-file, by-glob)"),
        "{e}"
    );
    // A named plugin must match its discovery rule; one without a rule is used as named.
    assert_eq!(
        one("d", Some(json!({"name": "by-glob"}))).unwrap(),
        ["by-glob"]
    );
    let e = one("e", Some(json!({"name": "by-file"}))).unwrap_err();
    assert!(
        e.contains("plugin by-file does not support this source"),
        "{e}"
    );
    assert_eq!(
        one("e", Some(json!({"name": "undiscoverable"}))).unwrap(),
        ["from-repo"]
    );
    // One type per source, as Argo CD.
    let fs = open_source(&repo.0, None).unwrap();
    let mut s = source("e", Some(json!({})));
    s.helm = Some(Default::default());
    let e = render(fs.as_ref(), "e", &s, &opts(&plugins))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("multiple application sources defined: Helm,Plugin"),
        "{e}"
    );
}

#[test]
fn bad_plugin_manifests_are_one_line_naming_the_file() {
    let cases = [
        ("bad.yaml", "a: [\n", "bad.yaml:1:4: invalid YAML"),
        (
            "kind.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
            "expected apiVersion: argoproj.io/v1alpha1, kind: ConfigManagementPlugin",
        ),
        (
            "nogen.yaml",
            "apiVersion: argoproj.io/v1alpha1\nkind: ConfigManagementPlugin\nmetadata: {name: x}\nspec: {}\n",
            "spec.generate.command is empty",
        ),
    ];
    for (file, text, want) in cases {
        let d = Tmp::new("bad");
        d.write(file, text);
        let e = Plugins::load(&d.0).unwrap_err().to_string();
        assert!(e.contains(file) && e.contains(want), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
    let d = Tmp::new("dup");
    d.write("a.yaml", &plugin("same", "", "", CAT))
        .write("b/plugin.yaml", &plugin("same", "", "", CAT));
    let e = Plugins::load(&d.0).unwrap_err().to_string();
    assert!(
        e.contains("plugin same is also defined in") && e.contains("a.yaml"),
        "{e}"
    );
}

#[test]
fn a_failing_plugin_is_one_line_with_its_stderr_and_no_secret() {
    let plugins = Tmp::new("p");
    plugins
        .write(
            "fails.yaml",
            &plugin("fails", "", "", "echo \"lots of noise\" >&2; echo \"cannot log in with $ARGOCD_ENV_TOKEN or $PARAM_PASSWORD\" >&2; exit 3"),
        )
        .write(
            "garbage.yaml",
            &plugin("garbage", "", "", "echo 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n---\nthis is: [not: yaml'"),
        )
        .write("scalar.yaml", &plugin("scalar", "", "", "echo 'Rendering done'"))
        .write("huge.yaml", &plugin("huge", "", "", "yes 'a: b'"))
        .write("init-fails.yaml", &format!("{}  init:\n    command: [sh, -c, 'echo init broke >&2; false']\n", plugin("init-fails", "", "", CAT)));
    let repo = Tmp::new("r");
    repo.write("app/cm.yaml", CM);
    let err = |name: &str, extra: Value| {
        let mut p = json!({"name": name});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let e = run(&repo.0, "app", Some(p), &plugins).unwrap_err();
        assert_eq!(e.lines().count(), 1, "{e}");
        e
    };
    let e = err(
        "fails",
        json!({"env": [{"name": "TOKEN", "value": "hunter2-secret"}], "parameters": [{"name": "password", "string": "pa55word!"}]}),
    );
    assert!(e.starts_with("app: plugin fails: generate (sh): failed (exit status 3): lots of noise | cannot log in with *** or ***"), "{e}");
    assert!(!e.contains("hunter2") && !e.contains("pa55word"), "{e}");
    let e = err("garbage", json!({}));
    assert!(e.contains("plugin garbage: generate printed something other than Kubernetes objects: line 5: \"this is: [not: yaml\""), "{e}");
    let e = err("scalar", json!({}));
    assert!(
        e.contains("plugin scalar:") && e.contains("line 1: \"Rendering done\""),
        "{e}"
    );
    let e = err("init-fails", json!({}));
    assert!(
        e.contains("plugin init-fails: init (sh): failed (exit status 1): init broke"),
        "{e}"
    );
    // A process that leaves the group and keeps stdout open does not hang the render.
    let pid_file = plugins.0.join("escaped.pid");
    plugins.write(
        "escapes.yaml",
        // The escaped process writes its pid once it has left the group, and the plugin waits
        // for that before it ends: the escape is done before plumb kills the group.
        &plugin("escapes", "", "", &format!("setsid sh -c 'echo $$ > {pid}.tmp; mv {pid}.tmp {pid}; exec sleep 60' & while [ ! -s {pid} ]; do sleep 0.05; done; echo 'apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: x}}'", pid = pid_file.display())),
    );
    let e = err("escapes", json!({}));
    let _ = std::process::Command::new("kill")
        .arg(std::fs::read_to_string(&pid_file).unwrap().trim())
        .status();
    assert!(e.contains("plugin escapes: generate (sh): a process it started outside its process group still holds its output open"), "{e}");
    let e = err("huge", json!({}));
    assert!(e.contains("plugin huge: generate (sh): printed more than 64 MiB, the limit on a plugin's output; killed"), "{e}");
}

// ---------------------------------------------------------------------------------------
// helm template | kubectl kustomize

fn tool(env: Option<&str>, name: &str) -> Option<PathBuf> {
    if let Some(p) = env.and_then(std::env::var_os).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

#[test]
fn a_plugin_piping_helm_template_into_kustomize() {
    let (Some(helm), Some(kubectl)) = (tool(Some("PLUMB_HELM"), "helm"), tool(None, "kubectl"))
    else {
        assert!(
            std::env::var("REQUIRE_HELM").as_deref() != Ok("1"),
            "REQUIRE_HELM=1 but helm (PLUMB_HELM or PATH) or kubectl (PATH) was not found"
        );
        println!("SKIP a_plugin_piping_helm_template_into_kustomize: helm or kubectl not found");
        return;
    };
    let plugins = Tmp::new("p");
    let script = format!(
        "{} template \"$ARGOCD_APP_NAME\" . --namespace \"$ARGOCD_APP_NAMESPACE\" --set replicas=$PARAM_REPLICAS > all.yaml && \
         printf 'resources: [all.yaml]\\ncommonLabels: {{env: %s}}\\n' \"$ARGOCD_ENV_STAGE\" > kustomization.yaml && {} kustomize .",
        helm.display(),
        kubectl.display()
    );
    plugins.write(
        "helm-kustomize.yaml",
        &plugin(
            "helm-kustomize",
            "v1",
            "  discover:\n    fileName: Chart.yaml\n",
            &script,
        ),
    );
    let repo = Tmp::new("r");
    repo.write("chart/Chart.yaml", "apiVersion: v2\nname: web\nversion: 0.1.0\n")
        .write("chart/values.yaml", "replicas: 1\n")
        .write(
            "chart/templates/deploy.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n  namespace: {{ .Release.Namespace }}\nspec:\n  replicas: {{ .Values.replicas }}\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx}]}\n",
        );
    let r = run(
        &repo.0,
        "chart",
        Some(json!({"env": [{"name": "STAGE", "value": "prod"}], "parameters": [{"name": "replicas", "string": "3"}]})),
        &plugins,
    )
    .unwrap();
    assert_eq!(r.source_type, SourceType::Plugin);
    assert_eq!(r.objects.len(), 1);
    let d = &r.objects[0].object;
    assert_eq!(d["metadata"]["name"], "guestbook");
    assert_eq!(d["metadata"]["namespace"], "web");
    assert_eq!(d["metadata"]["labels"]["env"], "prod");
    assert_eq!(d["spec"]["replicas"], 3);
    // The repository itself is untouched (the plugin wrote into its private copy).
    assert!(!repo.0.join("chart/all.yaml").exists());
}

#[test]
fn preserve_file_mode_gives_executable_files_their_mode() {
    let plugins = Tmp::new("p");
    let script = "printf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: modes}\\ndata: {gen: %s, data: %s}\\n' \"$(stat -c %a gen.sh)\" \"$(stat -c %a cm.yaml)\"";
    plugins
        .write(
            "keep.yaml",
            &format!(
                "{}  preserveFileMode: true\n",
                plugin("keep", "", "", script)
            ),
        )
        .write("drop.yaml", &plugin("drop", "", "", script));
    let repo = Tmp::new("g");
    repo.write("app/cm.yaml", CM)
        .write("app/gen.sh", "#!/bin/sh\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        repo.0.join("app/gen.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let modes = |repo: &Path, rev: Option<&str>, name: &str| {
        let fs = open_source(repo, rev).unwrap();
        let r = render(
            fs.as_ref(),
            "app",
            &source("app", Some(json!({"name": name}))),
            &opts(&plugins),
        )
        .unwrap();
        let d = &r.objects[0].object["data"];
        (d["gen"].to_string(), d["data"].to_string())
    };
    // Without preserveFileMode every file gets the default mode (umask's); with it an
    // executable one is 0755. A plain directory: the `x` bit on disk.
    let check = |(script, data): (String, String), keep: bool| {
        if keep {
            assert_eq!(script, "755");
            assert_ne!(data, "755");
        } else {
            assert_eq!(script, data);
        }
    };
    check(modes(&repo.0, None, "keep"), true);
    check(modes(&repo.0, None, "drop"), false);
    // A git revision: mode 100755 in the tree, whatever the work tree says.
    let git = |args: &[&str]| {
        let o = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(&repo.0)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "one"]);
    std::fs::set_permissions(
        repo.0.join("app/gen.sh"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    check(modes(&repo.0, Some("HEAD"), "keep"), true);
    check(modes(&repo.0, Some("HEAD"), "drop"), false);
}
