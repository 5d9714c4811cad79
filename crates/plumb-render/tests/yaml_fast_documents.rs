//! Property test: random nested values rendered as block YAML in varied styles (indent
//! widths, indented or flush sequences, compact entries, plain/quoted/block scalars, flow
//! collections, comments and blank lines). The fast path must agree with serde-saphyr on
//! every rendering, and must handle most of them.

mod yaml_common;
use common::{Outcome, check_crlf_too as check};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::cell::Cell;
use yaml_common as common;

#[derive(Debug, Clone)]
enum Node {
    Scalar(String),
    Seq(Vec<Node>),
    Map(Vec<(String, Node)>),
}

/// Scalar texts: words, numbers and number-like strings, YAML keywords, arbitrary printable
/// ASCII (with YAML's special characters), multi-line text and some Unicode.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z][a-z0-9-]{0,10}",
        2 => "[-+]?[0-9_]{1,5}(\\.[0-9]{0,3})?([eE][-+]?[0-9]{1,2})?",
        2 => prop::sample::select(vec![
            "null", "~", "", "true", "yes", "no", "on", "off", "y", "n", "True", "FALSE",
            "0x1F", "0o17", "0755", "1_000", ".5", "1.", "-0", "+1", ".inf", "-.nan", "<<",
            "250m", "512Mi", "v1", "1.20", "- x", "a: b", "a #b", "#x", "x:", ":x", "?x",
            "&a", "*a", "!t", "|", ">", "@x", "`x", "%x", "[a]", "{a: 1}", "a, b", "'q'",
            "\"q\"", "---", "...", "--x", "a\\b", "é", "日本", "\u{a0}x",
        ]).prop_map(str::to_string),
        2 => "[ -~]{0,14}",
        2 => "([a-z]{1,6}[ ]?){1,4}(\n{1,2}[ ]{0,3}[a-z#:-]{0,6}){1,3}\n?",
        1 => "\\PC{0,6}",
        1 => "[ \t]{0,2}[a-z]{1,4}[ \t]{0,2}",
    ]
}

fn node() -> impl Strategy<Value = Node> {
    let leaf = text().prop_map(Node::Scalar);
    leaf.prop_recursive(5, 60, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Node::Seq),
            prop::collection::vec(("[a-zA-Z0-9_./-]{1,10}|[ -~]{1,8}", inner), 0..6)
                .prop_map(Node::Map),
        ]
    })
}

/// Rendering choices, drawn from a seed.
struct Style {
    seed: Cell<u64>,
    indent: usize,
    flush_seqs: bool,
    /// Whether to make deliberate mistakes (wrong indentation indicators).
    chaos: bool,
}

impl Style {
    fn roll(&self, n: u64) -> u64 {
        // xorshift64*
        let mut x = self.seed.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.seed.set(x);
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) % n
    }
}

