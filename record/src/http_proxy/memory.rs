//! The memory live connections' messages take in the proxy, counted.
//!
//! Every copy of a message the proxy holds, from its first byte gathered
//! until the recording thread has written it into the recorder's pipe, is
//! held in [`LIVE_BYTES`] by a [`Held`]: a `POST`'s body, an answer's body,
//! an SSE event's data, a WebSocket message (and its WebSocket's write
//! buffer), the message waiting for its connection's queue
//! and the message in that queue. The hold moves with the message; it is
//! never copied (the bytes go to the queue as they are). Within the
//! budget, one connection holds at most [`CONNECTION_BYTES`] and the
//! connections of one client address at most [`ADDRESS_BYTES`], so no
//! connection and no address can take the room of the others.
//!
//! A message whose size is known before it is read (a body with a
//! `Content-Length`, a WebSocket message once read) waits for room
//! ([`Held::poll_grow`]): it holds nothing while it waits, so waiting never
//! deadlocks. A message that grows as it is read (an event, a body of no
//! declared length) takes room as it comes ([`Held::resize`]) and is
//! refused (a `POST`, 503) or passed on unrecorded (an event, an answer)
//! when there is none.

use super::{ADDRESS_BYTES, CONNECTION_BYTES, LIVE_BYTES};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// What is held now, overall and per address, and who waits for room.
struct State {
    live: usize,
    by_address: BTreeMap<IpAddr, usize>,
    waiting: Vec<Waker>,
}

static STATE: Mutex<State> = Mutex::new(State { live: 0, by_address: BTreeMap::new(), waiting: Vec::new() });

fn state() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Bytes of [`LIVE_BYTES`] held now (for the tests).
#[cfg(test)]
pub fn live() -> usize {
    state().live
}

/// What one connection holds (changed under the state's lock).
#[derive(Debug, Default)]
pub struct ConnectionShare(AtomicUsize);

/// Bytes held for one message or body, by one connection, for one client
/// address; given back when dropped.
#[derive(Debug)]
pub struct Held {
    conn: Arc<ConnectionShare>,
    addr: IpAddr,
    bytes: usize,
}

impl Held {
    /// Nothing held yet.
    pub fn new(conn: Arc<ConnectionShare>, addr: IpAddr) -> Held {
        Held { conn, addr, bytes: 0 }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether `bytes` could ever be held (fits every share when all else is given back).
    pub fn could_hold(bytes: usize) -> bool {
        bytes <= CONNECTION_BYTES.min(ADDRESS_BYTES).min(LIVE_BYTES)
    }

    /// Makes the hold `now` bytes if there is room (always, to hold less);
    /// false, and the hold unchanged, when not.
    pub fn resize(&mut self, now: usize) -> bool {
        let mut state = state();
        self.resize_in(&mut state, now)
    }

    /// Makes the hold at least `now` bytes once there is room.
    pub fn poll_grow(&mut self, cx: &mut Context<'_>, now: usize) -> Poll<()> {
        if now <= self.bytes {
            return Poll::Ready(());
        }
        let mut state = state();
        if self.resize_in(&mut state, now) {
            return Poll::Ready(());
        }
        if !state.waiting.iter().any(|w| w.will_wake(cx.waker())) {
            state.waiting.push(cx.waker().clone());
        }
        Poll::Pending
    }

    fn resize_in(&mut self, state: &mut State, now: usize) -> bool {
        let conn = self.conn.0.load(Ordering::Relaxed);
        let addr = state.by_address.get(&self.addr).copied().unwrap_or(0);
        if now > self.bytes {
            let more = now - self.bytes;
            if state.live + more > LIVE_BYTES || addr + more > ADDRESS_BYTES || conn + more > CONNECTION_BYTES {
                return false;
            }
            state.live += more;
            state.by_address.insert(self.addr, addr + more);
            self.conn.0.store(conn + more, Ordering::Relaxed);
        } else if now < self.bytes {
            let less = self.bytes - now;
            state.live -= less;
            if addr == less {
                state.by_address.remove(&self.addr);
            } else {
                state.by_address.insert(self.addr, addr - less);
            }
            self.conn.0.store(conn - less, Ordering::Relaxed);
            // Room was given back: whoever waits for it tries again.
            state.waiting.drain(..).for_each(Waker::wake);
        }
        self.bytes = now;
        true
    }

    /// Splits off a hold of `bytes` of this one (at most what it holds),
    /// for the part of a body that became a message of its own.
    pub fn split(&mut self, bytes: usize) -> Held {
        let bytes = bytes.min(self.bytes);
        self.bytes -= bytes;
        Held { conn: self.conn.clone(), addr: self.addr, bytes }
    }

    /// Takes over what `other` holds (of the same connection and address).
    pub fn absorb(&mut self, mut other: Held) {
        debug_assert!(Arc::ptr_eq(&self.conn, &other.conn) && self.addr == other.addr);
        self.bytes += std::mem::take(&mut other.bytes);
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.bytes > 0 {
            self.resize(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_and_an_address_hold_at_most_their_shares_and_giving_back_wakes_the_waiting() {
        let a: IpAddr = [127, 0, 0, 1].into();
        let b: IpAddr = [127, 0, 0, 2].into();
        let one = Arc::new(ConnectionShare::default());
        let mut first = Held::new(one.clone(), a);
        assert!(first.resize(CONNECTION_BYTES));
        let mut second = Held::new(one, a);
        assert!(!second.resize(1), "past the connection's share");
        // Other connections of the same address, up to the address's share.
        let mut others: Vec<Held> = Vec::new();
        let mut held = CONNECTION_BYTES;
        while held < ADDRESS_BYTES {
            let mut h = Held::new(Arc::default(), a);
            let n = (ADDRESS_BYTES - held).min(CONNECTION_BYTES);
            assert!(h.resize(n));
            held += n;
            others.push(h);
        }
        assert!(!Held::new(Arc::default(), a).resize(1), "past the address's share");
        let mut elsewhere = Held::new(Arc::default(), b);
        assert!(elsewhere.resize(1), "another address has room");
        // A waiting grow is woken once room is given back.
        let woken = Arc::new(std::sync::atomic::AtomicBool::new(false));
        struct Flag(Arc<std::sync::atomic::AtomicBool>);
        impl std::task::Wake for Flag {
            fn wake(self: Arc<Self>) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let waker = Waker::from(Arc::new(Flag(woken.clone())));
        let mut cx = Context::from_waker(&waker);
        assert!(second.poll_grow(&mut cx, 10).is_pending());
        let part = first.split(10);
        drop(part);
        assert!(woken.load(Ordering::SeqCst));
        assert!(second.poll_grow(&mut cx, 10).is_ready());
        drop((first, second, others, elsewhere));
        assert_eq!(live(), 0);
    }
}
