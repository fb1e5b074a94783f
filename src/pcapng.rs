//! A pcapng writer (draft-ietf-opsawg-pcapng, "PCAP Now Generic (pcapng) Capture File
//! Format"): one Section Header Block, an Interface Description Block per link type, and an
//! Enhanced Packet Block per frame, with an optional comment. Sans-IO: it writes into any
//! [`Write`] it is given (a `Vec<u8>`, or a file the CLI opened) and opens nothing itself.
//!
//! Blocks are written in the host's byte order, which the Byte-Order Magic of the section
//! header tells readers (§4.1). Timestamps are microseconds since the Unix epoch, the default
//! resolution of an interface without `if_tsresol` (§4.2), so no option is needed for them.

use std::collections::HashMap;
use std::io::{self, Write};

/// Block Type of the Section Header Block (§4.1).
const SHB: u32 = 0x0A0D_0D0A;
/// Block Type of the Interface Description Block (§4.2).
const IDB: u32 = 0x0000_0001;
/// Block Type of the Enhanced Packet Block (§4.3).
const EPB: u32 = 0x0000_0006;
/// Byte-Order Magic (§4.1).
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
/// `opt_endofopt` (§3.5).
const OPT_ENDOFOPT: u16 = 0;
/// `opt_comment` (§3.5): a UTF-8 comment on the block.
const OPT_COMMENT: u16 = 1;
/// `shb_userappl` (§4.1): the application that wrote the section.
const SHB_USERAPPL: u16 = 4;
/// The SnapLen the Interface Description Blocks declare: the largest packet written
/// (§4.2: 0 would mean "no limit"; the captured lengths are kept as read).
const SNAPLEN: u32 = 0;

/// Writes one pcapng section into `W`.
///
/// Errors are those of `W`; a packet or comment longer than a block can hold (4 GiB, or a
/// comment of 64 KiB) is an [`io::ErrorKind::InvalidInput`] error and nothing of it is written.
#[derive(Debug)]
pub struct PcapngWriter<W: Write> {
    out: W,
    /// Interface id of each link type written so far (LINKTYPE_* value → id, in order of first
    /// use).
    interfaces: HashMap<u16, u32>,
}

impl<W: Write> PcapngWriter<W> {
    /// Start a section: writes its Section Header Block (version 1.0, section length -1 as
    /// §4.1 allows, `shb_userappl` = `app`).
    pub fn new(mut out: W, app: &str) -> io::Result<PcapngWriter<W>> {
        let mut body = Vec::new();
        body.extend_from_slice(&BYTE_ORDER_MAGIC.to_ne_bytes());
        body.extend_from_slice(&1u16.to_ne_bytes());
        body.extend_from_slice(&0u16.to_ne_bytes());
        body.extend_from_slice(&(-1i64).to_ne_bytes());
        options(&mut body, &[(SHB_USERAPPL, app.as_bytes())])?;
        block(&mut out, SHB, &body)?;
        Ok(PcapngWriter {
            out,
            interfaces: HashMap::new(),
        })
    }

    /// Write a Decryption Secrets Block (§4.7) of TLS key log text `keylog` (secrets type
    /// `TLSK`, the NSS key log format), so that a reader decrypts the packets after it.
    pub fn tls_secrets(&mut self, keylog: &str) -> io::Result<()> {
        const DSB: u32 = 0x0000_000A;
        const TLSK: u32 = 0x544c_534b;
        let data = keylog.as_bytes();
        let mut body = Vec::with_capacity(data.len() + 12);
        body.extend_from_slice(&TLSK.to_ne_bytes());
        let len = u32::try_from(data.len()).map_err(|_| too_long("secrets"))?;
        body.extend_from_slice(&len.to_ne_bytes());
        body.extend_from_slice(data);
        pad(&mut body);
        block(&mut self.out, DSB, &body)
    }

