//! libyaml's emitter, as go-yaml v2 (`emitterc.go`) runs it for a block document.
//!
//! Writes the tree `yaml.rs` builds: each scalar analysed and its requested style
//! overridden where libyaml must (plain to single-quoted to double-quoted; a
//! literal block only where allowed, with its indentation and chomping hints),
//! escapes in double quotes, long plain and quoted scalars folded past column
//! 80, keys simple (`k: v`) or complex (`? k`), sequences inside a mapping not
//! indented, and empty collections as `[]` and `{}`.
//!
//! Must match `go.yaml.in/yaml/v2` v2.4.2 byte for byte. The one addition is
//! plumb's own: a `# comment` after a scalar (on a block scalar's header line),
//! for `to_yaml_with_comments`.

use super::yaml::{
    Node, Style, build_node, entries_in_order, letters_only, letters_style, map_entries,
    reread_json_string, string_style, tree_scalar_node,
};
use plumb_core::tree;
use serde_json::Value;
use std::borrow::{Borrow, Cow};
use std::sync::Arc;

/// Longest simple (implicit) key, in bytes (`yaml_emitter_check_simple_key`).
const MAX_SIMPLE_KEY_LEN: usize = 128;
/// `best_width`: go-yaml v2 folds long scalars past this column.
const BEST_WIDTH: usize = 80;
/// `best_indent`.
const BEST_INDENT: isize = 2;

/// The emitter's per-node context flags. (libyaml's root context only
/// matters for `...` document-end markers, which go-yaml never prints.)
#[derive(Clone, Copy)]
struct Ctx {
    mapping: bool,
    simple_key: bool,
}

impl Ctx {
    const ROOT: Self = Self {
        mapping: false,
        simple_key: false,
    };
    const SEQ_ITEM: Self = Self::ROOT;
    const MAP_VALUE: Self = Self {
        mapping: true,
        simple_key: false,
    };
    const SIMPLE_KEY: Self = Self {
        mapping: true,
        simple_key: true,
    };
}

/// What `yaml_emitter_analyze_scalar` learns about a scalar.
#[derive(Debug, PartialEq)]
struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

