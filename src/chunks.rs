//! A list that grows in fixed-size chunks.
//!
//! Exchanges and flows accumulate for the whole run. In one `Vec` they would be moved to a
//! buffer twice the size each time it fills: for a moment both buffers are resident, and
//! afterwards up to half of the new one is spare. In chunks, once the first chunk is full (it
//! starts small and grows like a `Vec` up to 4096 items), nothing is moved while the list grows;
//! the spare room is at most one chunk, and [`Chunks::into_vec`] frees each chunk as soon as its
//! items are moved out.

/// Items per chunk.
const CHUNK: usize = 4096;

/// A list of `T` in chunks of 4096 items, in push order.
#[derive(Debug, Clone)]
pub struct Chunks<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Chunks<T> {
    fn default() -> Self {
        Chunks {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Chunks<T> {
    /// Number of items.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Append an item.
    pub fn push(&mut self, v: T) {
        match self.chunks.last_mut() {
            Some(c) if c.len() < CHUNK => c.push(v),
            _ => {
                // The first chunk starts small: most lists (small captures, tests) stay small.
                let mut c = Vec::with_capacity(if self.chunks.is_empty() { 16 } else { CHUNK });
                c.push(v);
                self.chunks.push(c);
            }
        }
        self.len += 1;
    }
    /// The item at position `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<&T> {
        // Every chunk but the last holds CHUNK items.
        self.chunks.get(i / CHUNK)?.get(i % CHUNK)
    }
    /// The item at position `i`, mutably, if there is one.
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.chunks.get_mut(i / CHUNK)?.get_mut(i % CHUNK)
    }
    /// The items in order.
    pub fn iter(&self) -> std::iter::Flatten<std::slice::Iter<'_, Vec<T>>> {
        self.chunks.iter().flatten()
    }
    /// The items from position `from` on, in order.
    pub fn iter_from(&self, from: usize) -> impl Iterator<Item = &T> + '_ {
        // Every chunk but the first holds CHUNK items, and so does the first once a second exists.
        let (ci, off) = (from / CHUNK, from % CHUNK);
        self.chunks
            .iter()
            .skip(ci)
            .enumerate()
            .flat_map(move |(k, c)| c.iter().skip(if k == 0 { off } else { 0 }))
    }
    /// The items in one vector of exactly their number, each chunk freed once moved.
    pub fn into_vec(self) -> Vec<T> {
        let mut v = Vec::with_capacity(self.len);
        self.move_into(&mut v, |x| x);
        v
    }
    /// Move every item, through `f`, to the end of `out`, freeing each chunk once moved.
    pub fn move_into(self, out: &mut Vec<T>, mut f: impl FnMut(T) -> T) {
        out.reserve_exact(self.len);
        for c in self.chunks {
            out.extend(c.into_iter().map(&mut f));
        }
    }
}

impl<T> std::ops::Index<usize> for Chunks<T> {
    type Output = T;
    /// Panics when `i` is out of bounds, as a slice does.
    fn index(&self, i: usize) -> &T {
        match self.get(i) {
            Some(v) => v,
            None => panic!("index {i} out of bounds for {} items", self.len),
        }
    }
}

impl<T> std::ops::IndexMut<usize> for Chunks<T> {
    /// Panics when `i` is out of bounds, as a slice does.
    fn index_mut(&mut self, i: usize) -> &mut T {
        let len = self.len;
        match self.get_mut(i) {
            Some(v) => v,
            None => panic!("index {i} out of bounds for {len} items"),
        }
    }
}

impl<T> IntoIterator for Chunks<T> {
    type Item = T;
    type IntoIter = std::iter::Flatten<std::vec::IntoIter<Vec<T>>>;
    /// The items in order, each chunk freed once its items are taken.
    fn into_iter(self) -> Self::IntoIter {
        self.chunks.into_iter().flatten()
    }
}

impl<'a, T> IntoIterator for &'a Chunks<T> {
    type Item = &'a T;
    type IntoIter = std::iter::Flatten<std::slice::Iter<'a, Vec<T>>>;
    /// The items in order.
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<T> Extend<T> for Chunks<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        for v in iter {
            self.push(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_positions_and_moves() {
        let mut c = Chunks::default();
        let n = 3 * CHUNK + 17;
        c.extend(0..n);
        assert_eq!(c.len(), n);
        assert!(c.iter_from(0).copied().eq(0..n));
        for from in [
            0,
            1,
            15,
            16,
            17,
            CHUNK - 1,
            CHUNK,
            CHUNK + 1,
            2 * CHUNK + 5,
            n - 1,
            n,
            n + 3,
        ] {
            assert!(c.iter_from(from).copied().eq(from.min(n)..n), "from {from}");
        }
        let mut out = vec![usize::MAX];
        c.clone().move_into(&mut out, |x| x * 2);
        assert_eq!(out.len(), n + 1);
        assert!(out[1..].iter().copied().eq((0..n).map(|x| x * 2)));
        assert!((0..n).all(|i| c.get(i) == Some(&i) && c[i] == i));
        assert_eq!(c.get(n), None);
        assert!(c.iter().copied().eq(0..n));
        let mut m = c.clone();
        m[CHUNK + 3] = 7;
        *m.get_mut(0).unwrap() = 9;
        assert_eq!((m[CHUNK + 3], m[0], m.get_mut(n)), (7, 9, None));
        assert!(c.clone().into_iter().eq(0..n));
        assert!(c.into_vec().into_iter().eq(0..n));
        assert!(Chunks::<u8>::default().into_vec().is_empty());
    }
}
