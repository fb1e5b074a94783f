//! Content codings (RFC 9110 §8.4.1): gzip, deflate (zlib) and br, decoded as the body streams
//! in, with a bounded output per body ([`MAX_DECODED`]).

use std::io::Write;

/// Most bytes a coded body is decoded to, by default ([`super::HttpLimits::max_decoded`];
/// anomaly `http.decoded_too_large` past it).
pub const MAX_DECODED: u64 = 256 << 20;

/// Where a decoder writes: the decoded bytes not yet taken, up to `room` bytes in all. Past it
/// the write is refused (a compression bomb: a few hundred bytes of `br` decode to gigabytes),
/// so a decoder stops within one of its buffers of the bound, whatever one write decodes to.
#[derive(Debug, Default)]
pub struct Capped {
    out: Vec<u8>,
    /// Bytes this body may still decode to.
    room: u64,
    /// Whether a write went past `room`.
    full: bool,
}

impl Write for Capped {
    /// Errors once nothing more fits (an error, not `Ok(0)`: brotli's writer retries a write
    /// that took nothing).
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = buf
            .len()
            .min(usize::try_from(self.room).unwrap_or(usize::MAX));
        if n < buf.len() {
            self.full = true;
            if n == 0 {
                return Err(std::io::Error::other("decoded bound reached"));
            }
        }
        self.out.extend_from_slice(&buf[..n]);
        self.room -= n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Why a body stopped decoding.
#[derive(Debug, Clone, PartialEq)]
pub enum DecodeError {
    /// The coded stream is not valid (the decoder's message).
    Bad(String),
    /// A `br` stream's window (bytes, RFC 7932 §9.1) is more than the held-bytes budget has
    /// room for ([`crate::budget`]).
    Budget(usize),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Bad(e) => f.write_str(e),
            DecodeError::Budget(n) => write!(f, "its {n}-byte window is over the budget"),
        }
    }
}

/// A streaming decoder for one body.
pub enum BodyDecoder {
    /// `gzip` / `x-gzip` (RFC 1952).
    Gzip(flate2::write::GzDecoder<Capped>),
    /// `deflate`: the zlib format (RFC 1950).
    Deflate(flate2::write::ZlibDecoder<Capped>),
    /// `br` (RFC 7932), with the part of the held-bytes budget its window holds.
    Brotli(Box<Brotli>),
}

/// A `br` decoder and the part of the held-bytes budget its window holds: the whole window,
/// from the stream's first byte on ([`brotli_window`]). The decoder allocates it whole, and
/// fills it with what it decoded before it writes it out: 38 bytes of `br` can fill 16 MiB
/// that the first write gives back 4 KiB of.
pub struct Brotli {
    decoder: brotli_decompressor::DecompressorWriter<Capped>,
    charge: crate::budget::Charge,
}

impl Brotli {
    /// Take out all the decoder has decoded. brotli-decompressor's writer stops after one
    /// buffer of output once the input is used up, and leaves the rest of what it decoded in
    /// its window (a flushed event of 100 KB came out 4 KiB at a time, one piece per later
    /// segment): it is asked again, with no input, while it gives more (the sink's bound ends
    /// a bomb).
    fn drain(&mut self) -> std::io::Result<()> {
        loop {
            let before = self.decoder.get_ref().out.len();
            // (An empty write takes no input: its count is 0 whatever it decoded.)
            let _taken: usize = self.decoder.write(&[])?;
            if self.decoder.get_ref().out.len() == before {
                return self.decoder.flush();
            }
        }
    }
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

/// The window a `br` stream's decoder holds, in bytes, from the stream's first byte (RFC 7932
/// §9.1 WBITS, read from the least significant bit: 16; 17 + n for n in 1..=7; 10..=15; 17).
/// A value RFC 7932 leaves invalid (the large-window extension) counts as the largest window.
pub fn brotli_window(first: u8) -> usize {
    let wbits = if first & 1 == 0 {
        16
    } else if (first >> 1) & 7 != 0 {
        17 + ((first >> 1) & 7) as u32
    } else {
        match (first >> 4) & 7 {
            0 => 17,
            1 => 24,
            m => 8 + m as u32,
        }
    };
    1 << wbits
}

impl BodyDecoder {
    /// The decoder for a `Content-Encoding` value, whose body may decode to at most `max`
    /// bytes, and whose `br` window is charged to `budget`; `None` for identity or unknown
    /// codings (several codings in a row are not decoded).
    pub fn for_encoding(
        ce: &str,
        max: u64,
        budget: &std::sync::Arc<crate::budget::Budget>,
    ) -> Option<BodyDecoder> {
        let sink = Capped {
            room: max,
            ..Capped::default()
        };
        match ce.trim().to_ascii_lowercase().as_str() {
            "gzip" | "x-gzip" => Some(BodyDecoder::Gzip(flate2::write::GzDecoder::new(sink))),
            "deflate" => Some(BodyDecoder::Deflate(flate2::write::ZlibDecoder::new(sink))),
            "br" => Some(BodyDecoder::Brotli(Box::new(Brotli {
                decoder: brotli_decompressor::DecompressorWriter::new(sink, 4096),
                charge: crate::budget::Charge::new(budget),
            }))),
            _ => None,
        }
    }

