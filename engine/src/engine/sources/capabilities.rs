//! The capability surface at the engine: what the agent reports (MCP
//! servers, agent types, discovered tools, skill invocations), the per-compile delta
//! attachments, the MCP system memo of the first compile, and the re-announcement of the
//! current state in a new history after a compaction.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use ctxd_protocol::*;
use serde_json::Value;

use crate::engine::session::loaded::loaded_mut;
use crate::engine::session::transcript::insert_batch;
use crate::engine::sources::skills::Catalog;
use crate::engine::{Engine, Loaded, SessionCell};
use ctxd_pipeline::capabilities::{
    self as caps, Announced, CapabilityState, Current, Ledger, McpServer, Stamped,
};
use ctxd_pipeline::limits::{
    MAX_AGENT_TYPES, MAX_CAPABILITY_TEXT_BYTES, MAX_MCP_SERVERS, MAX_TOOLS,
};
use ctxd_pipeline::tool_plan;
use ctxd_store::capabilities as store;
use ctxd_store::error::{Error, Result};

/// A session's capabilities in memory: the stored state, the ledger folded from its
/// transcript, and what the skills step last saw. State and ledger are shared, so the
/// snapshot every compile takes copies neither (the ledger holds the sent-set of every
/// skill).
#[derive(Clone, Default)]
pub(crate) struct Caps {
    pub(crate) state: Arc<CapabilityState>,
    pub(crate) ledger: Arc<Ledger>,
    /// The skill catalog of the session's cwd.
    pub(crate) catalog: Option<(String, Arc<Catalog>)>,
    /// `(catalog generation, listing records folded)` at the last skills step.
    pub(crate) skills_seen: Option<(u64, u64)>,
    /// Some conditional skill waits for a touched path (valid while `skills_seen` is).
    pub(crate) dormant: Option<bool>,
    /// Skipped skill files the session's subscribers were told about.
    pub(crate) warned: BTreeSet<(String, String)>,
    /// Records looked at for touched paths by the last skills step, and the engine's
    /// `context.touch_paths` count then.
    pub(crate) touch_seen: (usize, u64),
}

impl Caps {
    pub fn new(state: CapabilityState) -> Caps {
        Caps {
            state: Arc::new(state),
            ..Caps::default()
        }
    }
}

impl Loaded {
    /// Session tools and connected servers' tools, first name wins.
    pub(crate) fn all_tools(&self) -> Cow<'_, [ToolSpec]> {
        tool_plan::all_tools(&self.tools, &self.caps.state.mcp)
    }

    fn discovery_order(&self) -> Vec<String> {
        self.caps
            .ledger
            .discovery_order(&self.records, &self.caps.state.discovered)
    }

    /// The tools the next request sends, in order (the session's own list, uncopied,
    /// when nothing is deferred and no server brings tools).
    pub(crate) fn tools_to_send(&self) -> Cow<'_, [ToolSpec]> {
        let order = self.discovery_order();
        match self.all_tools() {
            Cow::Borrowed(all) => tool_plan::plan_tools(all, &order),
            Cow::Owned(all) => Cow::Owned(tool_plan::plan_tools(&all, &order).into_owned()),
        }
    }

    /// The memoized "MCP Server Instructions" section, if any.
    pub(crate) fn mcp_system_section(&self) -> Option<String> {
        self.caps
            .state
            .mcp_memo
            .as_deref()
            .and_then(caps::mcp_section)
    }

    pub(crate) fn refresh_ledger(&mut self) {
        if !self
            .caps
            .ledger
            .is_current(&self.records, &self.boundary_uuid, &self.collapses)
        {
            Arc::make_mut(&mut self.caps.ledger).refresh(
                &self.records,
                &self.boundary_uuid,
                &self.collapses,
            );
        }
    }

    fn current_deltas(&self, announced: &Announced, base: &[caps::McpBlock]) -> Vec<Value> {
        let all = self.all_tools();
        let current = Current {
            deferred: tool_plan::deferred_names(&all),
            discovered: self.discovery_order(),
            agents: &self.caps.state.agents,
            mcp: self.caps.state.mcp_blocks(),
        };
        caps::deltas(&current, announced, base)
    }

    /// What a new history re-announces after its head (and kept tail): the capability
    /// deltas from the current state against what the history already holds — the
    /// system section, and deltas a kept tail carries.
    pub(crate) fn reannounce(&self, new_history: &[RecordInput]) -> Vec<Value> {
        let mut told = Announced::default();
        for a in new_history
            .iter()
            .filter(|r| !r.is_sidechain && !r.is_virtual)
            .filter_map(|r| r.attachment.as_ref())
        {
            told.apply(a);
        }
        let base = self
            .caps
            .state
            .mcp_memo
            .clone()
            .unwrap_or_else(|| self.caps.state.mcp_blocks());
        self.current_deltas(&told, &base)
    }
}

