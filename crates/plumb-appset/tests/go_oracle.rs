//! plumb-appset's `goTemplate` rendering against Go itself: every case of the corpus below
//! (templates × parameters: Go's builtins, control flow, map iteration, the Sprig functions
//! plumb offers, missing keys) is rendered by plumb and by `testbed/gotemplate` (Go's
//! text/template with Sprig, built from Go modules by `testbed/build-gotemplate.sh`), and the
//! outputs must be equal, or both an error. The binary comes from `PLUMB_GOTEMPLATE`; without
//! it the test prints SKIP and passes, unless `REQUIRE_GOTEMPLATE=1`.

use plumb_appset::Mode;
use plumb_appset::template::render;
use serde_json::{Value, json};
use std::io::Write;
use std::process::{Command, Stdio};

fn params() -> Value {
    json!({
        "name": "Prod EU-West",
        "server": "https://prod.example.com:6443",
        "path": {"path": "apps/web-app", "basename": "web-app", "segments": ["apps", "web-app"]},
        "replicas": 3,
        "ratio": 0.25,
        "enabled": true,
        "empty": "",
        "labels": {"team": "payments", "env": "prod", "tier": "backend"},
        "zones": ["eu-west-1a", "eu-west-1b"],
        "nested": {"a": {"b": {"c": "deep"}}},
        "values": {"revision": "v1.2.3", "chart": "web"}
    })
}

