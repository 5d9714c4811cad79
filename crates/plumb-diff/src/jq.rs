//! `ignoreDifferences.jqPathExpressions`: run `del(EXPR)` on a JSON document
//! the way Argo CD does with gojq, on top of the jaq crates.
//!
//! Argo CD pastes every user expression `EXPR` into the program `del(EXPR)`,
//! runs it on the object with a timeout (1 s by default) and demands exactly
//! one output. [`JqDelete`] does the same (compiled once, run per object), with
//! these deliberate refinements:
//!
//! * `del(f)` has jq's meaning, `delpaths([path(f)])`, with jq's `delpaths`
//!   (paths sorted, de-duplicated and deleted from the last to the first), so
//!   an expression that selects several paths deletes every one of them:
//!   `.a, .b`, `.spec.containers[] | .image, .name`, `.[0], .[2]`
//!   (argo-cd #24599). jaq's own `del` is `f |= empty`, which deletes array
//!   elements one after another and so shifts the indices still to delete.
//! * The timeout is enforced on the calling thread, without spawning threads:
//!   every filter definition (the standard library's and the user's own
//!   `def`s) and every output of `range` first passes through a native
//!   "tick" that checks the deadline and the stack depth. An unbounded jq
//!   computation needs recursion or `range`, so it is stopped at the first
//!   tick after the deadline (or when it nests too deep for the stack), and a
//!   runaway expression leaves nothing running.
//! * Numbers keep their kind: integers stay integers (also beyond `i64`/`u64`
//!   with serde_json's `arbitrary_precision`) and floats round-trip bit for
//!   bit.
//! * Runtime error messages never quote the document: objects, arrays and
//!   strings that jaq would print are replaced by `<object>`, `<array>` and
//!   `<string>` (strings that occur in the expression itself are kept).

use std::cell::Cell;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use jaq_core::box_iter::box_once;
use jaq_core::load::lex::{self, StrPart, Token};
use jaq_core::load::parse::{BinaryOp, Def, Pattern, TError, Term};
use jaq_core::load::{Arena, File, Lexer, Loader, Parser};
use jaq_core::native::{Fun, bome, v};
use jaq_core::path::Part;
use jaq_core::{Compiler, Ctx, DataT, Error, Exn, Native, RunPtr, Vars, data::HasLut};
use jaq_json::{Num, Rc, Val};
use plumb_core::duration::GoDuration;
use serde_json::Value;

/// Name of the native filter that checks the deadline and the stack depth.
const TICK: &str = "__plumb_tick";
/// Name under which jaq's native `range/3` is registered (wrapped by a tick).
const RANGE: &str = "__plumb_range";
/// Name of the native filter that stops an evaluation when a value it built is nested
/// deeper than [`MAX_NESTING`] (placed after every array and object construction).
const SHALLOW: &str = "__plumb_shallow";
/// Name of the native jq-compatible `delpaths/1`.
const DELPATHS: &str = "__plumb_delpaths";
/// Name of the definition that holds the user's program `del(EXPR)`.
const MAIN: &str = "__plumb_main";

/// Definitions placed before jaq's standard library: `range/3` must exist
/// before the library's `range/1` and `range/2` refer to it.
const EARLY_DEFS: &str =
    "def range($from; $upto; $by): __plumb_range($from; $upto; $by) | __plumb_tick;";

/// Definitions placed after jaq's standard library; they shadow jaq's `del`
/// and `delpaths` with jq's semantics.
const LATE_DEFS: &str =
    "def delpaths($paths): __plumb_delpaths($paths); def del(f): delpaths([path(f)]);";

/// How many ticks pass between two reads of the clock.
const TICKS_PER_CLOCK_READ: u32 = 32;

/// How much stack one evaluation may use, measured from [`JqDelete::apply`]
/// to the deepest tick, before it is stopped with an error instead of
/// overflowing the stack (which would abort the process).
const STACK_BUDGET: usize = 512 * 1024;

/// Deepest bracket nesting accepted in an expression (jaq's parser and
/// compiler recurse on it).
const MAX_EXPR_NESTING: usize = plumb_core::limits::MAX_JQ_EXPR_NESTING;

/// Deepest array/object nesting converted between serde_json and jaq values.
/// serde_json's own parser stops at 128; this keeps the recursive
/// conversions far from the end of the stack.
const MAX_NESTING: usize = plumb_core::limits::MAX_JQ_VALUE_NESTING;

/// Error from compiling or running a jq path expression.
///
/// Every variant carries the user's expression as written (without the
/// `del(...)` wrapper). `Display` is one line (line breaks in the expression
/// are shown as `\n`) and reuses Argo CD's wording where Argo CD has one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JqError {
    /// The expression does not lex, parse or compile (unknown filter or
    /// variable, unbalanced brackets, ...).
    #[error(
        "jq expression '{}': compile error: {}",
        quoted_expr(expr),
        one_line(message)
    )]
    Compile {
        /// The user's expression.
        expr: String,
        /// What is wrong with it.
        message: String,
    },
    /// Running `del(EXPR)` failed: `.a[]` with `.a` missing, a type error, a
    /// non-path expression, `error(...)`, `halt`, ... The document is left
    /// as it was; Argo CD skips the expression for this object.
    #[error(
        "jq expression '{}': runtime error: {}",
        quoted_expr(expr),
        one_line(message)
    )]
    Runtime {
        /// The user's expression.
        expr: String,
        /// jaq's message, with the document's objects, arrays and strings
        /// replaced by `<object>`, `<array>` and `<string>`.
        message: String,
    },
    /// Running `del(EXPR)` did not finish within the timeout.
    #[error(
        "jq expression '{}': JQ patch execution timed out ({})",
        quoted_expr(expr),
        GoDuration::from_std(*timeout)
    )]
    Timeout {
        /// The user's expression.
        expr: String,
        /// The timeout that was exceeded.
        timeout: Duration,
    },
    /// The evaluation built an array or object nested deeper than
    /// [`plumb_core::limits::MAX_JQ_VALUE_NESTING`] levels (an expression that builds
    /// `[[[…]]]` without end). Like a timeout, an error, not a skipped expression.
    #[error(
        "jq expression '{}': stopped: it built a value nested deeper than {} levels",
        quoted_expr(expr),
        MAX_NESTING
    )]
    TooDeep {
        /// The user's expression.
        expr: String,
    },
    /// `del(EXPR)` produced no output. Only possible with expressions that
    /// break out of the `del(...)` wrapper, such as `.a) | empty | (.b`.
    #[error(
        "jq expression '{}': JQ patch did not return any data",
        quoted_expr(expr)
    )]
    NoOutput {
        /// The user's expression.
        expr: String,
    },
    /// `del(EXPR)` produced more than one output. Only possible with
    /// expressions that break out of the `del(...)` wrapper, such as
    /// `.a), (.b`.
    #[error(
        "jq expression '{}': JQ patch returned multiple objects",
        quoted_expr(expr)
    )]
    MultipleOutputs {
        /// The user's expression.
        expr: String,
    },
}

/// A compiled `ignoreDifferences.jqPathExpressions` entry: the program
/// `del(EXPR)`, ready to be applied to any number of documents.
///
/// It is `Send + Sync`: compile it once and share it between threads (by
/// reference or behind an `Arc`). [`JqDelete::apply`] neither recompiles nor
/// spawns threads.
pub struct JqDelete {
    expr: String,
    filter: jaq_core::Filter<Plumb>,
}

