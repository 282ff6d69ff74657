//! The compactor: full compact (autocompact, manual, reactive), the post-compact rebuild
//! and the circuit breaker. Which summariser writes the summary is `summariser.rs`.

use crate::engine::CompactionKind;
use std::path::{Path, PathBuf};
use std::time::Instant;

use chrono::{DateTime, Utc};
use ctxd_protocol::*;

use crate::engine::compaction::collapse;
use crate::engine::compaction::summariser::provider_error;
use crate::engine::compile::{Ask, History, assemble};
use crate::engine::session::transcript::{expect_last, insert_batch, materialise};
use crate::engine::sources::files::snapshot;
use crate::engine::{Engine, Loaded, SessionCell};
use ctxd_pipeline::autocompact::{
    self, MAX_CONSECUTIVE_FAILURES, MAX_TRUNCATION_RETRIES, RoomBudget, Trigger,
};
use ctxd_pipeline::compile::Compiled;
use ctxd_pipeline::{attachments, thresholds};
use ctxd_providers::{ProviderError, Summariser, SummaryInput};
use ctxd_store::context_state;
use ctxd_store::error::{Error, Result};

/// What a compaction is asked: why it runs, the user's instructions, the compile's
/// time, and the size of the history it replaces.
pub(crate) struct CompactAsk {
    pub(crate) trigger: Trigger,
    pub(crate) instructions: Option<String>,
    pub(crate) now: DateTime<Utc>,
    pub(crate) pre_tokens: u64,
}

impl Engine {
    /// `Some(Ok(()))` when autocompact should run now, `Some(Err(why))` when it is due
    /// but may not run, `None` when it is not due.
    pub(crate) async fn autocompact_due(
        &self,
        l: &Loaded,
        compiled: &Compiled,
    ) -> Result<Option<std::result::Result<(), String>>> {
        if !compiled.metadata.context.above_autocompact || l.row.settings.autocompact == Some(false)
        {
            return Ok(None);
        }
        if matches!(
            self.summaries.config(&l.row.settings),
            SummariserConfig::Server {
                mode: ServerCompactionMode::Threshold,
                ..
            }
        ) {
            // One owner: the provider compacts past its own trigger.
            return Ok(Some(Err(
                "the provider compacts this session (summariser server, threshold)".into(),
            )));
        }
        let sid = l.row.id.clone();
        let failures = self
            .store
            .read(move |c| context_state::compaction_failures(c, &sid))
            .await?;
        let collapses = collapse::live(l);
        let settings = ctxd_pipeline::collapse::CollapseSettings::from(&l.row.settings.collapse);
        let window = ctxd_pipeline::thresholds::effective_window(&l.row.model);
        if ctxd_pipeline::collapse::autocompact_stands_aside(
            &collapses,
            compiled.metadata.context.effective_tokens,
            window,
            &settings,
        ) {
            return Ok(Some(Err(
                "context collapse is active; autocompact stands aside until the block level".into(),
            )));
        }
        if failures >= MAX_CONSECUTIVE_FAILURES {
            return Ok(Some(Err(format!(
                "circuit breaker open after {failures} consecutive failures; compact manually"
            ))));
        }
        if let Some((mark, s)) = &l.no_room
            && *mark == last_message_seq(&l.records)
        {
            return Ok(Some(Err(format!(
                "cannot make room ({}); autocompact waits for new messages",
                s.reason
            ))));
        }
        if !autocompact::new_messages_since_boundary(&ctxd_pipeline::projection::project(
            &l.records,
        )) {
            return Ok(Some(Err(
                "nothing was said since the last compaction; autocompact waits for new messages"
                    .into(),
            )));
        }
        Ok(Some(Ok(())))
    }

    /// A failed compaction counts toward the circuit breaker only when autocompact ran it.
    async fn record_failure(&self, sid: &str, error: &str, trigger: Trigger) {
        if trigger == Trigger::Auto {
            self.record_breaker(sid, Some(error)).await;
        }
    }

