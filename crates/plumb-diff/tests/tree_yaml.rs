//! `plumb render` prints a renderer's tree as it is, without converting it to JSON
//! (`text::object_to_yaml`): the text must be the one the JSON prints, byte for byte, with
//! and without the `# file:line` of each scalar.

use plumb_core::object::View;
use plumb_diff::text::{object_to_yaml, to_yaml, write_object_yaml};
use plumb_render::kustomize::load_file;
use plumb_render::source::DirSource;

const DOC: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: tricky
  labels:
    app.kubernetes.io/name: web
    B: upper
    a: lower
    9lives: digits
    x_y: underscore
  annotations: {}
data:
  multi: |
    line one
    line two
  long: "aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk llll mmmm nnnn oooo pppp qqqq rrrr"
  quoted-bool: "true"
  octal: "0755"
  colon: ": x"
  unicode: "héllo wörld"
  empty: ""
spec:
  int: 1
  float: 1.5
  whole: 2.0
  exp: 1e3
  big: 12345678901234567890
  yes: true
  none: null
  tilde: ~
  emptyMap: {}
  emptyList: []
  items:
  - name: a
    ports: [80, 443]
  - - nested
    - list
  "key with spaces": v
  "": empty key
  neg: -5
  zero: 0
  "on": a key go-yaml quotes
  "multi\nline key": a complex key
  nel: "a\u0085 b"
  kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk: a key too long to be simple
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: second
spec:
  template:
    spec:
      containers:
      - name: c
        image: nginx:1.25
        args: ["--flag=1", "-v", "2"]
"#;

#[test]
fn a_tree_prints_as_its_json_does() {
    let root = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("tree_yaml");
    std::fs::create_dir_all(&root).expect("dir");
    std::fs::write(root.join("doc.yaml"), DOC).expect("write");
    let objects = load_file(&DirSource::open(&root).expect("source"), "doc.yaml").expect("load");
    assert_eq!(objects.len(), 2);
    for r in &objects {
        let tree = r.object.clone();
        assert!(
            tree.view(|v| matches!(v, View::Tree(..))),
            "a tree to start with"
        );
        let plain = object_to_yaml(&tree, false);
        let commented = object_to_yaml(&tree, true);
        assert!(
            tree.view(|v| matches!(v, View::Tree(..))),
            "printing did not convert it"
        );
        // The same object read as JSON (converting it), printed by the JSON path.
        let json = r.object.clone();
        assert_eq!(plain, to_yaml(&json));
        assert!(json.view(|v| matches!(v, View::Json(..))), "converted");
        assert_eq!(commented, object_to_yaml(&json, true));
        assert!(commented.contains("kind: "), "{commented}");
        assert!(commented.contains(" # doc.yaml:"), "{commented}");
    }
    // Appended into one buffer (as `plumb render` writes a run of objects), trees and JSON
    // alike: each document as it is alone, one after the other.
    for origins in [false, true] {
        let converted = objects[1].object.clone();
        let _ = to_yaml(&converted); // read as JSON: converted
        assert!(converted.view(|v| matches!(v, View::Json(..))), "converted");
        let mut both = String::from("---\n");
        write_object_yaml(&mut both, &objects[0].object, origins);
        both.push_str("---\n");
        write_object_yaml(&mut both, &converted, origins);
        let alone = [&objects[0].object, &converted].map(|o| object_to_yaml(o, origins));
        assert_eq!(both, format!("---\n{}---\n{}", alone[0], alone[1]));
    }
    let first = object_to_yaml(&objects[0].object, true);
    assert!(first.contains("name: tricky # doc.yaml:4\n"), "{first}");
    let plain = object_to_yaml(&objects[0].object, false);
    assert!(
        plain.contains("  whole: 2\n") && plain.contains("  none: null\n"),
        "{plain}"
    );
}
