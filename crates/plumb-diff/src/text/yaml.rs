//! JSON value to YAML as `sigs.k8s.io/yaml.Marshal` writes it: the encoder half.
//!
//! Builds the tree the emitter (`yaml_emit.rs`) writes, reproducing what happens
//! to an unstructured object on its way through Go before go-yaml v2 emits it:
//! `encoding/json` marshals it (keys in byte order, numbers as `int64`, else
//! `float64`); go-yaml v2 reads that JSON back (so `2.0` becomes the integer `2`,
//! a U+0085 in a string folds like a line break, and of two keys that read back
//! equal the later one wins); its encoder asks for a style per string
//! (`encode.go` `stringv`: literal block, plain, or double quotes, using
//! `yaml_resolve.rs`) and sorts map keys in its natural order (`sorter.go`).
//!
//! Must match `sigs.k8s.io/yaml` v1.6.0 on `go.yaml.in/yaml/v2` v2.4.2 byte for
//! byte: `argocd app diff` runs `diff` on exactly these bytes, and `plumb render`
//! prints them.

use super::yaml_emit::{emit_document, emit_document_into};
use super::yaml_resolve::{is_base60_float, resolves_to_str};
use plumb_core::object::{Object, View};
use plumb_core::tree;
use serde_json::Value;
use std::borrow::Cow;
use std::sync::Arc;

/// Renders `v` as `sigs.k8s.io/yaml.Marshal` does for the unstructured object
/// Argo CD prints in `argocd app diff`.
///
/// The value goes through the same steps as in Go: numbers are typed as the
/// Kubernetes unstructured decoder types them (`int64`, else `float64`),
/// JSON-encoded, re-read by go-yaml v2 (so `2.0` becomes the integer `2`),
/// then emitted by go-yaml v2 with its key order, scalar styles and line
/// folding. The result always ends with a newline. (For a side that does not
/// exist, Argo CD writes an empty file rather than `null`.)
#[must_use]
pub fn to_yaml(v: &Value) -> String {
    emit_document(&Node::Value(v))
}

/// [`to_yaml`] with a comment after each scalar value: `comment` gets the scalar's JSON
/// pointer and returns the text to write after `# ` (e.g. its source location). A block
/// scalar's comment goes on its header line. Used by `plumb render --show-origins`.
#[must_use]
pub fn to_yaml_with_comments(v: &Value, comment: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::new();
    write_commented(&mut out, v, comment);
    out
}

/// [`to_yaml_with_comments`] appended to `out`, which is empty or ends a line.
fn write_commented(out: &mut String, v: &Value, comment: &dyn Fn(&str) -> Option<String>) {
    let mut pointer = String::new();
    emit_document_into(&build_commented(v, &mut pointer, comment), out);
}

/// A rendered object's YAML, as [`to_yaml`] writes its JSON; with `origins`, as
/// [`to_yaml_with_comments`] with each scalar's `file:line`. A renderer's tree (an object
/// not yet read as JSON) is written as it is, without converting it.
#[must_use]
pub fn object_to_yaml(object: &Object, origins: bool) -> String {
    let mut out = String::new();
    write_object_yaml(&mut out, object, origins);
    out
}

/// [`object_to_yaml`] appended to `out`, which is empty or ends a line: many objects'
/// documents written into one buffer (`plumb render`), which then grows a few times
/// rather than one buffer per object growing from nothing.
pub fn write_object_yaml(out: &mut String, object: &Object, origins: bool) {
    object.view(|view| match view {
        View::Tree(node, files) => {
            emit_document_into(&Node::Tree(node, origins.then_some(files)), out);
        }
        View::Json(value, _) if !origins => emit_document_into(&Node::Value(value), out),
        View::Json(value, declared) => write_commented(out, value, &|p| {
            declared.get(p).map(|o| format!("{}:{}", o.file, o.line))
        }),
    });
}

