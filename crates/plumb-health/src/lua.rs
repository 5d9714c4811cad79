//! Argo CD's Lua health customizations, run unchanged by an embedded LuaJIT (`mlua`, vendored
//! and built with `make` and the C compiler; no system library, no cmake) with its compiler
//! turned off.
//!
//! Why LuaJIT: Argo CD runs its scripts on gopher-lua, which is Lua 5.1 plus `goto` and labels,
//! and Argo CD's own scripts use both (the 3scale and Gateway API checks); LuaJIT is Lua 5.1 plus
//! `goto`, with 5.1's library (`unpack`, `table.getn`, `loadstring`, `setfenv`, ...; Argo CD's
//! Rollout and CronJob checks call `table.getn`, which Lua 5.2 has not). Plain Lua 5.1 rejects
//! `goto`. The JIT compiler is off (`jit.off()` at load, then the `jit` library is removed):
//! compiled traces do not call the count hook the time limit relies on, and a health check
//! gains nothing from compiling. Every case of Argo CD's own health tests gives Argo CD's
//! status and message (`tests/argocd_lua.rs`). What still differs from gopher-lua: numbers print
//! with `%.14g` (`1/3` is `0.33333333333333`, `1e14` is `1e+14`; gopher-lua prints Go's
//! shortest form and integers in full); an unknown string escape (`"\d"`) is a syntax error
//! (gopher-lua reads `d`) and `\x41` is `A`; there is no `math.mod` (`math.fmod` is).
//!
//! Where scripts come from ([`Customizations`]):
//!
//! - an `argocd-cm` ConfigMap: `resource.customizations.health.<group>_<kind>` keys (a script
//!   each, with `resource.customizations.useOpenLibs.<group>_<kind>: "true"`), and the
//!   whole-map `resource.customizations` key (YAML: `<group>/<kind>: {health.lua: ...,
//!   health.lua.useOpenLibs: true}`). A core kind is keyed by its kind alone (`Pod`); group
//!   and kind may hold `*` wildcards (`*.crossplane.io/*`).
//! - a directory in Argo CD's layout, `<dir>/<group>/<kind>/health.lua`, where a group or kind
//!   directory named `_` is a wildcard and a name such as `_.crossplane.io` stands for
//!   `*.crossplane.io`. These scripts get the standard libraries.
//!
//! An exact `group/kind` key wins over wildcard keys; among wildcard keys, the one declared
//! first (ConfigMap before directory, then in key order) wins. The ConfigMap wins over the
//! directory for the same key.
//!
//! Interface, as in Argo CD: the live object is the global `obj` (JSON `null` reads as `nil`;
//! `metadata.managedFields` is left out);
//! the script returns a table `{status = "<Healthy|Progressing|Degraded|Suspended|Missing|Unknown>",
//! message = "..."}`. Standard libraries: `base`, `table` and a safe `os` (`time`, `date`,
//! `clock`) always (LuaJIT's base, as Lua 5.1's, includes `coroutine`); `string` and `math`
//! only with `useOpenLibs` (`io`, `debug`, `package`, `ffi`, `bit`, `jit` never: a health check
//! has no business with files, native code or the compiler). `load` and `loadstring` take
//! source text only: bytecode runs unverified, so crafted bytecode could reach past the sandbox
//! (gopher-lua has no bytecode at all).
//!
//! Limits: each call may run for [`LuaLimits::time`] (a count hook checks it every 1,000
//! interpreted instructions; with the compiler off, no compiled loop escapes it) and its state
//! may hold [`LuaLimits::memory`] bytes (mlua's allocator, which LuaJIT's 64-bit mode takes).
//! A syntax error, a runtime error, a limit hit
//! or a return that is not such a table gives Unknown with a message saying which script and
//! why; never a panic, and other objects are unaffected.
//!
//! Compiled scripts are kept per thread (a Lua state is not `Send`), one state per script.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mlua::{Function, HookTriggers, Lua, LuaOptions, StdLib, Table, VmState};
use serde_json::Value;

