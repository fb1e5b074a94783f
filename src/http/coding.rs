//! Content codings (RFC 9110 §8.4.1): gzip, deflate (zlib) and br, decoded as the body streams
//! in, with a bounded output per body ([`MAX_DECODED`]).

use std::io::Write;

/// Most bytes a coded body is decoded to, by default ([`super::HttpLimits::max_decoded`];
/// anomaly `http.decoded_too_large` past it).
pub const MAX_DECODED: u64 = 256 << 20;

/// A streaming decoder for one body.
pub enum BodyDecoder {
    /// `gzip` / `x-gzip` (RFC 1952).
    Gzip(flate2::write::GzDecoder<Vec<u8>>),
    /// `deflate`: the zlib format (RFC 1950).
    Deflate(flate2::write::ZlibDecoder<Vec<u8>>),
    /// `br` (RFC 7932).
    Brotli(Box<brotli_decompressor::DecompressorWriter<Vec<u8>>>),
}

impl std::fmt::Debug for BodyDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BodyDecoder::Gzip(_) => "gzip",
            BodyDecoder::Deflate(_) => "deflate",
            BodyDecoder::Brotli(_) => "br",
        })
    }
}

impl BodyDecoder {
    /// The decoder for a `Content-Encoding` value; `None` for identity or unknown codings
    /// (several codings in a row are not decoded).
    pub fn for_encoding(ce: &str) -> Option<BodyDecoder> {
        match ce.trim().to_ascii_lowercase().as_str() {
            "gzip" | "x-gzip" => Some(BodyDecoder::Gzip(flate2::write::GzDecoder::new(Vec::new()))),
            "deflate" => Some(BodyDecoder::Deflate(flate2::write::ZlibDecoder::new(
                Vec::new(),
            ))),
            "br" => Some(BodyDecoder::Brotli(Box::new(
                brotli_decompressor::DecompressorWriter::new(Vec::new(), 4096),
            ))),
            _ => None,
        }
    }

    fn out(&mut self) -> &mut Vec<u8> {
        match self {
            BodyDecoder::Gzip(d) => d.get_mut(),
            BodyDecoder::Deflate(d) => d.get_mut(),
            BodyDecoder::Brotli(d) => d.get_mut(),
        }
    }

    /// Feed encoded bytes; returns every byte they decode to (taken from the decoder).
    ///
    /// The write is flushed: flate2's writers keep the output of one write until the next, so
    /// a server that flushes its compressor after each event (as an SSE server must) would
    /// otherwise have each event surface one chunk late, at the next chunk's time.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<u8>, String> {
        let r = match self {
            BodyDecoder::Gzip(d) => d.write_all(bytes).and_then(|()| d.flush()),
            BodyDecoder::Deflate(d) => d.write_all(bytes).and_then(|()| d.flush()),
            BodyDecoder::Brotli(d) => d.write_all(bytes).and_then(|()| d.flush()),
        };
        r.map_err(|e| e.to_string())?;
        Ok(std::mem::take(self.out()))
    }

    /// End of the body: the last decoded bytes, and whether the coded stream ended properly
    /// (a body cut before its trailer still gives what was decoded).
    pub fn finish(&mut self) -> (Vec<u8>, Result<(), String>) {
        let r = match self {
            BodyDecoder::Gzip(d) => d.try_finish(),
            BodyDecoder::Deflate(d) => d.try_finish(),
            BodyDecoder::Brotli(d) => d.flush(),
        };
        (std::mem::take(self.out()), r.map_err(|e| e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_split_anywhere() {
        let plain = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.repeat(20);
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&plain).unwrap();
        let gz = enc.finish().unwrap();
        for cut in 0..gz.len() {
            let mut d = BodyDecoder::for_encoding("gzip").unwrap();
            let mut out = d.push(&gz[..cut]).unwrap();
            out.extend(d.push(&gz[cut..]).unwrap());
            let (rest, ended) = d.finish();
            ended.unwrap();
            out.extend(rest);
            assert_eq!(out, plain, "cut {cut}");
        }
        let mut d = BodyDecoder::for_encoding("gzip").unwrap();
        assert!(d.push(b"not gzip at all").is_err());
    }

    #[test]
    fn sync_flushed_gzip_decodes_each_flush_at_once() {
        // A server compressing SSE flushes after each event: each flushed piece decodes fully
        // when it arrives, and a stream cut before the gzip trailer keeps what it decoded.
        let events = [b"id: 1\ndata: a\n\n".as_slice(), b"id: 2\ndata: b\n\n"];
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let mut pieces = Vec::new();
        for ev in events {
            enc.write_all(ev).unwrap();
            enc.flush().unwrap();
            pieces.push(std::mem::take(enc.get_mut()));
        }
        let mut d = BodyDecoder::for_encoding("gzip").unwrap();
        for (ev, piece) in events.iter().zip(&pieces) {
            assert_eq!(d.push(piece).unwrap(), *ev);
        }
        let (rest, ended) = d.finish();
        assert!(rest.is_empty());
        assert!(ended.is_err(), "no trailer");
    }

    #[test]
    fn deflate_and_br() {
        let plain = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(plain).unwrap();
        let z = enc.finish().unwrap();
        let mut d = BodyDecoder::for_encoding("deflate").unwrap();
        let mut out = d.push(&z).unwrap();
        out.extend(d.finish().0);
        assert_eq!(out, plain);
        // The same text compressed by Python's brotli module (brotli.compress).
        let full: &[u8] = &[
            139, 17, 128, 123, 34, 106, 115, 111, 110, 114, 112, 99, 34, 58, 34, 50, 46, 48, 34,
            44, 34, 105, 100, 34, 58, 49, 44, 34, 114, 101, 115, 117, 108, 116, 34, 58, 123, 125,
            125, 3,
        ];
        for cut in 0..full.len() {
            let mut d = BodyDecoder::for_encoding("br").unwrap();
            let mut out = d.push(&full[..cut]).unwrap();
            out.extend(d.push(&full[cut..]).unwrap());
            out.extend(d.finish().0);
            assert_eq!(out, plain, "cut {cut}");
        }
        assert!(BodyDecoder::for_encoding("compress").is_none());
    }
}
