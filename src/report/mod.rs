//! Rows → tables → terminal, CSV, Parquet and NDJSON; the exchanges also as HAR ([`har`]).
//!
//! Stages collect plain rows; this module turns them into [`Table`]s (named,
//! typed columns with snake_case names, Zeek style) and builds polars
//! DataFrames only at the end, once per table. Every format gets the same
//! columns. Times are microseconds since the Unix epoch in the rows and
//! UTC datetimes (microsecond precision) in the tables.

pub mod har;
pub mod html;
pub mod tables;
pub mod wireshark;

/// The tables `analyze` writes with `--format csv|parquet`, in order (file stems).
pub const TABLE_NAMES: [&str; 11] = [
    "sessions",
    "streams",
    "resumptions",
    "findings",
    "calls",
    "events",
    "exchanges",
    "flows",
    "anomalies",
    "vantages",
    "files",
];

use std::io::Write;

use polars::prelude::*;

/// A text column in one buffer (Arrow style: values end to end, with their end offsets), so
/// that large tables are built without an allocation per cell.
#[derive(Debug, Clone, Default)]
pub struct Text {
    buf: String,
    /// End offset in `buf` of each value, and whether it is present.
    cells: Vec<(usize, bool)>,
}

impl Text {
    /// An empty column with room for `rows` values.
    pub fn with_capacity(rows: usize) -> Text {
        Text {
            buf: String::new(),
            cells: Vec::with_capacity(rows),
        }
    }
    /// Append a value (`None`: missing).
    pub fn push(&mut self, v: Option<&str>) {
        if let Some(v) = v {
            self.buf.push_str(v);
        }
        self.cells.push((self.buf.len(), v.is_some()));
    }
    /// Append a value written by `f` into the buffer; `f` returns whether there is a value
    /// (what it wrote is dropped when it returns false).
    pub fn push_with(&mut self, f: impl FnOnce(&mut String) -> bool) {
        let start = self.buf.len();
        let present = f(&mut self.buf);
        if !present {
            self.buf.truncate(start);
        }
        self.cells.push((self.buf.len(), present));
    }
    /// Number of values.
    pub fn len(&self) -> usize {
        self.cells.len()
    }
    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }
    /// The `i`-th value (`None` when missing or out of range).
    pub fn get(&self, i: usize) -> Option<&str> {
        let &(end, present) = self.cells.get(i)?;
        let start = i.checked_sub(1).map_or(0, |p| self.cells[p].0);
        present.then(|| self.buf.get(start..end)).flatten()
    }
    /// The values in order.
    pub fn iter(&self) -> impl Iterator<Item = Option<&str>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }
}

impl<S: AsRef<str>> FromIterator<Option<S>> for Text {
    fn from_iter<I: IntoIterator<Item = Option<S>>>(iter: I) -> Text {
        let iter = iter.into_iter();
        let mut t = Text::with_capacity(iter.size_hint().0);
        for v in iter {
            t.push(v.as_ref().map(AsRef::as_ref));
        }
        t
    }
}

/// Values of one column.
#[derive(Debug, Clone)]
pub enum Values {
    /// Text, in one buffer per column.
    Str(Text),
    /// Signed integers.
    I64(Vec<Option<i64>>),
    /// Unsigned integers.
    U64(Vec<Option<u64>>),
    /// Floats.
    F64(Vec<Option<f64>>),
    /// Booleans.
    Bool(Vec<Option<bool>>),
    /// Times, microseconds since the Unix epoch.
    Ts(Vec<Option<i64>>),
}

/// A named table of typed columns, all of the same length.
#[derive(Debug, Clone)]
pub struct Table {
    /// File stem and title: `findings`, `sessions`, …
    pub name: &'static str,
    /// Columns in order.
    pub columns: Vec<(&'static str, Values)>,
}

impl Table {
    /// Number of rows.
    pub fn height(&self) -> usize {
        self.columns
            .first()
            .map(|(_, v)| match v {
                Values::Str(x) => x.len(),
                Values::I64(x) | Values::Ts(x) => x.len(),
                Values::U64(x) => x.len(),
                Values::F64(x) => x.len(),
                Values::Bool(x) => x.len(),
            })
            .unwrap_or(0)
    }

    /// Build the polars DataFrame; times are `Datetime(µs, UTC)`.
    pub fn to_dataframe(&self) -> PolarsResult<DataFrame> {
        self.frame(true)
    }