use crate::{Health, HealthStatus};

/// Where loading customizations failed.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The settings file is not a YAML ConfigMap, or a field has the wrong type.
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

/// Time and memory limits for one script call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LuaLimits {
    /// Wall-clock time per call.
    pub time: Duration,
    /// Bytes the script's Lua state may hold.
    pub memory: usize,
}

impl Default for LuaLimits {
    fn default() -> Self {
        LuaLimits {
            time: Duration::from_millis(500),
            memory: 32 << 20,
        }
    }
}

/// One user health script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LuaCheck {
    /// Group pattern (`""` for core; may contain `*`).
    pub group: String,
    /// Kind pattern (may contain `*`).
    pub kind: String,
    /// The Lua source.
    pub script: String,
    /// Argo CD's `useOpenLibs`: whether `string` and `math` are loaded.
    pub use_open_libs: bool,
    /// Where it came from, for messages (`argocd-cm resource.customizations.health.x_Y`, a path).
    pub origin: String,
}

impl LuaCheck {
    /// `group/kind`, as Argo CD keys it (the kind alone for the core group).
    pub fn key(&self) -> String {
        if self.group.is_empty() {
            self.kind.clone()
        } else {
            format!("{}/{}", self.group, self.kind)
        }
    }

    fn is_wildcard(&self) -> bool {
        self.group.contains('*') || self.kind.contains('*')
    }

    fn matches(&self, group: &str, kind: &str) -> bool {
        wildcard_match(&self.group, group) && wildcard_match(&self.kind, kind)
    }
}

/// `*` matches any run of characters (Argo CD's only wildcard in customization keys); all
/// other characters match themselves. Hand-written rather than `globset`: a glob crate would
/// give `/`, `?`, `[` meanings Argo CD's keys do not have.
fn wildcard_match(pattern: &str, text: &str) -> bool {
    let Some((first, rest)) = pattern.split_once('*') else {
        return pattern == text;
    };
    let Some(mut remaining) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = rest.split('*').collect();
    let (last, middle) = parts.split_last().unwrap_or((&"", &[]));
    for part in middle {
        match remaining.find(part) {
            Some(i) => remaining = &remaining[i + part.len()..],
            None => return false,
        }
    }
    remaining.len() >= last.len() && remaining.ends_with(last)
}

/// The user's health scripts, from an `argocd-cm` and/or a directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Customizations {
    checks: Vec<LuaCheck>,
}

/// Splits an Argo CD `<group>_<kind>` key at its last `_` (a kind has no `_`).
fn split_underscore_key(key: &str) -> (String, String) {
    match key.rsplit_once('_') {
        Some((group, kind)) => (group.to_owned(), kind.to_owned()),
        None => (String::new(), key.to_owned()),
    }
}

/// Splits a `<group>/<kind>` key (a kind alone is the core group).
fn split_slash_key(key: &str) -> (String, String) {
    match key.rsplit_once('/') {
        Some((group, kind)) => (group.to_owned(), kind.to_owned()),
        None => (String::new(), key.to_owned()),
    }
}

impl Customizations {
    /// No scripts.
    pub fn new() -> Self {
        Self::default()
    }

    /// The scripts, in precedence order.
    pub fn checks(&self) -> &[LuaCheck] {
        &self.checks
    }

    /// Whether there are no scripts.
    pub fn is_empty(&self) -> bool {
        self.checks.is_empty()
    }

    /// Adds a script; an earlier one with the same key keeps precedence.
    pub fn push(&mut self, check: LuaCheck) {
        if !self
            .checks
            .iter()
            .any(|c| c.group == check.group && c.kind == check.kind)
        {
            self.checks.push(check);
        }
    }

    /// Adds every script of `other` after this one's.
    pub fn extend(&mut self, other: Customizations) {
        for c in other.checks {
            self.push(c);
        }
    }

