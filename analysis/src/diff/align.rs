//! Aligning two sequences of message keys (direction, kind, method): the
//! fewest additions and removals (Myers' greedy algorithm), within a bound.
//!
//! The search costs time `(n + m) · d` and memory `d²` for `d` edits, so
//! it gives up past [`ALIGN_MAX_EDITS`] edits (after the common prefix and
//! suffix, which cost nothing) and pairs the k-th message of each key on
//! one side with the k-th on the other instead, in linear time.

use std::collections::HashMap;

/// Additions plus removals past which the fewest are not searched for:
/// at most `(n + m) · ALIGN_MAX_EDITS` steps and `ALIGN_MAX_EDITS²`
/// positions kept (4 MiB).
pub const ALIGN_MAX_EDITS: usize = 1000;

/// One step of an alignment, by index into the two sequences.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Aligned: the same key on both sides.
    Both(usize, usize),
    /// Only in the first sequence.
    OnlyA(usize),
    /// Only in the second sequence.
    OnlyB(usize),
}

/// How an alignment was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// The fewest additions and removals.
    Edits,
    /// The k-th of each key with the k-th (more than [`ALIGN_MAX_EDITS`] edits).
    Order,
}

/// Aligns `a` with `b`; the ops come in order of both sequences when the
/// method is [`Method::Edits`], and in order of `a`, then the rest of `b`,
/// for [`Method::Order`].
pub fn align(a: &[u32], b: &[u32]) -> (Vec<Op>, Method) {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (ra, rb) = (&a[prefix..], &b[prefix..]);
    let suffix = ra.iter().rev().zip(rb.iter().rev()).take_while(|(x, y)| x == y).count();
    let (ma, mb) = (&ra[..ra.len() - suffix], &rb[..rb.len() - suffix]);
    let mut ops: Vec<Op> = (0..prefix).map(|i| Op::Both(i, i)).collect();
    let method = match myers(ma, mb, ALIGN_MAX_EDITS) {
        Some(middle) => {
            ops.extend(middle.into_iter().map(|op| shift(op, prefix)));
            Method::Edits
        }
        None => {
            ops.extend(by_order(ma, mb).into_iter().map(|op| shift(op, prefix)));
            Method::Order
        }
    };
    let (sa, sb) = (prefix + ma.len(), prefix + mb.len());
    ops.extend((0..suffix).map(|i| Op::Both(sa + i, sb + i)));
    (ops, method)
}

fn shift(op: Op, by: usize) -> Op {
    match op {
        Op::Both(i, j) => Op::Both(i + by, j + by),
        Op::OnlyA(i) => Op::OnlyA(i + by),
        Op::OnlyB(j) => Op::OnlyB(j + by),
    }
}

/// The k-th of each key in `a` with the k-th in `b`.
fn by_order(a: &[u32], b: &[u32]) -> Vec<Op> {
    let mut in_b: HashMap<u32, std::collections::VecDeque<usize>> = HashMap::new();
    for (j, k) in b.iter().enumerate() {
        in_b.entry(*k).or_default().push_back(j);
    }
    let mut used = vec![false; b.len()];
    let mut ops = Vec::with_capacity(a.len().max(b.len()));
    for (i, k) in a.iter().enumerate() {
        match in_b.get_mut(k).and_then(|q| q.pop_front()) {
            Some(j) => {
                used[j] = true;
                ops.push(Op::Both(i, j));
            }
            None => ops.push(Op::OnlyA(i)),
        }
    }
    ops.extend(used.iter().enumerate().filter(|(_, u)| !**u).map(|(j, _)| Op::OnlyB(j)));
    ops
}

