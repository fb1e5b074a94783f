//! Event-id formats of the MCP SDKs (`docs/wire.md`, "Event-id formats": each format's SDK
//! source, order and density).
//!
//! MCP (2025-03-26 … 2025-11-25, "Resumability and Redelivery") makes event
//! ids opaque per-stream cursors. Ordering is defined only where a known
//! format defines it, and only between ids with the same stream prefix.

/// A recognised event-id format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IdFormat {
    /// Plain decimal integer (`"17"`): ordered; dense or sparse is decided per stream.
    Integer,
    /// TS SDK example store `<stream>_<epoch-ms>_<rand>`: ordered by time, not dense.
    TsStore,
    /// Go SDK `<stream>_<n>`: dense per stream from 0.
    Go,
    /// Rust rmcp `<n>` / `<n>/<request>`: dense per stream.
    Rmcp,
    /// C# SDK `<b64>:<b64>:<n>`: dense per stream from 1.
    CSharp,
    /// Redis-stream style `<ms>-<seq>`: ordered, not dense.
    Redis,
    /// Java SDK `<uuid>_<uuid>`: unordered.
    JavaUuidPair,
    /// A UUID (Python SDK example store): unordered.
    Uuid,
    /// Anything else: unordered.
    Opaque,
}

impl IdFormat {
    /// Name used in the `id_format` column.
    pub fn as_str(self) -> &'static str {
        match self {
            IdFormat::Integer => "integer",
            IdFormat::TsStore => "ts_store",
            IdFormat::Go => "go",
            IdFormat::Rmcp => "rmcp",
            IdFormat::CSharp => "csharp",
            IdFormat::Redis => "redis",
            IdFormat::JavaUuidPair => "java_uuid_pair",
            IdFormat::Uuid => "uuid",
            IdFormat::Opaque => "opaque",
        }
    }
    /// Whether ids of this format, with the same prefix, are ordered.
    pub fn ordered(self) -> bool {
        matches!(
            self,
            IdFormat::Integer
                | IdFormat::TsStore
                | IdFormat::Go
                | IdFormat::Rmcp
                | IdFormat::CSharp
                | IdFormat::Redis
        )
    }
    /// Whether consecutive events of one stream step by exactly one (by the format's definition).
    pub fn dense_by_format(self) -> bool {
        matches!(self, IdFormat::Go | IdFormat::Rmcp | IdFormat::CSharp)
    }
}

/// An event id split by its format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedId<'a> {
    /// The format.
    pub format: IdFormat,
    /// The stream part, a slice of the id (empty when the format has none).
    pub prefix: &'a str,
    /// The ordinal or time part, for ordered formats.
    pub seq: Option<u128>,
}

fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, &c)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                c == b'-'
            } else {
                c.is_ascii_hexdigit()
            }
        })
}