    /// The scripts of an `argocd-cm` ConfigMap given as YAML text (`path` names it in errors).
    pub fn from_settings_yaml(text: &str, path: &str) -> Result<Self, LoadError> {
        let invalid = |message: String| LoadError::Invalid {
            path: path.to_owned(),
            message,
        };
        let cm: Value = serde_saphyr::from_str(text).map_err(|e| invalid(e.to_string()))?;
        Self::from_configmap(&cm, path)
    }

    /// The scripts of an `argocd-cm` ConfigMap object (as read from a cluster; `path` names it
    /// in errors).
    pub fn from_configmap(cm: &Value, path: &str) -> Result<Self, LoadError> {
        let invalid = |message: String| LoadError::Invalid {
            path: path.to_owned(),
            message,
        };
        let empty = serde_json::Map::new();
        let data = match cm.get("data") {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(m)) => m,
            Some(_) => return Err(invalid("data: not a map".into())),
        };
        let as_str = |key: &str, v: &Value| -> Result<String, LoadError> {
            v.as_str()
                .map(str::to_owned)
                .ok_or_else(|| invalid(format!("data.{key}: not a string")))
        };
        let mut out = Customizations::new();
        const HEALTH: &str = "resource.customizations.health.";
        const OPEN_LIBS: &str = "resource.customizations.useOpenLibs.";
        let mut keys: Vec<&String> = data.keys().collect();
        keys.sort();
        for key in keys {
            let Some(gk) = key.strip_prefix(HEALTH) else {
                continue;
            };
            let script = as_str(key, &data[key.as_str()])?;
            let use_open_libs = data
                .get(&format!("{OPEN_LIBS}{gk}"))
                .and_then(Value::as_str)
                .is_some_and(|v| v.trim() == "true");
            let (group, kind) = split_underscore_key(gk);
            out.push(LuaCheck {
                group,
                kind,
                script,
                use_open_libs,
                origin: format!("{path}: data.{key}"),
            });
        }
        if let Some(whole) = data.get("resource.customizations") {
            let text = as_str("resource.customizations", whole)?;
            let map: Value = serde_saphyr::from_str(&text)
                .map_err(|e| invalid(format!("data.resource.customizations: {e}")))?;
            let Some(map) = map.as_object() else {
                return Err(invalid("data.resource.customizations: not a map".into()));
            };
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for key in keys {
                let entry = &map[key.as_str()];
                let Some(script) = entry.get("health.lua") else {
                    continue;
                };
                let script = script.as_str().ok_or_else(|| {
                    invalid(format!(
                        "data.resource.customizations: {key}.health.lua: not a string"
                    ))
                })?;
                let use_open_libs = match entry.get("health.lua.useOpenLibs") {
                    Some(Value::Bool(b)) => *b,
                    Some(Value::String(s)) => s.trim() == "true",
                    _ => false,
                };
                let (group, kind) = split_slash_key(key);
                out.push(LuaCheck {
                    group,
                    kind,
                    script: script.to_owned(),
                    use_open_libs,
                    origin: format!("{path}: data.resource.customizations {key}"),
                });
            }
        }
        Ok(out)
    }

    /// The scripts of an `argocd-cm` file.
    pub fn from_settings_file(path: &Path) -> Result<Self, LoadError> {
        let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::from_settings_yaml(&text, &path.display().to_string())
    }

    /// The `health.lua` scripts of a directory in Argo CD's `resource_customizations` layout.
    pub fn from_dir(dir: &Path) -> Result<Self, LoadError> {
        let read_dir = |p: &Path| -> Result<Vec<PathBuf>, LoadError> {
            let mut entries = Vec::new();
            let rd = std::fs::read_dir(p).map_err(|source| LoadError::Read {
                path: p.to_owned(),
                source,
            })?;
            for e in rd {
                let e = e.map_err(|source| LoadError::Read {
                    path: p.to_owned(),
                    source,
                })?;
                if e.path().is_dir() {
                    entries.push(e.path());
                }
            }
            entries.sort();
            Ok(entries)
        };
        let pattern = |name: &str| -> String {
            if name == "_" {
                "*".to_owned()
            } else if let Some(rest) = name.strip_prefix('_') {
                format!("*{rest}")
            } else {
                name.to_owned()
            }
        };
        let mut exact = Vec::new();
        let mut wild = Vec::new();
        for group_dir in read_dir(dir)? {
            for kind_dir in read_dir(&group_dir)? {
                let file = kind_dir.join("health.lua");
                if !file.is_file() {
                    continue;
                }
                let script = std::fs::read_to_string(&file).map_err(|source| LoadError::Read {
                    path: file.clone(),
                    source,
                })?;
                let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
                let check = LuaCheck {
                    group: pattern(&name(&group_dir).unwrap_or_default()),
                    kind: pattern(&name(&kind_dir).unwrap_or_default()),
                    script,
                    use_open_libs: true,
                    origin: file.display().to_string(),
                };
                if check.is_wildcard() {
                    wild.push(check);
                } else {
                    exact.push(check);
                }
            }
        }
        let mut out = Customizations::new();
        for c in exact.into_iter().chain(wild) {
            out.push(c);
        }
        Ok(out)
    }

    /// The script for `group`/`kind`: an exact key first, then the first matching wildcard.
    pub fn find(&self, group: &str, kind: &str) -> Option<(usize, &LuaCheck)> {
        self.checks
            .iter()
            .enumerate()
            .find(|(_, c)| !c.is_wildcard() && c.group == group && c.kind == kind)
            .or_else(|| {
                self.checks
                    .iter()
                    .enumerate()
                    .find(|(_, c)| c.is_wildcard() && c.matches(group, kind))
            })
    }
}

