//! The `system` array: static sections, the dynamic boundary, dynamic sections, then the
//! system context (git snapshot). ctxd owns order, boundary, caching class and markers.

use ctxd_protocol::{
    CacheControl, SectionCaching, SectionLayout, SessionSettings, SystemPrompt, SystemSection,
};
use serde::Serialize;

use super::contract::default_static_sections;

/// The sentinel that separates the globally cacheable prefix from per-session sections.
/// It orders sections but, as in Claude Code, is never sent as text.
pub(crate) const DYNAMIC_BOUNDARY: &str = "__SYSTEM_PROMPT_DYNAMIC_BOUNDARY__";

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SystemBlock {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cache_control: Option<CacheControl>,
}

/// The output style the session selected, as found on disk or among ctxd's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputStyle {
    pub name: String,
    pub description: Option<String>,
    /// What the model is told, in the system prompt.
    pub prompt: String,
    /// Keep the default coding instructions (`doing_tasks`) beside the style's prompt.
    pub keep_coding_instructions: bool,
}

/// The default static section a style without `keep-coding-instructions` replaces.
const CODING_INSTRUCTIONS: &str = "doing_tasks";

/// Inputs of the system prompt that come from the session.
pub struct SystemInputs<'a> {
    pub prompt: Option<&'a SystemPrompt>,
    pub settings: &'a SessionSettings,
    pub cwd: &'a str,
    pub additional_directories: &'a [String],
    pub git_snapshot: Option<&'a str>,
    /// The platform the environment section names.
    pub platform: &'a str,
    /// Memoized section texts of this history (see `sections`); `None` computes them.
    pub section_memo: Option<&'a std::collections::BTreeMap<String, String>>,
    /// The compile's instant (sections computed by ctxd read it).
    /// The compile's instant in the user's zone (what a `current_time` section shows).
    pub now: chrono::DateTime<chrono::FixedOffset>,
    /// MCP tools differ per user, so a globally shared prefix cannot exist.
    pub has_mcp_tools: bool,
    /// Instructions of the MCP servers connected before the first compile (memoized).
    pub mcp_instructions: Option<&'a str>,
    /// The selected output style, when one of that name was found.
    pub output_style: Option<&'a OutputStyle>,
}

/// Every dynamic section, as registered (ctxd's own first, then the client's), before
/// the memo and the computed sources are applied.
pub fn dynamic_sections(inputs: &SystemInputs<'_>) -> Vec<SystemSection> {
    let mut dynamics = builtin_dynamic(inputs);
    if let Some(p) = inputs.prompt {
        dynamics.extend(p.dynamic_sections.iter().cloned());
    }
    dynamics
}

/// The dynamic sections as this compile shows them (memoized texts from the memo).
pub(crate) fn resolved_dynamic(inputs: &SystemInputs<'_>) -> Vec<SystemSection> {
    super::sections::resolve(&dynamic_sections(inputs), inputs.section_memo, inputs.now)
}

/// Sections ctxd contributes after the boundary (memoized: frozen per history).
fn builtin_dynamic(inputs: &SystemInputs<'_>) -> Vec<SystemSection> {
    let mut env = format!(
        "# Environment\nWorking directory: {}\nPlatform: {}",
        inputs.cwd, inputs.platform
    );
    if !inputs.additional_directories.is_empty() {
        env.push_str("\nAdditional working directories: ");
        env.push_str(&inputs.additional_directories.join(", "));
    }
    let mut out = vec![section("environment", env)];
    if let Some(lang) = &inputs.settings.language {
        out.push(section(
            "language",
            format!(
                "# Language\nAlways respond in {lang}. Technical terms and code stay as they are."
            ),
        ));
    }
    match (inputs.output_style, &inputs.settings.output_style) {
        (Some(style), _) => out.push(section(
            "output_style",
            format!("# Output style: {}\n{}", style.name, style.prompt),
        )),
        // A name no file or built-in style has: the model is told the name alone.
        (None, Some(name)) if !name.eq_ignore_ascii_case("default") => out.push(section(
            "output_style",
            format!("# Output style\nThe user selected the \"{name}\" output style; follow it."),
        )),
        _ => {}
    }
    if let Some(mcp) = inputs.mcp_instructions {
        out.push(section("mcp_instructions", mcp.to_string()));
    }
    out
}