/// (template, missingkey=error?)
const CORPUS: &[(&str, bool)] = &[
    ("plain text", false),
    ("{{.name}}", false),
    ("{{.path.basename}}-{{index .path.segments 0}}", false),
    ("{{.nested.a.b.c}}", false),
    ("{{.replicas}} {{.ratio}} {{.enabled}}", false),
    ("{{.missing}}", false),
    ("{{.missing}}", true),
    ("{{.nested.a.missing}}", false),
    ("{{.nested.a.missing}}", true),
    ("{{if .enabled}}on{{else}}off{{end}}", false),
    ("{{if .empty}}set{{else}}unset{{end}}", false),
    ("{{if eq .labels.env \"prod\"}}production{{end}}", false),
    (
        "{{if and .enabled (ne .labels.team \"ops\")}}yes{{end}}",
        false,
    ),
    ("{{range $k, $v := .labels}}{{$k}}={{$v}};{{end}}", false),
    ("{{range .zones}}[{{.}}]{{end}}", false),
    ("{{range $i, $z := .zones}}{{$i}}:{{$z}} {{end}}", false),
    ("{{with .values}}{{.chart}}@{{.revision}}{{end}}", false),
    ("{{with .missing}}x{{else}}none{{end}}", false),
    ("{{len .zones}} {{len .labels}} {{len .name}}", false),
    ("{{printf \"%s/%s\" .labels.team .labels.env}}", false),
    ("{{printf \"%v\" .replicas}}", false),
    ("{{printf \"%q\" .name}}", false),
    ("{{- .name -}}  ", false),
    ("  {{- .name }}  {{ .labels.env -}}  !", false),
    ("{{ .name | lower }}", false),
    ("{{ .name | upper }}", false),
    ("{{ \"hello world foo\" | title }}", false),
    ("{{ \"  padded  \" | trim }}", false),
    ("{{ .path.path | trimPrefix \"apps/\" }}", false),
    ("{{ .path.basename | trimSuffix \"-app\" }}", false),
    ("{{ .name | replace \" \" \"-\" }}", false),
    ("{{ .missing | default \"fallback\" }}", false),
    ("{{ .empty | default \"fallback\" }}", false),
    ("{{ .labels.team | default \"fallback\" }}", false),
    ("{{ .name | quote }}", false),
    ("{{ .name | squote }}", false),
    ("{{ join \",\" .zones }}", false),
    ("{{ splitList \"/\" .path.path | join \"|\" }}", false),
    ("{{ .name | trunc 4 }}", false),
    ("{{ .name | trunc -4 }}", false),
    ("{{ .name | trunc 100 }}", false),
    ("{{ if contains \"EU\" .name }}eu{{ end }}", false),
    ("{{ if hasPrefix \"https\" .server }}tls{{ end }}", false),
    ("{{ if hasSuffix \"6443\" .server }}port{{ end }}", false),
    ("{{ .labels.team | b64enc }}", false),
    ("{{ .labels | toJson }}", false),
    ("{{ .zones | toJson }}", false),
    ("{{ \"YWJj\" | b64dec }}", false),
    (
        "{{ add 1 2 3 }} {{ add .replicas 1 }} {{ add1 .replicas }}",
        false,
    ),
    (
        "{{ sub 10 3 }} {{ mul 2 3 4 }} {{ div 7 2 }} {{ mod 7 2 }}",
        false,
    ),
    ("{{ max 3 9 1 }} {{ min 3 9 1 }}", false),
    ("{{ div 1 0 }}", false),
    ("{{ int \"42\" }} {{ int .ratio }} {{ atoi \"17\" }}", false),
    ("{{ toString .replicas }}-{{ toString .enabled }}", false),
    ("{{ list \"a\" \"b\" | join \"+\" }}", false),
    (
        "{{ $d := dict \"x\" \"1\" \"y\" \"2\" }}{{ get $d \"y\" }}{{ get $d \"z\" }}{{ hasKey $d \"x\" }}",
        false,
    ),
    ("{{ first .zones }} {{ last .zones }}", false),
    (
        "{{ has \"eu-west-1b\" .zones }} {{ has \"x\" .zones }}",
        false,
    ),
    (
        "{{ list \"b\" \"c\" \"a\" | sortAlpha | join \",\" }}",
        false,
    ),
    ("{{ list \"a\" \"b\" \"a\" | uniq | join \",\" }}", false),
    (
        "{{ empty .empty }} {{ empty .name }} {{ empty .missing }}",
        false,
    ),
    ("{{ coalesce .missing .empty .name }}", false),
    (
        "{{ ternary \"yes\" \"no\" .enabled }} {{ ternary \"yes\" \"no\" false }}",
        false,
    ),
    ("{{ \"a\\nb\" | indent 2 }}", false),
    ("x:{{ \"a\\nb\" | nindent 4 }}", false),
    ("{{ repeat 3 \"ab\" }}", false),
    ("{{ regexMatch \"^web-[a-z]+$\" .path.basename }}", false),
    (
        "{{ regexReplaceAll \"([a-z]+)-([a-z]+)\" .path.basename \"${2}_$1\" }}",
        false,
    ),
    ("{{ regexFind \"[0-9]+\" .server }}", false),
    ("{{ regexMatch \"[\" .name }}", false),
    ("{{ .name | sha256sum }}", false),
    (
        "{{ \"HTTPServerName\" | kebabcase }} {{ \"myVar_name-x\" | snakecase }}",
        false,
    ),
    (
        "{{ .path.basename | kebabcase }} {{ \"Prod EU\" | snakecase }}",
        false,
    ),
    (
        "{{ \"http_server-name x\" | camelcase }} {{ \"Hello World\" | untitle }}",
        false,
    ),
    (
        "{{ substr 0 4 .name }}|{{ substr 5 100 .name }}|{{ substr -1 3 .name }}",
        false,
    ),
    (
        "{{ trimAll \"-x\" \"x--web--x\" }} {{ \" a b  c \" | nospace }}",
        false,
    ),
    ("{{ cat \"a\" .replicas .missing \"b\" }}", false),
    (
        "{{ plural \"one\" \"many\" 1 }} {{ plural \"one\" \"many\" .replicas }}",
        false,
    ),
    (
        "{{ .labels | toRawJson }} {{ (fromJson \"{\\\"a\\\": 1}\").a }}",
        false,
    ),
    (
        "{{ append .zones \"z\" | join \",\" }} {{ prepend .zones \"z\" | join \",\" }}",
        false,
    ),
    (
        "{{ concat .zones (list \"q\") | join \",\" }} {{ rest .zones | join \",\" }} {{ initial .zones | join \",\" }}",
        false,
    ),
    (
        "{{ reverse .zones | join \",\" }} {{ list \"a\" \"\" \"b\" | compact | join \",\" }}",
        false,
    ),
    (
        "{{ without .zones \"eu-west-1a\" | join \",\" }} {{ until 3 | toJson }}",
        false,
    ),
    ("{{ keys .labels | sortAlpha | join \",\" }}", false),
    (
        "{{ pick .labels \"team\" \"env\" | toJson }} {{ omit .labels \"team\" | toJson }}",
        false,
    ),
    (
        "{{ merge (dict \"a\" \"1\") (dict \"a\" \"2\" \"b\" \"3\") | toJson }}",
        false,
    ),
    (
        "{{ set (dict \"a\" \"1\") \"b\" \"2\" | toJson }} {{ unset (dict \"a\" \"1\" \"b\" \"2\") \"a\" | toJson }}",
        false,
    ),
    (
        "{{ floor 2.7 }} {{ ceil 2.1 }} {{ round 2.456 2 }} {{ float64 \"1.5\" }}",
        false,
    ),
    ("{{ list 1 \"a\" true | toStrings | join \",\" }}", false),
    (
        "{{ regexSplit \"-+\" \"a-b--c\" -1 | join \",\" }} {{ (split \"/\" .path.path)._1 }}",
        false,
    ),
    ("{{ .name", false),
    ("{{ .name | nosuchfunc }}", false),
    ("{{ index .zones 5 }}", false),
];

