//! A queue bounded by the bytes it holds, between the framer and the store writer.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// What [`ByteQueue::pop_batch_within`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Popped<T> {
    /// Some items (never empty).
    Items(Vec<T>),
    /// Nothing arrived in time; the queue is still open.
    Idle,
    /// The queue is closed and drained (the vector is empty).
    Closed(Vec<T>),
}

/// Something that knows how many bytes of memory it pins.
pub trait Weighted {
    /// Approximate bytes held.
    fn weight(&self) -> usize;
}

/// A multi-producer, single-consumer queue that holds at most `capacity` bytes:
/// [`ByteQueue::push`] blocks while the queue is full. One item larger than the
/// capacity is still accepted once the queue is empty, so nothing is ever
/// refused for its size.
///
/// The bytes counted are those queued and those the consumer took and has
/// not yet said it is done with ([`ByteQueue::done`]), plus what it holds
/// for other work ([`ByteQueue::hold`]): so the bound covers the batch being
/// stored too, and a producer can wait for room before it gathers a large
/// item ([`ByteQueue::wait_for_room`]).
pub struct ByteQueue<T> {
    state: Mutex<State<T>>,
    not_empty: Condvar,
    not_full: Condvar,
    capacity: usize,
}

struct State<T> {
    items: VecDeque<T>,
    /// Bytes queued, taken and not done with, and held.
    bytes: usize,
    /// Of `bytes`, those taken or held by the consumer until [`ByteQueue::done`].
    taken: usize,
    /// What the producer said it holds on its way to an item, last time it
    /// waited for room.
    gathering: usize,
    closed: bool,
}