    /// The circuit breaker's count: one more failure (`Some(why)`), or none (`None`, a
    /// compaction that worked).
    pub(crate) async fn record_breaker(&self, sid: &str, failure: Option<&str>) {
        let (s, why) = (sid.to_string(), failure.map(str::to_string));
        let r = self
            .store
            .write(sid, move |tx| {
                let n = match why {
                    Some(_) => context_state::compaction_failures(tx, &s)? + 1,
                    None => 0,
                };
                context_state::set_compaction_failures(tx, &s, n, why.as_deref())
            })
            .await;
        if let Err(e) = r {
            tracing::warn!(session = sid, error = %e, "could not record a compaction's outcome");
        }
    }

    /// Compacts the session under its lock: summarises the projection, appends
    /// `[boundary, summary, restored files]`, resets what a new history resets.
    pub(crate) async fn compact_locked(
        &self,
        cell: &SessionCell,
        l: &mut Loaded,
        ask: CompactAsk,
    ) -> Result<CompactionReport> {
        let started = Instant::now();
        let trigger = ask.trigger;
        let mut sm_skipped = None;
        if let SummariserConfig::Server {
            instructions: own, ..
        } = self.summaries.config(&l.row.settings)
        {
            // The provider summarises: no session-memory compact of ctxd's first.
            let instructions = self
                .hooks_pre_compact(l, trigger, ask.instructions.or(own))
                .await;
            let ask = CompactAsk {
                instructions,
                ..ask
            };
            let result = self.server_compact(cell, l, ask, started).await;
            self.activity.compaction(
                CompactionKind::Server,
                trigger == Trigger::Auto,
                result.is_ok(),
            );
            if let Err(e) = &result {
                self.record_failure(&l.row.id, &e.to_string(), trigger)
                    .await;
            }
            return result;
        }
        if trigger == Trigger::Auto {
            // Session-memory compact first; it says why when it cannot help.
            match self
                .session_memory_compact(cell, l, ask.now, ask.pre_tokens)
                .await
            {
                Ok(Ok(report)) => {
                    self.activity
                        .compaction(CompactionKind::SessionMemory, true, true);
                    return Ok(report);
                }
                Ok(Err(why)) => sm_skipped = Some(why),
                Err(e) => {
                    self.activity
                        .compaction(CompactionKind::SessionMemory, true, false);
                    tracing::warn!(session = %l.row.id, error = %e, "session-memory compact failed; full compact");
                    sm_skipped = Some(format!("failed: {e}"));
                }
            }
        }
        let result = self
            .compact_inner(cell, l, ask, started)
            .await
            .map(|mut r| {
                r.session_memory_skipped = sm_skipped;
                r
            });
        self.activity.compaction(
            CompactionKind::Full,
            trigger == Trigger::Auto,
            result.is_ok(),
        );
        if let Err(e) = &result {
            self.record_failure(&l.row.id, &e.to_string(), trigger)
                .await;
        }
        result
    }

    /// Asks the summariser for a summary of `refs`, dropping the oldest API rounds when
    /// the request itself is too long (`head_truncated`: rounds before `refs` were dropped
    /// already). Returns the summary, how many rounds were dropped and where the
    /// summarised part starts in `refs`.
    async fn summarise_view(
        &self,
        summariser: &Summariser,
        l: &Loaded,
        refs: &[&Record],
        instructions: Option<&str>,
        max_summary_tokens: u64,
        head_truncated: bool,
    ) -> Result<(String, usize, usize)> {
        let rounds = autocompact::api_rounds(refs);
        let mut dropped = 0usize;
        let mut start = 0usize;
        let mut attempt = 0;
        loop {
            let part = &refs[start..];
            let messages = l.summary_messages(part);
            let input = SummaryInput {
                records: part,
                messages: &messages,
                custom_instructions: instructions,
                head_truncated: head_truncated || dropped > 0,
                max_summary_tokens,
            };
            match summariser.summarise(input).await {
                Ok(s) if !s.trim().is_empty() => return Ok((s, dropped, start)),
                Ok(_) => {
                    return Err(Error::CompactionFailed(
                        "the summariser returned an empty summary".into(),
                    ));
                }
                Err(ProviderError::PromptTooLong { token_gap })
                    if attempt < MAX_TRUNCATION_RETRIES =>
                {
                    let n = autocompact::rounds_to_drop(refs, &rounds, dropped, token_gap);
                    if n == 0 {
                        return Err(Error::CompactionFailed(
                            "the summary request is too long even with only the last round left"
                                .into(),
                        ));
                    }
                    dropped += n;
                    start = rounds.get(dropped).map_or(refs.len(), |r| r.start);
                    attempt += 1;
                    tracing::info!(session = %l.row.id, dropped, "summary request too long; dropping the oldest rounds");
                }
                Err(ProviderError::PromptTooLong { .. }) => {
                    return Err(Error::CompactionFailed(format!(
                        "the summary request was still too long after {MAX_TRUNCATION_RETRIES} head truncations"
                    )));
                }
                Err(e) => return Err(provider_error(e)),
            }
        }
    }