    /// The DataFrame, times zoned UTC or (for the terminal: polars formats zoned times only with
    /// its `timezones` feature) without a zone.
    fn frame(&self, zoned: bool) -> PolarsResult<DataFrame> {
        let mut cols: Vec<Column> = Vec::with_capacity(self.columns.len());
        for (name, v) in &self.columns {
            let name: PlSmallStr = (*name).into();
            let s = match v {
                Values::Str(x) => StringChunked::from_iter_options(name, x.iter()).into_series(),
                Values::I64(x) => Series::new(name, x),
                Values::U64(x) => Series::new(name, x),
                Values::F64(x) => Series::new(name, x),
                Values::Bool(x) => Series::new(name, x),
                // Marked UTC (a cast to a zoned type leaves the zone out). Clamped to the years
                // 1 to 9999 as frames are (a time shifted past them cannot be formatted).
                Values::Ts(x) => Int64Chunked::from_iter_options(
                    name,
                    x.iter().map(|t| t.map(crate::capture::clamp_ts)),
                )
                .into_datetime(TimeUnit::Microseconds, zoned.then_some(TimeZone::UTC))
                .into_series(),
            };
            cols.push(s.into());
        }
        DataFrame::new_infer_height(cols)
    }

    /// Write one JSON object per row, keys in column order.
    pub fn write_ndjson(&self, w: &mut impl Write) -> std::io::Result<()> {
        for i in 0..self.height() {
            let mut obj = serde_json::Map::new();
            for (name, v) in &self.columns {
                let val = match v {
                    Values::Str(x) => x.get(i).map(|v| serde_json::Value::String(v.to_string())),
                    Values::I64(x) => x[i].map(Into::into),
                    Values::U64(x) => x[i].map(Into::into),
                    Values::F64(x) => x[i]
                        .and_then(serde_json::Number::from_f64)
                        .map(serde_json::Value::Number),
                    Values::Bool(x) => x[i].map(Into::into),
                    Values::Ts(x) => x[i]
                        .map(|t| serde_json::Value::String(format_ts(crate::capture::clamp_ts(t)))),
                };
                obj.insert((*name).to_string(), val.unwrap_or(serde_json::Value::Null));
            }
            serde_json::to_writer(&mut *w, &obj)?;
            w.write_all(b"\n")?;
        }
        Ok(())
    }
}

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Terminal tables.
    Table,
    /// One CSV file per table.
    Csv,
    /// One Parquet file per table.
    Parquet,
    /// One JSON object per row: the findings on stdout, or one `.ndjson` file per table.
    Ndjson,
    /// The `exchanges` as one HAR 1.2 document ([`har::write_har`]); not a table format.
    Har,
}

/// Write one table given as consecutive pieces (same columns, rows in order) to `w`, one piece
/// in memory at a time: CSV (`format` [`Format::Csv`]) with one header, NDJSON
/// ([`Format::Ndjson`]) one object per row, Parquet (any other format: the terminal's and HAR
/// are not written from pieces of a table) with a row group per piece. Callers give at least one (possibly empty) piece: without one, nothing is written (not
/// even CSV's header or Parquet's footer). `w` is written as it comes: a caller writing to a
/// file buffers it (the Parquet writer's metadata comes in writes of a few bytes each).
///
/// Errors: a piece cannot be made a DataFrame, or writing fails (the I/O error is kept, so a
/// caller can tell a closed pipe).
pub fn write_chunks_to(
    w: &mut impl Write,
    chunks: impl IntoIterator<Item = Table>,
    format: Format,
) -> PolarsResult<()> {
    let mut chunks = chunks.into_iter();
    let Some(first) = chunks.next() else {
        return Ok(());
    };
    match format {
        Format::Csv => {}
        Format::Ndjson => {
            for t in std::iter::once(first).chain(chunks) {
                t.write_ndjson(w)?;
            }
            return Ok(());
        }
        _ => return write_parquet(w, first, chunks),
    }
    let df = first.to_dataframe()?;
    // One piece in memory at a time: its rows are in `df` now.
    drop(first);
    // ISO 8601 with the zone, as in NDJSON: `2026-11-29T22:24:30.063117Z`.
    let mut w = CsvWriter::new(w)
        .include_header(true)
        .with_datetime_format(Some("%Y-%m-%dT%H:%M:%S%.6fZ".into()))
        .batched(df.schema())?;
    w.write_batch(&df)?;
    for t in chunks {
        w.write_batch(&t.to_dataframe()?)?;
    }
    w.finish()
}

