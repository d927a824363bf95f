//! Data keys: per KEK, the current data key that Produce encrypts with (from the KMS, used
//! for a bounded number of records and time, then replaced), and a cache of the data keys
//! Fetch has unwrapped, bounded in entries and time.
//!
//! Nonces: each data key is new (made by the KMS for this proxy, at its first use and at
//! every rotation) and only this proxy encrypts with it; its nonces are a counter (four
//! zero bytes, then the count, big-endian) that leases hand out in ranges, so no nonce is
//! used twice under one key. A key is replaced before its count passes
//! [`KeyPolicy::max_records`] (a batch larger than that gets a key of its own).

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ring::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};

use super::format::NONCE_LEN;
use super::kms::{Kms, KmsError, PlainKey};

/// How long data keys live, and how many unwrapped ones are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyPolicy {
    /// The most records one data key encrypts before it is replaced.
    pub max_records: u64,
    /// The longest one data key encrypts before it is replaced.
    pub max_age: Duration,
    /// The most unwrapped data keys kept for Fetch (and the proxy's own).
    pub cache_entries: usize,
    /// The longest an unwrapped data key is kept.
    pub cache_age: Duration,
}

impl Default for KeyPolicy {
    fn default() -> Self {
        KeyPolicy {
            max_records: 1 << 24,
            max_age: Duration::from_secs(3600),
            cache_entries: 1024,
            cache_age: Duration::from_secs(3600),
        }
    }
}

/// A data key ready to seal or open (ring's key schedule; never printed).
pub(super) struct Cipher(LessSafeKey);

impl core::fmt::Debug for Cipher {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Cipher(..)")
    }
}

impl Cipher {
    fn new(key: &PlainKey) -> Result<Cipher, KmsError> {
        let unbound = UnboundKey::new(&AES_256_GCM, key.bytes())
            .map_err(|_| KmsError::Protocol("a data key that is not an AES-256 key".into()))?;
        Ok(Cipher(LessSafeKey::new(unbound)))
    }

    /// Seals `buf` in place: the tag, to be written after it.
    pub(super) fn seal_separate(
        &self,
        nonce: [u8; NONCE_LEN],
        aad: &[u8],
        buf: &mut [u8],
    ) -> Result<[u8; super::format::TAG_LEN], ()> {
        let tag = self
            .0
            .seal_in_place_separate_tag(Nonce::assume_unique_for_key(nonce), Aad::from(aad), buf)
            .map_err(|_| ())?;
        let mut out = [0u8; super::format::TAG_LEN];
        out.copy_from_slice(tag.as_ref());
        Ok(out)
    }

    /// Opens the ciphertext and tag at `in_out[from..]`, the plaintext written at the start
    /// of `in_out`: its length, or `None` if it does not open (then `in_out` holds garbage).
    pub(super) fn open_within(
        &self,
        nonce: [u8; NONCE_LEN],
        aad: &[u8],
        in_out: &mut [u8],
        from: usize,
    ) -> Option<usize> {
        let n =
            self.0.open_within(Nonce::assume_unique_for_key(nonce), Aad::from(aad), in_out, from..).ok()?;
        Some(n.len())
    }
}

/// The data key a KEK's records are encrypted with now.
struct Current {
    wrapped: Arc<[u8]>,
    cipher: Arc<Cipher>,
    born: Instant,
    /// Nonces handed out.
    used: AtomicU64,
}

/// A range of nonces under one data key, for one batch or partition.
#[derive(Debug)]
pub(super) struct Lease {
    /// The data key, wrapped (what the envelope carries).
    pub(super) wrapped: Arc<[u8]>,
    pub(super) cipher: Arc<Cipher>,
    next: u64,
    end: u64,
}

impl Lease {
    /// The next nonce of the range; `None` when it is spent.
    pub(super) fn nonce(&mut self) -> Option<[u8; NONCE_LEN]> {
        if self.next >= self.end {
            return None;
        }
        let mut nonce = [0u8; NONCE_LEN];
        nonce[4..].copy_from_slice(&self.next.to_be_bytes());
        self.next += 1;
        Some(nonce)
    }
}

/// A data key's name: its KEK and the key wrapped.
type Wrapped = (String, Arc<[u8]>);

/// Unwrapped data keys by (KEK, wrapped key), with when they were unwrapped; oldest first.
#[derive(Default)]
struct Cache {
    keys: HashMap<Wrapped, (Arc<Cipher>, Instant)>,
    order: VecDeque<Wrapped>,
}

/// The data keys of one proxy.
pub(super) struct Keys {
    kms: Arc<dyn Kms>,
    policy: KeyPolicy,
    current: Mutex<HashMap<String, Arc<Current>>>,
    cache: Mutex<Cache>,
}

