//! Record protection: the traffic keys of a direction and the opening of its records.
//!
//! - TLS 1.3 (RFC 8446 §7.1, §7.3, §5.2–5.3): `HKDF-Expand-Label(secret, "key" | "iv", "", n)`
//!   from the handshake and application traffic secrets of the key log, the per-record nonce
//!   `iv XOR seq`, the record header as additional data, the inner content type after the
//!   zero padding. KeyUpdate (§4.6.3) moves to `HKDF-Expand-Label(secret, "traffic upd", "", h)`.
//! - TLS 1.2 AEAD suites: the key block of RFC 5246 §6.3 (the §5 PRF over the master secret,
//!   "key expansion", server random + client random); AES-GCM with a 4-byte salt and the
//!   record's 8-byte explicit nonce (RFC 5288 §3), ChaCha20-Poly1305 with `iv XOR seq`
//!   (RFC 7905 §2); additional data `seq ‖ type ‖ version ‖ length` (RFC 5246 §6.2.3.3).
//!
//! AES-128-GCM, AES-256-GCM and ChaCha20-Poly1305 (RustCrypto `aes-gcm`, `chacha20poly1305`).

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use chacha20poly1305::ChaCha20Poly1305;
use hmac::{Hmac, Mac};
use sha2::{Sha256, Sha384};

/// The AEAD and hash of a cipher suite (IANA code), `None` for the suites not decrypted.
pub fn suite(code: u16) -> Option<(Alg, Hash)> {
    Some(match code {
        0x1301 | 0x009c | 0x009e | 0xc02b | 0xc02f => (Alg::Aes128Gcm, Hash::Sha256),
        0x1302 | 0x009d | 0x009f | 0xc02c | 0xc030 => (Alg::Aes256Gcm, Hash::Sha384),
        0x1303 | 0xcca8 | 0xcca9 | 0xccaa => (Alg::ChaCha20Poly1305, Hash::Sha256),
        _ => return None,
    })
}

/// An AEAD algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alg {
    /// AES-128-GCM (16-byte key).
    Aes128Gcm,
    /// AES-256-GCM (32-byte key).
    Aes256Gcm,
    /// ChaCha20-Poly1305 (32-byte key).
    ChaCha20Poly1305,
}

impl Alg {
    fn key_len(self) -> usize {
        match self {
            Alg::Aes128Gcm => 16,
            _ => 32,
        }
    }
}

/// The hash of a suite's key schedule or PRF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hash {
    /// SHA-256.
    Sha256,
    /// SHA-384.
    Sha384,
}

impl Hash {
    fn len(self) -> usize {
        match self {
            Hash::Sha256 => 32,
            Hash::Sha384 => 48,
        }
    }
}

enum Cipher {
    Aes128(Box<Aes128Gcm>),
    Aes256(Box<Aes256Gcm>),
    ChaCha(Box<ChaCha20Poly1305>),
}

impl std::fmt::Debug for Cipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cipher")
    }
}

impl Cipher {
    fn new(alg: Alg, key: &[u8]) -> Option<Cipher> {
        Some(match alg {
            Alg::Aes128Gcm => Cipher::Aes128(Box::new(Aes128Gcm::new_from_slice(key).ok()?)),
            Alg::Aes256Gcm => Cipher::Aes256(Box::new(Aes256Gcm::new_from_slice(key).ok()?)),
            Alg::ChaCha20Poly1305 => {
                Cipher::ChaCha(Box::new(ChaCha20Poly1305::new_from_slice(key).ok()?))
            }
        })
    }
    fn open(&self, nonce: &[u8; 12], aad: &[u8], msg: &[u8]) -> Option<Vec<u8>> {
        let p = Payload { msg, aad };
        match self {
            Cipher::Aes128(c) => c.decrypt(&(*nonce).into(), p).ok(),
            Cipher::Aes256(c) => c.decrypt(&(*nonce).into(), p).ok(),
            Cipher::ChaCha(c) => c.decrypt(&(*nonce).into(), p).ok(),
        }
    }
}

