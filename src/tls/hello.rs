//! ClientHello and ServerHello, the two handshake messages a capture shows in the clear in
//! every TLS version (RFC 8446 §4.1.2–4.1.3, RFC 5246 §7.4.1.2–7.4.1.3): what was offered and
//! chosen. A small bounded parser over a checked cursor: every read is length-checked, a short
//! or inconsistent message is `None` (the caller counts `tls.bad_hello`), nothing panics.

/// Handshake message type of a ClientHello (RFC 8446 §4).
pub const CLIENT_HELLO: u8 = 1;
/// Handshake message type of a ServerHello (RFC 8446 §4).
pub const SERVER_HELLO: u8 = 2;

/// What a ClientHello or ServerHello says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hello {
    /// `ClientHello` (true) or `ServerHello` (false).
    pub client: bool,
    /// `legacy_version` (0x0303 for TLS 1.2 and 1.3).
    pub legacy_version: u16,
    /// The 32-byte random: the key log's index (NSS key log format).
    pub random: [u8; 32],
    /// Cipher suites offered (ClientHello) or the one chosen (ServerHello), IANA codes.
    pub ciphers: Vec<u16>,
    /// `server_name` (RFC 6066 §3), host_name entry; ClientHello only.
    pub sni: Option<String>,
    /// ALPN protocols (RFC 7301 §3.1): offered, or the one chosen.
    pub alpn: Vec<String>,
    /// `supported_versions` (RFC 8446 §4.2.1): offered, or the one chosen.
    pub versions: Vec<u16>,
}

impl Hello {
    /// The version this hello negotiates or offers at most: `supported_versions` when present,
    /// else `legacy_version`.
    pub fn version(&self) -> u16 {
        self.versions
            .iter()
            .copied()
            .filter(|v| v & 0x0f0f != 0x0a0a) // GREASE (RFC 8701)
            .max()
            .unwrap_or(self.legacy_version)
    }
}

/// A cursor over untrusted bytes: reads past the end give `None`.
struct Cur<'a>(&'a [u8]);

impl<'a> Cur<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_be_bytes([b[0], b[1]]))
    }
    /// A vector with a length prefix of `width` bytes (1 or 2).
    fn vec(&mut self, width: usize) -> Option<Cur<'a>> {
        let n = match width {
            1 => self.u8()? as usize,
            _ => self.u16()? as usize,
        };
        self.take(n).map(Cur)
    }
}

/// Parse the body of a ClientHello (`client`) or ServerHello (the handshake message without its
/// 4-byte type and length header).
pub fn parse(body: &[u8], client: bool) -> Option<Hello> {
    let mut c = Cur(body);
    let mut h = Hello {
        client,
        legacy_version: c.u16()?,
        ..Default::default()
    };
    h.random.copy_from_slice(c.take(32)?);
    c.vec(1)?; // legacy_session_id
    if client {
        let mut cs = c.vec(2)?;
        while let Some(s) = cs.u16() {
            h.ciphers.push(s);
        }
        c.vec(1)?; // legacy_compression_methods
    } else {
        h.ciphers.push(c.u16()?);
        c.u8()?; // legacy_compression_method
    }
    if c.0.is_empty() {
        return Some(h); // no extensions (allowed before TLS 1.3)
    }
    let mut exts = c.vec(2)?;
    while !exts.0.is_empty() {
        let typ = exts.u16()?;
        let mut e = exts.vec(2)?;
        match typ {
            0 if client => h.sni = server_name(&mut e),
            16 => {
                let mut list = e.vec(2)?;
                while !list.0.is_empty() {
                    let p = list.vec(1)?;
                    h.alpn.push(String::from_utf8_lossy(p.0).into_owned());
                }
            }
            43 if client => {
                let mut list = e.vec(1)?;
                while let Some(v) = list.u16() {
                    h.versions.push(v);
                }
            }
            43 => h.versions.push(e.u16()?),
            _ => {}
        }
    }
    Some(h)
}

/// The protocol a TLS 1.3 server chose (RFC 7301 §3.1), from the decrypted handshake bytes that
/// begin its encrypted flight: its EncryptedExtensions (RFC 8446 §4.3.1, handshake type 8,
/// the first message after the ServerHello) and their `application_layer_protocol_negotiation`
/// extension. `None` when the bytes do not begin with it, or it names no protocol.
pub fn encrypted_extensions_alpn(b: &[u8]) -> Option<String> {
    let mut c = Cur(b);
    if c.u8()? != 8 {
        return None;
    }
    let len = (usize::from(c.u8()?) << 16) | usize::from(c.u16()?);
    let mut body = Cur(c.take(len)?);
    let mut exts = body.vec(2)?;
    while !exts.0.is_empty() {
        let typ = exts.u16()?;
        let mut e = exts.vec(2)?;
        if typ == 16 {
            let mut list = e.vec(2)?;
            let p = list.vec(1)?;
            return Some(String::from_utf8_lossy(p.0).into_owned());
        }
    }
    None
}

