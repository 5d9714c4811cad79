//! A fast path for the YAML that Kubernetes manifests are written in.
//!
//! [`parse_document`] parses one YAML document (the text between `---` separators) straight
//! into a [`serde_json::Value`], several times faster than the general parser. It handles the
//! subset of YAML that manifests use in practice: block mappings and sequences (including
//! sequences at the same indentation as their key, compact `- key: v` entries and nested
//! `- - x`), plain, single- and double-quoted scalars (also over several lines), literal and
//! folded block scalars, comments, and flow collections such as `[]`, `{}`, `[a, b]` and
//! `{a: 1}` (also nested or over several lines, with quoted or one-line plain scalars).
//!
//! The result is always exactly what `serde_saphyr::from_str_with_options` with
//! `legacy_octal_numbers: true` produces for the same text, scalar resolution included
//! (`yes` is `true`, `0755` is 493, `1_000` is 1000, `1e3` is a float, `18446744073709551616`
//! is a float, ...). Whenever the document uses anything outside the subset — anchors,
//! aliases, tags, complex keys, merge keys, directives, non-canonical integer keys, tabs
//! (except inside quoted and block scalars), or anything the general parser would reject —
//! the fast path returns `None` and the caller parses the document with serde-saphyr, which
//! then also produces the proper error message. The fast path never reports errors of its
//! own. CR LF line breaks are accepted (as YAML reads them: like LF).

#![forbid(unsafe_code)]

use serde_json::{Map, Value};
use std::borrow::Cow;

/// Deepest nesting of collections handled here; serde-saphyr's default budget allows 64.
const MAX_DEPTH: usize = 48;
/// Most nodes (keys, values and collections) handled here; serde-saphyr's default budget
/// stops at 250,000.
const MAX_NODES: usize = 200_000;
/// Longest implicit key in bytes; serde-saphyr looks at most 1,024 characters ahead for `:`.
const MAX_KEY_LEN: usize = 1000;
/// Most comment lines between an indicator that ends its line (`key:` or `-`) and the node
/// that follows, or between two tokens of a flow collection; serde-saphyr buffers at most
/// 32 comments while it looks ahead there.
const MAX_LOOKAHEAD_COMMENTS: usize = 24;

/// Parses one YAML document (the text between `---` separators, no separators inside).
/// Some(value) only when the document is in the supported subset and the result equals
/// serde-saphyr's with legacy_octal_numbers; None means "use serde-saphyr".
pub fn parse_document(text: &str) -> Option<Value> {
    match scan_text(text.as_bytes()) {
        Text::Plain => {}
        // YAML reads a CR LF line break as LF (quoted and block scalars included), so a
        // Windows-style document means the same as its LF-only version.
        Text::Crlf => return parse_document(&text.replace("\r\n", "\n")),
        Text::Unsupported => return None,
    }
    match parse_with(text, JsonBuild)? {
        (Some((v, _)), _) => Some(v),
        // Empty, blank or comment-only documents deserialize to null.
        (None, _) => Some(Value::Null),
    }
}

/// Whether `text` (one document, LF line breaks) has only characters and lines the fast
/// path reads; CR LF text is refused too (the positions of [`parse_with`] are the text's).
pub(crate) fn plain_text(text: &str) -> bool {
    scan_text(text.as_bytes()) == Text::Plain
}

/// Parses one document already checked by [`plain_text`] into `build`'s tree. Returns the
/// root and the byte offset it starts at (`None` for an empty document), and the builder.
pub(crate) fn parse_with<B: Build>(text: &str, build: B) -> Parsed<B> {
    let mut p = Parser {
        text,
        src: text.as_bytes(),
        pos: 0,
        line_start: 0,
        depth: 0,
        nodes: 0,
        comments: 0,
        b: build,
    };
    p.skip_to_content()?;
    if p.at_eof() {
        return Some((None, p.b));
    }
    let start = p.pos;
    let value = p.node(-1, Ctx::Block)?;
    // Anything left over (a less-indented line after an indented root, say) is not ours.
    p.at_eof().then_some((Some((value, start)), p.b))
}

/// A document's root and where it starts (`None`: empty), and the builder back.
pub(crate) type Parsed<B> = Option<(Option<(<B as Build>::Node, usize)>, B)>;

