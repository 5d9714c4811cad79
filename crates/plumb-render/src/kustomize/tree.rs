//! Reading YAML into the annotated tree (`plumb_core::tree`: a YAML value in which every
//! scalar carries the place, file, line and column, that set it): by `yaml_fast` (through
//! `TreeBuild`, with the locations serde-saphyr would report) when a stream is in its
//! subset, else with serde-saphyr's `Spanned` support. Line indexes are built eight bytes at
//! a time (`newlines`).

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};
use serde_saphyr::Spanned;
use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;

pub use plumb_core::tree::{Map, Node, Org, Scalar, Text, set};

/// Where a value starts: its own origin, or for a mapping or list (which carry none) the
/// earliest of what is in it; `None` for an empty one.
pub fn first_org(n: &Node) -> Option<Org> {
    match n {
        Node::Scalar(_, o) => Some(*o),
        Node::Map(m) => first_org_in(m),
        Node::Seq(s) => s
            .iter()
            .filter_map(first_org)
            .min_by_key(|o| (o.line, o.col)),
    }
}

/// Where a mapping (an entry of a kustomization's list) starts: [`first_org`].
pub fn first_org_in(m: &Map) -> Option<Org> {
    m.values()
        .filter_map(first_org)
        .min_by_key(|o| (o.line, o.col))
}

/// A node from JSON, every scalar with origin `org` (for tests).
#[cfg(test)]
pub fn node_from_json(v: &Value, org: Org) -> Node {
    match v {
        Value::Null => Node::Scalar(Scalar::Null, org),
        Value::Bool(b) => Node::Scalar(Scalar::Bool(*b), org),
        Value::Number(n) => Node::Scalar(Scalar::Num(n.clone()), org),
        Value::String(s) => Node::str(s.clone(), org),
        Value::Array(a) => Node::Seq(a.iter().map(|x| node_from_json(x, org)).collect()),
        Value::Object(m) => Node::Map(
            m.iter()
                .map(|(k, x)| (Text::from(k.as_str()), node_from_json(x, org)))
                .collect(),
        ),
    }
}

/// One YAML document: its root node and the line it starts on.
pub struct Doc {
    pub node: Node,
    pub line: u32,
}

/// A YAML syntax error with its position.
#[derive(Debug)]
pub struct ParseError {
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

thread_local! {
    /// The file index stamped on origins while a parse runs on this thread.
    static FILE: Cell<u32> = const { Cell::new(u32::MAX) };
    /// Line offset added to positions (for inline patches embedded in a kustomization).
    static LINE_OFFSET: Cell<u32> = const { Cell::new(0) };
    /// Column offset added to positions.
    static COL_OFFSET: Cell<u32> = const { Cell::new(0) };
    /// The text being parsed (to tell plain scalars from quoted ones).
    static SRC: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    /// Mapping keys must be strings ([`Dialect::KustomizeResource`]).
    static STRING_KEYS: Cell<bool> = const { Cell::new(false) };
}

/// How scalars are resolved: resources follow kustomize's YAML 1.2 reading (`yes` is a
/// string), kustomization files follow sigs.k8s.io/yaml's YAML 1.1 reading.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// A manifest (a directory source's file, a patch): a mapping key that is not a string
    /// (`1:`, `true:`, `null:`) is read as its text, as Argo CD's YAML-to-JSON reads it.
    Resource,
    /// A resource kustomize accumulates: such a key is an error, as kustomize fails on it
    /// (`json: unsupported type: map[interface {}]interface {}`).
    KustomizeResource,
    Kustomization,
}

impl Dialect {
    fn is_resource(self) -> bool {
        self != Dialect::Kustomization
    }
}

/// Parses a YAML stream into documents, stamping origins with `file`; positions are
/// shifted by `line_offset` lines (and `col_offset` columns) for embedded text.
pub fn parse_stream(
    text: &str,
    file: u32,
    line_offset: u32,
    col_offset: u32,
    dialect: Dialect,
) -> Result<Vec<Doc>, ParseError> {
    // The fast path takes text in its subset; it gives exactly what the general parser
    // gives, origins included (`tests/yaml_common` checks that both agree).
    let mut docs = match parse_stream_fast(text, file, line_offset, col_offset, dialect) {
        Some(docs) => docs,
        None => parse_stream_slow(text, file, line_offset, col_offset, dialect)?,
    };
    if !text.ends_with('\n')
        && let Some(last) = docs.last_mut()
    {
        clip_final_block_scalar(text, line_offset, col_offset, &mut last.node);
    }
    Ok(docs)
}

