//! Counted anomalies: malformed or truncated input that the run survives.
//!
//! Like Zeek's weird.log: each anomaly has a stable dotted code
//! (`tcp.ooo_buffer_full`, `http.bad_chunk_size`, `sse.line_too_long`, …),
//! the frame and flow it concerns when known, and a short detail. The run
//! keeps at most [`MAX_KEPT`] rows but counts every occurrence per code.

use std::collections::BTreeMap;

/// Declares [`Code`] from one table: variant, stable name, one-sentence meaning.
macro_rules! codes {
    ($($v:ident => $name:literal, $doc:literal;)*) => {
        /// The stable code of an anomaly (the `code` column of the `anomalies` table), one per
        /// kind of malformed, truncated or unreadable input, or bound reached. Each has a
        /// dotted name (`stage.what`, like Zeek's weird.log names) and a one-sentence meaning;
        /// docs/anomalies.md lists them all.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Code {
            $(#[doc = $doc] $v,)*
        }

        impl Code {
            /// Every code, in the order of the pipeline's stages.
            pub const ALL: &'static [Code] = &[$(Code::$v,)*];

            /// The stable dotted name, e.g. `tcp.overlap_conflict`.
            pub const fn as_str(self) -> &'static str {
                match self { $(Code::$v => $name,)* }
            }

            /// What the code means, in one sentence.
            pub const fn doc(self) -> &'static str {
                match self { $(Code::$v => $doc,)* }
            }

            /// The code of a dotted name; `None` for a name no code has.
            pub fn from_name(name: &str) -> Option<Code> {
                match name {
                    $($name => Some(Code::$v),)*
                    _ => None,
                }
            }
        }
    };
}