    fn sink(&mut self) -> &mut Capped {
        match self {
            BodyDecoder::Gzip(d) => d.get_mut(),
            BodyDecoder::Deflate(d) => d.get_mut(),
            BodyDecoder::Brotli(b) => b.decoder.get_mut(),
        }
    }

    /// Whether the body reached its bound: the bytes returned end there, and nothing more is
    /// decoded (anomaly `http.decoded_too_large`).
    pub fn full(&mut self) -> bool {
        self.sink().full
    }

    /// Feed encoded bytes; returns every byte they decode to (taken from the decoder), up to
    /// the body's bound ([`BodyDecoder::full`]).
    ///
    /// The write is flushed: flate2's writers keep the output of one write until the next, so
    /// a server that flushes its compressor after each event (as an SSE server must) would
    /// otherwise have each event surface one chunk late, at the next chunk's time.
    ///
    /// Errors: the stream does not decode, or (`br`) its window does not fit the budget.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<u8>, DecodeError> {
        let r = match self {
            BodyDecoder::Gzip(d) => d.write_all(bytes).and_then(|()| d.flush()),
            BodyDecoder::Deflate(d) => d.write_all(bytes).and_then(|()| d.flush()),
            BodyDecoder::Brotli(b) => {
                if let (0, Some(&first)) = (b.charge.held(), bytes.first()) {
                    let window = brotli_window(first);
                    if !b.charge.hold(window) {
                        return Err(DecodeError::Budget(window));
                    }
                }
                b.decoder.write_all(bytes).and_then(|()| b.drain())
            }
        };
        let full = self.full();
        let out = std::mem::take(&mut self.sink().out);
        match r {
            Err(_) if full => Ok(out),
            Err(e) => Err(DecodeError::Bad(e.to_string())),
            Ok(()) => Ok(out),
        }
    }

