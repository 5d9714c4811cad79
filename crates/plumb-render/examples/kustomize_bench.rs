//! Times the native renderer against `kubectl kustomize` on a generated overlay stack:
//! a base of 2,000 resources (1,000 Deployments, 1,000 Services) and an overlay with a
//! name prefix, labels, an image override, a patch and generators.
//!
//!     cargo run --release -p plumb-render --example kustomize_bench

use plumb_render::kustomize::build;
use plumb_render::source::DirSource;
use std::fmt::Write as _;
use std::time::Instant;

fn main() {
    let root = std::env::temp_dir().join(format!("kust-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("base")).unwrap();
    std::fs::create_dir_all(root.join("overlay")).unwrap();
    let mut res = String::new();
    for i in 0..1000 {
        write!(
            res,
            "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-{i}\n  labels: {{app: app-{i}}}\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {{app: app-{i}}}\n  template:\n    metadata:\n      labels: {{app: app-{i}}}\n    spec:\n      serviceAccountName: runner\n      containers:\n      - name: main\n        image: registry.example.com/team/app:1.0.{i}\n        ports: [{{containerPort: 8080, name: http}}]\n        envFrom: [{{configMapRef: {{name: shared}}}}]\n        env:\n        - {{name: A, value: \"1\"}}\n        - {{name: B, valueFrom: {{secretKeyRef: {{name: creds, key: pw}}}}}}\n        resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: app-{i}\nspec:\n  selector: {{app: app-{i}}}\n  ports: [{{port: 80, targetPort: http}}]\n"
        )
        .unwrap();
    }
    std::fs::write(root.join("base/resources.yaml"), res).unwrap();
    std::fs::write(
        root.join("base/kustomization.yaml"),
        "resources:\n- resources.yaml\nconfigMapGenerator:\n- name: shared\n  literals: [LOG=info]\nsecretGenerator:\n- name: creds\n  literals: [pw=secret]\n",
    )
    .unwrap();
    std::fs::write(
        root.join("overlay/kustomization.yaml"),
        "resources:\n- ../base\nnamePrefix: prod-\nnamespace: prod\nlabels:\n- pairs: {env: prod}\n  includeSelectors: true\ncommonAnnotations: {team: payments}\nimages:\n- name: registry.example.com/team/app\n  newTag: \"2.0\"\npatches:\n- target: {kind: Deployment}\n  patch: |-\n    apiVersion: apps/v1\n    kind: Deployment\n    metadata: {name: any}\n    spec:\n      template:\n        spec:\n          containers:\n          - name: main\n            imagePullPolicy: Always\nconfigMapGenerator:\n- name: shared\n  behavior: merge\n  literals: [LOG=warn]\n",
    )
    .unwrap();
    let fs = DirSource::open(&root).expect("source");
    // Warm up once, then take the best of three.
    let n = build(&fs, "overlay").expect("native build").len();
    let mut native = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        let out = build(&fs, "overlay").expect("native build");
        native = native.min(t.elapsed().as_secs_f64());
        assert_eq!(out.len(), n);
    }
    let mut kubectl = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        let st = std::process::Command::new("kubectl")
            .arg("kustomize")
            .arg(root.join("overlay"))
            .stdout(std::process::Stdio::null())
            .status()
            .expect("kubectl");
        assert!(st.success());
        kubectl = kubectl.min(t.elapsed().as_secs_f64());
    }
    let _ = std::fs::remove_dir_all(&root);
    println!("objects: {n}");
    println!("native (with origins): {:.1} ms", native * 1e3);
    println!("kubectl kustomize:     {:.1} ms", kubectl * 1e3);
    println!("speed-up:              {:.1}x", kubectl / native);
}