/// [`parse_stream`] through serde-saphyr.
fn parse_stream_slow(
    text: &str,
    file: u32,
    line_offset: u32,
    col_offset: u32,
    dialect: Dialect,
) -> Result<Vec<Doc>, ParseError> {
    FILE.with(|f| f.set(file));
    STRING_KEYS.with(|f| f.set(dialect == Dialect::KustomizeResource));
    LINE_OFFSET.with(|f| f.set(line_offset));
    COL_OFFSET.with(|f| f.set(col_offset));
    SRC.with(|s| {
        let mut s = s.borrow_mut();
        s.clear();
        if dialect.is_resource() {
            s.push_str(text);
        }
    });
    let mut options = if dialect.is_resource() {
        serde_saphyr::options! { legacy_octal_numbers: true, strict_booleans: true, alias_limits: crate::yaml_alias_limits(), emit_comments: false }
    } else {
        // kustomize reads a kustomization with Go's YAML v2 into a map: a repeated key
        // takes the last value.
        serde_saphyr::options! { legacy_octal_numbers: true, alias_limits: crate::yaml_alias_limits(), emit_comments: false, duplicate_keys: serde_saphyr::DuplicateKeyPolicy::LastWins }
    };
    // Manifest files legitimately hold thousands of documents; the source already caps
    // file sizes. Comments are not kept: with them on, the parser refuses more than 32
    // consecutive comment lines while looking ahead (kubebuilder's `config/default` has more).
    options.budget = None;
    let docs: Result<Vec<Option<Spanned<Raw>>>, _> =
        serde_saphyr::from_multiple_with_options(text, options);
    let docs = docs.map_err(|e| {
        let (line, column) = match e.location() {
            Some(l) => (
                Some(l.line() as usize + line_offset as usize),
                Some(l.column() as usize + col_offset as usize),
            ),
            None => (None, None),
        };
        ParseError {
            line,
            column,
            message: crate::yaml_reason(&e),
        }
    })?;
    Ok(docs
        .into_iter()
        .flatten()
        .filter(|d| !d.value.0.is_null())
        .map(|d| Doc {
            line: d.referenced.line() as u32 + line_offset,
            node: d.value.0,
        })
        .collect())
}

/// A block scalar (`|`, `>`, clip chomping) that ends the text without a final line
/// break has no final line break in kustomize's reading (Go's YAML), where the parser
/// underneath adds one: take it off again. The last scalar of the text is the one that
/// starts last.
fn clip_final_block_scalar(text: &str, line_offset: u32, col_offset: u32, node: &mut Node) {
    fn last<'a>(n: &'a mut Node, best: &mut Option<(u32, u32, &'a mut Text)>) {
        match n {
            Node::Scalar(Scalar::Str(s), o) => {
                if best
                    .as_ref()
                    .is_none_or(|(l, c, _)| (o.line, o.col) > (*l, *c))
                {
                    *best = Some((o.line, o.col, s));
                }
            }
            Node::Scalar(..) => {}
            Node::Seq(v) => v.iter_mut().for_each(|c| last(c, best)),
            Node::Map(m) => m.values_mut().for_each(|c| last(c, best)),
        }
    }
    let mut best = None;
    last(node, &mut best);
    let Some((line, col, s)) = best else {
        return;
    };
    if !s.ends_with('\n') {
        return;
    }
    // A block scalar's origin is its first content line; its header (`key: |`, `- >2`)
    // ends the line before.
    let lines: Vec<&str> = text.lines().collect();
    let Some(first) = line.checked_sub(line_offset + 1).map(|i| i as usize) else {
        return;
    };
    let Some(header_line) = first.checked_sub(1).and_then(|i| lines.get(i)) else {
        return;
    };
    let header_line = match header_line.find(" #") {
        Some(i) => &header_line[..i],
        None => header_line,
    };
    let header = header_line.split_whitespace().last().unwrap_or("");
    let clip = header.starts_with(['|', '>']) && header[1..].chars().all(|c| c.is_ascii_digit());
    // …and it runs to the end of the text: the last line is indented as its content (the
    // column offset of embedded text is the block's indentation in the kustomization).
    let indent = col.saturating_sub(col_offset).saturating_sub(1) as usize;
    let reaches_end = lines.last().is_some_and(|l| {
        l.trim().is_empty() || l.len() - l.trim_start_matches(' ').len() >= indent
    }) && lines.len() > first;
    if clip && reaches_end {
        s.pop();
    }
}