codes! {
    CaptureSnaplenCut => "capture.snaplen_cut", "A frame was captured shorter than it was on the wire (snaplen): its missing bytes become a gap in its stream.";
    CaptureTimeBackwards => "capture.time_backwards", "A frame's timestamp is earlier than the frame before it in the same file; times are taken as given.";
    CaptureTsOutOfRange => "capture.ts_out_of_range", "A timestamp lies outside the years 1 to 9999 and is taken as the nearest end.";
    CaptureUnsupportedLinktype => "capture.unsupported_linktype", "Frames of a link type mcpcap does not decode; they are counted and left out.";
    PcapBadFraction => "pcap.bad_fraction", "A pcap record's fraction of a second is a whole second or more; taken as given.";
    PcapngBadBlock => "pcapng.bad_block", "A malformed pcapng block, skipped; reading goes on with the next block.";
    PcapngBadOption => "pcapng.bad_option", "A pcapng block's options run past its end; the rest of them are ignored.";
    PcapngBadTsresol => "pcapng.bad_tsresol", "An interface's if_tsresol option is not a usable resolution; microseconds are assumed.";
    PcapngUnknownInterface => "pcapng.unknown_interface", "A packet block names an interface no valid Interface Description Block described; the frame is counted, not decoded.";
    PcapngLateSecrets => "pcapng.late_secrets", "A TLS key log Decryption Secrets Block after the file's first packet: its secrets decrypt only the connections whose handshake follows it (past the bound of secrets read from a file, none).";
    PcapngUnknownSecrets => "pcapng.unknown_secrets", "A Decryption Secrets Block of a secrets type other than a TLS key log; it is skipped.";
    DecodeEthernet => "decode.ethernet", "An Ethernet frame too short or malformed to decode.";
    DecodeNullShort => "decode.null_short", "A BSD loopback (NULL) frame shorter than its 4-byte header.";
    DecodeSllShort => "decode.sll_short", "A Linux cooked (SLL) frame shorter than its 16-byte header.";
    DecodeSll2Short => "decode.sll2_short", "A Linux cooked v2 (SLL2) frame shorter than its 20-byte header.";
    DecodeNflog => "decode.nflog", "A Linux NFLOG frame whose header or TLVs cannot be read.";
    DecodeLink => "decode.link", "A link layer header that stops before its payload.";
    DecodeIp => "decode.ip", "An IPv4 or IPv6 header that cannot be decoded.";
    DecodeTransport => "decode.transport", "A TCP header that cannot be decoded (too short, bad data offset).";
    IpFragment => "ip.fragment", "An IP fragment: fragments are not reassembled, so its bytes are not in any stream.";
    TcpOooBufferFull => "tcp.ooo_buffer_full", "The bytes held out of order for a connection (or for all) reached their bound; the hole before them becomes a gap.";
    TcpOverlapConflict => "tcp.overlap_conflict", "A retransmitted segment carries different bytes for a range already received; the first copy is kept.";
    TcpDataAfterClose => "tcp.data_after_close", "Bytes past a stream's end arrived after its connection was closed; not delivered.";
    TcpFlowEvicted => "tcp.flow_evicted", "More connections were live at once than the bound: the longest idle one was ended as at the end of the capture.";
    TlsBadRecord => "tls.bad_record", "Bytes of a TLS connection that are no TLS record header; the connection is not read further.";
    TlsTruncatedRecord => "tls.truncated_record", "A TLS connection ended inside a record; its bytes are a gap.";
    TlsBadHello => "tls.bad_hello", "A ClientHello or ServerHello that cannot be parsed; version, cipher, SNI and ALPN stay unknown.";
    TlsHelloTooLong => "tls.hello_too_long", "A TLS handshake message over the bound; it is not read.";
    TlsGap => "tls.gap", "TLS records lost in a capture gap: their plaintext is a gap, and decryption goes on with the next record.";
    TlsNoKeys => "tls.no_keys", "A TLS connection with application data and no secrets for it: the MCP inside it is not seen.";
    TlsDecryptFailed => "tls.decrypt_failed", "A TLS connection whose records the secrets given do not decrypt: the MCP inside it is not seen.";
    HttpNotHttp => "http.not_http", "A connection whose first bytes are no HTTP/1.x message, no HTTP/2 preface and no event stream; it is not read.";
    HttpResyncSkipped => "http.resync_skipped", "Bytes passed over to reach the next HTTP message: the capture began inside one, or framing was lost.";
    HttpBadHead => "http.bad_head", "A request or response head that does not parse; the parser resyncs at the next start line.";
    HttpTooManyHeaders => "http.too_many_headers", "A head with more header fields than the bound; the parser resyncs.";
    HttpHeaderTooLong => "http.header_too_long", "A head longer than the bound without its end; its bytes are dropped and the parser resyncs.";
    HttpPartialHead => "http.partial_head", "A head still unfinished when its direction ended or a gap came.";
    HttpBadFraming => "http.bad_framing", "A line of body framing (chunk size, trailer) longer than the bound; the parser resyncs.";
    HttpBadContentLength => "http.bad_content_length", "A Content-Length that is not a number: a request is taken to have no body, a response is read to the close.";
    HttpConflictingFraming => "http.conflicting_framing", "Both Transfer-Encoding: chunked and Content-Length: chunked framing is used (RFC 9112 §6.3).";
    HttpBadChunkSize => "http.bad_chunk_size", "A chunk-size line that is not hexadecimal; the parser resyncs.";
    HttpBadChunkEnd => "http.bad_chunk_end", "Chunk data not followed by CRLF.";
    HttpChunkResync => "http.chunk_resync", "Chunked framing found again after a gap, or a start line after the gap showed the body ended in it.";
    HttpUpgrade => "http.upgrade", "A 101 Switching Protocols (or 2xx to CONNECT) to a protocol other than HTTP/2: HTTP parsing of the connection ends.";
    HttpResponsesLostInGap => "http.responses_lost_in_gap", "Responses lost in a capture gap: the next response is paired with the request sent just before it.";
    HttpHeadlessSse => "http.headless_sse", "The capture began inside an event stream: its events are read from the first one found, with no HTTP head.";
    HttpContentEncodingUnsupported => "http.content_encoding_unsupported", "A body with a content coding mcpcap does not decode; its messages are not read.";
    HttpCodingGap => "http.coding_gap", "Bytes missing inside a compressed body: the rest of it cannot be decoded.";
    HttpBadContentCoding => "http.bad_content_coding", "A compressed body that ends badly (truncated or corrupt stream).";
    HttpDecodedTooLarge => "http.decoded_too_large", "A compressed body that decodes past the bound (a compression bomb); the rest is not parsed.";
    HttpBodyTooLarge => "http.body_too_large", "A JSON body over the bound is not kept for parsing; its messages are unverifiable.";
    HttpJsonIncomplete => "http.json_incomplete", "A JSON body cut short or not kept whole is not parsed.";
    HttpRequestNotJson => "http.request_not_json", "A request body declared or expected as JSON that does not parse.";
    HttpResponseNotJson => "http.response_not_json", "A response body declared as JSON that does not parse.";
    H2BadFrame => "h2.bad_frame", "An HTTP/2 frame that breaks RFC 9113 (a CONTINUATION without its HEADERS, a header block cut by another frame, bad padding, a head without pseudo-headers, a frame on the wrong stream or a closed one); it is passed over.";
    H2FrameTooLong => "h2.frame_too_long", "An HTTP/2 frame other than DATA longer than the bound on a head; it is passed over, and a header block among them leaves the connection's later headers undecodable.";
    H2FramingLost => "h2.framing_lost", "A capture gap took the frame boundaries of an HTTP/2 connection's direction: they are looked for again after it, its open streams have a gap, and its later header blocks are not decoded.";
    H2HeadersUndecodable => "h2.headers_undecodable", "An HTTP/2 header block that could not be decoded (an HPACK error, or its dynamic table lost with an earlier block to a gap): that request or response head is unknown.";
    H2TooManyStreams => "h2.too_many_streams", "More HTTP/2 streams open at once on a connection than the bound: the frames of the streams past it are not read.";
    HttpMemoryBudget => "http.memory_budget", "The bytes HTTP parsing holds at once for one thread reached their bound; the connection or message is not read further.";
    SseLineTooLong => "sse.line_too_long", "An event-stream line longer than the bound; its event is skipped.";
    SseEventTooLarge => "sse.event_too_large", "An event whose data is over the bound; the event is skipped.";
    SseGap => "sse.gap", "Bytes missing inside an event stream; parsing resumes at the next blank line.";
    SseIdWithNul => "sse.id_with_nul", "An id field containing NUL, ignored as the WHATWG algorithm says.";
    SseInvalidJson => "sse.invalid_json", "An event's data is not a JSON-RPC message.";
    SseEventsNotKept => "sse.events_not_kept", "A bound on the events kept was reached: later events of the response are counted, not kept, and what rests on them is unverifiable.";
    SseMemoryBudget => "sse.memory_budget", "The JSON bodies and SSE events held at once for one thread reached their budget; an event is skipped.";
    JsonrpcBatchTooLarge => "jsonrpc.batch_too_large", "A JSON-RPC batch with more elements than the bound: the rest are checked and counted, not kept.";
    JsonrpcNotAMessage => "jsonrpc.not_a_message", "Elements of a batch that are valid JSON but no JSON-RPC message.";
    JsonrpcTooDeep => "jsonrpc.too_deep", "Messages nested past 128 levels: read from their top-level members only.";
    ModelDeliveries => "model.deliveries", "Event ids delivered more times than the bound: the oldest deliveries are left out of the Last-Event-ID lookup.";
    ModelHopCandidates => "model.hop_candidates", "Identical requests compared with only the next few on other connections: a copy beyond them is not linked as a hop.";
    DetectHistoryWindow => "detect.history_window", "A stream's resumptions read their bound of history events: later ones are checked against its last events only.";
    DetectRefusedConnects => "detect.refused_connects", "More refused connection attempts than the bound: connection_refused reads only the first ones.";
    InternalWorkerFailed => "internal.worker_failed", "A reassembly worker failed: the flows it held are missing from the results.";
    AnomalyNotListed => "anomaly.not_listed", "More anomalies were counted than rows kept: one row gives the counts per code of those not listed.";
}