impl Analysis {
    /// The common scalar's (see [`analyze_scalar`]): one line, every style allowed.
    const COMMON: Analysis = Analysis {
        multiline: false,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_blankz(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\0') || is_break(c)
}

/// libyaml's "printable": #xA, #x20-#x7E, #xA0-#xD7FF, #xE000-#xFFFD but not
/// the BOM. Everything outside the BMP counts as non-printable.
fn is_printable(c: char) -> bool {
    let u = u32::from(c);
    u == 0x0A
        || (0x20..=0x7E).contains(&u)
        || (0xA0..=0xD7FF).contains(&u)
        || ((0xE000..=0xFFFD).contains(&u) && u != 0xFEFF)
}

/// [`analyze_full`], answered at once for the common scalar (a name, a number, a path: an
/// ASCII letter or digit, then only letters, digits and `-._/`), which has no indicator, no
/// space, no break and nothing unprintable: every style allowed, one line.
fn analyze_scalar(value: &str) -> Analysis {
    let b = value.as_bytes();
    let plain = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'/');
    if b.first().is_some_and(u8::is_ascii_alphanumeric) && b.iter().all(plain) {
        return Analysis::COMMON;
    }
    analyze_full(value)
}

/// libyaml's analysis of a scalar, character by character.
fn analyze_full(value: &str) -> Analysis {
    if value.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let mut block_indicators = value.starts_with("---") || value.starts_with("...");
    let mut line_breaks = false;
    let mut special = false;
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
        (false, false, false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut previous_space, mut previous_break) = (false, false);
    let mut preceded_by_whitespace = true;
    // One byte per character when ASCII (nearly always): read in place, nothing collected.
    let collected: Vec<char>;
    let (bytes, chars): (&[u8], &[char]) = if value.is_ascii() {
        (value.as_bytes(), &[])
    } else {
        collected = value.chars().collect();
        (&[], &collected)
    };
    let len = bytes.len().max(chars.len());
    let at = |i: usize| -> Option<char> {
        if bytes.is_empty() {
            chars.get(i).copied()
        } else {
            bytes.get(i).map(|&b| char::from(b))
        }
    };
    for i in 0..len {
        let c = at(i).unwrap_or('\0');
        let first = i == 0;
        let last = i + 1 == len;
        let followed_by_whitespace = at(i + 1).is_none_or(|n| n == ' ' || n == '\t');
        if first {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => {
                    block_indicators = true;
                }
                '?' | ':' | '-' if followed_by_whitespace => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_whitespace => block_indicators = true,
                '#' if preceded_by_whitespace => block_indicators = true,
                _ => {}
            }
        }
        if !is_printable(c) {
            special = true;
        }
        if c == ' ' {
            leading_space |= first;
            trailing_space |= last;
            break_space |= previous_break;
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            leading_break |= first;
            trailing_break |= last;
            space_break |= previous_space;
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = is_blankz(c);
    }
    let mut a = Analysis {
        multiline: line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
        a.block_allowed = false;
    }
    if line_breaks || block_indicators {
        a.block_plain_allowed = false;
    }
    a
}

/// The YAML document for `node`, as go-yaml writes it: the node, then the document
/// end, where go-yaml writes an indent (i.e. ends the last line).
pub(super) fn emit_document(node: &Node) -> String {
    let mut out = String::new();
    emit_document_into(node, &mut out);
    out
}

/// [`emit_document`] appended to `out`, which ends a line (or is empty): one buffer
/// serves many documents, rather than one that grows from nothing for each.
pub(super) fn emit_document_into(node: &Node, out: &mut String) {
    let mut e = Emitter::new(std::mem::take(out));
    e.emit_node(node, Ctx::ROOT);
    e.indent = -1;
    e.write_indent();
    *out = e.out;
}

/// Indentation, written a slice at a time.
const SPACES: &str = "                                                                ";

/// A port of the parts of libyaml's emitter state that go-yaml v2 exercises
/// for block collections of scalars (flow style only for `[]` and `{}`).
struct Emitter {
    /// A comment to write after the scalar being emitted (block scalars: on the header).
    comment: Option<String>,
    out: String,
    column: usize,
    indent: isize,
    indents: Vec<isize>,
    whitespace: bool,
    indention: bool,
}

impl Emitter {
    fn new(out: String) -> Self {
        Self {
            comment: None,
            out,
            column: 0,
            indent: -1,
            indents: Vec::new(),
            whitespace: true,
            indention: true,
        }
    }

    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
        }
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    fn write_indent(&mut self) {
        let indent = usize::try_from(self.indent).unwrap_or(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            let n = (indent - self.column).min(SPACES.len());
            self.out.push_str(&SPACES[..n]);
            self.column += n;
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(
        &mut self,
        indicator: &str,
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(' ');
        }
        // Every indicator is ASCII: a column per byte.
        debug_assert!(indicator.is_ascii());
        self.out.push_str(indicator);
        self.column += indicator.len();
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }

    fn emit_node(&mut self, node: &Node, ctx: Ctx) {
        match node {
            Node::Scalar(value, style) => self.emit_scalar(value, *style, ctx),
            Node::Commented(value, style, comment) => {
                self.comment = Some(comment.clone());
                self.emit_scalar(value, *style, ctx);
                if let Some(c) = self.comment.take() {
                    self.write_comment(&c);
                }
            }
            Node::Seq(items) => self.emit_seq(items.iter(), ctx),
            Node::Map(entries) => {
                self.emit_text_keyed_map(
                    entries.iter().map(|(k, v)| (Cow::Borrowed(&**k), v)),
                    false,
                );
            }
            // A value not built into nodes: its collections are walked as they are
            // written, without a tree of their own.
            Node::Value(Value::Array(items)) => {
                self.emit_seq(items.iter().map(Node::Value), ctx);
            }
            Node::Value(Value::Object(map)) => self.emit_text_keyed_map(
                map_entries(map)
                    .into_iter()
                    .map(|(key, _, v)| (key, Node::Value(v))),
                false,
            ),
            Node::Value(scalar) => self.emit_node(&build_node(scalar), ctx),
            // A renderer's tree, walked the same way.
            Node::Tree(tree::Node::Seq(items), files) => {
                self.emit_seq(items.iter().map(|n| Node::Tree(n, *files)), ctx);
            }
            Node::Tree(tree::Node::Map(map), files) => self.emit_tree_map(map, *files),
            Node::Tree(tree::Node::Scalar(s, org), files) => {
                self.emit_tree_scalar(s, *org, *files, ctx);
            }
        }
    }

    /// A renderer's mapping. Keys of ASCII letters only (most of a manifest's) are in go-yaml's
    /// order as the map iterates and read back as written: written straight from the map,
    /// without the list [`entries_in_order`] builds for the others.
    fn emit_tree_map(&mut self, map: &tree::Map, files: Option<&[Arc<str>]>) {
        if map.keys().all(|k| letters_only(k)) {
            self.emit_text_keyed_map(
                map.iter()
                    .map(|(k, v)| (Cow::Borrowed(k.as_str()), Node::Tree(v, files))),
                true,
            );
        } else {
            self.emit_text_keyed_map(
                entries_in_order(map.iter().map(|(k, v)| (k.as_str(), v)))
                    .into_iter()
                    .map(|(key, _, v)| (key, Node::Tree(v, files))),
                false,
            );
        }
    }

    /// A renderer's scalar: a string or an integer without an origin to write (nearly all)
    /// goes to the emitter as it is, without a node built for it; anything else as
    /// [`tree_scalar_node`] builds it.
    fn emit_tree_scalar(
        &mut self,
        s: &tree::Scalar,
        org: tree::Org,
        files: Option<&[Arc<str>]>,
        ctx: Ctx,
    ) {
        let commented = files.is_some_and(|f| (org.file as usize) < f.len());
        match s {
            tree::Scalar::Str(text) if !commented => {
                let text = reread_json_string(text);
                self.emit_scalar(&text, string_style(&text), ctx);
            }
            tree::Scalar::Num(n) if !commented && n.is_i64() => {
                let mut digits = itoa::Buffer::new();
                let i = n.as_i64().unwrap_or_default();
                self.emit_scalar(digits.format(i), Style::Plain, ctx);
            }
            _ => self.emit_node(&tree_scalar_node(s, org, files), ctx),
        }
    }

    /// A mapping whose keys are strings (every mapping here: a JSON object's, a tree's, a
    /// built one's), each written as go-yaml writes a string key, its analysis done once for
    /// both the choice of a simple key (`yaml_emitter_check_simple_key`) and its style.
    /// `letters`: every key is [`letters_only`] (the caller has read them), so a non-empty
    /// one is the common scalar and its style is [`letters_style`], without reading it again.
    fn emit_text_keyed_map<'a, V: Borrow<Node<'a>>>(
        &mut self,
        entries: impl ExactSizeIterator<Item = (Cow<'a, str>, V)>,
        letters: bool,
    ) {
        if entries.len() == 0 {
            return self.emit_empty_flow("{", "}");
        }
        self.increase_indent(false, false);
        for (key, value) in entries {
            self.write_indent();
            let (style, a) = if letters && !key.is_empty() {
                (letters_style(&key), Analysis::COMMON)
            } else {
                (string_style(&key), analyze_scalar(&key))
            };
            if !a.multiline && key.len() <= MAX_SIMPLE_KEY_LEN {
                self.emit_analyzed_scalar(&key, style, Ctx::SIMPLE_KEY, &a);
                self.write_indicator(":", false, false, false);
            } else {
                self.write_indicator("?", true, false, true);
                self.emit_analyzed_scalar(&key, style, Ctx::MAP_VALUE, &a);
                self.write_indent();
                self.write_indicator(":", true, false, true);
            }
            self.emit_node(value.borrow(), Ctx::MAP_VALUE);
        }
        self.pop_indent();
    }

    fn emit_seq<'a, N: Borrow<Node<'a>>>(
        &mut self,
        items: impl ExactSizeIterator<Item = N>,
        ctx: Ctx,
    ) {
        if items.len() == 0 {
            return self.emit_empty_flow("[", "]");
        }
        let indentless = ctx.mapping && !self.indention;
        self.increase_indent(false, indentless);
        for item in items {
            self.write_indent();
            self.write_indicator("-", true, false, true);
            self.emit_node(item.borrow(), Ctx::SEQ_ITEM);
        }
        self.pop_indent();
    }

    fn write_comment(&mut self, comment: &str) {
        self.put(' ');
        self.put('#');
        self.put(' ');
        for c in comment.chars().filter(|c| !is_break(*c)) {
            self.put(c);
        }
        self.whitespace = false;
    }

    fn emit_empty_flow(&mut self, open: &str, close: &str) {
        self.write_indicator(open, true, true, false);
        self.write_indicator(close, false, false, false);
    }

    fn emit_scalar(&mut self, value: &str, requested: Style, ctx: Ctx) {
        self.emit_analyzed_scalar(value, requested, ctx, &analyze_scalar(value));
    }

    /// [`Self::emit_scalar`] with the scalar's analysis done.
    fn emit_analyzed_scalar(&mut self, value: &str, requested: Style, ctx: Ctx, a: &Analysis) {
        let mut style = requested;
        if ctx.simple_key && a.multiline {
            style = Style::DoubleQuoted;
        }
        if style == Style::Plain && (!a.block_plain_allowed || (value.is_empty() && ctx.simple_key))
        {
            style = Style::SingleQuoted;
        }
        if style == Style::SingleQuoted && !a.single_quoted_allowed {
            style = Style::DoubleQuoted;
        }
        if style == Style::Literal && (!a.block_allowed || ctx.simple_key) {
            style = Style::DoubleQuoted;
        }
        self.increase_indent(true, false);
        let allow_breaks = !ctx.simple_key;
        match style {
            Style::Plain => self.write_plain(value, allow_breaks),
            Style::SingleQuoted => self.write_single_quoted(value, allow_breaks),
            Style::DoubleQuoted => self.write_double_quoted(value, allow_breaks),
            Style::Literal => self.write_literal(value),
        }
        self.pop_indent();
    }

    fn write_plain(&mut self, value: &str, allow_breaks: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        self.write_plain_or_single_quoted(value, allow_breaks, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_single_quoted(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        self.write_plain_or_single_quoted(value, allow_breaks, true);
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    /// The text of a plain or single-quoted scalar, which libyaml writes alike: folded
    /// at a lone space past `BEST_WIDTH`, the first break of a run written twice (a
    /// single break would read back as a space). Single-quoted, a space at either end
    /// never folds and `'` is written twice.
    fn write_plain_or_single_quoted(&mut self, value: &str, allow_breaks: bool, quoted: bool) {
        // No space, break or quote (nearly every scalar): each character is written as
        // it is, which the loop below would do one by one. An ASCII value (nearly all) is
        // told byte by byte, a character per byte; the others' breaks are not ASCII.
        let plain_byte = |b: &u8| b.is_ascii() && !matches!(b, b' ' | b'\'' | b'\r' | b'\n');
        let columns = if value.as_bytes().iter().all(plain_byte) {
            Some(value.len())
        } else if !value.contains([' ', '\'', '\r', '\n', '\u{85}', '\u{2028}', '\u{2029}']) {
            Some(value.chars().count())
        } else {
            None
        };
        if let Some(columns) = columns {
            self.out.push_str(value);
            self.column += columns;
            if !value.is_empty() {
                self.indention = false;
            }
            return;
        }
        let chars: Vec<char> = value.chars().collect();
        let (mut spaces, mut breaks) = (false, false);
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && (!quoted || (i != 0 && i + 1 != chars.len()))
                    && chars.get(i + 1) != Some(&' ')
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if quoted && c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
    }

    fn write_double_quoted(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("\"", true, false, false);
        // libyaml tests for a BOM at the start of the value, not at each
        // character: a leading BOM escapes every character.
        let bom = value.starts_with('\u{FEFF}');
        let chars: Vec<char> = value.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if !is_printable(c) || bom || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                let code = u32::from(c);
                let short = match code {
                    0x00 => Some('0'),
                    0x07 => Some('a'),
                    0x08 => Some('b'),
                    0x09 => Some('t'),
                    0x0A => Some('n'),
                    0x0B => Some('v'),
                    0x0C => Some('f'),
                    0x0D => Some('r'),
                    0x1B => Some('e'),
                    0x22 => Some('"'),
                    0x5C => Some('\\'),
                    0x85 => Some('N'),
                    0xA0 => Some('_'),
                    0x2028 => Some('L'),
                    0x2029 => Some('P'),
                    _ => None,
                };
                if let Some(s) = short {
                    self.put(s);
                } else {
                    let (letter, width) = if code <= 0xFF {
                        ('x', 2)
                    } else if code <= 0xFFFF {
                        ('u', 4)
                    } else {
                        ('U', 8)
                    };
                    self.put(letter);
                    for k in (0..width).rev() {
                        let digit = (code >> (k * 4)) & 0xF;
                        self.put(
                            char::from_digit(digit, 16).map_or('0', |d| d.to_ascii_uppercase()),
                        );
                    }
                }
                spaces = false;
            } else if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i != 0
                    && i + 1 != chars.len()
                {
                    self.write_indent();
                    if chars.get(i + 1) == Some(&' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_literal(&mut self, value: &str) {
        self.write_indicator("|", true, false, false);
        // Block scalar hints: explicit indentation when the text starts with
        // a space or a break; chomping from the trailing breaks.
        let chars: Vec<char> = value.chars().collect();
        if chars.first().is_some_and(|&c| c == ' ' || is_break(c)) {
            self.write_indicator("2", false, false, false);
        }
        let n = chars.len();
        let chomp = match chars.last() {
            None => Some("-"),
            Some(&c) if !is_break(c) => Some("-"),
            Some(_) if n == 1 => Some("+"),
            Some(_) if is_break(chars[n - 2]) => Some("+"),
            Some(_) => None,
        };
        if let Some(ch) = chomp {
            self.write_indicator(ch, false, false, false);
        }
        if let Some(c) = self.comment.take() {
            self.write_comment(&c);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for &c in &chars {
            if is_break(c) {
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::text::tests::{doc, yaml_of};
    use crate::text::to_yaml;
    use serde_json::json;

    #[test]
    fn the_quick_analysis_agrees_with_the_full_one() {
        for v in [
            "app-12",
            "a",
            "9",
            "1.0.12",
            "registry.example.com/team/app",
            "x_y",
            "A-",
            "a..b",
            "a/",
            "prod-app-1-config",
            "100m",
            "64Mi",
            "true",
            "null",
            "0x1F",
            "1e3",
        ] {
            assert_eq!(super::analyze_scalar(v), super::analyze_full(v), "{v}");
        }
        // Not taken by the quick path: the full analysis decides.
        for v in [
            "-a", ".a", "...", "---", "a:b", "a: b", "a #b", "a b", "é", "", "a\n", "/a",
        ] {
            assert_eq!(super::analyze_scalar(v), super::analyze_full(v), "{v}");
        }
    }

    #[test]
    fn a_key_of_letters_is_styled_and_analysed_as_the_full_rules_do() {
        // Every text of one to three letters drawn from those of go-yaml's words (and two
        // others), then the words themselves and longer keys.
        let letters = "yYeEsSnNoOtTrRuUfFaAlLx".chars().collect::<Vec<_>>();
        let mut keys: Vec<String> = Vec::new();
        for a in &letters {
            keys.push(a.to_string());
            for b in &letters {
                keys.push(format!("{a}{b}"));
                for c in &letters {
                    keys.push(format!("{a}{b}{c}"));
                }
            }
        }
        for w in ["true", "false", "yes", "no", "on", "off", "null"] {
            keys.push(w.to_owned());
            keys.push(w[..1].to_uppercase() + &w[1..]);
            keys.push(w.to_uppercase());
        }
        for w in ["apiVersion", "metadata", "matchLabels", "nulls", "Trues"] {
            keys.push(w.to_owned());
        }
        for k in &keys {
            assert!(super::letters_only(k));
            assert_eq!(super::letters_style(k), super::string_style(k), "{k}");
            assert_eq!(super::Analysis::COMMON, super::analyze_full(k), "{k}");
        }
        assert_eq!(super::letters_style("yes"), super::Style::DoubleQuoted);
        assert_eq!(super::letters_style("kind"), super::Style::Plain);
    }

    // --- YAML: expectations produced by sigs.k8s.io/yaml v1.6.0 (go.yaml.in/yaml/v2 v2.4.2)

    #[test]
    fn yaml_multiline_configmap_data() {
        let got = yaml_of(
            r##"{"data":{"trailing.conf":"line one\nline two\n","no-trailing.conf":"line one\nline two","keep.conf":"a\n\n","lead.txt":" indented\nnext\n","spaces.txt":"trailing space \nnext\n","only-newline":"\n","crlf":"a\r\nb\n","tabbed":"key:\tvalue\n"}}"##,
        );
        let want = r##"
data:
  crlf: "a\r\nb\n"
  keep.conf: |+
    a

  lead.txt: |2
     indented
    next
  no-trailing.conf: |-
    line one
    line two
  only-newline: |2+

  spaces.txt: "trailing space \nnext\n"
  tabbed: "key:\tvalue\n"
  trailing.conf: |
    line one
    line two
"##;
        assert_eq!(got, doc(want));
    }

    #[test]
    fn yaml_unicode() {
        let got = yaml_of(
            r##"{"unicode":{"accent":"café","cjk":"日本語","emoji":"deploy 🚀","nbsp":"a\u00a0b","bom":"\ufeffx","ls":"a\u2028b","nel":"a\u0085b"},"日本":"key","é":1,"z":2,"E":3}"##,
        );
        let want = concat!(
            "E: 3\n",
            "unicode:\n",
            "  accent: café\n",
            "  bom: \"\\uFEFF\\x78\"\n",
            "  cjk: 日本語\n",
            "  emoji: \"deploy \\U0001F680\"\n",
            "  ls: 'a\u{2028}    b'\n",
            "  nbsp: a\u{a0}b\n",
            "  nel: a b\n",
            "z: 2\n",
            "é: 1\n",
            "日本: key\n",
        );
        assert_eq!(got, want);
    }

    #[test]
    fn yaml_long_strings_fold_at_80_columns() {
        let got = yaml_of(
            r##"{"short":"The quick brown fox jumps over the lazy dog and keeps running until the end of the line","annotation":"kubectl.kubernetes.io/last-applied-configuration-like value: {\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\"}} trailing words here","quoted":"true but this is a very long string that starts with a word that is not special, no it does not, yes 1","dq":"tab\tseparated\tvalues that go on and on and on for quite a long while past the eighty column limit ok","nospace":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","nested":{"deeper":{"value":"word word word word word word word word word word word word word word word word word word"}}}"##,
        );
        let want = r##"
annotation: 'kubectl.kubernetes.io/last-applied-configuration-like value: {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}
  trailing words here'
dq: "tab\tseparated\tvalues that go on and on and on for quite a long while past the
  eighty column limit ok"
nested:
  deeper:
    value: word word word word word word word word word word word word word word word
      word word word
nospace: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
quoted: true but this is a very long string that starts with a word that is not special,
  no it does not, yes 1
short: The quick brown fox jumps over the lazy dog and keeps running until the end
  of the line
"##;
        assert_eq!(got, doc(want));
    }

    #[test]
    fn yaml_folds_only_past_column_80() {
        let x78 = "x".repeat(78);
        let x77 = "x".repeat(77);
        let input = json!({"k": format!("{x78} tail end"), "q": format!("#{x77} tail end"), "r": format!("{x77} tail end")});
        let want = format!("k: {x78}\n  tail end\nq: '#{x77}\n  tail end'\nr: {x77} tail\n  end\n");
        assert_eq!(to_yaml(&input), want);
    }

    #[test]
    fn yaml_long_and_multiline_keys_become_complex_keys() {
        let long = "a".repeat(130);
        let input = json!({ long.clone(): "long key", "multi\nline": "key with newline", "": "empty key", "true": "bool-like key" });
        let want = format!(
            "\"\": empty key\n? {long}\n: long key\n? |-\n  multi\n  line\n: key with newline\n\"true\": bool-like key\n"
        );
        assert_eq!(to_yaml(&input), want);
        // 128 bytes is still a simple key.
        let k128 = "k".repeat(128);
        assert_eq!(to_yaml(&json!({ k128.clone(): 1 })), format!("{k128}: 1\n"));
    }
}
