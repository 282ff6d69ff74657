//! Claude Code JSONL transcripts (`~/.claude/projects/<project>/<session>.jsonl`) → ctxd
//! records.
//!
//! Pure: text in, records out. The caller owns the session and the append; this module only
//! decides what each line becomes, so an import can be checked (and rejected) before anything
//! is written.
//!
//! Policy:
//! - All or nothing: one malformed line rejects the whole transcript, naming the line (1-based)
//!   and the field. A half-imported conversation would be worse than none, because the
//!   projection would silently miss context.
//! - Nothing is silently lost: fields ctxd has no column for go to `meta.claude_code`;
//!   content blocks ctxd cannot represent become a text block holding their JSON; every
//!   skipped line is counted in `stats.skipped`.
//! - Parent chains stay valid: a record whose parent was skipped is relinked to the nearest
//!   imported ancestor; a parent that cannot be resolved to an earlier imported record is
//!   dropped. In both cases the original value is kept in `meta.claude_code.parentUuid`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;

use ctxd_protocol::{ContentBlock, ImportStats, RecordInput, RecordKind};
use serde_json::{Map, Value};

use super::chunks::{self, Piece};
use super::claude_code_line::{
    Line, Pending, RECORDED_CALL_KINDS, bump, content_replacements, convert_line, json_type,
};

/// The result of converting one transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    pub records: Vec<RecordInput>,
    pub(crate) stats: ImportStats,
    /// `cwd` of the first line that has one.
    pub(crate) cwd: Option<String>,
    /// Timestamp (RFC 3339 string) of the first record with one.
    pub(crate) first_timestamp: Option<String>,
    /// Claude Code's `sessionId` of the first line that has one.
    pub(crate) source_session_id: Option<String>,
    /// `(tool_use_id, replacement)` from the main thread's `content-replacement` lines:
    /// what Claude Code showed the model instead of those results.
    pub(crate) replacements: Vec<(String, String)>,
    /// The 1-based source line of each record, index for index.
    pub source_lines: Vec<usize>,
}

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// `line` is 1-based and counts blank lines, so it matches what an editor shows.
    #[error("line {line}: {message}")]
    Malformed { line: usize, message: String },
    #[error("the transcript holds no records")]
    Empty,
    #[error("the transcript is over the bound of {max} bytes")]
    TooLong { max: u64 },
    #[error("the transcript changed while it was imported")]
    Changed,
    #[error("cannot read the transcript: {0}")]
    Read(#[from] std::io::Error),
}

/// The text a streamed transcript is parsed by: whole lines of at least this many bytes
/// (a longer line is read whole), so that the text held at once is bounded by it or by
/// the longest line, not by the transcript.
const READ_BYTES: usize = 8 << 20;

/// Key under which skipped duplicates are counted.
const DUPLICATE_UUID: &str = "duplicate_uuid";

/// What the lines of one piece of a transcript became, before the pieces are joined.
#[derive(Default)]
struct PieceOut {
    /// Non-blank lines.
    lines: u64,
    /// The piece's first `cwd` and `sessionId`.
    cwd: Option<String>,
    source_session_id: Option<String>,
    skipped: BTreeMap<String, u64>,
    /// Lines that are not a JSON object, with why: skipped and reported, not fatal (real
    /// files hold the odd line cut short or mangled).
    unreadable: Vec<(usize, String)>,
    items: Vec<Item>,
}

/// Key under which lines that are not a JSON object are counted.
const UNREADABLE: &str = "not_json";

/// Unreadable lines a plan names in its warning; the rest are counted.
const UNREADABLE_NAMED: usize = 10;

enum Item {
    Replacements(Vec<(String, String)>),
    Converted(Line),
}

