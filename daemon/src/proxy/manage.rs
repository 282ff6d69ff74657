//! Manage mode (`x-ctxd-mode: manage`): the client may keep sending its whole history;
//! ctxd appends what is new and sends its own compile of the session instead (tool-result
//! budget, microcompact, compaction, cache breakpoints), with the client's system, tools
//! and request parameters, recovering once from a `prompt_too_long`.

use std::sync::Arc;

use bytes::Bytes;
use ctxd_protocol::{CompileParams, ReportErrorParams};
use http_body_util::BodyExt as _;
use hyper::{Response, StatusCode};
use serde_json::Value;

use super::{Body, Proxy, Recorder, conversation, error, unreachable_upstream};

/// Bytes of a refusal read to tell a too-long prompt from other errors.
const MAX_REFUSAL_BYTES: usize = 1 << 20;

pub(super) async fn manage(
    proxy: &Arc<Proxy>,
    url: &str,
    headers: reqwest::header::HeaderMap,
    body: &Bytes,
    session_header: Option<String>,
) -> Response<Body> {
    let bad = |m: &str| error(StatusCode::BAD_REQUEST, "invalid_request_error", m);
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return bad("the request body is not JSON");
    };
    let Some(key) = conversation::key(session_header.as_deref(), &request) else {
        return bad("the request has no messages");
    };
    let session = match proxy
        .conversations
        .record(&key, &request, None, true, None)
        .await
    {
        Ok(r) => r.session_id,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                &format!("ctxd cannot take these messages: {e}"),
            );
        }
    };
    let mut compiled = proxy
        .engine
        .compile(CompileParams {
            session_id: session.clone(),
            ..Default::default()
        })
        .await
        .map(|c| c.body);
    let mut recovered = false;
    loop {
        let out = match compiled.map(|b| outgoing(&b, &request)) {
            Ok(Ok(out)) => out,
            Ok(Err(e)) => return error(StatusCode::INTERNAL_SERVER_ERROR, "api_error", &e),
            Err(e) => return compile_error(&e),
        };
        let sent = out.len();
        let upstream = match proxy
            .client
            .post(url)
            .headers(headers.clone())
            .body(out)
            .send()
            .await
        {
            Ok(r) => r,
            Err(e) => return unreachable_upstream(&e),
        };
        proxy.bytes_up.fetch_add(
            u64::try_from(sent).unwrap_or(u64::MAX),
            std::sync::atomic::Ordering::Relaxed,
        );
        if upstream.status() == StatusCode::BAD_REQUEST && !recovered {
            let head = upstream.headers().clone();
            let refusal = read_bounded(upstream).await;
            if too_long(&refusal) {
                // Once, as `context.send` does: collapses, else reactive compaction.
                recovered = true;
                compiled = proxy
                    .engine
                    .report_error(ReportErrorParams {
                        session_id: session.clone(),
                        kind: "prompt_too_long".into(),
                        token_gap: None,
                        record_uuid: None,
                        block_index: None,
                    })
                    .await
                    .map(|c| c.body);
                continue;
            }
            let mut r = Response::builder().status(StatusCode::BAD_REQUEST);
            for (name, value) in &head {
                if !super::HOP_HEADERS.contains(&name.as_str()) {
                    r = r.header(name.as_str(), value.as_bytes());
                }
            }
            return r
                .body(http_body_util::BodyExt::boxed_unsync(
                    http_body_util::Full::new(refusal).map_err(|never| match never {}),
                ))
                .unwrap_or_else(|_| {
                    error(StatusCode::BAD_REQUEST, "invalid_request_error", "refused")
                });
        }
        return super::forward_response(
            proxy,
            upstream,
            Some(Recorder {
                key,
                request,
                streamed: false,
                chat: false,
                answer_to: Some(session),
                sent: None,
            }),
        );
    }
}

/// ctxd's compile with the client's own system, tools and request parameters: the
/// client decides what it asks for, ctxd what of the conversation is sent.
fn outgoing(compiled: &str, request: &Value) -> Result<String, String> {
    let mut body: serde_json::Map<String, Value> =
        serde_json::from_str(compiled).map_err(|e| format!("ctxd's compile: {e}"))?;
    for key in ["system", "tools"] {
        match request.get(key) {
            Some(v) => body.insert(key.to_string(), v.clone()),
            None => body.remove(key),
        };
    }
    if let Some(fields) = request.as_object() {
        for (k, v) in fields {
            if k != "messages" {
                body.insert(k.clone(), v.clone());
            }
        }
    }
    serde_json::to_string(&body).map_err(|e| e.to_string())
}

fn compile_error(e: &ctxd_engine::Error) -> Response<Body> {
    match e {
        ctxd_engine::Error::PromptTooLong { estimated, limit } => error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            &format!(
                "prompt is too long: {estimated} tokens > {limit} maximum (ctxd could not make room)"
            ),
        ),
        other => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "api_error",
            &format!("ctxd could not compile the session: {other}"),
        ),
    }
}

async fn read_bounded(mut r: reqwest::Response) -> Bytes {
    let mut all = Vec::new();
    while let Ok(Some(chunk)) = r.chunk().await {
        all.extend_from_slice(&chunk);
        if all.len() > MAX_REFUSAL_BYTES {
            break;
        }
    }
    Bytes::from(all)
}

fn too_long(refusal: &[u8]) -> bool {
    let text = String::from_utf8_lossy(refusal);
    text.contains("prompt is too long") || text.contains("prompt_too_long")
}
