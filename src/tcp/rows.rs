//! What stays of a connection once it is over: its row of the `flows` table (Zeek's
//! `conn.log`), encoded in a few dozen bytes. A flow's live state (both directions' reassembly,
//! 576 bytes and its buffers) is released when the connection has ended and no trailing
//! segment can come; a flood of a million connections then costs its rows, not its states.

use std::net::IpAddr;

use super::{Dir, FlowId};

/// The letters of a connection's history (Zeek conn.log `history`: `s` SYN, `h` SYN-ACK, `d`
/// data, `f` FIN, `r` RST), each noted once per direction, in arrival order: at most ten.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct History {
    /// Direction in the high bit, the letter below it.
    marks: [u8; 10],
    len: u8,
}

impl History {
    /// Note letter `c` for direction `dir`, once.
    pub fn note(&mut self, dir: Dir, c: char) {
        let m = ((dir as u8 & 1) << 7) | (c as u8 & 0x7f);
        let n = usize::from(self.len);
        if !self.marks[..n].contains(&m) && n < self.marks.len() {
            self.marks[n] = m;
            self.len += 1;
        }
    }

    /// The letters: upper case for direction `client`, lower case for the other.
    pub fn string(&self, client: Dir) -> String {
        self.marks[..usize::from(self.len)]
            .iter()
            .map(|&m| {
                let c = char::from(m & 0x7f);
                if usize::from(m >> 7) == client {
                    c.to_ascii_uppercase()
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect()
    }
}

/// A connection's row of the `flows` table: what the table shows of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowRow {
    /// Index of the flow (`F<index>`).
    pub index: usize,
    /// The two endpoints; `ends[0]` is the client when known.
    pub ends: [(IpAddr, u16); 2],
    /// Whether a SYN or SYN-ACK fixed the client.
    pub client_by_syn: bool,
    /// Packets per direction.
    pub packets: [u64; 2],
    /// Payload bytes on the wire per direction (retransmissions included).
    pub wire_bytes: [u64; 2],
    /// First and last packet time, µs since the Unix epoch.
    pub ts_first: i64,
    /// Last packet time.
    pub ts_last: i64,
    /// Frame numbers (1-based, in the capture) of the first and last packet.
    pub frame_first: u64,
    /// Frame of the last packet.
    pub frame_last: u64,
    /// Bytes reported as gaps, per direction (Zeek's `missed_bytes`).
    pub missed: [u64; 2],
    /// Segments retransmitted, per direction.
    pub retransmitted: [u64; 2],
    /// Segments that arrived ahead of a hole, per direction.
    pub out_of_order: [u64; 2],
    /// SYN, FIN and RST seen, per direction.
    pub syn: [bool; 2],
    /// FIN seen per direction.
    pub fin: [bool; 2],
    /// RST seen per direction.
    pub rst: [bool; 2],
    /// Frame of the first FIN or RST each direction sent (0: none).
    pub end_frame: [u64; 2],
    /// History letters.
    pub history: History,
}

impl FlowRow {
    /// `F<index>`.
    pub fn flow_id(&self) -> String {
        FlowId(self.index).to_string()
    }

    /// The client's direction when nothing better is known: the SYN sender; on a mid-stream
    /// start the side without the lower well-known port (below 1024), else the first sender.
    pub fn client_guess(&self) -> Dir {
        let (p0, p1) = (self.ends[0].1, self.ends[1].1);
        if !self.client_by_syn && p0 < 1024 && p0 < p1 {
            1
        } else {
            0
        }
    }

    /// Zeek conn.log `history`, `client` being the client's direction.
    pub fn history_string(&self, client: Dir) -> String {
        self.history.string(client)
    }

    /// Append the row to `out`, encoded: varints, the addresses as 4 or 16 bytes.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let bits = |b: [bool; 2], at: u32| (u16::from(b[0]) | u16::from(b[1]) << 1) << at;
        let v6 = |ip: &IpAddr| ip.is_ipv6();
        let flags: u16 = u16::from(self.client_by_syn)
            | bits(self.syn, 1)
            | bits(self.fin, 3)
            | bits(self.rst, 5)
            | u16::from(v6(&self.ends[0].0)) << 7
            | u16::from(v6(&self.ends[1].0)) << 8;
        out.extend_from_slice(&flags.to_le_bytes());
        varint(out, self.index as u64);
        for (ip, port) in self.ends {
            match ip {
                IpAddr::V4(a) => out.extend_from_slice(&a.octets()),
                IpAddr::V6(a) => out.extend_from_slice(&a.octets()),
            }
            out.extend_from_slice(&port.to_le_bytes());
        }
        out.extend_from_slice(&self.ts_first.to_le_bytes());
        varint(out, zigzag(self.ts_last.wrapping_sub(self.ts_first)));
        varint(out, self.frame_first);
        varint(out, self.frame_last.wrapping_sub(self.frame_first));
        for pair in [
            self.packets,
            self.wire_bytes,
            self.missed,
            self.retransmitted,
            self.out_of_order,
        ] {
            varint(out, pair[0]);
            varint(out, pair[1]);
        }
        // Relative to the first frame, plus one (0: none).
        for f in self.end_frame {
            varint(
                out,
                if f == 0 {
                    0
                } else {
                    f.wrapping_sub(self.frame_first).wrapping_add(1)
                },
            );
        }
        out.push(self.history.len);
        out.extend_from_slice(&self.history.marks[..usize::from(self.history.len)]);
    }

    /// The row encoded at `at` in `b` ([`FlowRow::encode`]); `None` on bytes it did not write.
    pub fn decode(b: &[u8], at: usize) -> Option<FlowRow> {
        let mut r = Reader { b, i: at };
        let flags = u16::from_le_bytes(r.take(2)?.try_into().ok()?);
        let bit = |k: u32| flags >> k & 1 == 1;
        let index = r.varint()? as usize;
        let mut ends = [(IpAddr::from([0u8; 4]), 0u16); 2];
        for (k, end) in ends.iter_mut().enumerate() {
            let ip = if bit(7 + k as u32) {
                IpAddr::from(<[u8; 16]>::try_from(r.take(16)?).ok()?)
            } else {
                IpAddr::from(<[u8; 4]>::try_from(r.take(4)?).ok()?)
            };
            let port = u16::from_le_bytes(r.take(2)?.try_into().ok()?);
            *end = (ip, port);
        }
        let ts_first = i64::from_le_bytes(r.take(8)?.try_into().ok()?);
        let ts_last = ts_first.wrapping_add(unzigzag(r.varint()?));
        let frame_first = r.varint()?;
        let frame_last = frame_first.wrapping_add(r.varint()?);
        let mut pairs = [[0u64; 2]; 5];
        for p in &mut pairs {
            *p = [r.varint()?, r.varint()?];
        }
        let mut end_frame = [0u64; 2];
        for f in &mut end_frame {
            let v = r.varint()?;
            *f = if v == 0 {
                0
            } else {
                frame_first.wrapping_add(v - 1)
            };
        }
        let len = *r.take(1)?.first()?;
        let mut history = History::default();
        let marks = r.take(usize::from(len).min(10))?;
        history.marks[..marks.len()].copy_from_slice(marks);
        history.len = marks.len() as u8;
        Some(FlowRow {
            index,
            ends,
            client_by_syn: bit(0),
            packets: pairs[0],
            wire_bytes: pairs[1],
            ts_first,
            ts_last,
            frame_first,
            frame_last,
            missed: pairs[2],
            retransmitted: pairs[3],
            out_of_order: pairs[4],
            syn: [bit(1), bit(2)],
            fin: [bit(3), bit(4)],
            rst: [bit(5), bit(6)],
            end_frame,
            history,
        })
    }
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.i..self.i.checked_add(n)?)?;
        self.i += n;
        Some(s)
    }
    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self.take(1)?.first()?;
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A row comes back as it was encoded, whatever its values, among other rows.
        #[test]
        fn rows_come_back_as_encoded(
            index in any::<u32>(),
            v6 in any::<[bool; 2]>(),
            ports in any::<[u16; 2]>(),
            ts in any::<i64>(),
            dt in any::<i64>(),
            counts in any::<[u64; 12]>(),
            flags in any::<[bool; 7]>(),
            letters in prop::collection::vec((0usize..2, prop::sample::select(vec!['s', 'h', 'd', 'f', 'r'])), 0..12),
        ) {
            let ip = |k: usize, six: bool| if six {
                IpAddr::from([k as u8 + 1; 16])
            } else {
                IpAddr::from([10, 0, 0, k as u8])
            };
            let mut history = History::default();
            for (d, c) in letters {
                history.note(d, c);
            }
            let row = FlowRow {
                index: index as usize,
                ends: [(ip(0, v6[0]), ports[0]), (ip(1, v6[1]), ports[1])],
                client_by_syn: flags[0],
                packets: [counts[0], counts[1]],
                wire_bytes: [counts[2], counts[3]],
                ts_first: ts,
                ts_last: ts.wrapping_add(dt),
                frame_first: counts[10],
                frame_last: counts[10].wrapping_add(counts[11]),
                missed: [counts[4], counts[5]],
                retransmitted: [counts[6], counts[7]],
                out_of_order: [counts[8], counts[9]],
                syn: [flags[1], flags[2]],
                fin: [flags[3], flags[4]],
                rst: [flags[5], flags[6]],
                end_frame: [counts[10].wrapping_add(counts[0] % 3), 0],
                history,
            };
            let mut log = vec![7u8, 7];
            row.encode(&mut log);
            let end = log.len();
            row.encode(&mut log);
            prop_assert_eq!(FlowRow::decode(&log, 2), Some(row.clone()));
            prop_assert_eq!(FlowRow::decode(&log, end), Some(row));
        }
    }

    #[test]
    fn history_letters_once_per_direction() {
        let mut h = History::default();
        for (d, c) in [
            (0, 's'),
            (1, 'h'),
            (0, 'd'),
            (0, 'd'),
            (1, 'd'),
            (0, 'f'),
            (1, 'f'),
        ] {
            h.note(d, c);
        }
        assert_eq!(h.string(0), "ShDdFf");
        assert_eq!(h.string(1), "sHdDfF");
        assert_eq!(FlowRow::decode(&[1, 2, 3], 0), None);
    }
}