/// A compiled script in its own Lua state, with the deadline its hook reads.
struct Vm {
    lua: Lua,
    func: Function,
    deadline: Rc<Cell<Instant>>,
}

/// Identifies one [`LuaRunner`]'s scripts in the per-thread cache.
static NEXT_RUNNER: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static VMS: RefCell<HashMap<(u64, usize), Rc<Vm>>> = RefCell::new(HashMap::new());
}

/// Runs [`Customizations`] under [`LuaLimits`]. `Send + Sync`: the Lua states live per thread.
#[derive(Debug)]
pub struct LuaRunner {
    id: u64,
    custom: Customizations,
    limits: LuaLimits,
}

impl LuaRunner {
    /// A runner for these scripts.
    pub fn new(custom: Customizations, limits: LuaLimits) -> Self {
        LuaRunner {
            id: NEXT_RUNNER.fetch_add(1, Ordering::Relaxed),
            custom,
            limits,
        }
    }

    /// The scripts.
    pub fn customizations(&self) -> &Customizations {
        &self.custom
    }

    /// The health the user's script for this group/kind gives `obj`; `None` without a script.
    pub fn health(&self, obj: &Value, group: &str, kind: &str) -> Option<Health> {
        let (index, check) = self.custom.find(group, kind)?;
        let vm = VMS.with(|vms| -> Result<Rc<Vm>, String> {
            if let Some(vm) = vms.borrow().get(&(self.id, index)) {
                return Ok(vm.clone());
            }
            let vm = Rc::new(compile(check, self.limits)?);
            vms.borrow_mut().insert((self.id, index), vm.clone());
            Ok(vm)
        });
        let result = vm.and_then(|vm| {
            let r = call(&vm, obj, self.limits);
            if r.is_err() {
                // A state that hit a limit or failed may be left in a poor shape: start fresh.
                VMS.with(|vms| vms.borrow_mut().remove(&(self.id, index)));
            }
            r
        });
        Some(result.unwrap_or_else(|e| {
            Health::new(
                HealthStatus::Unknown,
                format!("Lua health check {} failed: {e}", check.key()),
            )
        }))
    }
}