/// Parses and converts each line of `piece` on its own: what needs the lines before it
/// (de-duplication, relinking) is left to [`parse`].
fn parse_piece(piece: Piece<'_>) -> Result<PieceOut, ImportError> {
    let mut out = PieceOut::default();
    for (i, raw) in piece.text.lines().enumerate() {
        let line = piece.first_line + i;
        if raw.trim().is_empty() {
            continue;
        }
        out.lines += 1;
        let malformed = |message: String| ImportError::Malformed { line, message };

        let value: Value = match serde_json::from_str(raw) {
            Ok(v) => v,
            Err(e) => {
                out.unreadable.push((line, format!("not valid JSON: {e}")));
                continue;
            }
        };
        let Value::Object(mut obj) = value else {
            out.unreadable.push((
                line,
                format!("expected a JSON object, found {}", json_type(&value)),
            ));
            continue;
        };

        // Taken from any line (progress and queue lines carry them too), so a transcript
        // that starts with UI lines still reports where it ran.
        if out.cwd.is_none() {
            out.cwd = obj.get("cwd").and_then(Value::as_str).map(str::to_owned);
        }
        if out.source_session_id.is_none() {
            out.source_session_id = obj
                .get("sessionId")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }

        if obj.get("type").and_then(Value::as_str) == Some("content-replacement") {
            if obj.contains_key("agentId") {
                // A sub-agent's decisions: its thread is not the one compiled here.
                bump(&mut out.skipped, "content-replacement:agent");
            } else {
                out.items.push(Item::Replacements(
                    content_replacements(&obj).map_err(malformed)?,
                ));
            }
            continue;
        }

        let agent = agent_message(&mut obj);
        let mut converted = convert_line(obj).map_err(malformed)?;
        if let Line::Record(p) = &mut converted {
            p.line = line;
        }
        out.items.push(Item::Converted(converted));
        if let Some(message) = agent {
            let mut converted =
                convert_line(message).map_err(|e| malformed(format!("data.message: {e}")))?;
            if let Line::Record(p) = &mut converted {
                p.line = line;
            }
            out.items.push(Item::Converted(converted));
        }
    }
    Ok(out)
}

/// A sub-agent's message carried by an `agent_progress` line (Claude Code writes the
/// sub-agent's thread there, message by message): taken out of the line, as a sidechain
/// line of its own naming its agent (`agentId`) and the call that started it
/// (`parentToolUseID`). The progress line itself is still skipped (and counted) as such.
fn agent_message(obj: &mut Map<String, Value>) -> Option<Map<String, Value>> {
    if obj.get("type").and_then(Value::as_str) != Some("progress") {
        return None;
    }
    let parent_call = obj.get("parentToolUseID").cloned();
    let data = obj.get_mut("data")?.as_object_mut()?;
    if data.get("type").and_then(Value::as_str) != Some("agent_progress") {
        return None;
    }
    let agent = data.get("agentId")?.as_str()?.to_owned();
    let is_message = data
        .get("message")
        .and_then(|m| m.get("type"))
        .and_then(Value::as_str)
        .is_some_and(|t| t == "user" || t == "assistant");
    if !is_message {
        return None;
    }
    let Some(Value::Object(mut message)) = data.remove("message") else {
        return None;
    };
    message.insert("isSidechain".into(), Value::Bool(true));
    message.insert("agentId".into(), Value::String(agent));
    if let Some(call) = parent_call {
        message.entry("parentToolUseID").or_insert(call);
    }
    Some(message)
}

/// Converts a Claude Code transcript. See the module docs for the policy. A long one is
/// cut into pieces whose lines are parsed on separate threads; the first malformed line
/// in file order is the one reported.
pub fn parse(jsonl: &str) -> Result<Imported, ImportError> {
    parse_in(
        jsonl,
        chunks::split(jsonl, chunks::parts(), chunks::MIN_PIECE_BYTES),
    )
}

/// [`parse`] over the given cut of `jsonl` (the tests cut it in every way).
fn parse_in(jsonl: &str, pieces: Vec<Piece<'_>>) -> Result<Imported, ImportError> {
    debug_assert_eq!(
        pieces.iter().map(|p| p.text.len()).sum::<usize>(),
        jsonl.len()
    );
    let mut planner = Planner::new(|_: &RecordInput| {});
    for piece in chunks::map(pieces.iter().copied(), parse_piece) {
        planner.push(piece?);
    }
    let plan = planner.finish()?;
    let mut builder = Builder::new(&plan);
    let mut made = Vec::new();
    for piece in chunks::map(pieces, parse_piece) {
        made.extend(builder.push(piece?));
    }
    builder.finish()?;
    Ok(Imported::of(plan, made))
}

/// [`parse`] of the text `reader` gives, at most `max` bytes of it, read twice, as
/// [`plan`] and [`records`] read it (the tests cut the text in every way).
#[cfg(test)]
fn read_in(text: &[u8], max: u64, read_bytes: usize) -> Result<Imported, ImportError> {
    let plan = plan_in(text, max, read_bytes, |_| {})?;
    let mut made = Vec::new();
    records_in(text, max, read_bytes, &plan, |batch| {
        made.extend(batch);
        Ok::<_, ImportError>(())
    })?;
    Ok(Imported::of(plan, made))
}

