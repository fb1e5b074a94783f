//! Capture files → frames.
//!
//! A constant-memory pull reader over classic pcap (micro- and nanosecond
//! timestamps, either byte order) and pcapng (several interfaces, each with
//! its own link type, `if_tsresol` and `if_tsoffset`), built on
//! [`pcap_parser`]. The reader never holds more than one block buffer
//! (`BLOCK_BUFFER` bytes, grown up to `MAX_BLOCK` for a single large block).
//!
//! A pcapng file's Decryption Secrets Blocks (§4.7) before its first packet block are its
//! [`FileHead::secrets`] ([`read_head`]), for the caller to decrypt with before the frames are
//! read; one after the first packet is a counted anomaly, handed on among the frames
//! ([`read_capture_items`]); one of a secrets type not read is a counted anomaly.
//!
//! Sources: the pcap format (draft-ietf-opsawg-pcap), pcapng
//! (draft-ietf-opsawg-pcapng §4.2 IDB, §4.3 EPB, §4.4 SPB, §4.7 DSB).

use std::io::Read;

use pcap_parser::pcapng::Block;
use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{create_reader, PcapBlockOwned, PcapError};

use crate::anomaly::{Anomalies, Anomaly, Code};

/// Initial size of the read buffer, in bytes.
pub const BLOCK_BUFFER: usize = 1 << 20;
/// Largest single block the reader will grow its buffer for, in bytes.
pub const MAX_BLOCK: usize = 64 << 20;
/// Bytes gathered before the format is recognised (a pcap header is 24 bytes; a pcapng section
/// header with its options, and what follows it, fit easily).
const HEAD_BYTES: usize = 64 << 10;

/// Secrets type of a TLS key log in NSS format, `TLSK` (draft-ietf-opsawg-pcapng §4.7).
pub const SECRETS_TLS_KEY_LOG: u32 = 0x544c_534b;
/// The most bytes of secrets read from one file (over every TLS key log Decryption Secrets
/// Block in it); blocks past it are counted as `pcapng.late_secrets`, not used.
pub const MAX_SECRETS: usize = 16 << 20;
/// The most TLS key log Decryption Secrets Blocks after a file's first packet that are used
/// (each makes the secrets anew); later ones are counted as `pcapng.late_secrets`, not used.
pub const MAX_LATE_SECRETS: usize = 64;

/// One pcapng Decryption Secrets Block (draft-ietf-opsawg-pcapng §4.7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretsBlock {
    /// Secrets type ([`SECRETS_TLS_KEY_LOG`] is the one read).
    pub secrets_type: u32,
    /// The secrets, `secrets_len` bytes (padding dropped); for a TLS key log, NSS key log text.
    pub data: Vec<u8>,
}

/// What a capture file holds before its first packet ([`read_head`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileHead {
    /// The first frame's capture time, µs since the Unix epoch; `None` without frames.
    pub first_ts: Option<i64>,
    /// The TLS key log Decryption Secrets Blocks before the first packet block, in file order.
    pub secrets: Vec<SecretsBlock>,
}

/// What the reader hands on ([`read_capture_items`]).
#[derive(Debug, Clone, Copy)]
pub enum Item<'a> {
    /// A frame.
    Frame(Frame<'a>),
    /// A TLS key log Decryption Secrets Block after the file's first packet, in its place
    /// among the frames (those before it are the file's head, [`read_head`]).
    Secrets(&'a SecretsBlock),
}

/// One captured frame, borrowed from the reader's buffer.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    /// 1-based frame number across the whole run (all files, in order), as tshark numbers them.
    pub number: u64,
    /// Capture timestamp, microseconds since the Unix epoch.
    pub ts: i64,
    /// Link-layer type of the interface (LINKTYPE_* value).
    pub linktype: i32,
    /// The captured bytes (`caplen` of them).
    pub data: &'a [u8],
    /// Length of the frame on the wire, in bytes (`origlen`); larger than `data.len()` when the snaplen cut it.
    pub orig_len: u32,
}

/// Why a capture file could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The file is empty.
    #[error("empty file")]
    Empty,
    /// The first bytes are neither a pcap header nor a pcapng section header block.
    #[error("not a pcap or pcapng file (unrecognised header)")]
    NotACapture,
    /// The file starts like a pcap or pcapng file but ends inside its file header (24 bytes) or
    /// first section header block (28 bytes at least); the value is its length in bytes.
    #[error("file ends inside its header ({0} bytes)")]
    TruncatedHeader(usize),
    /// The underlying reader failed.
    #[error("read error: {0}")]
    Io(String),
}

/// What one file contributed to a run.
#[derive(Debug, Clone, Default)]
pub struct FileSummary {
    /// Frames of this file: each numbered, whether handed on or counted as an anomaly (a
    /// malformed packet block, one of an unknown interface). The next file's first frame is
    /// numbered this many after this file's.
    pub frames: u64,
    /// `Some(reason)` when the file ended in the middle of a block or was unreadable past some point.
    pub truncated: Option<String>,
    /// Byte offset in the file where reading stopped early, when `truncated` is set.
    pub stopped_at: Option<u64>,
}

struct Iface {
    /// `None` for an interface whose description block was malformed (skipped): its frames
    /// are counted as `pcapng.unknown_interface`, not decoded as some guessed link type.
    linktype: Option<i32>,
    /// Units per second of the EPB timestamp.
    resolution: u64,
    /// Seconds added to every timestamp (`if_tsoffset`).
    offset: i64,
}

