//! Horizontal geometry of the diagram and the colours of frames.
//!
//! The lanes spread over the width the diagram has (never less than [`MIN_W`], more with several MCP lanes;
//! narrower panes scroll sideways, lane headings with the lanes): a time column, Client, acp-tee midway,
//! Agent, one lane per MCP server the agent started (see `state::family`), and the agent's stderr lane at
//! the right. The stderr arrows cross the MCP lanes rather than the MCP arrows crossing the stderr lines'
//! text.

use acp_tee_shared::api::FrameSummary;
use acp_tee_shared::FrameKind;

/// The narrowest the diagram is drawn; a narrower pane scrolls sideways.
pub const MIN_W: f64 = 560.0;
/// x of the Client lane (after the time column).
const CLIENT_X: f64 = 140.0;
/// Space between the Agent lane and the stderr lane.
const AGENT_TO_STDERR: f64 = 70.0;
/// y of an arrow within its row.
pub const ARROW_Y: f64 = crate::state::mcp::ARROW_Y;
/// Space between two MCP lanes (and the Agent and the first), at least and at most.
const MCP_GAP: (f64, f64) = (110.0, 220.0);
/// Space between the last MCP lane and the stderr lane: room for half of the lane's heading.
const MCP_TO_STDERR: f64 = 56.0;
/// The least space between Client and Agent beside MCP lanes.
const MIN_SPAN: f64 = 170.0;
/// The share of the width the stderr lane gets beside MCP lanes (less than without them).
const STDERR_SHARE_MCP: f64 = 0.16;
/// Width of the time column, left of the Client lane, where a drag down the rows selects a range (its
/// cursor is in style.css, `.frame::before`).
pub const TIME_COL_W: f64 = 128.0;
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
    /// How many MCP lanes there are.
    pub mcp_lanes: usize,
    /// Space between the Agent lane and the first MCP lane, and between MCP lanes.
    pub mcp_gap: f64,
}

impl Geometry {
    /// The lanes for a pane `available` pixels wide with `mcp_lanes` MCP lanes (920 px without MCP lanes
    /// gives Client 140, acp-tee 380, Agent 620, stderr from 690). The MCP lanes get a gap each of the
    /// room between Client and stderr, the Client–Agent span 1.4 gaps.
    pub fn for_width(available: f64, mcp_lanes: usize) -> Geometry {
        if mcp_lanes == 0 {
            let width = available.max(MIN_W).floor();
            let stderr_w = (width * 0.25).clamp(120.0, 240.0);
            let stderr_x = width - stderr_w;
            let agent_x = stderr_x - AGENT_TO_STDERR;
            return Geometry {
                width,
                client_x: CLIENT_X,
                tee_x: (CLIENT_X + agent_x) / 2.0,
                agent_x,
                stderr_x,
                mcp_lanes: 0,
                mcp_gap: 0.0,
            };
        }
        let n = mcp_lanes as f64;
        let least = (CLIENT_X + MIN_SPAN + n * MCP_GAP.0 + MCP_TO_STDERR) / (1.0 - STDERR_SHARE_MCP);
        let width = available.max(MIN_W).max(least).floor();
        let stderr_w = (width * STDERR_SHARE_MCP).clamp(90.0, 200.0);
        let stderr_x = width - stderr_w;
        let room = stderr_x - MCP_TO_STDERR - CLIENT_X;
        let mcp_gap = (room / (n + 1.4)).clamp(MCP_GAP.0, MCP_GAP.1);
        let agent_x = (stderr_x - MCP_TO_STDERR - n * mcp_gap).max(CLIENT_X + MIN_SPAN / 2.0);
        Geometry { width, client_x: CLIENT_X, tee_x: (CLIENT_X + agent_x) / 2.0, agent_x, stderr_x, mcp_lanes, mcp_gap }
    }

    /// x of MCP lane `i` (from 0).
    pub fn mcp_x(&self, i: usize) -> f64 {
        self.agent_x + (i + 1) as f64 * self.mcp_gap
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
/// Colour of the MCP lanes' requests and answers (MCP-over-ACP frames are marked in it too).
pub const MCP_COLOUR: &str = "#c9a0ff";

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
        let g = Geometry::for_width(920.0, 0);
        assert_eq!((g.client_x, g.tee_x, g.agent_x, g.stderr_x), (140.0, 380.0, 620.0, 690.0));
        let narrow = Geometry::for_width(300.0, 0);
        assert_eq!(narrow.width, MIN_W);
        assert!(narrow.client_x < narrow.tee_x && narrow.tee_x < narrow.agent_x && narrow.agent_x < narrow.stderr_x);
    }

    #[test]
    fn mcp_lanes_sit_between_agent_and_stderr_and_fit_the_900_px_pane() {
        // The diagram's share of a 900 px window beside the detail panel, and of a 1400 px one.
        for available in [585.0, 940.0] {
            let g = Geometry::for_width(available, 1);
            assert_eq!(g.width, available, "no sideways scrolling at {available}");
            assert!(g.agent_x - g.client_x >= MIN_SPAN, "{g:?}");
            assert!(g.mcp_gap >= MCP_GAP.0 && g.mcp_x(0) + MCP_TO_STDERR <= g.stderr_x + 0.5, "{g:?}");
        }
        // Many servers: wider than the pane (it scrolls sideways), every gap at least the least.
        let g = Geometry::for_width(585.0, 5);
        assert!(g.width > 585.0 && g.mcp_gap >= MCP_GAP.0, "{g:?}");
        assert!(g.mcp_x(4) < g.stderr_x && g.agent_x - g.client_x >= MIN_SPAN * 0.9, "{g:?}");
    }
}
