//! Sub-agents: a thread a session starts for one of its tool calls. The thread is a
//! session of its own (its row names the parent, the agent and the call), so its
//! thresholds, budget, cache prediction and compaction are a session's; it starts from
//! the parent's file state and gives its answer back as the call's tool result.

use ctxd_protocol::*;
use serde_json::json;
use uuid::Uuid;

use crate::engine::Engine;
use crate::engine::hooks::{context_record, feedback_record};
use crate::engine::session::transcript::insert_batch;
use crate::validate::{check_model, check_settings, check_system, check_tools, validate_batch};
use ctxd_pipeline::limits::MAX_AGENT_ID_CHARS;
use ctxd_store::context_state::{self, InstructionMemo};
use ctxd_store::error::{Error, Result};
use ctxd_store::sessions::{self, SessionRow};

fn check_agent_id(id: &str) -> Result<()> {
    if id.trim().is_empty() || id == "main" {
        return Err(Error::invalid(
            "agent_id",
            "must not be empty or \"main\" (the session's own thread)",
        ));
    }
    if id.chars().count() > MAX_AGENT_ID_CHARS || id.chars().any(char::is_control) {
        return Err(Error::invalid(
            "agent_id",
            format!("must be at most {MAX_AGENT_ID_CHARS} printable characters"),
        ));
    }
    Ok(())
}

/// Where `tool_use_id` stands in a transcript: called, and answered.
fn call_state(records: &[Record], tool_use_id: &str) -> (bool, bool) {
    let mut called = false;
    let mut answered = false;
    for r in records.iter().filter(|r| !r.is_sidechain) {
        for b in &r.content {
            match b {
                ContentBlock::ToolUse { id, .. } if id == tool_use_id => called = true,
                ContentBlock::ToolResult { tool_use_id: t, .. } if t == tool_use_id => {
                    answered = true;
                }
                _ => {}
            }
        }
    }
    (called, answered)
}

