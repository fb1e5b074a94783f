//! The timeline of one session as an inline SVG: capture time across (long idle stretches
//! compressed and marked), one lane per connection, its events as ticks, its end marked with
//! its frame, an arrow from the event a `Last-Event-ID` names to the connection that resumed
//! from it, and each finding marked where its frames are. Every mark has a `<title>`, which
//! browsers show on hover.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::esc;
use super::view::{event_class, event_words, Conn, SessionView};
use crate::detect::{Analysis, Verdict};
use crate::http::Exchange;
use crate::tcp::FlowId;

/// Width of the whole picture, of the lane labels, and of a compressed idle stretch, in px.
const WIDTH: f64 = 1200.0;
const LABEL_W: f64 = 270.0;
const RIGHT_PAD: f64 = 24.0;
const BREAK_W: f64 = 34.0;
/// Height of the time axis and of one lane, in px.
const AXIS_H: f64 = 34.0;
const LANE_H: f64 = 42.0;
/// A pause is compressed when longer than this (µs) and than a tenth of the session's span.
const IDLE_US: i64 = 1_000_000;

/// Capture time → x, with the pauses between bursts of activity compressed to [`BREAK_W`].
#[derive(Debug, Clone)]
pub struct Axis {
    /// Runs of activity: (first time, last time, first x, last x).
    runs: Vec<(i64, i64, f64, f64)>,
}

impl Axis {
    /// The axis over `instants` (every time something is drawn at), spread over
    /// `x0..x0 + width`.
    pub fn new(mut instants: Vec<i64>, x0: f64, width: f64) -> Axis {
        instants.sort_unstable();
        instants.dedup();
        let (Some(&first), Some(&last)) = (instants.first(), instants.last()) else {
            return Axis {
                runs: vec![(0, 0, x0, x0 + width)],
            };
        };
        let span = last - first;
        let idle = IDLE_US.max(span / 10);
        let mut spans: Vec<(i64, i64)> = vec![(first, first)];
        for w in instants.windows(2) {
            let last_run = spans.last_mut().expect("one run at least");
            if w[1] - w[0] > idle && span > 0 {
                spans.push((w[1], w[1]));
            } else {
                last_run.1 = w[1];
            }
        }
        let breaks = (spans.len() - 1) as f64;
        let active: i64 = spans.iter().map(|(a, b)| b - a).sum();
        // Each run's share of the width: its duration, plus a minimum so an instant shows.
        let floor = (active.max(1) as f64) / (12.0 * spans.len() as f64);
        let weights: Vec<f64> = spans.iter().map(|(a, b)| (b - a) as f64 + floor).collect();
        let total: f64 = weights.iter().sum();
        let usable = (width - breaks * BREAK_W).max(width / 2.0);
        let mut x = x0;
        let mut runs = Vec::with_capacity(spans.len());
        for ((a, b), w) in spans.iter().zip(&weights) {
            let wpx = usable * w / total;
            runs.push((*a, *b, x, x + wpx));
            x += wpx + BREAK_W;
        }
        Axis { runs }
    }

    /// The x of time `t`.
    pub fn x(&self, t: i64) -> f64 {
        let k = self.runs.partition_point(|r| r.0 <= t).saturating_sub(1);
        let (a, b, x0, x1) = self.runs[k];
        if t <= a {
            return x0;
        }
        if t <= b {
            return x0 + (x1 - x0) * ((t - a) as f64 / (b - a).max(1) as f64);
        }
        match self.runs.get(k + 1) {
            Some(&(na, _, nx0, _)) => x1 + (nx0 - x1) * ((t - b) as f64 / (na - b).max(1) as f64),
            None => x1,
        }
    }

    /// The compressed pauses: (x where it starts, x where it ends, its length in µs).
    pub fn breaks(&self) -> impl Iterator<Item = (f64, f64, i64)> + '_ {
        self.runs
            .windows(2)
            .map(|w| (w[0].3, w[1].2, w[1].0 - w[0].1))
    }
}

/// `HH:MM:SS.mmm` of a time, UTC.
pub fn clock(us: i64) -> String {
    let t = crate::report::format_ts(us);
    t.get(11..23).unwrap_or(&t).to_string()
}

