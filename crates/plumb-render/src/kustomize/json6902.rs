//! RFC 6902 JSON patches applied to the annotated tree (values added by the patch keep
//! the patch file's origins; moved and copied values keep theirs).

use super::tree::{Node, Org, Scalar};

/// One operation.
pub struct Op {
    pub op: String,
    pub path: String,
    pub from: Option<String>,
    pub value: Option<Node>,
}

/// Reads a patch document (a sequence of operation mappings).
pub fn parse_ops(doc: &Node) -> Result<Vec<Op>, String> {
    let Some(items) = doc.as_seq() else {
        return Err("a JSON patch must be a list of operations".into());
    };
    let mut ops = Vec::new();
    for it in items {
        let Some(m) = it.as_map() else {
            return Err("a JSON patch operation must be a mapping".into());
        };
        let s = |k: &str| m.get(k).and_then(Node::scalar_text);
        let op = s("op").ok_or("JSON patch operation has no 'op'")?;
        let path = s("path").ok_or_else(|| format!("JSON patch operation '{op}' has no 'path'"))?;
        ops.push(Op {
            op,
            path,
            from: s("from"),
            value: m.get("value").cloned(),
        });
    }
    Ok(ops)
}

fn tokens(ptr: &str) -> Result<Vec<String>, String> {
    if ptr.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = ptr.strip_prefix('/') else {
        return Err(format!("invalid JSON pointer {ptr:?}"));
    };
    Ok(rest
        .split('/')
        .map(|t| plumb_core::pointer::unescape_token(t).into_owned())
        .collect())
}

fn get<'a>(doc: &'a Node, toks: &[String]) -> Option<&'a Node> {
    let mut cur = doc;
    for t in toks {
        cur = match cur {
            Node::Map(m) => m.get(t)?,
            Node::Seq(s) => s.get(index(t, s.len())?)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn get_mut<'a>(doc: &'a mut Node, toks: &[String]) -> Option<&'a mut Node> {
    let mut cur = doc;
    for t in toks {
        cur = match cur {
            Node::Map(m) => m.get_mut(t)?,
            Node::Seq(s) => {
                let i = index(t, s.len())?;
                s.get_mut(i)?
            }
            _ => return None,
        };
    }
    Some(cur)
}

/// A list index as kustomize's JSON patch library reads one (Go's `strconv.Atoi`: `01` is
/// 1, `+1` is 1), a negative one counting from the end (`-1` is the last element).
fn index(t: &str, len: usize) -> Option<usize> {
    let i: i64 = t.parse().ok()?;
    let i = if i < 0 { i + len as i64 } else { i };
    usize::try_from(i).ok()
}

fn missing(path: &str) -> String {
    format!("path {path:?} does not exist")
}

fn add(doc: &mut Node, path: &str, value: Node) -> Result<(), String> {
    let toks = tokens(path)?;
    let Some((last, parents)) = toks.split_last() else {
        *doc = value;
        return Ok(());
    };
    match get_mut(doc, parents) {
        Some(Node::Map(m)) => {
            m.insert(last.clone(), value);
            Ok(())
        }
        Some(Node::Seq(s)) => {
            // For an insertion, -1 is the end (the place after the last element).
            let i = if last == "-" {
                Some(s.len())
            } else {
                index(last, s.len() + 1)
            };
            let i = i.ok_or_else(|| format!("invalid index in {path:?}"))?;
            if i > s.len() {
                return Err(format!("index out of range in {path:?}"));
            }
            s.insert(i, value);
            Ok(())
        }
        _ => Err(missing(path)),
    }
}

fn remove(doc: &mut Node, path: &str) -> Result<Node, String> {
    let toks = tokens(path)?;
    let Some((last, parents)) = toks.split_last() else {
        return Err("cannot remove the whole document".into());
    };
    match get_mut(doc, parents) {
        Some(Node::Map(m)) => m.remove(last).ok_or_else(|| missing(path)),
        Some(Node::Seq(s)) => {
            let i = index(last, s.len()).ok_or_else(|| missing(path))?;
            if i >= s.len() {
                return Err(missing(path));
            }
            Ok(s.remove(i))
        }
        _ => Err(missing(path)),
    }
}

