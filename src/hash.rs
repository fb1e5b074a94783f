//! A fast 64-bit hash of byte strings, to recognise equal payloads (event data, request bodies)
//! across connections, hops and sessions: XXH3 (the `xxhash-rust` crate) keyed with a seed drawn
//! once per process. Equal input, equal hash within a run; hashes are only compared, never
//! written out, so the output does not depend on the seed. The seed keeps a crafted capture from
//! making two different payloads compare equal (an unkeyed hash's collisions can be computed).

/// The process's seed for [`hash64`].
fn seed() -> u64 {
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *SEED.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish()
    })
}

/// The hash of `bytes`.
pub fn hash64(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(bytes, seed())
}

#[cfg(test)]
mod tests {
    use super::hash64;

    #[test]
    fn distinguishes_lengths_and_tails() {
        assert_ne!(hash64(b""), hash64(b"\0"));
        assert_ne!(hash64(b"abcdefgh"), hash64(b"abcdefgh\0"));
        assert_ne!(hash64(b"progress 1"), hash64(b"progress 2"));
        assert_eq!(hash64(b"same"), hash64(b"same"));
    }
}

/// FxHash's multiplier.
const K: u64 = 0x517c_c1b7_2722_0a95;

/// A fast, deterministic `Hasher` (the FxHash word mix, with MurmurHash3's finaliser): for routing
/// segments to workers, where equal keys must go to the same worker in every run and colliding
/// keys only load one worker more. Not for maps keyed by capture data: without a seed,
/// colliding keys are cheap to make; [`FastMap`] is seeded.
#[derive(Debug, Default, Clone, Copy)]
pub struct FastHasher(u64);

impl std::hash::Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(K);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn write_u16(&mut self, n: u16) {
        self.write_u64(u64::from(n));
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }
    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^ (h >> 33)
    }
}

/// A `HashMap` with a fast hasher seeded once per process (foldhash): keys come from the
/// capture, which cannot be trusted, so a fixed hash function would let a crafted capture make
/// every key collide. Nothing may depend on its iteration order.
pub type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A `HashSet` seeded like [`FastMap`].
pub type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;
