//! Horizontal geometry of the diagram and the colours of frames.
//!
//! The lanes spread over the width the diagram has (never less than [`MIN_W`]; narrower panes scroll
//! sideways, lane headings with the lanes): a time column, Client, acp-tee midway, Agent, and the agent's
//! stderr lane at the right.

use acp_tee_shared::api::FrameSummary;
use acp_tee_shared::FrameKind;

/// The narrowest the diagram is drawn; a narrower pane scrolls sideways.
pub const MIN_W: f64 = 560.0;
/// x of the Client lane (after the time column).
const CLIENT_X: f64 = 140.0;
/// Space between the Agent lane and the stderr lane.
const AGENT_TO_STDERR: f64 = 70.0;
/// y of an arrow within its row.
pub const ARROW_Y: f64 = 20.0;
/// Height of the lane headings above the rows.
pub const LANE_HEAD_H: f64 = 32.0;

/// Where the lanes are for one width of the diagram.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Geometry {
    /// Width of the whole diagram.
    pub width: f64,
    /// x of the Client lane.
    pub client_x: f64,
    /// x of the acp-tee lane.
    pub tee_x: f64,
    /// x of the Agent lane.
    pub agent_x: f64,
    /// Left edge of the agent stderr lane.
    pub stderr_x: f64,
}

impl Geometry {
    /// The lanes for a pane `available` pixels wide (920 px gives Client 140, acp-tee 380, Agent 620,
    /// stderr from 690).
    pub fn for_width(available: f64) -> Geometry {
        let width = available.max(MIN_W).floor();
        let stderr_w = (width * 0.25).clamp(120.0, 240.0);
        let stderr_x = width - stderr_w;
        let agent_x = stderr_x - AGENT_TO_STDERR;
        Geometry { width, client_x: CLIENT_X, tee_x: (CLIENT_X + agent_x) / 2.0, agent_x, stderr_x }
    }

    /// Space between the Client and Agent lanes.
    pub fn span(&self) -> f64 {
        self.agent_x - self.client_x
    }
}

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

/// A colour for an ACP session, from its id, so interleaved sessions can be told apart.
pub fn session_colour(id: &str) -> String {
    // FNV-1a: stable across runs and browsers.
    let hash = id.bytes().fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    format!("hsl({} 65% 58%)", hash % 360)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_spread_over_the_width_and_never_get_narrower_than_the_minimum() {
        let g = Geometry::for_width(920.0);
        assert_eq!((g.client_x, g.tee_x, g.agent_x, g.stderr_x), (140.0, 380.0, 620.0, 690.0));
        let narrow = Geometry::for_width(300.0);
        assert_eq!(narrow.width, MIN_W);
        assert!(narrow.client_x < narrow.tee_x && narrow.tee_x < narrow.agent_x && narrow.agent_x < narrow.stderr_x);
    }
}