/// The Arrow type of a column in the Parquet files: text is `large_string` (offsets and bytes,
/// the type every Arrow reader filters and joins on; polars' own `string_view` is not handled
/// by pyarrow's compute kernels), times `timestamp[us, tz=UTC]`.
fn arrow_type(v: &Values) -> ArrowDataType {
    match v {
        Values::Str(_) => ArrowDataType::LargeUtf8,
        Values::I64(_) => ArrowDataType::Int64,
        Values::U64(_) => ArrowDataType::UInt64,
        Values::F64(_) => ArrowDataType::Float64,
        Values::Bool(_) => ArrowDataType::Boolean,
        Values::Ts(_) => ArrowDataType::Timestamp(
            polars_arrow::datatypes::TimeUnit::Microsecond,
            Some("UTC".into()),
        ),
    }
}

/// One column as an Arrow array, without copying its text: a [`Text`] already is Arrow's
/// layout (values end to end, end offsets).
fn arrow_array(v: Values) -> PolarsResult<Box<dyn polars_arrow::array::Array>> {
    use polars_arrow::array::{BooleanArray, PrimitiveArray, Utf8Array};
    use polars_arrow::bitmap::Bitmap;
    use polars_arrow::offset::OffsetsBuffer;
    // A validity bitmap only when a value is missing.
    fn validity(present: impl ExactSizeIterator<Item = bool> + Clone) -> Option<Bitmap> {
        present.clone().any(|p| !p).then(|| present.collect())
    }
    fn primitive<T: polars_arrow::types::NativeType + Default>(
        dtype: ArrowDataType,
        x: Vec<Option<T>>,
    ) -> Box<dyn polars_arrow::array::Array> {
        let valid = validity(x.iter().map(Option::is_some));
        let values: Vec<T> = x.into_iter().map(Option::unwrap_or_default).collect();
        Box::new(PrimitiveArray::new(dtype, values.into(), valid))
    }
    let dtype = arrow_type(&v);
    Ok(match v {
        Values::Str(t) => {
            let mut offsets: Vec<i64> = Vec::with_capacity(t.cells.len() + 1);
            offsets.push(0);
            offsets.extend(t.cells.iter().map(|&(end, _)| end as i64));
            let valid = validity(t.cells.iter().map(|&(_, p)| p));
            Box::new(Utf8Array::<i64>::try_new(
                dtype,
                OffsetsBuffer::try_from(offsets)?,
                t.buf.into_bytes().into(),
                valid,
            )?)
        }
        Values::I64(x) => primitive(dtype, x),
        Values::U64(x) => primitive(dtype, x),
        Values::F64(x) => primitive(dtype, x),
        // Clamped to the years 1 to 9999, as frames are (and as the other formats write them).
        Values::Ts(x) => primitive(
            dtype,
            x.into_iter()
                .map(|t| t.map(crate::capture::clamp_ts))
                .collect(),
        ),
        Values::Bool(x) => {
            let valid = validity(x.iter().map(Option::is_some));
            let values: Bitmap = x.iter().map(|b| b.unwrap_or(false)).collect();
            Box::new(BooleanArray::new(dtype, values, valid))
        }
    })
}

