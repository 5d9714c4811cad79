//! What the kustomize corpus tests share: reading `kubectl kustomize`'s output the way plumb's
//! output is read, so the two compare as values.

use serde_json::Value;

/// A whole float (`1.0`) as the integer it is, everywhere in `v`: kubectl and plumb may
/// write the same number either way.
pub fn canonical(v: &mut Value) {
    match v {
        Value::Number(n) => {
            if !n.is_i64()
                && !n.is_u64()
                && let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() < 9e15
            {
                *v = Value::from(f as i64);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(canonical),
        Value::Object(m) => m.values_mut().for_each(canonical),
        _ => {}
    }
}

/// `kubectl kustomize`'s standard output as canonical JSON values (empty documents left out).
pub fn oracle_documents(text: &str) -> Result<Vec<Value>, serde_saphyr::Error> {
    let opts = serde_saphyr::options! { legacy_octal_numbers: true };
    let docs: Vec<Option<Value>> = serde_saphyr::from_multiple_with_options(text, opts)?;
    Ok(docs
        .into_iter()
        .flatten()
        .filter(|d| !d.is_null())
        .map(|mut d| {
            canonical(&mut d);
            d
        })
        .collect())
}