    /// End of the body: the last decoded bytes, and whether the coded stream ended properly
    /// (a body cut before its trailer still gives what was decoded).
    pub fn finish(&mut self) -> (Vec<u8>, Result<(), String>) {
        let r = match self {
            BodyDecoder::Gzip(d) => d.try_finish(),
            BodyDecoder::Deflate(d) => d.try_finish(),
            BodyDecoder::Brotli(b) => b.drain(),
        };
        let full = self.full();
        let out = std::mem::take(&mut self.sink().out);
        (
            out,
            r.or_else(|e| if full { Ok(()) } else { Err(e) })
                .map_err(|e| e.to_string()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A decoder with the default bound, on a budget of its own.
    fn dec(ce: &str) -> BodyDecoder {
        BodyDecoder::for_encoding(ce, MAX_DECODED, &crate::budget::Budget::new(1 << 30)).unwrap()
    }

    #[test]
    fn gzip_split_anywhere() {
        let plain = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.repeat(20);
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&plain).unwrap();
        let gz = enc.finish().unwrap();
        for cut in 0..gz.len() {
            let mut d = dec("gzip");
            let mut out = d.push(&gz[..cut]).unwrap();
            out.extend(d.push(&gz[cut..]).unwrap());
            let (rest, ended) = d.finish();
            ended.unwrap();
            out.extend(rest);
            assert_eq!(out, plain, "cut {cut}");
        }
        let mut d = dec("gzip");
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
        let mut d = dec("gzip");
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
        let mut d = dec("deflate");
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
            let mut d = dec("br");
            let mut out = d.push(&full[..cut]).unwrap();
            out.extend(d.push(&full[cut..]).unwrap());
            out.extend(d.finish().0);
            assert_eq!(out, plain, "cut {cut}");
        }
        assert!(BodyDecoder::for_encoding(
            "compress",
            MAX_DECODED,
            &crate::budget::Budget::new(1 << 30)
        )
        .is_none());
    }

    /// A body decodes to at most its bound, whatever one write decodes to: 14 bytes of `br`
    /// (1 MiB of zeros) and a gzip bomb stop at the bound, and say so.
    #[test]
    fn decoding_stops_at_the_bound() {
        let br: &[u8] = &[91, 255, 255, 143, 127, 2, 32, 30, 11, 4, 114, 239, 31, 0];
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(&vec![0u8; 1 << 20]).unwrap();
        let gz = z.finish().unwrap();
        let budget = crate::budget::Budget::new(1 << 30);
        for (ce, body) in [("br", br), ("gzip", &gz[..])] {
            let mut whole = BodyDecoder::for_encoding(ce, MAX_DECODED, &budget).unwrap();
            let mut all = whole.push(body).unwrap();
            all.extend(whole.finish().0);
            assert_eq!(all.len(), 1 << 20, "{ce}");
            assert!(!whole.full());
            let mut d = BodyDecoder::for_encoding(ce, 5000, &budget).unwrap();
            let out = d.push(body).unwrap();
            assert_eq!((out.len(), d.full()), (5000, true), "{ce}");
            assert_eq!(
                d.push(body).unwrap(),
                Vec::<u8>::new(),
                "{ce}: nothing past it"
            );
        }
    }

    /// A `br` stream's window, from its first byte (RFC 7932 §9.1), is held from the held-bytes
    /// budget while it decodes, refused when the budget has not the room, and given back after.
    #[test]
    fn brotli_window_is_held_from_the_budget() {
        assert_eq!(brotli_window(0b0000_0000), 1 << 16);
        assert_eq!(brotli_window(0x5b), 1 << 22, "lgwin 22, the usual default");
        assert_eq!(brotli_window(0b0000_1111), 1 << 24);
        assert_eq!(brotli_window(0b0000_0001), 1 << 17);
        assert_eq!(brotli_window(0b0010_0001), 1 << 10);
        assert_eq!(brotli_window(0b0111_0001), 1 << 15);
        let br: &[u8] = &[91, 255, 255, 143, 127, 2, 32, 30, 11, 4, 114, 239, 31, 0];
        let budget = crate::budget::Budget::new(6 << 20);
        let mut a = BodyDecoder::for_encoding("br", MAX_DECODED, &budget).unwrap();
        assert!(a.push(br).is_ok());
        assert_eq!(budget.held(), 1 << 22);
        let mut b = BodyDecoder::for_encoding("br", MAX_DECODED, &budget).unwrap();
        assert_eq!(b.push(br), Err(DecodeError::Budget(1 << 22)));
        drop(a);
        assert_eq!(budget.held(), 0);
        assert!(b.push(br).is_ok(), "room again once the first body is done");
    }

    /// A `br` SSE stream flushed after each event (as a server must for SSE) gives each event
    /// whole when its piece arrives, a long one too (100 KB of a repeated byte, 21 bytes of br).
    #[test]
    fn flushed_br_events_decode_at_once() {
        // Python's brotli.Compressor(quality=5, lgwin=22): process(event) + flush() each.
        let pieces: [&[u8]; 4] = [
            &[
                11, 53, 0, 0, 4, 254, 115, 91, 191, 146, 216, 203, 55, 224, 136, 191, 100, 66, 67,
                131, 115, 83, 39, 145, 225, 148, 3, 230, 68, 154, 55, 15, 106, 254, 93, 236, 8,
                247, 24, 43, 203, 56, 138, 227, 26, 234, 58, 148, 194, 230, 44, 82, 90, 244, 236,
                253, 191, 129, 104, 185, 226, 68, 2, 203, 150, 179, 36, 29, 156, 59, 244, 158, 104,
                33, 204, 254, 222, 231, 131, 194, 153, 40, 246, 54, 51, 0,
            ][..],
            &[
                80, 3, 0, 64, 82, 65, 166, 47, 5, 81, 5, 177, 2, 50, 221, 59, 245, 24,
            ][..],
            &[
                80, 3, 0, 64, 82, 97, 166, 47, 5, 80, 5, 177, 0, 188, 171, 199, 0,
            ][..],
            &[
                106, 53, 12, 0, 36, 21, 114, 194, 90, 128, 6, 36, 121, 76, 64, 216, 89, 126, 1, 11,
                3,
            ][..],
        ];
        let budget = crate::budget::Budget::new(1 << 30);
        let mut d = BodyDecoder::for_encoding("br", MAX_DECODED, &budget).unwrap();
        let got: Vec<usize> = pieces.iter().map(|p| d.push(p).unwrap().len()).collect();
        assert_eq!(got, [107, 107, 107, 100_014]);
    }
}