/// Renders a scalar in a position where a block scalar is allowed (`block`) or not.
fn scalar(s: &str, st: &Style, ind: usize, block: bool, out: &mut String) {
    let pad = " ".repeat(ind + st.indent);
    match st.roll(if block { 6 } else { 4 }) {
        0 | 1 => {
            // Plain, continuation lines indented below the parent.
            out.push_str(&s.replace('\n', &format!("\n{pad}")));
        }
        2 => {
            out.push('\'');
            out.push_str(&s.replace('\'', "''").replace('\n', &format!("\n{pad}")));
            out.push('\'');
        }
        3 => {
            out.push('"');
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' if st.roll(2) == 0 => out.push_str(&format!("\n{pad}")),
                    '\n' => out.push_str("\\n"),
                    '\t' => out.push_str(["\\t", "\t", "\\x09", "\\u0009"][st.roll(4) as usize]),
                    c if (c as u32) < 0x20 => out.push_str(&format!("\\x{:02x}", c as u32)),
                    'é' if st.roll(2) == 0 => out.push_str("\\u00e9"),
                    ' ' if st.roll(8) == 0 => out.push_str("\\ "),
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        k => {
            out.push(if k == 4 { '|' } else { '>' });
            match st.roll(6) {
                0 | 1 => out.push_str(&st.indent.to_string()),
                2 if st.chaos => out.push_str(&(st.indent + 1).to_string()),
                _ => {}
            }
            out.push_str(["", "-", "+"][st.roll(3) as usize]);
            if st.roll(6) == 0 {
                out.push_str(" # header");
            }
            for line in s.split('\n') {
                out.push('\n');
                if !line.is_empty() || st.roll(3) == 0 {
                    out.push_str(&pad);
                }
                out.push_str(line);
            }
        }
    }
}

fn key(k: &str, st: &Style, out: &mut String) {
    match st.roll(4) {
        0 => out.push_str(&format!("'{}'", k.replace('\'', "''"))),
        1 => out.push_str(&serde_json::to_string(k).unwrap()),
        _ => out.push_str(k),
    }
}

fn flow(n: &Node, st: &Style, out: &mut String) {
    match n {
        Node::Scalar(s) if st.roll(2) == 0 => out.push_str(&serde_json::to_string(s).unwrap()),
        Node::Scalar(s) => out.push_str(s),
        Node::Seq(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str([", ", ",", ",\n  ", " , "][st.roll(4) as usize]);
                }
                flow(x, st, out);
            }
            out.push(']');
        }
        Node::Map(entries) => {
            out.push('{');
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str([", ", ",\n  "][st.roll(2) as usize]);
                }
                key(k, st, out);
                out.push_str(": ");
                flow(v, st, out);
            }
            out.push('}');
        }
    }
}

/// Ends a line, sometimes with a comment, sometimes followed by blank or comment lines.
fn eol(st: &Style, ind: usize, out: &mut String) {
    if st.roll(10) == 0 {
        out.push_str(" # trailing: comment");
    }
    out.push('\n');
    match st.roll(12) {
        0 => out.push('\n'),
        1 => out.push_str(&format!(
            "{}# comment\n",
            " ".repeat(st.roll(2 * ind as u64 + 2) as usize)
        )),
        _ => {}
    }
}

/// Renders `n` as the value after `key:` (at indentation `ind`): inline or on the next lines.
fn value(n: &Node, st: &Style, ind: usize, out: &mut String) {
    match n {
        Node::Scalar(s) if st.roll(10) == 0 => {
            // On a line of its own below the key.
            eol(st, ind, out);
            out.push_str(&" ".repeat(ind + st.indent));
            scalar(s, st, ind, true, out);
            eol(st, ind, out);
        }
        Node::Scalar(s) => {
            out.push(' ');
            scalar(s, st, ind, true, out);
            eol(st, ind, out);
        }
        Node::Seq(items) if items.is_empty() || st.roll(8) == 0 => {
            out.push(' ');
            flow(n, st, out);
            eol(st, ind, out);
        }
        Node::Map(entries) if entries.is_empty() || st.roll(8) == 0 => {
            out.push(' ');
            flow(n, st, out);
            eol(st, ind, out);
        }
        Node::Seq(_) => {
            eol(st, ind, out);
            let at = if st.flush_seqs { ind } else { ind + st.indent };
            block(n, st, at, out);
        }
        Node::Map(_) => {
            eol(st, ind, out);
            block(n, st, ind + st.indent, out);
        }
    }
}