/// [`parse_stream`] of a resource stream through `yaml_fast`: documents split at `---`
/// lines, each parsed into nodes with origins, on every core when they are many (a base of
/// one large file, such as a project's `install.yaml`, is then not read on one core while
/// the others wait). `None` as soon as one document is outside the fast path's subset (the
/// whole stream then goes to serde-saphyr, which also gives the errors).
fn parse_stream_fast(
    text: &str,
    file: u32,
    line_offset: u32,
    col_offset: u32,
    dialect: Dialect,
) -> Option<Vec<Doc>> {
    let bytes = text.as_bytes();
    let mut lines = Vec::with_capacity(bytes.len() / 24 + 1);
    lines.push(0);
    newlines(bytes, |i| lines.push(i + 1));
    // Each document's bytes: from after a `---` line (or the start) to the next `---` line
    // (or the end).
    let mut ranges = Vec::new();
    let mut start = 0;
    for (li, &ls) in lines.iter().enumerate() {
        let end = lines.get(li + 1).map_or(bytes.len(), |&n| n - 1);
        let last = li + 1 == lines.len();
        let separator = &bytes[ls..end] == b"---";
        if !separator && !last {
            continue;
        }
        if last && !separator {
            ranges.push((start, bytes.len()));
        } else {
            ranges.push((start, ls));
            start = (end + 1).min(bytes.len());
        }
    }
    let lines = &lines[..];
    plumb_core::parallel::try_filter_map_with(
        &ranges,
        Vec::new,
        |spare: &mut Vec<Vec<(Text, Node)>>, &(start, end)| {
            let doc = &text[start..end];
            if !crate::yaml_fast::plain_text(doc) {
                return None;
            }
            let build = TreeBuild {
                text,
                resource: dialect.is_resource(),
                string_keys: dialect == Dialect::KustomizeResource,
                base: start,
                lines,
                line_hint: Cell::new(0),
                file,
                line_offset,
                col_offset,
                spare: std::mem::take(spare),
            };
            let (root, build) = crate::yaml_fast::parse_with(doc, build)?;
            let doc = match root {
                Some((node, at)) if !node.is_null() => {
                    if matches!(node, Node::Scalar(..)) {
                        // serde-saphyr gives a scalar root no origin; such a stream is no
                        // manifest.
                        return None;
                    }
                    Some(Doc {
                        line: build.org(at)?.line,
                        node,
                    })
                }
                _ => None,
            };
            *spare = build.spare;
            Some(doc)
        },
    )
}

/// Calls `f` with the offset of every line feed of `b`, in order. Eight bytes are tested at
/// once (lines of YAML run to dozens of bytes, most of them indentation).
pub fn newlines(b: &[u8], mut f: impl FnMut(usize)) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut chunks = b.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut chunks {
        let w =
            u64::from_le_bytes(chunk.try_into().unwrap_or_default()) ^ (ONES * u64::from(b'\n'));
        // Some byte of `w` is zero (a line feed in the chunk): look at each.
        if w.wrapping_sub(ONES) & !w & HIGH != 0 {
            for (j, &c) in chunk.iter().enumerate() {
                if c == b'\n' {
                    f(at + j);
                }
            }
        }
        at += 8;
    }
    for (j, &c) in chunks.remainder().iter().enumerate() {
        if c == b'\n' {
            f(at + j);
        }
    }
}

/// Builds [`Node`]s for `yaml_fast`, the origins as serde-saphyr reports them.
struct TreeBuild<'t> {
    /// The whole stream.
    text: &'t str,
    /// Resource dialect: YAML 1.2 booleans, plain timestamps in Go's form; else YAML 1.1
    /// booleans and timestamps as written (as `parse_stream_slow` reads kustomizations).
    resource: bool,
    /// Only string keys (a plain key read as anything else goes to `parse_stream_slow`,
    /// which says where it is).
    string_keys: bool,
    /// Where the document being parsed starts in the stream.
    base: usize,
    /// Byte offsets of the stream's line starts.
    lines: &'t [usize],
    /// The line of the last origin asked for: scalars come mostly in text order, so the
    /// next one is usually on that line or a few lines below.
    line_hint: Cell<usize>,
    file: u32,
    line_offset: u32,
    col_offset: u32,
    /// Emptied entry vectors to build the next mappings in: each finished mapping is copied
    /// into a vector of its exact size, and its builder comes back here (no growth by
    /// doubling, no spare capacity kept in the tree).
    spare: Vec<Vec<(Text, Node)>>,
}