impl fmt::Debug for JqDelete {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JqDelete")
            .field("expr", &self.expr)
            .finish_non_exhaustive()
    }
}

impl JqDelete {
    /// Compiles `del(EXPR)` for the jq expression `expr`.
    ///
    /// As in Argo CD, the expression is pasted into `del(` ... `)` as text, so
    /// expressions that close the parenthesis themselves (a trick used to
    /// rewrite embedded JSON) behave as they do in Argo CD. Lex, parse and
    /// unknown-name errors are [`JqError::Compile`].
    pub fn compile(expr: &str) -> Result<Self, JqError> {
        let compile_err = |message: String| JqError::Compile {
            expr: expr.to_owned(),
            message,
        };
        if bracket_depth(expr) > MAX_EXPR_NESTING {
            return Err(compile_err(format!(
                "brackets nested deeper than {MAX_EXPR_NESTING} levels"
            )));
        }
        let code = format!("del({expr})");
        let tokens = Lexer::new(code.as_str())
            .lex()
            .map_err(|errs| compile_err(lex_errors(&errs)))?;
        let mut main = Parser::new(&tokens)
            .parse(|p| p.term())
            .map_err(|errs| compile_err(parse_errors(&errs, &code)))?;
        instrument(&mut main);

        let library = jaq_core::defs()
            .chain(jaq_std::defs())
            .chain(jaq_json::defs());
        let early = parse_defs(EARLY_DEFS).map_err(compile_err)?;
        let late = parse_defs(LATE_DEFS).map_err(compile_err)?;
        // `Vec<Def<&'static str>>` coerces to `Vec<Def<&str>>` (covariance).
        let mut prelude: Vec<Def<&str>> = early.into_iter().chain(library).chain(late).collect();
        for def in &mut prelude {
            instrument(&mut def.body);
            add_tick(&mut def.body);
        }
        prelude.push(Def {
            name: MAIN,
            args: Vec::new(),
            body: main,
        });

        let arena = Arena::default();
        let modules = Loader::new(prelude)
            .load(
                &arena,
                File {
                    code: MAIN,
                    path: (),
                },
            )
            .map_err(|errs| compile_err(format!("cannot load the program: {errs:?}")))?;
        let filter = Compiler::default()
            .with_funs(natives())
            .compile(modules)
            .map_err(|errs| {
                let undefined: Vec<String> = errs
                    .iter()
                    .flat_map(|(_file, errs)| errs.iter())
                    .map(|(name, undef)| format!("undefined {} {name}", undef.as_str()))
                    .collect();
                compile_err(undefined.join("; "))
            })?;
        Ok(Self {
            expr: expr.to_owned(),
            filter,
        })
    }

    /// The user's expression, as given to [`JqDelete::compile`].
    pub fn expr(&self) -> &str {
        &self.expr
    }

    /// Runs `del(EXPR)` on `doc` and returns the result; `doc` itself is never
    /// modified.
    ///
    /// Errors: [`JqError::Runtime`] when jq fails (e.g. `.a[]` with `.a`
    /// missing: skip the expression for this object),
    /// [`JqError::Timeout`] when the run does not finish within `timeout`,
    /// and [`JqError::NoOutput`] / [`JqError::MultipleOutputs`] when the
    /// program does not produce exactly one value.
    pub fn apply(&self, doc: &Value, timeout: Duration) -> Result<Value, JqError> {
        let stack_marker = 0u8;
        let state = RunState {
            lut: &self.filter.lut,
            deadline: Instant::now().checked_add(timeout),
            ticks: Cell::new(0),
            stack_base: stack_addr(&stack_marker),
            abort: Cell::new(None),
        };
        let input = to_val(doc, 0).map_err(|message| self.runtime(message))?;
        // Shares the input's allocations, so that unchanged parts of the
        // result can be recognised and copied from `doc` (cheaper than
        // converting them back).
        let original = input.clone();
        // A panic inside jaq becomes an error for this expression instead of
        // tearing down the diff; nothing outlives the closure but `state`,
        // which is only read afterwards.
        let outcome = catch_unwind(AssertUnwindSafe(|| self.run(&state, input)))
            .unwrap_or_else(|_| Err(self.runtime("jq evaluation panicked")));
        match state.abort.get() {
            Some(Abort::Deadline) => return Err(self.timeout(timeout)),
            Some(Abort::Stack) => {
                return Err(self.runtime("recursion too deep (stack budget exhausted)"));
            }
            Some(Abort::Depth) => {
                return Err(JqError::TooDeep {
                    expr: self.expr.clone(),
                });
            }
            None => {}
        }
        if state.deadline.is_some_and(|d| Instant::now() > d) {
            return Err(self.timeout(timeout));
        }
        let out = outcome?;
        let json =
            from_val_shared(&out, &original, doc, 0).map_err(|message| self.runtime(message));
        drop_iteratively(out);
        json
    }

    /// Evaluates the program and checks that it yields exactly one value.
    fn run(&self, state: &RunState<'_>, input: Val) -> Result<Val, JqError> {
        let ctx = Ctx::<Plumb>::new(state, Vars::new([]));
        let mut outputs = self.filter.id.run((ctx, input));
        let first = match outputs.next() {
            None => {
                return Err(JqError::NoOutput {
                    expr: self.expr.clone(),
                });
            }
            Some(Err(exn)) => return Err(self.runtime(self.exception_message(exn))),
            Some(Ok(v)) => v,
        };
        if outputs.next().is_some() {
            drop_iteratively(first);
            return Err(JqError::MultipleOutputs {
                expr: self.expr.clone(),
            });
        }
        Ok(first)
    }

    /// Turns a jaq exception into a message without the document's values.
    fn exception_message(&self, exn: Exn<'_, Val>) -> String {
        match exn.get_err() {
            Ok(err) => redact(&err.to_string(), &self.expr),
            Err(exn) => match exn.get_halt() {
                Ok(code) => format!("halt with exit code {code}"),
                Err(_) => "unexpected jaq control-flow exception".to_owned(),
            },
        }
    }

    fn runtime(&self, message: impl Into<String>) -> JqError {
        JqError::Runtime {
            expr: self.expr.clone(),
            message: message.into(),
        }
    }

    fn timeout(&self, timeout: Duration) -> JqError {
        JqError::Timeout {
            expr: self.expr.clone(),
            timeout,
        }
    }
}

// ---------------------------------------------------------------------------
// Execution state and natives
// ---------------------------------------------------------------------------

/// jaq data kind: jaq-json values, with [`RunState`] as global data.
struct Plumb;

impl DataT for Plumb {
    type V<'a> = Val;
    type Data<'a> = &'a RunState<'a>;
}

/// Why a tick stopped an evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Abort {
    Deadline,
    Stack,
    /// A constructed value nested deeper than [`MAX_NESTING`]: stopped while it is still
    /// shallow enough to be dropped (jaq drops values recursively; a value built deeper
    /// until the deadline would overflow the stack when the evaluation is abandoned).
    Depth,
}

/// Per-call state, reachable from natives through the jaq context.
struct RunState<'a> {
    lut: &'a jaq_core::Lut<Plumb>,
    /// `None` when `now + timeout` overflows, i.e. no deadline.
    deadline: Option<Instant>,
    ticks: Cell<u32>,
    stack_base: usize,
    /// Sticky: once set, every later tick fails too, and `apply` reports it
    /// even if the expression caught the error (`try`, `?`).
    abort: Cell<Option<Abort>>,
}

