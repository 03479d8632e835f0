//! Horizontal geometry of the diagram and the colours of frames.

use acp_tee_shared::api::FrameSummary;
use acp_tee_shared::FrameKind;

/// x of the Client lane.
pub const CLIENT_X: f64 = 140.0;
/// x of the acp-tee lane.
pub const TEE_X: f64 = 380.0;
/// x of the Agent lane.
pub const AGENT_X: f64 = 620.0;
/// Left edge of the agent stderr lane.
pub const STDERR_X: f64 = 690.0;
/// Width of the whole diagram.
pub const DIAGRAM_W: f64 = 920.0;
/// y of an arrow within its row.
pub const ARROW_Y: f64 = 20.0;

/// Colour of errors.
pub const ERROR_COLOUR: &str = "#f47067";
/// Colour of invalid frames and stderr.
pub const MUTED_COLOUR: &str = "#8b949e";
/// Colour of notifications.
pub const NOTIFY_COLOUR: &str = "#9fb3c8";
/// Colour of batches.
pub const BATCH_COLOUR: &str = "#d2a8ff";

/// The colour of a request/response pair, from the request's seq, spread by the golden angle so
/// neighbouring pairs differ.
pub fn pair_colour(request_seq: i64) -> String {
    let hue = (request_seq as f64 * 137.508) % 360.0;
    format!("hsl({hue:.0} 70% 64%)")
}

/// The colour a frame is drawn in.
pub fn frame_colour(f: &FrameSummary) -> String {
    match f.kind {
        FrameKind::Request => pair_colour(f.seq),
        FrameKind::Response => f.reply_to_seq.map_or(MUTED_COLOUR.to_owned(), pair_colour),
        FrameKind::Error => ERROR_COLOUR.to_owned(),
        FrameKind::Notification => NOTIFY_COLOUR.to_owned(),
        FrameKind::Batch => BATCH_COLOUR.to_owned(),
        FrameKind::Invalid | FrameKind::Stderr => MUTED_COLOUR.to_owned(),
    }
}
