//! Hooks of type `http`: the event's JSON is POSTed to the hook's `url`, and the answer
//! is read as a command hook's stdout is. A 2xx with an empty body succeeds with no
//! output; a 2xx with a JSON object is the hook's JSON output; any other body, a non-2xx
//! status or a failed connection is a non-blocking error (HTTP has no exit code 2).
//! Header values fill `$VAR` and `${VAR}` only for the variables the hook lists in
//! `allowedEnvVars`, from the environment a command hook would get (never the daemon's
//! provider keys); other references become empty, as in Claude Code.

use std::time::{Duration, Instant};

use super::decide::RawRun;
use super::runner::OUTPUT_CAP;

/// An `http` hook as its settings file gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HttpHook {
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) allowed_env_vars: Vec<String>,
}

/// `value` with `$VAR` / `${VAR}` filled from `env` for the allowed names.
pub(crate) fn interpolate(value: &str, allowed: &[String], env: &[(String, String)]) -> String {
    let lookup = |name: &str| -> String {
        if !allowed.iter().any(|a| a == name) {
            return String::new();
        }
        env.iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let mut out = String::new();
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, used) = if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) => (&braced[..end], end + 2),
                None => ("", 0),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        if name.is_empty() {
            out.push('$');
            rest = after;
        } else {
            out.push_str(&lookup(name));
            rest = &after[used..];
        }
    }
    out.push_str(rest);
    out
}

/// Posts `body` to the hook and reads the answer as a run of a command hook.
pub(crate) async fn run(
    hook: &HttpHook,
    env: &[(String, String)],
    body: Vec<u8>,
    timeout: Duration,
) -> RawRun {
    let started = Instant::now();
    let done = |exit: i32, stdout: String, stderr: String, cut: bool| RawRun {
        exit_code: Some(exit),
        stdout,
        stderr,
        output_cut: cut,
        duration: started.elapsed(),
        timeout,
        ..RawRun::default()
    };
    // The daemon's one HTTP client (its TLS set up once), as the providers use.
    let client = match ctxd_providers::http_client() {
        Ok(c) => c,
        Err(e) => return done(1, String::new(), format!("no HTTP client: {e}"), false),
    };
    let mut req = client
        .post(&hook.url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body);
    for (k, v) in &hook.headers {
        req = req.header(k.as_str(), interpolate(v, &hook.allowed_env_vars, env));
    }
    let call = async {
        let mut response = req
            .send()
            .await
            .map_err(|e| format!("request failed: {e}"))?;
        let status = response.status();
        let mut bytes = Vec::new();
        let mut cut = false;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("reading the answer failed: {e}"))?
        {
            let room = OUTPUT_CAP.saturating_sub(bytes.len());
            if chunk.len() > room {
                bytes.extend_from_slice(&chunk[..room]);
                cut = true;
                break;
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok::<_, String>((status, bytes, cut))
    };
    match tokio::time::timeout(timeout, call).await {
        Err(_) => RawRun {
            timed_out: true,
            duration: started.elapsed(),
            timeout,
            ..RawRun::default()
        },
        Ok(Err(e)) => done(1, String::new(), e, false),
        Ok(Ok((status, bytes, cut))) => {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            if !status.is_success() {
                return done(1, String::new(), format!("HTTP {}", status.as_u16()), cut);
            }
            let trimmed = text.trim();
            if trimmed.is_empty() {
                return done(0, String::new(), String::new(), cut);
            }
            match serde_json::from_str::<serde_json::Value>(trimmed) {
                Ok(serde_json::Value::Object(_)) => done(0, text, String::new(), cut),
                _ => done(
                    1,
                    String::new(),
                    "the answer is neither empty nor a JSON object".into(),
                    cut,
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_allowed_variables_are_filled() {
        let env = vec![
            ("TOKEN".to_string(), "t0k".to_string()),
            ("SECRET".to_string(), "s".to_string()),
        ];
        let allowed = vec!["TOKEN".to_string()];
        assert_eq!(interpolate("Bearer $TOKEN", &allowed, &env), "Bearer t0k");
        assert_eq!(
            interpolate("${TOKEN}-${SECRET}-$SECRET", &allowed, &env),
            "t0k--"
        );
        assert_eq!(interpolate("cost $5 and $", &allowed, &env), "cost  and $");
        assert_eq!(interpolate("${UNCLOSED", &allowed, &env), "${UNCLOSED");
    }
}