/// The fewest additions and removals turning `a` into `b`, when there are
/// at most `max_edits`.
fn myers(a: &[u32], b: &[u32], max_edits: usize) -> Option<Vec<Op>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    if n + m == 0 {
        return Some(Vec::new());
    }
    let max_d = (max_edits as isize).min(n + m);
    let offset = max_d + 1;
    let mut v = vec![0isize; (2 * max_d + 3) as usize];
    // The furthest x on each diagonal -d..=d before step d, kept for the way back.
    let mut trace: Vec<Vec<isize>> = Vec::new();
    for d in 0..=max_d {
        trace.push(v[(offset - d) as usize..=(offset + d) as usize].to_vec());
        let mut k = -d;
        while k <= d {
            let down = k == -d || (k != d && v[(offset + k - 1) as usize] < v[(offset + k + 1) as usize]);
            let mut x = if down { v[(offset + k + 1) as usize] } else { v[(offset + k - 1) as usize] + 1 };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[(offset + k) as usize] = x;
            if x >= n && y >= m {
                return Some(back(&trace, n, m, d));
            }
            k += 2;
        }
    }
    None
}

/// Walks back from `(n, m)` at step `d` through the saved diagonals.
fn back(trace: &[Vec<isize>], n: isize, m: isize, d: isize) -> Vec<Op> {
    let mut ops = Vec::new();
    let (mut x, mut y) = (n, m);
    for d in (1..=d).rev() {
        let v = &trace[d as usize];
        let at = |k: isize| v[(k + d) as usize];
        let k = x - y;
        let down = k == -d || (k != d && at(k - 1) < at(k + 1));
        let prev_k = if down { k + 1 } else { k - 1 };
        let prev_x = at(prev_k);
        let prev_y = prev_x - prev_k;
        while x > prev_x && y > prev_y {
            x -= 1;
            y -= 1;
            ops.push(Op::Both(x as usize, y as usize));
        }
        if down {
            y -= 1;
            ops.push(Op::OnlyB(y as usize));
        } else {
            x -= 1;
            ops.push(Op::OnlyA(x as usize));
        }
        debug_assert_eq!((x, y), (prev_x, prev_y));
    }
    while x > 0 && y > 0 {
        x -= 1;
        y -= 1;
        ops.push(Op::Both(x as usize, y as usize));
    }
    ops.reverse();
    ops
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Whether `ops` account for every element of both sides once, in
    /// order, pairing only equal keys.
    fn valid(a: &[u32], b: &[u32], ops: &[Op]) -> bool {
        let (mut i, mut j) = (0, 0);
        for op in ops {
            match *op {
                Op::Both(x, y) if x == i && y == j && a[x] == b[y] => (i, j) = (i + 1, j + 1),
                Op::OnlyA(x) if x == i => i += 1,
                Op::OnlyB(y) if y == j => j += 1,
                _ => return false,
            }
        }
        i == a.len() && j == b.len()
    }

    fn edits(ops: &[Op]) -> usize {
        ops.iter().filter(|o| !matches!(o, Op::Both(..))).count()
    }

    #[test]
    fn an_insertion_is_one_edit() {
        let (a, b) = ([1, 2, 3, 4], [1, 2, 9, 3, 4]);
        let (ops, method) = align(&a, &b);
        assert_eq!(method, Method::Edits);
        assert!(valid(&a, &b, &ops));
        assert_eq!(edits(&ops), 1);
        assert!(ops.contains(&Op::OnlyB(2)));
    }

    #[test]
    fn past_the_bound_keys_pair_by_order() {
        let a: Vec<u32> = (0..3000).map(|i| i % 2).collect();
        let b: Vec<u32> = (0..3000).map(|i| 2 + i % 3).collect();
        let (ops, method) = align(&a, &b);
        assert_eq!(method, Method::Order);
        assert_eq!(edits(&ops), 6000);
    }

    proptest! {
        #[test]
        fn alignments_are_valid_and_as_short_as_an_lcs(
            a in proptest::collection::vec(0u32..4, 0..40),
            b in proptest::collection::vec(0u32..4, 0..40),
        ) {
            let (ops, method) = align(&a, &b);
            prop_assert_eq!(method, Method::Edits);
            prop_assert!(valid(&a, &b, &ops));
            // The fewest edits: n + m - 2 * LCS.
            let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
            for i in 1..=a.len() {
                for j in 1..=b.len() {
                    lcs[i][j] = if a[i - 1] == b[j - 1] { lcs[i - 1][j - 1] + 1 } else { lcs[i - 1][j].max(lcs[i][j - 1]) };
                }
            }
            prop_assert_eq!(edits(&ops), a.len() + b.len() - 2 * lcs[a.len()][b.len()]);
        }
    }
}