/// Codes order by their names, as the per-code counts and the tables list them.
impl Ord for Code {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for Code {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Rows kept in full; past this only the per-code counts grow.
pub const MAX_KEPT: usize = 100_000;

/// One anomaly row.
#[derive(Debug, Clone, PartialEq)]
pub struct Anomaly {
    /// Its code (`tcp.overlap_conflict`, …).
    pub code: Code,
    /// Frame number where it was seen, when known.
    pub frame: Option<u64>,
    /// Flow id (`F<n>`) when it concerns one connection.
    pub flow_id: Option<String>,
    /// One-line human detail.
    pub detail: String,
}

impl Anomaly {
    /// Build an anomaly row.
    pub fn new(code: Code, frame: Option<u64>, flow_id: Option<String>, detail: String) -> Self {
        Anomaly {
            code,
            frame,
            flow_id,
            detail,
        }
    }
}

/// A bounded collection of anomalies with exact per-code counts.
#[derive(Debug, Default, Clone)]
pub struct Anomalies {
    /// Kept rows, in the order they were raised.
    pub rows: Vec<Anomaly>,
    /// Exact count per code, including rows not kept.
    pub counts: BTreeMap<Code, u64>,
}

impl Anomalies {
    /// Record one anomaly.
    pub fn add(&mut self, a: Anomaly) {
        *self.counts.entry(a.code).or_insert(0) += 1;
        if self.rows.len() < MAX_KEPT {
            self.rows.push(a);
        }
    }
    /// Record one anomaly whose detail is written only when its row is kept (for anomalies that
    /// can come with every frame).
    pub fn add_with(
        &mut self,
        code: Code,
        frame: Option<u64>,
        flow_id: Option<String>,
        detail: impl FnOnce() -> String,
    ) {
        if self.rows.len() < MAX_KEPT {
            self.add(Anomaly::new(code, frame, flow_id, detail()));
        } else {
            *self.counts.entry(code).or_insert(0) += 1;
        }
    }
    /// Take in another set (a later stage's, or a worker's): its counts added, its rows kept
    /// while there is room (past [`MAX_KEPT`] only counted, as [`Anomalies::add`] does).
    pub fn absorb(&mut self, other: Anomalies) {
        for (code, n) in other.counts {
            *self.counts.entry(code).or_insert(0) += n;
        }
        let room = MAX_KEPT.saturating_sub(self.rows.len());
        self.rows.extend(other.rows.into_iter().take(room));
    }

    /// Count of every anomaly, kept or not.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    /// Count of one code.
    pub fn count(&self, code: Code) -> u64 {
        self.counts.get(&code).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Past the rows kept, a lazy detail is not written, and every occurrence is still counted.
    #[test]
    fn add_with_counts_past_the_rows_kept() {
        let mut a = Anomalies::default();
        let mut written = 0;
        for i in 0..MAX_KEPT + 5 {
            a.add_with(Code::SseGap, Some(i as u64), None, || {
                written += 1;
                String::new()
            });
        }
        assert_eq!((a.rows.len(), written), (MAX_KEPT, MAX_KEPT));
        assert_eq!(a.count(Code::SseGap), (MAX_KEPT + 5) as u64);
    }
}
