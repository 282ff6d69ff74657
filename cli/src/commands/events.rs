//! `ctx events`: follow a session's event stream, one JSON object per line.

use anyhow::{Result, anyhow};
use clap::Args;
use ctx_client::Client;
use ctxd_protocol::SessionEvent;

use super::session_id;
use crate::output::print_json_line;

#[derive(Args, Debug)]
pub struct EventsArgs {
    /// Session: its id, `last` (the one updated most recently), or the unique start or end of its id.
    session: String,
    /// Resume: first replay the records after this seq (the `seq` of the last event
    /// seen), then follow.
    #[arg(long, value_name = "SEQ")]
    after: Option<u64>,
    /// Put the whole records in `records_appended` events.
    #[arg(long)]
    records: bool,
}

/// Ends when the session is deleted (exit 0) or the daemon goes away (an error, so the
/// exit status says the stream was cut).
pub async fn run(client: &Client, a: &EventsArgs) -> Result<()> {
    let sid = session_id(client, &a.session).await?;
    let mut sub = client
        .session_subscribe(ctxd_protocol::SubscribeParams {
            session_id: sid.clone(),
            after_seq: a.after,
            include_records: a.records,
        })
        .await?;
    let mut last_seq = a.after;
    loop {
        let Some(n) = sub.next().await else {
            let resume = last_seq
                .map(|s| format!(" --after {s}"))
                .unwrap_or_default();
            return Err(anyhow!(
                "lost the connection to ctxd (the daemon stopped?); resume with `ctx events {sid}{resume}`"
            ));
        };
        let n = n.map_err(|e| anyhow!("event stream: {e}"))?;
        last_seq = Some(n.seq);
        print_json_line(&n)?;
        if matches!(n.event, SessionEvent::SessionDeleted { .. }) {
            return Ok(());
        }
    }
}
