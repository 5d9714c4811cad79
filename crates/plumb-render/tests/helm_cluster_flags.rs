//! `helm template --kube-version/--api-versions` from the destination cluster
//! (`RenderOptions`), unless the source's `helm.kubeVersion`/`apiVersions` say otherwise, with
//! the real helm (`PLUMB_HELM`; SKIP without it unless `REQUIRE_HELM=1`).

use plumb_core::argo::{AppSource, HelmSource};
use plumb_render::render::{RenderOptions, render};
use plumb_render::source::open_source;
use std::path::PathBuf;

/// Runs in a child of this test binary with helm first on PATH (plumb finds `helm` there);
/// true in the child, which does the work.
fn in_child_with_helm(test: &str) -> bool {
    if std::env::var_os("PLUMB_RENDER_TEST_CHILD").is_some() {
        return true;
    }
    let Some(helm) = std::env::var_os("PLUMB_HELM").filter(|p| !p.is_empty()) else {
        assert!(
            std::env::var("REQUIRE_HELM").as_deref() != Ok("1"),
            "REQUIRE_HELM=1 but PLUMB_HELM is not set"
        );
        println!("SKIP {test}: helm not found (PLUMB_HELM)");
        return false;
    };
    let helm = std::fs::canonicalize(PathBuf::from(helm)).expect("PLUMB_HELM resolves");
    let bin = std::env::temp_dir().join(format!("plumb-render-helm-{}", std::process::id()));
    std::fs::create_dir_all(&bin).expect("bin dir");
    let _ = std::fs::remove_file(bin.join("helm"));
    std::os::unix::fs::symlink(&helm, bin.join("helm")).expect("symlink");
    let mut paths = vec![bin.clone()];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let o = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([test, "--exact", "--nocapture"])
        .env("PATH", std::env::join_paths(paths).expect("PATH"))
        .env("PLUMB_RENDER_TEST_CHILD", "1")
        .output()
        .expect("child runs");
    let _ = std::fs::remove_dir_all(&bin);
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    false
}

#[test]
fn cluster_capabilities_reach_helm_unless_the_source_sets_them() {
    if !in_child_with_helm("cluster_capabilities_reach_helm_unless_the_source_sets_them") {
        return;
    }
    let dir =
        std::env::temp_dir().join(format!("plumb-render-capabilities-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("c/templates")).expect("mkdir");
    std::fs::write(
        dir.join("c/Chart.yaml"),
        "apiVersion: v2\nname: c\nversion: 0.1.0\n",
    )
    .expect("write");
    std::fs::write(
        dir.join("c/templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: caps\ndata:\n  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n  widgets: {{ .Capabilities.APIVersions.Has \"widgets.example.com/v9\" | quote }}\n",
    )
    .expect("write");
    let fs = open_source(&dir, None).expect("open");
    let data = |source: &AppSource, opts: &RenderOptions| {
        let r = render(fs.as_ref(), "c", source, opts).expect("renders");
        r.objects[0].object["data"].clone()
    };
    let cluster = RenderOptions {
        kube_version: Some("v1.29.4".into()),
        api_versions: vec!["widgets.example.com/v9".into()],
        ..RenderOptions::default()
    };
    let plain = AppSource::default();
    let got = data(&plain, &cluster);
    assert_eq!(got["kube"], "v1.29.4");
    assert_eq!(got["widgets"], "true");
    // The source's own fields win.
    let own = AppSource {
        helm: Some(HelmSource {
            kube_version: "1.30.0".into(),
            api_versions: vec!["other.example.com/v1".into()],
            ..HelmSource::default()
        }),
        ..AppSource::default()
    };
    let got = data(&own, &cluster);
    assert_eq!(got["kube"], "v1.30.0");
    assert_eq!(got["widgets"], "false");
    // Offline: helm's defaults.
    let got = data(&plain, &RenderOptions::default());
    assert_eq!(got["widgets"], "false");
    let _ = std::fs::remove_dir_all(&dir);
}