    async fn compact_inner(
        &self,
        cell: &SessionCell,
        l: &mut Loaded,
        ask: CompactAsk,
        started: Instant,
    ) -> Result<CompactionReport> {
        let CompactAsk {
            trigger,
            instructions,
            now,
            pre_tokens,
        } = ask;
        let summariser = self.summaries.summariser(l, cell, &self.env)?;
        let budget = room_budget(l);
        // PreCompact hooks' stdout joins the custom instructions the summariser reads.
        let instructions = self.hooks_pre_compact(l, trigger, instructions).await;
        let reannounced = self.reannounced_after_compaction(l).await;
        let restore_skipped;
        let (best, summary_chars, summarised_records, dropped) = {
            let shown = l.shown();
            let refs: Vec<&Record> = shown.iter().map(|c| c.as_ref()).collect();
            if !refs.iter().any(|r| is_sendable(r)) {
                return Err(Error::CompactionFailed(
                    "there is nothing to compact yet".into(),
                ));
            }
            let (summary, dropped, start) = self
                .summarise_view(
                    &summariser,
                    l,
                    &refs,
                    instructions.as_deref(),
                    budget.summary_tokens,
                    false,
                )
                .await?;
            // Files to restore: the most recently read, as they are on disk now.
            let Restorable { files, skipped } = read_files(
                autocompact::recently_read(&refs, autocompact::RESTORE_MAX_FILES),
                crate::discovery::workspace_roots(&l.row.cwd, &l.row.additional_directories),
            )
            .await?;
            restore_skipped = skipped;
            let part = &refs[start..];
            let summarised: Vec<&Record> =
                part.iter().copied().filter(|r| is_sendable(r)).collect();
            let ts = ctxd_pipeline::clock::rfc3339(now);
            let build = |summary: &str, level: u32| -> Result<Candidate> {
                let head = autocompact::head_records(
                    autocompact::boundary_data(
                        trigger,
                        pre_tokens,
                        &summarised,
                        summariser.kind(),
                        dropped,
                    ),
                    autocompact::summary_message(summary, false, trigger),
                    &ts,
                );
                Candidate::build(
                    l,
                    head,
                    &files,
                    &reannounced,
                    &budget.tightened(level),
                    level,
                    &ts,
                    now,
                )
            };
            let mut best = tightest(budget.target, |level| build(&summary, level))?;
            let mut summary_chars = summary.chars().count() as u64;
            // Still too big with no file restored: the summary itself is the excess. One
            // more request, for the tightest summary budget.
            let shortest = budget.tightened(autocompact::TIGHTENINGS).summary_tokens;
            if best.estimate > budget.target
                && ctxd_pipeline::tokens::scaled(summary_chars.div_ceil(4)) > shortest
            {
                let shorter = Shorter {
                    summariser: &summariser,
                    part,
                    instructions: instructions.as_deref(),
                    max_tokens: shortest,
                    head_truncated: dropped > 0,
                };
                if let Some(shorter) = self.shorter_summary(l, &shorter).await {
                    let c = build(&shorter, autocompact::TIGHTENINGS)?;
                    if c.estimate < best.estimate {
                        best = c;
                        summary_chars = shorter.chars().count() as u64;
                    }
                }
            }
            (best, summary_chars, summarised.len() as u64, dropped)
        };
        check_room(l, &best, &budget)?;
        let level = best.level;
        let restored_files = best.restored.clone();
        let (boundary_uuid, post_tokens) = self
            .write_new_history(cell, l, best, trigger, pre_tokens, now)
            .await?;
        Ok(CompactionReport {
            trigger: trigger.as_str().into(),
            boundary_uuid,
            pre_tokens,
            post_tokens,
            summariser: summariser.kind().into(),
            summary_chars,
            summarised_records,
            head_truncated_rounds: dropped as u64,
            restored_files,
            restore_skipped,
            micros: ctxd_pipeline::saturate::micros(started.elapsed()),
            kind: "full".into(),
            kept_records: 0,
            session_memory_skipped: None,
            target_tokens: budget.target,
            tightenings: level,
        })
    }