impl<T: Weighted> ByteQueue<T> {
    /// An empty queue holding at most `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        ByteQueue {
            state: Mutex::new(State { items: VecDeque::new(), bytes: 0, taken: 0, gathering: 0, closed: false }),
            not_empty: Condvar::new(),
            not_full: Condvar::new(),
            capacity,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds `item`, waiting while the queue is full.
    pub fn push(&self, item: T) {
        let w = item.weight();
        let mut s = self.lock();
        while s.bytes > 0 && s.bytes + w > self.capacity {
            s = self.not_full.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.bytes += w;
        s.items.push_back(item);
        drop(s);
        self.not_empty.notify_one();
    }

    /// Waits until `held` more bytes (what the producer holds already, on
    /// its way to becoming an item) fit beside what the queue counts, or
    /// until it counts nothing: then a producer gathers a large item only
    /// once the items before it are stored.
    pub fn wait_for_room(&self, held: usize) {
        let mut s = self.lock();
        s.gathering = held;
        while s.bytes > 0 && s.bytes + held > self.capacity {
            s = self.not_full.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// For other work of the consumer's while the queue is idle (reading
    /// stored frames back, a large one whole): when nothing is queued or
    /// taken and the producer gathers less than the capacity, counts the
    /// whole capacity as taken until [`ByteQueue::done`], so that the
    /// producer gathers no more meanwhile, and returns true; otherwise
    /// false, and the work waits.
    pub fn hold_idle(&self) -> bool {
        let mut s = self.lock();
        if s.bytes > 0 || s.gathering >= self.capacity {
            return false;
        }
        s.bytes += self.capacity;
        s.taken += self.capacity;
        true
    }

    /// The consumer is done with everything it took (and held): that room
    /// is free again.
    pub fn done(&self) {
        let mut s = self.lock();
        s.bytes -= std::mem::take(&mut s.taken);
        drop(s);
        self.not_full.notify_all();
    }

    /// Waits for at least one item, then takes up to `max_items` of those ready.
    /// An empty result means the queue is closed and drained.
    pub fn pop_batch(&self, max_items: usize) -> Vec<T> {
        loop {
            if let Popped::Items(batch) | Popped::Closed(batch) =
                self.pop_batch_within(max_items, Duration::from_secs(3600))
            {
                return batch;
            }
        }
    }

    /// Like [`ByteQueue::pop_batch`], but gives up after `idle` without items.
    /// What it takes counts against the capacity until [`ByteQueue::done`].
    pub fn pop_batch_within(&self, max_items: usize, idle: Duration) -> Popped<T> {
        let deadline = Instant::now() + idle;
        let mut s = self.lock();
        while s.items.is_empty() && !s.closed {
            let now = Instant::now();
            if now >= deadline {
                return Popped::Idle;
            }
            s = self.not_empty.wait_timeout(s, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
        }
        if s.items.is_empty() {
            return Popped::Closed(Vec::new());
        }
        let n = s.items.len().min(max_items);
        let batch: Vec<T> = s.items.drain(..n).collect();
        // Still counted, until the consumer is done with them.
        s.taken += batch.iter().map(Weighted::weight).sum::<usize>();
        Popped::Items(batch)
    }

    /// No more pushes will come; the consumer drains what is left.
    pub fn close(&self) {
        self.lock().closed = true;
        self.not_empty.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    impl Weighted for Vec<u8> {
        fn weight(&self) -> usize {
            self.len()
        }
    }

    #[test]
    fn oversized_item_passes_when_empty_and_order_is_kept() {
        let q = ByteQueue::new(10);
        q.push(vec![0u8; 50]);
        assert_eq!(q.pop_batch(10).len(), 1);
        q.done();
        q.push(vec![1u8; 4]);
        q.push(vec![2u8; 4]);
        q.close();
        assert_eq!(q.pop_batch(10), vec![vec![1u8; 4], vec![2u8; 4]]);
        assert!(q.pop_batch(10).is_empty());
    }

    #[test]
    fn idle_and_closed_are_told_apart() {
        let q: ByteQueue<Vec<u8>> = ByteQueue::new(10);
        assert_eq!(q.pop_batch_within(5, Duration::from_millis(1)), Popped::Idle);
        q.push(vec![1]);
        assert_eq!(q.pop_batch_within(5, Duration::from_millis(1)), Popped::Items(vec![vec![1]]));
        q.close();
        assert_eq!(q.pop_batch_within(5, Duration::from_millis(1)), Popped::Closed(vec![]));
    }

    #[test]
    fn producer_waits_for_room_and_nothing_is_lost() {
        let q = Arc::new(ByteQueue::new(100));
        let producer = {
            let q = q.clone();
            std::thread::spawn(move || {
                for i in 0..1000u32 {
                    q.push(i.to_le_bytes().repeat(10));
                }
                q.close();
            })
        };
        let mut got = Vec::new();
        loop {
            let batch = q.pop_batch(7);
            if batch.is_empty() {
                break;
            }
            assert!(batch.len() <= 7);
            got.extend(batch);
            q.done();
        }
        producer.join().unwrap();
        let expect: Vec<Vec<u8>> = (0..1000u32).map(|i| i.to_le_bytes().repeat(10)).collect();
        assert_eq!(got, expect);
    }

    #[test]
    fn what_the_consumer_took_counts_until_it_is_done() {
        let q = Arc::new(ByteQueue::new(100));
        q.push(vec![0u8; 80]);
        assert_eq!(q.pop_batch(10).len(), 1);
        // Taken, not done: a producer holding 30 bytes waits.
        let producer = {
            let q = q.clone();
            std::thread::spawn(move || {
                q.wait_for_room(30);
                q.push(vec![1u8; 30]);
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!producer.is_finished(), "the producer did not wait for the taken batch");
        q.done();
        producer.join().unwrap();
        assert_eq!(q.pop_batch(10), vec![vec![1u8; 30]]);
        q.done();
        // Held room counts as well, until done.
        assert!(q.hold_idle());
        let producer = {
            let q = q.clone();
            std::thread::spawn(move || q.wait_for_room(1))
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!producer.is_finished(), "the producer did not wait for the held room");
        q.done();
        producer.join().unwrap();
        // Nothing is held while a producer gathers a large item, or while
        // items are queued.
        q.wait_for_room(100);
        assert!(!q.hold_idle());
        q.wait_for_room(0);
        q.push(vec![2u8; 10]);
        assert!(!q.hold_idle());
    }
}
