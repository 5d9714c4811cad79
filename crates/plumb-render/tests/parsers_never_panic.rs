//! Property tests: the parsers of user input in plumb-render never panic, whatever the
//! bytes — the YAML fast path and the whole manifest loader (arbitrary bytes read as
//! text, and YAML-like text), and kustomize patches (strategic merge and JSON 6902, with
//! random targets and label selectors) rendered from a real directory. Each returns
//! objects or an error.

use plumb_render::kustomize;
use plumb_render::source::DirSource;
use proptest::prelude::*;
use std::path::Path;

const CASES: u32 = 2000;
/// Kustomize cases write files, so fewer of them.
const KUSTOMIZE_CASES: u32 = 500;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// YAML-looking text: keys, indentation, flow and block markers, anchors, tags, quotes.
fn yamlish() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            "[a-z]{1,6}: ",
            Just("\n".to_string()),
            Just("  ".to_string()),
            Just("\t".to_string()),
            Just("- ".to_string()),
            "[\\[\\]{},:?|>&*!#%@`'\"-]",
            "[a-z0-9 .]{0,8}",
            Just("---\n".to_string()),
            Just("&a ".to_string()),
            Just("*a".to_string()),
            Just("!!str ".to_string()),
            Just("<<: ".to_string()),
            "[0-9_.eExob+-]{1,8}",
            Just("\u{0}".to_string()),
            Just("\u{feff}".to_string()),
        ],
        0..40,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn yaml_fast_path_never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = plumb_render::yaml_fast::parse_document(&text);
        let _ = plumb_render::parse_str(&text, Path::new("x.yaml"));
        let _ = plumb_render::parse_str(&text, Path::new("x.json"));
    }

    #[test]
    fn yaml_fast_path_never_panics_on_yaml_like_text(text in yamlish()) {
        let _ = plumb_render::yaml_fast::parse_document(&text);
        let header = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  {text}");
        let _ = plumb_render::yaml_fast::parse_document(&header);
        let _ = plumb_render::parse_str(&header, Path::new("x.yaml"));
    }
}

/// A JSON 6902 operation with random parts.
fn json6902() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec![
            "add", "remove", "replace", "move", "copy", "test", "frob", "",
        ]),
        "(/([a-z0-9-]|~[0-9]?){0,4}){0,4}",
        prop::option::of("(/[a-z0-9~]{0,4}){0,3}"),
        prop::sample::select(vec!["x", "[1, 2]", "{a: b}", "null", "", "[", "&a x"]),
    )
        .prop_map(|(op, path, from, value)| {
            let from = from
                .map(|f| format!("\n  from: \"{f}\""))
                .unwrap_or_default();
            format!("- op: {op}\n  path: \"{path}\"{from}\n  value: {value}\n")
        })
}

/// A strategic merge patch: YAML-like text under a ConfigMap header, with directives.
fn smp() -> impl Strategy<Value = String> {
    (
        yamlish(),
        prop::sample::select(vec!["", "$patch: delete", "$patch: replace", "$retainKeys: [a]", "$deleteFromPrimitiveList/x: [a]", "$setElementOrder/x: [{a: 1}]"]),
    )
        .prop_map(|(text, directive)| {
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n{directive}\ndata:\n  {text}\n")
        })
}

/// A label selector as kustomize's patch targets write it, or text near one.
fn label_selector() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{1,4}(=|==|!=)[a-z]{0,4}(,[a-z]{1,4}(=|!=)[a-z]{0,3}){0,2}",
        "!?[a-z]{1,4}( (in|notin) \\(([a-z]{0,3}(, ?)?){0,3}\\)?)?",
        "[a-z(),=! ]{0,16}",
        ".{0,12}",
    ]
}

proptest! {
    #![proptest_config(config(KUSTOMIZE_CASES))]

    #[test]
    fn kustomize_patches_and_selectors_never_panic(
        ops in prop::collection::vec(json6902(), 0..4),
        smp in smp(),
        selector in label_selector(),
        kind in prop::sample::select(vec!["ConfigMap", "Deployment", "", "*"]),
    ) {
        let dir = tempdir();
        let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).expect("write");
        write("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels:\n    a: b\ndata:\n  x: y\n  list: [1, 2]\n");
        write("smp.yaml", &smp);
        let kustomization = format!(
            "resources:\n- cm.yaml\npatches:\n- path: smp.yaml\n- target:\n    kind: \"{kind}\"\n    labelSelector: \"{}\"\n  patch: |\n{}",
            selector.replace('\\', "\\\\").replace('"', "\\\""),
            ops.concat().lines().map(|l| format!("    {l}\n")).collect::<String>()
        );
        write("kustomization.yaml", &kustomization);
        let fs = DirSource::open(&dir).expect("open");
        let result = kustomize::build(&fs, "");
        let _ = std::fs::remove_dir_all(&dir);
        if let Err(e) = result {
            prop_assert!(!e.to_string().contains('\n') || e.to_string().lines().count() < 50);
        }
    }
}

fn tempdir() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "plumb-parsers-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&d).expect("tempdir");
    d
}