impl TreeBuild<'_> {
    /// The origin of the document's byte `at` (1-based line, column in characters).
    fn org(&self, at: usize) -> Option<Org> {
        let abs = self.base.checked_add(at)?;
        let starts_line = |i: usize| self.lines.get(i).is_some_and(|&s| s <= abs);
        let mut li = self.line_hint.get();
        if starts_line(li) {
            let stop = li + 8;
            while li < stop && starts_line(li + 1) {
                li += 1;
            }
        }
        if !starts_line(li) || starts_line(li + 1) {
            li = self.lines.partition_point(|&s| s <= abs).checked_sub(1)?;
        }
        self.line_hint.set(li);
        let seg = self.text.get(self.lines[li]..abs)?;
        let col = if seg.is_ascii() {
            seg.len()
        } else {
            seg.chars().count()
        };
        Some(Org {
            file: self.file,
            line: u32::try_from(li + 1).ok()? + self.line_offset,
            col: u32::try_from(col + 1).ok()? + self.col_offset,
        })
    }

    /// A string at byte `at`, read as a Go timestamp when it looks like one and its first
    /// character is a digit (as [`Raw::stamp`] does).
    fn string_at(&self, s: Text, at: usize) -> Text {
        let digit = self.resource
            && self
                .text
                .as_bytes()
                .get(self.base + at)
                .is_some_and(u8::is_ascii_digit);
        if digit && looks_like_timestamp(&s) {
            go_timestamp(&s).map_or(s, Text::from)
        } else {
            s
        }
    }
}

impl crate::yaml_fast::Build for TreeBuild<'_> {
    type Node = Node;
    type Map = Vec<(Text, Node)>;

    fn plain(&mut self, text: &str, at: usize) -> Option<Node> {
        use crate::yaml_fast::{Plain, resolve_plain};
        let org = self.org(at)?;
        let scalar = match resolve_plain(text)? {
            Plain::Str => Scalar::Str(self.string_at(Text::from(text), at)),
            Plain::Val(Value::Null) => Scalar::Null,
            // Resources read booleans as YAML 1.2 does (`yes` is a string).
            Plain::Val(Value::Bool(b)) => {
                if !self.resource
                    || matches!(text, "true" | "True" | "TRUE" | "false" | "False" | "FALSE")
                {
                    Scalar::Bool(b)
                } else {
                    Scalar::Str(Text::from(text))
                }
            }
            Plain::Val(Value::Number(n)) => Scalar::Num(n),
            Plain::Val(_) => return None,
        };
        Some(Node::Scalar(scalar, org))
    }

    fn string(&mut self, s: String, at: usize) -> Option<Node> {
        let org = self.org(at)?;
        Some(Node::Scalar(
            Scalar::Str(self.string_at(Text::from(s), at)),
            org,
        ))
    }

    fn null(&mut self, at: usize) -> Option<Node> {
        Some(Node::Scalar(Scalar::Null, self.org(at)?))
    }

    fn plain_key(&self, key: &str) -> bool {
        // The key reaches `Key` as a string, or as an integer printed back the same.
        use crate::yaml_fast::{Plain, resolve_plain};
        match resolve_plain(key) {
            Some(Plain::Str) => true,
            Some(Plain::Val(Value::Number(n))) => {
                !self.string_keys && n.is_u64() && n.to_string() == key
            }
            _ => false,
        }
    }

    fn seq(&mut self, items: Vec<Node>) -> Node {
        Node::Seq(items)
    }

    fn new_map(&mut self) -> Vec<(Text, Node)> {
        self.spare.pop().unwrap_or_default()
    }

    /// Entries are sorted once the mapping is complete (in any order, O(n log n)); a key
    /// written twice is found then, or here when it repeats the key before.
    fn insert(&mut self, map: &mut Vec<(Text, Node)>, key: Cow<'_, str>, value: Node) -> bool {
        if map.last().is_some_and(|(k, _)| *k == *key) {
            return false;
        }
        map.push((Text::from(key), value));
        true
    }

    fn map(&mut self, mut map: Vec<(Text, Node)>) -> Option<Node> {
        let mut exact = Vec::with_capacity(map.len());
        exact.append(&mut map);
        self.spare.push(map);
        match Map::from_entries(exact) {
            (m, false) => Some(Node::Map(m)),
            (_, true) => None,
        }
    }

    fn positions(&self) -> bool {
        true
    }
}

