//! `configMapGenerator` / `secretGenerator`, and the content hash kustomize appends to
//! generated names.
//!
//! The hash (established against `kubectl kustomize`): SHA-256 of Go's `json.Marshal` of
//! `{"kind": "ConfigMap", "name": "", "data": <data>}` (plus `binaryData` when it is a
//! non-empty map) for ConfigMaps and `{"kind": "Secret", "type": <type>, "name": "",
//! "data": <data>}` (plus `stringData`) for Secrets — the name is always empty because
//! kustomize looks it up under a path that never exists — then the first ten hex digits
//! with `0 1 3 a e` mapped to `g h k m t`. A missing `data` hashes as the string `""`.

use super::kustfile::{
    Kust, Spanned, entry_bool, entry_str, known_fields, string_map_of, strings_of,
};
use super::resource::{Behavior, Res};
use super::tree::{Map, Node, Org, Scalar, Text, first_org_in};
use super::{Ctx, KustomizeError};
use sha2::{Digest, Sha256};

/// `generatorOptions` / per-generator `options`.
#[derive(Default, Clone)]
pub struct GenOptions {
    pub labels: Vec<(String, Spanned)>,
    pub annotations: Vec<(String, Spanned)>,
    pub disable_hash: bool,
    pub immutable: Option<Org>,
}

pub fn read_options(k: &Kust, n: Option<&Node>, what: &str) -> Result<GenOptions, String> {
    let Some(n) = n.filter(|n| !n.is_null()) else {
        return Ok(GenOptions::default());
    };
    let m = n
        .as_map()
        .ok_or_else(|| format!("{what} must be a mapping"))?;
    known_fields(
        m,
        &[
            "labels",
            "annotations",
            "disableNameSuffixHash",
            "immutable",
        ],
    )?;
    Ok(GenOptions {
        labels: string_map_of(k, m.get("labels"), "labels")?,
        annotations: string_map_of(k, m.get("annotations"), "annotations")?,
        disable_hash: entry_bool(m, "disableNameSuffixHash"),
        immutable: if entry_bool(m, "immutable") {
            m.get("immutable").and_then(Node::org)
        } else {
            None
        },
    })
}

/// kustomize's MergeGlobalOptionsIntoLocal: local labels/annotations win, global booleans
/// that are true win.
fn merge_options(mut local: GenOptions, global: &GenOptions) -> GenOptions {
    for (k, v) in &global.labels {
        if !local.labels.iter().any(|(l, _)| l == k) {
            local.labels.push((k.clone(), v.clone()));
        }
    }
    for (k, v) in &global.annotations {
        if !local.annotations.iter().any(|(l, _)| l == k) {
            local.annotations.push((k.clone(), v.clone()));
        }
    }
    local.disable_hash |= global.disable_hash;
    if local.immutable.is_none() {
        local.immutable = global.immutable;
    }
    local
}

fn remove_quotes(s: &str) -> &str {
    let b = s.as_bytes();
    if b.len() >= 2 && b[0] == b[b.len() - 1] && (b[0] == b'"' || b[0] == b'\'') {
        &s[1..s.len() - 1]
    } else {
        s
    }
}

/// A generated value: text or bytes, with its origin.
struct Pair {
    key: String,
    value: Vec<u8>,
    org: Org,
}