fn check_name(field: &str, name: &str) -> Result<()> {
    if name.trim().is_empty() {
        return Err(Error::invalid(field, "must not be empty"));
    }
    if name.len() > 256 || name.contains(['\n', '\r']) {
        return Err(Error::invalid(
            field,
            "must be one line of at most 256 bytes",
        ));
    }
    Ok(())
}

fn check_resources(resources: &[ctxd_protocol::McpResource]) -> Result<()> {
    use ctxd_pipeline::limits::{MAX_MCP_RESOURCES, MAX_MENTION_FILE_BYTES};
    if resources.len() > MAX_MCP_RESOURCES {
        return Err(Error::invalid(
            "resources",
            format!(
                "holds {} resources; a server registers at most {MAX_MCP_RESOURCES} (MAX_MCP_RESOURCES)",
                resources.len()
            ),
        ));
    }
    let total: u64 = resources
        .iter()
        .filter_map(|r| r.text.as_ref())
        .map(|t| t.len() as u64)
        .sum();
    if total > ctxd_pipeline::limits::MAX_MCP_RESOURCE_BYTES {
        return Err(Error::invalid(
            "resources",
            format!(
                "hold {total} bytes of text; a server registers at most {} (MAX_MCP_RESOURCE_BYTES)",
                ctxd_pipeline::limits::MAX_MCP_RESOURCE_BYTES
            ),
        ));
    }
    for (i, r) in resources.iter().enumerate() {
        if r.uri.trim().is_empty() || r.uri.chars().any(char::is_whitespace) {
            return Err(Error::invalid(
                format!("resources[{i}].uri"),
                "must be non-empty, without whitespace",
            ));
        }
        if resources[..i].iter().any(|o| o.uri == r.uri) {
            return Err(Error::invalid(
                format!("resources[{i}].uri"),
                format!("`{}` is registered twice", r.uri),
            ));
        }
        if r.text
            .as_ref()
            .is_some_and(|t| t.len() as u64 > MAX_MENTION_FILE_BYTES)
        {
            return Err(Error::invalid(
                format!("resources[{i}].text"),
                format!("is over {MAX_MENTION_FILE_BYTES} bytes (MAX_MENTION_FILE_BYTES)"),
            ));
        }
    }
    Ok(())
}

fn check_text(field: &str, text: Option<&str>) -> Result<()> {
    if let Some(t) = text
        && t.len() > MAX_CAPABILITY_TEXT_BYTES
    {
        return Err(Error::invalid(
            field,
            format!(
                "holds {} bytes; at most {MAX_CAPABILITY_TEXT_BYTES} (MAX_CAPABILITY_TEXT_BYTES)",
                t.len()
            ),
        ));
    }
    Ok(())
}

/// At the session's first compile, the MCP instructions of the servers connected so far
/// that go into `system` — except what the transcript already announced (an imported
/// session's deltas). `None` at every later compile.
fn first_mcp_memo(l: &Loaded) -> Option<Vec<caps::McpBlock>> {
    l.caps.state.mcp_memo.is_none().then(|| {
        let told = l.caps.ledger.announced.mcp_blocks(&[]);
        l.caps
            .state
            .mcp_blocks()
            .into_iter()
            .filter(|b| {
                !told
                    .get(&b.name)
                    .is_some_and(|t| t.is_empty() || *t == b.block)
            })
            .collect()
    })
}

/// Capability payloads as the attachment records a compile at `now` appends.
fn as_records(payloads: Vec<Value>, now: DateTime<Utc>) -> Vec<RecordInput> {
    let ts = ctxd_pipeline::clock::rfc3339(now);
    payloads
        .into_iter()
        .map(|p| ctxd_pipeline::attachments::record(p, &ts))
        .collect()
}

fn last_seq(l: &Loaded) -> u64 {
    l.records.last().map_or(0, |r| r.seq)
}