/// HKDF-Expand-Label (RFC 8446 §7.1) of `secret` with the given hash; `None` when the secret is
/// shorter than the hash (a bad key log line).
pub fn expand_label(hash: Hash, secret: &[u8], label: &str, len: usize) -> Option<Vec<u8>> {
    let full = format!("tls13 {label}");
    let mut info = Vec::with_capacity(4 + full.len());
    info.extend((len as u16).to_be_bytes());
    info.push(full.len() as u8);
    info.extend(full.as_bytes());
    info.push(0); // empty context
    let mut out = vec![0u8; len];
    match hash {
        Hash::Sha256 => hkdf::Hkdf::<Sha256>::from_prk(secret)
            .ok()?
            .expand(&info, &mut out)
            .ok()?,
        Hash::Sha384 => hkdf::Hkdf::<Sha384>::from_prk(secret)
            .ok()?
            .expand(&info, &mut out)
            .ok()?,
    }
    Some(out)
}

/// The TLS 1.2 PRF (RFC 5246 §5): `P_hash(secret, label + seed)` cut to `len` bytes.
pub fn prf12(hash: Hash, secret: &[u8], label: &[u8], seed: &[u8], len: usize) -> Vec<u8> {
    fn p_hash<M: Mac + KeyInit + Clone>(mac: M, seed: &[u8], len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len + 64);
        let mut a = {
            let mut m = mac.clone();
            m.update(seed);
            m.finalize().into_bytes().to_vec()
        };
        while out.len() < len {
            let mut m = mac.clone();
            m.update(&a);
            m.update(seed);
            out.extend(m.finalize().into_bytes());
            let mut m = mac.clone();
            m.update(&a);
            a = m.finalize().into_bytes().to_vec();
        }
        out.truncate(len);
        out
    }
    let mut s = label.to_vec();
    s.extend(seed);
    match hash {
        Hash::Sha256 => match Hmac::<Sha256>::new_from_slice(secret) {
            Ok(m) => p_hash(m, &s, len),
            Err(_) => Vec::new(),
        },
        Hash::Sha384 => match Hmac::<Sha384>::new_from_slice(secret) {
            Ok(m) => p_hash(m, &s, len),
            Err(_) => Vec::new(),
        },
    }
}

/// The keys of one direction at one point: a cipher, its IV and the next sequence number.
#[derive(Debug)]
struct Epoch {
    cipher: Cipher,
    iv: [u8; 12],
    seq: u64,
    /// The TLS 1.3 traffic secret it came from (for KeyUpdate); empty for TLS 1.2.
    secret: Vec<u8>,
}

/// How one direction's records are opened.
#[derive(Debug)]
pub struct DirKeys {
    tls13: bool,
    alg: Alg,
    hash: Hash,
    /// In use.
    now: Option<Epoch>,
    /// TLS 1.3: the application traffic secret, once the handshake keys give way.
    next: Option<Vec<u8>>,
}

/// What opening a record gave.
#[derive(Debug, PartialEq, Eq)]
pub struct Opened {
    /// The content type (TLS 1.3: the inner one).
    pub typ: u8,
    /// The plaintext.
    pub bytes: Vec<u8>,
}

fn epoch13(alg: Alg, hash: Hash, secret: &[u8]) -> Option<Epoch> {
    let key = expand_label(hash, secret, "key", alg.key_len())?;
    let iv = expand_label(hash, secret, "iv", 12)?;
    Some(Epoch {
        cipher: Cipher::new(alg, &key)?,
        iv: iv.try_into().ok()?,
        seq: 0,
        secret: secret.to_vec(),
    })
}

fn xor_seq(iv: &[u8; 12], seq: u64) -> [u8; 12] {
    let mut n = *iv;
    for (b, s) in n[4..].iter_mut().zip(seq.to_be_bytes()) {
        *b ^= s;
    }
    n
}

