//! A map that never holds more than a fixed number of entries: past it, the oldest goes.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

/// Insertion-ordered, capacity-bounded map. Removal is O(1); the order queue is compacted
/// when stale keys pile up, so it stays within a constant factor of the capacity.
#[derive(Debug)]
pub struct BoundedMap<K, V> {
    entries: HashMap<K, (u64, V)>,
    order: VecDeque<(K, u64)>,
    capacity: usize,
    next: u64,
}

impl<K: Hash + Eq + Clone, V> BoundedMap<K, V> {
    /// An empty map holding at most `capacity` entries (at least one).
    pub fn new(capacity: usize) -> Self {
        Self {
            entries: HashMap::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
            next: 0,
        }
    }

    /// Inserts or replaces `key`; returns the entry evicted to make room, if any.
    pub fn insert(&mut self, key: K, value: V) -> Option<(K, V)> {
        let seq = self.next;
        self.next += 1;
        self.order.push_back((key.clone(), seq));
        self.entries.insert(key, (seq, value));
        let mut evicted = None;
        while self.entries.len() > self.capacity {
            let Some((old, old_seq)) = self.order.pop_front() else {
                break;
            };
            if self.entries.get(&old).is_some_and(|(s, _)| *s == old_seq) {
                evicted = self.entries.remove(&old).map(|(_, v)| (old, v));
            }
        }
        if self.order.len() > self.capacity.saturating_mul(2) + 16 {
            let entries = &self.entries;
            self.order
                .retain(|(k, s)| entries.get(k).is_some_and(|(live, _)| live == s));
        }
        evicted
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &K) -> Option<&V> {
        self.entries.get(key).map(|(_, v)| v)
    }

    /// The value of `key` for changing, if present (its age is unchanged).
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.entries.get_mut(key).map(|(_, v)| v)
    }

    /// Removes `key`; returns its value, if it was present.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        self.entries.remove(key).map(|(_, v)| v)
    }

    /// Removes every entry `keep` refuses; returns how many went.
    pub fn retain(&mut self, mut keep: impl FnMut(&K, &V) -> bool) -> usize {
        let before = self.entries.len();
        self.entries.retain(|k, (_, v)| keep(k, v));
        before - self.entries.len()
    }

    /// How many entries the map holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the map holds nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The length of the order queue (tests check it stays bounded).
    #[cfg(test)]
    pub(crate) fn order_len(&self) -> usize {
        self.order.len()
    }
}

#[cfg(test)]
mod tests {
    use super::BoundedMap;

    #[test]
    fn the_oldest_entry_goes_and_the_queue_stays_bounded() {
        let mut map = BoundedMap::new(2);
        assert_eq!(map.insert("a", 1), None);
        assert_eq!(map.insert("b", 2), None);
        assert_eq!(map.insert("c", 3), Some(("a", 1)));
        assert_eq!(map.get(&"a"), None);
        // Re-inserting a key refreshes its age.
        map.insert("b", 20);
        assert_eq!(map.insert("d", 4), Some(("c", 3)));

        // Churn never grows the order queue past a constant factor of the capacity.
        let mut churn = BoundedMap::new(2);
        churn.insert(0, 0);
        for i in 1..1000 {
            churn.insert(i, i);
            churn.remove(&i);
        }
        assert_eq!(churn.len(), 1);
        assert!(churn.order_len() <= 2 * 2 + 17, "{}", churn.order_len());
    }
}
