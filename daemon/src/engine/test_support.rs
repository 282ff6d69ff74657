//! What the engine's unit tests start from (tests only).

use std::path::Path;

use ctxd_protocol::SessionCreateParams;

use super::Engine;

/// A session in `dir`, outside git.
pub(crate) async fn session(engine: &Engine, dir: &Path) -> String {
    engine
        .create_session(SessionCreateParams {
            cwd: dir.display().to_string(),
            no_git: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .session_id
}
