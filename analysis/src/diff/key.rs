//! What makes two messages comparable in `diff` and `replay`.

use acp_tee_shared::{Direction, FrameKind};
use acp_tee_wire::acp;

/// Longest method or update kind kept in a key (hostile traces name
/// methods of any length).
const KEY_MAX_CHARS: usize = 200;

/// What makes two messages comparable: direction, kind (a response and an
/// error are both answers, [`FrameKind::Response`]), method (an answer's is
/// its request's) and, for `session/update`, the update's kind.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    /// Which way it went.
    pub dir: Direction,
    /// Request, notification or answer (or batch, invalid).
    pub kind: FrameKind,
    /// Its method.
    pub method: Option<String>,
    /// `session/update`'s `sessionUpdate`.
    pub update: Option<String>,
}

impl Key {
    /// The key of the message `raw` of `kind` going `dir`, whose method is
    /// `method` (an answer's: its request's).
    pub fn of(dir: Direction, kind: FrameKind, method: Option<&str>, raw: &[u8]) -> Key {
        if method != Some("session/update") {
            return Key::new(dir, kind, method, None);
        }
        if let Some(update) = acp::plain_update_kind(raw) {
            return Key::new(dir, kind, method, Some(update));
        }
        let mut keep = None;
        let update = acp::params(raw, &mut keep).and_then(|p| p.update).and_then(|u| u.session_update);
        Key::new(dir, kind, method, update.as_deref())
    }

    /// The key from its parts, cut to [`KEY_MAX_CHARS`].
    pub fn new(dir: Direction, kind: FrameKind, method: Option<&str>, update: Option<&str>) -> Key {
        let cut = |s: &str| s.chars().take(KEY_MAX_CHARS).collect::<String>();
        let kind = match kind {
            FrameKind::Error => FrameKind::Response,
            k => k,
        };
        Key { dir, kind, method: method.map(cut), update: update.map(cut) }
    }

    /// `session/update agent_message_chunk notification`, `response to initialize`.
    pub fn describe(&self) -> String {
        let method = crate::text::printable(self.method.as_deref().unwrap_or("?")).into_owned();
        let update = self.update.as_deref().map(|u| format!(" {}", crate::text::printable(u))).unwrap_or_default();
        match self.kind {
            FrameKind::Response => format!("answer to {method}"),
            k => format!("{method}{update} {}", k.as_str()),
        }
    }
}