/// The first line of a Lua error, without mlua's traceback.
fn short(e: &mlua::Error) -> String {
    let text = match e {
        mlua::Error::CallbackError { cause, .. } => return short(cause),
        mlua::Error::MemoryError(_) => "memory limit exceeded".to_owned(),
        other => other.to_string(),
    };
    text.lines().next().unwrap_or("").trim().to_owned()
}

fn compile(check: &LuaCheck, limits: LuaLimits) -> Result<Vm, String> {
    // `jit` only to turn the compiler off, then out of the scripts' reach.
    let mut libs = StdLib::TABLE | StdLib::OS | StdLib::JIT;
    if check.use_open_libs {
        libs |= StdLib::STRING | StdLib::MATH;
    }
    let lua = Lua::new_with(libs, LuaOptions::default()).map_err(|e| short(&e))?;
    let safe_os = || -> mlua::Result<()> {
        let globals = lua.globals();
        // Interpreted only: LuaJIT's compiled traces do not call the count hook the time limit
        // relies on, and a health script is too short-lived to gain from compiling.
        let jit: Table = globals.get("jit")?;
        jit.get::<Function>("off")?.call::<()>(())?;
        jit.get::<Function>("flush")?.call::<()>(())?;
        globals.set("jit", mlua::Value::Nil)?;
        let os: Table = globals.get("os")?;
        let safe = lua.create_table()?;
        for f in ["time", "date", "clock"] {
            safe.set(f, os.get::<mlua::Value>(f)?)?;
        }
        globals.set("os", safe)?;
        // No script reads files: the controller may read what no Application should see.
        for f in ["dofile", "loadfile"] {
            globals.set(f, mlua::Value::Nil)?;
        }
        // Source text only: LuaJIT (as Lua 5.1) runs bytecode unverified, and crafted bytecode
        // reaches past the sandbox. gopher-lua has no bytecode, so no script loses anything.
        lua.load(
            r#"local any_load = load
load = function(chunk, name) return any_load(chunk, name, "t") end
loadstring = function(text, name) return any_load(text, name, "t") end"#,
        )
        .set_name("=plumb")
        .exec()?;
        Ok(())
    };
    safe_os().map_err(|e| short(&e))?;
    let func = lua
        .load(check.script.as_str())
        .set_name(format!("={}", check.key()))
        .into_function()
        .map_err(|e| short(&e))?;
    let deadline = Rc::new(Cell::new(Instant::now() + limits.time));
    let hook_deadline = deadline.clone();
    let time = limits.time;
    lua.set_hook(
        HookTriggers::new().every_nth_instruction(1000),
        move |_, _| {
            if Instant::now() > hook_deadline.get() {
                Err(mlua::Error::runtime(format!(
                    "time limit of {} ms exceeded",
                    time.as_millis()
                )))
            } else {
                Ok(VmState::Continue)
            }
        },
    )
    .map_err(|e| short(&e))?;
    lua.set_memory_limit(limits.memory).map_err(|e| short(&e))?;
    Ok(Vm {
        lua,
        func,
        deadline,
    })
}

/// JSON to Lua as Argo CD converts it: objects and arrays to tables (arrays 1-based), `null`
/// to `nil`.
fn to_lua(lua: &Lua, v: &Value) -> mlua::Result<mlua::Value> {
    Ok(match v {
        Value::Null => mlua::Value::Nil,
        Value::Bool(b) => mlua::Value::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => mlua::Value::Number(i as f64),
            None => mlua::Value::Number(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => mlua::Value::String(lua.create_string(s)?),
        Value::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, to_lua(lua, item)?)?;
            }
            mlua::Value::Table(t)
        }
        Value::Object(map) => {
            let t = lua.create_table_with_capacity(0, map.len())?;
            for (k, item) in map {
                if !item.is_null() {
                    t.raw_set(k.as_str(), to_lua(lua, item)?)?;
                }
            }
            mlua::Value::Table(t)
        }
    })
}