/// Read every frame of one capture file, calling `sink` for each, in file order.
///
/// `first_number` is the number given to the first frame (frame numbers run on
/// across files). Malformed blocks that can be skipped are counted in
/// `anomalies`; a file cut in the middle of a block ends the read with
/// [`FileSummary::truncated`] set. Errors only when nothing in the file is a
/// capture.
pub fn read_capture<R: Read + Send>(
    input: R,
    first_number: u64,
    anomalies: &mut Anomalies,
    mut sink: impl FnMut(Frame<'_>),
) -> Result<FileSummary, CaptureError> {
    read_capture_while(input, first_number, anomalies, |f| {
        sink(f);
        true
    })
}

/// The capture time of the first frame of a file (µs since the Unix epoch), reading only up to it;
/// `None` when the file holds no frame. Used to put several files of one capture in time order.
pub fn first_timestamp<R: Read + Send>(input: R) -> Result<Option<i64>, CaptureError> {
    Ok(read_head(input)?.first_ts)
}

/// A file's head: its first frame's time and the TLS key log Decryption Secrets Blocks before
/// its first packet block (draft-ietf-opsawg-pcapng §4.7), reading only up to its first frame.
/// A pcap file has none. Anomalies are not counted here: [`read_capture`] counts them.
///
/// Errors: as [`read_capture`].
pub fn read_head<R: Read + Send>(input: R) -> Result<FileHead, CaptureError> {
    let mut first = None;
    let mut reader = open(input)?;
    let mut file = FileState::new(1);
    file.keep_secrets = true;
    run(
        &mut *reader,
        &mut file,
        &mut Anomalies::default(),
        &mut |i| {
            if let Item::Frame(f) = i {
                first = Some(f.ts);
            }
            false
        },
    );
    Ok(FileHead {
        first_ts: first,
        secrets: file.head_secrets,
    })
}

/// As [`read_capture`], but `sink` returns whether to go on; reading stops after the first `false`.
///
/// The loop takes one block at a time from the parser: a block it gives is handed to
/// [`FileState::block`]; one it refuses is asked more bytes for, a larger buffer, or, refused
/// for good, skipped or made the end of the file ([`FileState::refused`]).
pub fn read_capture_while<R: Read + Send>(
    input: R,
    first_number: u64,
    anomalies: &mut Anomalies,
    mut sink: impl FnMut(Frame<'_>) -> bool,
) -> Result<FileSummary, CaptureError> {
    read_capture_items(input, first_number, anomalies, |i| match i {
        Item::Frame(f) => sink(f),
        Item::Secrets(_) => true,
    })
}

/// As [`read_capture_while`], with the TLS key log Decryption Secrets Blocks after the first
/// packet handed on too, in file order among the frames (pcapng spec §4.7: secrets apply to
/// the packets after them).
pub fn read_capture_items<R: Read + Send>(
    input: R,
    first_number: u64,
    anomalies: &mut Anomalies,
    mut sink: impl FnMut(Item<'_>) -> bool,
) -> Result<FileSummary, CaptureError> {
    let mut reader = open(input)?;
    let mut file = FileState::new(first_number);
    run(&mut *reader, &mut file, anomalies, &mut sink);
    Ok(file.summary)
}

/// The loop of [`read_capture_while`]: the blocks of `reader` into `file`, until `sink` says
/// stop or the file ends.
fn run(
    reader: &mut dyn PcapReaderIterator,
    file: &mut FileState,
    anomalies: &mut Anomalies,
    sink: &mut impl FnMut(Item<'_>) -> bool,
) {
    loop {
        // pcap-parser compares a block's two length fields for some block types only: every
        // block is checked here before it is parsed, once it is whole in the buffer.
        if let Some(stop) = file
            .ng_big_endian
            .and_then(|be| ng_lengths_wrong(reader.data(), be))
        {
            file.stop(stop);
            break;
        }
        // Why the parser refused the block at `position`, when it did.
        let refused: String = match reader.next() {
            Ok((offset, block)) => {
                let go_on = file.block(block, anomalies, sink);
                file.position += offset as u64;
                // No shift here: `refill` moves the unparsed rest to the front once per read,
                // where `consume` would move half the buffer each time it passes the middle.
                reader.consume_noshift(offset);
                if !go_on {
                    break;
                }
                continue;
            }
            Err(PcapError::Eof) => break,
            Err(PcapError::Incomplete(_)) => match file.incomplete(reader) {
                Next::Retry => continue,
                Next::Stop => break,
                Next::Refused(why) => why,
            },
            Err(PcapError::UnexpectedEof) => {
                file.stop("file ends inside a block".into());
                break;
            }
            Err(PcapError::BufferTooSmall) if file.ng_big_endian.is_some() => {
                match file.too_small(reader) {
                    Next::Retry => continue,
                    Next::Stop => break,
                    Next::Refused(why) => why,
                }
            }
            Err(e) => short_err(&e),
        };
        if !file.refused(&refused, reader, anomalies) {
            break;
        }
    }
}

/// A pcap-parser reader over `input`, which recognises the format on its first read alone. A
/// pipe may hand over fewer bytes than a header (`tcpdump -w - | mcpcap analyze -`), so the
/// first bytes are gathered here until [`HEAD_BYTES`] or the end of the input, and given to it
/// in one read.
///
/// Errors: the input is empty, cannot be read, or does not start like a capture (or ends
/// inside its header).
fn open<'a, R: Read + Send + 'a>(
    mut input: R,
) -> Result<Box<dyn PcapReaderIterator + Send + 'a>, CaptureError> {
    let mut head = Vec::with_capacity(HEAD_BYTES);
    if let Err(e) = (&mut input).take(HEAD_BYTES as u64).read_to_end(&mut head) {
        return Err(CaptureError::Io(e.to_string()));
    }
    let cut_header = truncated_header(&head).then_some(head.len());
    let input = std::io::Cursor::new(head).chain(input);
    match create_reader(BLOCK_BUFFER, input) {
        Ok(r) => Ok(r),
        Err(PcapError::Eof) => Err(CaptureError::Empty),
        Err(PcapError::ReadError) => Err(CaptureError::Io("read failed".into())),
        Err(_) => Err(match cut_header {
            Some(len) => CaptureError::TruncatedHeader(len),
            None => CaptureError::NotACapture,
        }),
    }
}

/// The state of reading one capture file, from block to block.
struct FileState {
    /// What the file gave so far.
    summary: FileSummary,
    /// A pcap file's link type (its header's).
    legacy_linktype: i32,
    /// Whether a pcap file's records give nanoseconds (else microseconds).
    legacy_nanos: bool,
    /// The interfaces of the current pcapng section, by index.
    ifaces: Vec<Iface>,
    /// The byte order of the current pcapng section (`None` for a pcap file).
    ng_big_endian: Option<bool>,
    /// The next frame's number.
    number: u64,
    /// Byte offset in the file of the block at the front of the buffer.
    position: u64,
    /// The read buffer's size, in bytes.
    capacity: usize,
    /// A packet block was seen (any section): a Decryption Secrets Block from here is late.
    packets: bool,
    /// Keep the data of the TLS key log blocks before the first packet ([`read_head`]).
    keep_secrets: bool,
    /// Those blocks, when kept.
    head_secrets: Vec<SecretsBlock>,
    /// Bytes of secrets in the file's TLS key log blocks so far, at most [`MAX_SECRETS`].
    secrets_bytes: usize,
    /// TLS key log blocks after the first packet handed on, at most [`MAX_LATE_SECRETS`].
    late_blocks: usize,
}

/// What to do once the parser refused the block at the front of the buffer for want of bytes.
enum Next {
    /// Ask for the block again: more bytes are in the buffer, or it grew.
    Retry,
    /// The file ends here ([`FileSummary::truncated`] set when it ends inside a block).
    Stop,
    /// The block is refused for this reason: skip it or stop ([`FileState::refused`]).
    Refused(String),
}

impl FileState {
    /// The state before the first block; the first frame will be numbered `first_number`.
    fn new(first_number: u64) -> FileState {
        FileState {
            summary: FileSummary::default(),
            legacy_linktype: 1,
            legacy_nanos: false,
            ifaces: Vec::new(),
            ng_big_endian: None,
            number: first_number,
            position: 0,
            capacity: BLOCK_BUFFER,
            packets: false,
            keep_secrets: false,
            head_secrets: Vec::new(),
            secrets_bytes: 0,
            late_blocks: 0,
        }
    }

    /// End the file at the current block, for reason `why`.
    fn stop(&mut self, why: String) {
        self.summary.truncated = Some(why);
        self.summary.stopped_at = Some(self.position);
    }

    /// Take in one block the parser gave; returns what `sink` returned for its frame (true
    /// without a frame).
    fn block(
        &mut self,
        block: PcapBlockOwned<'_>,
        anomalies: &mut Anomalies,
        sink: &mut impl FnMut(Item<'_>) -> bool,
    ) -> bool {
        let frames = &mut |f: Frame<'_>| sink(Item::Frame(f));
        match block {
            PcapBlockOwned::LegacyHeader(h) => {
                self.legacy_linktype = h.network.0;
                self.legacy_nanos = h.is_nanosecond_precision();
                true
            }
            PcapBlockOwned::Legacy(b) => {
                self.packets = true;
                self.legacy_packet(&b, anomalies, frames)
            }
            PcapBlockOwned::NG(Block::SectionHeader(shb)) => {
                self.ifaces.clear();
                self.ng_big_endian = Some(shb.big_endian());
                true
            }
            PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => {
                self.interface(&idb, anomalies);
                true
            }
            PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
                self.packets = true;
                self.enhanced_packet(&epb, anomalies, frames)
            }
            PcapBlockOwned::NG(Block::SimplePacket(spb)) => {
                self.packets = true;
                self.simple_packet(&spb, anomalies, frames)
            }
            PcapBlockOwned::NG(Block::DecryptionSecrets(dsb)) => {
                self.secrets(&dsb, anomalies, sink)
            }
            PcapBlockOwned::NG(_) => true,
        }
    }

    /// A Decryption Secrets Block (draft-ietf-opsawg-pcapng §4.7): a TLS key log before the
    /// first packet is part of the file's head (kept for [`read_head`]); one after it is
    /// counted (`pcapng.late_secrets`) and handed to `sink` in its place among the frames
    /// (whose answer is returned). One past [`MAX_SECRETS`] (`pcapng.late_secrets` too) and one
    /// of another secrets type (`pcapng.unknown_secrets`) are counted and not used.
    fn secrets(
        &mut self,
        dsb: &pcap_parser::pcapng::DecryptionSecretsBlock<'_>,
        anomalies: &mut Anomalies,
        sink: &mut impl FnMut(Item<'_>) -> bool,
    ) -> bool {
        let kind = dsb.secrets_type.0;
        let data = &dsb.data[..(dsb.secrets_len as usize).min(dsb.data.len())];
        let late = |why: String| {
            Anomaly::new(
                Code::PcapngLateSecrets,
                Some(self.number),
                None,
                format!(
                    "TLS key log Decryption Secrets Block of {} bytes {why}",
                    data.len()
                ),
            )
        };
        if kind != SECRETS_TLS_KEY_LOG {
            let name: String = kind
                .to_be_bytes()
                .iter()
                .map(|&b| if b.is_ascii_graphic() { b as char } else { '.' })
                .collect();
            anomalies.add(Anomaly::new(
                Code::PcapngUnknownSecrets,
                None,
                None,
                format!(
                    "Decryption Secrets Block of secrets type {kind:#010x} ({name}), {} bytes: not read (mcpcap reads TLS key logs, TLSK)",
                    data.len()
                ),
            ));
            return true;
        }
        if self.secrets_bytes + data.len() > MAX_SECRETS {
            anomalies.add(late(format!(
                "past the {MAX_SECRETS} bytes of secrets read from a file: not used"
            )));
            return true;
        }
        if self.packets && self.late_blocks >= MAX_LATE_SECRETS {
            anomalies.add(late(format!(
                "after the file's first packet, past the {MAX_LATE_SECRETS} such blocks used: not used"
            )));
            return true;
        }
        self.secrets_bytes += data.len();
        let block = SecretsBlock {
            secrets_type: kind,
            data: data.to_vec(),
        };
        if !self.packets {
            if self.keep_secrets {
                self.head_secrets.push(block);
            }
            return true;
        }
        self.late_blocks += 1;
        anomalies.add(late(
            "after the file's first packet: it decrypts the connections whose handshake comes after it, not those before".into(),
        ));
        sink(Item::Secrets(&block))
    }

    /// A pcap record: its frame to `sink` (whose answer is returned). A fraction of a second
    /// that is a whole second or more is counted (`pcap.bad_fraction`) and taken as given.
    fn legacy_packet(
        &mut self,
        b: &pcap_parser::LegacyPcapBlock<'_>,
        anomalies: &mut Anomalies,
        sink: &mut impl FnMut(Frame<'_>) -> bool,
    ) -> bool {
        let (sub, unit) = if self.legacy_nanos {
            (b.ts_usec as i64 / 1000, 1_000_000_000)
        } else {
            (b.ts_usec as i64, 1_000_000)
        };
        if i64::from(b.ts_usec) >= unit {
            anomalies.add(Anomaly::new(
                Code::PcapBadFraction,
                Some(self.number),
                None,
                format!(
                    "the record's fraction of a second is {} {}; taken as given (past the next second)",
                    b.ts_usec,
                    if self.legacy_nanos { "ns" } else { "µs" }
                ),
            ));
        }
        let ts = (b.ts_sec as i64) * 1_000_000 + sub;
        let caplen = (b.caplen as usize).min(b.data.len());
        let go_on = sink(Frame {
            number: self.number,
            ts,
            linktype: self.legacy_linktype,
            data: &b.data[..caplen],
            orig_len: b.origlen,
        });
        self.number += 1;
        self.summary.frames += 1;
        go_on
    }

    /// A pcapng interface description: the next interface of the section, with its link type,
    /// time resolution (a bad `if_tsresol` counted and taken as microseconds) and offset.
    fn interface(
        &mut self,
        idb: &pcap_parser::pcapng::InterfaceDescriptionBlock<'_>,
        anomalies: &mut Anomalies,
    ) {
        // Link type, reserved, snaplen: 8 bytes after the block's 8.
        let region = (idb.block_len1 as usize).saturating_sub(20);
        options_cut(&idb.options, region, None, "IDB", anomalies);
        let resolution = ts_resolution(idb.if_tsresol).unwrap_or_else(|| {
            anomalies.add(Anomaly::new(
                Code::PcapngBadTsresol,
                None,
                None,
                format!("if_tsresol {}", idb.if_tsresol),
            ));
            1_000_000
        });
        self.ifaces.push(Iface {
            linktype: Some(idb.linktype.0),
            resolution: resolution.max(1),
            offset: idb.if_tsoffset,
        });
    }

    /// A pcapng enhanced packet: its frame to `sink` (whose answer is returned), at its
    /// interface's time (clamped to the years 1 to 9999, counted when it had to be), or counted
    /// as `pcapng.unknown_interface` when its interface is not known. It is numbered either way.
    fn enhanced_packet(
        &mut self,
        epb: &pcap_parser::pcapng::EnhancedPacketBlock<'_>,
        anomalies: &mut Anomalies,
        sink: &mut impl FnMut(Frame<'_>) -> bool,
    ) -> bool {
        let number = self.number;
        // Interface, time, lengths: 20 bytes after the block's 8, then the padded data.
        let data = (epb.caplen as usize).next_multiple_of(4);
        let region = (epb.block_len1 as usize).saturating_sub(32 + data);
        options_cut(&epb.options, region, Some(number), "EPB", anomalies);
        let iface = self.ifaces.get(epb.if_id as usize);
        let go_on = match iface.and_then(|i| Some((i, i.linktype?))) {
            Some((iface, linktype)) => {
                let raw = ((epb.ts_high as u64) << 32) | epb.ts_low as u64;
                let mut ts = ts_to_micros(raw, iface.resolution, iface.offset);
                if !(TS_MIN_US..=TS_MAX_US).contains(&ts) {
                    anomalies.add(Anomaly::new(
                        Code::CaptureTsOutOfRange,
                        Some(number),
                        None,
                        format!("timestamp {ts} µs is outside the years 1 to 9999; taken as the nearest end"),
                    ));
                    ts = clamp_ts(ts);
                }
                let caplen = (epb.caplen as usize).min(epb.data.len());
                sink(Frame {
                    number,
                    ts,
                    linktype,
                    data: &epb.data[..caplen],
                    orig_len: epb.origlen,
                })
            }
            None => {
                anomalies.add(Anomaly::new(
                    Code::PcapngUnknownInterface,
                    Some(number),
                    None,
                    if (epb.if_id as usize) < self.ifaces.len() {
                        format!(
                            "EPB names interface {}, whose description block was malformed",
                            epb.if_id
                        )
                    } else {
                        format!("EPB names interface {} of {}", epb.if_id, self.ifaces.len())
                    },
                ));
                true
            }
        };
        self.number += 1;
        self.summary.frames += 1;
        go_on
    }

    /// A pcapng simple packet (RFC draft pcapng §4.4: of interface 0, without a timestamp):
    /// its frame to `sink` (whose answer is returned) at time 0, or counted as
    /// `pcapng.unknown_interface` without a usable interface 0. It is numbered either way.
    fn simple_packet(
        &mut self,
        spb: &pcap_parser::pcapng::SimplePacketBlock<'_>,
        anomalies: &mut Anomalies,
        sink: &mut impl FnMut(Frame<'_>) -> bool,
    ) -> bool {
        let go_on = match self.ifaces.first().and_then(|i| i.linktype) {
            Some(linktype) => {
                let caplen = (spb.origlen as usize).min(spb.data.len());
                sink(Frame {
                    number: self.number,
                    ts: 0,
                    linktype,
                    data: &spb.data[..caplen],
                    orig_len: spb.origlen,
                })
            }
            None => {
                anomalies.add(Anomaly::new(
                    Code::PcapngUnknownInterface,
                    Some(self.number),
                    None,
                    if self.ifaces.is_empty() {
                        "SPB before any IDB".into()
                    } else {
                        "SPB of interface 0, whose description block was malformed".into()
                    },
                ));
                true
            }
        };
        self.number += 1;
        self.summary.frames += 1;
        go_on
    }

    /// The parser wants more bytes than the buffer holds for the block at its front: read
    /// more, grow the buffer for a block larger than it, or end the file (cleanly between
    /// blocks, else inside one). A pcapng block whole in the buffer by its own length that
    /// still wants more has a length inside it that runs past its end: it is refused.
    fn incomplete(&mut self, reader: &mut dyn PcapReaderIterator) -> Next {
        if self
            .ng_big_endian
            .is_some_and(|be| ng_framing(reader.data(), be).is_some())
        {
            return Next::Refused(INSIDE_PAST_END.into());
        }
        let before = reader.data().len();
        if reader.refill().is_err() {
            self.stop("read error".into());
            return Next::Stop;
        }
        if reader.data().len() > before {
            return Next::Retry;
        }
        if before == 0 {
            // Clean end of file between blocks.
            return Next::Stop;
        }
        // Nothing more was read: either the buffer is full (a block larger than it) or the
        // file ended.
        if before >= self.capacity && grow(reader, &mut self.capacity) {
            return Next::Retry;
        }
        self.stop(if before >= self.capacity {
            format!("block larger than {MAX_BLOCK} bytes")
        } else {
            format!("file ends inside a block ({before} bytes left over)")
        });
        Next::Stop
    }

    /// A pcapng block larger than the buffer (pcap-parser says so before asking for its
    /// bytes): the buffer grows for it, up to [`MAX_BLOCK`] — unless the block, by its own
    /// length, is already whole in the buffer (a length inside it is what is too large: it is
    /// refused). A pcap record has no second length to check a large one by: it is not
    /// asked here, and stops the file, as tshark does past 256 KiB.
    fn too_small(&mut self, reader: &mut dyn PcapReaderIterator) -> Next {
        let be = self.ng_big_endian.unwrap_or(false);
        if ng_framing(reader.data(), be).is_some() {
            Next::Refused(INSIDE_PAST_END.into())
        } else if grow(reader, &mut self.capacity) {
            Next::Retry
        } else {
            Next::Refused(format!("block larger than {MAX_BLOCK} bytes"))
        }
    }

    /// The parser refused the block at the front of `reader`'s buffer for `reason`: skip it
    /// ([`FileState::bad_block`]) and return true, or end the file and return false.
    fn refused(
        &mut self,
        reason: &str,
        reader: &mut dyn PcapReaderIterator,
        anomalies: &mut Anomalies,
    ) -> bool {
        let numbered = self.number;
        match self.bad_block(reason, reader.data(), anomalies) {
            Ok(len) => {
                self.position += len as u64;
                self.summary.frames += self.number - numbered;
                reader.consume_noshift(len);
                true
            }
            Err(stop) => {
                self.stop(stop);
                false
            }
        }
    }

    /// What to do with a block at the start of `data` that the parser refused (`reason`), in
    /// the current pcapng section (a pcap file's records have no second length to check them
    /// by): `Ok(length)` to skip it, when both length fields agree and it is not a section
    /// header (whose byte order and options the rest depends on), counted as
    /// `pcapng.bad_block`; a packet block keeps its frame number (the next frame's number moves
    /// past it), an interface block its place (an interface without a link type, whose frames
    /// are counted). `Err(reason)` to stop reading the file, saying why.
    fn bad_block(
        &mut self,
        reason: &str,
        data: &[u8],
        anomalies: &mut Anomalies,
    ) -> Result<usize, String> {
        const SHB: u32 = 0x0A0D_0D0A;
        let Some((kind, len, len2)) = self.ng_big_endian.and_then(|be| ng_framing(data, be)) else {
            return Err(format!("malformed block: {reason}"));
        };
        if len2 as usize != len {
            return Err(format!(
                "malformed block: its length fields disagree ({len} bytes at its start, {len2} at its end)"
            ));
        }
        if kind == SHB {
            return Err(format!("malformed section header block: {reason}"));
        }
        let packet = matches!(kind, 2 | 3 | 6);
        anomalies.add(Anomaly::new(
            Code::PcapngBadBlock,
            packet.then_some(self.number),
            None,
            format!(
                "block type {kind:#x} of {len} bytes at byte {} is malformed ({reason}); skipped",
                self.position
            ),
        ));
        if packet {
            self.number += 1;
        }
        if kind == 1 {
            // Its place is kept, so that later blocks name the right interfaces; its link type
            // is not guessed.
            self.ifaces.push(Iface {
                linktype: None,
                resolution: 1_000_000,
                offset: 0,
            });
        }
        Ok(len)
    }
}

/// Why a pcapng block whole in the buffer by its own length was refused: a length inside it (a
/// captured length, an option's) runs past its end.
const INSIDE_PAST_END: &str = "a length inside it runs past its end";

/// Doubles the read buffer (`capacity`, bytes) for a block larger than it, up to [`MAX_BLOCK`];
/// false when it is that large already, or could not grow.
fn grow(reader: &mut dyn PcapReaderIterator, capacity: &mut usize) -> bool {
    if *capacity >= MAX_BLOCK {
        return false;
    }
    *capacity = (*capacity * 2).min(MAX_BLOCK);
    reader.grow(*capacity)
}

/// Counts `pcapng.bad_option` when the options pcap-parser read from a block (each 4 bytes of
/// code and length, then its value padded to 4) cover less than the block's option bytes
/// (`region`): an option ran past the block's end, and pcap-parser stops there without a word
/// (draft-ietf-opsawg-pcapng §3.5). The packet itself is read.
fn options_cut(
    options: &[pcap_parser::pcapng::PcapNGOption<'_>],
    region: usize,
    frame: Option<u64>,
    block: &str,
    anomalies: &mut Anomalies,
) {
    let read: usize = options.iter().map(|o| 4 + o.value.len()).sum();
    if read < region {
        anomalies.add(Anomaly::new(
            Code::PcapngBadOption,
            frame,
            None,
            format!(
                "{block} options: {read} of {region} bytes readable, the next option runs past the block's end; the rest ignored"
            ),
        ));
    }
}

/// Whether `head`, the whole of a file shorter than a capture's header, starts like one: a pcap
/// magic number (either byte order, micro- or nanoseconds) with fewer than 24 bytes, or a pcapng
/// section header block type with fewer than 28.
fn truncated_header(head: &[u8]) -> bool {
    const PCAP: [[u8; 4]; 4] = [
        [0xd4, 0xc3, 0xb2, 0xa1],
        [0xa1, 0xb2, 0xc3, 0xd4],
        [0x4d, 0x3c, 0xb2, 0xa1],
        [0xa1, 0xb2, 0x3c, 0x4d],
    ];
    match head.get(0..4) {
        Some(m) if PCAP.iter().any(|p| p == m) => head.len() < 24,
        Some([0x0a, 0x0d, 0x0d, 0x0a]) => head.len() < 28,
        _ => false,
    }
}

/// A pcapng block at the start of `data` whose two length fields can be read (draft-ietf-opsawg-
/// pcapng §3.1: type, total length, body, total length again), in the section's byte order:
/// its type, its length by the first field, and the second field. `None` when fewer than 8 bytes
/// are there, or the first length is not a block length (below 12 or not a multiple of 4) or
/// runs past `data`.
fn ng_framing(data: &[u8], big_endian: bool) -> Option<(u32, usize, u32)> {
    let big_endian = shb_big_endian(data).unwrap_or(big_endian);
    let word = |at: usize| -> Option<u32> {
        let b: [u8; 4] = data.get(at..at + 4)?.try_into().ok()?;
        Some(if big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    };
    let len = word(4)? as usize;
    if len < 12 || !len.is_multiple_of(4) || len > data.len() {
        return None;
    }
    Some((word(0)?, len, word(len - 4)?))
}

/// The byte order of a section header block at the start of `data`, by its byte-order magic
/// (draft-ietf-opsawg-pcapng §4.1); `None` when `data` does not start with one. A new section
/// may change the byte order.
fn shb_big_endian(data: &[u8]) -> Option<bool> {
    if data.get(0..4)? != [0x0A, 0x0D, 0x0D, 0x0A] {
        return None;
    }
    match data.get(8..12)? {
        [0x4D, 0x3C, 0x2B, 0x1A] => Some(false),
        [0x1A, 0x2B, 0x3C, 0x4D] => Some(true),
        _ => None,
    }
}

/// Why the pcapng block at the start of `data` cannot be framed, when it cannot: its first
/// length is not a block length (at least 12, a multiple of 4: draft-ietf-opsawg-pcapng §3.1),
/// or, once the whole block is in `data`, its second length disagrees with the first. `None`
/// when it can be, or when too little of it is there to tell.
fn ng_lengths_wrong(data: &[u8], big_endian: bool) -> Option<String> {
    let big_endian = shb_big_endian(data).unwrap_or(big_endian);
    let b: [u8; 4] = data.get(4..8)?.try_into().ok()?;
    let len = if big_endian {
        u32::from_be_bytes(b)
    } else {
        u32::from_le_bytes(b)
    };
    if len < 12 || !len.is_multiple_of(4) {
        return Some(format!(
            "malformed block: its length, {len} bytes, is not a block length (at least 12, a multiple of 4)"
        ));
    }
    match ng_framing(data, big_endian) {
        Some((_, len, len2)) if len2 as usize != len => Some(format!(
            "malformed block: its length fields disagree ({len} bytes at its start, {len2} at its end)"
        )),
        _ => None,
    }
}

fn short_err(e: &PcapError<&[u8]>) -> String {
    match e {
        PcapError::NomError(_, nom::error::ErrorKind::Verify)
        | PcapError::OwnedNomError(_, nom::error::ErrorKind::Verify) => {
            "a length or type field does not fit the block".into()
        }
        PcapError::NomError(_, k) => format!("{k:?}"),
        PcapError::OwnedNomError(_, k) => format!("{k:?}"),
        PcapError::BufferTooSmall => "block too large".into(),
        PcapError::HeaderNotRecognized => "unrecognised block".into(),
        other => format!("{other:?}"),
    }
}

/// Units per second of an `if_tsresol` value (pcapng, draft-ietf-opsawg-pcapng §4.2): with the
/// high bit clear, 10^value; with it set, 2^(value & 0x7f). `None` when the unit does not fit
/// in a `u64`. (pcap-parser 0.17 checks the range before clearing the high bit, so it refuses
/// every power of two.)
pub fn ts_resolution(if_tsresol: u8) -> Option<u64> {
    let exp = u32::from(if_tsresol & 0x7f);
    if if_tsresol & 0x80 == 0 {
        10u64.checked_pow(exp)
    } else {
        1u64.checked_shl(exp).filter(|_| exp < 64)
    }
}

/// The earliest time a frame may have: 0001-01-01T00:00:00Z, in microseconds since the Unix
/// epoch. A pcapng timestamp outside [`TS_MIN_US`, `TS_MAX_US`] (a corrupt `ts_high`, an absurd
/// `if_tsoffset`) is counted as `capture.ts_out_of_range` and taken as the nearer end, so that
/// every output format can write it.
pub const TS_MIN_US: i64 = -62_135_596_800_000_000;
/// The latest time a frame may have: 9999-12-31T23:59:59.999999Z (see [`TS_MIN_US`]).
pub const TS_MAX_US: i64 = 253_402_300_799_999_999;

/// `us` taken into [`TS_MIN_US`, `TS_MAX_US`], the times every output format can write.
pub fn clamp_ts(us: i64) -> i64 {
    us.clamp(TS_MIN_US, TS_MAX_US)
}

/// Convert a pcapng timestamp in `resolution` units per second, plus `if_tsoffset` seconds,
/// to microseconds since the Unix epoch, saturating instead of overflowing.
pub fn ts_to_micros(raw: u64, resolution: u64, offset_secs: i64) -> i64 {
    let secs = raw / resolution;
    let frac = raw % resolution;
    let micros = (frac as u128 * 1_000_000 / resolution as u128) as i64;
    i64::try_from(secs)
        .unwrap_or(i64::MAX)
        .saturating_add(offset_secs)
        .saturating_mul(1_000_000)
        .saturating_add(micros)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands over at most `n` bytes a call, as a pipe may.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.1.min(buf.len()).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_capture_read_a_few_bytes_at_a_time_is_read_whole() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for name in ["mcp/healthy_ts.pcap", "mcp-sdk/planned_poll_ts.pcap"] {
            let bytes = std::fs::read(root.join("fixtures").join(name)).unwrap();
            let frames = |r: &mut (dyn Read + Send)| {
                let mut n = 0u64;
                let s = read_capture(r, 1, &mut Anomalies::default(), |_| n += 1).unwrap();
                assert_eq!(s.truncated, None, "{name}");
                n
            };
            let whole = frames(&mut bytes.as_slice());
            assert!(whole > 10);
            for step in [1, 3, 7, 23] {
                assert_eq!(
                    frames(&mut Trickle(&bytes, step)),
                    whole,
                    "{name}, {step} bytes a read"
                );
            }
        }
    }

    #[test]
    fn ts_resolution_powers_of_ten_and_two() {
        assert_eq!(ts_resolution(6), Some(1_000_000));
        assert_eq!(ts_resolution(9), Some(1_000_000_000));
        assert_eq!(ts_resolution(19), Some(10u64.pow(19)));
        assert_eq!(ts_resolution(20), None);
        assert_eq!(ts_resolution(0x80 | 20), Some(1 << 20));
        assert_eq!(ts_resolution(0x80 | 10), Some(1024));
        assert_eq!(ts_resolution(0x80 | 63), Some(1 << 63));
        assert_eq!(ts_resolution(0x80 | 64), None);
        // 2^-20 s units: 1.5 s.
        assert_eq!(ts_to_micros(3 << 19, 1 << 20, 0), 1_500_000);
    }

    #[test]
    fn ts_conversion_units() {
        assert_eq!(ts_to_micros(1_500_000_123, 1_000_000_000, 0), 1_500_000);
        assert_eq!(ts_to_micros(2_000_001, 1_000_000, 10), 12_000_001);
        assert_eq!(ts_to_micros(u64::MAX, 1, i64::MAX), i64::MAX);
    }

    fn legacy(
        magic: u32,
        big_endian: bool,
        linktype: u32,
        records: &[(u32, u32, &[u8])],
    ) -> Vec<u8> {
        let w32 = |v: u32| {
            if big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let w16 = |v: u16| {
            if big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut b = Vec::new();
        b.extend_from_slice(&w32(magic));
        b.extend_from_slice(&w16(2));
        b.extend_from_slice(&w16(4));
        b.extend_from_slice(&[0; 8]);
        b.extend_from_slice(&w32(65535));
        b.extend_from_slice(&w32(linktype));
        for (sec, sub, data) in records {
            for v in [*sec, *sub, data.len() as u32, data.len() as u32] {
                b.extend_from_slice(&w32(v));
            }
            b.extend_from_slice(data);
        }
        b
    }

    fn frames(bytes: &[u8]) -> Vec<(u64, i64, i32, Vec<u8>)> {
        let mut a = Anomalies::default();
        let mut out = Vec::new();
        read_capture(bytes, 1, &mut a, |f| {
            out.push((f.number, f.ts, f.linktype, f.data.to_vec()))
        })
        .unwrap();
        out
    }

    #[test]
    fn pcap_micro_nano_both_byte_orders() {
        let recs: [(u32, u32, &[u8]); 2] = [(10, 500, b"ab"), (11, 7, b"c")];
        for be in [false, true] {
            let micro = frames(&legacy(0xa1b2c3d4, be, 1, &recs));
            assert_eq!(
                micro,
                vec![
                    (1, 10_000_500, 1, b"ab".to_vec()),
                    (2, 11_000_007, 1, b"c".to_vec())
                ]
            );
            let nano = frames(&legacy(0xa1b23c4d, be, 113, &recs));
            assert_eq!(
                nano,
                vec![
                    (1, 10_000_000, 113, b"ab".to_vec()),
                    (2, 11_000_000, 113, b"c".to_vec())
                ]
            );
        }
    }

    fn ng_block(kind: u32, body: &[u8]) -> Vec<u8> {
        let len = 12 + body.len() as u32;
        let mut b = kind.to_le_bytes().to_vec();
        b.extend_from_slice(&len.to_le_bytes());
        b.extend_from_slice(body);
        b.extend_from_slice(&len.to_le_bytes());
        b
    }

    /// A little-endian section header block.
    fn ng_shb() -> Vec<u8> {
        let mut shb = 0x1A2B3C4Du32.to_le_bytes().to_vec();
        shb.extend_from_slice(&[1, 0, 0, 0]);
        shb.extend_from_slice(&u64::MAX.to_le_bytes());
        ng_block(0x0A0D0D0A, &shb)
    }

    fn ng_idb(linktype: u16, tsresol: Option<u8>) -> Vec<u8> {
        let mut b = linktype.to_le_bytes().to_vec();
        b.extend_from_slice(&[0, 0]);
        b.extend_from_slice(&65535u32.to_le_bytes());
        if let Some(r) = tsresol {
            b.extend_from_slice(&[9, 0, 1, 0, r, 0, 0, 0, 0, 0, 0, 0]);
        }
        ng_block(1, &b)
    }

    /// An enhanced packet block whose captured length field says `caplen`.
    fn ng_epb_len(iface: u32, ts: u64, data: &[u8], caplen: u32) -> Vec<u8> {
        let mut b = iface.to_le_bytes().to_vec();
        b.extend_from_slice(&((ts >> 32) as u32).to_le_bytes());
        b.extend_from_slice(&(ts as u32).to_le_bytes());
        b.extend_from_slice(&caplen.to_le_bytes());
        b.extend_from_slice(&(data.len() as u32).to_le_bytes());
        b.extend_from_slice(data);
        while !b.len().is_multiple_of(4) {
            b.push(0);
        }
        ng_block(6, &b)
    }

    fn ng_epb(iface: u32, ts: u64, data: &[u8]) -> Vec<u8> {
        ng_epb_len(iface, ts, data, data.len() as u32)
    }

    /// pcapng with two interfaces: Ethernet with the default microsecond resolution, and raw IP
    /// with `if_tsresol` 9 (nanoseconds), per draft-ietf-opsawg-pcapng §4.2 and §4.3.
    #[test]
    fn pcapng_two_interfaces() {
        let mut file = ng_shb();
        file.extend(ng_idb(1, None));
        file.extend(ng_idb(101, Some(9)));
        file.extend(ng_epb(0, 5_000_001, b"eth"));
        file.extend(ng_epb(1, 6_000_000_123, b"ip"));
        file.extend(ng_block(0x0BAD, &[1, 2, 3, 4])); // unknown block: skipped
        assert_eq!(
            frames(&file),
            vec![
                (1, 5_000_001, 1, b"eth".to_vec()),
                (2, 6_000_000, 101, b"ip".to_vec())
            ]
        );
    }

    /// A Decryption Secrets Block (draft-ietf-opsawg-pcapng §4.7) of `kind` holding `data`.
    fn ng_dsb(kind: u32, data: &[u8]) -> Vec<u8> {
        let mut b = kind.to_le_bytes().to_vec();
        b.extend_from_slice(&(data.len() as u32).to_le_bytes());
        b.extend_from_slice(data);
        while !b.len().is_multiple_of(4) {
            b.push(0);
        }
        ng_block(0x0A, &b)
    }

    /// The TLS key logs before the first packet are the file's head, padding dropped; one
    /// after it is counted and handed on among the frames; one of another secrets type is
    /// counted; the frames read alike.
    #[test]
    fn decryption_secrets_before_the_first_packet_are_the_head() {
        let mut file = ng_shb();
        file.extend(ng_dsb(SECRETS_TLS_KEY_LOG, b"CLIENT_RANDOM a b\n"));
        file.extend(ng_idb(1, None));
        file.extend(ng_dsb(0x5747_4b4c, b"wireguard"));
        file.extend(ng_dsb(SECRETS_TLS_KEY_LOG, b"x"));
        file.extend(ng_epb(0, 1, b"one"));
        file.extend(ng_dsb(SECRETS_TLS_KEY_LOG, b"late"));
        file.extend(ng_epb(0, 2, b"two"));
        let head = read_head(&file[..]).unwrap();
        assert_eq!(head.first_ts, Some(1));
        assert_eq!(
            head.secrets,
            vec![
                SecretsBlock {
                    secrets_type: SECRETS_TLS_KEY_LOG,
                    data: b"CLIENT_RANDOM a b\n".to_vec()
                },
                SecretsBlock {
                    secrets_type: SECRETS_TLS_KEY_LOG,
                    data: b"x".to_vec()
                }
            ]
        );
        let (frames, codes, stopped) = read_all(&file);
        assert_eq!(stopped, None);
        assert_eq!(frames, vec![(1, b"one".to_vec()), (2, b"two".to_vec())]);
        assert_eq!(
            codes,
            vec![
                (Code::PcapngUnknownSecrets.to_string(), None),
                (Code::PcapngLateSecrets.to_string(), Some(2))
            ]
        );
        // The late one is handed on in its place among the frames.
        let mut items = Vec::new();
        read_capture_items(&file[..], 1, &mut Anomalies::default(), |i| {
            items.push(match i {
                Item::Frame(f) => format!("frame {}", f.number),
                Item::Secrets(b) => String::from_utf8_lossy(&b.data).into_owned(),
            });
            true
        })
        .unwrap();
        assert_eq!(items, ["frame 1", "late", "frame 2"]);
        // A pcap file has no head secrets.
        let pcap = legacy(0xa1b2c3d4, false, 1, &[(5, 0, b"a")]);
        assert_eq!(
            read_head(&pcap[..]).unwrap(),
            FileHead {
                first_ts: Some(5_000_000),
                secrets: Vec::new()
            }
        );
    }

    /// What [`read_all`] gives: the frames (number, data), the anomaly codes with their frames,
    /// and why reading stopped early.
    type ReadAll = (
        Vec<(u64, Vec<u8>)>,
        Vec<(String, Option<u64>)>,
        Option<String>,
    );

    /// Reads `bytes` whole.
    fn read_all(bytes: &[u8]) -> ReadAll {
        let mut a = Anomalies::default();
        let mut out = Vec::new();
        let summary =
            read_capture(bytes, 1, &mut a, |f| out.push((f.number, f.data.to_vec()))).unwrap();
        let codes = a
            .rows
            .iter()
            .map(|x| (x.code.to_string(), x.frame))
            .collect();
        (out, codes, summary.truncated)
    }

    /// A block whose two lengths agree but whose inside does not fit them (an EPB captured
    /// length past the block, an IDB too short for its fields) is skipped and counted; frames
    /// keep their numbers and interfaces their indices, and the file is read to its end.
    #[test]
    fn pcapng_malformed_block_is_skipped() {
        let mut file = ng_shb();
        file.extend(ng_idb(1, None));
        file.extend(ng_block(1, &[101, 0, 0, 0])); // IDB of 4 bytes: no snaplen
        file.extend(ng_idb(101, None));
        file.extend(ng_epb(0, 1, b"one"));
        file.extend(ng_epb_len(0, 2, b"two", 200)); // caplen past the block
        file.extend(ng_epb(2, 3, b"three"));
        let (frames, codes, stopped) = read_all(&file);
        assert_eq!(frames, vec![(1, b"one".to_vec()), (3, b"three".to_vec())]);
        assert_eq!(
            codes,
            vec![
                (Code::PcapngBadBlock.to_string(), None),
                (Code::PcapngBadBlock.to_string(), Some(2))
            ]
        );
        assert_eq!(stopped, None);
    }

    /// A length inside a record larger than the read buffer: a pcapng block whose own length
    /// says it is whole is refused and skipped at once (the buffer does not grow for it); a
    /// pcap record, which has no second length to check it by, stops the file.
    #[test]
    fn a_huge_inner_length_does_not_grow_the_buffer() {
        let mut file = ng_shb();
        file.extend(ng_idb(1, None));
        file.extend(ng_epb(0, 1, b"one"));
        file.extend(ng_epb_len(0, 2, b"two", 3_000_000));
        file.extend(ng_epb(0, 3, b"three"));
        let (frames, codes, stopped) = read_all(&file);
        assert_eq!(stopped, None);
        assert_eq!(frames, vec![(1, b"one".to_vec()), (3, b"three".to_vec())]);
        assert_eq!(codes, vec![(Code::PcapngBadBlock.to_string(), Some(2))]);
        let recs: [(u32, u32, &[u8]); 3] = [(1, 0, b"a"), (2, 0, b"b"), (3, 0, b"c")];
        let mut pcap = legacy(0xa1b2c3d4, false, 1, &recs);
        // The second record's captured length: 24 + 17 bytes in.
        pcap[24 + 17 + 8..24 + 17 + 12].copy_from_slice(&3_000_000u32.to_le_bytes());
        let (frames, _, stopped) = read_all(&pcap);
        assert_eq!(frames, vec![(1, b"a".to_vec())]);
        assert_eq!(stopped.as_deref(), Some("malformed block: block too large"));
    }

    /// An option that runs past its block's end is counted; the packet is read, and so is an
    /// EPB whose options are whole (an end-of-options marker included).
    #[test]
    fn pcapng_option_past_the_block_is_counted() {
        let epb_with = |opts: &[u8]| {
            let mut b = 0u32.to_le_bytes().to_vec();
            b.extend_from_slice(&[0; 8]);
            b.extend_from_slice(&3u32.to_le_bytes());
            b.extend_from_slice(&3u32.to_le_bytes());
            b.extend_from_slice(b"one\0");
            b.extend_from_slice(opts);
            ng_block(6, &b)
        };
        let mut file = ng_shb();
        file.extend(ng_idb(1, None));
        // A comment of 2 bytes, then the end of options: whole.
        file.extend(epb_with(&[1, 0, 2, 0, b'h', b'i', 0, 0, 0, 0, 0, 0]));
        // A comment that says 200 bytes, with 4 there.
        file.extend(epb_with(&[1, 0, 200, 0, b'a', b'b', b'c', b'd']));
        let (frames, codes, stopped) = read_all(&file);
        assert_eq!(stopped, None);
        assert_eq!(frames, vec![(1, b"one".to_vec()), (2, b"one".to_vec())]);
        assert_eq!(codes, vec![(Code::PcapngBadOption.to_string(), Some(2))]);
    }

    /// Length fields that disagree, or a first length that is no block length, stop the file
    /// whatever the block's type (pcap-parser compares them only for some types).
    #[test]
    fn pcapng_bad_lengths_stop_the_file_for_every_block_type() {
        let spb = {
            let mut b = 3u32.to_le_bytes().to_vec();
            b.extend_from_slice(b"spb\0");
            ng_block(3, &b)
        };
        for (kind, block) in [
            ("SPB", spb),
            ("unknown", ng_block(0x0BAD, &[1, 2, 3, 4])),
            ("SHB", ng_shb()),
        ] {
            let mut file = ng_shb();
            file.extend(ng_idb(1, None));
            file.extend(ng_epb(0, 1, b"one"));
            let mut bad = block;
            let n = bad.len();
            bad[n - 4..].copy_from_slice(&(n as u32 + 4).to_le_bytes());
            file.extend(bad);
            file.extend(ng_epb(0, 3, b"three"));
            let (frames, _, stopped) = read_all(&file);
            assert_eq!(frames, vec![(1, b"one".to_vec())], "{kind}");
            let want = format!("malformed block: its length fields disagree ({n} bytes at its start, {} at its end)", n + 4);
            assert_eq!(stopped.as_deref(), Some(want.as_str()), "{kind}");
        }
        let mut file = ng_shb();
        file.extend(ng_idb(1, None));
        file.extend(ng_epb(0, 1, b"one"));
        let mut bad = ng_block(0x0BAD, &[1, 2, 3, 4]);
        bad[4..8].copy_from_slice(&18u32.to_le_bytes());
        file.extend(bad);
        let (frames, _, stopped) = read_all(&file);
        assert_eq!(frames.len(), 1);
        assert_eq!(
            stopped.as_deref(),
            Some("malformed block: its length, 18 bytes, is not a block length (at least 12, a multiple of 4)")
        );
    }

    /// A packet of an interface whose description block was skipped is counted, not decoded as
    /// some link type; a block larger than the read buffer is read whole.
    #[test]
    fn pcapng_skipped_interface_and_large_block() {
        let mut file = ng_shb();
        file.extend(ng_block(1, &[])); // IDB without a body
        file.extend(ng_idb(1, None));
        file.extend(ng_epb(0, 1, b"lost"));
        let big = vec![7u8; BLOCK_BUFFER + BLOCK_BUFFER / 2];
        file.extend(ng_epb(1, 2, &big));
        let (frames, codes, stopped) = read_all(&file);
        assert_eq!(stopped, None);
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0].0, 2);
        assert_eq!(frames[0].1.len(), big.len());
        assert_eq!(
            codes,
            vec![
                (Code::PcapngBadBlock.to_string(), None),
                (Code::PcapngUnknownInterface.to_string(), Some(1))
            ]
        );
    }

    /// Length fields that disagree leave no way to find the next block: reading stops there,
    /// saying so.
    #[test]
    fn pcapng_length_fields_that_disagree_stop_the_file() {
        let mut file = ng_shb();
        file.extend(ng_idb(1, None));
        file.extend(ng_epb(0, 1, b"one"));
        let mut bad = ng_epb(0, 2, b"two");
        let n = bad.len();
        bad[n - 4..].copy_from_slice(&999u32.to_le_bytes());
        file.extend(bad);
        file.extend(ng_epb(0, 3, b"three"));
        let (frames, codes, stopped) = read_all(&file);
        assert_eq!(frames, vec![(1, b"one".to_vec())]);
        assert!(codes.is_empty());
        assert_eq!(
            stopped.as_deref(),
            Some("malformed block: its length fields disagree (36 bytes at its start, 999 at its end)")
        );
    }

    /// A pcap record whose fraction of a second is a whole second or more is taken as given and
    /// counted.
    #[test]
    fn pcap_fraction_of_a_second_too_large() {
        let recs: [(u32, u32, &[u8]); 2] = [(1000, 1_500_000, b"a"), (1001, 7, b"b")];
        let file = legacy(0xa1b2c3d4, false, 1, &recs);
        let (frames, codes, _) = read_all(&file);
        assert_eq!(frames.len(), 2);
        assert_eq!(codes, vec![(Code::PcapBadFraction.to_string(), Some(1))]);
        let ts: Vec<i64> = self::frames(&file).iter().map(|f| f.1).collect();
        assert_eq!(ts, vec![1_001_500_000, 1_001_000_007]);
    }

    #[test]
    fn not_a_capture() {
        let mut a = Anomalies::default();
        let r = read_capture(&b"hello world, not a pcap at all"[..], 1, &mut a, |_| {});
        assert!(matches!(r, Err(CaptureError::NotACapture)));
        let r = read_capture(&b""[..], 1, &mut a, |_| {});
        assert!(matches!(r, Err(CaptureError::Empty)));
        // Cut inside the file header: said so, with the length.
        let pcap = legacy(0xa1b2c3d4, false, 1, &[]);
        let r = read_capture(&pcap[..20], 1, &mut a, |_| {});
        assert!(matches!(r, Err(CaptureError::TruncatedHeader(20))), "{r:?}");
        let r = read_capture(&ng_shb()[..16], 1, &mut a, |_| {});
        assert!(matches!(r, Err(CaptureError::TruncatedHeader(16))), "{r:?}");
    }
}
