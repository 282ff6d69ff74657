//! Latched request flags: beta headers, the cache
//! TTL and scope, and extra request parameters key the provider's cache, so once a
//! session has sent them they stay as sent until a compaction starts a new history.
//! A flag turned on later is added (it breaks the cache once, deliberately); a flag
//! turned off or changed is refused and the latched value is sent. Every such request is
//! reported, never silent.

use std::collections::BTreeMap;

use ctxd_protocol::RequestFlags;
use serde::{Deserialize, Serialize};

pub(crate) const TTL_5M: &str = "5m";
pub const TTL_1H: &str = "1h";
/// Claude Code's global cache scope on the static system prefix (not part of the public
/// API): sent only when asked for. `auto` is its older name.
pub(crate) const SCOPE_GLOBAL: &str = "global";
pub(crate) const SCOPE_AUTO: &str = "auto";
/// The public API's only scope: the cache is the organisation's. The default.
pub(crate) const SCOPE_ORG: &str = "org";
/// The beta header Claude Code sends with a globally scoped marker.
pub(crate) const SCOPE_BETA: &str = "prompt-caching-scope-2026-01-05";
/// The beta header of cache diagnostics (`diagnostics: {previous_message_id}`).
pub(crate) const DIAGNOSIS_BETA: &str = "cache-diagnosis-2026-04-07";

/// The beta header of the provider's context editing (`context_management`).
pub(crate) const CONTEXT_MANAGEMENT_BETA: &str = "context-management-2025-06-27";
/// The beta header of the provider's threshold compaction (`compact_20260112`).
pub const COMPACT_BETA: &str = "compact-2026-01-12";
/// The context editing edit that clears tool results.
pub(crate) const CLEAR_TOOL_USES: &str = "clear_tool_uses_20250919";
pub const COMPACT_EDIT: &str = "compact_20260112";

/// The flags a session's settings add to what its client asks for: the provider's
/// context management, with the betas it needs. `None` when the settings add nothing.
pub fn session_flags(edits: &[serde_json::Map<String, serde_json::Value>]) -> Option<RequestFlags> {
    if edits.is_empty() {
        return None;
    }
    let mut f = RequestFlags {
        betas: vec![CONTEXT_MANAGEMENT_BETA.to_string()],
        ..RequestFlags::default()
    };
    if edits.iter().any(|e| edit_type(e) == Some(COMPACT_EDIT)) {
        f.betas.push(COMPACT_BETA.to_string());
    }
    f.extra.insert(
        "context_management".into(),
        serde_json::json!({ "edits": edits }),
    );
    Some(f)
}

fn edit_type(e: &serde_json::Map<String, serde_json::Value>) -> Option<&str> {
    e.get("type").and_then(serde_json::Value::as_str)
}

/// `requested` with the session's flags added (a client's own value of a parameter the
/// session sets gives way to the session's). With nothing requested, the history's
/// latched flags are the base, so a client that sends no flags does not appear to
/// drop the ones it sent before.
pub fn with_session_flags(
    requested: Option<&RequestFlags>,
    latched: RequestFlags,
    session: &RequestFlags,
) -> RequestFlags {
    let mut f = requested.cloned().unwrap_or(latched);
    for b in &session.betas {
        if !f.betas.contains(b) {
            f.betas.push(b.clone());
        }
    }
    for (k, v) in &session.extra {
        f.extra.insert(k.clone(), v.clone());
    }
    f
}

/// Whether the flags hand the clearing of tool results to the provider.
pub(crate) fn provider_clears_tool_results(f: &RequestFlags) -> bool {
    f.extra
        .get("context_management")
        .and_then(|c| c.get("edits"))
        .and_then(serde_json::Value::as_array)
        .is_some_and(|edits| {
            edits
                .iter()
                .any(|e| e.get("type").and_then(serde_json::Value::as_str) == Some(CLEAR_TOOL_USES))
        })
}

/// Top-level fields of the request that flags may not set: ctxd owns them.
const RESERVED: [&str; 5] = ["model", "max_tokens", "system", "tools", "messages"];

/// What a session has latched, and for which history (compact boundary uuid, `''`
/// before the first compaction).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latched {
    pub boundary_uuid: String,
    pub flags: RequestFlags,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Resolution {
    /// What this request carries.
    pub flags: RequestFlags,
    pub notes: Vec<String>,
    /// The latch must be stored (first compile of a history, or an addition).
    pub changed: bool,
}