/// A duration as a person reads it: `850 µs`, `2 ms`, `1.25 s`, `3 min 5 s`.
pub fn duration(us: i64) -> String {
    let us = us.max(0);
    match us {
        0..=999 => format!("{us} µs"),
        1_000..=9_999 => format!("{:.1} ms", us as f64 / 1e3),
        10_000..=999_999 => format!("{} ms", us / 1_000),
        1_000_000..=59_999_999 => format!("{:.2} s", us as f64 / 1e6),
        _ => format!("{} min {} s", us / 60_000_000, (us / 1_000_000) % 60),
    }
}

/// The CSS class of a resumption verdict's arrow: `ok`, `warn` or `bad`.
pub fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Resumed => "ok",
        Verdict::Unverifiable | Verdict::Rejected => "warn",
        _ => "bad",
    }
}

/// The SVG of `view`'s session.
pub fn svg(a: &Analysis, ex: &[Exchange], view: &SessionView<'_>) -> String {
    let lane_y = |i: usize| AXIS_H + LANE_H * (i as f64 + 1.0);
    let mut instants: Vec<i64> = Vec::new();
    for c in &view.conns {
        instants.extend([c.start, c.end]);
        instants.extend(ex[c.x].sse.events.iter().map(|ev| ev.sse.ts));
    }
    instants.extend(view.others.iter().map(|o| ex[o.x].ts()));
    instants.extend(view.findings.iter().map(|(_, f)| f.ts));
    let axis = Axis::new(instants, LABEL_W + 8.0, WIDTH - LABEL_W - 8.0 - RIGHT_PAD);
    let lanes = view.conns.len() + 1;
    let height = AXIS_H + LANE_H * (lanes as f64 + 0.6) + 8.0;
    let mut s = String::with_capacity(8192);
    let _ = write!(
        s,
        r#"<svg class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height:.0}" width="{WIDTH}" height="{height:.0}" role="img" aria-label="timeline of the session's connections">"#
    );
    s.push_str(r#"<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="context-stroke"/></marker></defs>"#);
    axis_marks(&mut s, &axis, height);
    // The request lane: the session's exchanges without an event stream.
    let y0 = lane_y(0);
    let _ = write!(
        s,
        r#"<text class="lane-label" x="8" y="{:.1}">requests</text><line class="lane" x1="{:.1}" x2="{:.1}" y1="{y0:.1}" y2="{y0:.1}"/>"#,
        y0 + 4.0,
        LABEL_W,
        WIDTH - RIGHT_PAD
    );
    // At most one mark per pixel and kind (a client polling a hundred thousand times would
    // otherwise draw as many); its title counts the exchanges it stands for.
    let mut marks: Vec<(i64, bool, usize, String)> = Vec::new();
    let mut at: HashMap<(i64, bool), usize> = HashMap::new();
    for o in &view.others {
        let e = &ex[o.x];
        let key = (axis.x(e.ts()).round() as i64, super::view::refused(e));
        match at.get(&key) {
            Some(&k) => marks[k].2 += 1,
            None => {
                at.insert(key, marks.len());
                let title = format!(
                    "{} · frame {} · {} · {}",
                    esc(&o.label),
                    e.frame(),
                    clock(e.ts()),
                    FlowId(e.flow_index)
                );
                marks.push((key.0, key.1, 1, title));
            }
        }
    }
    for (x, refused, n, title) in marks {
        let class = if refused { "req-mark bad" } else { "req-mark" };
        let more = if n > 1 {
            format!("\n(and {} more exchanges here)", n - 1)
        } else {
            String::new()
        };
        let _ = write!(
            s,
            r#"<circle class="{class}" cx="{x}" cy="{y0:.1}" r="4"><title>{title}{more}</title></circle>"#
        );
    }
    for (i, c) in view.conns.iter().enumerate() {
        lane(&mut s, ex, c, &axis, lane_y(i + 1));
    }
    arrows(&mut s, a, ex, view, &axis, &lane_y);
    finding_marks(&mut s, ex, view, &axis, &lane_y);
    s.push_str("</svg>");
    s
}

/// The time labels along the top and the compressed pauses across every lane.
fn axis_marks(s: &mut String, axis: &Axis, height: f64) {
    // Where the last clock label ends: one that would overlap it is left out.
    let mut label_end = f64::MIN;
    for &(a, b, x0, x1) in &axis.runs {
        let _ = write!(
            s,
            r#"<line class="tick" x1="{x0:.1}" x2="{x0:.1}" y1="{:.1}" y2="{:.1}"/>"#,
            AXIS_H - 10.0,
            height - 4.0,
        );
        if x0 > label_end {
            let _ = write!(
                s,
                r#"<text class="axis" x="{x0:.1}" y="14">{}</text>"#,
                clock(a)
            );
            label_end = x0 + 90.0;
        }
        // Relative marks inside a wide run.
        let n = ((x1 - x0) / 170.0).floor() as i64;
        for k in 1..=n.min(8) {
            let t = a + (b - a) * k / (n + 1);
            let x = axis.x(t);
            let _ = write!(
                s,
                r#"<line class="tick minor" x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{:.1}"/><text class="axis minor" x="{x:.1}" y="28">:{}</text>"#,
                AXIS_H - 6.0,
                height - 4.0,
                clock(t).get(6..).unwrap_or("")
            );
        }
    }
    for (x0, x1, idle) in axis.breaks() {
        let xm = (x0 + x1) / 2.0;
        let _ = write!(
            s,
            r#"<g class="idle"><title>{} without traffic of this session, compressed</title><rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}"/><path d="M{:.1},{:.1} l6,-5 l-12,-10 l6,-5"/><text x="{xm:.1}" y="28">idle {}</text></g>"#,
            duration(idle),
            x0 + 4.0,
            AXIS_H,
            (x1 - x0 - 8.0).max(2.0),
            height - AXIS_H - 4.0,
            xm,
            AXIS_H + 20.0,
            duration(idle)
        );
    }
}

/// One connection's lane at height `y`: its label, its bar, its events and its end.
fn lane(s: &mut String, ex: &[Exchange], c: &Conn, axis: &Axis, y: f64) {
    let e = &ex[c.x];
    let (x0, x1) = (axis.x(c.start), axis.x(c.end));
    let _ = write!(
        s,
        r#"<g class="conn" data-exchange="{}"><title>{} · {} {} · request frame {} · {} to {} ({})</title><text class="lane-label" x="8" y="{:.1}">{}</text><text class="lane-sub" x="8" y="{:.1}">{}</text><text class="lane-sub" x="8" y="{:.1}">{}</text><rect class="bar" x="{x0:.1}" y="{:.1}" width="{:.1}" height="10" rx="3"/></g>"#,
        c.x,
        esc(&c.label),
        esc(&c.sub),
        esc(c.backend.as_deref().unwrap_or("")),
        e.frame(),
        clock(c.start),
        clock(c.end),
        esc(c.how.label()),
        y - 7.0,
        esc(&c.label),
        y + 5.0,
        esc(&c.sub),
        y + 16.0,
        esc(c.backend.as_deref().unwrap_or("")),
        y - 5.0,
        (x1 - x0).max(2.0)
    );
    // Events, at most one tick per pixel column and class (a connection of 100 000 events
    // would otherwise draw 100 000 marks); the tick's title counts those it stands for.
    let mut ticks: HashMap<(i64, &str), (usize, String)> = HashMap::new();
    let mut order: Vec<(i64, &str)> = Vec::new();
    for ev in e.sse.events.iter() {
        let x = axis.x(ev.sse.ts);
        let class = event_class(&ev);
        let key = (x.round() as i64, class);
        match ticks.get_mut(&key) {
            Some(t) => t.0 += 1,
            None => {
                let id = ev.sse.id.filter(|_| ev.sse.has_own_id).unwrap_or("(none)");
                let title = format!(
                    "event id {} · frame {} · {}\n{} ({} bytes of data)",
                    id,
                    ev.sse.frame_first,
                    clock(ev.sse.ts),
                    event_words(&ev),
                    ev.data_len
                );
                ticks.insert(key, (1, title));
                order.push(key);
            }
        }
    }
    for key in order {
        let (n, title) = &ticks[&key];
        let more = if *n > 1 {
            format!("\n(and {} more events here)", n - 1)
        } else {
            String::new()
        };
        let h = if key.1 == "resp" { 22.0 } else { 14.0 };
        let _ = write!(
            s,
            r#"<rect class="ev {}" x="{:.1}" y="{:.1}" width="3" height="{h}"><title>{}{}</title></rect>"#,
            key.1,
            key.0 as f64 - 1.5,
            y - h / 2.0,
            esc(title),
            more
        );
    }
    // A cut's label sits under the bar, ending at the cut (the resumption's arrow leaves there).
    let (end_class, anchor, lx) = if c.how.is_cut() {
        ("end cut", "end", x1 - 3.0)
    } else if x1 > WIDTH - RIGHT_PAD - 110.0 {
        ("end", "end", x1 - 3.0)
    } else {
        ("end", "start", x1 + 3.0)
    };
    let _ = write!(
        s,
        r#"<g class="{end_class}"><title>{} in frame {} at {}</title><line x1="{x1:.1}" x2="{x1:.1}" y1="{:.1}" y2="{:.1}"/><text x="{lx:.1}" y="{:.1}" text-anchor="{anchor}">{} · frame {}</text></g>"#,
        esc(c.how.label()),
        c.end_frame,
        clock(c.end),
        y - 11.0,
        y + 11.0,
        y + 18.0,
        esc(c.how.label()),
        c.end_frame
    );
}

/// An arrow from the event each `Last-Event-ID` names to the connection that resumed from it.
fn arrows(
    s: &mut String,
    a: &Analysis,
    ex: &[Exchange],
    view: &SessionView<'_>,
    axis: &Axis,
    lane_y: &dyn Fn(usize) -> f64,
) {
    let lane_of: HashMap<usize, usize> = view
        .conns
        .iter()
        .enumerate()
        .map(|(i, c)| (c.x, i + 1))
        .collect();
    for &k in &view.resumptions {
        let r = &a.resumptions[k];
        let res = &a.model.resumptions[r.index];
        let Some(&to) = lane_of.get(&res.exchange) else {
            continue;
        };
        let (tx, ty) = (axis.x(ex[res.exchange].ts()), lane_y(to));
        let class = verdict_class(r.verdict);
        let title = format!(
            "resumed with Last-Event-ID {} (frame {}): {} — {}",
            res.last_event_id,
            ex[res.exchange].frame(),
            r.verdict.as_str(),
            r.reason
        );
        let from = res.cursor.and_then(|(cx, ei)| {
            let lane = lane_of.get(&cx)?;
            let ev = ex[cx].sse.events.iter().nth(ei)?;
            Some((axis.x(ev.sse.ts), lane_y(*lane)))
        });
        match from {
            Some((fx, fy)) => {
                let dx = (tx - fx).abs().max(30.0);
                let _ = write!(
                    s,
                    r#"<g class="resume {class}"><title>{}</title><path d="M{fx:.1},{:.1} C{:.1},{:.1} {:.1},{:.1} {tx:.1},{:.1}" marker-end="url(#arrow)"/><text x="{:.1}" y="{:.1}">Last-Event-ID {} → {}</text></g>"#,
                    esc(&title),
                    fy + 6.0,
                    fx + dx * 0.4,
                    fy + 20.0,
                    tx - dx * 0.6,
                    ty - 18.0,
                    ty - 7.0,
                    tx + 4.0,
                    ty + 18.0,
                    esc(&res.last_event_id),
                    r.verdict.as_str()
                );
            }
            None => {
                let _ = write!(
                    s,
                    r#"<g class="resume {class}"><title>{} (the event it names is not on this timeline)</title><text x="{:.1}" y="{:.1}">Last-Event-ID {} (not seen) → {}</text></g>"#,
                    esc(&title),
                    tx + 4.0,
                    ty + 18.0,
                    esc(&res.last_event_id),
                    r.verdict.as_str()
                );
            }
        }
    }
}

/// A numbered mark for each finding, on each lane holding a frame it cites (on the request lane
/// when none is drawn).
fn finding_marks(
    s: &mut String,
    ex: &[Exchange],
    view: &SessionView<'_>,
    axis: &Axis,
    lane_y: &dyn Fn(usize) -> f64,
) {
    // One spot per finding and lane (its earliest cited frame there); findings at the same spot
    // share one mark, their numbers side by side, so no number drifts off its event.
    type Spot<'f> = ((f64, f64), Vec<(usize, &'f crate::detect::Finding)>);
    let mut spots: Vec<Spot<'_>> = Vec::new();
    for &(n, f) in &view.findings {
        let mut mine: Vec<(f64, f64)> = Vec::new();
        for cited in &f.cited {
            if let Some(spot) = spot_of(ex, view, f, cited, axis, lane_y) {
                if !mine.iter().any(|p| p.1 == spot.1) {
                    mine.push(spot);
                }
            }
        }
        if mine.is_empty() {
            mine.push((axis.x(f.ts), lane_y(0)));
        }
        for spot in mine {
            match spots
                .iter_mut()
                .find(|(p, _)| (p.0 - spot.0).abs() < 4.0 && p.1 == spot.1)
            {
                Some((_, fs)) => fs.push((n, f)),
                None => spots.push((spot, vec![(n, f)])),
            }
        }
    }
    for ((x, y), fs) in spots {
        let w = 14.0 * fs.len() as f64;
        let worst = fs
            .iter()
            .map(|(_, f)| f.severity)
            .max()
            .map_or("info", |s| s.as_str());
        let cy = y - 20.0;
        let _ = write!(
            s,
            r#"<g class="finding-mark {worst}"><line x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{:.1}"/><rect x="{:.1}" y="{:.1}" width="{w:.1}" height="14" rx="7"/>"#,
            cy + 7.0,
            y - 6.0,
            x - 7.0,
            cy - 7.0,
        );
        for (k, (n, f)) in fs.iter().enumerate() {
            let _ = write!(
                s,
                r##"<a href="#f-{n}"><text x="{:.1}" y="{:.1}"><title>[{n}] {} ({}): {}</title>{n}</text></a>"##,
                x + 14.0 * k as f64,
                cy + 3.5,
                f.kind.as_str(),
                f.severity.as_str(),
                esc(&f.detail),
            );
        }
        s.push_str("</g>");
    }
}