impl Imported {
    fn of(plan: Plan, made: Vec<(RecordInput, usize)>) -> Imported {
        let (records, source_lines) = made.into_iter().unzip();
        Imported {
            records,
            stats: plan.stats,
            cwd: plan.cwd,
            first_timestamp: plan.first_timestamp,
            source_session_id: plan.source_session_id,
            replacements: plan.replacements,
            source_lines,
        }
    }
}

/// What a first pass over a transcript learns: all it reports, and what a second pass
/// needs to make each record as if the whole file were held: which records repeat an
/// earlier uuid and which parents are relinked (both rare). The records themselves are
/// not kept, so that an import holds only the rows it writes, never every record's tree.
#[derive(Debug)]
pub struct Plan {
    pub(crate) stats: ImportStats,
    pub(crate) cwd: Option<String>,
    pub(crate) first_timestamp: Option<String>,
    pub(crate) source_session_id: Option<String>,
    pub(crate) replacements: Vec<(String, String)>,
    /// Record lines (kept or not) in the file.
    items: u64,
    /// Of the record lines, numbered from 0 in file order: those skipped as repeats.
    repeats: HashSet<u64>,
    /// Of the record lines: the parent of those relinked.
    relinked: HashMap<u64, Option<String>>,
}

/// The first pass: joins the pieces' lines in file order, de-duplicating and counting,
/// and shows `observe` each record (before relinking: its parent is the line's).
struct Planner<F> {
    plan: Plan,
    observe: F,
    /// uuid → index among the kept records: relinking walks to one imported *before*.
    kept: HashMap<String, u64>,
    /// uuid → parentUuid of every skipped line, to walk over them when relinking.
    skipped_parents: HashMap<String, Option<String>>,
    /// (record line, kept index, parent) of records whose parent is no record before
    /// them: resolved once every skipped line is known.
    unresolved: Vec<(u64, u64, String)>,
    /// (count, first line, its uuid) of lines repeating an earlier line's uuid.
    duplicates: Option<(u64, usize, String)>,
    /// The first lines that are not a JSON object, with why, for the warning.
    unreadable: Vec<(usize, String)>,
}

impl<F: FnMut(&RecordInput)> Planner<F> {
    fn new(observe: F) -> Self {
        Planner {
            plan: Plan {
                stats: ImportStats::default(),
                cwd: None,
                first_timestamp: None,
                source_session_id: None,
                replacements: Vec::new(),
                items: 0,
                repeats: HashSet::new(),
                relinked: HashMap::new(),
            },
            observe,
            kept: HashMap::new(),
            skipped_parents: HashMap::new(),
            unresolved: Vec::new(),
            duplicates: None,
            unreadable: Vec::new(),
        }
    }

    fn push(&mut self, piece: PieceOut) {
        let plan = &mut self.plan;
        plan.stats.lines += piece.lines;
        plan.cwd = plan.cwd.take().or(piece.cwd);
        plan.source_session_id = plan.source_session_id.take().or(piece.source_session_id);
        for (key, n) in piece.skipped {
            *plan.stats.skipped.entry(key).or_insert(0) += n;
        }
        for (line, why) in piece.unreadable {
            bump(&mut plan.stats.skipped, UNREADABLE);
            if self.unreadable.len() < UNREADABLE_NAMED {
                self.unreadable.push((line, why));
            }
        }
        for item in piece.items {
            match item {
                Item::Replacements(r) => plan.replacements.extend(r),
                Item::Converted(Line::Record(p)) => {
                    let item = plan.items;
                    plan.items += 1;
                    // Counted once kept, below.
                    let index = plan.stats.records;
                    if let Some(uuid) = &p.record.uuid {
                        if self.kept.contains_key(uuid) {
                            // The first occurrence already stands for this uuid, so
                            // children that point at it stay linked to that one; no
                            // relinking entry is needed.
                            bump(&mut plan.stats.skipped, DUPLICATE_UUID);
                            plan.repeats.insert(item);
                            match &mut self.duplicates {
                                Some((n, _, _)) => *n += 1,
                                None => self.duplicates = Some((1, p.line, uuid.clone())),
                            }
                            continue;
                        }
                        self.kept.insert(uuid.clone(), index);
                    }
                    if let Some(parent) = &p.record.parent_uuid
                        && self.kept.get(parent).is_none_or(|&at| at >= index)
                    {
                        self.unresolved.push((item, index, parent.clone()));
                    }
                    let (record, _) = finish(*p, None);
                    count(&mut plan.stats, &record);
                    if plan.first_timestamp.is_none() {
                        plan.first_timestamp.clone_from(&record.timestamp);
                    }
                    (self.observe)(&record);
                }
                Item::Converted(Line::Skip { key, uuid, parent }) => {
                    bump(&mut plan.stats.skipped, &key);
                    if let Some(uuid) = uuid {
                        self.skipped_parents.entry(uuid).or_insert(parent);
                    }
                }
            }
        }
    }

