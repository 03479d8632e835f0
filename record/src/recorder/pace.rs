//! Pacing the intake: not woken by every message of an interactive stream.
//!
//! A thread blocked in `read` on the handoff pipe is woken by every write
//! the relay makes to it, and on two cores that wake-up, and the recording
//! work it sets off, compete with the very round trip being relayed. So
//! when the stream is light (little taken since the intake last found the
//! pipe empty), the intake sleeps before it reads again, and takes the
//! messages of that window together: one wake-up of a timer instead of one
//! per message, and one piece of recording work. The window starts at
//! [`WINDOW_MIN`] and doubles, up to [`WINDOW_MAX`], while the stream stays
//! light; fewer windows mean fewer round trips that meet the recorder at
//! work. A heavy stretch ([`HEAVY_BYTES_PER_MS`] per millisecond of the
//! window) is read on without a pause, and the window starts over; an idle
//! stream is never polled (after a pause the read blocks until the relay
//! writes), and once it was idle for [`IDLE_AFTER`] the window starts over
//! too.
//!
//! A pause delays recording (and the live view) by at most [`WINDOW_MAX`],
//! never forwarding while the stream stays light: a window of it fills the
//! relay's pipes (1 MiB each, `PIPE_BYTES` in `relay/recorder_process.rs`)
//! to at most a third. Only a burst that starts during a pause may find the
//! pipes full before the pause ends, once.

use std::time::{Duration, Instant};

/// The first pause after the intake found the stream light.
pub const WINDOW_MIN: Duration = Duration::from_micros(500);

/// The longest pause.
pub const WINDOW_MAX: Duration = Duration::from_millis(5);

/// Bytes per millisecond of the window from which a stretch counts as
/// heavy: read on at once.
pub const HEAVY_BYTES_PER_MS: usize = 64 * 1024;

/// A stretch this long (the read after a pause waited for the relay) means
/// the stream went idle: the window starts over.
pub const IDLE_AFTER: Duration = Duration::from_millis(20);

/// Counts what the intake takes, and pauses it while the stream is light.
#[derive(Debug)]
pub struct Pacer {
    /// Bytes taken since the last pause (or since the pipe was last empty).
    taken: usize,
    /// The next pause.
    window: Duration,
    /// When the stretch began (the last pause ended).
    began: Instant,
}

impl Default for Pacer {
    fn default() -> Self {
        Pacer { taken: 0, window: WINDOW_MIN, began: Instant::now() }
    }
}

/// What to do before the next read.
#[derive(Debug, PartialEq, Eq)]
enum Next {
    /// Nothing was taken: the read may block, woken by the relay.
    Block,
    /// A heavy stretch: read on.
    ReadOn,
    /// A light stretch: pause this long first.
    Pause(Duration),
}

impl Pacer {
    /// Notes `n` bytes taken from the pipes.
    pub fn took(&mut self, n: usize) {
        self.taken = self.taken.saturating_add(n);
    }

    /// Called when everything read so far is taken and the next read may
    /// wait: pauses when the stream was light.
    pub fn before_reading(&mut self) {
        if let Next::Pause(window) = self.next(Instant::now()) {
            std::thread::sleep(window);
        }
        self.began = Instant::now();
    }

    /// Decides at `now`, and starts a new stretch.
    fn next(&mut self, now: Instant) -> Next {
        let taken = std::mem::take(&mut self.taken);
        if now.duration_since(self.began) >= IDLE_AFTER {
            self.window = WINDOW_MIN;
        }
        let heavy_from = HEAVY_BYTES_PER_MS.saturating_mul(self.window.as_micros() as usize) / 1000;
        if taken == 0 {
            self.window = WINDOW_MIN;
            Next::Block
        } else if taken >= heavy_from {
            self.window = WINDOW_MIN;
            Next::ReadOn
        } else {
            let window = self.window;
            self.window = (window * 2).min(WINDOW_MAX);
            Next::Pause(window)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn light_stretches_pause_longer_and_longer_heavy_and_idle_ones_do_not() {
        let mut pacer = Pacer::default();
        let t = pacer.began;
        assert_eq!(pacer.next(t), Next::Block, "nothing taken yet: the read blocks");
        let mut pauses = Vec::new();
        for _ in 0..6 {
            pacer.took(300);
            pauses.push(pacer.next(t));
        }
        let ms = |m: u64| Next::Pause(Duration::from_micros(m));
        assert_eq!(pauses, [ms(500), ms(1000), ms(2000), ms(4000), ms(5000), ms(5000)]);
        // At the longest window, a stretch of 5 ms × 64 KiB is heavy.
        pacer.took(5 * HEAVY_BYTES_PER_MS);
        assert_eq!(pacer.next(t), Next::ReadOn);
        pacer.took(300);
        assert_eq!(pacer.next(t), ms(500), "after a burst the window starts over");
        pacer.took(300);
        assert_eq!(pacer.next(t), ms(1000));
        pacer.took(300);
        assert_eq!(pacer.next(t + IDLE_AFTER), ms(500), "after an idle stretch the window starts over");
    }

    #[test]
    fn a_light_window_fills_the_relay_pipes_to_a_third_at_most() {
        let most = HEAVY_BYTES_PER_MS * WINDOW_MAX.as_millis() as usize;
        assert!(most * 3 <= 1 << 20, "{most} bytes in a window");
    }
}
