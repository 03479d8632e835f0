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
pub struct ByteQueue<T> {
    state: Mutex<State<T>>,
    not_empty: Condvar,
    not_full: Condvar,
    capacity: usize,
}

struct State<T> {
    items: VecDeque<T>,
    bytes: usize,
    closed: bool,
}

impl<T: Weighted> ByteQueue<T> {
    /// An empty queue holding at most `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        ByteQueue {
            state: Mutex::new(State { items: VecDeque::new(), bytes: 0, closed: false }),
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
        s.bytes -= batch.iter().map(Weighted::weight).sum::<usize>();
        drop(s);
        self.not_full.notify_all();
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
        }
        producer.join().unwrap();
        let expect: Vec<Vec<u8>> = (0..1000u32).map(|i| i.to_le_bytes().repeat(10)).collect();
        assert_eq!(got, expect);
    }
}