fn build_commented<'a>(
    v: &'a Value,
    pointer: &mut String,
    comment: &dyn Fn(&str) -> Option<String>,
) -> Node<'a> {
    let at = |seg: &str, v: &'a Value, pointer: &mut String| {
        let len = pointer.len();
        pointer.push('/');
        pointer.push_str(&plumb_core::pointer::escape_token(seg));
        let n = build_commented(v, pointer, comment);
        pointer.truncate(len);
        n
    };
    match v {
        Value::Array(items) => Node::Seq(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| at(&i.to_string(), item, pointer))
                .collect(),
        ),
        // Same keys and order as `build_node`; values built with their pointers.
        Value::Object(map) => Node::Map(
            map_entries(map)
                .into_iter()
                .map(|(key, orig, v)| (key, at(orig, v, pointer)))
                .collect(),
        ),
        scalar => match (build_node(scalar), comment(pointer)) {
            (Node::Scalar(text, style), Some(c)) => Node::Commented(text, style, c),
            (n, _) => n,
        },
    }
}

/// A YAML node ready for emission: scalars carry the style go-yaml's encoder
/// asks for (the emitter may still override it). Strings are borrowed from the
/// value where they are written as they are (nearly always).
pub(super) enum Node<'a> {
    Scalar(Cow<'a, str>, Style),
    /// A scalar followed by a `# comment`.
    Commented(Cow<'a, str>, Style, String),
    Seq(Vec<Node<'a>>),
    /// A mapping of string keys (each written as go-yaml writes a string).
    Map(Vec<(Cow<'a, str>, Node<'a>)>),
    /// A JSON value, emitted as `build_node` would build it (without building it).
    Value(&'a Value),
    /// A renderer's tree, emitted as its JSON would be; with the file table, each scalar
    /// that has an origin gets a `# file:line` comment.
    Tree(&'a tree::Node, Option<&'a [Arc<str>]>),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
}

pub(super) fn build_node(v: &Value) -> Node<'_> {
    match v {
        Value::String(s) => string_node(reread_json_string(s)),
        Value::Array(items) => Node::Seq(items.iter().map(build_node).collect()),
        Value::Object(map) => Node::Map(
            map_entries(map)
                .into_iter()
                .map(|(key, _, v)| (key, build_node(v)))
                .collect(),
        ),
        other => other_scalar_node(other),
    }
}

/// A null, boolean or number.
fn other_scalar_node(v: &Value) -> Node<'static> {
    let text = match v {
        Value::Bool(true) => Cow::Borrowed("true"),
        Value::Bool(false) => Cow::Borrowed("false"),
        Value::Number(n) => Cow::Owned(format_number(n)),
        _ => Cow::Borrowed("null"),
    };
    Node::Scalar(text, Style::Plain)
}

/// A tree's scalar as its JSON is built; with `files`, commented with its origin.
pub(super) fn tree_scalar_node<'a>(
    s: &'a tree::Scalar,
    org: tree::Org,
    files: Option<&[Arc<str>]>,
) -> Node<'a> {
    let node = match s {
        tree::Scalar::Str(s) => string_node(reread_json_string(s)),
        other => other_scalar_node(&other.to_json()),
    };
    let file = files.and_then(|f| f.get(org.file as usize));
    match (node, file) {
        (Node::Scalar(text, style), Some(file)) => {
            Node::Commented(text, style, format!("{file}:{}", org.line))
        }
        (node, _) => node,
    }
}

/// An object's entries in the order go-yaml writes them: each key as go-yaml reads it
/// back, the key as written, and the value.
///
/// `encoding/json` writes keys in byte order; go-yaml keeps the last of two keys that its
/// re-read makes equal, then sorts them in its natural order (`sorter.go`).
pub(super) fn map_entries(
    map: &serde_json::Map<String, Value>,
) -> Vec<(Cow<'_, str>, &str, &Value)> {
    entries_in_order(map.iter().map(|(k, v)| (k.as_str(), v)))
}

/// [`map_entries`] of a mapping's `(key, value)` pairs given in byte order of the keys (a
/// `serde_json::Map`'s order, and a renderer tree's).
pub(super) fn entries_in_order<'a, V: Copy>(
    entries: impl ExactSizeIterator<Item = (&'a str, V)> + Clone,
) -> Vec<(Cow<'a, str>, &'a str, V)> {
    let mut kept: Vec<(Cow<'a, str>, &'a str, V)> = Vec::with_capacity(entries.len());
    // Keys of ASCII letters only (most of a manifest's): go-yaml's natural order compares
    // them letter by letter, shorter first, which is the byte order the map iterates in.
    if entries.clone().all(|(k, _)| letters_only(k)) {
        kept.extend(entries.map(|(k, v)| (Cow::Borrowed(k), k, v)));
        return kept;
    }
    if entries.clone().any(|(k, _)| k.contains('\u{85}')) {
        for (k, v) in entries {
            let key = reread_json_string(k);
            if let Some(slot) = kept.iter_mut().find(|(seen, _, _)| *seen == key) {
                slot.1 = k;
                slot.2 = v;
            } else {
                kept.push((key, k, v));
            }
        }
    } else {
        // No key changes on the re-read, and the map iterates in byte order already.
        kept.extend(entries.map(|(k, v)| (Cow::Borrowed(k), k, v)));
    }
    merge_sort_by(&mut kept, &|a: &(Cow<'a, str>, &'a str, V), b| {
        go_yaml_key_less(&a.0, &b.0)
    });
    kept
}