/// Where frame `cited` of `f` is drawn: the event of a drawn connection on its flow that holds
/// it, else that connection's request or end; `None` when no drawn connection holds it (a frame
/// of a proxy's other leg, of another session).
fn spot_of(
    ex: &[Exchange],
    view: &SessionView<'_>,
    f: &crate::detect::Finding,
    cited: &crate::detect::Cited,
    axis: &Axis,
    lane_y: &dyn Fn(usize) -> f64,
) -> Option<(f64, f64)> {
    let fr = cited.frame;
    let (i, c) = view.conns.iter().enumerate().find(|(_, c)| {
        let e = &ex[c.x];
        let last = e.frame_last.unwrap_or(e.frame()).max(c.end_frame);
        e.flow_index == cited.flow_index && (e.frame()..=last).contains(&fr)
    })?;
    let e = &ex[c.x];
    let t = match e
        .sse
        .events
        .iter()
        .find(|ev| (ev.sse.frame_first..=ev.sse.frame_last).contains(&fr))
    {
        Some(ev) => ev.sse.ts,
        None if fr == c.end_frame => c.end,
        None if fr == e.frame() => c.start,
        None => f.ts.clamp(c.start, c.end),
    };
    Some((axis.x(t), lane_y(i + 1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_pause_is_compressed_and_time_only_moves_right() {
        // Two bursts of 100 ms, 60 s apart.
        let t0 = 1_000_000_000;
        let mut instants: Vec<i64> = (0..=10).map(|k| t0 + k * 10_000).collect();
        instants.extend((0..=10).map(|k| t0 + 60_000_000 + k * 10_000));
        let axis = Axis::new(instants.clone(), 100.0, 900.0);
        let breaks: Vec<_> = axis.breaks().collect();
        assert_eq!(breaks.len(), 1);
        let (x0, x1, idle) = breaks[0];
        assert_eq!(idle, 60_000_000 - 100_000);
        assert!(
            (x1 - x0 - BREAK_W).abs() < 1e-9,
            "the pause is {BREAK_W} px wide"
        );
        // Each burst gets about half of what is left.
        assert!((axis.x(t0 + 100_000) - 100.0 - (900.0 - BREAK_W) / 2.0).abs() < 1.0);
        let xs: Vec<f64> = (0..200).map(|k| axis.x(t0 - 1_000 + k * 310_000)).collect();
        assert!(xs.windows(2).all(|w| w[0] <= w[1]), "x grows with time");
        assert_eq!(axis.x(t0 - 5), 100.0);
        assert!((axis.x(i64::MAX) - 1000.0).abs() < 1e-6);
    }

    #[test]
    fn nothing_and_one_instant_still_draw() {
        let axis = Axis::new(Vec::new(), 10.0, 100.0);
        assert!((10.0..=110.0).contains(&axis.x(42)));
        let axis = Axis::new(vec![5, 5], 10.0, 100.0);
        assert_eq!(axis.breaks().count(), 0);
        assert!(axis.x(5) >= 10.0 && axis.x(5) <= 110.0);
    }

    #[test]
    fn durations_and_clocks_read_as_written() {
        assert_eq!(duration(850), "850 µs");
        assert_eq!(duration(2_000), "2.0 ms");
        assert_eq!(duration(304_000), "304 ms");
        assert_eq!(duration(1_250_000), "1.25 s");
        assert_eq!(duration(185_000_000), "3 min 5 s");
        assert_eq!(clock(1_764_455_070_061_000), "22:24:30.061");
    }
}
