//! Origins: every scalar knows which file and line set it.

use plumb_render::kustomize::build;
use plumb_render::source::DirSource;
use std::path::Path;

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

#[test]
fn origins_follow_the_last_writer() {
    let root = std::env::temp_dir().join(format!("kust-origins-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    write(
        &root,
        "base/kustomization.yaml",
        "resources:\n- deploy.yaml\n",
    );
    write(
        &root,
        "base/deploy.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.0\n",
    );
    write(
        &root,
        "overlay/kustomization.yaml",
        "resources:\n- ../base\nnamePrefix: prod-\nimages:\n- name: nginx\n  newTag: \"1.25\"\npatches:\n- path: pull.yaml\n- patch: |-\n    apiVersion: apps/v1\n    kind: Deployment\n    metadata:\n      name: web\n    spec:\n      replicas: 3\nconfigMapGenerator:\n- name: env\n  literals:\n  - A=b\n",
    );
    write(
        &root,
        "overlay/pull.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        imagePullPolicy: Always\n",
    );
    let out = build(&DirSource::open(&root).expect("source"), "overlay").unwrap();
    let _ = std::fs::remove_dir_all(&root);
    let d = out
        .iter()
        .find(|r| r.object["kind"] == "Deployment")
        .unwrap();
    let at = |p: &str| {
        let o = d
            .object
            .origins()
            .get(p)
            .unwrap_or_else(|| panic!("no origin for {p}"));
        (o.file.to_string(), o.line, o.column)
    };
    assert_eq!(d.object["metadata"]["name"], "prod-web");
    assert_eq!(
        at("/metadata/name"),
        ("overlay/kustomization.yaml".into(), 3, 13)
    );
    assert_eq!(
        at("/spec/template/spec/containers/0/imagePullPolicy").0,
        "overlay/pull.yaml"
    );
    assert_eq!(at("/spec/template/spec/containers/0/imagePullPolicy").1, 10);
    assert_eq!(
        d.object["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.25"
    );
    assert_eq!(
        at("/spec/template/spec/containers/0/image"),
        ("overlay/kustomization.yaml".into(), 6, 11)
    );
    // The inline patch's scalar is located inside the kustomization.
    assert_eq!(
        at("/spec/replicas"),
        ("overlay/kustomization.yaml".into(), 15, 17)
    );
    assert_eq!(at("/kind"), ("base/deploy.yaml".into(), 2, 7));
    assert_eq!((d.file.as_str(), d.line), ("base/deploy.yaml", 1));
    let cm = out
        .iter()
        .find(|r| r.object["kind"] == "ConfigMap")
        .unwrap();
    let o = cm
        .object
        .origins()
        .get("/data/A")
        .expect("origin of /data/A");
    assert_eq!((&*o.file, o.line), ("overlay/kustomization.yaml", 19));
    // The generated name carries its hash; references follow it.
    let name = cm.object["metadata"]["name"].as_str().unwrap();
    assert!(
        name.starts_with("prod-env-") && name.len() == "prod-env-".len() + 10,
        "{name}"
    );
}
