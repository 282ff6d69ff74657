//! The model side of relevant-memory selection: one short completion that names at most
//! five memory files as JSON (`{"selected_memories": [...]}`).

use super::{Backend, ProviderError, Summariser};
use ctxd_pipeline::message::ApiMessage;
use ctxd_pipeline::relevant_memories::MAX_FILES;

/// Ours: what the selector model is asked.
pub(crate) const SELECT_MEMORIES_PROMPT: &str = "You choose which memory files will help an AI \
coding agent with the user's next request. You are given the request and the available \
memory files, one per line as `- FILE: NAME — DESCRIPTION`. Answer with JSON only, in the \
form {\"selected_memories\": [\"FILE\", ...]}, naming at most 5 files that will clearly \
help with this request. Leave out any file you are unsure about; an empty list is a good \
answer when none clearly helps.";

impl Summariser {
    /// File names (as given in `manifest`) the model picks for `query`, at most five.
    /// Only the Anthropic and OpenAI-compatible back ends run a model here.
    pub async fn select_memories(
        &self,
        query: &str,
        manifest: &str,
    ) -> Result<Vec<String>, ProviderError> {
        let messages = [ApiMessage::user(vec![ctxd_protocol::ContentBlock::text(
            format!("Request:\n{query}\n\nMemory files:\n{manifest}"),
        )])];
        let answer = match &self.backend {
            Backend::Anthropic(p) => {
                p.complete(SELECT_MEMORIES_PROMPT, &messages, &self.env)
                    .await?
            }
            Backend::OpenAi(p) => {
                p.complete(SELECT_MEMORIES_PROMPT, &messages, &self.env)
                    .await?
            }
            Backend::Embedded | Backend::Client { .. } => {
                return Err(ProviderError::Misconfigured(format!(
                    "the {} summariser does not select memories",
                    self.kind()
                )));
            }
        };
        parse_selection(&answer)
    }
}

/// The names of the first JSON object in the answer (models sometimes wrap it in prose
/// or a code fence).
pub(crate) fn parse_selection(answer: &str) -> Result<Vec<String>, ProviderError> {
    let bad =
        || ProviderError::Failed("the selector's answer holds no selected_memories list".into());
    let start = answer.find('{').ok_or_else(bad)?;
    let end = answer.rfind('}').ok_or_else(bad)?;
    if end < start {
        return Err(bad());
    }
    let v: serde_json::Value = serde_json::from_str(&answer[start..=end]).map_err(|_| bad())?;
    let names = v
        .get("selected_memories")
        .and_then(serde_json::Value::as_array)
        .ok_or_else(bad)?;
    Ok(names
        .iter()
        .filter_map(|n| n.as_str().map(str::to_string))
        .take(MAX_FILES)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selections_are_read_from_wrapped_json_and_capped() {
        let got = parse_selection(
            "Here you go:\n```json\n{\"selected_memories\": [\"a.md\", \"b.md\", 3, \"c.md\", \"d.md\", \"e.md\", \"f.md\"]}\n```",
        )
        .unwrap();
        assert_eq!(got, vec!["a.md", "b.md", "c.md", "d.md", "e.md"]);
        assert!(parse_selection("no json").is_err());
        assert!(parse_selection("{\"other\": []}").is_err());
        assert_eq!(
            parse_selection("{\"selected_memories\": []}").unwrap(),
            Vec::<String>::new()
        );
    }
}