/// The text of the thread's last answer: the text blocks of its last response.
fn last_answer(records: &[Record]) -> Option<String> {
    let last = records
        .iter()
        .rposition(|r| r.kind == RecordKind::Assistant && !r.is_virtual)?;
    let id = records[last].message_id.as_ref();
    let parts: Vec<&str> = records[..=last]
        .iter()
        .rev()
        .take_while(|r| {
            r.kind != RecordKind::Assistant
                || std::ptr::eq(*r, &records[last])
                || (id.is_some() && r.message_id.as_ref() == id)
        })
        .filter(|r| r.kind == RecordKind::Assistant)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .flat_map(|r| r.content.iter())
        .filter_map(|b| match b {
            ContentBlock::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n"))
}

impl Engine {
    /// The session a call addresses: sub-agent `agent_id` of `session_id`, or the
    /// session itself.
    pub(crate) async fn thread_of(
        &self,
        session_id: &str,
        agent_id: Option<&str>,
    ) -> Result<String> {
        let Some(agent) = agent_id.filter(|a| *a != "main") else {
            return Ok(session_id.to_string());
        };
        let (parent, a) = (session_id.to_string(), agent.to_string());
        self.store
            .read(move |db| {
                if !sessions::exists(db, &parent)? {
                    return Err(Error::SessionNotFound(parent.clone()));
                }
                sessions::agent_thread(db, &parent, &a)?.ok_or_else(|| {
                    Error::invalid(
                        "agent_id",
                        format!("session {parent} has no sub-agent {a} (agent.start starts one)"),
                    )
                })
            })
            .await
    }

    /// Points a call's `session_id` at the thread its `agent_id` names (and clears it).
    pub async fn on_thread(
        &self,
        session_id: &mut String,
        agent_id: &mut Option<String>,
    ) -> Result<()> {
        if let Some(a) = agent_id.take() {
            *session_id = self.thread_of(session_id, Some(&a)).await?;
        }
        Ok(())
    }

    /// The parent's row and where its call `tool_use_id` stands.
    async fn parent_call(&self, sid: &str, tool_use_id: &str) -> Result<(SessionRow, bool, bool)> {
        let cell = self.cells.cell(sid);
        let mut guard = cell.state.lock().await;
        self.load_or_drop(sid, &mut guard).await?;
        let l = guard
            .as_ref()
            .ok_or_else(|| Error::SessionNotFound(sid.to_string()))?;
        let (called, answered) = call_state(&l.records, tool_use_id);
        Ok((l.row.clone(), called, answered))
    }

    /// `agent.start`.
    pub async fn start_agent(&self, p: AgentStartParams) -> Result<AgentStartResponse> {
        if p.agent_type.trim().is_empty() {
            return Err(Error::invalid("agent_type", "must not be empty"));
        }
        if p.tool_use_id.trim().is_empty() {
            return Err(Error::invalid("tool_use_id", "must not be empty"));
        }
        let agent_id = match p.agent_id {
            Some(a) => {
                check_agent_id(&a)?;
                a
            }
            None => Uuid::now_v7().simple().to_string()[16..].to_string(),
        };
        let (parent, called, answered) = self.parent_call(&p.session_id, &p.tool_use_id).await?;
        if parent.agent.is_some() {
            return Err(Error::invalid(
                "session_id",
                "is a sub-agent's thread: a sub-agent cannot start sub-agents",
            ));
        }
        if !called {
            return Err(Error::invalid(
                "tool_use_id",
                format!("no tool_use {} in session {}", p.tool_use_id, parent.id),
            ));
        }
        if answered {
            return Err(Error::invalid(
                "tool_use_id",
                format!("tool_use {} already has its result", p.tool_use_id),
            ));
        }
        let model = p.model.unwrap_or_else(|| parent.model.clone());
        check_model(&model)?;
        let mut settings = parent.settings.clone();
        if let Some(patch) = &p.settings {
            let mut merged = serde_json::to_value(&settings)?;
            merge_patch(&mut merged, patch.clone());
            settings = serde_json::from_value(merged)
                .map_err(|e| Error::invalid("settings", e.to_string()))?;
        }
        let light = p.instructions == AgentInstructions::Light;
        if light {
            settings.instructions.disabled = true;
        }
        check_settings(&settings, &model)?;
        if let Some(s) = &p.system {
            check_system(s)?;
        }
        let now = self.now_text();
        let row = SessionRow {
            id: Uuid::now_v7().to_string(),
            model,
            settings,
            system: p.system,
            start_date: self.clock.local_date(),
            git_snapshot: if light {
                None
            } else {
                parent.git_snapshot.clone()
            },
            parent_session_id: Some(parent.id.clone()),
            forked_from_uuid: None,
            title: Some(format!("{} agent {agent_id}", p.agent_type)),
            created_at: now.clone(),
            updated_at: now.clone(),
            agent: Some(AgentInfo {
                agent_id: agent_id.clone(),
                agent_type: p.agent_type.clone(),
                parent_session_id: parent.id.clone(),
                tool_use_id: p.tool_use_id.clone(),
                finished_at: None,
                result_uuid: None,
            }),
            ..parent.clone()
        };
        let tools = match p.tools {
            Some(t) => t,
            None => self.list_tools(&parent.id).await?,
        };
        check_tools(&tools)?;
        let (claude_md, loaded) = self.startup_instructions(&row).await?;
        let started = self
            .hooks_subagent_start(SubagentStartParams {
                session_id: parent.id.clone(),
                agent_id: agent_id.clone(),
                agent_type: p.agent_type,
            })
            .await?;
        let mut first = Vec::new();
        if !started.additional_context.is_empty() {
            first.push(context_record(
                HookEvent::SubagentStart,
                &started.additional_context,
                &now,
            ));
        }
        if let Some(prompt) = p.prompt {
            let mut typed: Vec<RecordInput> = vec![
                serde_json::from_value(json!({"type": "user", "content": prompt}))
                    .map_err(|e| Error::invalid("prompt", e.to_string()))?,
            ];
            validate_batch(&mut typed).map_err(|e| match e {
                Error::Invalid { message, .. } => Error::invalid("prompt", message),
                other => other,
            })?;
            first.extend(typed);
        }
        let memo = InstructionMemo {
            claude_md,
            boundary_uuid: String::new(),
            announced_date: row.start_date.clone(),
        };
        let (r, parent_id) = (row.clone(), parent.id.clone());
        let built = self
            .store
            .write(&row.id, move |tx| {
                if sessions::agent_thread(tx, &parent_id, &agent_id)?.is_some() {
                    return Err(Error::invalid(
                        "agent_id",
                        format!("session {parent_id} already has a sub-agent {agent_id}"),
                    ));
                }
                sessions::insert(tx, &r)?;
                sessions::set_tools(tx, &r.id, &tools)?;
                context_state::set_memo(tx, &r.id, &memo)?;
                context_state::add_loaded(tx, &r.id, &loaded)?;
                // What the parent has read, the agent may edit without reading again.
                context_state::copy_read_state(tx, &parent_id, &r.id)?;
                if first.is_empty() {
                    return Ok(Vec::new());
                }
                insert_batch(tx, &r.id, first, None, &now)
            })
            .await?;
        Ok(AgentStartResponse {
            session: row.info(built.len() as u64, built.last().map(|b| b.uuid.clone())),
            additional_context: started.additional_context,
        })
    }

    /// `agent.finish`: the answer becomes the parent's tool result for the call that
    /// started the agent; SubagentStop hooks may block it, and their reason is then the
    /// agent's to act on.
    pub async fn finish_agent(&self, p: AgentFinishParams) -> Result<AgentFinishResponse> {
        let thread = self.thread_of(&p.session_id, Some(&p.agent_id)).await?;
        let _one = self.agent_finishes.lock().await;
        let (mut row, records) = {
            let cell = self.cells.cell(&thread);
            let mut guard = cell.state.lock().await;
            self.load_or_drop(&thread, &mut guard).await?;
            let l = guard
                .as_ref()
                .ok_or_else(|| Error::SessionNotFound(thread.clone()))?;
            (l.row.clone(), l.records.clone())
        };
        let Some(mut agent) = row.agent.clone() else {
            return Err(Error::Internal(format!("{thread} holds no sub-agent")));
        };
        if agent.finished_at.is_some() {
            return Err(Error::invalid(
                "agent_id",
                format!("sub-agent {} has already finished", agent.agent_id),
            ));
        }
        let answer = last_answer(&records);
        let content = match p.result {
            Some(serde_json::Value::String(s)) => json!([{"type": "text", "text": s}]),
            Some(v @ serde_json::Value::Array(_)) => v,
            Some(_) => {
                return Err(Error::invalid(
                    "result",
                    "must be a string or an array of content blocks",
                ));
            }
            None => match &answer {
                Some(a) => json!([{"type": "text", "text": a}]),
                None => {
                    return Err(Error::invalid(
                        "result",
                        "the sub-agent has not answered yet: pass the result",
                    ));
                }
            },
        };
        let (_, called, answered) = self.parent_call(&p.session_id, &agent.tool_use_id).await?;
        if !called || answered {
            return Err(Error::invalid(
                "agent_id",
                format!(
                    "the call {} that started sub-agent {} {}",
                    agent.tool_use_id,
                    agent.agent_id,
                    if called {
                        "already has its result"
                    } else {
                        "is no longer in the session"
                    }
                ),
            ));
        }
        let result: RecordInput = serde_json::from_value(json!({
            "type": "user",
            "content": [{"type": "tool_result", "tool_use_id": agent.tool_use_id,
                         "content": content, "is_error": p.is_error}],
        }))
        .map_err(|e| Error::invalid("result", e.to_string()))?;
        let stop = self
            .hooks_subagent_stop(SubagentStopParams {
                session_id: p.session_id.clone(),
                agent_id: agent.agent_id.clone(),
                agent_type: agent.agent_type.clone(),
                stop_hook_active: false,
                agent_transcript_path: None,
                last_assistant_message: answer,
            })
            .await?;
        if stop.decision.as_deref() == Some("block") {
            let reason = stop.reason.clone().unwrap_or_default();
            if let Some(r) = feedback_record(HookEvent::SubagentStop, &stop, &self.now_text()) {
                self.append(AppendParams {
                    session_id: thread.clone(),
                    agent_id: None,
                    records: vec![r],
                    expected_last_uuid: None,
                })
                .await?;
            }
            return Err(Error::HookBlocked {
                event: HookEvent::SubagentStop.as_str().to_string(),
                reason: format!("sub-agent {} goes on: {reason}", agent.agent_id),
            });
        }
        let appended = self
            .append(AppendParams {
                session_id: p.session_id.clone(),
                agent_id: None,
                records: vec![result],
                expected_last_uuid: None,
            })
            .await?;
        let last = appended
            .appended
            .last()
            .cloned()
            .ok_or_else(|| Error::Internal("the result was not appended".into()))?;
        agent.finished_at = Some(self.now_text());
        agent.result_uuid = Some(last.uuid.clone());
        row.agent = Some(agent.clone());
        row.updated_at = self.now_text();
        let r = row.clone();
        self.store
            .write(&thread, move |tx| sessions::update(tx, &r))
            .await?;
        let cell = self.cells.cell(&thread);
        if let Some(l) = cell.state.lock().await.as_mut() {
            l.row.agent = row.agent;
        }
        Ok(AgentFinishResponse {
            agent,
            uuid: last.uuid,
            seq: last.seq,
        })
    }

    /// `agent.list`.
    pub async fn list_agents(&self, sid: &str) -> Result<AgentListResponse> {
        let parent = sid.to_string();
        let rows = self
            .store
            .read(move |db| {
                if !sessions::exists(db, &parent)? {
                    return Err(Error::SessionNotFound(parent.clone()));
                }
                let mut out = Vec::new();
                for row in sessions::agents(db, &parent)? {
                    let n = ctxd_store::records::count(db, &row.id)?;
                    out.push((row, n));
                }
                Ok(out)
            })
            .await?;
        Ok(AgentListResponse {
            agents: rows
                .into_iter()
                .filter_map(|(row, n)| {
                    Some(AgentThread {
                        agent: row.agent?,
                        session_id: row.id,
                        record_count: n,
                    })
                })
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(v: serde_json::Value) -> Record {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_last_answer_is_the_text_of_the_last_response_in_all_its_parts() {
        let records = vec![
            rec(
                json!({"uuid": "a", "seq": 1, "timestamp": "t", "type": "assistant", "message_id": "m1",
                       "content": [{"type": "text", "text": "old"}]}),
            ),
            rec(
                json!({"uuid": "b", "seq": 2, "timestamp": "t", "type": "assistant", "message_id": "m2",
                       "content": [{"type": "text", "text": "first"}]}),
            ),
            rec(
                json!({"uuid": "c", "seq": 3, "timestamp": "t", "type": "assistant", "message_id": "m2",
                       "content": [{"type": "text", "text": "second"}]}),
            ),
        ];
        assert_eq!(last_answer(&records).as_deref(), Some("first\nsecond"));
        assert_eq!(last_answer(&records[..1]).as_deref(), Some("old"));
        assert_eq!(last_answer(&[]), None);
    }

    #[test]
    fn agent_ids_are_short_printable_and_not_main() {
        assert!(check_agent_id("a1b2c3").is_ok());
        assert!(check_agent_id("main").is_err());
        assert!(check_agent_id(" ").is_err());
        assert!(check_agent_id("a\nb").is_err());
        assert!(check_agent_id(&"x".repeat(129)).is_err());
    }
}
