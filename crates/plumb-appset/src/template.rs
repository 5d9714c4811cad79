//! Filling a template with a parameter set, in Argo CD's two modes:
//!
//! - **legacy** (`fasttemplate`): `{{name}}` (spaces inside the braces allowed) in every
//!   string and map key is the parameter's value; a tag no parameter names stays as written;
//! - **`goTemplate: true`**: every string is a Go text/template executed on the parameters
//!   (Go's semantics through the `gotmpl` crate: pipelines, `if`/`range`/`with`, sorted map
//!   iteration, `printf`), with `missingkey=error` when asked and the functions of
//!   [`FUNCTIONS`]. A string without `{{` is left as it is.

use crate::Mode;
use gotmpl::{MissingKey, Template, TemplateError, Value as G};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The functions `goTemplate` offers besides Go's builtins: Argo CD's own and the Sprig
/// functions ApplicationSets use most.
pub const FUNCTIONS: &[&str] = &[
    "normalize",
    "slugify",
    "toYaml",
    "fromYaml",
    "toJson",
    "lower",
    "upper",
    "title",
    "trim",
    "trimPrefix",
    "trimSuffix",
    "replace",
    "default",
    "quote",
    "squote",
    "join",
    "splitList",
    "trunc",
    "contains",
    "hasPrefix",
    "hasSuffix",
    "b64enc",
    "b64dec",
    "add",
    "add1",
    "sub",
    "mul",
    "div",
    "mod",
    "max",
    "min",
    "int",
    "toString",
    "atoi",
    "list",
    "dict",
    "get",
    "hasKey",
    "first",
    "last",
    "has",
    "sortAlpha",
    "uniq",
    "empty",
    "coalesce",
    "ternary",
    "indent",
    "nindent",
    "repeat",
    "regexMatch",
    "regexReplaceAll",
    "regexFind",
    "sha256sum",
    "fromYamlArray",
    "kebabcase",
    "snakecase",
    "camelcase",
    "untitle",
    "substr",
    "trimAll",
    "nospace",
    "cat",
    "plural",
    "toRawJson",
    "fromJson",
    "append",
    "prepend",
    "concat",
    "rest",
    "initial",
    "reverse",
    "compact",
    "without",
    "until",
    "keys",
    "pick",
    "omit",
    "merge",
    "set",
    "unset",
    "floor",
    "ceil",
    "round",
    "float64",
    "toStrings",
    "regexSplit",
    "split",
];

/// `v` with every string filled from `params`.
pub fn render(v: &Value, params: &Map<String, Value>, mode: Mode) -> Result<Value, String> {
    if mode.go {
        let data = to_go(&Value::Object(params.clone()));
        walk(v, &mut |s| go_string(s, &data, mode))
    } else {
        walk(v, &mut |s| Ok(legacy_string(s, params)))
    }
}

fn walk(v: &Value, f: &mut dyn FnMut(&str) -> Result<String, String>) -> Result<Value, String> {
    Ok(match v {
        Value::String(s) => Value::String(f(s)?),
        Value::Array(items) => {
            Value::Array(items.iter().map(|i| walk(i, f)).collect::<Result<_, _>>()?)
        }
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                out.insert(f(k)?, walk(v, f)?);
            }
            Value::Object(out)
        }
        other => other.clone(),
    })
}

/// fasttemplate's substitution: `{{ key }}` → the parameter, unknown tags kept.
fn legacy_string(s: &str, params: &Map<String, Value>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            return out;
        };
        let key = after[..end].trim();
        match params.get(key) {
            Some(Value::String(v)) => out.push_str(v),
            Some(other) => out.push_str(&other.to_string()),
            None => out.push_str(&rest[start..start + 2 + end + 2]),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

/// Parsed templates by source and `missingkey`: an ApplicationSet renders the same strings
/// once per parameter set (10,000 times in a large matrix), so each is parsed once.
type Parsed = std::collections::HashMap<(String, bool), Result<Template, String>>;

thread_local! {
    static PARSED: std::cell::RefCell<Parsed> = std::cell::RefCell::new(Parsed::new());
}

/// The most templates [`PARSED`] keeps; past it the cache starts again.
const MAX_PARSED: usize = 4096;

fn go_string(s: &str, data: &G, mode: Mode) -> Result<String, String> {
    if !s.contains("{{") {
        return Ok(s.to_string());
    }
    let key = (s.to_string(), mode.missing_key_error);
    let parsed = PARSED.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(t) = cache.get(&key) {
            return t.clone();
        }
        if cache.len() >= MAX_PARSED {
            cache.clear();
        }
        let t = parse(s, mode);
        cache.insert(key, t.clone());
        t
    })?;
    parsed.execute_to_string(data).map_err(|e| one_line(&e))
}