/// Known differences (template, plumb's output, Go's): the gotmpl port formats a float64 that
/// holds an integer with `%d`; Go refuses the verb. Kept here so a change on either side shows.
/// Sprig's `set` and `unset` change the dict a variable holds in place (Go maps are references);
/// the gotmpl port's values are immutable, so they return the changed dict and leave the variable
/// as it was.
const KNOWN: &[(&str, &str, &str)] = &[
    ("{{printf \"%d\" .replicas}}", "3", "%!d(float64=3)"),
    (
        "{{ $d := dict \"a\" \"1\" }}{{ $_ := set $d \"b\" \"2\" }}{{ $d | toJson }}",
        "{\"a\":\"1\"}",
        "{\"a\":\"1\",\"b\":\"2\"}",
    ),
];

#[test]
fn go_templates_render_as_go_renders_them() {
    let Some(bin) = std::env::var_os("PLUMB_GOTEMPLATE").filter(|p| !p.is_empty()) else {
        assert!(
            std::env::var("REQUIRE_GOTEMPLATE").as_deref() != Ok("1"),
            "REQUIRE_GOTEMPLATE=1 but PLUMB_GOTEMPLATE is not set (testbed/build-gotemplate.sh)"
        );
        println!("SKIP go_templates_render_as_go_renders_them: PLUMB_GOTEMPLATE not set");
        return;
    };
    let p = params();
    let cases: Vec<Value> = CORPUS
        .iter()
        .copied()
        .chain(KNOWN.iter().map(|(t, _, _)| (*t, false)))
        .map(|(t, strict)| {
            json!({"template": t, "params": p,
                "missingkey": if strict { "error" } else { "default" }})
        })
        .collect();
    let mut child = Command::new(&bin)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the oracle runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(serde_json::to_string(&cases).expect("json").as_bytes())
        .expect("write cases");
    let out = child.wait_with_output().expect("the oracle answers");
    assert!(out.status.success(), "the oracle failed");
    let go: Vec<Value> = serde_json::from_slice(&out.stdout).expect("the oracle's JSON");
    assert_eq!(go.len(), CORPUS.len() + KNOWN.len());
    let params = p.as_object().cloned().unwrap_or_default();
    let mut differ = Vec::new();
    for ((template, strict), want) in CORPUS.iter().zip(&go) {
        let mode = Mode {
            go: true,
            missing_key_error: *strict,
        };
        let got = render(&Value::String((*template).into()), &params, mode);
        let same = match (&got, want.get("out").and_then(Value::as_str)) {
            (Ok(v), Some(w)) => v.as_str() == Some(w),
            (Err(_), None) => want.get("err").is_some(),
            _ => false,
        };
        if !same {
            differ.push(format!(
                "{template:?} (missingkey=error: {strict}): plumb {got:?}, Go {want}"
            ));
        }
    }
    println!(
        "{} of {} templates render as Go renders them",
        CORPUS.len() - differ.len(),
        CORPUS.len()
    );
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    for ((template, plumb_out, go_out), want) in KNOWN.iter().zip(&go[CORPUS.len()..]) {
        let got = render(
            &Value::String((*template).into()),
            &params,
            Mode {
                go: true,
                missing_key_error: false,
            },
        );
        assert_eq!(
            got.ok(),
            Some(Value::String((*plumb_out).into())),
            "{template}"
        );
        assert_eq!(want["out"], *go_out, "{template}");
    }
}