/// A key of ASCII letters only: go-yaml reads it back as written and its natural order is
/// byte order, so a mapping of such keys is written in the order it iterates.
pub(super) fn letters_only(k: &str) -> bool {
    k.bytes().all(|b| b.is_ascii_alphabetic())
}

/// [`string_style`] of a non-empty [`letters_only`] text: plain, unless go-yaml's table of
/// words reads it back as something else (`yes`, `off`, `null`...), then double-quoted. No
/// letters are a number, a timestamp or a base-60 float, nor hold a break.
pub(super) fn letters_style(k: &str) -> Style {
    debug_assert!(!k.is_empty() && letters_only(k));
    if super::yaml_resolve::is_resolve_map_word(k) {
        Style::DoubleQuoted
    } else {
        Style::Plain
    }
}

/// A JSON string as go-yaml v2 reads it back from `encoding/json` output.
///
/// `json.Marshal` escapes every line break except U+0085 (NEL), which the
/// YAML scanner then treats as a line break inside the double-quoted scalar
/// and folds (`yaml_parser_scan_flow_scalar`): a run of spaces and NELs
/// becomes one space for a single NEL, or `n - 1` newlines for `n` NELs;
/// spaces around the breaks are dropped.
pub(super) fn reread_json_string(s: &str) -> Cow<'_, str> {
    // Most strings are ASCII, which a word at a time tells.
    if s.is_ascii() || !s.contains('\u{85}') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != ' ' && c != '\u{85}' {
            out.push(c);
            continue;
        }
        let mut spaces = 0usize;
        let mut breaks = 0usize;
        let mut next = Some(c);
        while let Some(b) = next {
            if b == ' ' {
                if breaks == 0 {
                    spaces += 1;
                }
            } else {
                breaks += 1;
            }
            next = chars.next_if(|&n| n == ' ' || n == '\u{85}');
        }
        match breaks {
            0 => out.extend(std::iter::repeat_n(' ', spaces)),
            1 => out.push(' '),
            n => out.extend(std::iter::repeat_n('\n', n - 1)),
        }
    }
    Cow::Owned(out)
}

/// go-yaml v2 `encode.go` `stringv`: literal block for strings containing a
/// newline, plain when the text would read back as a string, else double
/// quotes.
pub(super) fn string_node(s: Cow<'_, str>) -> Node<'_> {
    let style = string_style(&s);
    Node::Scalar(s, style)
}

/// The style [`string_node`] asks for.
pub(super) fn string_style(s: &str) -> Style {
    if s.contains('\n') {
        Style::Literal
    } else if resolves_to_str(s) && !is_base60_float(s) {
        Style::Plain
    } else {
        Style::DoubleQuoted
    }
}

// --- numbers ---------------------------------------------------------------

fn format_number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    // A u64 beyond i64 is a float64 in a Kubernetes unstructured object.
    n.as_f64().map_or_else(|| n.to_string(), format_float)
}

/// Shortest round-trip decimal digits of `|x|` and the decimal point position:
/// `|x| = 0.d1d2... * 10^dp`.
fn shortest_digits(x: f64) -> (String, i32) {
    let e = format!("{:e}", x.abs());
    let (mant, exp) = e.split_once('e').unwrap_or((e.as_str(), "0"));
    let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
    let exp: i32 = exp.parse().unwrap_or(0);
    (digits, exp + 1)
}