/// A flag the client may not send, with the field that names it.
pub fn validate(f: &RequestFlags) -> Result<(), (String, String)> {
    if let Some(t) = &f.cache_ttl
        && t != TTL_5M
        && t != TTL_1H
    {
        return Err(("flags.cache_ttl".into(), "must be \"5m\" or \"1h\"".into()));
    }
    if let Some(s) = &f.cache_scope
        && s != SCOPE_GLOBAL
        && s != SCOPE_AUTO
        && s != SCOPE_ORG
    {
        return Err((
            "flags.cache_scope".into(),
            "must be \"org\" or \"global\"".into(),
        ));
    }
    if let Some(k) = f.extra.keys().find(|k| RESERVED.contains(&k.as_str())) {
        return Err((
            format!("flags.extra.{k}"),
            "is a field of the request that ctxd sets itself".into(),
        ));
    }
    if let Some(b) = f
        .betas
        .iter()
        .find(|b| b.is_empty() || b.contains([',', '\n', '\r']))
    {
        return Err((
            "flags.betas".into(),
            format!("{b:?} is not a beta name (empty, or holds a comma or a line break)"),
        ));
    }
    Ok(())
}

fn ttl(f: &RequestFlags) -> &str {
    f.cache_ttl.as_deref().unwrap_or(TTL_5M)
}

fn scope(f: &RequestFlags) -> &str {
    match f.cache_scope.as_deref() {
        Some(SCOPE_GLOBAL | SCOPE_AUTO) => SCOPE_GLOBAL,
        _ => SCOPE_ORG,
    }
}

/// The session asked for Claude Code's global scope.
pub(crate) fn global_scope(f: &RequestFlags) -> bool {
    scope(f) == SCOPE_GLOBAL
}

/// Normal form: sorted unique betas, explicit TTL and scope.
fn normal(f: &RequestFlags) -> RequestFlags {
    let mut betas = f.betas.clone();
    betas.sort();
    betas.dedup();
    RequestFlags {
        betas,
        cache_ttl: Some(ttl(f).to_string()),
        cache_scope: Some(scope(f).to_string()),
        extra: f.extra.clone(),
    }
}

/// The flags of this compile, given the stored latch, the current history and what the
/// client asked for (`None`: nothing asked, send what is latched).
pub fn resolve(
    stored: Option<&Latched>,
    boundary_uuid: &str,
    requested: Option<&RequestFlags>,
) -> Resolution {
    let current = stored.filter(|l| l.boundary_uuid == boundary_uuid);
    let Some(current) = current else {
        return Resolution {
            flags: normal(requested.unwrap_or(&RequestFlags::default())),
            notes: Vec::new(),
            changed: true,
        };
    };
    let mut flags = normal(&current.flags);
    let Some(req) = requested else {
        return Resolution {
            flags,
            notes: Vec::new(),
            changed: false,
        };
    };
    let req = normal(req);
    let mut notes = Vec::new();
    let mut changed = false;
    for b in &req.betas {
        if !flags.betas.contains(b) {
            notes.push(format!(
                "beta {b} added to the latch: the cache breaks once"
            ));
            flags.betas.push(b.clone());
            changed = true;
        }
    }
    flags.betas.sort();
    for b in flags.betas.iter().filter(|b| !req.betas.contains(b)) {
        notes.push(format!(
            "beta {b} stays latched until the next compaction (asked without it)"
        ));
    }
    if ttl(&req) != ttl(&flags) {
        notes.push(format!(
            "cache_ttl: asked {}, latched {} kept until the next compaction",
            ttl(&req),
            ttl(&flags)
        ));
    }
    if scope(&req) != scope(&flags) {
        notes.push(format!(
            "cache_scope: asked {}, latched {} kept until the next compaction",
            scope(&req),
            scope(&flags)
        ));
    }
    let mut added: BTreeMap<String, serde_json::Value> = BTreeMap::new();
    for (k, v) in &req.extra {
        match flags.extra.get(k) {
            None => {
                notes.push(format!(
                    "parameter {k} added to the latch: the cache breaks once"
                ));
                added.insert(k.clone(), v.clone());
            }
            Some(old) if old != v => notes.push(format!(
                "parameter {k}: asked {v}, latched {old} kept until the next compaction"
            )),
            Some(_) => {}
        }
    }
    for k in flags.extra.keys().filter(|k| !req.extra.contains_key(*k)) {
        notes.push(format!(
            "parameter {k} stays latched until the next compaction (asked without it)"
        ));
    }
    if !added.is_empty() {
        flags.extra.extend(added);
        changed = true;
    }
    Resolution {
        flags,
        notes,
        changed,
    }
}

/// The HTTP headers the flags ask for, with the scope's beta when the request carries
/// a globally scoped marker.
pub(crate) fn headers(
    f: &RequestFlags,
    global_scope: bool,
    diagnostics: bool,
) -> BTreeMap<String, String> {
    let mut betas: Vec<&str> = f.betas.iter().map(String::as_str).collect();
    for (on, beta) in [(global_scope, SCOPE_BETA), (diagnostics, DIAGNOSIS_BETA)] {
        if on && !betas.contains(&beta) {
            betas.push(beta);
        }
    }
    let mut h = BTreeMap::new();
    if !betas.is_empty() {
        h.insert("anthropic-beta".to_string(), betas.join(","));
    }
    h
}