/// Lua 5.1's name for a value's type (mlua tells integers apart; Lua 5.1 has only numbers).
fn lua_type(v: &mlua::Value) -> &'static str {
    match v {
        mlua::Value::Integer(_) => "number",
        other => other.type_name(),
    }
}

/// The object as scripts see it: `metadata.managedFields` left out (often the larger half of a
/// live object, and no health rule reads it), everything else as is.
fn object_to_lua(lua: &Lua, obj: &Value) -> mlua::Result<mlua::Value> {
    let Some(map) = obj.as_object() else {
        return to_lua(lua, obj);
    };
    let t = lua.create_table_with_capacity(0, map.len())?;
    for (k, item) in map {
        match (k.as_str(), item) {
            ("metadata", Value::Object(meta)) => {
                let m = lua.create_table_with_capacity(0, meta.len())?;
                for (mk, mv) in meta {
                    if mk != "managedFields" && !mv.is_null() {
                        m.raw_set(mk.as_str(), to_lua(lua, mv)?)?;
                    }
                }
                t.raw_set("metadata", m)?;
            }
            (_, Value::Null) => {}
            _ => t.raw_set(k.as_str(), to_lua(lua, item)?)?,
        }
    }
    Ok(mlua::Value::Table(t))
}

fn call(vm: &Vm, obj: &Value, limits: LuaLimits) -> Result<Health, String> {
    vm.deadline.set(Instant::now() + limits.time);
    let lua_obj = object_to_lua(&vm.lua, obj).map_err(|e| short(&e))?;
    vm.lua
        .globals()
        .set("obj", lua_obj)
        .map_err(|e| short(&e))?;
    let ret: mlua::Value = vm.func.call(()).map_err(|e| short(&e))?;
    let mlua::Value::Table(t) = ret else {
        return Err(format!(
            "returned {} instead of a table {{status, message}}",
            lua_type(&ret)
        ));
    };
    let status = match t.get::<mlua::Value>("status").map_err(|e| short(&e))? {
        mlua::Value::String(s) => s.to_string_lossy(),
        other => {
            return Err(format!(
                "returned a status of type {} instead of a string",
                lua_type(&other)
            ));
        }
    };
    let status: HealthStatus = status
        .parse()
        .map_err(|_| format!("returned an invalid health status {status:?}"))?;
    let message = match t.get::<mlua::Value>("message").map_err(|e| short(&e))? {
        mlua::Value::Nil => String::new(),
        mlua::Value::String(s) => s.to_string_lossy(),
        mlua::Value::Number(n) => n.to_string(),
        mlua::Value::Integer(n) => n.to_string(),
        other => {
            return Err(format!(
                "returned a message of type {} instead of a string",
                lua_type(&other)
            ));
        }
    };
    Ok(Health::new(status, message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use HealthStatus::*;
    use serde_json::json;

    fn check(group: &str, kind: &str, script: &str, open: bool) -> LuaCheck {
        LuaCheck {
            group: group.into(),
            kind: kind.into(),
            script: script.into(),
            use_open_libs: open,
            origin: "test".into(),
        }
    }

    fn run(script: &str, open: bool, obj: &Value) -> Health {
        let mut c = Customizations::new();
        c.push(check("example.com", "Widget", script, open));
        LuaRunner::new(c, LuaLimits::default())
            .health(obj, "example.com", "Widget")
            .expect("a script applies")
    }

    fn widget(phase: Option<&str>) -> Value {
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
               "status": {"phase": phase, "items": [1, 2, 3]}})
    }

    const PHASE: &str = r#"
hs = {}
if obj.status ~= nil and obj.status.phase == "Ready" then
  hs.status = "Healthy"
  hs.message = "ready with " .. #obj.status.items .. " items"
  return hs
end
hs.status = "Progressing"
hs.message = "Waiting"
return hs
"#;

    #[test]
    fn argo_interface() {
        assert_eq!(
            run(PHASE, false, &widget(Some("Ready"))),
            Health::new(Healthy, "ready with 3 items")
        );
        // JSON null reads as nil.
        assert_eq!(
            run(PHASE, false, &widget(None)),
            Health::new(Progressing, "Waiting")
        );
        // The same compiled script, called again, sees the new object.
        assert_eq!(run(PHASE, false, &widget(Some("Ready"))).status, Healthy);
    }

    #[test]
    fn open_libs_gate_string_and_math() {
        let script =
            r#"return {status = "Healthy", message = string.upper("ok") .. math.floor(2.5)}"#;
        assert_eq!(
            run(script, true, &widget(None)),
            Health::new(Healthy, "OK2")
        );
        let h = run(script, false, &widget(None));
        assert_eq!(h.status, Unknown);
        assert!(h.message.contains("string"), "{}", h.message);
        // table and the safe os are always there; io never.
        let script = r#"local t = {}; table.insert(t, "x"); assert(os.time() > 0); assert(os.execute == nil); assert(io == nil); assert(dofile == nil and loadfile == nil); return {status = "Healthy", message = t[1]}"#;
        assert_eq!(run(script, false, &widget(None)), Health::new(Healthy, "x"));
    }

    #[test]
    fn bad_scripts_are_unknown_with_a_message() {
        let obj = widget(None);
        let cases = [
            (
                "syntax",
                "hs = {status = ",
                "Lua health check example.com/Widget failed:",
            ),
            (
                "runtime",
                "return {status = obj.spec.missing.field}",
                "attempt to index",
            ),
            (
                "wrong type",
                "return 42",
                "returned number instead of a table",
            ),
            ("nil", "local x = 1", "returned nil instead of a table"),
            (
                "bad status",
                r#"return {status = "Fine"}"#,
                "invalid health status \"Fine\"",
            ),
            (
                "status type",
                "return {status = 3}",
                "status of type number",
            ),
            (
                "message type",
                r#"return {status = "Healthy", message = {}}"#,
                "message of type table",
            ),
            (
                "memory",
                "local t = {} local i = 0 while true do i = i + 1 t[i] = string.rep('x', 1048576) .. i end",
                "memory limit exceeded",
            ),
            (
                "memory string",
                "local s = 'x' while true do s = s .. s end",
                "memory limit exceeded",
            ),
        ];
        for (name, script, want) in cases {
            let h = run(script, true, &obj);
            assert_eq!(h.status, Unknown, "{name}");
            assert!(h.message.contains(want), "{name}: {}", h.message);
        }
    }

    #[test]
    fn an_infinite_loop_is_stopped_by_the_time_limit() {
        // The message is the evidence that the limit stopped it (no elapsed-time assertion:
        // a busy machine would fail one).
        let h = run("while true do end", false, &widget(None));
        assert_eq!(h.status, Unknown);
        assert!(
            h.message.contains("time limit of 500 ms exceeded"),
            "{}",
            h.message
        );
        // The runner still works afterwards.
        assert_eq!(run(PHASE, false, &widget(Some("Ready"))).status, Healthy);
    }

    #[test]
    fn goto_and_lua_5_1_library() {
        // Argo CD's scripts (gopher-lua: Lua 5.1 with goto) use both.
        let script = r#"
local n = 0
for i = 1, 5 do
  if i % 2 == 0 then goto continue end
  n = n + 1
  ::continue::
end
local a, b = unpack({table.getn(obj.status.items), n})
assert(jit == nil, "the JIT library is out of reach")
return {status = "Healthy", message = a .. " " .. b .. " " .. 7 / 2}
"#;
        assert_eq!(
            run(script, true, &widget(None)),
            Health::new(Healthy, "3 3 3.5")
        );
    }

    #[test]
    fn only_source_text_loads() {
        let script = r#"
local f, err = loadstring(string.dump(function() return 1 end))
assert(f == nil and err:find("wrong mode"), tostring(err))
f, err = load(string.dump(function() return 1 end))
assert(f == nil and err:find("wrong mode"), tostring(err))
return {status = "Healthy", message = loadstring("return 'text'")() .. " " .. load("return 2")()}
"#;
        assert_eq!(
            run(script, true, &widget(None)),
            Health::new(Healthy, "text 2")
        );
    }

    #[test]
    fn hot_loops_are_stopped_too() {
        // Loops LuaJIT would compile to traces, which call no hooks: the compiler is off.
        for script in [
            "for i = 1, 1e300 do end",
            "local t = {} for i = 1, 1e300 do t[i % 8 + 1] = i end",
            "local function f(n) return n + 1 end local n = 0 while true do n = f(n) end",
        ] {
            let h = run(script, false, &widget(None));
            assert_eq!(h.status, Unknown, "{script}");
            assert!(h.message.contains("time limit"), "{script}: {}", h.message);
        }
    }

    #[test]
    fn managed_fields_are_not_passed() {
        let mut obj = widget(Some("Ready"));
        obj["metadata"]["managedFields"] = json!([{"manager": "kubectl"}]);
        let script = r#"return {status = "Healthy", message = tostring(obj.metadata.managedFields) .. " " .. obj.metadata.name}"#;
        assert_eq!(run(script, false, &obj), Health::new(Healthy, "nil w"));
    }

    #[test]
    fn wildcards() {
        assert!(wildcard_match("*", ""));
        assert!(wildcard_match("*.crossplane.io", "aws.crossplane.io"));
        assert!(!wildcard_match("*.crossplane.io", "crossplane.io"));
        assert!(wildcard_match("a*b*c", "aXXbYYc"));
        assert!(!wildcard_match("a*b*c", "aXXbYY"));
        assert!(wildcard_match("Widget", "Widget"));
        assert!(!wildcard_match("Widget", "Widgets"));
        let mut c = Customizations::new();
        c.push(check("*.example.com", "*", "wild", false));
        c.push(check("a.example.com", "Widget", "exact", false));
        assert_eq!(
            c.find("a.example.com", "Widget")
                .map(|(_, c)| c.script.as_str()),
            Some("exact")
        );
        assert_eq!(
            c.find("b.example.com", "Gadget")
                .map(|(_, c)| c.script.as_str()),
            Some("wild")
        );
        assert_eq!(c.find("example.com", "Widget"), None);
    }

    #[test]
    fn settings_both_forms() {
        let cm = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cm, namespace: argocd}
data:
  resource.customizations.health.example.com_Widget: |
    return {status = "Healthy"}
  resource.customizations.useOpenLibs.example.com_Widget: "true"
  resource.customizations.health.Pod: |
    return {status = "Suspended"}
  resource.customizations: |
    example.com/Widget:
      health.lua: |
        return {status = "Degraded"}
    "*.crossplane.io/*":
      health.lua: |
        return {status = "Progressing"}
      health.lua.useOpenLibs: true
    apps/Deployment:
      ignoreDifferences: |
        jsonPointers: [/spec/replicas]
"#;
        let c = Customizations::from_settings_yaml(cm, "argocd-cm.yaml").expect("parses");
        let keys: Vec<(String, bool)> = c
            .checks()
            .iter()
            .map(|c| (c.key(), c.use_open_libs))
            .collect();
        assert_eq!(
            keys,
            vec![
                ("Pod".to_string(), false),
                ("example.com/Widget".to_string(), true),
                ("*.crossplane.io/*".to_string(), true),
            ]
        );
        let bad =
            Customizations::from_settings_yaml("data: [1]", "cm.yaml").expect_err("not a map");
        assert_eq!(bad.to_string(), "cm.yaml: data: not a map");
    }
}