/// A float64 as it comes out of `json.Marshal` + go-yaml v2 decode + encode.
fn format_float(x: f64) -> String {
    if !x.is_finite() {
        // Not representable in JSON; go-yaml's spelling.
        return if x.is_nan() {
            ".nan".to_owned()
        } else if x > 0.0 {
            ".inf".to_owned()
        } else {
            "-.inf".to_owned()
        };
    }
    let (digits, dp) = shortest_digits(x);
    let nd = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    // encoding/json uses %f below 1e21, and then go-yaml reads an integral
    // literal back as an int (or uint) when it fits.
    if x == 0.0 {
        return "0".to_owned();
    }
    if x.abs() < 1e21 && nd <= dp {
        let mut lit = String::new();
        if x < 0.0 {
            lit.push('-');
        }
        lit.push_str(&digits);
        for _ in nd..dp {
            lit.push('0');
        }
        if let Ok(i) = lit.parse::<i64>() {
            return i.to_string();
        }
        if let Ok(u) = lit.parse::<u64>() {
            return u.to_string();
        }
    }
    format_g(x < 0.0, &digits, dp)
}

/// Go's `strconv.FormatFloat(x, 'g', -1, 64)` from shortest digits.
fn format_g(neg: bool, digits: &str, dp: i32) -> String {
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    let nd = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    let exp = dp - 1;
    if !(-4..6).contains(&exp) {
        let mut chars = digits.chars();
        if let Some(first) = chars.next() {
            s.push(first);
        }
        let rest: String = chars.collect();
        if !rest.is_empty() {
            s.push('.');
            s.push_str(&rest);
        }
        s.push('e');
        s.push(if exp < 0 { '-' } else { '+' });
        let a = exp.unsigned_abs();
        if a < 10 {
            s.push('0');
        }
        s.push_str(&a.to_string());
    } else if dp <= 0 {
        s.push_str("0.");
        for _ in dp..0 {
            s.push('0');
        }
        s.push_str(digits);
    } else if dp >= nd {
        s.push_str(digits);
        for _ in nd..dp {
            s.push('0');
        }
    } else {
        let (int, frac) = digits.split_at(usize::try_from(dp).unwrap_or(0));
        s.push_str(int);
        s.push('.');
        s.push_str(frac);
    }
    s
}

// --- key order (go-yaml v2 sorter.go) --------------------------------------

fn go_is_letter(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphabetic()
    } else {
        c.is_alphabetic()
    }
}

fn go_is_digit(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_digit()
    } else {
        c.is_numeric()
    }
}

/// go-yaml v2 `keyList.Less` for two string keys: a "natural" order in which
/// letters sort after other characters and digit runs compare numerically.
fn go_yaml_key_less(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        // One byte per character: compared in place, nothing collected.
        return key_less(a.as_bytes(), b.as_bytes());
    }
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    key_less(&ar, &br)
}