/// The Parquet half of [`write_chunks_to`]: one row group per piece, each column built as an
/// Arrow array straight from the table (no DataFrame) and written through polars-parquet, so
/// that each column's type and encoding are chosen here.
///
/// - Text is `large_string`; integers keep their sign (`uint64` for counts, frame numbers and
///   ports), times are `timestamp[us, tz=UTC]`.
/// - Statistics are complete: null count, minimum and maximum, for every column chunk and in
///   the page index. A page index whose pages have a null count but no minimum and maximum
///   marks every page a null page, and DuckDB, which reads it, then skips every page under a
///   filter (no rows for any `WHERE`, and none for joins it pushes filters into). Minima and
///   maxima cost about 4 % of a one-core run (instructions, `bench/README.md`) and let readers
///   skip row groups by time and frame.
/// - Text columns are written `PLAIN`. polars' writer tries a dictionary on every text
///   column of every row group: a cardinality estimate, then a hash of each value; on the
///   `events` table of a large capture that was about 6% of a whole run on one core, for files
///   about 15% smaller. Snappy still folds the repeats within a page.
/// - 64-bit numbers and times are written `PLAIN` too (a dictionary costs a hash of each
///   value, 1.9 % of a one-core run, for files about 4 % smaller). Booleans keep polars'
///   choice.
/// - Snappy, the codec every Parquet reader has: zstd made files half the size but took about
///   5% of a whole run on one core.
///
/// The file's footer holds the Arrow schema, as polars' writer puts it there.
fn write_parquet(
    w: &mut impl Write,
    first: Table,
    rest: impl Iterator<Item = Table>,
) -> PolarsResult<()> {
    use polars_parquet::write::{
        get_dtype_encoding, row_group_iter, CompressionOptions, Encoding, FileWriter, Version,
        WriteOptions,
    };
    let schema: polars_arrow::datatypes::ArrowSchema = first
        .columns
        .iter()
        .map(|(name, v)| {
            let name: PlSmallStr = (*name).into();
            (
                name.clone(),
                polars_arrow::datatypes::Field::new(name, arrow_type(v), true),
            )
        })
        .collect();
    let schema = std::sync::Arc::new(schema);
    let encodings: Vec<Vec<Encoding>> = schema
        .iter_values()
        .map(|f| match f.dtype {
            ArrowDataType::LargeUtf8
            | ArrowDataType::Int64
            | ArrowDataType::UInt64
            | ArrowDataType::Float64
            | ArrowDataType::Timestamp(..) => vec![Encoding::Plain],
            _ => get_dtype_encoding(&f.dtype),
        })
        .collect();
    let options = WriteOptions {
        statistics: StatisticsOptions {
            min_value: true,
            max_value: true,
            distinct_count: false,
            null_count: true,
            binary_statistics_truncate_length: None,
        },
        version: Version::V1,
        compression: CompressionOptions::Snappy,
        data_page_size: None,
    };
    let mut file = FileWriter::try_new(w, (*schema).clone(), options)?;
    let fields = file.parquet_schema().fields().to_vec();
    for t in std::iter::once(first).chain(rest) {
        let rows = t.height();
        if rows == 0 {
            continue;
        }
        let arrays = t
            .columns
            .into_iter()
            .map(|(_, v)| arrow_array(v))
            .collect::<PolarsResult<Vec<_>>>()?;
        let batch =
            polars_arrow::record_batch::RecordBatchT::try_new(rows, schema.clone(), arrays)?;
        let group = row_group_iter(batch, encodings.clone().into(), fields.clone(), options);
        file.write(rows as u64, group)?;
    }
    file.end(None).map(drop)
}

/// Whether a write failed because the reader of a pipe went away.
pub fn is_broken_pipe(e: &PolarsError) -> bool {
    match e {
        PolarsError::IO { error, .. } => error.kind() == std::io::ErrorKind::BrokenPipe,
        PolarsError::Context { error, .. } => is_broken_pipe(error),
        _ => false,
    }
}

/// A table that could not be rendered for the terminal ([`render`]): its columns do not make a
/// DataFrame (columns of different lengths, or two of one name).
///
/// The message is `table <name>: <polars' reason>`; the polars error is in it, so it is not
/// given again as the error's `source`.
#[derive(Debug, thiserror::Error)]
#[error("table {table}: {error}")]
pub struct RenderError {
    /// The table's name ([`Table::name`]).
    pub table: &'static str,
    /// Why polars refused its columns.
    pub error: PolarsError,
}

/// Render a table for the terminal: its name and row count, then the polars rendering (times
/// without a zone); the text ends with a newline.
///
/// Errors: [`RenderError`] when the columns do not make a DataFrame.
pub fn render(t: &Table) -> Result<String, RenderError> {
    let df = t.frame(false).map_err(|error| RenderError {
        table: t.name,
        error,
    })?;
    Ok(format!("{} ({} rows)\n{}\n", t.name, t.height(), df))
}

/// `YYYY-MM-DDTHH:MM:SS.ffffffZ` for microseconds since the Unix epoch (proleptic Gregorian, UTC).
pub fn format_ts(us: i64) -> String {
    let secs = us.div_euclid(1_000_000);
    let frac = us.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
        y,
        m,
        d,
        sod / 3600,
        (sod % 3600) / 60,
        sod % 60,
        frac
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ts_format() {
        assert_eq!(format_ts(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(
            format_ts(1_795_991_032_169_000),
            "2026-11-29T22:23:52.169000Z"
        );
        assert_eq!(format_ts(-1), "1969-12-31T23:59:59.999999Z");
    }
}