/// Generates the resources of one `configMapGenerator`/`secretGenerator` list.
pub fn generate(
    ctx: &mut Ctx,
    k: &Kust,
    field: &str,
    global: &GenOptions,
) -> Result<Vec<Res>, KustomizeError> {
    let secret = field == "secretGenerator";
    let entries = k.maps(field).map_err(|m| ctx.kerr(k, None, m))?;
    let mut out = Vec::new();
    for e in entries {
        let at = e.values().find_map(Node::org).or_else(|| first_org_in(e));
        // A secretGenerator entry's fields: a configMapGenerator's, then `type`.
        const FIELDS: [&str; 9] = [
            "name",
            "namespace",
            "behavior",
            "literals",
            "files",
            "envs",
            "env",
            "options",
            "type",
        ];
        let known = if secret { &FIELDS[..] } else { &FIELDS[..8] };
        known_fields(e, known).map_err(|m| ctx.kerr(k, at, m))?;
        let name = entry_str(k, e, "name");
        let name_org = name.as_ref().map(|n| n.org).or(at).unwrap_or(Org::NONE);
        let name = name.map(|n| n.value).unwrap_or_default();
        // kustomize's message, for a Secret too.
        if name.is_empty() {
            return Err(ctx.kerr(k, at, "a configmap must have a name"));
        }
        let namespace = entry_str(k, e, "namespace");
        // A behavior kustomize does not know is "unspecified", which it treats as create.
        let behavior = match entry_str(k, e, "behavior").map(|b| b.value).as_deref() {
            Some("merge") => Behavior::Merge,
            Some("replace") => Behavior::Replace,
            _ => Behavior::Create,
        };
        let opts = read_options(k, e.get("options"), "options").map_err(|m| ctx.kerr(k, at, m))?;
        let opts = merge_options(opts, global);
        let mut pairs: Vec<Pair> = Vec::new();
        // Sources in kustomize's order: env files, literals, files.
        let mut envs = strings_of(k, e.get("envs"), "envs").map_err(|m| ctx.kerr(k, at, m))?;
        if let Some(env) = entry_str(k, e, "env") {
            envs.push(env);
        }
        for env in envs {
            let path = ctx.file_under(k, &env.value, env.org)?;
            let bytes = ctx.read(&path)?;
            let file = ctx.file_id(&path);
            for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
                let mut line = line.strip_suffix(b"\r").unwrap_or(line);
                let text = std::str::from_utf8(line).map_err(|_| {
                    ctx.kerr(k, Some(env.org), format!("line {i} has invalid utf8 bytes"))
                })?;
                let mut text = if i == 0 {
                    text.strip_prefix('\u{feff}').unwrap_or(text)
                } else {
                    text
                };
                text = text.trim_start();
                line = text.as_bytes();
                if line.is_empty() || text.starts_with('#') {
                    continue;
                }
                // A line without `=` is a key with an empty value: kustomize 5.5 does not
                // read it from its environment (nor does plumb: a controller's environment
                // is no input). A line with nothing before `=` is dropped. Keys are taken
                // as written (`export A`, `B `, `1A`): kustomize checks none.
                let (key, value) = match text.split_once('=') {
                    Some(("", _)) => continue,
                    Some((a, b)) => (a.to_string(), b.to_string()),
                    None => (text.to_string(), String::new()),
                };
                pairs.push(Pair {
                    key,
                    value: value.into_bytes(),
                    org: Org {
                        file,
                        line: i as u32 + 1,
                        col: 1,
                    },
                });
            }
        }
        for lit in strings_of(k, e.get("literals"), "literals").map_err(|m| ctx.kerr(k, at, m))? {
            let Some((key, value)) = lit.value.split_once('=').filter(|(a, _)| !a.is_empty())
            else {
                return Err(ctx.kerr(
                    k,
                    Some(lit.org),
                    format!("invalid literal source {}, expected key=value", lit.value),
                ));
            };
            pairs.push(Pair {
                key: key.to_string(),
                value: remove_quotes(value).as_bytes().to_vec(),
                org: lit.org,
            });
        }
        for f in strings_of(k, e.get("files"), "files").map_err(|m| ctx.kerr(k, at, m))? {
            let (key, rel) = match f.value.split_once('=') {
                Some((a, b)) => {
                    if a.is_empty() || b.is_empty() {
                        return Err(ctx.kerr(
                            k,
                            Some(f.org),
                            format!("key or file path is missing in {:?}", f.value),
                        ));
                    }
                    (a.to_string(), b.to_string())
                }
                None => (
                    f.value.rsplit('/').next().unwrap_or(&f.value).to_string(),
                    f.value.clone(),
                ),
            };
            let path = ctx.file_under(k, &rel, f.org)?;
            let value = ctx.read(&path)?;
            let file = ctx.file_id(&path);
            pairs.push(Pair {
                key,
                value,
                org: Org {
                    file,
                    line: 1,
                    col: 1,
                },
            });
        }
        let what = if secret { "secret" } else { "configmap" };
        let mut data = Map::new();
        let mut binary = Map::new();
        // Any key is taken (kustomize's key validator checks nothing): `a b`, `ключ`, `/`.
        for p in pairs {
            if data.contains_key(&p.key) || binary.contains_key(&p.key) {
                return Err(ctx.kerr(
                    k,
                    Some(p.org),
                    format!("{what} {name} illegally repeats the key `{}`", p.key),
                ));
            }
            if secret {
                data.insert(p.key, Node::str(base64_lines(&p.value), p.org));
            } else {
                match String::from_utf8(p.value) {
                    Ok(s) => {
                        data.insert(p.key, Node::str(s, p.org));
                    }
                    Err(e) => {
                        binary.insert(p.key, Node::str(base64_lines(e.as_bytes()), p.org));
                    }
                }
            }
        }
        let mut obj = Map::new();
        obj.insert("apiVersion", Node::str("v1", name_org));
        obj.insert(
            "kind",
            Node::str(if secret { "Secret" } else { "ConfigMap" }, name_org),
        );
        let mut meta = Map::new();
        meta.insert("name", Node::str(name, name_org));
        if let Some(ns) = namespace.filter(|n| !n.value.is_empty()) {
            meta.insert("namespace", Node::str(ns.value, ns.org));
        }
        if !opts.labels.is_empty() {
            meta.insert("labels", pairs_map(&opts.labels));
        }
        if !opts.annotations.is_empty() {
            meta.insert("annotations", pairs_map(&opts.annotations));
        }
        obj.insert("metadata", Node::Map(meta));
        if secret {
            let t = entry_str(k, e, "type").filter(|t| !t.value.is_empty());
            let (t, o) = t.map_or(("Opaque".to_string(), name_org), |t| (t.value, t.org));
            obj.insert("type", Node::str(t, o));
        }
        // kustomize gives a Secret without entries `data: {}` (and hashes it so); a
        // ConfigMap without entries gets no `data`.
        if secret || !data.is_empty() {
            obj.insert("data", Node::Map(data));
        }
        if !binary.is_empty() {
            obj.insert("binaryData", Node::Map(binary));
        }
        if let Some(o) = opts.immutable {
            obj.insert("immutable", Node::Scalar(Scalar::Bool(true), o));
        }
        let mut r = Res::new(Node::Map(obj), name_org.file, name_org.line);
        r.behavior = Some(behavior);
        r.needs_hash = !opts.disable_hash;
        out.push(r);
    }
    Ok(out)
}