    /// A second summary of the same records, within `max_tokens`; `None` when the
    /// call fails or had to drop records (only a summary of the same records stands in
    /// for the first).
    async fn shorter_summary(&self, l: &Loaded, s: &Shorter<'_>) -> Option<String> {
        let shorter = self
            .summarise_view(
                s.summariser,
                l,
                s.part,
                s.instructions,
                s.max_tokens,
                s.head_truncated,
            )
            .await;
        match shorter {
            Ok((text, 0, _)) => Some(text),
            Ok(_) => None,
            Err(e) => {
                tracing::info!(session = %l.row.id, error = %e, "a shorter summary failed; keeping the first");
                None
            }
        }
    }

    /// Appends a new history (`[boundary, summary, …]`) and resets what a new history
    /// resets, in one transaction; then the in-memory state and the events. Returns the
    /// boundary's uuid and the estimate of the new history.
    pub(crate) async fn write_new_history(
        &self,
        cell: &SessionCell,
        l: &mut Loaded,
        history: Candidate,
        trigger: Trigger,
        pre_tokens: u64,
        now: DateTime<Utc>,
    ) -> Result<(String, u64)> {
        let (mut new_records, read_states) = (history.records, history.read_states);
        let weighed = new_records.len();
        // SessionStart (source compact) context follows the new history's head.
        let post_compact = self
            .hooks_before_new_history(l, trigger, &mut new_records)
            .await;
        // Hook output is the user's own context: the only part the candidate did not weigh.
        let hooked = new_records.len() > weighed;
        let sid = l.row.id.clone();
        let now_text = self.now_text();
        let expected = expect_last(l);
        let built = self
            .store
            .write(&l.row.id, move |tx| {
                let built = insert_batch(tx, &sid, new_records, expected, &now_text)?;
                reset_for_new_history(tx, &sid)?;
                for s in &read_states {
                    context_state::put_read_state(tx, &sid, s)?;
                }
                Ok(built)
            })
            .await?;
        let (boundary_uuid, post_tokens) =
            self.take_new_history(cell, l, &built, trigger, pre_tokens, now)?;
        debug_assert!(
            hooked || post_tokens == history.estimate,
            "a compaction weighed its new history with another estimate than the compile's"
        );
        self.hooks_after_new_history(post_compact);
        Ok((boundary_uuid, post_tokens))
    }

    /// Takes in a new history just written (its first record the boundary): the
    /// in-memory state a new history resets, the estimate of it, and the events.
    /// Returns the boundary's uuid and that estimate.
    pub(crate) fn take_new_history(
        &self,
        cell: &SessionCell,
        l: &mut Loaded,
        built: &[Record],
        trigger: Trigger,
        pre_tokens: u64,
        now: DateTime<Utc>,
    ) -> Result<(String, u64)> {
        let boundary_uuid = built.first().map(|r| r.uuid.clone()).unwrap_or_default();
        l.records.extend(built.iter().cloned());
        l.boundary_uuid.clone_from(&boundary_uuid);
        l.pinned_edits.clear();
        l.no_room = None;
        let post_tokens = assemble(l, None, &Ask::at(now))?
            .metadata
            .context
            .effective_tokens;
        self.emit(
            cell,
            SessionEvent::RecordsAppended {
                session_id: l.row.id.clone(),
                records: built
                    .iter()
                    .map(|r| AppendedRecord {
                        uuid: r.uuid.clone(),
                        seq: r.seq,
                    })
                    .collect(),
                full_records: None,
            },
        );
        self.emit(
            cell,
            SessionEvent::Compacted {
                session_id: l.row.id.clone(),
                trigger: trigger.as_str().into(),
                boundary_uuid: boundary_uuid.clone(),
                pre_tokens,
                post_tokens,
            },
        );
        Ok((boundary_uuid, post_tokens))
    }
}