/// The flags' share of the provider's cache key besides the request's units: beta
/// headers, extra parameters, and the TTL and scope.
pub(crate) fn cache_key_hash(f: &RequestFlags) -> u64 {
    let f = normal(f);
    let text = serde_json::to_string(&f).unwrap_or_default();
    super::cache_prefix::hash_bytes(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn flags(
        betas: &[&str],
        ttl: Option<&str>,
        extra: &[(&str, serde_json::Value)],
    ) -> RequestFlags {
        RequestFlags {
            betas: betas.iter().map(|s| s.to_string()).collect(),
            cache_ttl: ttl.map(str::to_string),
            cache_scope: None,
            extra: extra
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        }
    }

    fn latched(f: RequestFlags) -> Latched {
        Latched {
            boundary_uuid: "b".into(),
            flags: normal(&f),
        }
    }

    #[test]
    fn first_compile_latches_what_is_asked() {
        let r = resolve(None, "", Some(&flags(&["z", "a", "a"], Some("1h"), &[])));
        assert!(r.changed);
        assert_eq!(r.flags.betas, ["a", "z"]);
        assert_eq!(r.flags.cache_ttl.as_deref(), Some("1h"));
        assert!(r.notes.is_empty());
    }

    #[test]
    fn a_flag_turned_off_stays_and_is_reported() {
        let l = latched(flags(&["fast"], Some("1h"), &[("effort", json!("high"))]));
        let r = resolve(Some(&l), "b", Some(&flags(&[], Some("5m"), &[])));
        assert!(!r.changed);
        assert_eq!(r.flags, l.flags);
        assert_eq!(r.notes.len(), 3, "{:?}", r.notes);
        assert!(r.notes.iter().any(|n| n.contains("beta fast stays")));
        assert!(r.notes.iter().any(|n| n.contains("asked 5m, latched 1h")));
        assert!(r.notes.iter().any(|n| n.contains("parameter effort stays")));
    }

    #[test]
    fn a_changed_value_is_refused_and_an_addition_latched() {
        let l = latched(flags(&[], None, &[("effort", json!("high"))]));
        let r = resolve(
            Some(&l),
            "b",
            Some(&flags(
                &["x"],
                None,
                &[("effort", json!("low")), ("t", json!(1))],
            )),
        );
        assert!(r.changed);
        assert_eq!(r.flags.extra["effort"], json!("high"));
        assert_eq!(r.flags.extra["t"], json!(1));
        assert_eq!(r.flags.betas, ["x"]);
        assert!(
            r.notes
                .iter()
                .any(|n| n.contains("asked \"low\", latched \"high\""))
        );
    }

    #[test]
    fn nothing_asked_sends_the_latch_silently_and_a_new_history_resets_it() {
        let l = latched(flags(&["fast"], Some("1h"), &[]));
        let r = resolve(Some(&l), "b", None);
        assert_eq!((r.changed, r.notes.len()), (false, 0));
        assert_eq!(r.flags.betas, ["fast"]);
        let r = resolve(Some(&l), "after-compaction", None);
        assert!(r.changed);
        assert!(r.flags.betas.is_empty());
        assert_eq!(r.flags.cache_ttl.as_deref(), Some(TTL_5M));
    }

    #[test]
    fn validation_names_the_field() {
        let mut f = flags(&[], Some("2h"), &[]);
        assert_eq!(validate(&f).unwrap_err().0, "flags.cache_ttl");
        f.cache_ttl = None;
        f.extra.insert("messages".into(), json!([]));
        assert_eq!(validate(&f).unwrap_err().0, "flags.extra.messages");
        let f = flags(&["a,b"], None, &[]);
        assert_eq!(validate(&f).unwrap_err().0, "flags.betas");
    }

    #[test]
    fn headers_and_key_hash() {
        let f = normal(&flags(&["b", "a"], Some("1h"), &[]));
        assert_eq!(headers(&f, false, false)["anthropic-beta"], "a,b");
        assert_eq!(
            headers(&f, true, false)["anthropic-beta"],
            format!("a,b,{SCOPE_BETA}")
        );
        let g = normal(&flags(&["b", "a"], None, &[]));
        assert_ne!(cache_key_hash(&f), cache_key_hash(&g));
        // Defaults spelt out or left out key the same.
        assert_eq!(
            cache_key_hash(&RequestFlags::default()),
            cache_key_hash(&flags(&[], Some("5m"), &[]))
        );
    }
}