/// The host_name of a `server_name` extension's list (RFC 6066 §3).
fn server_name(e: &mut Cur<'_>) -> Option<String> {
    let mut list = e.vec(2)?;
    while !list.0.is_empty() {
        let typ = list.u8()?;
        let name = list.vec(2)?;
        if typ == 0 {
            return Some(String::from_utf8_lossy(name.0).into_owned());
        }
    }
    None
}

/// The IANA name of a TLS version code (`0x0304` → `TLSv1.3`), else its hex code.
pub fn version_name(v: u16) -> String {
    match v {
        0x0300 => "SSLv3".into(),
        0x0301 => "TLSv1.0".into(),
        0x0302 => "TLSv1.1".into(),
        0x0303 => "TLSv1.2".into(),
        0x0304 => "TLSv1.3".into(),
        _ => format!("0x{v:04x}"),
    }
}

/// The IANA name of a cipher suite (TLS Cipher Suites registry) for the suites seen in
/// practice, else its hex code.
pub fn cipher_name(c: u16) -> String {
    let name = match c {
        0x1301 => "TLS_AES_128_GCM_SHA256",
        0x1302 => "TLS_AES_256_GCM_SHA384",
        0x1303 => "TLS_CHACHA20_POLY1305_SHA256",
        0x1304 => "TLS_AES_128_CCM_SHA256",
        0x1305 => "TLS_AES_128_CCM_8_SHA256",
        0x009c => "TLS_RSA_WITH_AES_128_GCM_SHA256",
        0x009d => "TLS_RSA_WITH_AES_256_GCM_SHA384",
        0x009e => "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256",
        0x009f => "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384",
        0xc02b => "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        0xc02c => "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        0xc02f => "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        0xc030 => "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        0xcca8 => "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        0xcca9 => "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        0xccaa => "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        0x002f => "TLS_RSA_WITH_AES_128_CBC_SHA",
        0x0035 => "TLS_RSA_WITH_AES_256_CBC_SHA",
        0xc013 => "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
        0xc014 => "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
        _ => return format!("0x{c:04x}"),
    };
    name.into()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A ClientHello body built by hand after RFC 8446 §4.1.2: SNI `example.com`, ALPN
    /// `http/1.1`, supported_versions {GREASE, 1.3, 1.2}.
    pub(crate) fn client_hello() -> Vec<u8> {
        let mut b = vec![0x03, 0x03];
        b.extend([7u8; 32]);
        b.push(0); // session id
        b.extend([0, 4, 0x13, 0x01, 0x13, 0x02]);
        b.extend([1, 0]);
        let mut ext = Vec::new();
        let name = b"example.com";
        ext.extend([
            0,
            0,
            0,
            (name.len() + 5) as u8,
            0,
            (name.len() + 3) as u8,
            0,
            0,
        ]);
        ext.push(name.len() as u8);
        ext.extend(name);
        ext.extend([0, 16, 0, 11, 0, 9, 8]);
        ext.extend(b"http/1.1");
        ext.extend([0, 43, 0, 7, 6, 0x1a, 0x1a, 0x03, 0x04, 0x03, 0x03]);
        b.extend((ext.len() as u16).to_be_bytes());
        b.extend(ext);
        b
    }

    #[test]
    fn client_hello_gives_sni_alpn_and_versions() {
        let h = parse(&client_hello(), true).unwrap();
        assert_eq!(h.sni.as_deref(), Some("example.com"));
        assert_eq!(h.alpn, vec!["http/1.1".to_string()]);
        assert_eq!(h.version(), 0x0304);
        assert_eq!(h.ciphers, vec![0x1301, 0x1302]);
        assert_eq!(h.random, [7u8; 32]);
    }

    /// Every truncation is `None` or a hello, never a panic.
    #[test]
    fn truncated_hellos_do_not_panic() {
        let b = client_hello();
        for n in 0..b.len() {
            let _ = parse(&b[..n], true);
            let _ = parse(&b[..n], false);
        }
        assert!(parse(&b[..10], true).is_none());
    }

    #[test]
    fn names() {
        assert_eq!(version_name(0x0304), "TLSv1.3");
        assert_eq!(cipher_name(0x1302), "TLS_AES_256_GCM_SHA384");
        assert_eq!(cipher_name(0xabcd), "0xabcd");
    }
}