impl Engine {
    /// Per compile, before the other attachments: memoizes the MCP instructions into
    /// `system` at the session's first compile, then appends the capability deltas and the
    /// skill listing this compile owes the model, as records.
    pub(crate) async fn announce_capabilities(
        &self,
        cell: &SessionCell,
        l: &mut Loaded,
        now: DateTime<Utc>,
    ) -> Result<Vec<Record>> {
        l.refresh_ledger();
        let memo = first_mcp_memo(l);
        let (payloads, generation) = self.capability_payloads(cell, l, memo.as_deref()).await?;
        if payloads.is_empty() && memo.is_none() {
            l.caps.skills_seen = Some((generation, l.caps.ledger.sent_skills.records));
            return Ok(Vec::new());
        }
        let mut state = (*l.caps.state).clone();
        if let Some(m) = memo {
            state.mcp_memo = Some(m);
        }
        let inputs = as_records(payloads, now);
        let (sid, st, now_text) = (l.row.id.clone(), state.clone(), self.now_text());
        let built = self
            .store
            .write_current(&l.row.id, l.revision, move |tx| {
                store::save(tx, &sid, &st)?;
                if inputs.is_empty() {
                    return Ok(Vec::new());
                }
                insert_batch(tx, &sid, inputs, None, &now_text)
            })
            .await?;
        l.caps.state = Arc::new(state);
        if !built.is_empty() {
            l.records.extend(built.iter().cloned());
            self.emit_appended(cell, &l.row.id, &built);
        }
        l.refresh_ledger();
        l.caps.skills_seen = Some((generation, l.caps.ledger.sent_skills.records));
        Ok(built)
    }

    /// The capability attachments the next compile would append, found without
    /// appending them or changing what the session remembers of its announcements.
    pub(crate) async fn pending_capabilities(
        &self,
        cell: &SessionCell,
        l: &mut Loaded,
        now: DateTime<Utc>,
    ) -> Result<Vec<RecordInput>> {
        l.refresh_ledger();
        let memo = first_mcp_memo(l);
        // Where the skill listing last looked for touched paths: the real compile must
        // look at the same records again.
        let looked = l.caps.touch_seen;
        let found = self.capability_payloads(cell, l, memo.as_deref()).await;
        l.caps.touch_seen = looked;
        Ok(as_records(found?.0, now))
    }

    /// The capability deltas and the skill listing owed to the model, with the skill
    /// catalogue's generation; `memo` is the MCP instructions the first compile puts
    /// into `system`, when this is that compile.
    async fn capability_payloads(
        &self,
        cell: &SessionCell,
        l: &mut Loaded,
        memo: Option<&[caps::McpBlock]>,
    ) -> Result<(Vec<Value>, u64)> {
        let base: &[caps::McpBlock] = match (memo, &l.caps.state.mcp_memo) {
            (Some(m), _) => m,
            (None, Some(m)) => m,
            (None, None) => &[],
        };
        let mut payloads = l.current_deltas(&l.caps.ledger.announced, base);
        let (listing, generation) = self.skill_listing(cell, l).await?;
        payloads.extend(listing);
        Ok((payloads, generation))
    }

    /// The invoked skills a new history restores (the same for every candidate of one
    /// compaction). Never fails the compaction: a problem is logged and nothing restored.
    pub(crate) async fn restored_skills(&self, l: &Loaded) -> Option<Value> {
        self.invoked_restore(l).await.unwrap_or_else(|e| {
            tracing::warn!(session = %l.row.id, error = %e, "could not restore invoked skills");
            None
        })
    }

    /// Runs `change` on the session's capability state under its lock, checks the bounds,
    /// stores the result and tells subscribers. `change` returns how the change reaches
    /// the model.
    async fn change_caps(
        &self,
        sid: &str,
        change: impl FnOnce(&mut CapabilityState, &Loaded) -> Result<&'static str>,
    ) -> Result<CapabilityChangeResponse> {
        let cell = self.cells.cell(sid);
        let mut guard = cell.state.lock().await;
        self.load_or_drop(sid, &mut guard).await?;
        let l = loaded_mut(&mut guard)?;
        let mut state = (*l.caps.state).clone();
        let announced_by = change(&mut state, l)?;
        let tool_count = tool_plan::all_tools(&l.tools, &state.mcp).len();
        if tool_count > MAX_TOOLS {
            return Err(Error::invalid(
                "tools",
                format!(
                    "the session would have {tool_count} tools; at most {MAX_TOOLS} (MAX_TOOLS)"
                ),
            ));
        }
        let (s, st) = (sid.to_string(), state.clone());
        // The whole document is rewritten: built on a copy another daemon made stale, it
        // would drop what that daemon stored (a conflict instead).
        self.store
            .write_current(sid, l.revision, move |tx| {
                if !ctxd_store::sessions::exists(tx, &s)? {
                    return Err(Error::SessionNotFound(s.clone()));
                }
                store::save(tx, &s, &st)
            })
            .await?;
        l.caps.state = Arc::new(state);
        drop(guard);
        self.emit(
            &cell,
            SessionEvent::SessionUpdated {
                session_id: sid.to_string(),
            },
        );
        Ok(CapabilityChangeResponse {
            announced_by: announced_by.into(),
            tool_count: ctxd_pipeline::saturate::u32_of(tool_count),
        })
    }