/// Applies the operations in order.
pub fn apply(doc: &mut Node, ops: &[Op]) -> Result<(), String> {
    // kustomize keeps its build annotations on every object while it builds, so a patch
    // finds `metadata.annotations` to add to even where the object has none (the build
    // leaves an empty one out of its output); `metadata.labels` has no such luck.
    if let Some(Node::Map(meta)) = doc.get_mut("metadata")
        && meta.get("annotations").is_none_or(Node::is_null)
    {
        meta.insert("annotations", Node::empty_map());
    }
    for op in ops {
        // No `value` is null to kustomize's JSON patch library.
        let value = || {
            op.value
                .clone()
                .unwrap_or(Node::Scalar(Scalar::Null, Org::NONE))
        };
        // Nor does it take the empty pointer (the whole document) as a path.
        if op.path.is_empty() {
            return Err(format!(
                "{} operation does not apply: doc is missing path: \"\": missing value",
                op.op
            ));
        }
        match op.op.as_str() {
            "add" => add(doc, &op.path, value())?,
            "remove" => {
                remove(doc, &op.path)?;
            }
            "replace" => {
                let toks = tokens(&op.path)?;
                let v = value();
                // As kustomize's JSON patch library: replacing a key an existing mapping
                // lacks adds it; a missing list index or parent is an error.
                let parent = toks.split_last();
                match get_mut(doc, &toks) {
                    Some(slot) => *slot = v,
                    None => match parent {
                        Some((last, parents)) => match get_mut(doc, parents) {
                            Some(Node::Map(m)) => {
                                m.insert(last.clone(), v);
                            }
                            _ => return Err(missing(&op.path)),
                        },
                        None => return Err(missing(&op.path)),
                    },
                }
            }
            "move" => {
                let from = op.from.as_deref().ok_or("'move' operation has no from")?;
                let v = remove(doc, from)?;
                add(doc, &op.path, v)?;
            }
            "copy" => {
                let from = op.from.as_deref().ok_or("'copy' operation has no from")?;
                let v = get(doc, &tokens(from)?)
                    .cloned()
                    .ok_or_else(|| missing(from))?;
                add(doc, &op.path, v)?;
            }
            "test" => {
                let v = value();
                let toks = tokens(&op.path)?;
                // A missing key tests equal to null; a missing parent is an error.
                let cur = match get(doc, &toks) {
                    Some(cur) => cur.clone(),
                    None => match toks.split_last().map(|(_, parents)| get(doc, parents)) {
                        Some(Some(Node::Map(_))) => Node::Scalar(Scalar::Null, Org::NONE),
                        _ => return Err(missing(&op.path)),
                    },
                };
                if cur != v {
                    return Err(format!("testing value {} failed: test failed", op.path));
                }
            }
            other => return Err(format!("unexpected JSON patch operation {other:?}")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tree::{Dialect, parse_stream};
    use super::*;

    #[test]
    fn operations() {
        let mut doc = parse_stream("a: {b: [1, 2]}\nc: x\n", 0, 0, 0, Dialect::Resource)
            .unwrap()
            .remove(0)
            .node;
        let p = parse_stream(
            "- {op: add, path: /a/b/-, value: 3}\n- {op: replace, path: /c, value: y}\n- {op: move, from: /c, path: /d}\n- {op: copy, from: /a/b/0, path: /a/b/0}\n- {op: remove, path: /a/b/1}\n- {op: test, path: /d, value: y}\n",
            1,
            0,
            0,
            Dialect::Resource,
        )
        .unwrap()
        .remove(0)
        .node;
        apply(&mut doc, &parse_ops(&p).unwrap()).unwrap();
        assert_eq!(
            doc.to_json(),
            serde_json::json!({"a": {"b": [1, 2, 3]}, "d": "y"})
        );
        assert_eq!(doc.get("d").unwrap().org().unwrap().line, 2);
        let bad = parse_stream("- {op: remove, path: /zz}\n", 1, 0, 0, Dialect::Resource)
            .unwrap()
            .remove(0)
            .node;
        assert!(apply(&mut doc, &parse_ops(&bad).unwrap()).is_err());
    }
}