/// The most records a direction may have lost to a gap whose size in records is unknown:
/// so many following sequence numbers are tried.
pub const SEQ_WINDOW: u64 = 64;

impl DirKeys {
    /// TLS 1.3: the keys of a direction from its handshake and application traffic secrets
    /// (either may be missing: then the records it protects are not opened).
    pub fn tls13(alg: Alg, hash: Hash, hs: Option<&[u8]>, app: Option<&[u8]>) -> DirKeys {
        let now = hs.and_then(|s| epoch13(alg, hash, s));
        let (now, next) = match now {
            Some(e) => (Some(e), app.map(<[u8]>::to_vec)),
            None => (app.and_then(|s| epoch13(alg, hash, s)), None),
        };
        DirKeys {
            tls13: true,
            alg,
            hash,
            now,
            next,
        }
    }

    /// TLS 1.2: the keys of direction `client` (true) or the server's from the master secret
    /// and the two randoms (RFC 5246 §6.3); in force from the direction's ChangeCipherSpec.
    pub fn tls12(
        alg: Alg,
        hash: Hash,
        master: &[u8],
        client_random: &[u8; 32],
        server_random: &[u8; 32],
        client: bool,
    ) -> Option<DirKeys> {
        let (k, ivl) = match alg {
            Alg::ChaCha20Poly1305 => (32, 12),
            a => (a.key_len(), 4),
        };
        let mut seed = server_random.to_vec();
        seed.extend(client_random);
        let block = prf12(hash, master, b"key expansion", &seed, 2 * k + 2 * ivl);
        if block.len() < 2 * k + 2 * ivl {
            return None;
        }
        let (ck, rest) = block.split_at(k);
        let (sk, rest) = rest.split_at(k);
        let (civ, siv) = rest.split_at(ivl);
        let (key, ivs) = if client { (ck, civ) } else { (sk, siv) };
        let mut iv = [0u8; 12];
        iv[..ivl].copy_from_slice(ivs);
        Some(DirKeys {
            tls13: false,
            alg,
            hash,
            now: Some(Epoch {
                cipher: Cipher::new(alg, key)?,
                iv,
                seq: 0,
                secret: Vec::new(),
            }),
            next: None,
        })
    }

    /// Whether any record of the direction can be opened.
    pub fn usable(&self) -> bool {
        self.now.is_some() || self.next.is_some()
    }

    /// A record lost whole: the next one has the next sequence number.
    pub fn skip(&mut self) {
        if let Some(e) = self.now.as_mut() {
            e.seq = e.seq.wrapping_add(1);
        }
    }

    /// Open one protected record (`header`: its 5 bytes; `body`: the rest). `window`: how many
    /// sequence numbers past the expected one to try (after a gap of unknown size). TLS 1.3: a
    /// record the handshake keys do not open is tried with the application keys (the handshake
    /// ended); a KeyUpdate moves to the next secret. `None`: no key opened it.
    pub fn open(&mut self, header: &[u8; 5], body: &[u8], window: u64) -> Option<Opened> {
        if let Some(o) = self.open_now(header, body, window) {
            return Some(o);
        }
        let secret = self.next.take()?;
        self.now = epoch13(self.alg, self.hash, &secret);
        self.open_now(header, body, window)
    }

    fn open_now(&mut self, header: &[u8; 5], body: &[u8], window: u64) -> Option<Opened> {
        let tls13 = self.tls13;
        let alg = self.alg;
        let e = self.now.as_mut()?;
        for k in 0..=window {
            let seq = e.seq.wrapping_add(k);
            let got = if tls13 {
                e.cipher.open(&xor_seq(&e.iv, seq), header, body)
            } else {
                open12(e, alg, seq, header, body)
            };
            let Some(mut bytes) = got else { continue };
            e.seq = seq.wrapping_add(1);
            let typ = if tls13 {
                // RFC 8446 §5.2: the content type is the last non-zero byte.
                let end = bytes.iter().rposition(|&b| b != 0)?;
                let t = bytes[end];
                bytes.truncate(end);
                t
            } else {
                header[0]
            };
            if tls13 && typ == 22 && bytes.first() == Some(&24) {
                self.key_update();
            }
            return Some(Opened { typ, bytes });
        }
        None
    }