fn section(name: &str, text: String) -> SystemSection {
    SystemSection {
        name: name.into(),
        text,
        caching: Some(SectionCaching::Memoized),
        reason: None,
        source: None,
    }
}

fn class_of(s: &SystemSection) -> &'static str {
    match s.caching {
        Some(SectionCaching::Uncached) => "uncached",
        _ => "memoized",
    }
}

/// Builds the blocks from the dynamic sections as this compile shows them
/// ([`resolved_dynamic`], which the caller also reports on) and reports where every
/// section landed.
pub(crate) fn build(
    inputs: &SystemInputs<'_>,
    dynamics: &[SystemSection],
) -> (Vec<SystemBlock>, Vec<SectionLayout>) {
    let replaced = inputs
        .output_style
        .is_some_and(|s| !s.keep_coding_instructions);
    let statics: Vec<&SystemSection> = match inputs.prompt {
        Some(p) if !p.static_sections.is_empty() => p.static_sections.iter().collect(),
        // A style that does not keep the coding instructions takes their place, as in
        // Claude Code; a client's own static sections are its own.
        _ => default_static_sections()
            .iter()
            .filter(|s| !(replaced && s.name == CODING_INSTRUCTIONS))
            .collect(),
    };
    let mut layout = Vec::new();
    let mut blocks = Vec::new();

    let static_text: Vec<&str> = statics
        .iter()
        .map(|s| s.text.as_str())
        .filter(|t| !t.is_empty())
        .collect();
    if !static_text.is_empty() {
        blocks.push(SystemBlock {
            kind: "text",
            text: static_text.join("\n\n"),
            cache_control: Some(if inputs.has_mcp_tools {
                CacheControl::ephemeral()
            } else {
                CacheControl::scoped("global")
            }),
        });
    }
    let static_block = if blocks.is_empty() { None } else { Some(0) };
    for s in statics {
        layout.push(SectionLayout {
            name: s.name.clone(),
            class: "static".into(),
            block: static_block,
            chars: s.text.chars().count() as u64,
        });
    }
    layout.push(SectionLayout {
        name: DYNAMIC_BOUNDARY.into(),
        class: "boundary".into(),
        block: None,
        chars: 0,
    });

    let mut dynamic_parts: Vec<String> = Vec::new();
    for s in dynamics {
        if s.text.is_empty() {
            continue;
        }
        dynamic_parts.push(s.text.clone());
    }
    if let Some(git) = inputs.git_snapshot {
        dynamic_parts.push(format!("gitStatus: {git}"));
    }
    if !dynamic_parts.is_empty() {
        let idx = crate::saturate::u32_of(blocks.len());
        for s in dynamics {
            layout.push(SectionLayout {
                name: s.name.clone(),
                class: class_of(s).into(),
                block: Some(idx),
                chars: s.text.chars().count() as u64,
            });
        }
        if let Some(git) = inputs.git_snapshot {
            layout.push(SectionLayout {
                name: "git_status".into(),
                class: "system_context".into(),
                block: Some(idx),
                chars: git.chars().count() as u64,
            });
        }
        blocks.push(SystemBlock {
            kind: "text",
            text: dynamic_parts.join("\n\n"),
            // With a global prefix the suffix is left uncached: it is per session and the
            // tools' marker right after it caches it at org scope anyway.
            cache_control: inputs.has_mcp_tools.then(CacheControl::ephemeral),
        });
    }
    (blocks, layout)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs<'a>(settings: &'a SessionSettings, mcp: bool) -> SystemInputs<'a> {
        SystemInputs {
            prompt: None,
            settings,
            cwd: "/w",
            additional_directories: &[],
            git_snapshot: Some("Current branch: main"),
            platform: "linux",
            section_memo: None,
            now: chrono::DateTime::UNIX_EPOCH.fixed_offset(),
            has_mcp_tools: mcp,
            mcp_instructions: None,
            output_style: None,
        }
    }

    /// A style without `keep-coding-instructions` takes the coding instructions' place
    /// and its prompt is a dynamic section; one that keeps them adds its prompt only; a
    /// name found nowhere is named to the model alone.
    #[test]
    fn an_output_style_goes_where_claude_code_puts_it() {
        let s = SessionSettings {
            output_style: Some("Terse".into()),
            ..Default::default()
        };
        let mut style = OutputStyle {
            name: "Terse".into(),
            description: None,
            prompt: "Answer in one line.".into(),
            keep_coding_instructions: false,
        };
        let texts = |style: Option<&OutputStyle>| {
            let mut i = inputs(&s, false);
            i.output_style = style;
            let (blocks, layout) = build(&i, &resolved_dynamic(&i));
            let names: Vec<String> = layout.iter().map(|l| l.name.clone()).collect();
            let text: String = blocks.iter().map(|b| b.text.clone()).collect();
            (names, text)
        };
        let (names, text) = texts(Some(&style));
        assert!(!names.contains(&"doing_tasks".to_string()), "{names:?}");
        assert!(
            text.contains("# Output style: Terse\nAnswer in one line."),
            "{text}"
        );
        style.keep_coding_instructions = true;
        let (names, text) = texts(Some(&style));
        assert!(names.contains(&"doing_tasks".to_string()));
        assert!(text.contains("Answer in one line."));
        let (names, text) = texts(None);
        assert!(names.contains(&"doing_tasks".to_string()));
        assert!(
            text.contains("The user selected the \"Terse\" output style"),
            "{text}"
        );
    }

    #[test]
    fn global_scope_without_mcp_and_org_with() {
        let s = SessionSettings::default();
        let i = inputs(&s, false);
        let (blocks, layout) = build(&i, &resolved_dynamic(&i));
        assert_eq!(blocks.len(), 2);
        assert_eq!(
            blocks[0].cache_control,
            Some(CacheControl::scoped("global"))
        );
        assert_eq!(blocks[1].cache_control, None);
        assert!(blocks[1].text.ends_with("gitStatus: Current branch: main"));
        assert!(!blocks.iter().any(|b| b.text.contains(DYNAMIC_BOUNDARY)));
        let boundary = layout.iter().position(|l| l.class == "boundary").unwrap();
        assert!(layout[..boundary].iter().all(|l| l.class == "static"));
        assert!(layout[boundary + 1..].iter().all(|l| l.class != "static"));

        let i = inputs(&s, true);
        let (blocks, _) = build(&i, &resolved_dynamic(&i));
        assert_eq!(blocks[0].cache_control, Some(CacheControl::ephemeral()));
        assert_eq!(blocks[1].cache_control, Some(CacheControl::ephemeral()));
    }

    #[test]
    fn client_sections_replace_the_default_contract() {
        let s = SessionSettings::default();
        let prompt = SystemPrompt {
            static_sections: vec![SystemSection {
                name: "mine".into(),
                text: "You are X.".into(),
                caching: None,
                reason: None,
                source: None,
            }],
            dynamic_sections: vec![SystemSection {
                name: "clock".into(),
                text: "Now: 10:00".into(),
                caching: Some(SectionCaching::Uncached),
                reason: Some("time of day".into()),
                source: None,
            }],
        };
        let mut i = inputs(&s, false);
        i.prompt = Some(&prompt);
        let (blocks, layout) = build(&i, &resolved_dynamic(&i));
        assert_eq!(blocks[0].text, "You are X.");
        assert!(blocks[1].text.contains("Now: 10:00"));
        assert!(
            layout
                .iter()
                .any(|l| l.name == "clock" && l.class == "uncached")
        );
    }
}
