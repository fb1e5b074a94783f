//! TLS 1.3 for `mcpcap synth --tls`: each connection's handshake and the sealing of its
//! application data (RFC 8446), with secrets drawn from the seed and written as NSS key log
//! lines, so that `analyze --tls-keylog` reads the capture as it reads the cleartext one.
//!
//! The handshake is TLS_AES_128_GCM_SHA256 (0x1301) with SNI `mcp.example` and ALPN
//! `http/1.1`: a plaintext ClientHello record (§4.1.2), a plaintext ServerHello record (§4.1.3,
//! `supported_versions` 0x0304), then the server's EncryptedExtensions, an empty Certificate,
//! a CertificateVerify (a dummy signature) and Finished (§4.4.4, computed over the transcript)
//! in one record protected with the server handshake traffic keys, and the client's Finished
//! with the client's. Application data goes in records of type 23 (§5.2: the real content type
//! inside, nonce `iv XOR seq`, the 5-byte header as additional data) under the traffic secrets
//! `_0`. The secrets are random, not derived from a key exchange: nothing but the key log
//! makes them known, as in a real capture.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::Aes128Gcm;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use super::Rng;
use crate::tls::decrypt::{expand_label, Hash};

/// Bytes a record adds to its plaintext: the 5-byte header, the inner content type and the
/// 16-byte AEAD tag.
pub const RECORD_OVERHEAD: usize = 5 + 1 + 16;

/// The SNI of every connection.
const SNI: &[u8] = b"mcp.example";

/// The keys of one direction at one traffic secret, and its next sequence number.
pub struct Sealer {
    cipher: Aes128Gcm,
    iv: [u8; 12],
    seq: u64,
}

impl Sealer {
    /// The write keys of `secret` (RFC 8446 §7.3: `key` 16 bytes, `iv` 12 bytes).
    fn new(secret: &[u8; 32]) -> Sealer {
        let key: [u8; 16] = expand_label(Hash::Sha256, secret, "key", 16)
            .and_then(|k| k.try_into().ok())
            .unwrap_or_default();
        let iv: [u8; 12] = expand_label(Hash::Sha256, secret, "iv", 12)
            .and_then(|k| k.try_into().ok())
            .unwrap_or_default();
        Sealer {
            cipher: Aes128Gcm::new(&key.into()),
            iv,
            seq: 0,
        }
    }

    /// Append to `out` one TLS 1.3 record (RFC 8446 §5.2) carrying `data` (at most 2^14 bytes)
    /// of content type `typ`, and move to the next sequence number.
    pub fn seal(&mut self, typ: u8, data: &[u8], out: &mut Vec<u8>) {
        debug_assert!(data.len() <= 1 << 14);
        let mut inner = Vec::with_capacity(data.len() + 1);
        inner.extend_from_slice(data);
        inner.push(typ);
        let len = (inner.len() + 16) as u16;
        let header = [23, 3, 3, (len >> 8) as u8, len as u8];
        let mut nonce = self.iv;
        for (b, s) in nonce[4..].iter_mut().zip(self.seq.to_be_bytes()) {
            *b ^= s;
        }
        self.seq = self.seq.wrapping_add(1);
        let aad = &header[..];
        // Sealing fails only past the AEAD's length limit, far above a record.
        let sealed = self
            .cipher
            .encrypt(&nonce.into(), Payload { msg: &inner, aad })
            .unwrap_or_default();
        out.extend_from_slice(&header);
        out.extend_from_slice(&sealed);
    }
}

