//! [`Kms`]: what record encryption needs of a key management service. The service holds the
//! key-encryption keys (KEKs), by name, and never gives them out; it makes data keys (DEKs)
//! and unwraps them. Data keys travel wrapped: only the service can turn a wrapped key back
//! into the key.

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use core::future::Future;
use core::pin::Pin;
use std::collections::HashMap;
use std::sync::Mutex;

use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};

/// What a [`Kms`] call returns: a future, so that a service over the network does not hold
/// up the proxy's connections while it answers.
pub type KmsFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, KmsError>> + Send + 'a>>;

/// The bytes of a data key (AES-256): never printed (`Debug` shows only that it is one), and
/// overwritten when dropped.
#[derive(Clone, PartialEq, Eq)]
pub struct PlainKey([u8; 32]);

impl PlainKey {
    /// A key of these bytes.
    pub fn new(bytes: [u8; 32]) -> Self {
        PlainKey(bytes)
    }

    /// The key's bytes, for the cipher.
    pub fn bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl core::fmt::Debug for PlainKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("PlainKey(..)")
    }
}

impl Drop for PlainKey {
    fn drop(&mut self) {
        self.0 = [0; 32];
        core::hint::black_box(&self.0);
    }
}

/// A new data key: the key itself, and the same key wrapped under a KEK, which is what
/// records carry.
#[derive(Clone, Debug)]
pub struct DataKey {
    /// The key, for encrypting.
    pub plain: PlainKey,
    /// The key wrapped by the service, for storing beside what it encrypted.
    pub wrapped: Vec<u8>,
}

/// Why a [`Kms`] call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KmsError {
    /// The service could not be reached or did not answer in time: worth retrying.
    Unavailable(String),
    /// The service has no key of that name (or refuses this caller its use).
    UnknownKey(String),
    /// The wrapped key was not made by this service under this KEK, or was altered.
    BadWrappedKey,
    /// The service answered something this client does not understand.
    Protocol(String),
}

impl KmsError {
    /// Whether trying again later may succeed.
    pub fn is_retriable(&self) -> bool {
        matches!(self, KmsError::Unavailable(_))
    }
}

impl core::fmt::Display for KmsError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            KmsError::Unavailable(why) => write!(f, "the key management service is unavailable: {why}"),
            KmsError::UnknownKey(name) => write!(f, "the key management service has no key {name:?}"),
            KmsError::BadWrappedKey => f.write_str("the wrapped data key does not unwrap under its key"),
            KmsError::Protocol(why) => write!(f, "the key management service answered unexpectedly: {why}"),
        }
    }
}

impl std::error::Error for KmsError {}

/// A key management service: makes data keys under a named key-encryption key, and unwraps
/// them. Implement it for a service of your own; kwire has [`MemoryKms`] for tests and demos.
pub trait Kms: Send + Sync + 'static {
    /// A new random data key, and the same key wrapped under the KEK named `kek`.
    fn generate_data_key<'a>(&'a self, kek: &'a str) -> KmsFuture<'a, DataKey>;

    /// The data key that `wrapped` holds, wrapped earlier under the KEK named `kek`.
    fn unwrap_data_key<'a>(&'a self, kek: &'a str, wrapped: &'a [u8]) -> KmsFuture<'a, PlainKey>;
}

/// A key management service in memory, for tests and demos: its KEKs are random AES-256 keys
/// made by [`MemoryKms::create_key`], and a wrapped key is a 12-byte nonce and the data key
/// sealed with AES-256-GCM under the KEK, with the KEK's name as associated data. It can be
/// made unavailable, to test what happens when a real service is down.
pub struct MemoryKms {
    keys: Mutex<HashMap<String, PlainKey>>,
    down: core::sync::atomic::AtomicBool,
    rng: SystemRandom,
}

impl core::fmt::Debug for MemoryKms {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let names: Vec<String> = self.keys.lock().map(|k| k.keys().cloned().collect()).unwrap_or_default();
        f.debug_struct("MemoryKms").field("keys", &names).finish_non_exhaustive()
    }
}

impl Default for MemoryKms {
    fn default() -> Self {
        MemoryKms::new()
    }
}

impl MemoryKms {
    /// A service with no keys.
    pub fn new() -> Self {
        MemoryKms { keys: Mutex::default(), down: false.into(), rng: SystemRandom::new() }
    }

    /// Creates a KEK named `name` (a new random key; an existing one of that name stays).
    pub fn create_key(&self, name: &str) {
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        if !keys.contains_key(name) {
            let mut bytes = [0u8; 32];
            // SystemRandom fails only where the OS has no random source at all.
            self.rng.fill(&mut bytes).expect("the operating system's random source");
            keys.insert(name.to_owned(), PlainKey::new(bytes));
        }
    }

