//! `CTXD_HOME/config.toml`: a value for any flag, below the flags and the environment and
//! above the defaults. The file's values go through the same clap parsers as a flag's, so
//! a value the command line refuses is refused here too, naming the key.

use std::ffi::OsString;
use std::path::Path;

use anyhow::{Context, bail};
use clap::parser::ValueSource;

/// The file beside the database.
pub const FILE_NAME: &str = "config.toml";

/// Arguments the file may not set: the home holds the file; the rest are actions.
const NOT_IN_FILE: [&str; 4] = ["home", "help", "version", "print_config"];

/// The keys the file accepts: every flag's id (its long name in snake_case).
pub fn keys(cmd: &clap::Command) -> Vec<String> {
    cmd.get_arguments()
        .filter(|a| a.get_long().is_some() && !NOT_IN_FILE.contains(&a.get_id().as_str()))
        .map(|a| a.get_id().to_string())
        .collect()
}

/// The command line to parse: `argv` with `--flag=value` for each key of the file at
/// `path` whose flag `first` did not get from the command line or the environment. A
/// missing file adds nothing; an unknown key, a value of the wrong kind or one the flag's
/// parser refuses is an error naming the file and the key.
pub fn merged_args(
    cmd: &clap::Command,
    first: &clap::ArgMatches,
    path: &Path,
    argv: &[OsString],
) -> anyhow::Result<Vec<OsString>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(argv.to_vec()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let table: toml::Table = text
        .parse()
        .with_context(|| format!("{} is not valid TOML", path.display()))?;
    let known = keys(cmd);
    let mut extra = Vec::new();
    for (key, value) in &table {
        if !known.contains(key) {
            bail!(
                "{}: unknown key `{key}` (known keys: {})",
                path.display(),
                known.join(", ")
            );
        }
        let text = match value {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            // The summariser is JSON on the command line; a table says the same.
            toml::Value::Table(_) if key == "summariser" => serde_json::to_string(value)?,
            other => bail!(
                "{}: key `{key}`: expected a string or an integer, found {}",
                path.display(),
                other.type_str()
            ),
        };
        let Some(arg) = cmd.get_arguments().find(|a| a.get_id() == key) else {
            continue;
        };
        let long = arg.get_long().unwrap_or(key);
        // Alone, through the flag's own parser: its error is about this key only.
        let flag = OsString::from(format!("--{long}={text}"));
        if let Err(e) = cmd
            .clone()
            .ignore_errors(false)
            .try_get_matches_from([OsString::from("ctxd"), flag.clone()])
        {
            let why = e.to_string();
            let why = why
                .lines()
                .next()
                .unwrap_or_default()
                .trim_start_matches("error: ");
            bail!("{}: key `{key}`: {why}", path.display());
        }
        match first.value_source(key) {
            Some(ValueSource::CommandLine | ValueSource::EnvVariable) => {}
            _ => extra.push(flag),
        }
    }
    // Right after the program's name: before a subcommand, where every flag is accepted.
    let mut out = Vec::with_capacity(argv.len() + extra.len());
    out.extend(argv.first().cloned());
    out.extend(extra);
    out.extend(argv.iter().skip(1).cloned());
    Ok(out)
}

/// A URL with its password replaced by `****` (userinfo or a `password=` parameter).
pub fn mask_password(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (Some(s), r),
        None => (None, url),
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:****@{host}"),
            None => authority.to_string(),
        },
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|kv| {
                    if kv.starts_with("password=") {
                        "password=****".to_string()
                    } else {
                        kv.to_string()
                    }
                })
                .collect();
            format!("{path}?{}", query.join("&"))
        }
        None => tail.to_string(),
    };
    match scheme {
        Some(s) => format!("{s}://{authority}{tail}"),
        None => format!("{authority}{tail}"),
    }
}

#[cfg(test)]
mod tests {
    use super::mask_password;

    #[test]
    fn passwords_are_masked_and_nothing_else() {
        assert_eq!(
            mask_password("postgresql://u:secret@h:5432/db?sslmode=require"),
            "postgresql://u:****@h:5432/db?sslmode=require"
        );
        assert_eq!(
            mask_password("postgresql:///db?host=/run&password=p"),
            "postgresql:///db?host=/run&password=****"
        );
        assert_eq!(mask_password("postgresql://u@h/db"), "postgresql://u@h/db");
        assert_eq!(mask_password("sqlite"), "sqlite");
    }
}