fn pairs_map(pairs: &[(String, Spanned)]) -> Node {
    Node::Map(
        pairs
            .iter()
            .map(|(k, v)| (Text::from(k.as_str()), Node::str(v.value.as_str(), v.org)))
            .collect(),
    )
}

/// Standard base64 with padding.
pub fn base64(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        out.push(T[(n >> 18) as usize & 63] as char);
        out.push(T[(n >> 12) as usize & 63] as char);
        out.push(if c.len() > 1 {
            T[(n >> 6) as usize & 63] as char
        } else {
            '='
        });
        out.push(if c.len() > 2 {
            T[n as usize & 63] as char
        } else {
            '='
        });
    }
    out
}

/// Base64 as kustomize writes generated data: lines of 70 characters, each ended by a
/// newline, once the encoding reaches 70 characters.
pub fn base64_lines(data: &[u8]) -> String {
    let enc = base64(data);
    if enc.len() < 70 {
        return enc;
    }
    let mut out = String::with_capacity(enc.len() + enc.len() / 70 + 1);
    for chunk in enc.as_bytes().chunks(70) {
        out.push_str(std::str::from_utf8(chunk).expect("base64 is ASCII"));
        out.push('\n');
    }
    out
}

/// Go's `json.Marshal` of a string (HTML-safe escaping, invalid UTF-8 already excluded).
fn go_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Go's `json.Marshal` of a value (maps sorted by key, as Go sorts them).
fn go_json(v: &serde_json::Value, out: &mut String) {
    match v {
        serde_json::Value::Null => out.push_str("null"),
        serde_json::Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        serde_json::Value::Number(n) => out.push_str(&go_number(n)),
        serde_json::Value::String(s) => go_json_string(s, out),
        serde_json::Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json(x, out);
            }
            out.push(']');
        }
        serde_json::Value::Object(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json_string(k, out);
                out.push(':');
                go_json(x, out);
            }
            out.push('}');
        }
    }
}