fn parse(s: &str, mode: Mode) -> Result<Template, String> {
    let mut t = Template::new("template");
    if mode.missing_key_error {
        t = t.missing_key(MissingKey::Error);
    }
    for (name, f) in functions() {
        t = t.func(name, f);
    }
    t.parse(s).map_err(|e| one_line(&e))
}

fn one_line(e: &TemplateError) -> String {
    e.to_string().lines().next().unwrap_or("error").to_string()
}

/// serde_json → the template engine's values (maps sorted, as Go iterates them). Every
/// number is a float64, as Argo CD's generators hand parameters to Go (through
/// encoding/json): `{{.replicas}}` prints `3`, `printf "%d"` does not take it.
pub fn to_go(v: &Value) -> G {
    match v {
        Value::Null => G::Nil,
        Value::Bool(b) => G::Bool(*b),
        Value::Number(n) => G::Float(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => G::String(s.as_str().into()),
        Value::Array(items) => G::List(items.iter().map(to_go).collect::<Vec<_>>().into()),
        Value::Object(m) => {
            let map: BTreeMap<Arc<str>, G> = m
                .iter()
                .map(|(k, v)| (k.as_str().into(), to_go(v)))
                .collect();
            G::Map(Arc::new(map))
        }
    }
}

/// The engine's values → serde_json (for `toYaml`, `toJson`).
fn from_go(v: &G) -> Value {
    match v {
        G::Nil => Value::Null,
        G::Bool(b) => Value::Bool(*b),
        G::Int(i) => Value::from(*i),
        G::Uint(u) => Value::from(*u),
        G::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        G::String(s) => Value::String(s.to_string()),
        G::List(items) => Value::Array(items.iter().map(from_go).collect()),
        G::Map(m) => Value::Object(m.iter().map(|(k, v)| (k.to_string(), from_go(v))).collect()),
        other => Value::String(other.to_string()),
    }
}

type Func = Box<dyn Fn(&[G]) -> gotmpl::Result<G> + Send + Sync>;

fn text(v: Option<&G>) -> String {
    match v {
        Some(G::String(s)) => s.to_string(),
        Some(G::Nil) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn s(v: impl Into<String>) -> G {
    G::String(v.into().into())
}

fn err(m: impl std::fmt::Display) -> TemplateError {
    TemplateError::Exec(m.to_string())
}

/// The last argument: a pipeline's value (Sprig's functions take it last).
fn last(args: &[G]) -> Option<&G> {
    args.last()
}

fn functions() -> Vec<(&'static str, Func)> {
    let f = |g: fn(&[G]) -> gotmpl::Result<G>| -> Func { Box::new(g) };
    vec![
        ("normalize", f(|a| Ok(s(crate::normalize(&text(last(a))))))),
        ("slugify", f(slugify)),
        (
            "toYaml",
            f(|a| {
                let v = from_go(last(a).unwrap_or(&G::Nil));
                let text = serde_saphyr::to_string(&v).map_err(err)?;
                Ok(s(text.trim_end_matches('\n').to_string()))
            }),
        ),
        (
            "fromYaml",
            f(|a| {
                let v: Value = serde_saphyr::from_str(&text(last(a))).map_err(err)?;
                Ok(to_go(&v))
            }),
        ),
        ("toJson", f(to_json)),
        ("lower", f(|a| Ok(s(text(last(a)).to_lowercase())))),
        ("upper", f(|a| Ok(s(text(last(a)).to_uppercase())))),
        (
            "title",
            f(|a| Ok(s(word_starts(&text(last(a)), char::to_uppercase)))),
        ),
        ("trim", f(|a| Ok(s(text(last(a)).trim().to_string())))),
        (
            "trimPrefix",
            f(|a| {
                let (p, t) = (text(a.first()), text(last(a)));
                Ok(s(t.strip_prefix(&p).unwrap_or(&t).to_string()))
            }),
        ),
        (
            "trimSuffix",
            f(|a| {
                let (p, t) = (text(a.first()), text(last(a)));
                Ok(s(t.strip_suffix(&p).unwrap_or(&t).to_string()))
            }),
        ),
        (
            "replace",
            f(|a| {
                if a.len() != 3 {
                    return Err(err("replace takes OLD NEW STRING"));
                }
                Ok(s(text(a.get(2)).replace(&text(a.first()), &text(a.get(1)))))
            }),
        ),
        (
            "default",
            f(|a| {
                let given = if a.len() > 1 { a.last() } else { None };
                match given {
                    Some(g) if g.is_truthy() => Ok(g.clone()),
                    _ => Ok(a.first().cloned().unwrap_or(G::Nil)),
                }
            }),
        ),
        ("quote", f(|a| Ok(s(format!("{:?}", text(last(a))))))),
        ("squote", f(|a| Ok(s(format!("'{}'", text(last(a))))))),
        (
            "join",
            f(|a| {
                let sep = text(a.first());
                match last(a) {
                    Some(G::List(items)) => Ok(s(items
                        .iter()
                        .map(|i| text(Some(i)))
                        .collect::<Vec<_>>()
                        .join(&sep))),
                    other => Ok(s(text(other))),
                }
            }),
        ),
        (
            "splitList",
            f(|a| {
                let sep = text(a.first());
                let t = text(last(a));
                Ok(G::List(
                    t.split(sep.as_str()).map(s).collect::<Vec<_>>().into(),
                ))
            }),
        ),
        (
            "trunc",
            f(|a| {
                let n = a.first().and_then(G::as_int).unwrap_or(0);
                let t = text(last(a));
                let len = t.chars().count() as i64;
                Ok(s(if n >= 0 {
                    t.chars().take(n as usize).collect::<String>()
                } else {
                    t.chars()
                        .skip((len + n).max(0) as usize)
                        .collect::<String>()
                }))
            }),
        ),
        (
            "contains",
            f(|a| Ok(G::Bool(text(last(a)).contains(&text(a.first()))))),
        ),
        (
            "hasPrefix",
            f(|a| Ok(G::Bool(text(last(a)).starts_with(&text(a.first()))))),
        ),
        (
            "hasSuffix",
            f(|a| Ok(G::Bool(text(last(a)).ends_with(&text(a.first()))))),
        ),
        ("b64enc", f(|a| Ok(s(base64(text(last(a)).as_bytes()))))),
        (
            "b64dec",
            f(|a| {
                use base64::Engine as _;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(text(last(a)))
                    .map_err(err)?;
                Ok(s(String::from_utf8_lossy(&bytes).into_owned()))
            }),
        ),
        ("add", f(|a| Ok(G::Int(ints(a).iter().sum())))),
        ("add1", f(|a| Ok(G::Int(int_of(last(a)) + 1)))),
        (
            "sub",
            f(|a| Ok(G::Int(int_of(a.first()) - int_of(a.get(1))))),
        ),
        ("mul", f(|a| Ok(G::Int(ints(a).iter().product())))),
        (
            "div",
            f(|a| match int_of(a.get(1)) {
                0 => Err(err("integer divide by zero")),
                d => Ok(G::Int(int_of(a.first()) / d)),
            }),
        ),
        (
            "mod",
            f(|a| match int_of(a.get(1)) {
                0 => Err(err("integer divide by zero")),
                d => Ok(G::Int(int_of(a.first()) % d)),
            }),
        ),
        (
            "max",
            f(|a| Ok(G::Int(ints(a).into_iter().max().unwrap_or(0)))),
        ),
        (
            "min",
            f(|a| Ok(G::Int(ints(a).into_iter().min().unwrap_or(0)))),
        ),
        ("int", f(|a| Ok(G::Int(int_of(last(a)))))),
        ("toString", f(|a| Ok(s(text(last(a)))))),
        (
            "atoi",
            f(|a| Ok(G::Int(text(last(a)).trim().parse().unwrap_or(0)))),
        ),
        ("list", f(|a| Ok(G::List(a.to_vec().into())))),
        (
            "dict",
            f(|a| {
                let mut m: BTreeMap<Arc<str>, G> = BTreeMap::new();
                for pair in a.chunks(2) {
                    let v = pair.get(1).cloned().unwrap_or(s(""));
                    m.insert(text(pair.first()).into(), v);
                }
                Ok(G::Map(Arc::new(m)))
            }),
        ),
        (
            "get",
            f(|a| match a.first() {
                Some(G::Map(m)) => Ok(m.get(text(a.get(1)).as_str()).cloned().unwrap_or(s(""))),
                _ => Ok(s("")),
            }),
        ),
        (
            "hasKey",
            f(|a| match a.first() {
                Some(G::Map(m)) => Ok(G::Bool(m.contains_key(text(a.get(1)).as_str()))),
                _ => Ok(G::Bool(false)),
            }),
        ),
        (
            "first",
            f(|a| match last(a) {
                Some(G::List(l)) => Ok(l.first().cloned().unwrap_or(G::Nil)),
                _ => Ok(G::Nil),
            }),
        ),
        (
            "last",
            f(|a| match last(a) {
                Some(G::List(l)) => Ok(l.last().cloned().unwrap_or(G::Nil)),
                _ => Ok(G::Nil),
            }),
        ),
        (
            "has",
            f(|a| match last(a) {
                Some(G::List(l)) => {
                    let needle = text(a.first());
                    Ok(G::Bool(l.iter().any(|i| text(Some(i)) == needle)))
                }
                _ => Ok(G::Bool(false)),
            }),
        ),
        (
            "sortAlpha",
            f(|a| {
                let mut v: Vec<String> = match last(a) {
                    Some(G::List(l)) => l.iter().map(|i| text(Some(i))).collect(),
                    other => vec![text(other)],
                };
                v.sort();
                Ok(G::List(v.into_iter().map(s).collect::<Vec<_>>().into()))
            }),
        ),
        (
            "uniq",
            f(|a| {
                let mut out: Vec<G> = Vec::new();
                if let Some(G::List(l)) = last(a) {
                    for i in l.iter() {
                        if !out.iter().any(|o| text(Some(o)) == text(Some(i))) {
                            out.push(i.clone());
                        }
                    }
                }
                Ok(G::List(out.into()))
            }),
        ),
        (
            "empty",
            f(|a| Ok(G::Bool(!last(a).is_some_and(G::is_truthy)))),
        ),
        (
            "coalesce",
            f(|a| Ok(a.iter().find(|v| v.is_truthy()).cloned().unwrap_or(G::Nil))),
        ),
        (
            "ternary",
            f(|a| {
                let cond = last(a).is_some_and(G::is_truthy);
                Ok(if cond { a.first() } else { a.get(1) }
                    .cloned()
                    .unwrap_or(G::Nil))
            }),
        ),
        (
            "indent",
            f(|a| Ok(s(indent(int_of(a.first()), &text(last(a)))))),
        ),
        (
            "nindent",
            f(|a| {
                Ok(s(format!(
                    "\n{}",
                    indent(int_of(a.first()), &text(last(a)))
                )))
            }),
        ),
        (
            "repeat",
            f(|a| {
                let n = usize::try_from(int_of(a.first())).unwrap_or(0).min(10_000);
                Ok(s(text(last(a)).repeat(n)))
            }),
        ),
        (
            // Sprig's regexMatch ignores an invalid pattern (false); the others fail on it.
            "regexMatch",
            f(|a| {
                Ok(G::Bool(
                    regex(a.first()).is_ok_and(|re| re.is_match(&text(last(a)))),
                ))
            }),
        ),
        (
            "regexReplaceAll",
            f(|a| {
                let re = regex(a.first())?;
                // Go's $1 and ${1} expansion is the regex crate's.
                Ok(s(re
                    .replace_all(&text(a.get(1)), text(a.get(2)).as_str())
                    .into_owned()))
            }),
        ),
        (
            "regexFind",
            f(|a| {
                let re = regex(a.first())?;
                Ok(s(re
                    .find(&text(last(a)))
                    .map(|m| m.as_str().to_string())
                    .unwrap_or_default()))
            }),
        ),
        (
            "sha256sum",
            f(|a| {
                use sha2::Digest as _;
                Ok(s(hex(&sha2::Sha256::digest(text(last(a)).as_bytes()))))
            }),
        ),
        (
            "fromYamlArray",
            f(|a| {
                let v: Vec<Value> = serde_saphyr::from_str(&text(last(a))).map_err(err)?;
                Ok(G::List(v.iter().map(to_go).collect::<Vec<_>>().into()))
            }),
        ),
        ("kebabcase", f(|a| Ok(s(delimited(&text(last(a)), '-'))))),
        ("snakecase", f(|a| Ok(s(delimited(&text(last(a)), '_'))))),
        ("camelcase", f(|a| Ok(s(camel(&text(last(a))))))),
        (
            "untitle",
            f(|a| Ok(s(word_starts(&text(last(a)), char::to_lowercase)))),
        ),
        (
            "substr",
            f(|a| {
                let (start, end, t) = (int_of(a.first()), int_of(a.get(1)), text(a.get(2)));
                let len = t.len() as i64;
                let (from, to) = if start < 0 {
                    (0, end.clamp(0, len))
                } else if end < 0 || end > len {
                    (start.min(len), len)
                } else {
                    (start.min(end), end)
                };
                Ok(s(t
                    .get(from as usize..to as usize)
                    .unwrap_or_default()
                    .to_string()))
            }),
        ),
        (
            "trimAll",
            f(|a| {
                let cut: Vec<char> = text(a.first()).chars().collect();
                Ok(s(text(last(a)).trim_matches(cut.as_slice()).to_string()))
            }),
        ),
        (
            "nospace",
            f(|a| Ok(s(text(last(a)).split_whitespace().collect::<String>()))),
        ),
        (
            "cat",
            f(|a| {
                Ok(s(a
                    .iter()
                    .filter(|v| !matches!(v, G::Nil))
                    .map(|v| text(Some(v)))
                    .collect::<Vec<_>>()
                    .join(" ")))
            }),
        ),
        (
            "plural",
            f(|a| {
                // Its count is a Go int: a float64 (a JSON number) is refused, as Go refuses it.
                if let Some(G::Float(_)) = a.get(2) {
                    return Err(err("wrong type for value; expected int; got float64"));
                }
                Ok(if int_of(a.get(2)) == 1 {
                    a.first()
                } else {
                    a.get(1)
                }
                .cloned()
                .unwrap_or(G::Nil))
            }),
        ),
        (
            // serde_json escapes no HTML, so the raw form is the same text.
            "toRawJson",
            f(to_json),
        ),
        (
            "fromJson",
            f(|a| {
                // Sprig's fromJson gives an empty map for text that is not a JSON object.
                let v: Value = serde_json::from_str(&text(last(a))).unwrap_or(Value::Null);
                Ok(match v {
                    Value::Object(_) => to_go(&v),
                    _ => G::Map(Arc::new(BTreeMap::new())),
                })
            }),
        ),
        (
            "append",
            f(|a| {
                let mut l = list_of(a.first())?;
                l.push(a.get(1).cloned().unwrap_or(G::Nil));
                Ok(G::List(l.into()))
            }),
        ),
        (
            "prepend",
            f(|a| {
                let mut l = list_of(a.first())?;
                l.insert(0, a.get(1).cloned().unwrap_or(G::Nil));
                Ok(G::List(l.into()))
            }),
        ),
        (
            "concat",
            f(|a| {
                let mut out = Vec::new();
                for l in a {
                    out.extend(list_of(Some(l))?);
                }
                Ok(G::List(out.into()))
            }),
        ),
        (
            "rest",
            f(|a| {
                let l = list_of(last(a))?;
                Ok(G::List(l.into_iter().skip(1).collect::<Vec<_>>().into()))
            }),
        ),
        (
            "initial",
            f(|a| {
                let mut l = list_of(last(a))?;
                l.pop();
                Ok(G::List(l.into()))
            }),
        ),
        (
            "reverse",
            f(|a| {
                let mut l = list_of(last(a))?;
                l.reverse();
                Ok(G::List(l.into()))
            }),
        ),
        (
            "compact",
            f(|a| {
                let l = list_of(last(a))?;
                Ok(G::List(
                    l.into_iter()
                        .filter(G::is_truthy)
                        .collect::<Vec<_>>()
                        .into(),
                ))
            }),
        ),
        (
            "without",
            f(|a| {
                let l = list_of(a.first())?;
                let drop = rest_texts(a);
                Ok(G::List(
                    l.into_iter()
                        .filter(|v| !drop.contains(&text(Some(v))))
                        .collect::<Vec<_>>()
                        .into(),
                ))
            }),
        ),
        (
            "until",
            f(|a| {
                let n = int_of(last(a)).clamp(0, 10_000);
                Ok(G::List((0..n).map(G::Int).collect::<Vec<_>>().into()))
            }),
        ),
        (
            // Go's map order is random; keys come sorted (as `keys | sortAlpha` gives them).
            "keys",
            f(|a| {
                let mut out: Vec<String> = Vec::new();
                for m in a {
                    if let G::Map(m) = m {
                        out.extend(m.keys().map(|k| k.to_string()));
                    }
                }
                out.sort();
                Ok(G::List(out.into_iter().map(s).collect::<Vec<_>>().into()))
            }),
        ),
        ("pick", f(|a| keys_kept(a, true))),
        ("omit", f(|a| keys_kept(a, false))),
        (
            // Sprig's merge: the first map wins, the others fill in what it lacks, deeply.
            "merge",
            f(|a| {
                let mut out = map_of(a.first())?;
                for m in &a[1.min(a.len())..] {
                    out = merge_maps(out, &map_of(Some(m))?);
                }
                Ok(G::Map(Arc::new(out)))
            }),
        ),
        (
            "set",
            f(|a| {
                let mut m = map_of(a.first())?;
                m.insert(text(a.get(1)).into(), a.get(2).cloned().unwrap_or(G::Nil));
                Ok(G::Map(Arc::new(m)))
            }),
        ),
        (
            "unset",
            f(|a| {
                let mut m = map_of(a.first())?;
                m.remove(text(a.get(1)).as_str());
                Ok(G::Map(Arc::new(m)))
            }),
        ),
        ("floor", f(|a| Ok(G::Float(float_of(last(a)).floor())))),
        ("ceil", f(|a| Ok(G::Float(float_of(last(a)).ceil())))),
        (
            "round",
            f(|a| {
                let x = float_of(a.first());
                let places = int_of(a.get(1)).clamp(0, 15) as i32;
                let p = 10f64.powi(places);
                // Sprig rounds half away from zero (with a 0.5 bias on the scaled value).
                Ok(G::Float((x * p).round() / p))
            }),
        ),
        ("float64", f(|a| Ok(G::Float(float_of(last(a)))))),
        (
            "toStrings",
            f(|a| {
                let l = match last(a) {
                    Some(G::List(l)) => l.iter().cloned().collect::<Vec<_>>(),
                    Some(G::Nil) | None => Vec::new(),
                    Some(other) => vec![other.clone()],
                };
                Ok(G::List(
                    l.iter()
                        .map(|v| s(text(Some(v))))
                        .collect::<Vec<_>>()
                        .into(),
                ))
            }),
        ),
        (
            "regexSplit",
            f(|a| {
                let re = regex(a.first())?;
                let t = text(a.get(1));
                let n = int_of(a.get(2));
                let parts: Vec<G> = if n < 0 {
                    re.split(&t).map(s).collect()
                } else {
                    re.splitn(&t, n as usize).map(s).collect()
                };
                Ok(G::List(parts.into()))
            }),
        ),
        (
            // Sprig's split: a map `_0`, `_1`, … of the parts.
            "split",
            f(|a| {
                let sep = text(a.first());
                let t = text(last(a));
                let m: BTreeMap<Arc<str>, G> = t
                    .split(sep.as_str())
                    .enumerate()
                    .map(|(i, p)| (format!("_{i}").into(), s(p)))
                    .collect();
                Ok(G::Map(Arc::new(m)))
            }),
        ),
    ]
}

/// `t` with the first letter of each word (after whitespace) mapped by `case`: Sprig's `title`
/// and `untitle`.
fn word_starts<I: Iterator<Item = char>>(t: &str, case: fn(char) -> I) -> String {
    let mut out = String::with_capacity(t.len());
    let mut start = true;
    for c in t.chars() {
        if start && c.is_alphabetic() {
            out.extend(case(c));
        } else {
            out.push(c);
        }
        start = c.is_whitespace();
    }
    out
}

/// Sprig's `toJson` (and `toRawJson`).
fn to_json(a: &[G]) -> gotmpl::Result<G> {
    Ok(s(serde_json::to_string(&from_go(
        last(a).unwrap_or(&G::Nil),
    ))
    .map_err(err)?))
}

/// The arguments after the first, as text (`pick`'s and `omit`'s keys, `without`'s values).
fn rest_texts(a: &[G]) -> Vec<String> {
    a.iter().skip(1).map(|v| text(Some(v))).collect()
}

/// `pick` (`keep`) or `omit`: the dict of the first argument with only, or without, the keys
/// the others name.
fn keys_kept(a: &[G], keep: bool) -> gotmpl::Result<G> {
    let m = map_of(a.first())?;
    let named = rest_texts(a);
    Ok(G::Map(Arc::new(
        m.iter()
            .filter(|(k, _)| named.iter().any(|w| w.as_str() == &***k) == keep)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )))
}

fn list_of(v: Option<&G>) -> gotmpl::Result<Vec<G>> {
    match v {
        Some(G::List(l)) => Ok(l.iter().cloned().collect()),
        Some(G::Nil) | None => Ok(Vec::new()),
        Some(other) => Err(err(format!(
            "cannot find first on type {}",
            other.type_name()
        ))),
    }
}

fn map_of(v: Option<&G>) -> gotmpl::Result<BTreeMap<Arc<str>, G>> {
    match v {
        Some(G::Map(m)) => Ok((**m).clone()),
        Some(G::Nil) | None => Ok(BTreeMap::new()),
        Some(other) => Err(err(format!("expected a map, got {}", other.type_name()))),
    }
}

fn merge_maps(
    mut dst: BTreeMap<Arc<str>, G>,
    src: &BTreeMap<Arc<str>, G>,
) -> BTreeMap<Arc<str>, G> {
    for (k, v) in src {
        let merged = match (dst.get(k), v) {
            (Some(G::Map(d)), G::Map(sv)) => G::Map(Arc::new(merge_maps((**d).clone(), sv))),
            (Some(existing), _) => existing.clone(),
            (None, _) => v.clone(),
        };
        dst.insert(k.clone(), merged);
    }
    dst
}

/// Sprig's `toFloat64`: numbers widened, numeric strings parsed, anything else 0.
fn float_of(v: Option<&G>) -> f64 {
    match v {
        Some(G::Int(i)) => *i as f64,
        Some(G::Uint(u)) => *u as f64,
        Some(G::Float(f)) => *f,
        Some(G::Bool(b)) => f64::from(u8::from(*b)),
        Some(G::String(t)) => t.trim().parse().unwrap_or(0.0),
        _ => 0.0,
    }
}

/// xstrings' snake and kebab case: words split at case changes, spaces, `_` and `-`, lower
/// case, joined with `sep`.
fn delimited(t: &str, sep: char) -> String {
    let chars: Vec<char> = t.chars().collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c == '_' || c == '-' || c.is_whitespace() {
            if !out.is_empty() && !out.ends_with(sep) {
                out.push(sep);
            }
            continue;
        }
        if c.is_uppercase() && i > 0 && !out.is_empty() && !out.ends_with(sep) {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase() || prev.is_ascii_digit() || (prev.is_uppercase() && next_lower) {
                out.push(sep);
            }
        }
        out.extend(c.to_lowercase());
    }
    while out.ends_with(sep) {
        out.pop();
    }
    out
}

/// xstrings' camel case: words split at `_`, `-` and spaces, each capitalised.
fn camel(t: &str) -> String {
    let mut out = String::new();
    let mut up = true;
    for c in t.chars() {
        if c == '_' || c == '-' || c.is_whitespace() {
            up = true;
            continue;
        }
        if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Sprig's `toInt64` of each argument.
fn ints(a: &[G]) -> Vec<i64> {
    a.iter().map(|v| int_of(Some(v))).collect()
}

/// Sprig's `toInt64`: numbers truncated, numeric strings parsed, anything else 0.
fn int_of(v: Option<&G>) -> i64 {
    match v {
        Some(G::Int(i)) => *i,
        Some(G::Uint(u)) => i64::try_from(*u).unwrap_or(i64::MAX),
        Some(G::Float(f)) => *f as i64,
        Some(G::Bool(b)) => i64::from(*b),
        Some(G::String(t)) => t
            .trim()
            .parse::<i64>()
            .or_else(|_| t.trim().parse::<f64>().map(|f| f as i64))
            .unwrap_or(0),
        _ => 0,
    }
}

fn indent(n: i64, t: &str) -> String {
    let pad = " ".repeat(usize::try_from(n).unwrap_or(0).min(1_000));
    format!("{pad}{}", t.replace('\n', &format!("\n{pad}")))
}

fn regex(v: Option<&G>) -> gotmpl::Result<regex::Regex> {
    regex::Regex::new(&text(v)).map_err(err)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Argo CD's `slugify [MAX [SMART]] TEXT`: lower case, runs of anything but `a-z0-9` one `-`,
/// cut to MAX (default 50) characters, at a `-` when SMART (default true).
fn slugify(a: &[G]) -> gotmpl::Result<G> {
    let t = text(last(a));
    let max = if a.len() > 1 {
        a.first().and_then(G::as_int).unwrap_or(50)
    } else {
        50
    };
    let smart = if a.len() > 2 {
        a.get(1).is_none_or(G::is_truthy)
    } else {
        true
    };
    let mut out = String::new();
    for c in t.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let mut out = out.trim_matches('-').to_string();
    let max = usize::try_from(max).unwrap_or(0);
    if max > 0 && out.len() > max {
        let cut = &out[..max];
        out = match (smart, cut.rfind('-')) {
            (true, Some(i)) if i > 0 => cut[..i].to_string(),
            _ => cut.to_string(),
        };
        out = out.trim_end_matches('-').to_string();
    }
    Ok(s(out))
}

fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("a map")
    }

    #[test]
    fn legacy_tags_are_filled_and_unknown_ones_stay() {
        let p = params(json!({"path.basename": "web", "cluster": "prod"}));
        let t = json!({"name": "{{path.basename}}-{{ cluster }}", "keep": "{{nope}} {{", "n": 3});
        let out = render(&t, &p, Mode::default()).expect("rendered");
        assert_eq!(
            out,
            json!({"name": "web-prod", "keep": "{{nope}} {{", "n": 3})
        );
    }

    #[test]
    fn go_templates_follow_go() {
        let go = Mode {
            go: true,
            missing_key_error: false,
        };
        let p = params(
            json!({"path": {"basename": "Web App", "segments": ["apps", "web"]},
            "replicas": 3, "labels": {"b": "2", "a": "1"}}),
        );
        let render_one = |src: &str, mode: Mode| {
            render(&json!(src), &p, mode).map(|v| v.as_str().unwrap_or_default().to_string())
        };
        assert_eq!(
            render_one("{{.path.basename | normalize}}", go).unwrap(),
            "web-app"
        );
        assert_eq!(render_one("{{index .path.segments 1}}", go).unwrap(), "web");
        assert_eq!(
            render_one("{{range $k, $v := .labels}}{{$k}}={{$v}},{{end}}", go).unwrap(),
            "a=1,b=2,"
        );
        assert_eq!(
            render_one("{{printf \"%03d\" .replicas}}", go).unwrap(),
            "003"
        );
        assert_eq!(render_one("{{.missing}}", go).unwrap(), "<no value>");
        assert_eq!(
            render_one(
                "{{ default \"x\" .missing }}-{{ .path.basename | lower | replace \" \" \"_\" }}",
                go
            )
            .unwrap(),
            "x-web_app"
        );
        assert_eq!(
            render_one("{{ slugify \"Hello, World! And more\" }}", go).unwrap(),
            "hello-world-and-more"
        );
        assert_eq!(
            render_one("{{ .labels | toJson }}", go).unwrap(),
            r#"{"a":"1","b":"2"}"#
        );
        assert_eq!(render_one("{{ \"abc\" | b64enc }}", go).unwrap(), "YWJj");
        let strict = Mode {
            go: true,
            missing_key_error: true,
        };
        assert!(render_one("{{.missing}}", strict).is_err());
        let e = render_one("{{.path.basename", go).unwrap_err();
        assert!(e.contains("unclosed action"), "{e}");
    }
}