    /// Makes the service unavailable (`true`) or available again: while it is down, every
    /// call fails with [`KmsError::Unavailable`].
    pub fn set_down(&self, down: bool) {
        self.down.store(down, core::sync::atomic::Ordering::SeqCst);
    }

    fn kek(&self, name: &str) -> Result<LessSafeKey, KmsError> {
        if self.down.load(core::sync::atomic::Ordering::SeqCst) {
            return Err(KmsError::Unavailable("the in-memory service is set down".into()));
        }
        let keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        let key = keys.get(name).ok_or_else(|| KmsError::UnknownKey(name.to_owned()))?;
        let unbound = UnboundKey::new(&AES_256_GCM, key.bytes()).map_err(|_| KmsError::BadWrappedKey)?;
        Ok(LessSafeKey::new(unbound))
    }

    fn generate(&self, kek: &str) -> Result<DataKey, KmsError> {
        let sealer = self.kek(kek)?;
        let mut key = [0u8; 32];
        let mut nonce = [0u8; NONCE_LEN];
        self.rng.fill(&mut key).map_err(|_| KmsError::Unavailable("no random source".into()))?;
        self.rng.fill(&mut nonce).map_err(|_| KmsError::Unavailable("no random source".into()))?;
        let mut sealed = key.to_vec();
        sealer
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(kek.as_bytes()),
                &mut sealed,
            )
            .map_err(|_| KmsError::Protocol("sealing failed".into()))?;
        let mut wrapped = nonce.to_vec();
        wrapped.extend_from_slice(&sealed);
        let plain = PlainKey::new(key);
        key = [0; 32];
        core::hint::black_box(&key);
        Ok(DataKey { plain, wrapped })
    }

    fn unwrap(&self, kek: &str, wrapped: &[u8]) -> Result<PlainKey, KmsError> {
        let opener = self.kek(kek)?;
        if wrapped.len() != NONCE_LEN + 32 + AES_256_GCM.tag_len() {
            return Err(KmsError::BadWrappedKey);
        }
        let (nonce, sealed) = wrapped.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| KmsError::BadWrappedKey)?;
        let mut buf = sealed.to_vec();
        let plain = opener
            .open_in_place(nonce, Aad::from(kek.as_bytes()), &mut buf)
            .map_err(|_| KmsError::BadWrappedKey)?;
        let mut key = [0u8; 32];
        key.copy_from_slice(plain);
        buf.iter_mut().for_each(|b| *b = 0);
        Ok(PlainKey::new(key))
    }
}

impl Kms for MemoryKms {
    fn generate_data_key<'a>(&'a self, kek: &'a str) -> KmsFuture<'a, DataKey> {
        Box::pin(core::future::ready(self.generate(kek)))
    }

    fn unwrap_data_key<'a>(&'a self, kek: &'a str, wrapped: &'a [u8]) -> KmsFuture<'a, PlainKey> {
        Box::pin(core::future::ready(self.unwrap(kek, wrapped)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now<T>(f: KmsFuture<'_, T>) -> Result<T, KmsError> {
        // MemoryKms's futures are ready at once.
        let waker = core::task::Waker::noop();
        let mut cx = core::task::Context::from_waker(waker);
        let mut f = f;
        match f.as_mut().poll(&mut cx) {
            core::task::Poll::Ready(r) => r,
            core::task::Poll::Pending => panic!("MemoryKms's futures are ready at once"),
        }
    }

    #[test]
    fn a_wrapped_key_unwraps_under_its_kek_only() {
        let kms = MemoryKms::new();
        kms.create_key("a");
        kms.create_key("b");
        let key = now(kms.generate_data_key("a")).unwrap();
        assert_eq!(now(kms.unwrap_data_key("a", &key.wrapped)).unwrap(), key.plain);
        assert_eq!(now(kms.unwrap_data_key("b", &key.wrapped)), Err(KmsError::BadWrappedKey));
        let mut altered = key.wrapped.clone();
        altered[20] ^= 1;
        assert_eq!(now(kms.unwrap_data_key("a", &altered)), Err(KmsError::BadWrappedKey));
        assert_eq!(now(kms.unwrap_data_key("a", &key.wrapped[..10])), Err(KmsError::BadWrappedKey));
        assert!(matches!(now(kms.generate_data_key("c")), Err(KmsError::UnknownKey(_))));
        assert_eq!(format!("{:?}", key.plain), "PlainKey(..)");
    }

    #[test]
    fn a_service_set_down_is_unavailable_and_retriable() {
        let kms = MemoryKms::new();
        kms.create_key("a");
        let key = now(kms.generate_data_key("a")).unwrap();
        kms.set_down(true);
        let err = now(kms.unwrap_data_key("a", &key.wrapped)).unwrap_err();
        assert!(err.is_retriable(), "{err}");
        kms.set_down(false);
        assert_eq!(now(kms.unwrap_data_key("a", &key.wrapped)).unwrap(), key.plain);
    }
}