    fn finish(self) -> Result<Plan, ImportError> {
        let mut plan = self.plan;
        if plan.stats.records == 0 {
            return Err(ImportError::Empty);
        }
        for (item, index, parent) in self.unresolved {
            let before = |uuid: &str| self.kept.get(uuid).is_some_and(|&at| at < index);
            let resolved = resolve_parent(Some(&parent), before, &self.skipped_parents);
            plan.relinked.insert(item, resolved);
        }
        plan.stats.replacements = plan.replacements.len() as u64;
        let unreadable = plan.stats.skipped.get(UNREADABLE).copied().unwrap_or(0);
        if unreadable > 0 {
            let named: Vec<String> = self
                .unreadable
                .iter()
                .map(|(line, why)| format!("line {line} ({why})"))
                .collect();
            plan.stats.warnings.push(format!(
                "{unreadable} line(s) are not a JSON object and were skipped: {}{}",
                named.join("; "),
                if unreadable > named.len() as u64 {
                    "; ..."
                } else {
                    ""
                }
            ));
        }
        if let Some((n, line, uuid)) = self.duplicates {
            plan.stats.warnings.push(format!(
                "{n} line(s) repeat the uuid of an earlier line and were skipped, keeping the first occurrence (first at line {line}, uuid {uuid})"
            ));
        }
        Ok(plan)
    }
}

/// The second pass: each record as the whole file makes it, in file order.
struct Builder<'a> {
    plan: &'a Plan,
    item: u64,
    /// The time of the last record with one, in file order.
    last_timestamp: Option<String>,
}

impl<'a> Builder<'a> {
    fn new(plan: &'a Plan) -> Self {
        Builder {
            plan,
            item: 0,
            last_timestamp: None,
        }
    }

    fn push(&mut self, piece: PieceOut) -> Vec<(RecordInput, usize)> {
        let mut out = Vec::with_capacity(piece.items.len());
        for item in piece.items {
            let Item::Converted(Line::Record(p)) = item else {
                continue;
            };
            let at = self.item;
            self.item += 1;
            if self.plan.repeats.contains(&at) {
                continue;
            }
            let (mut record, line) = finish(*p, self.plan.relinked.get(&at).cloned());
            // Some recorded-call lines are written without a time: they happened when the
            // line before them did, not when the daemon stores them.
            match &record.timestamp {
                Some(t) => self.last_timestamp = Some(t.clone()),
                None if record
                    .subtype
                    .as_deref()
                    .is_some_and(|t| RECORDED_CALL_KINDS.contains(&t)) =>
                {
                    record.timestamp.clone_from(&self.last_timestamp);
                }
                None => {}
            }
            out.push((record, line));
        }
        out
    }

    /// A file that changed between the passes could make records the plan does not
    /// describe.
    fn finish(self) -> Result<(), ImportError> {
        if self.item != self.plan.items {
            return Err(ImportError::Changed);
        }
        Ok(())
    }
}

/// The record a line becomes, its parent set to `relinked` when given (the line's own
/// is then kept in `meta.claude_code.parentUuid`), with its source line.
fn finish(p: Pending, relinked: Option<Option<String>>) -> (RecordInput, usize) {
    let Pending {
        mut record,
        line,
        mut claude_code,
    } = p;
    if let Some(resolved) = relinked {
        let original = record.parent_uuid.take();
        if resolved != original
            && let Some(original) = original
        {
            claude_code.insert("parentUuid".into(), Value::String(original));
        }
        record.parent_uuid = resolved;
    }
    if !claude_code.is_empty() {
        let mut meta = Map::new();
        meta.insert("claude_code".into(), Value::Object(claude_code));
        record.meta = Some(Value::Object(meta));
    }
    (record, line)
}

/// The first pass over a transcript read from `reader`, at most `max` bytes of it, read
/// `READ_BYTES` (8 MiB of whole lines) at a time: `observe` sees each record that will be imported.
pub fn plan(
    reader: impl Read,
    max: u64,
    observe: impl FnMut(&RecordInput),
) -> Result<Plan, ImportError> {
    plan_in(reader, max, READ_BYTES, observe)
}

fn plan_in(
    reader: impl Read,
    max: u64,
    read_bytes: usize,
    observe: impl FnMut(&RecordInput),
) -> Result<Plan, ImportError> {
    let mut planner = Planner::new(observe);
    read_pieces(reader, max, read_bytes, |pieces| {
        pieces.into_iter().for_each(|p| planner.push(p));
        Ok::<_, ImportError>(())
    })?;
    planner.finish()
}