/// What the parser builds. Scalars come with the byte offset serde-saphyr reports as their
/// location (a plain or quoted scalar's first character, a block scalar's first content
/// character, an empty mapping value's `:`, an empty sequence entry's line end); a builder
/// may refuse a scalar (`None`), and the document then goes to serde-saphyr.
pub(crate) trait Build {
    type Node;
    type Map;
    /// A plain scalar's text (folded over its lines), unresolved.
    fn plain(&mut self, text: &str, at: usize) -> Option<Self::Node>;
    /// A quoted or block scalar: always a string.
    fn string(&mut self, s: String, at: usize) -> Option<Self::Node>;
    /// An empty value (null).
    fn null(&mut self, at: usize) -> Option<Self::Node>;
    /// Whether a plain mapping key (already known to read as a string) is the string it spells.
    fn plain_key(&self, _key: &str) -> bool {
        true
    }
    fn seq(&mut self, items: Vec<Self::Node>) -> Self::Node;
    fn new_map(&mut self) -> Self::Map;
    /// Adds an entry; false when the key was already there. A plain key is borrowed from
    /// the text (most keys: a builder with inline short strings then allocates nothing).
    fn insert(&mut self, map: &mut Self::Map, key: Cow<'_, str>, value: Self::Node) -> bool;
    /// The finished mapping; `None` when it turns out to hold a key twice (a builder may
    /// find that out here rather than in `insert`).
    fn map(&mut self, map: Self::Map) -> Option<Self::Node>;
    /// Whether the builder uses positions: then the few nodes whose location in
    /// serde-saphyr is not pinned down here (an empty value followed by a comment, a block
    /// scalar with an explicit indentation) are refused.
    fn positions(&self) -> bool {
        false
    }
}

/// Builds serde_json values (positions unused).
struct JsonBuild;

impl Build for JsonBuild {
    type Node = Value;
    type Map = Map<String, Value>;
    fn plain(&mut self, text: &str, _at: usize) -> Option<Value> {
        Some(match resolve_plain(text)? {
            Plain::Str => Value::String(text.to_owned()),
            Plain::Val(v) => v,
        })
    }
    fn string(&mut self, s: String, _at: usize) -> Option<Value> {
        Some(Value::String(s))
    }
    fn null(&mut self, _at: usize) -> Option<Value> {
        Some(Value::Null)
    }
    fn seq(&mut self, items: Vec<Value>) -> Value {
        Value::Array(items)
    }
    fn new_map(&mut self) -> Self::Map {
        Map::new()
    }
    fn insert(&mut self, map: &mut Self::Map, key: Cow<'_, str>, value: Value) -> bool {
        map.insert(key.into_owned(), value).is_none()
    }
    fn map(&mut self, map: Self::Map) -> Option<Value> {
        Some(Value::Object(map))
    }
}

/// What `scan_text` found.
#[derive(PartialEq, Eq)]
enum Text {
    /// Nothing the parser must not see.
    Plain,
    /// Nothing the parser must not see, once CR LF line breaks are turned into LF.
    Crlf,
    /// Characters or lines the fast path leaves to serde-saphyr.
    Unsupported,
}

/// Bytes that `scan_text` must look at more closely: everything except printable ASCII and
/// tabs.
const SPECIAL: [bool; 256] = {
    let mut t = [true; 256];
    let mut b = b' ';
    while b <= b'~' {
        t[b as usize] = false;
        b += 1;
    }
    t[b'\t' as usize] = false;
    t
};

/// Rejects, up front, text with characters the fast path does not want to reason about:
/// control characters (carriage returns other than in CR LF included), DEL, C1 controls,
/// U+2028/U+2029, byte order marks and U+FFFE/U+FFFF, and lines starting with `%`
/// (directives), `---` or `...` (document markers).
fn scan_text(b: &[u8]) -> Text {
    let line_ok = |i: usize| {
        let rest = &b[i..];
        !(rest.starts_with(b"%") || rest.starts_with(b"---") || rest.starts_with(b"..."))
    };
    if !line_ok(0) {
        return Text::Unsupported;
    }
    let mut crlf = false;
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut i = 0;
    while i < b.len() {
        // Skip eight printable ASCII bytes at a time: no byte below 0x20, none with the high
        // bit set, none equal to 0x7F (the usual "has a zero byte" bit tricks).
        if let Some(chunk) = b.get(i..i + 8) {
            let w = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
            let del = w ^ (ONES * 0x7F);
            let below_space = w.wrapping_sub(ONES * 0x20) & !w;
            let is_del = del.wrapping_sub(ONES) & !del;
            if (below_space | is_del | w) & HIGH == 0 {
                i += 8;
                continue;
            }
        }
        if !SPECIAL[usize::from(b[i])] {
            i += 1;
            continue;
        }
        match b[i] {
            b'\n' => {
                if !line_ok(i + 1) {
                    return Text::Unsupported;
                }
            }
            b'\r' if b.get(i + 1) == Some(&b'\n') => crlf = true,
            // U+0080..U+009F (C1 controls, NEL among them).
            0xC2 if matches!(b.get(i + 1), Some(0x80..=0x9F)) => return Text::Unsupported,
            // U+2028 and U+2029, which YAML 1.1 treats as line breaks.
            0xE2 if b.get(i + 1) == Some(&0x80) && matches!(b.get(i + 2), Some(0xA8 | 0xA9)) => {
                return Text::Unsupported;
            }
            // U+FEFF (byte order mark) and U+FFFE, U+FFFF (not printable in YAML).
            0xEF if matches!(
                (b.get(i + 1), b.get(i + 2)),
                (Some(0xBB), Some(0xBF)) | (Some(0xBF), Some(0xBE | 0xBF))
            ) =>
            {
                return Text::Unsupported;
            }
            0x80.. => {}
            _ => return Text::Unsupported,
        }
        i += 1;
    }
    if crlf { Text::Crlf } else { Text::Plain }
}

/// Where a node starts, which decides what it may be.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    /// First thing on its own line: the root, or a value below its key or `-`.
    Block,
    /// Right after `- ` on the same line: may be a compact mapping or sequence.
    SeqEntry,
    /// Right after `key: ` on the same line: a scalar, block scalar or flow collection.
    MapValue,
}

/// How a block scalar treats its final line breaks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Chomp {
    Clip,
    Strip,
    Keep,
}

/// How a plain scalar resolves.
pub(crate) enum Plain {
    /// It stays a string.
    Str,
    /// It is null, a boolean or a number.
    Val(Value),
}

struct Parser<'a, B> {
    text: &'a str,
    src: &'a [u8],
    /// Current byte offset.
    pos: usize,
    /// Offset of the start of the line that `pos` is on, for columns.
    line_start: usize,
    /// Current collection nesting.
    depth: usize,
    /// Nodes seen so far.
    nodes: usize,
    /// Comment lines skipped by the last `skip_to_content`.
    comments: usize,
    /// What builds the tree.
    b: B,
}