    /// Write one packet as an Enhanced Packet Block (§4.3): link type `linktype` (an
    /// Interface Description Block is written before its first packet), time `ts_us`
    /// (microseconds since the Unix epoch; a time before 1970 is written as 0), the captured
    /// bytes `data`, the length on the wire `orig_len` (at least `data.len()`), and one
    /// `opt_comment` per entry of `comments` (§3.5 allows the option more than once).
    pub fn packet(
        &mut self,
        linktype: u16,
        ts_us: i64,
        data: &[u8],
        orig_len: u32,
        comments: &[&str],
    ) -> io::Result<()> {
        let caplen = u32::try_from(data.len()).map_err(|_| too_long("packet"))?;
        let iface = self.interface(linktype)?;
        let ts = u64::try_from(ts_us).unwrap_or(0);
        let mut body = Vec::with_capacity(data.len() + 32);
        body.extend_from_slice(&iface.to_ne_bytes());
        body.extend_from_slice(&((ts >> 32) as u32).to_ne_bytes());
        body.extend_from_slice(&(ts as u32).to_ne_bytes());
        body.extend_from_slice(&caplen.to_ne_bytes());
        body.extend_from_slice(&orig_len.max(caplen).to_ne_bytes());
        body.extend_from_slice(data);
        pad(&mut body);
        if !comments.is_empty() {
            let opts: Vec<(u16, &[u8])> = comments
                .iter()
                .map(|c| (OPT_COMMENT, c.as_bytes()))
                .collect();
            options(&mut body, &opts)?;
        }
        block(&mut self.out, EPB, &body)
    }

    /// The interface id of `linktype`, writing its Interface Description Block on first use.
    fn interface(&mut self, linktype: u16) -> io::Result<u32> {
        if let Some(&id) = self.interfaces.get(&linktype) {
            return Ok(id);
        }
        let mut body = Vec::new();
        body.extend_from_slice(&linktype.to_ne_bytes());
        body.extend_from_slice(&0u16.to_ne_bytes());
        body.extend_from_slice(&SNAPLEN.to_ne_bytes());
        block(&mut self.out, IDB, &body)?;
        let id = self.interfaces.len() as u32;
        self.interfaces.insert(linktype, id);
        Ok(id)
    }

    /// The writer given to [`PcapngWriter::new`], after flushing it.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

fn too_long(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{what} too long for pcapng"),
    )
}

/// Pad `v` with zeros to a multiple of 32 bits (§3.1).
fn pad(v: &mut Vec<u8>) {
    v.resize(v.len().next_multiple_of(4), 0);
}

/// Append options `(code, value)` and `opt_endofopt` (§3.5).
fn options(v: &mut Vec<u8>, opts: &[(u16, &[u8])]) -> io::Result<()> {
    for (code, value) in opts {
        let len = u16::try_from(value.len()).map_err(|_| too_long("option"))?;
        v.extend_from_slice(&code.to_ne_bytes());
        v.extend_from_slice(&len.to_ne_bytes());
        v.extend_from_slice(value);
        pad(v);
    }
    v.extend_from_slice(&OPT_ENDOFOPT.to_ne_bytes());
    v.extend_from_slice(&0u16.to_ne_bytes());
    Ok(())
}

/// Write a block (§3.1): type, total length, `body` (already padded), total length again.
fn block(out: &mut impl Write, kind: u32, body: &[u8]) -> io::Result<()> {
    let total = u32::try_from(body.len() + 12).map_err(|_| too_long("block"))?;
    out.write_all(&kind.to_ne_bytes())?;
    out.write_all(&total.to_ne_bytes())?;
    out.write_all(body)?;
    out.write_all(&total.to_ne_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_packet_reads_back_with_its_time_link_type_and_length() {
        let mut w = PcapngWriter::new(Vec::new(), "mcpcap test").unwrap();
        w.packet(
            1,
            1_764_455_070_063_119,
            &[1, 2, 3, 4, 5],
            60,
            &["finding 1", "finding 2"],
        )
        .unwrap();
        w.packet(1, 1_764_455_070_063_200, &[9; 8], 8, &[]).unwrap();
        let bytes = w.finish().unwrap();
        assert_eq!(bytes.len() % 4, 0);
        let mut anomalies = crate::anomaly::Anomalies::default();
        let mut got = Vec::new();
        crate::capture::read_capture(&bytes[..], 1, &mut anomalies, |f| {
            got.push((f.number, f.ts, f.linktype, f.data.to_vec(), f.orig_len))
        })
        .unwrap();
        assert_eq!(
            got,
            [
                (1, 1_764_455_070_063_119, 1, vec![1, 2, 3, 4, 5], 60),
                (2, 1_764_455_070_063_200, 1, vec![9; 8], 8)
            ]
        );
        assert_eq!(anomalies.total(), 0);
    }
}