/// A file re-read for restoring: path, content, and its read state.
pub(crate) type ReadFile = (String, String, context_state::ReadState);

/// What a compaction restores of the recently read files: the ones re-read, and the
/// ones left out with why.
pub(crate) struct Restorable {
    pub(crate) files: Vec<ReadFile>,
    pub(crate) skipped: Vec<String>,
}

/// Re-reads the wanted files (newest first) from disk. Only files inside the session's
/// workspace (`roots`, symlinks resolved) are read: ctxd reads with the daemon's
/// permissions, and a file outside was read by the client's tool, which the daemon's
/// rights need not match. Unreadable and outside files are left out and named.
pub(crate) async fn read_files(wanted: Vec<String>, roots: Vec<PathBuf>) -> Result<Restorable> {
    tokio::task::spawn_blocking(move || {
        let mut files = Vec::new();
        let mut skipped = Vec::new();
        for p in wanted {
            if files.len() >= autocompact::RESTORE_MAX_FILES {
                break;
            }
            if !crate::discovery::inside_any(Path::new(&p), &roots) {
                skipped.push(format!("{p}: outside the session's workspace"));
                continue;
            }
            match snapshot(Path::new(&p)) {
                Some(state) => match state.content.clone() {
                    Some(text) => files.push((p, text, state)),
                    None => skipped.push(format!("{p}: too large or not text")),
                },
                None => skipped.push(format!("{p}: not a readable file")),
            }
        }
        Restorable { files, skipped }
    })
    .await
    .map_err(|e| Error::Internal(format!("restore task: {e}")))
}

/// A new history a compaction weighs: its records, the read state of the files it
/// restores, and the estimate the next compile will compute for it.
pub(crate) struct Candidate {
    pub(crate) records: Vec<RecordInput>,
    pub(crate) read_states: Vec<context_state::ReadState>,
    pub(crate) restored: Vec<String>,
    pub(crate) estimate: u64,
    /// How many times the caps were halved to build it.
    pub(crate) level: u32,
}

impl Engine {
    /// What every candidate new history of one compaction re-announces after its restored
    /// files: the plan-mode state (with the plan file) and the invoked skills.
    pub(crate) async fn reannounced_after_compaction(&self, l: &Loaded) -> Vec<serde_json::Value> {
        let mut out = self.plan_after_compaction(&l.row);
        out.extend(self.restored_skills(l).await);
        out
    }
}

impl Candidate {
    /// `head` (boundary, summary, any kept tail) plus the files restored within the
    /// budget's caps and the re-announced attachments (`reannounced`: plan mode and the
    /// invoked skills; then the capability deltas), weighed by the compile.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn build(
        l: &Loaded,
        mut records: Vec<RecordInput>,
        files: &[ReadFile],
        reannounced: &[serde_json::Value],
        budget: &RoomBudget,
        level: u32,
        ts: &str,
        now: DateTime<Utc>,
    ) -> Result<Candidate> {
        let input: Vec<(String, String)> = files
            .iter()
            .map(|(p, t, _)| (p.clone(), t.clone()))
            .collect();
        let restored = autocompact::restore_attachments(
            &input,
            budget.restore_file_tokens,
            budget.restore_total_tokens,
        );
        let paths: Vec<String> = restored
            .iter()
            .filter_map(|a| a["filename"].as_str().map(str::to_string))
            .collect();
        let read_states = files
            .iter()
            .filter(|(p, _, _)| paths.contains(p))
            .map(|(_, _, s)| s.clone())
            .collect();
        records.extend(
            autocompact::rebuild_attachments(&restored, reannounced)
                .into_iter()
                .map(|a| attachments::record(a, ts)),
        );
        let deltas = l.reannounce(&records);
        records.extend(deltas.into_iter().map(|a| attachments::record(a, ts)));
        let estimate = estimate_new_history(l, &records, now)?;
        Ok(Candidate {
            records,
            read_states,
            restored: paths,
            estimate,
            level,
        })
    }
}