/// [`go_yaml_key_less`] over the characters of two keys (bytes when both are ASCII).
fn key_less<C: Copy + Into<char>>(ar: &[C], br: &[C]) -> bool {
    let ch = |c: C| -> char { c.into() };
    let digit_val = |c: C| i64::from(u32::from(ch(c))).wrapping_sub(i64::from(u32::from('0')));
    for i in 0..ar.len().min(br.len()) {
        let (ac, bc) = (ch(ar[i]), ch(br[i]));
        if ac == bc {
            continue;
        }
        let al = go_is_letter(ac);
        let bl = go_is_letter(bc);
        if al && bl {
            return ac < bc;
        }
        if al || bl {
            return bl;
        }
        let mut an: i64 = 0;
        let mut bn: i64 = 0;
        if ac == '0' || bc == '0' {
            let mut j = i;
            while j > 0 && go_is_digit(ch(ar[j - 1])) {
                j -= 1;
                if ch(ar[j]) != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && go_is_digit(ch(ar[ai])) {
            an = an.wrapping_mul(10).wrapping_add(digit_val(ar[ai]));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && go_is_digit(ch(br[bi])) {
            bn = bn.wrapping_mul(10).wrapping_add(digit_val(br[bi]));
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ac < bc;
    }
    ar.len() < br.len()
}

/// A stable top-down merge sort driven by a "less" predicate; unlike `slice::sort_by`
/// it tolerates a predicate that is not a perfect total order. Already-ordered input
/// (nearly every manifest's keys) is checked in one pass and left as it is.
fn merge_sort_by<T: Clone>(v: &mut [T], less: &impl Fn(&T, &T) -> bool) {
    if v.len() <= 1 {
        return;
    }
    let mid = v.len() / 2;
    merge_sort_by(&mut v[..mid], less);
    merge_sort_by(&mut v[mid..], less);
    // The merge takes from the right only when its head is less than the left's head:
    // when the right's first item is less than no left item, the merge is the identity.
    if v[..mid].iter().all(|a| !less(&v[mid], a)) {
        return;
    }
    let mut out = Vec::with_capacity(v.len());
    let (mut i, mut j) = (0, mid);
    while i < mid && j < v.len() {
        if less(&v[j], &v[i]) {
            out.push(v[j].clone());
            j += 1;
        } else {
            out.push(v[i].clone());
            i += 1;
        }
    }
    out.extend_from_slice(&v[i..mid]);
    out.extend_from_slice(&v[j..]);
    v.clone_from_slice(&out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::tests::{doc, yaml_of};
    use serde_json::json;

    #[test]
    fn comments_follow_scalars_and_keep_the_yaml() {
        let v = serde_json::json!({"metadata": {"name": "web", "labels": {"a/b": "x"}},
            "spec": {"containers": [{"name": "app", "args": ["--x"]}], "script": "line1\nline2\n"}});
        let out = super::to_yaml_with_comments(&v, &|p: &str| Some(format!("at {p}")));
        assert_eq!(
            out,
            "metadata:\n  labels:\n    a/b: x # at /metadata/labels/a~1b\n  name: web # at /metadata/name\nspec:\n  containers:\n  - args:\n    - --x # at /spec/containers/0/args/0\n    name: app # at /spec/containers/0/name\n  script: | # at /spec/script\n    line1\n    line2\n"
        );
        let plain = super::to_yaml_with_comments(&v, &|_: &str| None);
        assert_eq!(plain, super::to_yaml(&v));
    }

    // --- YAML: expectations produced by sigs.k8s.io/yaml v1.6.0 (go.yaml.in/yaml/v2 v2.4.2)

    #[test]
    fn yaml_deployment_nested_object() {
        let got = yaml_of(
            r##"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{"deployment.kubernetes.io/revision":"3"},"labels":{"app":"guestbook","app.kubernetes.io/instance":"guestbook"},"name":"guestbook-ui","namespace":"default"},"spec":{"replicas":1,"revisionHistoryLimit":3,"selector":{"matchLabels":{"app":"guestbook-ui"}},"template":{"metadata":{"labels":{"app":"guestbook-ui"}},"spec":{"containers":[{"image":"gcr.io/heptio-images/ks-guestbook-demo:0.2","imagePullPolicy":"IfNotPresent","name":"guestbook-ui","ports":[{"containerPort":80,"protocol":"TCP"}],"resources":{"limits":{"cpu":"500m","memory":"128Mi"}}}],"dnsPolicy":"ClusterFirst","securityContext":{}}}}}"##,
        );
        let want = r##"
apiVersion: apps/v1
kind: Deployment
metadata:
  annotations:
    deployment.kubernetes.io/revision: "3"
  labels:
    app: guestbook
    app.kubernetes.io/instance: guestbook
  name: guestbook-ui
  namespace: default
spec:
  replicas: 1
  revisionHistoryLimit: 3
  selector:
    matchLabels:
      app: guestbook-ui
  template:
    metadata:
      labels:
        app: guestbook-ui
    spec:
      containers:
      - image: gcr.io/heptio-images/ks-guestbook-demo:0.2
        imagePullPolicy: IfNotPresent
        name: guestbook-ui
        ports:
        - containerPort: 80
          protocol: TCP
        resources:
          limits:
            cpu: 500m
            memory: 128Mi
      dnsPolicy: ClusterFirst
      securityContext: {}
"##;
        assert_eq!(got, doc(want));
    }

    #[test]
    fn yaml_lists_of_maps_lists_of_lists_and_empty_containers() {
        let got = yaml_of(
            r##"{"matrix":[[1,2],[],[["a"],{}]],"empty":{"list":[],"map":{}},"items":[{"name":"a","value":"1"},{"name":"b"},{}],"nulls":[null,{"k":null}]}"##,
        );
        let want = r##"
empty:
  list: []
  map: {}
items:
- name: a
  value: "1"
- name: b
- {}
matrix:
- - 1
  - 2
- []
- - - a
  - {}
nulls:
- null
- k: null
"##;
        assert_eq!(got, doc(want));
        assert_eq!(
            yaml_of(r##"[[["deep"]],[{"a":[1,[2]]}]]"##),
            "- - - deep\n- - a:\n    - 1\n    - - 2\n"
        );
    }

    #[test]
    fn yaml_top_level_values() {
        assert_eq!(to_yaml(&Value::Null), "null\n");
        assert_eq!(to_yaml(&json!("just a string")), "just a string\n");
        assert_eq!(to_yaml(&json!([])), "[]\n");
        assert_eq!(to_yaml(&json!({})), "{}\n");
        assert_eq!(to_yaml(&json!(true)), "true\n");
        assert_eq!(to_yaml(&json!("a\nb\n")), "|\n  a\n  b\n");
    }

    #[test]
    fn yaml_quotes_strings_that_would_not_read_back_as_strings() {
        let got = yaml_of(
            r##"{"s":["true","yes","on","no","off","y","n","~","null","NULL","","1","0.5","1e3","0x1F","012","08","0o17","1_000","+1","-1",".inf","-.inf",".nan",".5","2001-12-14","2001-02-30","2001-12-14T21:59:43Z","2001-12-14 21:59:43.10","1:20","a: b","a:b","#x","x #y","x#y"," lead","trail ","-","- x","-x","---","...","?","? x",":",":x","[x]","{x}","*a","&a","!t","|","\u003e","'q'","\"dq\"","%p","@at","`bt","a,b","\u003c\u003c","=","tab\there","back\\slash","plain text"]}"##,
        );
        let want = r##"
s:
- "true"
- "yes"
- "on"
- "no"
- "off"
- "y"
- "n"
- "~"
- "null"
- "NULL"
- ""
- "1"
- "0.5"
- "1e3"
- "0x1F"
- "012"
- "08"
- "0o17"
- "1_000"
- "+1"
- "-1"
- ".inf"
- "-.inf"
- ".nan"
- ".5"
- "2001-12-14"
- 2001-02-30
- "2001-12-14T21:59:43Z"
- "2001-12-14 21:59:43.10"
- "1:20"
- 'a: b'
- a:b
- '#x'
- 'x #y'
- x#y
- ' lead'
- 'trail '
- '-'
- '- x'
- -x
- '---'
- '...'
- '?'
- '? x'
- ':'
- :x
- '[x]'
- '{x}'
- '*a'
- '&a'
- '!t'
- '|'
- '>'
- '''q'''
- '"dq"'
- '%p'
- '@at'
- '`bt'
- a,b
- <<
- =
- "tab\there"
- back\slash
- plain text
"##;
        assert_eq!(got, doc(want));
    }

    #[test]
    fn yaml_numbers_follow_the_json_then_yaml_round_trip() {
        let got = yaml_of(
            r##"{"n":[0,-7,9223372036854775807,-9223372036854775808,18446744073709551615,0.5,2.0,-0.0,1e21,1e20,1e19,1e-7,0.000001,0.0001,1234567.5,100000.5,3.14159,1.5e300,1152921504606846976.0],"b":[true,false]}"##,
        );
        let want = r##"
b:
- true
- false
"n":
- 0
- -7
- 9223372036854775807
- -9223372036854775808
- 1.8446744073709552e+19
- 0.5
- 2
- 0
- 1e+21
- 1e+20
- 10000000000000000000
- 1e-07
- 1e-06
- 0.0001
- 1.2345675e+06
- 100000.5
- 3.14159
- 1.5e+300
- 1152921504606847000
"##;
        assert_eq!(got, doc(want));
    }

    #[test]
    fn yaml_keys_use_go_yaml_natural_order() {
        let got = yaml_of(
            r##"{"port10":1,"port9":2,"port1":3,"FOO_BAR":4,"FOOBAR":5,"a-b":6,"a_b":7,"aB":8,"a.b":9,"a:":10,"a1":11,"a01":12,"x":13}"##,
        );
        let want = r##"
FOO_BAR: 4
FOOBAR: 5
a-b: 6
a.b: 9
'a:': 10
a_b: 7
a1: 11
a01: 12
aB: 8
port1: 3
port9: 2
port10: 1
x: 13
"##;
        assert_eq!(got, doc(want));
    }

    #[test]
    fn yaml_nel_is_folded_like_go_yaml_reads_json() {
        assert_eq!(reread_json_string("a\u{85}b"), "a b");
        assert_eq!(reread_json_string("a \u{85}  b"), "a b");
        assert_eq!(reread_json_string("a\u{85}\u{85}b"), "a\nb");
        assert_eq!(reread_json_string("a\u{85} \u{85}\u{85}b"), "a\n\nb");
        assert_eq!(reread_json_string("no  breaks "), "no  breaks ");
        assert_eq!(to_yaml(&json!("N\u{85}")), "'N '\n");
    }

    #[test]
    fn floats_format_like_go() {
        let cases = [
            (0.5, "0.5"),
            (2.0, "2"),
            (-0.0, "0"),
            (1e21, "1e+21"),
            (1e20, "1e+20"),
            (1e19, "10000000000000000000"),
            (-(2f64.powi(63)), "-9.223372036854776e+18"),
            (2f64.powi(63), "9223372036854776000"),
            (1e-7, "1e-07"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (123456.5, "123456.5"),
            (1234567.5, "1.2345675e+06"),
            (-2.5e-300, "-2.5e-300"),
            (5e-324, "5e-324"),
        ];
        for (x, want) in cases {
            assert_eq!(format_float(x), want, "{x:e}");
        }
    }

    #[test]
    fn key_order_predicate() {
        assert!(go_yaml_key_less("a9", "a10"));
        assert!(!go_yaml_key_less("a10", "a9"));
        assert!(go_yaml_key_less("A_B", "AB"));
        assert!(go_yaml_key_less("a1", "a01"));
        assert!(go_yaml_key_less("Z", "a"));
        assert!(go_yaml_key_less("ab", "abc"));
        let mut sorted = vec!["b", "a10", "a9", "_", "a"];
        merge_sort_by(&mut sorted, &|x: &&str, y: &&str| go_yaml_key_less(x, y));
        assert_eq!(sorted, ["_", "a", "a9", "a10", "b"]);
        // Keys of letters only: the natural order is the byte order (map_entries' quick path).
        let keys = [
            "apiVersion",
            "kind",
            "metadata",
            "spec",
            "Spec",
            "a",
            "ab",
            "abc",
            "B",
            "b",
            "Z",
            "containers",
            "containerPort",
            "env",
            "envFrom",
            "name",
            "names",
            "ZZ",
            "zA",
        ];
        for x in keys {
            for y in keys {
                assert_eq!(
                    go_yaml_key_less(x, y),
                    x.as_bytes() < y.as_bytes(),
                    "{x} {y}"
                );
            }
        }
        let map: serde_json::Map<String, Value> =
            keys.iter().map(|k| (k.to_string(), Value::Null)).collect();
        let mut natural: Vec<&str> = keys.to_vec();
        merge_sort_by(&mut natural, &|x: &&str, y: &&str| go_yaml_key_less(x, y));
        let quick: Vec<&str> = map_entries(&map).iter().map(|e| e.1).collect();
        assert_eq!(quick, natural);
    }

    /// The textbook top-down merge sort, splitting and merging into new vectors.
    fn reference_sort(v: Vec<String>) -> Vec<String> {
        if v.len() <= 1 {
            return v;
        }
        let mut left = v;
        let right = left.split_off(left.len() / 2);
        let mut l = reference_sort(left).into_iter().peekable();
        let mut r = reference_sort(right).into_iter().peekable();
        let mut out = Vec::new();
        while let (Some(a), Some(b)) = (l.peek(), r.peek()) {
            let next = if go_yaml_key_less(b, a) {
                r.next()
            } else {
                l.next()
            };
            out.extend(next);
        }
        out.extend(l);
        out.extend(r);
        out
    }

    #[test]
    fn the_in_place_sort_orders_keys_as_the_textbook_merge_sort_does() {
        // Keys mixing letters, digits (with leading zeros), punctuation and non-ASCII,
        // where go-yaml's natural order is not a total order; from a fixed-seed generator.
        let alphabet: Vec<char> = "ab0019_-.Zé٣".chars().collect();
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            usize::try_from(seed % n as u64).unwrap_or(0)
        };
        for _ in 0..2000 {
            let keys: Vec<String> = (0..next(9))
                .map(|_| {
                    (0..1 + next(4))
                        .map(|_| alphabet[next(alphabet.len())])
                        .collect()
                })
                .collect();
            let mut in_place = keys.clone();
            merge_sort_by(&mut in_place, &|x: &String, y: &String| {
                go_yaml_key_less(x, y)
            });
            assert_eq!(in_place, reference_sort(keys.clone()), "{keys:?}");
        }
    }
}
