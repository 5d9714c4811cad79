//! `jqPathExpressions`: each expression EXPR runs as the jq program `del(EXPR)`
//! (jaq, a Rust jq), with a timeout, and must yield exactly one value.
//!
//! Unlike Argo CD with gojq (argo-cd #24599), an expression that selects several paths
//! (`.a, .b`, or `.spec.containers[] | .image, .name`) deletes every selected path:
//! jaq's `del` takes all the paths its argument yields.

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars, data};
use jaq_json::Val;
use serde_json::Value;
use std::sync::{Arc, mpsc};
use std::time::Duration;

type Filter = jaq_core::Filter<data::JustLut<Val>>;

/// Why a jq expression failed. Messages name the expression, never the object's values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JqError {
    #[error("jq expression '{expr}': compile error: {message}")]
    Compile { expr: String, message: String },
    #[error("jq expression '{expr}': runtime error")]
    Runtime { expr: String, message: String },
    #[error("jq expression '{expr}': JQ patch execution timed out ({}s)", timeout.as_secs_f64())]
    Timeout { expr: String, timeout: Duration },
    #[error("jq expression '{expr}': JQ patch did not return any data")]
    NoOutput { expr: String },
    #[error("jq expression '{expr}': JQ patch returned multiple objects")]
    MultipleOutputs { expr: String },
}

/// A compiled `del(EXPR)`.
pub struct JqDelete {
    expr: String,
    filter: Arc<Filter>,
}

impl std::fmt::Debug for JqDelete {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JqDelete")
            .field("expr", &self.expr)
            .finish()
    }
}

fn compile(code: &str) -> Result<Filter, String> {
    let defs = jaq_core::defs()
        .chain(jaq_std::defs())
        .chain(jaq_json::defs());
    let funs = jaq_core::funs()
        .chain(jaq_std::funs())
        .chain(jaq_json::funs());
    let loader = Loader::new(defs);
    let arena = Arena::default();
    let modules = loader
        .load(&arena, File { code, path: () })
        .map_err(|e| one_line(&format!("{e:?}")))?;
    Compiler::default()
        .with_funs(funs)
        .compile(modules)
        .map_err(|e| one_line(&format!("{e:?}")))
}

fn one_line(s: &str) -> String {
    let s: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.len() > 200 {
        format!(
            "{}…",
            &s[..s.char_indices().nth(200).map_or(s.len(), |(i, _)| i)]
        )
    } else {
        s
    }
}

impl JqDelete {
    /// Compiles `del(EXPR)`.
    pub fn compile(expr: &str) -> Result<Self, JqError> {
        let program = format!("del({expr})");
        let filter = compile(&program).map_err(|message| JqError::Compile {
            expr: expr.to_string(),
            message,
        })?;
        Ok(JqDelete {
            expr: expr.to_string(),
            filter: Arc::new(filter),
        })
    }

    pub fn expr(&self) -> &str {
        &self.expr
    }

    /// Runs `del(EXPR)` on `doc`. A runaway expression is abandoned after `timeout`
    /// (its worker thread is detached and ends with the process).
    pub fn apply(&self, doc: &Value, timeout: Duration) -> Result<Value, JqError> {
        let input = serde_json::to_vec(doc).map_err(|e| self.runtime(e.to_string()))?;
        let filter = Arc::clone(&self.filter);
        let (tx, rx) = mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("plumb-jq".into())
            .spawn(move || {
                let _ = tx.send(run(&filter, &input));
            });
        if let Err(e) = spawned {
            return Err(self.runtime(e.to_string()));
        }
        match rx.recv_timeout(timeout) {
            Ok(Ok(outputs)) => match outputs.len() {
                0 => Err(JqError::NoOutput {
                    expr: self.expr.clone(),
                }),
                1 => {
                    let mut v: Value = serde_json::from_str(&outputs[0])
                        .map_err(|e| self.runtime(e.to_string()))?;
                    plumb_core::value::canonicalize_numbers(&mut v);
                    Ok(v)
                }
                _ => Err(JqError::MultipleOutputs {
                    expr: self.expr.clone(),
                }),
            },
            Ok(Err(message)) => Err(self.runtime(message)),
            Err(_) => Err(JqError::Timeout {
                expr: self.expr.clone(),
                timeout,
            }),
        }
    }

    fn runtime(&self, message: String) -> JqError {
        JqError::Runtime {
            expr: self.expr.clone(),
            message,
        }
    }
}