/// The second pass over the transcript `plan` was made of: its records (with their
/// source lines) in file order, handed to `each` a read's worth at a time.
pub fn records<E: From<ImportError>>(
    reader: impl Read,
    max: u64,
    plan: &Plan,
    each: impl FnMut(Vec<(RecordInput, usize)>) -> Result<(), E>,
) -> Result<(), E> {
    records_in(reader, max, READ_BYTES, plan, each)
}

fn records_in<E: From<ImportError>>(
    reader: impl Read,
    max: u64,
    read_bytes: usize,
    plan: &Plan,
    mut each: impl FnMut(Vec<(RecordInput, usize)>) -> Result<(), E>,
) -> Result<(), E> {
    let mut builder = Builder::new(plan);
    read_pieces(reader, max, read_bytes, |pieces| {
        let mut made = Vec::new();
        for piece in pieces {
            made.extend(builder.push(piece));
        }
        each(made)
    })?;
    Ok(builder.finish()?)
}

/// Reads `reader` in whole lines of at least `read_bytes` (a longer line is read whole),
/// each read cut into pieces parsed on separate threads and handed to `each` in file
/// order. The first malformed line in file order ends the read: nothing after it counts.
fn read_pieces<E: From<ImportError>>(
    mut reader: impl Read,
    max: u64,
    read_bytes: usize,
    mut each: impl FnMut(Vec<PieceOut>) -> Result<(), E>,
) -> Result<(), E> {
    let mut buf: Vec<u8> = Vec::new();
    let (mut first_line, mut total, mut end) = (1, 0u64, false);
    while !end {
        // Whole lines: read until the buffer ends a line past the bound, or the text ends.
        let mut cut = None;
        while cut.is_none() && !end {
            let want = read_bytes
                .saturating_sub(buf.len())
                .max(read_bytes.min(1 << 20));
            let start = buf.len();
            let n = (&mut reader)
                .take(want as u64)
                .read_to_end(&mut buf)
                .map_err(ImportError::from)?;
            total += n as u64;
            if total > max {
                return Err(ImportError::TooLong { max }.into());
            }
            end = n == 0;
            if end {
                cut = Some(buf.len());
            } else if buf.len() >= read_bytes {
                cut = memchr::memrchr(b'\n', &buf[start..]).map(|i| start + i + 1);
            }
        }
        let cut = cut.unwrap_or(buf.len());
        let text = std::str::from_utf8(&buf[..cut]).map_err(|e| {
            let before = &buf[..e.valid_up_to()];
            ImportError::Malformed {
                line: first_line + memchr::memchr_iter(b'\n', before).count(),
                message: "not valid UTF-8".into(),
            }
        })?;
        let pieces = chunks::split(text, chunks::parts(), chunks::MIN_PIECE_BYTES)
            .into_iter()
            .map(|p| Piece {
                first_line: p.first_line + first_line - 1,
                ..p
            });
        let parsed = chunks::map(pieces, parse_piece)
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        each(parsed)?;
        first_line += memchr::memchr_iter(b'\n', text.as_bytes()).count();
        buf.drain(..cut);
    }
    Ok(())
}

/// Walks from `parent` over skipped lines to the nearest record imported *before* the child.
/// ctxd appends in order, so a parent that only appears later (or nowhere) cannot be kept.
fn resolve_parent(
    parent: Option<&str>,
    imported: impl Fn(&str) -> bool,
    skipped: &HashMap<String, Option<String>>,
) -> Option<String> {
    let mut current = parent;
    // Every step visits a distinct skipped line unless there is a cycle; bounding the walk by
    // their number ends a cycle without tracking visits.
    for _ in 0..=skipped.len() {
        let uuid = current?;
        if imported(uuid) {
            return Some(uuid.to_owned());
        }
        current = skipped.get(uuid)?.as_deref();
    }
    None
}

fn count(stats: &mut ImportStats, record: &RecordInput) {
    stats.records += 1;
    match record.kind {
        Some(RecordKind::User) => stats.user += 1,
        Some(RecordKind::Assistant) => stats.assistant += 1,
        Some(RecordKind::System) => stats.system += 1,
        Some(RecordKind::Attachment) => stats.attachment += 1,
        None => {}
    }
    for block in &record.content {
        match block {
            ContentBlock::ToolUse { .. } => stats.tool_use += 1,
            ContentBlock::ToolResult { .. } => stats.tool_result += 1,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
