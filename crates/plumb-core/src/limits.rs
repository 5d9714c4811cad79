//! plumb's limits on input, in one place. Each bounds the time or memory one bad input
//! (hand-written, generated, or hostile) can cost, and each refusal is one error line
//! naming the file or object and field. The book's page `docs/src/operations/limits.md`
//! lists them; the catalogue of bad input (`tests/bad-input/`) holds a case for each.
//!
//! The limits: file size, name and namespace length, `ignoreDifferences` entries, YAML alias
//! replay, jq expression and value nesting, Jsonnet stack depth and output size, a
//! `Retry-After` wait, a config management plugin's output, and the length of input quoted in
//! a message.

/// Largest manifest, kustomization, values or snapshot file read (checked before reading).
/// Parsing costs about ten times a file's size in memory, so this keeps one file well
/// under a gigabyte.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Longest `metadata.name`: a DNS subdomain (RFC 1123), the longest name any Kubernetes
/// kind accepts.
pub const MAX_NAME_LEN: usize = 253;

/// Longest `metadata.namespace`: a DNS label (RFC 1123).
pub const MAX_NAMESPACE_LEN: usize = 63;

/// Most `spec.ignoreDifferences` entries in one Application. Each is matched against every
/// resource, so thousands make a compare quadratic; real Applications have a handful.
pub const MAX_IGNORE_DIFFERENCES: usize = 1000;

/// Most events (nodes) YAML aliases may replay in one file: a "billion laughs" document
/// is refused here instead of expanding.
pub const MAX_YAML_ALIAS_EVENTS: usize = 100_000;

/// Deepest nesting of a jq expression (parentheses, brackets, pipes).
pub const MAX_JQ_EXPR_NESTING: usize = 256;

/// Deepest array/object a jq evaluation may build; a deeper value stops the evaluation
/// as an error instead of exhausting the stack.
pub const MAX_JQ_VALUE_NESTING: usize = 512;

/// Deepest Jsonnet call stack (function calls, object fields being evaluated) a
/// directory source's program may reach: deeper recursion is an error naming the file, not
/// a crash. go-jsonnet's default (`--max-stack 500`), so what Argo CD evaluates, plumb does.
pub const MAX_JSONNET_STACK: usize = 500;

/// Largest JSON one Jsonnet program may produce, in bytes: a program that builds more (a
/// runaway comprehension) is refused instead of handed to the diff.
pub const MAX_JSONNET_OUTPUT_BYTES: usize = 64 * 1024 * 1024;

/// Longest wait, in seconds, a `Retry-After` header of a throttled API request (429/503/504)
/// can impose before plumb retries it. A server asking for longer (`Retry-After: 3600`) is
/// retried after this many seconds instead, so one answer cannot stall a sync for an hour.
pub const MAX_RETRY_AFTER_SECS: u64 = 30;

/// Most bytes a config management plugin's command may print on stdout: past it the
/// command's process group is killed and the render fails (a runaway plugin must not fill
/// memory). The same as [`MAX_FILE_BYTES`]: a plugin's output is parsed as a file is.
pub const MAX_PLUGIN_OUTPUT_BYTES: u64 = MAX_FILE_BYTES;

/// Longest piece of user input (a jq expression, a pointer) quoted in an error message.
pub const MAX_QUOTED_INPUT: usize = 200;

/// `text` for an error message: cut at [`MAX_QUOTED_INPUT`] characters with `…` and the
/// total length, so a 10,000-character expression still makes a readable line.
pub fn quoted(text: &str) -> String {
    let n = text.chars().count();
    if n <= MAX_QUOTED_INPUT {
        return text.to_string();
    }
    let head: String = text.chars().take(MAX_QUOTED_INPUT).collect();
    format!("{head}… ({n} characters)")
}

#[cfg(test)]
mod tests {
    #[test]
    fn long_input_is_cut_in_messages() {
        assert_eq!(super::quoted("abc"), "abc");
        let long = "(".repeat(10_000);
        let q = super::quoted(&long);
        assert!(q.len() < 240, "{q}");
        assert!(q.ends_with("(10000 characters)"));
    }
}