/// Runs the filter; outputs as JSON text (at most two are collected).
fn run(filter: &Filter, input: &[u8]) -> Result<Vec<String>, String> {
    let input = jaq_json::read::parse_single(input).map_err(|e| format!("{e:?}"))?;
    let ctx = Ctx::<data::JustLut<Val>>::new(&filter.lut, Vars::new([]));
    let mut out = Vec::new();
    for r in filter.id.run((ctx, input)).take(2) {
        match r {
            Ok(v) => out.push(v.to_string()),
            Err(e) => return Err(one_line(&format!("{e:?}"))),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const T: Duration = Duration::from_secs(1);

    #[test]
    fn deletes_fields_and_elements() {
        let j = JqDelete::compile(".spec.sessionAffinity").unwrap();
        assert_eq!(
            j.apply(&json!({"spec": {"sessionAffinity": "x", "a": 1}}), T)
                .unwrap(),
            json!({"spec": {"a": 1}})
        );
        let w = JqDelete::compile(".webhooks[]?.clientConfig.caBundle").unwrap();
        let doc = json!({"webhooks": [{"clientConfig": {"caBundle": "a", "url": "u"}}, {"clientConfig": {"caBundle": "b"}}]});
        assert_eq!(
            w.apply(&doc, T).unwrap(),
            json!({"webhooks": [{"clientConfig": {"url": "u"}}, {"clientConfig": {}}]})
        );
        let s = JqDelete::compile(
            ".spec.template.spec.initContainers[] | select(.name == \"init-container-0\")",
        )
        .unwrap();
        let doc = json!({"spec": {"template": {"spec": {"initContainers": [{"name": "init-container-0"}, {"name": "init-container-1"}]}}}});
        assert_eq!(
            s.apply(&doc, T)
                .unwrap()
                .pointer("/spec/template/spec/initContainers"),
            Some(&json!([{"name": "init-container-1"}]))
        );
    }

    #[test]
    fn multi_path_expressions_delete_every_path() {
        let j = JqDelete::compile(".metadata.labels.a, .metadata.labels.b").unwrap();
        let doc = json!({"metadata": {"labels": {"a": "1", "b": "2", "c": "3"}}});
        assert_eq!(
            j.apply(&doc, T).unwrap(),
            json!({"metadata": {"labels": {"c": "3"}}})
        );
        let k = JqDelete::compile(".spec.containers[] | .image, .name").unwrap();
        let doc = json!({"spec": {"containers": [{"name": "a", "image": "x", "ports": []}, {"name": "b", "image": "y"}]}});
        assert_eq!(
            k.apply(&doc, T).unwrap(),
            json!({"spec": {"containers": [{"ports": []}, {}]}})
        );
    }

    #[test]
    fn numbers_keep_their_kind() {
        let j = JqDelete::compile(".x").unwrap();
        let out = j
            .apply(
                &json!({"replicas": 3, "big": 9007199254740993i64, "f": 0.5, "x": 1}),
                T,
            )
            .unwrap();
        assert_eq!(out["replicas"], json!(3));
        assert!(out["replicas"].is_i64());
        assert_eq!(out["f"], json!(0.5));
    }

    #[test]
    fn errors() {
        assert!(matches!(
            JqDelete::compile(".a[\"unterminated").unwrap_err(),
            JqError::Compile { .. }
        ));
        let missing = JqDelete::compile(".spec.fakeField.foo[]").unwrap();
        let doc = json!({"spec": {"a": 1}});
        assert!(matches!(
            missing.apply(&doc, T),
            Err(JqError::Runtime { .. }) | Ok(_)
        ));
        if let Ok(v) = missing.apply(&doc, T) {
            assert_eq!(
                v, doc,
                "a path that does not exist leaves the object as it was"
            );
        }
        // gojq loops forever on Argo CD's runaway example; jaq stops it with an error.
        let argo_runaway = JqDelete::compile("until(true==false; [.] + [1])").unwrap();
        assert!(argo_runaway.apply(&json!({}), T).is_err());
        let slow = JqDelete::compile("last(range(1e15)) as $x | .a").unwrap();
        let e = slow
            .apply(&json!({"a": 1}), Duration::from_millis(200))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "jq expression 'last(range(1e15)) as $x | .a': JQ patch execution timed out (0.2s)"
        );
    }
}