/// Whether a byte after an indicator (`-`, `:`) makes it an indicator: space, newline or end.
fn is_blank(b: Option<&u8>) -> bool {
    matches!(b, None | Some(b' ' | b'\n'))
}

impl<'a, B: Build> Parser<'a, B> {
    fn at_eof(&self) -> bool {
        self.pos >= self.src.len()
    }

    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }

    /// Indentation of the content line the parser stands on, `None` at the end.
    fn cur_indent(&self) -> Option<usize> {
        (!self.at_eof()).then(|| self.pos - self.line_start)
    }

    /// Whether the parser stands on a block sequence entry indicator.
    fn at_seq_entry(&self) -> bool {
        self.peek() == Some(b'-') && is_blank(self.src.get(self.pos + 1))
    }

    /// Offset just past the line break at or after `i` (or the end of the text).
    fn after_line(&self, i: usize) -> usize {
        match self.src[i.min(self.src.len())..]
            .iter()
            .position(|&c| c == b'\n')
        {
            Some(n) => i + n + 1,
            None => self.src.len(),
        }
    }

    /// Offset of the line break at or after `i`, or the end of the text.
    fn line_end(&self, i: usize) -> usize {
        match self.src[i..].iter().position(|&c| c == b'\n') {
            Some(n) => i + n,
            None => self.src.len(),
        }
    }

    /// From the start of a line, skips blank and comment-only lines and stops on the first
    /// character of the next content line (or at the end). Counts the comment lines skipped.
    fn skip_to_content(&mut self) -> Option<()> {
        self.comments = 0;
        loop {
            let start = self.pos;
            let mut i = start;
            while self.src.get(i) == Some(&b' ') {
                i += 1;
            }
            match self.src.get(i) {
                None => {
                    self.pos = i;
                    self.line_start = start;
                    return Some(());
                }
                Some(b'\n') => self.pos = i + 1,
                Some(b'#') => {
                    self.comments += 1;
                    self.pos = self.after_line(i);
                }
                Some(b'\t') => return None,
                Some(_) => {
                    self.line_start = start;
                    self.pos = i;
                    return Some(());
                }
            }
        }
    }

    /// After a node's last token: allows spaces and a comment, then moves to the next line.
    fn finish_line(&mut self) -> Option<()> {
        let start = self.pos;
        let mut i = start;
        while self.src.get(i) == Some(&b' ') {
            i += 1;
        }
        match self.src.get(i) {
            None => self.pos = i,
            Some(b'\n') => self.pos = i + 1,
            // A comment must be separated from the token before it.
            Some(b'#') if i > start => self.pos = self.after_line(i),
            _ => return None,
        }
        Some(())
    }

    /// Counts one node against the budget.
    fn count(&mut self) -> Option<()> {
        self.nodes += 1;
        (self.nodes <= MAX_NODES).then_some(())
    }

    /// Enters a collection.
    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    /// Parses the node starting at the current position (never a space), whose parent
    /// collection is indented by `parent` (-1 for the root). Returns with the parser on the
    /// next content line, like every block-level parse.
    fn node(&mut self, parent: isize, ctx: Ctx) -> Option<B::Node> {
        self.count()?;
        let col = self.pos - self.line_start;
        match self.src[self.pos] {
            b'-' if is_blank(self.src.get(self.pos + 1)) => {
                if ctx == Ctx::MapValue {
                    return None;
                }
                self.block_seq(col)
            }
            // (A block scalar at the root indents oddly; leave that to saphyr.)
            b'|' | b'>' => self.block_scalar(usize::try_from(parent).ok()?),
            b'[' | b'{' => {
                let v = self.flow_collection()?;
                self.finish_line()?;
                self.skip_to_content()?;
                Some(v)
            }
            q @ (b'"' | b'\'') => {
                let start = self.pos;
                let (s, multiline) = self.quoted(q)?;
                let mut i = self.pos;
                while self.src.get(i) == Some(&b' ') {
                    i += 1;
                }
                if self.src.get(i) == Some(&b':') && is_blank(self.src.get(i + 1)) {
                    // A quoted key: the node is a mapping.
                    if ctx == Ctx::MapValue || multiline || i - start > MAX_KEY_LEN {
                        return None;
                    }
                    self.pos = i + 1;
                    return self.block_map(col, Some(Cow::Owned(s)));
                }
                let node = self.b.string(s, start)?;
                self.finish_line()?;
                self.skip_to_content()?;
                Some(node)
            }
            // `?` and `:` start a plain scalar only when something other than a space follows.
            b'?' | b':' if is_blank(self.src.get(self.pos + 1)) => None,
            // Anchors, aliases, tags, reserved and stray indicators.
            b'&' | b'*' | b'!' | b'%' | b'@' | b'`' | b',' | b']' | b'}' | b'#' => None,
            _ => {
                if ctx != Ctx::MapValue && self.line_has_key() {
                    self.block_map(col, None)
                } else {
                    self.plain(parent)
                }
            }
        }
    }

    /// Whether the current line holds an implicit key: a `:` followed by a space or the
    /// end of the line, before any comment.
    fn line_has_key(&self) -> bool {
        let mut i = self.pos;
        loop {
            match self.src.get(i) {
                None | Some(b'\n') => return false,
                Some(b':') if is_blank(self.src.get(i + 1)) => return true,
                Some(b' ') if self.src.get(i + 1) == Some(&b'#') => return false,
                _ => i += 1,
            }
        }
    }

    /// Parses a block mapping whose keys are at column `m`. `first` is its first key when
    /// the caller has already read it (and the `:` after it).
    fn block_map(&mut self, m: usize, mut first: Option<Cow<'a, str>>) -> Option<B::Node> {
        self.enter()?;
        let mut map = self.b.new_map();
        loop {
            let key = match first.take() {
                Some(k) => k,
                None => self.map_key()?,
            };
            self.count()?;
            let value = self.map_value(m)?;
            if !self.b.insert(&mut map, key, value) {
                // Duplicate keys are an error for serde-saphyr.
                return None;
            }
            match self.cur_indent() {
                Some(i) if i == m => {}
                Some(i) if i > m => return None,
                _ => break,
            }
        }
        self.depth -= 1;
        self.b.map(map)
    }

    /// Reads a block mapping key and the `:` after it.
    fn map_key(&mut self) -> Option<Cow<'a, str>> {
        let start = self.pos;
        match self.src[start] {
            q @ (b'"' | b'\'') => {
                let (s, multiline) = self.quoted(q)?;
                let mut i = self.pos;
                while self.src.get(i) == Some(&b' ') {
                    i += 1;
                }
                if multiline
                    || i - start > MAX_KEY_LEN
                    || self.src.get(i) != Some(&b':')
                    || !is_blank(self.src.get(i + 1))
                {
                    return None;
                }
                self.pos = i + 1;
                Some(Cow::Owned(s))
            }
            b'-' if is_blank(self.src.get(start + 1)) => None,
            b'&' | b'*' | b'!' | b'?' | b':' | b'%' | b'@' | b'`' | b',' | b'[' | b']' | b'{'
            | b'}' | b'#' | b'|' | b'>' => None,
            _ => {
                let mut i = start;
                let mut end = start;
                loop {
                    match self.src.get(i) {
                        Some(b':') if is_blank(self.src.get(i + 1)) => break,
                        Some(b' ') => {
                            if self.src.get(i + 1) == Some(&b'#') {
                                return None;
                            }
                            i += 1;
                        }
                        None | Some(b'\n' | b'\t') => return None,
                        Some(_) => {
                            i += 1;
                            end = i;
                        }
                    }
                }
                if i - start > MAX_KEY_LEN {
                    return None;
                }
                let key = &self.text[start..end];
                if !plain_key_is_string(key) || !self.b.plain_key(key) {
                    return None;
                }
                self.pos = i + 1;
                Some(Cow::Borrowed(key))
            }
        }
    }

    /// Moves from `i`, where the rest of a line is empty or a comment, to the next content;
    /// whether that line had a comment. `None` when the way passes more than
    /// [`MAX_LOOKAHEAD_COMMENTS`] comments.
    fn past_line(&mut self, i: usize) -> Option<bool> {
        let inline_comment = self.src.get(i) == Some(&b'#');
        self.pos = self.after_line(i);
        self.skip_to_content()?;
        if self.comments + usize::from(inline_comment) > MAX_LOOKAHEAD_COMMENTS {
            return None;
        }
        Some(inline_comment)
    }

    /// Parses a mapping value, the parser standing just after the key's `:`.
    fn map_value(&mut self, m: usize) -> Option<B::Node> {
        // The `:`, where an empty value is.
        let colon = self.pos - 1;
        let mut i = self.pos;
        while self.src.get(i) == Some(&b' ') {
            i += 1;
        }
        match self.src.get(i) {
            None | Some(b'\n' | b'#') => {
                // Nothing more on this line: the value is below, or empty.
                let inline_comment = self.past_line(i)?;
                match self.cur_indent() {
                    Some(ind) if ind > m => self.node(m as isize, Ctx::Block),
                    // A sequence may sit at the same indentation as its key.
                    Some(ind) if ind == m && self.at_seq_entry() => {
                        self.count()?;
                        self.block_seq(m)
                    }
                    _ => {
                        self.count()?;
                        if inline_comment && self.b.positions() {
                            return None;
                        }
                        self.b.null(colon)
                    }
                }
            }
            Some(b'\t') => None,
            Some(_) => {
                self.pos = i;
                self.node(m as isize, Ctx::MapValue)
            }
        }
    }

    /// Parses a block sequence whose `-` indicators are at column `s`.
    fn block_seq(&mut self, s: usize) -> Option<B::Node> {
        self.enter()?;
        let mut items = Vec::new();
        loop {
            // The parser stands on `-`.
            let mut i = self.pos + 1;
            while self.src.get(i) == Some(&b' ') {
                i += 1;
            }
            let item = match self.src.get(i) {
                None | Some(b'\n' | b'#') => {
                    let line_end = i;
                    let inline_comment = self.past_line(i)?;
                    match self.cur_indent() {
                        Some(ind) if ind > s => self.node(s as isize, Ctx::Block)?,
                        _ => {
                            self.count()?;
                            if (inline_comment || line_end >= self.src.len()) && self.b.positions()
                            {
                                return None;
                            }
                            self.b.null(line_end)?
                        }
                    }
                }
                Some(b'\t') => return None,
                Some(_) => {
                    self.pos = i;
                    self.node(s as isize, Ctx::SeqEntry)?
                }
            };
            items.push(item);
            match self.cur_indent() {
                Some(ind) if ind == s && self.at_seq_entry() => {}
                Some(ind) if ind > s => return None,
                _ => break,
            }
        }
        self.depth -= 1;
        Some(self.b.seq(items))
    }

    /// Scans one line of a plain scalar from `from`. Returns the end of its text (trailing
    /// spaces dropped) and where the line's text stops: its line break, the end, or the space
    /// before a comment.
    fn plain_line(&self, from: usize) -> Option<(usize, usize)> {
        let mut i = from;
        let mut end = from;
        loop {
            match self.src.get(i) {
                None | Some(b'\n') => return Some((end, i)),
                Some(b' ') => {
                    if self.src.get(i + 1) == Some(&b'#') {
                        return Some((end, i));
                    }
                    i += 1;
                }
                // `: ` would start a mapping where none may be; tabs are left to saphyr.
                Some(b':') if is_blank(self.src.get(i + 1)) => return None,
                Some(b'\t') => return None,
                Some(_) => {
                    i += 1;
                    end = i;
                }
            }
        }
    }

    /// Parses a plain scalar in block context, possibly continued on more-indented lines.
    fn plain(&mut self, parent: isize) -> Option<B::Node> {
        let start = self.pos;
        let (end, mut stop) = self.plain_line(start)?;
        let mut folded: Option<String> = None;
        // A comment ends the scalar; otherwise more-indented lines continue it.
        while self.src.get(stop) == Some(&b'\n') {
            let mut breaks = 0;
            let mut q = stop + 1;
            let (indent, first) = loop {
                let line = q;
                while self.src.get(q) == Some(&b' ') {
                    q += 1;
                }
                match self.src.get(q) {
                    Some(b'\n') => {
                        breaks += 1;
                        q += 1;
                    }
                    Some(b'\t') => return None,
                    c => break (q - line, c.copied()),
                }
            };
            // Indicators mean nothing at the start of a continuation line, but a comment
            // ends the scalar.
            if matches!(first, None | Some(b'#')) || indent as isize <= parent {
                break;
            }
            let (cend, cstop) = self.plain_line(q)?;
            let buf = folded.get_or_insert_with(|| self.text[start..end].to_owned());
            if breaks == 0 {
                buf.push(' ');
            } else {
                buf.extend(std::iter::repeat_n('\n', breaks));
            }
            buf.push_str(&self.text[q..cend]);
            stop = cstop;
        }
        self.pos = stop;
        self.finish_line()?;
        self.skip_to_content()?;
        match folded {
            None => self.b.plain(&self.text[start..end], start),
            Some(s) => self.b.plain(&s, start),
        }
    }

    /// Parses a quoted scalar starting at its opening quote `q`; leaves the parser just past
    /// the closing quote. Also tells whether it spanned lines.
    fn quoted(&mut self, q: u8) -> Option<(String, bool)> {
        let start = self.pos + 1;
        let mut i = start;
        // Most quoted scalars have no escapes and no line breaks: copy them in one go.
        loop {
            match self.src.get(i) {
                None => return None,
                Some(&c) if c == q => {
                    if q == b'\'' && self.src.get(i + 1) == Some(&b'\'') {
                        break;
                    }
                    self.pos = i + 1;
                    return Some((self.text[start..i].to_owned(), false));
                }
                Some(b'\\') if q == b'"' => break,
                Some(b'\n') => break,
                Some(_) => i += 1,
            }
        }
        let mut buf = String::with_capacity(i - start + 16);
        buf.push_str(&self.text[start..i]);
        let mut multiline = false;
        // Trailing white space before a line break is dropped, but never what an escape
        // produced or an earlier line contributed: `kept` marks where that ends.
        let mut kept = 0;
        loop {
            let run = i;
            while let Some(&c) = self.src.get(i) {
                if c == q || c == b'\n' || (q == b'"' && c == b'\\') {
                    break;
                }
                i += 1;
            }
            buf.push_str(&self.text[run..i]);
            match self.src.get(i) {
                None => return None,
                Some(b'\n') => {
                    multiline = true;
                    let trimmed = buf[kept..].trim_end_matches([' ', '\t']).len();
                    buf.truncate(kept + trimmed);
                    i = self.fold_break(i, &mut buf, false)?;
                    kept = buf.len();
                }
                Some(b'\\') => match self.src.get(i + 1) {
                    Some(b'\n') => {
                        multiline = true;
                        i = self.fold_break(i + 1, &mut buf, true)?;
                        kept = buf.len();
                    }
                    Some(&e) => {
                        i = self.escape(e, i + 2, &mut buf)?;
                        kept = buf.len();
                    }
                    None => return None,
                },
                Some(_) => {
                    // The quote character.
                    if q == b'\'' && self.src.get(i + 1) == Some(&b'\'') {
                        buf.push('\'');
                        i += 2;
                        kept = buf.len();
                    } else {
                        i += 1;
                        break;
                    }
                }
            }
        }
        self.pos = i;
        Some((buf, multiline))
    }

    /// Folds the line break at `i` inside a quoted scalar: empty lines become line feeds, a
    /// lone break a space (nothing when the break was escaped), and the next line's leading
    /// white space goes. Returns where that line's text starts.
    fn fold_break(&self, i: usize, buf: &mut String, escaped: bool) -> Option<usize> {
        let mut q = i + 1;
        let mut empty = 0;
        loop {
            while matches!(self.src.get(q), Some(b' ' | b'\t')) {
                q += 1;
            }
            match self.src.get(q) {
                Some(b'\n') => {
                    empty += 1;
                    q += 1;
                }
                None => return None,
                Some(_) => break,
            }
        }
        if empty == 0 && !escaped {
            buf.push(' ');
        } else {
            buf.extend(std::iter::repeat_n('\n', empty));
        }
        Some(q)
    }

    /// Appends the double-quoted escape whose letter `e` precedes offset `i`; returns the
    /// offset after it.
    fn escape(&self, e: u8, i: usize, buf: &mut String) -> Option<usize> {
        let c = match e {
            b'0' => '\0',
            b'a' => '\u{7}',
            b'b' => '\u{8}',
            b't' | b'\t' => '\t',
            b'n' => '\n',
            b'v' => '\u{b}',
            b'f' => '\u{c}',
            b'r' => '\r',
            b'e' => '\u{1b}',
            b' ' => ' ',
            b'"' => '"',
            b'/' => '/',
            b'\\' => '\\',
            b'N' => '\u{85}',
            b'_' => '\u{a0}',
            b'L' => '\u{2028}',
            b'P' => '\u{2029}',
            b'x' | b'u' | b'U' => {
                let n = match e {
                    b'x' => 2,
                    b'u' => 4,
                    _ => 8,
                };
                let digits = self.text.get(i..i + n)?;
                if !digits.bytes().all(|d| d.is_ascii_hexdigit()) {
                    return None;
                }
                // Surrogates (which saphyr pairs up) and out-of-range values are left to it.
                let c = char::from_u32(u32::from_str_radix(digits, 16).ok()?)?;
                buf.push(c);
                return Some(i + n);
            }
            _ => return None,
        };
        buf.push(c);
        Some(i)
    }

    /// Parses a literal (`|`) or folded (`>`) block scalar starting at its indicator, for a
    /// node whose parent collection is indented by `n`.
    fn block_scalar(&mut self, n: usize) -> Option<B::Node> {
        let literal = self.src[self.pos] == b'|';
        let mut i = self.pos + 1;
        let mut explicit = None;
        let mut chomp = Chomp::Clip;
        for _ in 0..2 {
            match self.src.get(i) {
                Some(&d @ b'1'..=b'9') if explicit.is_none() => {
                    explicit = Some(usize::from(d - b'0'))
                }
                Some(b'-') if chomp == Chomp::Clip => chomp = Chomp::Strip,
                Some(b'+') if chomp == Chomp::Clip => chomp = Chomp::Keep,
                _ => break,
            }
            i += 1;
        }
        if !is_blank(self.src.get(i)) {
            return None;
        }
        if explicit.is_some() && self.b.positions() {
            return None;
        }
        self.pos = i;
        self.finish_line()?;
        let body = self.pos;
        // Where the first content character is (the scalar's location).
        let mut first_at = None;

        // Content indentation: given, or that of the first non-empty line.
        let ci = match explicit {
            Some(k) => n + k,
            None => {
                let mut q = body;
                let mut longest_empty = 0;
                let first = loop {
                    let line = q;
                    while self.src.get(q) == Some(&b' ') {
                        q += 1;
                    }
                    let spaces = q - line;
                    match self.src.get(q) {
                        Some(b'\n') => {
                            longest_empty = longest_empty.max(spaces);
                            q += 1;
                        }
                        None if spaces > 0 => return None,
                        None => break None,
                        Some(b'\t') => return None,
                        Some(_) => break Some(spaces),
                    }
                };
                match first {
                    // Leading empty lines longer than the first line are an error.
                    Some(spaces) if spaces > n && longest_empty <= spaces => spaces,
                    Some(spaces) if spaces > n => return None,
                    // No content at all; leave indented empty lines to saphyr.
                    _ if longest_empty > 0 => return None,
                    _ => usize::MAX,
                }
            }
        };

        let mut out = String::new();
        // Line breaks seen but not yet written; `prev` tells whether there was a content
        // line before and whether it was more indented (starts with white space).
        let mut pending = 0;
        let mut prev: Option<bool> = None;
        let mut q = body;
        loop {
            let line = q;
            let mut spaces = 0;
            while spaces < ci && self.src.get(q) == Some(&b' ') {
                q += 1;
                spaces += 1;
            }
            match self.src.get(q) {
                None => {
                    if spaces > 0 {
                        return None;
                    }
                    break;
                }
                Some(b'\n') => {
                    pending += 1;
                    q += 1;
                }
                Some(&c) if spaces < ci => {
                    // Tabs in indentation, and (with an explicit indentation) a line between
                    // the parent's and the content's indentation before any content, are
                    // errors for saphyr.
                    if c == b'\t' || (prev.is_none() && explicit.is_some() && spaces > n) {
                        return None;
                    }
                    // A less indented line ends the scalar.
                    q = line;
                    break;
                }
                Some(&c) => {
                    let eol = self.line_end(q);
                    let more = c == b' ' || c == b'\t';
                    match prev {
                        None => out.extend(std::iter::repeat_n('\n', pending)),
                        Some(prev_more) if literal || prev_more || more => {
                            out.extend(std::iter::repeat_n('\n', pending + 1));
                        }
                        Some(_) if pending == 0 => out.push(' '),
                        Some(_) => out.extend(std::iter::repeat_n('\n', pending)),
                    }
                    out.push_str(&self.text[q..eol]);
                    first_at.get_or_insert(q);
                    pending = 0;
                    prev = Some(more);
                    q = (eol + 1).min(self.src.len());
                }
            }
        }
        match (prev, chomp) {
            (None, Chomp::Keep) => out.extend(std::iter::repeat_n('\n', pending)),
            (None, _) | (Some(_), Chomp::Strip) => {}
            (Some(_), Chomp::Clip) => out.push('\n'),
            (Some(_), Chomp::Keep) => out.extend(std::iter::repeat_n('\n', pending + 1)),
        }
        self.pos = q;
        self.skip_to_content()?;
        // An empty block scalar, or one with empty lines first, is left to serde-saphyr
        // when positions matter: its location is not pinned down.
        let at = match first_at {
            Some(at) if self.src[body..at].iter().all(|&c| c == b' ') => at,
            _ => return self.b.string(out, usize::MAX),
        };
        self.b.string(out, at)
    }

    /// Skips white space, line breaks and comments inside a flow collection. (serde-saphyr
    /// does not check the indentation of a flow collection's continuation lines.)
    fn flow_space(&mut self) -> Option<()> {
        let mut comments = 0;
        loop {
            match self.peek() {
                Some(b' ' | b'\n') => self.pos += 1,
                Some(b'#') if matches!(self.src.get(self.pos - 1), Some(b' ' | b'\n')) => {
                    // saphyr gives up when too many comments come between two tokens.
                    comments += 1;
                    if comments > MAX_LOOKAHEAD_COMMENTS {
                        return None;
                    }
                    self.pos = self.line_end(self.pos);
                }
                None | Some(b'\t') => return None,
                Some(_) => return Some(()),
            }
        }
    }

    /// Parses a flow collection starting at `[` or `{`.
    fn flow_collection(&mut self) -> Option<B::Node> {
        self.enter()?;
        let seq = self.src[self.pos] == b'[';
        let close = if seq { b']' } else { b'}' };
        self.pos += 1;
        self.flow_space()?;
        let value = if seq {
            let mut items = Vec::new();
            if self.peek() == Some(b']') {
                self.pos += 1;
            } else {
                loop {
                    items.push(self.flow_item(close)?);
                    if !self.flow_next(close)? {
                        break;
                    }
                }
            }
            self.b.seq(items)
        } else {
            let mut map = self.b.new_map();
            if self.peek() == Some(b'}') {
                self.pos += 1;
            } else {
                loop {
                    self.count()?;
                    let key = match self.src[self.pos] {
                        q @ (b'"' | b'\'') => {
                            let start = self.pos;
                            let (s, multiline) = self.quoted(q)?;
                            while self.peek() == Some(b' ') {
                                self.pos += 1;
                            }
                            if multiline
                                || self.pos - start > MAX_KEY_LEN
                                || self.peek() != Some(b':')
                            {
                                return None;
                            }
                            Cow::Owned(s)
                        }
                        _ => {
                            let start = self.pos;
                            let end = self.flow_plain_end(b':')?;
                            // A plain key's `:` needs white space after it.
                            if self.peek() != Some(b':')
                                || !matches!(self.src.get(self.pos + 1), Some(b' ' | b'\n'))
                                || self.pos - start > MAX_KEY_LEN
                            {
                                return None;
                            }
                            let key = &self.text[start..end];
                            if !plain_key_is_string(key) || !self.b.plain_key(key) {
                                return None;
                            }
                            Cow::Borrowed(key)
                        }
                    };
                    self.pos += 1;
                    self.flow_space()?;
                    let value = self.flow_item(close)?;
                    if !self.b.insert(&mut map, key, value) {
                        return None;
                    }
                    if !self.flow_next(close)? {
                        break;
                    }
                }
            }
            self.b.map(map)?
        };
        self.depth -= 1;
        Some(value)
    }

    /// After a flow entry: consumes `,` (true: another entry follows) or the closing
    /// bracket (false). A trailing `,` before the bracket is allowed.
    fn flow_next(&mut self, close: u8) -> Option<bool> {
        self.flow_space()?;
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                self.flow_space()?;
                if self.peek() == Some(close) {
                    self.pos += 1;
                    return Some(false);
                }
                Some(true)
            }
            Some(c) if c == close => {
                self.pos += 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// Parses one flow entry value: a nested collection, a quoted or a plain scalar.
    fn flow_item(&mut self, close: u8) -> Option<B::Node> {
        self.count()?;
        match self.src[self.pos] {
            b'[' | b'{' => self.flow_collection(),
            q @ (b'"' | b'\'') => {
                let start = self.pos;
                let s = self.quoted(q)?.0;
                self.b.string(s, start)
            }
            _ => {
                let start = self.pos;
                let end = self.flow_plain_end(close)?;
                self.b.plain(&self.text[start..end], start)
            }
        }
    }

    /// Scans a one-line plain scalar inside a flow collection up to `,`, `stop` (the closing
    /// bracket, or `:` for keys), a line break or a comment; leaves the parser there and
    /// returns the end of the scalar's text. Anything unusual (other indicators, `:` in
    /// values) is refused.
    fn flow_plain_end(&mut self, stop: u8) -> Option<usize> {
        let start = self.pos;
        let first = self.src[start];
        let ok_first = match first {
            // `-` starts a plain scalar when a "safe" character follows.
            b'-' => !matches!(
                self.src.get(start + 1),
                None | Some(b' ' | b'\t' | b'\n' | b',' | b'[' | b']' | b'{' | b'}')
            ),
            c => !matches!(
                c,
                b' ' | b'\t'
                    | b'\n'
                    | b'?'
                    | b':'
                    | b','
                    | b'['
                    | b']'
                    | b'{'
                    | b'}'
                    | b'#'
                    | b'&'
                    | b'*'
                    | b'!'
                    | b'|'
                    | b'>'
                    | b'\''
                    | b'"'
                    | b'%'
                    | b'@'
                    | b'`'
            ),
        };
        if !ok_first {
            return None;
        }
        let mut i = start;
        let mut end = start;
        loop {
            match self.src.get(i) {
                Some(b' ') if self.src.get(i + 1) == Some(&b'#') => break,
                Some(b' ') => i += 1,
                Some(&c) if c == b',' || c == b'\n' || c == stop => break,
                None | Some(b'\t' | b'#' | b':' | b'[' | b']' | b'{' | b'}') => return None,
                Some(_) => {
                    i += 1;
                    end = i;
                }
            }
        }
        self.pos = i;
        Some(end)
    }
}