/// One connection's TLS: the handshake bytes of both sides, the key log lines, and the sealers
/// of the application data (client, server).
pub struct ConnTls {
    /// The client's first flight: the ClientHello record.
    pub client_hello: Vec<u8>,
    /// The server's flight: the ServerHello record and the protected handshake record.
    pub server_flight: Vec<u8>,
    /// The client's Finished, protected.
    pub client_finished: Vec<u8>,
    /// The NSS key log lines of the connection (four, each ending in a newline).
    pub keylog: String,
    /// Application data sealers, `[client, server]`.
    pub app: [Sealer; 2],
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A handshake message (RFC 8446 §4): type, 24-bit length, body.
fn handshake_msg(typ: u8, body: &[u8]) -> Vec<u8> {
    let n = body.len() as u32;
    let mut m = vec![typ, (n >> 16) as u8, (n >> 8) as u8, n as u8];
    m.extend_from_slice(body);
    m
}

/// An extension (RFC 8446 §4.2): type, 16-bit length, data.
fn ext(out: &mut Vec<u8>, typ: u16, data: &[u8]) {
    out.extend(typ.to_be_bytes());
    out.extend((data.len() as u16).to_be_bytes());
    out.extend_from_slice(data);
}

/// A vector with a 16-bit length prefix.
fn vec16(data: &[u8]) -> Vec<u8> {
    let mut v = (data.len() as u16).to_be_bytes().to_vec();
    v.extend_from_slice(data);
    v
}

/// A plaintext record (RFC 8446 §5.1) of type `typ`, legacy version `minor`.
fn plain_record(typ: u8, minor: u8, body: &[u8]) -> Vec<u8> {
    let mut r = vec![typ, 3, minor];
    r.extend((body.len() as u16).to_be_bytes());
    r.extend_from_slice(body);
    r
}

/// ALPN extension data for `http/1.1` (RFC 7301 §3.1).
fn alpn() -> Vec<u8> {
    vec16(&[&[8u8][..], b"http/1.1"].concat())
}

fn client_hello(random: &[u8; 32], session_id: &[u8; 32], share: &[u8; 32]) -> Vec<u8> {
    let mut b = vec![3, 3];
    b.extend_from_slice(random);
    b.push(32);
    b.extend_from_slice(session_id);
    b.extend(vec16(&0x1301u16.to_be_bytes()));
    b.extend([1, 0]);
    let mut exts = Vec::new();
    let mut name = vec![0];
    name.extend(vec16(SNI));
    ext(&mut exts, 0, &vec16(&name));
    ext(&mut exts, 10, &vec16(&0x001du16.to_be_bytes()));
    ext(&mut exts, 13, &vec16(&0x0804u16.to_be_bytes()));
    ext(&mut exts, 16, &alpn());
    ext(&mut exts, 43, &[2, 3, 4]);
    ext(
        &mut exts,
        51,
        &vec16(&[&[0, 0x1d, 0, 32][..], share].concat()),
    );
    b.extend(vec16(&exts));
    handshake_msg(1, &b)
}

fn server_hello(random: &[u8; 32], session_id: &[u8; 32], share: &[u8; 32]) -> Vec<u8> {
    let mut b = vec![3, 3];
    b.extend_from_slice(random);
    b.push(32);
    b.extend_from_slice(session_id);
    b.extend(0x1301u16.to_be_bytes());
    b.push(0);
    let mut exts = Vec::new();
    ext(&mut exts, 43, &[3, 4]);
    ext(&mut exts, 51, &[&[0, 0x1d, 0, 32][..], share].concat());
    b.extend(vec16(&exts));
    handshake_msg(2, &b)
}

/// Finished (RFC 8446 §4.4.4): HMAC of the transcript hash under the `finished` key of the
/// sender's handshake traffic secret.
fn finished(secret: &[u8; 32], transcript: &Sha256) -> Vec<u8> {
    let key = expand_label(Hash::Sha256, secret, "finished", 32).unwrap_or_default();
    let mut mac = match <Hmac<Sha256> as KeyInit>::new_from_slice(&key) {
        Ok(m) => m,
        Err(_) => return handshake_msg(20, &[0; 32]),
    };
    mac.update(&transcript.clone().finalize());
    handshake_msg(20, &mac.finalize().into_bytes())
}

fn bytes32(rng: &mut Rng) -> [u8; 32] {
    let mut b = [0u8; 32];
    for c in b.chunks_mut(8) {
        c.copy_from_slice(&rng.next().to_le_bytes());
    }
    b
}

/// The TLS of connection number `n` of a capture made from `seed`: its randoms and secrets come
/// from their own generator, so the capture's other choices are those of the cleartext one.
pub fn connection(seed: u64, n: u64) -> ConnTls {
    let mut rng = Rng(seed ^ 0x746c_7331_3300_0000 ^ n.wrapping_mul(0xd134_2543_de82_ef95));
    let (cr, sr, sid) = (bytes32(&mut rng), bytes32(&mut rng), bytes32(&mut rng));
    let (cshare, sshare) = (bytes32(&mut rng), bytes32(&mut rng));
    let secrets = [(); 4].map(|_| bytes32(&mut rng));
    let [chs, shs, capp, sapp] = &secrets;
    let ch = client_hello(&cr, &sid, &cshare);
    let sh = server_hello(&sr, &sid, &sshare);
    let mut transcript = Sha256::new();
    transcript.update(&ch);
    transcript.update(&sh);
    let mut flight = handshake_msg(
        8,
        &vec16(&{
            let mut e = Vec::new();
            ext(&mut e, 16, &alpn());
            e
        }),
    );
    flight.extend(handshake_msg(11, &[0, 0, 0, 0]));
    let mut cv = 0x0804u16.to_be_bytes().to_vec();
    cv.extend(vec16(&bytes32(&mut rng).repeat(8)));
    flight.extend(handshake_msg(15, &cv));
    transcript.update(&flight);
    let sfin = finished(shs, &transcript);
    transcript.update(&sfin);
    flight.extend(sfin);
    let mut server_flight = plain_record(22, 3, &sh);
    Sealer::new(shs).seal(22, &flight, &mut server_flight);
    let mut client_finished = Vec::new();
    Sealer::new(chs).seal(22, &finished(chs, &transcript), &mut client_finished);
    let r = hex(&cr);
    let keylog = [
        ("CLIENT_HANDSHAKE_TRAFFIC_SECRET", chs),
        ("SERVER_HANDSHAKE_TRAFFIC_SECRET", shs),
        ("CLIENT_TRAFFIC_SECRET_0", capp),
        ("SERVER_TRAFFIC_SECRET_0", sapp),
    ]
    .iter()
    .map(|(label, s)| format!("{label} {r} {}\n", hex(&s[..])))
    .collect();
    ConnTls {
        client_hello: plain_record(22, 1, &ch),
        server_flight,
        client_finished,
        keylog,
        app: [Sealer::new(capp), Sealer::new(sapp)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls::decrypt::{Alg, DirKeys};
    use crate::tls::hello;

    /// The hellos parse as TLS 1.3 with the suite, SNI and ALPN; the server's handshake record
    /// opens with its handshake secret and the application records with the `_0` secret.
    #[test]
    fn hellos_parse_and_records_open_with_the_logged_secrets() {
        let mut c = connection(1, 0);
        let ch = hello::parse(&c.client_hello[9..], true).unwrap();
        assert_eq!(ch.sni.as_deref(), Some("mcp.example"));
        assert_eq!(
            (ch.alpn.clone(), ch.version()),
            (vec!["http/1.1".into()], 0x0304)
        );
        let sh_len = u16::from_be_bytes([c.server_flight[3], c.server_flight[4]]) as usize;
        let sh = hello::parse(&c.server_flight[9..5 + sh_len], false).unwrap();
        assert_eq!((sh.ciphers.clone(), sh.version()), (vec![0x1301], 0x0304));
        let secrets: Vec<Vec<u8>> = c
            .keylog
            .lines()
            .map(|l| {
                let h = l.split(' ').nth(2).unwrap();
                (0..64)
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
                    .collect()
            })
            .collect();
        assert_eq!(c.keylog.lines().count(), 4);
        let mut server = DirKeys::tls13(
            Alg::Aes128Gcm,
            Hash::Sha256,
            Some(&secrets[1]),
            Some(&secrets[3]),
        );
        let rec = &c.server_flight[5 + sh_len..];
        let o = server
            .open(&rec[..5].try_into().unwrap(), &rec[5..], 0)
            .unwrap();
        // EncryptedExtensions, Certificate, CertificateVerify, Finished.
        assert_eq!((o.typ, o.bytes[0]), (22, 8));
        let mut app = Vec::new();
        c.app[1].seal(23, b"HTTP/1.1 200 OK\r\n", &mut app);
        c.app[1].seal(23, b"more", &mut app);
        assert_eq!(app.len(), 17 + 4 + 2 * RECORD_OVERHEAD);
        let o = server
            .open(&app[..5].try_into().unwrap(), &app[5..39], 0)
            .unwrap();
        assert_eq!((o.typ, &o.bytes[..]), (23, &b"HTTP/1.1 200 OK\r\n"[..]));
        let o = server
            .open(&app[39..44].try_into().unwrap(), &app[44..], 0)
            .unwrap();
        assert_eq!(&o.bytes[..], b"more");
    }
}