    /// RFC 8446 §7.2: the next application traffic secret.
    fn key_update(&mut self) {
        let (alg, hash) = (self.alg, self.hash);
        if let Some(e) = self.now.as_ref() {
            let next = expand_label(hash, &e.secret, "traffic upd", hash.len());
            self.now = next.and_then(|s| epoch13(alg, hash, &s));
        }
    }
}

/// TLS 1.2 AEAD record opening (RFC 5288 §3, RFC 7905 §2, RFC 5246 §6.2.3.3).
fn open12(e: &Epoch, alg: Alg, seq: u64, header: &[u8; 5], body: &[u8]) -> Option<Vec<u8>> {
    let (nonce, ct) = match alg {
        Alg::ChaCha20Poly1305 => (xor_seq(&e.iv, seq), body),
        _ => {
            let explicit = body.get(..8)?;
            let mut n = [0u8; 12];
            n[..4].copy_from_slice(&e.iv[..4]);
            n[4..].copy_from_slice(explicit);
            (n, &body[8..])
        }
    };
    let plain_len = ct.len().checked_sub(16)? as u16;
    let mut aad = Vec::with_capacity(13);
    aad.extend(seq.to_be_bytes());
    aad.extend(&header[..3]);
    aad.extend(plain_len.to_be_bytes());
    e.cipher.open(&nonce, &aad, ct)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// RFC 8448 §3 (Simple 1-RTT Handshake): the server's handshake traffic secret gives the
    /// server handshake write key and IV listed there.
    #[test]
    fn rfc8448_server_handshake_key_and_iv() {
        let secret = hex("b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38");
        let key = expand_label(Hash::Sha256, &secret, "key", 16).unwrap();
        let iv = expand_label(Hash::Sha256, &secret, "iv", 12).unwrap();
        assert_eq!(key, hex("3fce516009c21727d0f2e4e86ee403bc"));
        assert_eq!(iv, hex("5d313eb2671276ee13000b30"));
    }

    /// A record sealed here with the RFC 8448 key opens, and one with a flipped bit does not.
    #[test]
    fn tls13_record_opens_with_its_sequence_number() {
        let secret = hex("b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38");
        let key = expand_label(Hash::Sha256, &secret, "key", 16).unwrap();
        let iv: [u8; 12] = expand_label(Hash::Sha256, &secret, "iv", 12)
            .unwrap()
            .try_into()
            .unwrap();
        let c = Aes128Gcm::new_from_slice(&key).unwrap();
        let mut inner = b"GET / HTTP/1.1\r\n\r\n".to_vec();
        inner.push(23);
        let len = (inner.len() + 16) as u16;
        let header = [23, 3, 3, (len >> 8) as u8, len as u8];
        let seal = |seq| {
            c.encrypt(
                &xor_seq(&iv, seq).into(),
                Payload {
                    msg: &inner,
                    aad: &header,
                },
            )
            .unwrap()
        };
        let mut k = DirKeys::tls13(Alg::Aes128Gcm, Hash::Sha256, None, Some(&secret));
        let o = k.open(&header, &seal(0), 0).unwrap();
        assert_eq!((o.typ, &o.bytes[..4]), (23, &b"GET "[..]));
        // Records 1 and 2 lost in a gap of unknown size: record 3 is found in the window.
        assert!(k.open(&header, &seal(3), 0).is_none());
        assert!(k.open(&header, &seal(3), SEQ_WINDOW).is_some());
        let mut bad = seal(4);
        bad[0] ^= 1;
        assert!(k.open(&header, &bad, 0).is_none());
    }
}