/// Whether a plain mapping key deserializes as the string it spells, and is unique by that
/// string. Null-like keys fail in serde-saphyr, `<<` is a merge key, and integer keys are
/// compared by value (`0x1` equals `1`), so only canonical decimal spellings are accepted.
fn plain_key_is_string(key: &str) -> bool {
    match key.as_bytes()[0] {
        b'~' | b'n' | b'N' => !matches!(key, "~" | "null" | "Null" | "NULL"),
        b'<' => key != "<<",
        b'0'..=b'9' | b'+' | b'-' => {
            parse_int(key).is_none()
                || (key.bytes().all(|c| c.is_ascii_digit())
                    && (key == "0" || !key.starts_with('0')))
        }
        _ => true,
    }
}

/// Resolves a plain scalar the way serde-saphyr does for an untyped value: null, a YAML 1.1
/// boolean, an integer (u64, or i64 when negative), a finite float, or else a string.
/// `None` where serde-saphyr fails (non-finite floats are rejected by default).
pub(crate) fn resolve_plain(s: &str) -> Option<Plain> {
    let Some(&first) = s.as_bytes().first() else {
        return Some(Plain::Val(Value::Null));
    };
    match first {
        b'0'..=b'9' | b'+' | b'-' | b'.' => resolve_number(s),
        b'~' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'y' | b'Y' | b'o' | b'O' => {
            Some(match s {
                "~" | "null" | "Null" | "NULL" => Plain::Val(Value::Null),
                _ if ["true", "yes", "y", "on"]
                    .iter()
                    .any(|w| s.eq_ignore_ascii_case(w)) =>
                {
                    Plain::Val(Value::Bool(true))
                }
                _ if ["false", "no", "n", "off"]
                    .iter()
                    .any(|w| s.eq_ignore_ascii_case(w)) =>
                {
                    Plain::Val(Value::Bool(false))
                }
                _ => Plain::Str,
            })
        }
        _ => Some(Plain::Str),
    }
}