impl<'a> HasLut<'a, Plumb> for &'a RunState<'a> {
    fn lut(&self) -> &'a jaq_core::Lut<Plumb> {
        self.lut
    }
}

impl RunState<'_> {
    /// Checks the stack depth, and the deadline every few calls.
    fn tick<'x>(&self) -> Result<(), Exn<'x, Val>> {
        if let Some(abort) = self.abort.get() {
            return Err(abort_exn(abort));
        }
        let marker = 0u8;
        if stack_addr(&marker).abs_diff(self.stack_base) > STACK_BUDGET {
            return Err(self.set_abort(Abort::Stack));
        }
        let ticks = self.ticks.get().wrapping_add(1);
        self.ticks.set(ticks);
        if ticks.is_multiple_of(TICKS_PER_CLOCK_READ)
            && self.deadline.is_some_and(|d| Instant::now() > d)
        {
            return Err(self.set_abort(Abort::Deadline));
        }
        Ok(())
    }

    /// Passes `v` on, or aborts the evaluation when it is nested deeper than [`MAX_NESTING`].
    fn shallow<'x>(&self, v: Val) -> Result<Val, Exn<'x, Val>> {
        if let Some(abort) = self.abort.get() {
            return Err(abort_exn(abort));
        }
        if nested_deeper_than(&v, MAX_NESTING) {
            return Err(self.set_abort(Abort::Depth));
        }
        Ok(v)
    }

    fn set_abort<'x>(&self, abort: Abort) -> Exn<'x, Val> {
        self.abort.set(Some(abort));
        abort_exn(abort)
    }
}

fn abort_exn<'x>(abort: Abort) -> Exn<'x, Val> {
    let msg = match abort {
        Abort::Deadline => "jq evaluation deadline exceeded",
        Abort::Stack => "jq evaluation exceeded its stack budget",
        Abort::Depth => "jq evaluation built a value nested too deep",
    };
    Exn::from(Error::str(msg))
}