fn digits(s: &str) -> Option<u128> {
    if s.is_empty() || s.len() > 30 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Classify one event id (tried in a fixed order: `docs/wire.md`, "Event-id formats").
pub fn parse(id: &str) -> ParsedId<'_> {
    let opaque = |f| ParsedId {
        format: f,
        prefix: "",
        seq: None,
    };
    if let Some(n) = digits(id) {
        return ParsedId {
            format: IdFormat::Integer,
            prefix: "",
            seq: Some(n),
        };
    }
    // Which separators occur, in one pass: a format whose separator is absent is not tried.
    let (mut slash, mut colon) = (false, false);
    for b in id.bytes() {
        slash |= b == b'/';
        colon |= b == b':';
    }
    // rmcp `<n>/<request>`
    if let Some((a, b)) = slash.then(|| id.split_once('/')).flatten() {
        if let (Some(n), Some(_)) = (digits(a), digits(b)) {
            return ParsedId {
                format: IdFormat::Rmcp,
                prefix: b,
                seq: Some(n),
            };
        }
    }
    // TS store: split from the right — the stream part may contain `_`.
    let mut parts = id.rsplitn(3, '_');
    if let (Some(rand), Some(ms), Some(stream)) = (parts.next(), parts.next(), parts.next()) {
        if ms.len() == 13
            && !rand.is_empty()
            && rand.len() <= 8
            && rand
                .bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        {
            if let Some(t) = digits(ms) {
                return ParsedId {
                    format: IdFormat::TsStore,
                    prefix: stream,
                    seq: Some(t),
                };
            }
        }
    }
    // Go `<base32-26>_<n>` or `_<n>`.
    if let Some((stream, n)) = id.rsplit_once('_') {
        if (stream.is_empty()
            || (stream.len() == 26
                && stream
                    .bytes()
                    .all(|c| c.is_ascii_uppercase() || (b'2'..=b'7').contains(&c))))
            && digits(n).is_some()
        {
            return ParsedId {
                format: IdFormat::Go,
                prefix: stream,
                seq: digits(n),
            };
        }
        if is_uuid(stream) && is_uuid(n) {
            return opaque(IdFormat::JavaUuidPair);
        }
    }
    // C# `<b64>:<b64>:<n>`
    let mut parts = id.splitn(4, ':');
    let mut next = || colon.then(|| parts.next()).flatten();
    if let (Some(c0), Some(c1), Some(c2), None) = (next(), next(), next(), next()) {
        if !c0.is_empty() && !c1.is_empty() && digits(c2).is_some() {
            let b64 = |s: &str| {
                s.bytes().all(|c| {
                    c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=' | b'-' | b'_')
                })
            };
            if b64(c0) && b64(c1) {
                return ParsedId {
                    format: IdFormat::CSharp,
                    prefix: &id[..c0.len() + 1 + c1.len()],
                    seq: digits(c2),
                };
            }
        }
    }
    if let Some((ms, seq)) = id.split_once('-') {
        if ms.len() == 13 {
            if let (Some(a), Some(b)) = (digits(ms), digits(seq)) {
                return ParsedId {
                    format: IdFormat::Redis,
                    prefix: "",
                    seq: Some(a.saturating_mul(1 << 40).saturating_add(b)),
                };
            }
        }
    }
    if is_uuid(id) {
        return opaque(IdFormat::Uuid);
    }
    opaque(IdFormat::Opaque)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(parse("17").format, IdFormat::Integer);
        let ts = parse("2bde5bd8-f580-476b-b797-5d400a1bb94b_1795991032169_dxngcp78");
        assert_eq!(
            (ts.format, ts.prefix, ts.seq),
            (
                IdFormat::TsStore,
                "2bde5bd8-f580-476b-b797-5d400a1bb94b",
                Some(1795991032169)
            )
        );
        let get = parse("_GET_stream_1795991032169_p0q1r2s3");
        assert_eq!((get.format, get.prefix), (IdFormat::TsStore, "_GET_stream"));
        assert_eq!(parse("KX3ABCDEFGHIJKLMNOPQRSTUV7_4").format, IdFormat::Go);
        assert_eq!(parse("_3").format, IdFormat::Go);
        let r = parse("5/2");
        assert_eq!((r.format, r.seq), (IdFormat::Rmcp, Some(5)));
        let cs = parse("c2Vzcw:c3RyZWFt:3");
        assert_eq!(
            (cs.format, cs.prefix, cs.seq),
            (IdFormat::CSharp, "c2Vzcw:c3RyZWFt", Some(3))
        );
        assert_eq!(parse("a:b:1:2").format, IdFormat::Opaque);
        assert_eq!(parse("1718000000000-0").format, IdFormat::Redis);
        assert_eq!(
            parse("7c9e6679-7425-40de-944b-e07fc1f90ae7").format,
            IdFormat::Uuid
        );
        assert_eq!(
            parse("7c9e6679-7425-40de-944b-e07fc1f90ae7_7c9e6679-7425-40de-944b-e07fc1f90ae8")
                .format,
            IdFormat::JavaUuidPair
        );
        assert_eq!(parse("hello").format, IdFormat::Opaque);
    }
}