/// A number as Go prints a float64 decoded from JSON.
fn go_number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    let a = f.abs();
    if a != 0.0 && !(1e-6..1e21).contains(&a) {
        let s = format!("{f:e}");
        // Go writes e+21 / e-07 style exponents.
        if let Some((m, e)) = s.split_once('e') {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            return format!("{m}e{sign}{digits:0>2}");
        }
        s
    } else {
        f.to_string()
    }
}

/// kustomize's name suffix for a ConfigMap or Secret (see the module docs).
pub fn hash_suffix(obj: &Node) -> String {
    use serde_json::Value;
    let kind = obj.path_str(&["kind"]).unwrap_or("");
    let field = |f: &str| match obj.get(f) {
        None => Value::String(String::new()),
        Some(n) if matches!(n, Node::Scalar(..)) => {
            Value::String(n.scalar_text().unwrap_or_default())
        }
        Some(n) => n.to_json(),
    };
    let mut m = serde_json::Map::new();
    m.insert("kind".into(), Value::String(kind.to_string()));
    m.insert("name".into(), Value::String(String::new()));
    m.insert("data".into(), field("data"));
    if kind == "Secret" {
        m.insert("type".into(), field("type"));
        if obj.get("stringData").is_some_and(|n| n.as_map().is_some()) {
            m.insert("stringData".into(), field("stringData"));
        }
    } else if obj.get("binaryData").is_some_and(|n| n.as_map().is_some()) {
        m.insert("binaryData".into(), field("binaryData"));
    }
    let mut s = String::new();
    go_json(&Value::Object(m), &mut s);
    let digest = Sha256::digest(s.as_bytes());
    let hex: String = digest.iter().take(5).map(|b| format!("{b:02x}")).collect();
    hex.chars()
        .map(|c| match c {
            '0' => 'g',
            '1' => 'h',
            '3' => 'k',
            'a' => 'm',
            'e' => 't',
            c => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(j: serde_json::Value) -> Node {
        super::super::tree::node_from_json(&j, Org::NONE)
    }

    #[test]
    fn hashes_match_kubectl_kustomize() {
        // Names and expected suffixes observed from `kubectl kustomize` (kustomize 5.5).
        let cm = obj(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm"}, "data": {"a": "b", "c": "1.0"}}));
        assert_eq!(hash_suffix(&cm), "8kktm88h25");
        let s = obj(serde_json::json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s"}, "type": "Opaque", "data": {"x": "eQ=="}}));
        assert_eq!(hash_suffix(&s), "t86b282gdf");
        let merged = obj(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "p-cm-s", "labels": {"team": "x"}}, "data": {"a": "b", "c": "d"}}));
        assert_eq!(hash_suffix(&merged), "fh478f99mk");
    }

    #[test]
    fn base64_and_quotes() {
        assert_eq!(base64(b"y"), "eQ==");
        assert_eq!(base64(b"hello"), "aGVsbG8=");
        assert_eq!(base64(b"abc"), "YWJj");
        assert_eq!(remove_quotes("\"a b\""), "a b");
        assert_eq!(remove_quotes("'x"), "'x");
        let mut s = String::new();
        go_json_string("<a&b>\n", &mut s);
        assert_eq!(s, "\"\\u003ca\\u0026b\\u003e\\n\"");
    }
}