/// Whether `v` has arrays or objects nested more than `max` levels (walked with a stack
/// of its own; stops at the first path past `max`).
fn nested_deeper_than(v: &Val, max: usize) -> bool {
    let mut stack = vec![(v, 0usize)];
    while let Some((v, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Val>> = match v {
            Val::Arr(a) => Box::new(a.iter()),
            Val::Obj(o) => Box::new(o.values()),
            _ => continue,
        };
        if depth >= max {
            return true;
        }
        stack.extend(children.map(|c| (c, depth + 1)));
    }
    false
}

/// Address of a stack variable, to measure stack depth (never dereferenced).
fn stack_addr(marker: &u8) -> usize {
    std::ptr::from_ref(marker) as usize
}

/// All native filters: jaq's (with `range/3` renamed) plus ours.
fn natives() -> Vec<Fun<Plumb>> {
    let mut funs: Vec<Fun<Plumb>> = jaq_core::funs()
        .chain(jaq_std::funs())
        .chain(jaq_json::funs())
        .map(|(name, args, native)| {
            let name = if name == "range" && args.len() == 3 {
                RANGE
            } else {
                name
            };
            (name, args, native)
        })
        .collect();
    let tick: RunPtr<Plumb> = |(ctx, v)| box_once(ctx.data().tick().map(|()| v));
    let delpaths_run: RunPtr<Plumb> = |mut cv| {
        let paths = cv.0.pop_var();
        bome(delpaths(cv.1, paths).map_err(Error::str))
    };
    funs.push((
        TICK,
        v(0),
        Native::<Plumb>::new(tick)
            .with_paths(|(ctx, vp)| box_once(ctx.data().tick().map(|()| vp)))
            .with_update(|(ctx, v), f| match ctx.data().tick() {
                Ok(()) => f(v),
                Err(e) => box_once(Err(e)),
            }),
    ));
    funs.push((DELPATHS, v(1), Native::<Plumb>::new(delpaths_run)));
    let shallow: RunPtr<Plumb> = |(ctx, v)| box_once(ctx.data().shallow(v));
    funs.push((SHALLOW, v(0), Native::<Plumb>::new(shallow)));
    funs
}

// ---------------------------------------------------------------------------
// Compilation helpers
// ---------------------------------------------------------------------------

fn parse_defs(code: &'static str) -> Result<Vec<Def<&'static str>>, String> {
    jaq_core::load::parse(code, |p| p.defs())
        .ok_or_else(|| format!("internal error: cannot parse built-in definitions {code:?}"))
}

/// Prefixes a definition body with a tick: `body` becomes `TICK | body`.
/// The body stays in tail position, so jaq's tail-call optimisation still
/// applies to recursive definitions.
fn add_tick(body: &mut Term<&str>) {
    let inner = std::mem::take(body);
    *body = Term::BinOp(
        Box::new(Term::Call(TICK, Vec::new())),
        BinaryOp::Pipe(None),
        Box::new(inner),
    );
}

/// Follows a constructed array or object with the depth check: `[f]` becomes
/// `[f] | SHALLOW`.
fn check_depth(term: &mut Term<&str>) {
    let inner = std::mem::take(term);
    *term = Term::BinOp(
        Box::new(inner),
        BinaryOp::Pipe(None),
        Box::new(Term::Call(SHALLOW, Vec::new())),
    );
}

/// Adds a tick to every local definition in the user's program, so that
/// user-defined recursion is bounded by the deadline as well.
fn instrument(term: &mut Term<&str>) {
    match term {
        Term::Id | Term::Recurse | Term::Num(_) | Term::Break(_) | Term::Var(_) => {}
        Term::Str(_format, parts) => {
            for part in parts {
                match part {
                    StrPart::Term(t) => instrument(t),
                    StrPart::Str(_) | StrPart::Char(_) => {}
                }
            }
        }
        Term::Arr(inner) => {
            if let Some(t) = inner {
                instrument(t);
            }
            check_depth(term);
        }
        Term::Obj(entries) => {
            for (k, v) in entries {
                instrument(k);
                if let Some(v) = v {
                    instrument(v);
                }
            }
            check_depth(term);
        }
        Term::Neg(t) | Term::Label(_, t) => instrument(t),
        Term::BinOp(l, op, r) => {
            instrument(l);
            if let BinaryOp::Pipe(Some(pattern)) = op {
                instrument_pattern(pattern);
            }
            instrument(r);
        }
        Term::Fold(_kind, xs, pattern, args) => {
            instrument(xs);
            instrument_pattern(pattern);
            for a in args {
                instrument(a);
            }
        }
        Term::TryCatch(t, catch) => {
            instrument(t);
            if let Some(c) = catch {
                instrument(c);
            }
        }
        Term::IfThenElse(branches, otherwise) => {
            for (cond, then) in branches {
                instrument(cond);
                instrument(then);
            }
            if let Some(e) = otherwise {
                instrument(e);
            }
        }
        Term::Def(defs, rest) => {
            for def in defs {
                instrument(&mut def.body);
                add_tick(&mut def.body);
            }
            instrument(rest);
        }
        Term::Call(_name, args) => {
            for a in args {
                instrument(a);
            }
        }
        Term::Path(head, path) => {
            instrument(head);
            for (part, _opt) in &mut path.0 {
                match part {
                    Part::Index(i) => instrument(i),
                    Part::Range(from, upto) => {
                        if let Some(f) = from {
                            instrument(f);
                        }
                        if let Some(u) = upto {
                            instrument(u);
                        }
                    }
                }
            }
        }
    }
}

fn instrument_pattern(pattern: &mut Pattern<&str>) {
    match pattern {
        Pattern::Var(_) => {}
        Pattern::Arr(items) => items.iter_mut().for_each(instrument_pattern),
        Pattern::Obj(entries) => {
            for (k, p) in entries {
                instrument(k);
                instrument_pattern(p);
            }
        }
    }
}

/// Deepest nesting of `(`, `[` and `{` in the expression (an upper bound:
/// brackets inside string literals count too).
fn bracket_depth(expr: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for c in expr.chars() {
        match c {
            '(' | '[' | '{' => {
                depth += 1;
                max = max.max(depth);
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

fn lex_errors(errs: &[lex::Error<&str>]) -> String {
    let msgs: Vec<String> = errs
        .iter()
        .map(|(expected, at)| format!("expected {} at {}", expected.as_str(), excerpt(at)))
        .collect();
    join_distinct(msgs)
}

/// Messages joined with `; `, each once (an unclosed `(((` is three identical errors).
fn join_distinct(msgs: Vec<String>) -> String {
    let mut seen = std::collections::HashSet::new();
    let distinct: Vec<String> = msgs
        .into_iter()
        .filter(|m| seen.insert(m.clone()))
        .collect();
    distinct.join("; ")
}

fn parse_errors(errs: &[TError<'_, &str>], code: &str) -> String {
    let msgs: Vec<String> = errs
        .iter()
        .map(|(expected, found)| {
            let found = excerpt(Token::opt_as_str(*found, code));
            format!("expected {}, found {found}", expected.as_str())
        })
        .collect();
    join_distinct(msgs)
}

/// A short quoted excerpt of the source at an error position.
fn excerpt(s: &str) -> String {
    if s.is_empty() {
        return "end of input".to_owned();
    }
    let mut out: String = s.chars().take(20).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    format!("'{out}'")
}

/// Replaces the JSON objects, arrays and strings that jaq quotes in its
/// messages by placeholders, so that messages never leak document contents
/// (Secrets!) into logs. Strings that appear in the expression are kept.
fn redact(message: &str, expr: &str) -> String {
    let mut out = String::with_capacity(message.len().min(256));
    let mut rest = message;
    while let Some(pos) = rest.find(['{', '[', '"']) {
        out.push_str(&rest[..pos]);
        let tail = &rest[pos..];
        let mut values = serde_json::Deserializer::from_str(tail).into_iter::<Value>();
        match values.next() {
            Some(Ok(value)) => {
                let len = values.byte_offset();
                out.push_str(match &value {
                    Value::Object(_) => "<object>",
                    Value::Array(_) => "<array>",
                    Value::String(s) if expr.contains(s.as_str()) => &tail[..len],
                    _ => "<string>",
                });
                rest = &tail[len..];
            }
            _ => {
                out.push_str(&tail[..1]);
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

// ---------------------------------------------------------------------------
// jq-compatible delpaths
// ---------------------------------------------------------------------------

/// jq's `delpaths`: validate, sort and de-duplicate the paths, then delete
/// them from the last to the first, so that deleting an array element never
/// shifts an index that is still to be deleted.
fn delpaths(v: Val, paths: Val) -> Result<Val, String> {
    let Val::Arr(paths) = paths else {
        return Err(format!(
            "delpaths needs an array of paths, got {}",
            type_name(&paths)
        ));
    };
    let mut paths: Vec<Val> = paths.iter().cloned().collect();
    if let Some(p) = paths.iter().find(|p| !matches!(p, Val::Arr(_))) {
        return Err(format!(
            "path must be specified as an array, got {}",
            type_name(p)
        ));
    }
    paths.sort();
    paths.dedup();
    let mut v = v;
    for path in paths.iter().rev() {
        if let Val::Arr(parts) = path {
            v = delpath(v, parts)?;
        }
    }
    Ok(v)
}

/// Deletes one path; missing keys, out-of-range indices and `null`s on the
/// way make it a no-op, as in jq.
fn delpath(v: Val, path: &[Val]) -> Result<Val, String> {
    let Some((key, rest)) = path.split_first() else {
        return Ok(Val::Null);
    };
    if rest.is_empty() {
        return delete_key(v, key);
    }
    match v {
        Val::Null => Ok(Val::Null),
        Val::Obj(mut map) => {
            if !is_str(key) {
                return Err(format!("cannot index object with {}", type_name(key)));
            }
            let child = match map.get(key) {
                None | Some(Val::Null) => return Ok(Val::Obj(map)),
                Some(child) => child.clone(),
            };
            let child = delpath(child, rest)?;
            Rc::make_mut(&mut map).insert(key.clone(), child);
            Ok(Val::Obj(map))
        }
        Val::Arr(mut arr) => {
            if let Val::Obj(_) = key {
                let (start, end) = slice_range(key, arr.len())?;
                let sub: Val = arr[start..end].iter().cloned().collect();
                let Val::Arr(new) = delpath(sub, rest)? else {
                    return Err("a slice must stay an array".to_owned());
                };
                Rc::make_mut(&mut arr).splice(start..end, new.iter().cloned());
                return Ok(Val::Arr(arr));
            }
            let Some(idx) = array_index(key, arr.len())? else {
                return Ok(Val::Arr(arr));
            };
            if matches!(arr[idx], Val::Null) {
                return Ok(Val::Arr(arr));
            }
            let child = delpath(arr[idx].clone(), rest)?;
            Rc::make_mut(&mut arr)[idx] = child;
            Ok(Val::Arr(arr))
        }
        other => Err(format!(
            "cannot index {} with {}",
            type_name(&other),
            type_name(key)
        )),
    }
}

/// Deletes the last component of a path.
fn delete_key(v: Val, key: &Val) -> Result<Val, String> {
    match v {
        Val::Null => Ok(Val::Null),
        Val::Obj(mut map) => {
            if !is_str(key) {
                return Err(format!(
                    "cannot delete field at object index of {}",
                    type_name(key)
                ));
            }
            if map.contains_key(key) {
                Rc::make_mut(&mut map).shift_remove(key);
            }
            Ok(Val::Obj(map))
        }
        Val::Arr(mut arr) => {
            if let Val::Obj(_) = key {
                let (start, end) = slice_range(key, arr.len())?;
                if start < end {
                    Rc::make_mut(&mut arr).drain(start..end);
                }
            } else if let Some(idx) = array_index(key, arr.len())? {
                Rc::make_mut(&mut arr).remove(idx);
            }
            Ok(Val::Arr(arr))
        }
        other => Err(format!(
            "cannot delete field at {} index of {}",
            type_name(key),
            type_name(&other)
        )),
    }
}

fn is_str(v: &Val) -> bool {
    matches!(v, Val::TStr(_) | Val::BStr(_))
}

/// Resolves an array index (negative counts from the end, fractions are
/// floored); `Ok(None)` when out of range.
fn array_index(key: &Val, len: usize) -> Result<Option<usize>, String> {
    let index = match key {
        Val::Num(n) => num_floor(n),
        _ => None,
    };
    let Some(i) = index else {
        return Err(format!("cannot index array with {}", type_name(key)));
    };
    let len = i128::try_from(len).unwrap_or(i128::MAX);
    let i = if i < 0 { i + len } else { i };
    Ok(if (0..len).contains(&i) {
        usize::try_from(i).ok()
    } else {
        None
    })
}

/// Resolves a slice path component `{"start": s, "end": e}` as jq does
/// (missing or `null` bounds are the array's ends, negatives count from the
/// end, everything is clamped).
fn slice_range(key: &Val, len: usize) -> Result<(usize, usize), String> {
    let Val::Obj(map) = key else {
        return Err("invalid slice".to_owned());
    };
    let ilen = i128::try_from(len).unwrap_or(i128::MAX);
    let bound = |name: &str, default: usize| -> Result<usize, String> {
        match map.get(&Val::from(name.to_owned())) {
            None | Some(Val::Null) => Ok(default),
            Some(Val::Num(n)) => {
                let i = num_floor(n).ok_or_else(|| "invalid slice".to_owned())?;
                let i = if i < 0 { i + ilen } else { i };
                Ok(usize::try_from(i.clamp(0, ilen)).unwrap_or(len))
            }
            Some(_) => Err("invalid slice".to_owned()),
        }
    };
    let start = bound("start", 0)?;
    let end = bound("end", len)?.max(start);
    Ok((start, end))
}

/// Floor of a jq number as a (saturating) integer; `None` for NaN.
fn num_floor(n: &Num) -> Option<i128> {
    let f = match n {
        Num::Int(i) => return i128::try_from(*i).ok(),
        Num::BigInt(b) => {
            let text = b.to_string();
            let saturated = if text.starts_with('-') {
                i128::MIN
            } else {
                i128::MAX
            };
            return Some(text.parse().unwrap_or(saturated));
        }
        Num::Float(f) => *f,
        Num::Dec(s) => s.parse::<f64>().ok()?,
    };
    if f.is_nan() {
        return None;
    }
    // `as` saturates, which is what huge or infinite floats need.
    #[allow(clippy::cast_possible_truncation)]
    Some(f.floor() as i128)
}

fn type_name(v: &Val) -> &'static str {
    match v {
        Val::Null => "null",
        Val::Bool(_) => "boolean",
        Val::Num(_) => "number",
        Val::BStr(_) | Val::TStr(_) => "string",
        Val::Arr(_) => "array",
        Val::Obj(_) => "object",
    }
}

// ---------------------------------------------------------------------------
// Conversions between serde_json and jaq values
// ---------------------------------------------------------------------------

fn to_val(v: &Value, depth: usize) -> Result<Val, String> {
    if depth > MAX_NESTING {
        return Err(format!("input is nested deeper than {MAX_NESTING} levels"));
    }
    Ok(match v {
        Value::Null => Val::Null,
        Value::Bool(b) => Val::Bool(*b),
        Value::Number(n) => Val::Num(number_to_num(n)),
        Value::String(s) => Val::from(s.clone()),
        Value::Array(items) => items
            .iter()
            .map(|x| to_val(x, depth + 1))
            .collect::<Result<Val, String>>()?,
        Value::Object(map) => {
            let mut out = jaq_json::Map::default();
            out.reserve(map.len());
            for (k, x) in map {
                out.insert(Val::from(k.clone()), to_val(x, depth + 1)?);
            }
            Val::obj(out)
        }
    })
}

fn number_to_num(n: &serde_json::Number) -> Num {
    if let Some(i) = n.as_i64() {
        return Num::from_integral(i);
    }
    if let Some(u) = n.as_u64() {
        return Num::from_integral(u);
    }
    // Only reachable for floats, or for integers beyond u64 when serde_json's
    // `arbitrary_precision` feature is on.
    let text = n.to_string();
    let digits = text.strip_prefix('-').unwrap_or(&text);
    if !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && let Some(num) = Num::from_str_radix(&text, 10)
    {
        return num;
    }
    Num::Float(n.as_f64().unwrap_or(f64::NAN))
}

fn from_val(v: &Val, depth: usize) -> Result<Value, String> {
    if depth > MAX_NESTING {
        return Err(format!("result is nested deeper than {MAX_NESTING} levels"));
    }
    Ok(match v {
        Val::Null => Value::Null,
        Val::Bool(b) => Value::Bool(*b),
        Val::Num(n) => num_to_value(n),
        Val::TStr(b) | Val::BStr(b) => Value::String(String::from_utf8_lossy(b).into_owned()),
        Val::Arr(items) => Value::Array(
            items
                .iter()
                .map(|x| from_val(x, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        Val::Obj(map) => {
            let mut out = serde_json::Map::new();
            for (k, x) in map.iter() {
                out.insert(key_string(k), from_val(x, depth + 1)?);
            }
            Value::Object(out)
        }
    })
}

/// Like [`from_val`], but copies from `json` every part of `out` that is
/// still the very allocation that [`to_val`] made for it (`original` is the
/// jaq value made from `json`).
fn from_val_shared(out: &Val, original: &Val, json: &Value, depth: usize) -> Result<Value, String> {
    if depth > MAX_NESTING {
        return Err(format!("result is nested deeper than {MAX_NESTING} levels"));
    }
    match (out, original, json) {
        (Val::Arr(a), Val::Arr(b), _) if Rc::ptr_eq(a, b) => Ok(json.clone()),
        (Val::Obj(a), Val::Obj(b), _) if Rc::ptr_eq(a, b) => Ok(json.clone()),
        (Val::Obj(a), Val::Obj(b), Value::Object(json_map)) => {
            let mut map = serde_json::Map::new();
            for (k, v) in a.iter() {
                let key = key_string(k);
                let value = match (b.get(k), json_map.get(&key)) {
                    (Some(orig), Some(orig_json)) => {
                        from_val_shared(v, orig, orig_json, depth + 1)?
                    }
                    _ => from_val(v, depth + 1)?,
                };
                map.insert(key, value);
            }
            Ok(Value::Object(map))
        }
        (Val::Arr(a), Val::Arr(b), Value::Array(json_items)) if json_items.len() == b.len() => {
            let mut items = Vec::with_capacity(a.len());
            if a.len() == b.len() {
                // Nothing deleted at this level: elements correspond by index.
                for ((v, orig), orig_json) in a.iter().zip(b.iter()).zip(json_items) {
                    items.push(from_val_shared(v, orig, orig_json, depth + 1)?);
                }
            } else {
                // Elements were deleted: find unchanged ones by allocation.
                let mut cursor = 0;
                for v in a.iter() {
                    let found = (cursor..b.len()).find(|&i| same_allocation(v, &b[i]));
                    match found {
                        Some(i) => {
                            cursor = i + 1;
                            items.push(json_items[i].clone());
                        }
                        None => items.push(from_val(v, depth + 1)?),
                    }
                }
            }
            Ok(Value::Array(items))
        }
        _ => from_val(out, depth),
    }
}

/// Whether two values are the same array or object allocation.
fn same_allocation(a: &Val, b: &Val) -> bool {
    match (a, b) {
        (Val::Arr(x), Val::Arr(y)) => Rc::ptr_eq(x, y),
        (Val::Obj(x), Val::Obj(y)) => Rc::ptr_eq(x, y),
        _ => false,
    }
}

fn key_string(k: &Val) -> String {
    match k {
        Val::TStr(b) | Val::BStr(b) => String::from_utf8_lossy(b).into_owned(),
        other => other.to_string(),
    }
}

fn num_to_value(n: &Num) -> Value {
    match n {
        Num::Int(i) => match i64::try_from(*i) {
            Ok(i) => Value::from(i),
            Err(_) => parse_number(&i.to_string()),
        },
        Num::BigInt(b) => parse_number(&b.to_string()),
        Num::Float(f) => float_to_value(*f),
        Num::Dec(s) => parse_number(s),
    }
}

/// Like jq: NaN becomes `null`, infinities the largest finite doubles.
fn float_to_value(f: f64) -> Value {
    let f = if f == f64::INFINITY {
        f64::MAX
    } else if f == f64::NEG_INFINITY {
        f64::MIN
    } else {
        f
    };
    serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
}

/// Parses a number's text, keeping integers exact where serde_json can.
fn parse_number(text: &str) -> Value {
    match serde_json::from_str::<serde_json::Number>(text) {
        Ok(n) => Value::Number(n),
        Err(_) => float_to_value(text.parse().unwrap_or(f64::NAN)),
    }
}

/// Drops a jaq value without recursion, so that a deeply nested result
/// cannot overflow the stack while it is freed.
fn drop_iteratively(v: Val) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Val::Arr(rc) => {
                if let Ok(items) = Rc::try_unwrap(rc) {
                    stack.extend(items);
                }
            }
            Val::Obj(rc) => {
                if let Ok(map) = Rc::try_unwrap(rc) {
                    stack.extend(map.into_values());
                }
            }
            _ => {}
        }
    }
}

// ---------------------------------------------------------------------------
// Display helpers
// ---------------------------------------------------------------------------

/// The user's expression for a message: on one line, cut to
/// [`plumb_core::limits::MAX_QUOTED_INPUT`] characters.
fn quoted_expr(s: &str) -> String {
    one_line(&plumb_core::limits::quoted(s))
}

/// Escapes backslashes and line breaks so that messages stay on one line.
fn one_line(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('\n', "\\n")
        .replace('\r', "\\r")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SECOND: Duration = Duration::from_secs(1);
    const SHORT: Duration = Duration::from_millis(200);

    fn del(expr: &str, doc: &Value) -> Result<Value, JqError> {
        JqDelete::compile(expr)?.apply(doc, SECOND)
    }

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "web",
                "labels": {"a": "1", "b": "2", "c": "3"},
                "annotations": {"customprefix.x": "1", "customprefix.y": "2", "keep": "3"}
            },
            "spec": {
                "replicas": 3,
                "sessionAffinity": "None",
                "template": {"spec": {
                    "initContainers": [
                        {"name": "init-container-0", "image": "busybox:1"},
                        {"name": "init-container-1", "image": "busybox:2"}
                    ],
                    "containers": [
                        {"name": "app", "image": "app:1", "ports": [{"containerPort": 8080}]},
                        {"name": "sidecar", "image": "proxy:2"}
                    ]
                }}
            }
        })
    }

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn jq_delete_and_error_are_send_and_sync() {
        assert_send_sync::<JqDelete>();
        assert_send_sync::<JqError>();
    }

    #[test]
    fn deletes_a_simple_field() {
        let doc = json!({"spec": {"sessionAffinity": "None", "type": "ClusterIP"}});
        let out = del(".spec.sessionAffinity", &doc).unwrap();
        assert_eq!(out, json!({"spec": {"type": "ClusterIP"}}));
    }

    #[test]
    fn deletes_field_in_every_array_element() {
        let doc = json!({"webhooks": [
            {"name": "a", "clientConfig": {"caBundle": "xx", "url": "u"}},
            {"name": "b", "clientConfig": {"caBundle": "yy"}},
            {"name": "c", "clientConfig": {}}
        ]});
        let out = del(".webhooks[]?.clientConfig.caBundle", &doc).unwrap();
        assert_eq!(
            out,
            json!({"webhooks": [
                {"name": "a", "clientConfig": {"url": "u"}},
                {"name": "b", "clientConfig": {}},
                {"name": "c", "clientConfig": {}}
            ]})
        );
        // `[]?` over a missing array selects nothing: unchanged, no error.
        let other = json!({"kind": "ConfigMap"});
        assert_eq!(
            del(".webhooks[]?.clientConfig.caBundle", &other).unwrap(),
            other
        );
    }

    #[test]
    fn deletes_selected_array_element() {
        let doc = deployment();
        let expr = r#".spec.template.spec.initContainers[] | select(.name == "init-container-0")"#;
        let out = del(expr, &doc).unwrap();
        let mut expected = doc.clone();
        expected["spec"]["template"]["spec"]["initContainers"] =
            json!([{"name": "init-container-1", "image": "busybox:2"}]);
        assert_eq!(out, expected);
    }

    #[test]
    fn missing_field_iteration_is_a_skippable_runtime_error() {
        let doc = deployment();
        let before = serde_json::to_string(&doc).unwrap();
        // jq (and gojq) fail here: `.spec.fakeField.foo` is null and null
        // cannot be iterated. Argo CD skips the expression for the object.
        let err = del(".spec.fakeField.foo[]", &doc).unwrap_err();
        assert!(matches!(err, JqError::Runtime { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "jq expression '.spec.fakeField.foo[]': runtime error: cannot use null as iterable (array or object)"
        );
        assert_eq!(serde_json::to_string(&doc).unwrap(), before);
        // With `?`, or without `[]`, nothing is selected: byte-identical.
        for expr in [".spec.fakeField.foo[]?", ".spec.fakeField.foo"] {
            let out = del(expr, &doc).unwrap();
            assert_eq!(serde_json::to_string(&out).unwrap(), before, "{expr}");
        }
    }

    #[test]
    fn looping_expressions_time_out() {
        let doc = deployment();
        for expr in [
            "until(true==false; .)",
            "def f: f; f",
            "select(last(range(1e18)) < 0) | .a",
            "last(range(1e15)) as $x | .data",
            "repeat(.)",
            "(until(true==false; .))?",
            ".a) | try until(false; .) catch . | (.b",
        ] {
            let jq = JqDelete::compile(expr).unwrap();
            let start = Instant::now();
            let err = jq.apply(&doc, SHORT).unwrap_err();
            let took = start.elapsed();
            assert!(
                matches!(&err, JqError::Timeout { timeout, .. } if *timeout == SHORT),
                "{expr}: {err:?}"
            );
            assert!(took >= SHORT && took < SHORT * 5, "{expr}: took {took:?}");
            assert_eq!(
                err.to_string(),
                format!("jq expression '{expr}': JQ patch execution timed out (200ms)")
            );
        }
    }

    #[test]
    fn timeout_message_matches_argo() {
        let err = JqDelete::compile("until(true==false; .)")
            .unwrap()
            .apply(&json!({}), SECOND)
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("JQ patch execution timed out (1s)"),
            "{err}"
        );
    }

    #[test]
    fn argo_timeout_example_fails_fast_with_invalid_path() {
        // gojq keeps evaluating `[.] + [1]` in path mode until the deadline;
        // jaq rejects the non-path expression at once. Either way the caller
        // gets an error and the object is left alone.
        let doc = deployment();
        let start = Instant::now();
        let err = del("until(true==false; [.] + [1])", &doc).unwrap_err();
        assert!(start.elapsed() < SECOND);
        assert_eq!(
            err.to_string(),
            "jq expression 'until(true==false; [.] + [1])': runtime error: invalid path expression with input <object>"
        );
    }

    #[test]
    fn runaway_recursion_is_stopped_before_the_stack_overflows() {
        let err = del("def f: 1 + f; select(f == 0)", &json!({})).unwrap_err();
        assert!(
            matches!(&err, JqError::Runtime { message, .. } if message.contains("recursion too deep")),
            "{err:?}"
        );
        let deep = format!("{}.a{}", "(".repeat(300), ")".repeat(300));
        let err = JqDelete::compile(&deep).unwrap_err();
        assert!(matches!(err, JqError::Compile { .. }), "{err:?}");
    }

    #[test]
    fn compile_errors() {
        for expr in [
            r#".metadata.annotations["foo"#,
            ".data[",
            ".a |",
            "nosuchfilter(1)",
            "$nope",
            "",
            ".a)",
        ] {
            let err = JqDelete::compile(expr).unwrap_err();
            assert!(matches!(err, JqError::Compile { .. }), "{expr}: {err:?}");
            let text = err.to_string();
            assert!(
                text.starts_with(&format!("jq expression '{expr}': compile error: ")),
                "{text}"
            );
            assert!(!text.contains('\n'), "{text}");
        }
        let err = JqDelete::compile("nosuchfilter(1)").unwrap_err();
        assert_eq!(
            err.to_string(),
            "jq expression 'nosuchfilter(1)': compile error: undefined filter nosuchfilter"
        );
    }

    #[test]
    fn multi_line_expression_errors_stay_on_one_line() {
        let err = JqDelete::compile(".a |\n  .b[").unwrap_err();
        let text = err.to_string();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains(r".a |\n  .b["), "{text}");
    }

    #[test]
    fn multi_path_expressions_delete_every_path() {
        let doc = deployment();
        let out = del(".metadata.labels.a, .metadata.labels.b", &doc).unwrap();
        assert_eq!(out["metadata"]["labels"], json!({"c": "3"}));

        let out = del(".spec.template.spec.containers[] | .image, .name", &doc).unwrap();
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"],
            json!([{"ports": [{"containerPort": 8080}]}, {}])
        );

        // Indices refer to the original array (jq's delpaths), not to the
        // array left after the first deletion.
        assert_eq!(
            del(".[0], .[2]", &json!([0, 1, 2, 3])).unwrap(),
            json!([1, 3])
        );
        assert_eq!(
            del(".[] | select(. % 2 == 0)", &json!([0, 1, 2, 3, 4])).unwrap(),
            json!([1, 3])
        );
        // The same path twice deletes once; a path and its prefix.
        assert_eq!(del(".[1], .[1]", &json!([0, 1, 2])).unwrap(), json!([0, 2]));
        assert_eq!(
            del(".a.b, .a", &json!({"a": {"b": 1}, "c": 2})).unwrap(),
            json!({"c": 2})
        );

        // argo-cd #24599's expression yields keys, not paths: an error in jq
        // as well. Indexing with the selected keys turns them into paths.
        let out = del(
            r#".metadata.annotations? // {} | keys[] | select(. | startswith("customprefix."))"#,
            &doc,
        );
        assert!(
            matches!(&out, Err(JqError::Runtime { message, .. }) if message.contains("invalid path")),
            "{out:?}"
        );
        let out = del(
            r#".metadata.annotations | .[keys[] | select(startswith("customprefix."))]"#,
            &doc,
        )
        .unwrap();
        assert_eq!(out["metadata"]["annotations"], json!({"keep": "3"}));
    }

    #[test]
    fn unchanged_parts_are_copied_and_changed_parts_converted() {
        let doc = json!({
            "items": [{"a": 1}, {"b": [2.5, 3]}, {"x": 1, "y": 2}, {"d": null}, 7],
            "keep": {"deep": {"er": [1, {"z": "ü"}]}}
        });
        let out = del(".items[0], .items[2].x", &doc).unwrap();
        assert_eq!(
            out,
            json!({
                "items": [{"b": [2.5, 3]}, {"y": 2}, {"d": null}, 7],
                "keep": {"deep": {"er": [1, {"z": "ü"}]}}
            })
        );
        let out = del(".items[1].b[0], .keep.deep.er[1].z", &doc).unwrap();
        assert_eq!(out["items"][1], json!({"b": [3]}));
        assert_eq!(out["keep"], json!({"deep": {"er": [1, {}]}}));
        assert_eq!(out["items"][2], doc["items"][2]);
        assert_eq!(del("empty", &doc).unwrap(), doc);
    }

    #[test]
    fn slices_negative_indices_and_root() {
        assert_eq!(del(".[1:3]", &json!([0, 1, 2, 3])).unwrap(), json!([0, 3]));
        assert_eq!(del(".[2:]", &json!([0, 1, 2, 3])).unwrap(), json!([0, 1]));
        assert_eq!(del(".[-1]", &json!([0, 1, 2])).unwrap(), json!([0, 1]));
        assert_eq!(del(".[9]", &json!([0, 1])).unwrap(), json!([0, 1]));
        assert_eq!(del(".", &json!({"a": 1})).unwrap(), Value::Null);
        assert_eq!(del("empty", &json!({"a": 1})).unwrap(), json!({"a": 1}));
        let err = del(".a.b", &json!({"a": 5})).unwrap_err();
        assert!(matches!(err, JqError::Runtime { .. }), "{err:?}");
    }

    #[test]
    fn number_fidelity() {
        let doc: Value = serde_json::from_str(
            r#"{"replicas": 3, "neg": -7, "zero": 0, "big": 9007199254740993,
                "u64max": 18446744073709551615, "i64min": -9223372036854775808,
                "float": 0.1, "whole_float": 2.0, "exp": 1.5e300, "cpu": 0.25,
                "drop": 1, "list": [1, 2.5, 3]}"#,
        )
        .unwrap();
        let out = del(".drop", &doc).unwrap();
        let mut expected = doc.clone();
        expected.as_object_mut().unwrap().remove("drop");
        assert_eq!(out, expected);
        assert_eq!(out["replicas"].as_i64(), Some(3));
        assert!(out["replicas"].is_i64());
        assert_eq!(out["big"].as_u64(), Some(9_007_199_254_740_993));
        assert_eq!(out["u64max"].as_u64(), Some(u64::MAX));
        assert_eq!(out["i64min"].as_i64(), Some(i64::MIN));
        assert!(out["whole_float"].is_f64());
        let text = serde_json::to_string(&out).unwrap();
        assert_eq!(text, serde_json::to_string(&expected).unwrap());
        assert!(text.contains(r#""replicas":3,"#), "{text}");
        assert!(text.contains(r#""list":[1,2.5,3]"#), "{text}");
    }

    #[test]
    fn key_order_and_unicode_survive() {
        let doc = json!({"z": 1, "a": {"ü": "ß", "k\"ey": "v\nw"}, "m": null});
        let out = del(".m", &doc).unwrap();
        assert_eq!(out, json!({"z": 1, "a": {"ü": "ß", "k\"ey": "v\nw"}}));
    }

    #[test]
    fn reusable_across_documents_and_threads() {
        let jq = JqDelete::compile(".spec.replicas").unwrap();
        assert_eq!(jq.expr(), ".spec.replicas");
        for i in 0..200 {
            let doc = json!({"spec": {"replicas": i, "x": i}});
            assert_eq!(jq.apply(&doc, SECOND).unwrap(), json!({"spec": {"x": i}}));
        }
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..2)
                .map(|t| {
                    let jq = &jq;
                    s.spawn(move || jq.apply(&json!({"spec": {"replicas": t}}), SECOND))
                })
                .collect();
            for h in handles {
                assert_eq!(h.join().unwrap().unwrap(), json!({"spec": {}}));
            }
        });
    }

    #[test]
    fn output_count_errors() {
        let doc = json!({"a": 1, "b": 2});
        let err = del(".a), (.b", &doc).unwrap_err();
        assert!(matches!(err, JqError::MultipleOutputs { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "jq expression '.a), (.b': JQ patch returned multiple objects"
        );
        let err = del(".a) | empty | (.b", &doc).unwrap_err();
        assert!(matches!(err, JqError::NoOutput { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "jq expression '.a) | empty | (.b': JQ patch did not return any data"
        );
    }

    #[test]
    fn argo_style_injection_keeps_working() {
        // Argo CD pastes the expression into `del(...)` as text; users close
        // the parenthesis themselves to rewrite embedded JSON.
        let doc = json!({"data": {"config.yaml": "{\"auth\":\"secret\",\"x\":1}"}});
        let expr = r#".nothing) | .data["config.yaml"] |= (fromjson | del(.auth) | tojson"#;
        let out = del(expr, &doc).unwrap();
        assert_eq!(out, json!({"data": {"config.yaml": "{\"x\":1}"}}));
        let bad = json!({"data": {"config.yaml": "auth: hunter2"}});
        let err = del(expr, &bad).unwrap_err();
        assert!(matches!(err, JqError::Runtime { .. }), "{err:?}");
        // Updates through (ticked) library definitions.
        let out = del(".x) | .a |= map(. + 1) | (.", &json!({"a": [1, 2]})).unwrap();
        assert_eq!(out, json!({"a": [2, 3]}));
    }

    #[test]
    fn runtime_errors_do_not_quote_the_document() {
        let secret = json!({"kind": "Secret", "data": {"password": "aHVudGVyMg=="}});
        for expr in [".data.password[]", ".data | keys[]", ".data.password.x"] {
            let err = del(expr, &secret).unwrap_err();
            let text = err.to_string();
            assert!(matches!(err, JqError::Runtime { .. }), "{expr}: {err:?}");
            assert!(!text.contains("aHVudGVyMg"), "{text}");
        }
        // Strings from the expression itself stay readable.
        let err = del(r#".[] | error("custom failure")"#, &json!([1])).unwrap_err();
        assert!(err.to_string().contains("custom failure"), "{err}");
        assert_eq!(
            redact(r#"cannot index {"a":[1]} with "spec""#, ".spec"),
            r#"cannot index <object> with "spec""#
        );
        assert_eq!(
            redact(r#"cannot use "pw" as iterable, [1,"x"] {unclosed"#, ""),
            "cannot use <string> as iterable, <array> {unclosed"
        );
    }

    #[test]
    fn halt_and_error_are_runtime_errors() {
        let err = del(r#"error("boom")"#, &json!({})).unwrap_err();
        assert!(
            matches!(&err, JqError::Runtime { message, .. } if message.contains("boom")),
            "{err:?}"
        );
        let err = del(".x) | halt | (.y", &json!({})).unwrap_err();
        assert!(
            matches!(&err, JqError::Runtime { message, .. } if message.contains("halt")),
            "{err:?}"
        );
    }

    #[test]
    fn user_definitions_and_library_filters_work() {
        let doc = deployment();
        let out = del(
            r#"def named($n): .spec.template.spec.containers[] | select(.name == $n); named("sidecar")"#,
            &doc,
        )
        .unwrap();
        let containers = &out["spec"]["template"]["spec"]["containers"];
        assert_eq!(
            containers,
            &json!([{"name": "app", "image": "app:1", "ports": [{"containerPort": 8080}]}])
        );
        let out = del(r#"..|objects|select(has("image"))|.image"#, &doc).unwrap();
        assert!(!serde_json::to_string(&out).unwrap().contains("image"));
        let out = del(
            r#".spec.template.spec.containers[] | select(.name | test("^side"))"#,
            &doc,
        )
        .unwrap();
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"]
                .as_array()
                .map(Vec::len),
            Some(1)
        );
        let out = del(
            r#".metadata.labels | with_entries(select(.value == "2")) | keys[] as $k | $k"#,
            &doc,
        );
        assert!(matches!(out, Err(JqError::Runtime { .. })), "{out:?}");
        // The index expression sees the same input as `.metadata.labels`.
        let out = del(
            r#".metadata.labels[.metadata.labels | keys[] | select(. != "a")]"#,
            &doc,
        )
        .unwrap();
        assert_eq!(out["metadata"]["labels"], json!({"a": "1"}));
    }

    #[test]
    fn deep_documents_within_serde_limits_work() {
        let mut doc = json!({"x": 1, "y": 2});
        for _ in 0..120 {
            doc = json!({"x": 0, "n": doc});
        }
        let out = del(r#"..|select(type == "object")|.x"#, &doc).unwrap();
        assert!(!serde_json::to_string(&out).unwrap().contains("\"x\""));
        assert!(serde_json::to_string(&out).unwrap().contains("\"y\":2"));
    }

    #[test]
    fn too_deep_values_are_errors_not_crashes() {
        let mut deep = json!(1);
        for _ in 0..(MAX_NESTING + 10) {
            deep = json!([deep]);
        }
        let err = del(".x", &deep).unwrap_err();
        assert!(matches!(err, JqError::Runtime { .. }), "{err:?}");
        // A result nested far deeper than a recursive drop could handle. Built to the end
        // (a generous deadline: on a busy machine building it takes more than a second, and
        // this is about the finished value, not the deadline).
        let expr = ".x) | reduce range(200000) as $i (null; [.]) | (.";
        let err = JqDelete::compile(expr)
            .unwrap()
            .apply(&json!({}), Duration::from_secs(120))
            .unwrap_err();
        // Stopped when the value passes 512 levels, long before it would be finished: an
        // error (as Argo CD's timeout would be), not a skipped expression.
        assert!(matches!(&err, JqError::TooDeep { .. }), "{err:?}");
        assert!(err.to_string().contains("nested deeper than 512"), "{err}");
    }

    #[test]
    fn a_value_built_deeper_until_the_deadline_is_stopped_not_a_stack_overflow() {
        // Each of these built [[[…]]] until the deadline, and dropping the half-built value
        // when the deadline stopped the evaluation overflowed the stack (the process aborted).
        for expr in [
            ".data[reduce range(infinite) as $i (null; [.]) | tostring]",
            ".data[last(recurse([.])) | tostring]",
            ".data[reduce range(infinite) as $i (null; {a: .}) | tostring]",
            ".data[last(limit(100000; recurse([.]))) | tostring]",
        ] {
            let err = JqDelete::compile(expr)
                .unwrap()
                .apply(&json!({"data": {}}), Duration::from_secs(5))
                .unwrap_err();
            assert!(matches!(&err, JqError::TooDeep { .. }), "{expr}: {err:?}");
        }
    }

    #[test]
    fn construction_within_the_limit_still_works() {
        let out = JqDelete::compile(".a[[0, 1][0]]")
            .unwrap()
            .apply(&json!({"a": [1, 2]}), Duration::from_secs(5))
            .unwrap();
        assert_eq!(out, json!({"a": [2]}));
    }

    #[test]
    fn go_duration_format() {
        let f = |d: Duration| GoDuration::from_std(d).to_string();
        assert_eq!(f(Duration::ZERO), "0s");
        assert_eq!(f(Duration::from_secs(1)), "1s");
        assert_eq!(f(Duration::from_millis(1500)), "1.5s");
        assert_eq!(f(Duration::from_millis(500)), "500ms");
        assert_eq!(f(Duration::from_micros(1500)), "1.5ms");
        assert_eq!(f(Duration::from_nanos(1500)), "1.5µs");
        assert_eq!(f(Duration::from_nanos(15)), "15ns");
        assert_eq!(f(Duration::from_secs(120)), "2m0s");
        assert_eq!(f(Duration::from_secs(3723)), "1h2m3s");
    }
}