/// The numeric part of [`resolve_plain`], for scalars starting with a digit, sign or dot.
fn resolve_number(t: &str) -> Option<Plain> {
    let unsigned = t.strip_prefix(['+', '-']).unwrap_or(t);
    let ub = unsigned.as_bytes();
    // Upper-case radix prefixes and signed NaNs stay strings.
    if matches!(ub, [b'0', b'X' | b'O' | b'B', ..])
        || (unsigned.len() < t.len() && matches!(unsigned, ".nan" | ".NaN" | ".NAN"))
    {
        return Some(Plain::Str);
    }
    if let Some((negative, magnitude)) = parse_int(t) {
        if negative {
            if magnitude <= 1 << 63 {
                let v = (-(magnitude as i128)) as i64;
                return Some(Plain::Val(Value::from(v)));
            }
        } else if let Ok(v) = u64::try_from(magnitude) {
            return Some(Plain::Val(Value::from(v)));
        }
    }
    if matches!(
        unsigned,
        ".nan" | ".NaN" | ".NAN" | ".inf" | ".Inf" | ".INF"
    ) {
        return None;
    }
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() => Some(Plain::Val(Value::from(v))),
        // Numerals too large for f64 are rejected; `inf`, `nan` and the like stay strings.
        Ok(v) if v.is_infinite() && ub.first().is_some_and(u8::is_ascii_digit) => None,
        _ => Some(Plain::Str),
    }
}