/// The estimate the next compile computes for a new history, by the compile itself: the
/// history opens with a compact boundary, so compiling it alone gives the projection the
/// whole transcript would; it carries no usage, so everything is estimated, system
/// prompt, tools and instructions included.
pub(crate) fn estimate_new_history(
    l: &Loaded,
    history: &[RecordInput],
    now: DateTime<Utc>,
) -> Result<u64> {
    let last = l.records.last().map(|r| (r.seq, r.uuid.clone()));
    let records = materialise(history.to_vec(), last, &ctxd_pipeline::clock::rfc3339(now));
    let history = History::unindexed(
        &records,
        records.first().map_or("", |r| r.uuid.as_str()),
        &[],
    );
    Ok(assemble(l, Some(history), &Ask::at(now))?
        .metadata
        .context
        .effective_tokens)
}

/// Builds candidates at growing tightness until one reaches `target`: that one, or the
/// smallest of them.
pub(crate) fn tightest(
    target: u64,
    mut build: impl FnMut(u32) -> Result<Candidate>,
) -> Result<Candidate> {
    let mut best: Option<Candidate> = None;
    for level in 0..=autocompact::TIGHTENINGS {
        let c = build(level)?;
        if c.estimate <= target {
            return Ok(c);
        }
        if best.as_ref().is_none_or(|b| c.estimate < b.estimate) {
            best = Some(c);
        }
    }
    best.ok_or_else(|| Error::Internal("no compaction candidate was built".into()))
}

/// The caps of a compaction in this session.
pub(crate) fn room_budget(l: &Loaded) -> RoomBudget {
    RoomBudget::new(
        thresholds::autocompact_threshold(&l.row.model, &l.row.settings),
        l.row.model.max_output_tokens,
    )
}

/// What a second, shorter summary is asked of.
struct Shorter<'a> {
    summariser: &'a Summariser,
    /// The records the first summary covered.
    part: &'a [&'a Record],
    instructions: Option<&'a str>,
    max_tokens: u64,
    /// Whether the first summary had to drop the oldest rounds.
    head_truncated: bool,
}

fn is_sendable(r: &Record) -> bool {
    matches!(
        r.kind,
        RecordKind::User | RecordKind::Assistant | RecordKind::Attachment
    )
}

/// The seq of the last message (user or assistant record) of the transcript.
pub(crate) fn last_message_seq(records: &[Record]) -> u64 {
    records
        .iter()
        .rev()
        .find(|r| matches!(r.kind, RecordKind::User | RecordKind::Assistant) && !r.is_sidechain)
        .map_or(0, |r| r.seq)
}

/// A new history still at or above the threshold would be compacted again at once: it
/// is refused, and remembered so autocompact waits for new messages.
fn check_room(l: &mut Loaded, best: &Candidate, budget: &RoomBudget) -> Result<()> {
    if best.estimate < budget.threshold {
        return Ok(());
    }
    let reason = format!(
        "the smallest new history compaction can build (~{} tokens) is still at or above the autocompact threshold ({}): the system prompt, tools and instructions take too much of this window",
        best.estimate, budget.threshold
    );
    l.no_room = Some((
        last_message_seq(&l.records),
        CompactionShortfall {
            target_tokens: budget.target,
            best_tokens: best.estimate,
            reason: reason.clone(),
        },
    ));
    Err(Error::CompactionFailed(format!(
        "cannot make room: {reason}"
    )))
}

/// What a new history resets in the store, in the transaction that writes it: nothing
/// of the old history's file and instruction state holds, the breaker closes, and the
/// session-memory gate starts over.
pub(crate) fn reset_for_new_history(tx: &mut dyn ctxd_store::Db, sid: &str) -> Result<()> {
    context_state::clear_loaded(tx, sid)?;
    context_state::clear_read_state(tx, sid)?;
    context_state::clear_touched(tx, sid)?;
    context_state::set_compaction_failures(tx, sid, 0, None)?;
    ctxd_store::memory::reset_gate(tx, sid)?;
    Ok(())
}