/// For the differential tests: the documents of a stream with their origins, read as
/// resources (`kustomization` false) or as a kustomization, from the fast path and from
/// serde-saphyr, as comparable text; `None` when the fast path declines (serde-saphyr is
/// then not run: it may overflow a test thread's stack).
#[doc(hidden)]
pub fn fast_and_slow(text: &str, kustomization: bool) -> Option<(String, Result<String, String>)> {
    let dialect = if kustomization {
        Dialect::Kustomization
    } else {
        Dialect::Resource
    };
    let show = |docs: Vec<Doc>| {
        docs.iter()
            .map(|d| format!("line {}: {:?}\n", d.line, d.node))
            .collect::<String>()
    };
    let fast = show(parse_stream_fast(text, 3, 0, 0, dialect)?);
    let slow = parse_stream_slow(text, 3, 0, 0, dialect)
        .map(show)
        .map_err(|e| e.message);
    Some((fast, slow))
}

fn org_of(loc: &serde_saphyr::Location) -> Org {
    Org {
        file: FILE.with(Cell::get),
        line: loc.line() as u32 + LINE_OFFSET.with(Cell::get),
        col: loc.column() as u32 + COL_OFFSET.with(Cell::get),
    }
}

/// A node as deserialized; scalars get their origin from the enclosing `Spanned`.
struct Raw(Node);

impl Raw {
    fn stamp(s: Spanned<Raw>) -> Node {
        match s.value.0 {
            Node::Scalar(Scalar::Str(v), _) if looks_like_timestamp(&v) => {
                let org = org_of(&s.referenced);
                let plain = s.referenced.span().byte_offset().is_some_and(|off| {
                    SRC.with(|src| {
                        src.borrow()
                            .as_bytes()
                            .get(off as usize)
                            .is_some_and(|c| c.is_ascii_digit())
                    })
                });
                match plain.then(|| go_timestamp(&v)).flatten() {
                    Some(t) => Node::Scalar(Scalar::Str(t.into()), org),
                    None => Node::Scalar(Scalar::Str(v), org),
                }
            }
            Node::Scalar(v, _) => Node::Scalar(v, org_of(&s.referenced)),
            other => other,
        }
    }
}

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Raw, D::Error> {
        d.deserialize_any(RawVisitor).map(Raw)
    }
}