/// Renders a collection (non-empty) in block style at indentation `ind`, starting at the
/// beginning of a line (or, with `compact`, right after a `- ` already written).
fn block_at(n: &Node, st: &Style, ind: usize, mut compact: bool, out: &mut String) {
    let pad = " ".repeat(ind);
    match n {
        Node::Seq(items) => {
            for x in items {
                if !compact {
                    out.push_str(&pad);
                }
                compact = false;
                out.push('-');
                match x {
                    Node::Scalar(s) => {
                        out.push(' ');
                        scalar(s, st, ind, true, out);
                        eol(st, ind, out);
                    }
                    Node::Seq(v) if !v.is_empty() && st.roll(2) == 0 => {
                        out.push(' ');
                        block_at(x, st, ind + 2, true, out);
                    }
                    Node::Map(v) if !v.is_empty() && st.roll(3) != 0 => {
                        out.push(' ');
                        block_at(x, st, ind + 2, true, out);
                    }
                    Node::Seq(v) if v.is_empty() => {
                        out.push_str(" []");
                        eol(st, ind, out);
                    }
                    Node::Map(v) if v.is_empty() => {
                        out.push_str(" {}");
                        eol(st, ind, out);
                    }
                    _ => {
                        eol(st, ind, out);
                        block(x, st, ind + st.indent, out);
                    }
                }
            }
        }
        Node::Map(entries) => {
            for (k, v) in entries {
                if !compact {
                    out.push_str(&pad);
                }
                compact = false;
                key(k, st, out);
                out.push(':');
                value(v, st, ind, out);
            }
        }
        Node::Scalar(s) => {
            scalar(s, st, ind, false, out);
            out.push('\n');
        }
    }
}

fn block(n: &Node, st: &Style, ind: usize, out: &mut String) {
    block_at(n, st, ind, false, out);
}

fn render(n: &Node, seed: u64, indent: usize, flush_seqs: bool, chaos: bool) -> String {
    let st = Style {
        seed: Cell::new(seed | 1),
        indent,
        flush_seqs,
        chaos,
    };
    let mut out = String::new();
    if st.roll(4) == 0 {
        out.push_str("# leading comment\n\n");
    }
    block(n, &st, 0, &mut out);
    out
}

#[test]
fn random_documents_agree() {
    let cases = std::env::var("YAMLFAST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6000);
    let mut runner = TestRunner::new(Config {
        cases,
        ..Config::default()
    });
    let counts = [Cell::new(0usize), Cell::new(0), Cell::new(0)];
    let strategy = (node(), any::<u64>(), 1usize..5, any::<bool>());
    runner
        .run(&strategy, |(n, seed, indent, flush)| {
            let doc = render(&n, seed, indent, flush, true);
            let i = match check(&doc) {
                Outcome::Fast => 0,
                Outcome::FallbackOk => {
                    if let Some(path) = std::env::var_os("YAMLFAST_DUMP") {
                        use std::io::Write as _;
                        let mut f = std::fs::OpenOptions::new()
                            .create(true)
                            .append(true)
                            .open(path)
                            .unwrap();
                        write!(f, "=== random\n{doc}").unwrap();
                    }
                    1
                }
                Outcome::FallbackErr => 2,
            };
            counts[i].set(counts[i].get() + 1);
            Ok(())
        })
        .unwrap();
    let [fast, ok, err] = counts.map(|c| c.get());
    println!(
        "{} random documents: {fast} fast, {ok} fallback where saphyr succeeds, {err} fallback \
         where saphyr fails",
        fast + ok + err
    );
    assert!(fast * 2 > fast + ok + err, "fast path too rare");
}

/// The same, on documents made only of what manifests use: the fast path must take almost
/// all of them.
#[test]
fn manifest_like_documents_take_fast_path() {
    let word = "[a-z][a-zA-Z0-9.-]{0,12}";
    let leaf = prop_oneof![
        word.prop_map(Node::Scalar),
        (0u32..100000).prop_map(|n| Node::Scalar(n.to_string())),
        Just(Node::Scalar("true".into())),
    ];
    let tree = leaf.prop_recursive(5, 60, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..4).prop_map(Node::Seq),
            prop::collection::btree_map(word, inner, 1..6)
                .prop_map(|m| Node::Map(m.into_iter().collect())),
        ]
    });
    let mut runner = TestRunner::new(Config {
        cases: 3000,
        ..Config::default()
    });
    let slow = Cell::new(0usize);
    runner
        .run(
            &(tree, any::<u64>(), 1usize..5, any::<bool>()),
            |(n, seed, indent, flush)| {
                let doc = render(&n, seed, indent, flush, false);
                if check(&doc) != Outcome::Fast {
                    slow.set(slow.get() + 1);
                    println!("fallback: {doc:?}");
                }
                Ok(())
            },
        )
        .unwrap();
    assert_eq!(slow.get(), 0, "manifest-like documents falling back");
}