    /// `capabilities.mcp_connect`.
    pub async fn mcp_connect(&self, p: McpConnectParams) -> Result<CapabilityChangeResponse> {
        check_name("name", &p.name)?;
        check_text("instructions", p.instructions.as_deref())?;
        crate::validate::check_tools(&p.tools)?;
        check_resources(&p.resources)?;
        self.change_caps(&p.session_id, move |st, l| {
            for (i, t) in p.tools.iter().enumerate() {
                if l.tools.iter().any(|s| s.name == t.name) {
                    return Err(Error::invalid(
                        format!("tools[{i}].name"),
                        format!("`{}` is already a tool of the session", t.name),
                    ));
                }
                if let Some(other) = st
                    .mcp
                    .iter()
                    .find(|s| s.name != p.name && s.tools.iter().any(|x| x.name == t.name))
                {
                    return Err(Error::invalid(
                        format!("tools[{i}].name"),
                        format!(
                            "`{}` is already a tool of MCP server `{}`",
                            t.name, other.name
                        ),
                    ));
                }
            }
            let server = McpServer {
                name: p.name.clone(),
                instructions: p.instructions.clone(),
                tools: p.tools.clone(),
                resources: p.resources.clone(),
            };
            let full = st.mcp.len() >= MAX_MCP_SERVERS;
            match st.mcp.iter_mut().find(|s| s.name == p.name) {
                Some(s) => *s = server,
                None if full => {
                    return Err(Error::invalid(
                        "name",
                        format!(
                            "{MAX_MCP_SERVERS} MCP servers are connected already (MAX_MCP_SERVERS)"
                        ),
                    ));
                }
                None => st.mcp.push(server),
            }
            Ok(if st.mcp_memo.is_none() {
                "system"
            } else {
                "delta"
            })
        })
        .await
    }

    /// `capabilities.mcp_set_instructions`.
    pub async fn mcp_set_instructions(
        &self,
        p: McpSetInstructionsParams,
    ) -> Result<CapabilityChangeResponse> {
        check_name("name", &p.name)?;
        check_text("instructions", p.instructions.as_deref())?;
        self.change_caps(&p.session_id, move |st, _| {
            let s = st
                .mcp
                .iter_mut()
                .find(|s| s.name == p.name)
                .ok_or_else(|| Error::invalid("name", "no MCP server of this name is connected"))?;
            s.instructions.clone_from(&p.instructions);
            Ok(if st.mcp_memo.is_none() {
                "system"
            } else {
                "delta"
            })
        })
        .await
    }

    /// `capabilities.mcp_disconnect`.
    pub async fn mcp_disconnect(&self, p: McpDisconnectParams) -> Result<CapabilityChangeResponse> {
        check_name("name", &p.name)?;
        self.change_caps(&p.session_id, move |st, _| {
            let before = st.mcp.len();
            st.mcp.retain(|s| s.name != p.name);
            if st.mcp.len() == before {
                return Err(Error::invalid(
                    "name",
                    "no MCP server of this name is connected",
                ));
            }
            Ok(if st.mcp_memo.is_none() {
                "system"
            } else {
                "delta"
            })
        })
        .await
    }

