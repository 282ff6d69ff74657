//! `KEY=VALUE` edits of a session's settings: dotted keys into the settings object,
//! values as JSON when they parse (`true`, `80`, `{"kind":"embedded"}`), else as text.

use anyhow::{Result, bail};
use serde_json::{Map, Value};

/// Applies `edits` to `settings` (a JSON object). `KEY=null` removes the key, which
/// restores its default.
pub fn apply(settings: &mut Value, edits: &[String]) -> Result<()> {
    for edit in edits {
        let Some((key, raw)) = edit.split_once('=') else {
            bail!("`{edit}` is not KEY=VALUE (e.g. snip_enabled=true, collapse.enabled=true)");
        };
        let path: Vec<&str> = key.trim().split('.').collect();
        if path.iter().any(|p| p.is_empty()) {
            bail!("`{key}` is not a setting name");
        }
        let value = serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()));
        set(settings, &path, value)?;
    }
    Ok(())
}

/// The merge patch (RFC 7396) that turns `before` into `after`: changed members, nested
/// objects member by member, `null` for a member `after` lacks.
pub fn diff(before: &Value, after: &Value) -> Value {
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            let mut patch = Map::new();
            for (k, old) in b {
                match a.get(k) {
                    None => {
                        patch.insert(k.clone(), Value::Null);
                    }
                    Some(new) if new != old => {
                        patch.insert(k.clone(), diff(old, new));
                    }
                    Some(_) => {}
                }
            }
            for (k, new) in a {
                if !b.contains_key(k) {
                    patch.insert(k.clone(), new.clone());
                }
            }
            Value::Object(patch)
        }
        (_, a) => a.clone(),
    }
}

/// Merges a JSON object of settings into `settings`, member by member (nested objects
/// merge, other values replace; `null` removes).
pub fn merge(settings: &mut Value, patch: Value) -> Result<()> {
    if !patch.is_object() {
        bail!("--set-json takes a JSON object of settings");
    }
    ctxd_protocol::merge_patch(settings, patch);
    Ok(())
}

fn set(obj: &mut Value, path: &[&str], value: Value) -> Result<()> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let Value::Object(map) = obj else {
        unreachable!("made an object above")
    };
    match path {
        [last] => {
            if value.is_null() {
                map.remove(*last);
            } else {
                map.insert((*last).to_string(), value);
            }
        }
        [first, rest @ ..] => {
            let child = map.entry((*first).to_string()).or_insert(Value::Null);
            set(child, rest, value)?;
        }
        [] => bail!("empty setting name"),
    }
    Ok(())
}

/// Every setting path with its current value, one per line (`collapse.enabled = false`).
pub fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, v) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        other => out.push((prefix.to_string(), other.clone())),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_diff_is_the_patch_that_makes_the_new_settings() {
        let before = serde_json::json!({"a": 1, "b": {"c": 2, "d": 3}, "e": 4});
        let after = serde_json::json!({"a": 1, "b": {"c": 5, "d": 3}, "f": 6});
        let patch = diff(&before, &after);
        assert_eq!(patch, serde_json::json!({"b": {"c": 5}, "e": null, "f": 6}));
        let mut applied = before.clone();
        ctxd_protocol::merge_patch(&mut applied, patch);
        assert_eq!(applied, after);
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn dotted_keys_set_nested_values_and_null_removes() {
        let mut s = json!({"collapse": {"enabled": false, "target_pct": 70}, "language": "en"});
        apply(
            &mut s,
            &[
                "collapse.enabled=true".into(),
                "snip_enabled=true".into(),
                "memory.extractor=external".into(),
                "summariser={\"kind\":\"embedded\"}".into(),
                "language=null".into(),
            ],
        )
        .unwrap();
        assert_eq!(
            s,
            json!({"collapse": {"enabled": true, "target_pct": 70}, "snip_enabled": true,
                   "memory": {"extractor": "external"}, "summariser": {"kind": "embedded"}})
        );
        assert!(apply(&mut s, &["nonsense".into()]).is_err());
        assert!(apply(&mut s, &["a..b=1".into()]).is_err());
    }

    #[test]
    fn json_patches_merge_objects() {
        let mut s = json!({"collapse": {"enabled": false, "target_pct": 70}});
        merge(
            &mut s,
            json!({"collapse": {"enabled": true}, "plan_mode": true}),
        )
        .unwrap();
        assert_eq!(
            s,
            json!({"collapse": {"enabled": true, "target_pct": 70}, "plan_mode": true})
        );
        assert!(merge(&mut s, json!([1])).is_err());
    }
}