impl core::fmt::Debug for Keys {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Keys").field("policy", &self.policy).finish_non_exhaustive()
    }
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Keys {
    pub(super) fn new(kms: Arc<dyn Kms>, policy: KeyPolicy) -> Keys {
        Keys { kms, policy, current: Mutex::default(), cache: Mutex::default() }
    }

    /// `count` nonces under the current data key of `kek`, a new data key from the KMS if
    /// there is none, or it is too old or too used.
    pub(super) async fn lease(&self, kek: &str, count: u64) -> Result<Lease, KmsError> {
        if let Some(current) = locked(&self.current).get(kek).cloned()
            && current.born.elapsed() < self.policy.max_age
        {
            let start = current.used.fetch_add(count, Ordering::SeqCst);
            if start.saturating_add(count) <= self.policy.max_records {
                return Ok(Lease {
                    wrapped: current.wrapped.clone(),
                    cipher: current.cipher.clone(),
                    next: start,
                    end: start + count,
                });
            }
        }
        let made = self.kms.generate_data_key(kek).await?;
        let cipher = Arc::new(Cipher::new(&made.plain)?);
        let wrapped: Arc<[u8]> = made.wrapped.into();
        let current = Arc::new(Current {
            wrapped: wrapped.clone(),
            cipher: cipher.clone(),
            born: Instant::now(),
            used: AtomicU64::new(count),
        });
        locked(&self.current).insert(kek.to_owned(), current);
        // The proxy reads its own records without asking the KMS.
        self.remember(kek, wrapped.clone(), cipher.clone());
        Ok(Lease { wrapped, cipher, next: 0, end: count })
    }

    /// The data key `wrapped` holds under `kek`: from the cache, or unwrapped by the KMS.
    pub(super) async fn open(&self, kek: &str, wrapped: &[u8]) -> Result<Arc<Cipher>, KmsError> {
        {
            let mut cache = locked(&self.cache);
            let probe = (kek.to_owned(), Arc::<[u8]>::from(wrapped));
            match cache.keys.get(&probe) {
                Some((cipher, at)) if at.elapsed() < self.policy.cache_age => return Ok(cipher.clone()),
                Some(_) => {
                    cache.keys.remove(&probe);
                    cache.order.retain(|k| *k != probe);
                }
                None => {}
            }
        }
        let plain = self.kms.unwrap_data_key(kek, wrapped).await?;
        let cipher = Arc::new(Cipher::new(&plain)?);
        self.remember(kek, wrapped.into(), cipher.clone());
        Ok(cipher)
    }

    fn remember(&self, kek: &str, wrapped: Arc<[u8]>, cipher: Arc<Cipher>) {
        if self.policy.cache_entries == 0 {
            return;
        }
        let mut cache = locked(&self.cache);
        let k = (kek.to_owned(), wrapped);
        if cache.keys.insert(k.clone(), (cipher, Instant::now())).is_none() {
            cache.order.push_back(k);
        }
        while cache.order.len() > self.policy.cache_entries {
            if let Some(old) = cache.order.pop_front() {
                cache.keys.remove(&old);
            }
        }
    }

    /// How many unwrapped data keys the cache holds.
    #[cfg(test)]
    pub(super) fn cached(&self) -> usize {
        locked(&self.cache).keys.len()
    }
}

#[cfg(test)]
mod tests {
    use super::super::kms::MemoryKms;
    use super::*;

    fn block<F: core::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
    }

    #[test]
    fn leases_never_repeat_a_nonce_and_keys_rotate_by_count() {
        let kms = Arc::new(MemoryKms::new());
        kms.create_key("k");
        let policy = KeyPolicy { max_records: 10, ..KeyPolicy::default() };
        let keys = Keys::new(kms, policy);
        let mut seen = std::collections::HashSet::new();
        let mut wrapped = std::collections::HashSet::new();
        for _ in 0..7 {
            let mut lease = block(keys.lease("k", 4)).unwrap();
            wrapped.insert(lease.wrapped.to_vec());
            while let Some(n) = lease.nonce() {
                assert!(seen.insert((lease.wrapped.to_vec(), n)), "a nonce repeated");
            }
        }
        // 28 records at 10 a key, in leases of 4 (two a key): four keys.
        assert_eq!(wrapped.len(), 4);
        // A lease larger than the bound gets a key of its own.
        let big = block(keys.lease("k", 25)).unwrap();
        assert!(!wrapped.contains(&big.wrapped.to_vec()));
    }

    #[test]
    fn the_cache_is_bounded_and_outlives_an_outage() {
        let kms = Arc::new(MemoryKms::new());
        kms.create_key("k");
        let policy = KeyPolicy { max_records: 1, cache_entries: 3, ..KeyPolicy::default() };
        let keys = Keys::new(kms.clone(), policy);
        let leases: Vec<Lease> = (0..5).map(|_| block(keys.lease("k", 1)).unwrap()).collect();
        assert_eq!(keys.cached(), 3);
        kms.set_down(true);
        // The newest are cached; the oldest needs the KMS, which is down.
        assert!(block(keys.open("k", &leases[4].wrapped)).is_ok());
        let err = block(keys.open("k", &leases[0].wrapped)).unwrap_err();
        assert!(err.is_retriable());
        assert!(block(keys.lease("k", 1)).unwrap_err().is_retriable());
        kms.set_down(false);
        assert!(block(keys.open("k", &leases[0].wrapped)).is_ok());
        let policy = KeyPolicy { cache_age: Duration::ZERO, ..KeyPolicy::default() };
        let keys = Keys::new(kms.clone(), policy);
        let lease = block(keys.lease("k", 1)).unwrap();
        kms.set_down(true);
        assert!(block(keys.open("k", &lease.wrapped)).is_err(), "an entry past its age is not used");
    }
}
