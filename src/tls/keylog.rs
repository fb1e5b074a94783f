//! TLS secrets from an NSS key log (the `SSLKEYLOGFILE` format of NSS, OpenSSL, BoringSSL,
//! Node's `--tls-keylog`, Python's `SSLContext.keylog_filename`; IETF draft-ietf-tls-keylogfile):
//! lines `LABEL <client random, hex> <secret, hex>`, `#` comments. The same text is what a
//! pcapng Decryption Secrets Block of type `TLSK` holds (pcapng spec §4.7).

use std::collections::HashMap;

/// The secrets of one connection, by the labels of the key log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnSecrets {
    /// `CLIENT_RANDOM`: the TLS 1.2 master secret (48 bytes).
    pub master: Option<Vec<u8>>,
    /// `CLIENT_HANDSHAKE_TRAFFIC_SECRET` (TLS 1.3).
    pub client_hs: Option<Vec<u8>>,
    /// `SERVER_HANDSHAKE_TRAFFIC_SECRET` (TLS 1.3).
    pub server_hs: Option<Vec<u8>>,
    /// `CLIENT_TRAFFIC_SECRET_0` (TLS 1.3).
    pub client_app: Option<Vec<u8>>,
    /// `SERVER_TRAFFIC_SECRET_0` (TLS 1.3).
    pub server_app: Option<Vec<u8>>,
}

/// Every connection's secrets, by client random.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    by_random: HashMap<[u8; 32], ConnSecrets>,
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

impl Secrets {
    /// Add the lines of a key log; returns how many lines (not blank, not comments) were not
    /// understood: an unknown label, a random that is not 32 bytes of hex, a secret not hex.
    pub fn add_keylog(&mut self, text: &str) -> u64 {
        let mut bad = 0;
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut w = line.split_ascii_whitespace();
            let (Some(label), Some(random), Some(secret), None) =
                (w.next(), w.next(), w.next(), w.next())
            else {
                bad += 1;
                continue;
            };
            let (Some(random), Some(secret)) = (
                unhex(random).and_then(|r| <[u8; 32]>::try_from(r).ok()),
                unhex(secret),
            ) else {
                bad += 1;
                continue;
            };
            let c = self.by_random.entry(random).or_default();
            let slot = match label {
                "CLIENT_RANDOM" => &mut c.master,
                "CLIENT_HANDSHAKE_TRAFFIC_SECRET" => &mut c.client_hs,
                "SERVER_HANDSHAKE_TRAFFIC_SECRET" => &mut c.server_hs,
                "CLIENT_TRAFFIC_SECRET_0" => &mut c.client_app,
                "SERVER_TRAFFIC_SECRET_0" => &mut c.server_app,
                // Known labels this reader has no use for.
                "EXPORTER_SECRET" | "EARLY_EXPORTER_SECRET" | "CLIENT_EARLY_TRAFFIC_SECRET" => {
                    continue
                }
                _ => {
                    bad += 1;
                    continue;
                }
            };
            *slot = Some(secret);
        }
        bad
    }

    /// The secrets of the connection whose ClientHello had `random`.
    pub fn get(&self, random: &[u8; 32]) -> Option<&ConnSecrets> {
        self.by_random.get(random)
    }

    /// The key log lines of the connection with client random `random` (empty when there are
    /// none), in the order TLS 1.2 then TLS 1.3 labels: what a Decryption Secrets Block of an
    /// extract holds for it.
    pub fn keylog_lines(&self, random: &[u8; 32]) -> String {
        let Some(c) = self.by_random.get(random) else {
            return String::new();
        };
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        let r = hex(random);
        let mut out = String::new();
        for (label, secret) in [
            ("CLIENT_RANDOM", &c.master),
            ("CLIENT_HANDSHAKE_TRAFFIC_SECRET", &c.client_hs),
            ("SERVER_HANDSHAKE_TRAFFIC_SECRET", &c.server_hs),
            ("CLIENT_TRAFFIC_SECRET_0", &c.client_app),
            ("SERVER_TRAFFIC_SECRET_0", &c.server_app),
        ] {
            if let Some(s) = secret {
                out.push_str(&format!("{label} {r} {}\n", hex(s)));
            }
        }
        out
    }

    /// Connections with secrets.
    pub fn len(&self) -> usize {
        self.by_random.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.by_random.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keylog_lines_by_label() {
        let r = "11".repeat(32);
        let text = format!(
            "# comment\n\nCLIENT_RANDOM {r} {}\nSERVER_TRAFFIC_SECRET_0 {r} abcd\nEXPORTER_SECRET {r} 00\nBOGUS {r} 00\nCLIENT_RANDOM zz 00\n",
            "ab".repeat(48)
        );
        let mut s = Secrets::default();
        assert_eq!(s.add_keylog(&text), 2);
        let c = s.get(&[0x11; 32]).unwrap();
        assert_eq!(c.master.as_ref().map(Vec::len), Some(48));
        assert_eq!(c.server_app.as_deref(), Some(&[0xab, 0xcd][..]));
        assert_eq!(s.len(), 1);
    }
}