/// Parses a YAML integer as serde-saphyr does with legacy octal numbers on: an optional
/// sign, then `0x`/`0o`/`0b` digits (either case, one `_` allowed right after the prefix),
/// a leading `0` for octal, or decimal digits; single `_` allowed between digits. Returns
/// the sign and the magnitude, `None` if it is no integer or exceeds u128.
fn parse_int(t: &str) -> Option<(bool, u128)> {
    let (negative, rest) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let rb = rest.as_bytes();
    let (radix, digits) = match rb {
        [b'0', b'x' | b'X', ..] => (16, &rb[2..]),
        [b'0', b'o' | b'O', ..] => (8, &rb[2..]),
        [b'0', b'b' | b'B', ..] => (2, &rb[2..]),
        [b'0'] => (8, rb),
        [b'0', ..] => (8, &rb[1..]),
        _ => (10, rb),
    };
    let digits = if radix == 10 {
        digits
    } else {
        digits.strip_prefix(b"_").unwrap_or(digits)
    };
    let mut value: u128 = 0;
    let mut seen = false;
    for (i, &c) in digits.iter().enumerate() {
        if c == b'_' {
            // Only between two digits.
            if i == 0 || digits[i - 1] == b'_' || matches!(digits.get(i + 1), None | Some(b'_')) {
                return None;
            }
            continue;
        }
        let d = u128::from(char::from(c).to_digit(radix)?);
        value = value.checked_mul(u128::from(radix))?.checked_add(d)?;
        seen = true;
    }
    seen.then_some((negative, value))
}