    /// `capabilities.set_agents`.
    pub async fn set_agents(&self, p: SetAgentsParams) -> Result<CapabilityChangeResponse> {
        if p.agents.len() > MAX_AGENT_TYPES {
            return Err(Error::invalid(
                "agents",
                format!(
                    "holds {} agent types; at most {MAX_AGENT_TYPES} (MAX_AGENT_TYPES)",
                    p.agents.len()
                ),
            ));
        }
        let mut seen = BTreeSet::new();
        for (i, a) in p.agents.iter().enumerate() {
            check_name(&format!("agents[{i}].type"), &a.agent_type)?;
            check_text(&format!("agents[{i}].description"), Some(&a.description))?;
            if !seen.insert(a.agent_type.as_str()) {
                return Err(Error::invalid(format!("agents[{i}].type"), "appears twice"));
            }
            for (j, t) in a.tools.iter().flatten().enumerate() {
                check_name(&format!("agents[{i}].tools[{j}]"), t)?;
            }
        }
        self.change_caps(&p.session_id, move |st, _| {
            st.agents = p.agents;
            Ok("delta")
        })
        .await
    }

    /// `capabilities.discover_tools`.
    pub async fn discover_tools(&self, p: DiscoverToolsParams) -> Result<CapabilityChangeResponse> {
        if p.names.is_empty() {
            return Err(Error::invalid("names", "must name at least one tool"));
        }
        self.change_caps(&p.session_id, move |st, l| {
            let all = tool_plan::all_tools(&l.tools, &st.mcp);
            let deferred = tool_plan::deferred_names(&all);
            let seq = last_seq(l);
            for (i, n) in p.names.iter().enumerate() {
                if !deferred.contains(&n.as_str()) {
                    return Err(Error::invalid(
                        format!("names[{i}]"),
                        format!("`{n}` is not a deferred tool of this session"),
                    ));
                }
            }
            for n in p.names {
                if !st.discovered.iter().any(|d| d.name == n) {
                    st.discovered.push(Stamped { name: n, seq });
                }
            }
            Ok("tools")
        })
        .await
    }

    /// `capabilities.invoke_skill`.
    pub async fn invoke_skill(&self, p: InvokeSkillParams) -> Result<()> {
        check_name("name", &p.name)?;
        let name = p.name.trim_start_matches('/').to_string();
        let cell = self.cells.cell(&p.session_id);
        let mut guard = cell.state.lock().await;
        self.load_or_drop(&p.session_id, &mut guard).await?;
        let l = loaded_mut(&mut guard)?;
        if self.find_skill(&cell, l, &name).await?.is_none() {
            return Err(Error::invalid(
                "name",
                format!("the session has no skill `{name}`"),
            ));
        }
        let mut state = (*l.caps.state).clone();
        state.invoked.push(Stamped {
            name,
            seq: last_seq(l),
        });
        let (s, st) = (p.session_id.clone(), state.clone());
        self.store
            .write_current(&p.session_id, l.revision, move |tx| {
                store::save(tx, &s, &st)
            })
            .await?;
        l.caps.state = Arc::new(state);
        Ok(())
    }

    /// `capabilities.get`.
    pub async fn capabilities(&self, sid: &str) -> Result<CapabilitiesResponse> {
        let cell = self.cells.cell(sid);
        let mut guard = cell.state.lock().await;
        self.load_or_drop(sid, &mut guard).await?;
        let l = loaded_mut(&mut guard)?;
        l.refresh_ledger();
        let all = l.all_tools();
        let order = l.discovery_order();
        let tools = tool_plan::tool_fates(&all, &order)
            .into_iter()
            .map(|(t, fate)| ToolState {
                name: t.name.clone(),
                state: fate.as_str().into(),
                mcp_server: t.mcp_server.clone(),
            })
            .collect();
        let memo: BTreeSet<&str> = l
            .caps
            .state
            .mcp_memo
            .iter()
            .flatten()
            .map(|b| b.name.as_str())
            .collect();
        let announced = &l.caps.ledger.announced;
        let base = l.caps.state.mcp_memo.clone().unwrap_or_default();
        Ok(CapabilitiesResponse {
            tools,
            mcp_servers: l
                .caps
                .state
                .mcp
                .iter()
                .map(|s| McpServerState {
                    name: s.name.clone(),
                    tools: s.tools.iter().map(|t| t.name.clone()).collect(),
                    instructions_chars: s
                        .instructions
                        .as_deref()
                        .map_or(0, |t| t.chars().count() as u64),
                    in_system: memo.contains(s.name.as_str()),
                })
                .collect(),
            agents: l.caps.state.agents.clone(),
            announced_deferred_tools: announced.deferred_names(),
            announced_agent_types: announced.agent_types(),
            announced_mcp_servers: announced.mcp_blocks(&base).into_keys().collect(),
        })
    }
}