struct RawVisitor;

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Scalar(Scalar::Null, Org::NONE))
    }

    fn visit_none<E: de::Error>(self) -> Result<Node, E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        d.deserialize_any(RawVisitor)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Scalar(Scalar::Bool(v), Org::NONE))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Scalar(Scalar::Num(v.into()), Org::NONE))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Scalar(Scalar::Num(v.into()), Org::NONE))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Node, E> {
        match i64::try_from(v) {
            Ok(i) => self.visit_i64(i),
            Err(_) => self.visit_f64(v as f64),
        }
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Node, E> {
        match u64::try_from(v) {
            Ok(i) => self.visit_u64(i),
            Err(_) => self.visit_f64(v as f64),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
        Ok(match Number::from_f64(v) {
            Some(n) => Node::Scalar(Scalar::Num(n), Org::NONE),
            // .inf / .nan have no JSON form; kustomize prints them as strings.
            None => Node::Scalar(Scalar::Str(format_special_float(v).into()), Org::NONE),
        })
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Scalar(Scalar::Str(v.into()), Org::NONE))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Node, E> {
        Ok(Node::Scalar(Scalar::Str(v.into()), Org::NONE))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Node, E> {
        Ok(Node::Scalar(
            Scalar::Str(String::from_utf8_lossy(v).into()),
            Org::NONE,
        ))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut out = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Raw>>()? {
            out.push(Raw::stamp(item));
        }
        Ok(Node::Seq(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut out = Vec::new();
        while let Some(key) = map.next_key::<Key>()? {
            let value = map.next_value::<Spanned<Raw>>()?;
            out.push((Text::from(key.0), Raw::stamp(value)));
        }
        Ok(Node::Map(Map::from_entries(out).0))
    }
}

pub fn looks_like_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 8 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-'
}

/// A plain YAML timestamp as kustomize prints it after its JSON round trip (Go's
/// RFC 3339 form of a `time.Time`); `None` when the text is not a timestamp.
fn go_timestamp(s: &str) -> Option<String> {
    let num = |t: &str, min: usize, max: usize| -> Option<u32> {
        (t.len() >= min && t.len() <= max && t.bytes().all(|c| c.is_ascii_digit()))
            .then(|| t.parse().ok())
            .flatten()
    };
    let (date, rest) = match s.find(['T', 't', ' ']) {
        Some(i) => (&s[..i], Some(s[i + 1..].trim_start())),
        None => (s, None),
    };
    let mut dp = date.split('-');
    let (y, mo, d) = (
        num(dp.next()?, 4, 4)?,
        num(dp.next()?, 1, 2)?,
        num(dp.next()?, 1, 2)?,
    );
    if dp.next().is_some() || !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
        return None;
    }
    let Some(rest) = rest else {
        return Some(format!("{y:04}-{mo:02}-{d:02}T00:00:00Z"));
    };
    // Time, optional fraction, optional zone (Z or ±hh:mm).
    let (time, zone) = match rest.find(['Z', 'z', '+', '-']) {
        Some(i) => (rest[..i].trim_end(), &rest[i..]),
        None => (rest.trim_end(), ""),
    };
    let (hms, frac) = match time.split_once('.') {
        Some((a, b)) => (a, b),
        None => (time, ""),
    };
    let mut tp = hms.split(':');
    let (h, mi, sec) = (
        num(tp.next()?, 1, 2)?,
        num(tp.next()?, 1, 2)?,
        num(tp.next()?, 1, 2)?,
    );
    if tp.next().is_some() || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    if !frac.is_empty() && (frac.len() > 9 || !frac.bytes().all(|c| c.is_ascii_digit())) {
        return None;
    }
    let frac = frac.trim_end_matches('0');
    let zone = match zone {
        "" | "Z" | "z" => "Z".to_string(),
        z => {
            let (sign, hm) = z.split_at(1);
            let (zh, zm) = hm.split_once(':').unwrap_or((hm, "00"));
            let (zh, zm) = (num(zh, 1, 2)?, num(zm, 2, 2)?);
            if zh == 0 && zm == 0 {
                "Z".to_string()
            } else {
                format!("{sign}{zh:02}:{zm:02}")
            }
        }
    };
    let frac = if frac.is_empty() {
        String::new()
    } else {
        format!(".{frac}")
    };
    Some(format!(
        "{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{sec:02}{frac}{zone}"
    ))
}

fn format_special_float(v: f64) -> String {
    if v.is_nan() {
        ".nan".into()
    } else if v > 0.0 {
        ".inf".into()
    } else {
        "-.inf".into()
    }
}

/// A mapping key: any scalar, as text.
struct Key(String);

/// A key read as something other than a string, as its text; an error where keys must be
/// strings ([`Dialect::KustomizeResource`]).
fn key_text<E: de::Error>(text: String) -> Result<String, E> {
    if STRING_KEYS.with(Cell::get) {
        return Err(E::custom(format!(
            "mapping key `{text}` is not a string: kustomize fails on it (json: unsupported type: map[interface {{}}]interface {{}}); quote it"
        )));
    }
    Ok(text)
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = String;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a scalar mapping key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
                Ok(v.to_string())
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<String, E> {
                Ok(v)
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<String, E> {
                key_text(v.to_string())
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
                key_text(v.to_string())
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
                key_text(v.to_string())
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
                key_text(v.to_string())
            }
            fn visit_unit<E: de::Error>(self) -> Result<String, E> {
                key_text("null".into())
            }
            fn visit_none<E: de::Error>(self) -> Result<String, E> {
                key_text("null".into())
            }
        }
        d.deserialize_any(KeyVisitor).map(Key)
    }
}

/// The plain scalar text written at `line`:`col` (1-based) of `src`, for kustomization
/// fields Go reads as strings although YAML resolves them as numbers (`newTag: 1.20`).
#[cfg(test)]
pub fn raw_scalar_at(src: &str, line: u32, col: u32) -> Option<String> {
    raw_scalar_in_line(src.lines().nth(line.checked_sub(1)? as usize)?, col)
}

/// The plain scalar text written at column `col` (1-based) of the line `l`.
pub fn raw_scalar_in_line(l: &str, col: u32) -> Option<String> {
    let start: usize = l
        .char_indices()
        .nth(col.checked_sub(1)? as usize)
        .map(|(i, _)| i)?;
    let rest = &l[start..];
    let mut end = rest.len();
    for (i, c) in rest.char_indices() {
        if matches!(c, ',' | ']' | '}') || (c == '#' && i > 0 && rest[..i].ends_with(' ')) {
            end = i;
            break;
        }
    }
    Some(rest[..end].trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_on_every_scalar() {
        let docs = parse_stream(
            "a: 1\nb:\n  - x\n  - {c: true}\n---\n---\nz: null\n",
            7,
            0,
            0,
            Dialect::Resource,
        )
        .unwrap();
        assert_eq!(docs.len(), 2);
        let d = &docs[0].node;
        assert_eq!(
            d.get("a").unwrap().org(),
            Some(Org {
                file: 7,
                line: 1,
                col: 4
            })
        );
        let b = d.get("b").unwrap().as_seq().unwrap();
        assert_eq!(b[0].org().unwrap().line, 3);
        assert_eq!(b[1].get("c").unwrap().org().unwrap().line, 4);
        assert_eq!(docs[1].line, 7);
        let mut origins = Vec::new();
        let v = d
            .clone()
            .into_json_with_origins(&mut |p, o| origins.push((p.to_string(), o)));
        assert_eq!(v["b"][1]["c"], Value::Bool(true));
        assert!(origins.iter().any(|(p, o)| p == "/b/1/c" && o.line == 4));
    }

    #[test]
    fn a_long_stream_is_read_document_by_document_on_every_core() {
        // Enough documents for the parallel path, with empty ones, comments, a `---` inside
        // a block scalar (not a separator) and a final separator.
        let mut text = String::from("# a stream\n");
        let mut objects = 0;
        for i in 0..300 {
            if i % 10 == 3 {
                text.push_str("---\n# nothing here\n");
                continue;
            }
            objects += 1;
            text.push_str(&format!(
                "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n  labels:\n    tier: \"{i}\"\ndata:\n  k: |\n    line {i}\n    ---\n  items: [a, {i}]\n"
            ));
        }
        text.push_str("---\n");
        for kustomization in [false, true] {
            let Some((fast, Ok(slow))) = fast_and_slow(&text, kustomization) else {
                panic!("the fast path refused the stream, or serde-saphyr failed");
            };
            assert_eq!(fast, slow);
            assert_eq!(
                fast.lines().filter(|l| l.starts_with("line ")).count(),
                objects
            );
        }
        let docs = parse_stream(&text, 1, 0, 0, Dialect::Resource).unwrap();
        assert_eq!(docs.len(), objects);
        assert_eq!(docs[0].line, 3);
        assert_eq!(docs[1].node.path_str(&["metadata", "name"]), Some("cm-1"));
        // One document outside the fast path's subset sends the whole stream to serde-saphyr.
        let odd = text.replacen("name: cm-250", "name: &n cm-250\n  x: *n", 1);
        assert!(fast_and_slow(&odd, false).is_none());
        let docs = parse_stream(&odd, 1, 0, 0, Dialect::Resource).unwrap();
        assert_eq!(docs.len(), objects);
    }

    #[test]
    fn resource_dialect_keeps_yes_a_string_and_reads_legacy_octal() {
        let docs = parse_stream("a: yes\nb: 0644\nc: 1.0\n", 0, 0, 0, Dialect::Resource).unwrap();
        let v = docs[0].node.to_json();
        assert_eq!(v, serde_json::json!({"a": "yes", "b": 420, "c": 1}));
    }

    #[test]
    fn kustomize_resources_refuse_keys_that_are_not_strings() {
        for (text, key) in [
            ("a:\n  500: x\n", "500"),
            ("a: {true: x}\n", "true"),
            ("a:\n  ~: x\n", "null"),
            ("a:\n  1.5: x\n", "1.5"),
        ] {
            let e = parse_stream(text, 0, 0, 0, Dialect::KustomizeResource)
                .err()
                .unwrap_or_else(|| panic!("{text:?} was read"));
            assert!(
                e.message.contains(&format!("key `{key}` is not a string")),
                "{}",
                e.message
            );
            // Where the key is (the flow mapping's on line 1).
            let line = if text.contains('{') { 1 } else { 2 };
            assert_eq!(e.line, Some(line), "{text:?}");
            // A manifest read as Argo CD reads it takes the key's text.
            let docs = parse_stream(text, 0, 0, 0, Dialect::Resource).expect("read");
            assert!(docs[0].node.path(&["a", key]).is_some(), "{text:?}");
        }
        // Strings, quoted or YAML 1.1 booleans: read alike.
        let docs = parse_stream(
            "a:\n  \"500\": x\n  yes: y\n",
            0,
            0,
            0,
            Dialect::KustomizeResource,
        )
        .expect("read");
        assert!(docs[0].node.path(&["a", "500"]).is_some());
        assert!(docs[0].node.path(&["a", "yes"]).is_some());
    }

    #[test]
    fn block_scalar_at_the_end_without_final_newline_has_none() {
        let v = |t: &str| {
            parse_stream(t, 0, 0, 0, Dialect::Resource).unwrap()[0]
                .node
                .to_json()
        };
        assert_eq!(v("a: |\n  x\n  y")["a"], "x\ny");
        assert_eq!(v("a: |\n  x\n  y\n")["a"], "x\ny\n");
        assert_eq!(v("b: |\n  x\na: >\n  y")["a"], "y");
        assert_eq!(v("b: |\n  x\na: >\n  y")["b"], "x\n");
        assert_eq!(v("a: |+\n  x")["a"], "x\n");
        assert_eq!(v("a: \"x\\n\"")["a"], "x\n");
        assert_eq!(v("a: |\n  x\nb: 1")["a"], "x\n");
        assert_eq!(v("a: |\n  x\nb: {}")["a"], "x\n");
        // Embedded text (an inline patch, 4 columns in, from line 10).
        let docs = parse_stream("- op: add\n  value: |\n    x", 0, 10, 4, Dialect::Resource);
        assert_eq!(docs.unwrap()[0].node.to_json()[0]["value"], "x");
        assert_eq!(
            v("l:\n- |2\n   x # not a comment")["l"][0],
            " x # not a comment"
        );
    }

    #[test]
    fn maps_behave_as_sorted_maps() {
        let n = |i: i64| Node::Scalar(Scalar::Num(i.into()), Org::NONE);
        let mut m = Map::new();
        let mut b = std::collections::BTreeMap::new();
        for (i, k) in ["b", "a", "d", "c", "a", "e", "", "aa"].iter().enumerate() {
            assert_eq!(
                m.insert(k.to_string(), n(i as i64)).is_some(),
                b.insert(k.to_string(), n(i as i64)).is_some()
            );
        }
        assert_eq!(format!("{m:?}"), format!("{b:?}"));
        assert!(m.iter().map(|(k, _)| k).eq(b.keys()));
        assert_eq!(m.len(), b.len());
        assert_eq!(m.get("a"), Some(&n(4)));
        assert!(m.contains_key("") && !m.contains_key("z"));
        assert_eq!(m.remove("d"), Some(n(2)));
        assert_eq!(m.remove("d"), None);
        *m.get_or_insert_with("z", || n(9)) = n(10);
        assert_eq!(m["z"], n(10));
        assert_eq!(*m.get_or_insert_with("z", || n(11)), n(10));
        let collected: Map = [(Text::from("x"), n(1)), (Text::from("x"), n(2))]
            .into_iter()
            .collect();
        assert_eq!(collected.len(), 1);
        assert_eq!(collected["x"], n(2));
        let entries = |ks: &[&str]| -> Vec<(Text, Node)> {
            ks.iter()
                .enumerate()
                .map(|(i, k)| (Text::from(*k), n(i as i64)))
                .collect()
        };
        let (m, dup) = Map::from_entries(entries(&["c", "a", "b", "a", "d", "a"]));
        assert!(dup);
        assert!(m.keys().eq(["a", "b", "c", "d"].iter()));
        assert_eq!(m["a"], n(5));
        let (m, dup) = Map::from_entries(entries(&["b", "a"]));
        assert!(!dup && m.keys().eq(["a", "b"].iter()));
    }

    #[test]
    fn line_feeds_found_eight_bytes_at_a_time() {
        for text in [
            "",
            "\n",
            "a\nb",
            "0123456\n",
            "01234567\n89\n\n",
            "é\n\u{a0}x\n",
        ] {
            let mut got = Vec::new();
            newlines(text.as_bytes(), |i| got.push(i));
            let want: Vec<usize> = text.match_indices('\n').map(|(i, _)| i).collect();
            assert_eq!(got, want, "{text:?}");
        }
        let long: String = (0..200)
            .map(|i| if i % 7 == 3 { '\n' } else { 'x' })
            .collect();
        let mut got = Vec::new();
        newlines(long.as_bytes(), |i| got.push(i));
        assert_eq!(got, (0..200).filter(|i| i % 7 == 3).collect::<Vec<_>>());
    }

    #[test]
    fn raw_scalar_text() {
        let src = "images:\n- name: x\n  newTag: 1.20 # c\nl: [1.0, 2]\n";
        assert_eq!(raw_scalar_at(src, 3, 11).as_deref(), Some("1.20"));
        assert_eq!(raw_scalar_at(src, 4, 5).as_deref(), Some("1.0"));
    }
}
