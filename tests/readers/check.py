"""The tables of one capture as analysts' tools read them.

Usage: check.py DIR TABLES_MD

DIR holds csv/, parquet/ and ndjson/, each with one file per table written by
`mcpcap analyze --out`. TABLES_MD is docs/tables.md, whose column lists give each
column's type. For every table, every reader must give:

- the row count of the CSV file (read with Python's csv module, the reference);
- for a filter on a text column, an integer column and a timestamp column, exactly
  the rows the CSV file has for it;
- the columns and types docs/tables.md gives.

And two joins must give the rows computed from the CSV files: findings with the
exchange whose frames hold their frame, on its flow; events with their stream.

Readers: DuckDB (Parquet, read_csv auto-detection, read_json), pyarrow (Parquet,
dataset API with a filter), pandas, polars, DataFusion (Parquet), Python's csv
module, jq (NDJSON). Exits 1 with one line per failure.
"""

import csv
import datetime as dt
import json
import math
import os
import re
import subprocess
import sys

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import datafusion

UTC = dt.timezone.utc

# Per table: (text column, integer column, timestamp column) to filter on.
FILTERS = {
    "sessions": ("verdict", "exchanges", "ts_first"),
    "streams": ("kind", "events", "ts"),
    "resumptions": ("verdict", "frame", "ts"),
    "findings": ("severity", "frame", "ts"),
    "calls": ("method", "frame", "ts_request"),
    "events": ("jsonrpc_methods", "frame_first", "ts"),
    "exchanges": ("method", "status", "ts"),
    "flows": ("resp_h", "resp_p", "ts_first"),
    "anomalies": ("code", "frame", None),
    "vantages": ("vantage", "frames", "ts_first"),
    "files": ("vantage", "frames", "ts_first"),
}

failures = []
# Comparisons and type checks made, for the summary line.
checks = [0]


def fail(msg):
    failures.append(msg)


def doc_types(path):
    """{table: [(column, type)]} from the column lists of docs/tables.md."""
    out, table = {}, None
    for line in open(path, encoding="utf-8"):
        m = re.match(r"^## `([a-z_]+)`", line)
        if m:
            table = m.group(1)
            out[table] = []
            continue
        m = re.match(r"^\| `([a-z0-9_]+)` \| (text|uint64|int64|float64|bool|timestamp) \|", line)
        if m and table:
            out[table].append((m.group(1), m.group(2)))
    return out


def norm(v):
    """One value as comparable text: what the CSV file writes for it."""
    if v is None:
        return ""
    if isinstance(v, float) and math.isnan(v):
        return ""
    if v is pd.NaT:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (pd.Timestamp, dt.datetime)):
        if v.tzinfo is None:
            v = v.replace(tzinfo=UTC)
        v = v.astimezone(UTC)
        return v.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, (int, float)):
        f = float(v)
        if f.is_integer() and abs(f) < 2**63:
            return str(int(v)) if isinstance(v, int) else str(int(f))
        return repr(f)
    if hasattr(v, "item"):  # numpy scalars
        return norm(v.item())
    s = str(v)
    # Numbers written as text compare as numbers ("1.0" and 1.0 alike).
    if re.fullmatch(r"-?\d+(\.\d+)?([eE][-+]?\d+)?", s):
        return norm(float(s)) if "." in s or "e" in s.lower() else str(int(s))
    return s


def rows_of(records, columns):
    """Sorted tuples of normalized values, columns in order."""
    checks[0] += 1
    return sorted(tuple(norm(r.get(c)) for c in columns) for r in records)


def read_csv_module(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def parse_ts(s):
    return dt.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def pick_filters(table, rows, types):
    """(column, op, value) filters: the most common text value, integers and times at or above
    the median (each column's first filter that the table can apply)."""
    text_c, int_c, ts_c = FILTERS[table]
    out = []
    cols = dict(types)
    if not rows:
        return out
    values = [r[text_c] for r in rows if r[text_c] != ""]
    if values:
        out.append((text_c, "=", max(sorted(set(values)), key=values.count)))
    values = sorted(int(r[int_c]) for r in rows if r[int_c] != "")
    if values:
        out.append((int_c, ">=", values[len(values) // 2]))
    if ts_c:
        values = sorted(r[ts_c] for r in rows if r[ts_c] != "")
        if values:
            out.append((ts_c, ">=", values[len(values) // 2]))
    for c, _, _ in out:
        assert c in cols, (table, c)
    return out


def expected_rows(rows, columns, flt):
    c, op, v = flt
    def keep(r):
        x = r[c]
        if x == "":
            return False
        if op == "=":
            return x == v
        if isinstance(v, int):
            return int(x) >= v
        return parse_ts(x) >= parse_ts(v)
    return rows_of([r for r in rows if keep(r)], columns)


def sql_literal(flt, kind):
    c, op, v = flt
    if kind == "timestamp":
        return f"\"{c}\" {op} TIMESTAMPTZ '{v}'"
    if kind == "int":
        return f"\"{c}\" {op} {v}"
    return f"\"{c}\" {op} '{v}'"


def kind_of(flt, types):
    t = dict(types)[flt[0]]
    return "timestamp" if t == "timestamp" else ("int" if t in ("uint64", "int64") else "text")


def check_type(reader, table, col, doc, got):
    """Whether reader's type `got` (its own name, lower case) is the documented one."""
    checks[0] += 1
    got = got.lower()
    ok = {
        "text": ("string", "utf8", "varchar", "str", "object", "large_string", "string_view"),
        "uint64": ("uint64", "ubigint", "u64"),
        "int64": ("int64", "bigint", "i64"),
        "float64": ("double", "float64", "f64"),
        "bool": ("bool", "boolean"),
        "timestamp": ("timestamp",),
    }[doc]
    if doc == "timestamp":
        good = ("timestamp" in got or "datetime" in got) and ("utc" in got or "time zone" in got)
        good = good and ("us" in got or "micro" in got or "time zone" in got)
    else:
        good = any(got == k or got.startswith(k + "(") or got.startswith(k + "[") for k in ok)
    if not good:
        fail(f"{reader}: {table}.{col} is {got}, docs/tables.md says {doc}")


def arrow_type_name(t):
    if pa.types.is_timestamp(t):
        return f"timestamp[{t.unit}, tz={t.tz}]" if t.tz else f"timestamp[{t.unit}]"
    return str(t)


def guard(label, fn):
    """Run one reader's checks; its exception is a failure of that reader, not of the run."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the reader's failure is what is reported
        fail(f"{label}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")


def check_table(base, table, types):
    columns = [c for c, _ in types]
    csv_path = os.path.join(base, "csv", f"{table}.csv")
    pq_path = os.path.join(base, "parquet", f"{table}.parquet")
    nd_path = os.path.join(base, "ndjson", f"{table}.ndjson")
    ref = read_csv_module(csv_path)
    with open(csv_path, newline="", encoding="utf-8") as f:
        header = next(csv.reader(f))
    if header != columns:
        fail(f"csv: {table} columns {header}, docs/tables.md lists {columns}")
        return
    n = len(ref)
    all_rows = rows_of(ref, columns)
    filters = pick_filters(table, ref, types)
    expected = [expected_rows(ref, columns, f) for f in filters]

    con = duckdb.connect()
    readers = {}

    def _duckdb():
        # DuckDB on Parquet.
        def duck(src, label):
            def run(where=None):
                q = f"select * from {src}" + (f" where {where}" if where else "")
                cur = con.execute(q)
                names = [d[0] for d in cur.description]
                return [dict(zip(names, r)) for r in cur.fetchall()]
            readers[label] = run

        duck(f"read_parquet('{pq_path}')", "duckdb parquet")
        duck(f"read_csv('{csv_path}')", "duckdb read_csv")
        duck(f"read_json('{nd_path}')", "duckdb read_json")

        for label, run in readers.items():
            if label == "duckdb read_json" and n == 0:
                continue  # an empty NDJSON file has no columns to read
            got = run()
            if len(got) != n:
                fail(f"{label}: {table} has {len(got)} rows, the CSV {n}")
            elif rows_of(got, columns) != all_rows:
                fail(f"{label}: {table} rows differ from the CSV")
            for flt, want in zip(filters, expected):
                res = rows_of(run(sql_literal(flt, kind_of(flt, types))), columns)
                if res != want:
                    fail(f"{label}: {table} where {flt[0]} {flt[1]} {flt[2]!r}: {len(res)} rows, the CSV {len(want)}")

        # DuckDB's types, Parquet: exactly the documented ones.
        desc = con.execute(f"describe select * from read_parquet('{pq_path}')").fetchall()
        for (col, t, *_), (dcol, dt_) in zip(desc, types):
            check_type("duckdb parquet", table, col, dt_, t)
        # read_csv and read_json guess: times, booleans and counts must be guessed right wherever
        # the column has a value.
        for label, src, path in (("duckdb read_csv", "read_csv", csv_path), ("duckdb read_json", "read_json", nd_path)):
            if n == 0:
                continue
            desc = con.execute(f"describe select * from {src}('{path}')").fetchall()
            for (col, t, *_), (dcol, dt_) in zip(desc, types):
                if dt_ == "text" or all(r[col] == "" for r in ref):
                    continue
                want = {"uint64": "int64", "int64": "int64"}.get(dt_, dt_)
                if want == "int64" and t.upper() in ("BIGINT", "UBIGINT", "INTEGER", "UINTEGER", "SMALLINT", "USMALLINT", "TINYINT", "UTINYINT", "HUGEINT"):
                    continue
                if dt_ == "float64" and t.upper() in ("DOUBLE", "BIGINT", "UBIGINT"):
                    continue
                check_type(label, table, col, want if want != "int64" else "int64", t)


    guard(f"duckdb: {table}", _duckdb)

    def _pyarrow():
        # pyarrow.
        t = pq.read_table(pq_path)
        if t.num_rows != n:
            fail(f"pyarrow: {table} has {t.num_rows} rows, the CSV {n}")
        if t.column_names != columns:
            fail(f"pyarrow: {table} columns {t.column_names}")
        for col, dt_ in types:
            check_type("pyarrow", table, col, dt_, arrow_type_name(t.schema.field(col).type))
        if rows_of(t.to_pylist(), columns) != all_rows:
            fail(f"pyarrow: {table} rows differ from the CSV")
        dset = ds.dataset(pq_path)
        for flt, want in zip(filters, expected):
            c, op, v = flt
            k = kind_of(flt, types)
            value = parse_ts(v) if k == "timestamp" else v
            field = ds.field(c)
            if k == "timestamp":
                value = pa.scalar(value, type=pa.timestamp("us", tz="UTC"))
            expr = (field == value) if op == "=" else (field >= value)
            try:
                res = rows_of(dset.to_table(filter=expr).to_pylist(), columns)
            except Exception as e:  # noqa: BLE001 - the reader's failure is the finding
                fail(f"pyarrow dataset: {table} filter on {c}: {type(e).__name__}: {e}")
                continue
            if res != want:
                fail(f"pyarrow dataset: {table} where {c} {op} {v!r}: {len(res)} rows, the CSV {len(want)}")


    guard(f"pyarrow: {table}", _pyarrow)

    def _pandas():
        # pandas.
        df = pd.read_parquet(pq_path)
        if len(df) != n:
            fail(f"pandas: {table} has {len(df)} rows, the CSV {n}")
        for col, dt_ in types:
            got = str(df[col].dtype)
            if dt_ == "timestamp":
                check_type("pandas", table, col, dt_, got)
            elif dt_ == "bool" and got not in ("bool", "object", "boolean"):
                fail(f"pandas: {table}.{col} is {got}, docs/tables.md says bool")
        recs = df.to_dict("records")
        if rows_of(recs, columns) != all_rows:
            fail(f"pandas: {table} rows differ from the CSV")
        for flt, want in zip(filters, expected):
            c, op, v = flt
            k = kind_of(flt, types)
            value = pd.Timestamp(v) if k == "timestamp" else v
            sel = df[df[c] == value] if op == "=" else df[df[c] >= value]
            if rows_of(sel.to_dict("records"), columns) != want:
                fail(f"pandas: {table} where {c} {op} {v!r} differs from the CSV")


    guard(f"pandas: {table}", _pandas)

    def _polars():
        # polars.
        pdf = pl.read_parquet(pq_path)
        if pdf.height != n:
            fail(f"polars: {table} has {pdf.height} rows, the CSV {n}")
        for col, dt_ in types:
            check_type("polars", table, col, dt_, str(pdf.schema[col]).lower().replace("string", "str"))
        if rows_of(pdf.to_dicts(), columns) != all_rows:
            fail(f"polars: {table} rows differ from the CSV")
        for flt, want in zip(filters, expected):
            c, op, v = flt
            k = kind_of(flt, types)
            value = parse_ts(v) if k == "timestamp" else v
            e = pl.col(c) == value if op == "=" else pl.col(c) >= value
            if rows_of(pdf.filter(e).to_dicts(), columns) != want:
                fail(f"polars: {table} where {c} {op} {v!r} differs from the CSV")


    guard(f"polars: {table}", _polars)

    def _datafusion():
        # DataFusion.
        ctx = datafusion.SessionContext()
        ctx.register_parquet("t", pq_path)
        def dfq(where=None):
            q = "select * from t" + (f" where {where}" if where else "")
            return ctx.sql(q).to_arrow_table()
        at = dfq()
        if at.num_rows != n:
            fail(f"datafusion: {table} has {at.num_rows} rows, the CSV {n}")
        for col, dt_ in types:
            check_type("datafusion", table, col, dt_, arrow_type_name(at.schema.field(col).type))
        if rows_of(at.to_pylist(), columns) != all_rows:
            fail(f"datafusion: {table} rows differ from the CSV")
        for flt, want in zip(filters, expected):
            c, op, v = flt
            k = kind_of(flt, types)
            if k == "timestamp":
                where = f"\"{c}\" {op} arrow_cast('{v}', 'Timestamp(µs, \"UTC\")')"
            else:
                where = sql_literal(flt, k)
            try:
                res = rows_of(dfq(where).to_pylist(), columns)
            except Exception as e:  # noqa: BLE001
                fail(f"datafusion: {table} where {c}: {type(e).__name__}: {e}")
                continue
            if res != want:
                fail(f"datafusion: {table} where {c} {op} {v!r}: {len(res)} rows, the CSV {len(want)}")


    guard(f"datafusion: {table}", _datafusion)

    def _jq():
        # jq on NDJSON.
        out = subprocess.run(["jq", "-c", "."], stdin=open(nd_path, "rb"), capture_output=True, check=True)
        lines = [json.loads(x) for x in out.stdout.decode().splitlines() if x]
        if len(lines) != n:
            fail(f"jq: {table} has {len(lines)} rows, the CSV {n}")
        for rec in lines:
            if list(rec.keys()) != columns:
                fail(f"jq: {table} keys {list(rec.keys())}")
                break
            for col, dt_ in types:
                v = rec[col]
                if v is None:
                    continue
                ok = {
                    "text": isinstance(v, str),
                    "timestamp": isinstance(v, str) and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", v),
                    "uint64": isinstance(v, int) and not isinstance(v, bool) and v >= 0,
                    "int64": isinstance(v, int) and not isinstance(v, bool),
                    "float64": isinstance(v, (int, float)) and not isinstance(v, bool),
                    "bool": isinstance(v, bool),
                }[dt_]
                if not ok:
                    fail(f"jq: {table}.{col} = {v!r} is not {dt_}")
        if rows_of(lines, columns) != all_rows:
            fail(f"jq: {table} rows differ from the CSV")
        for flt, want in zip(filters, expected):
            c, op, v = flt
            vj = json.dumps(v)
            prog = f"select(.{c} != null and .{c} {'==' if op == '=' else '>='} {vj})"
            out = subprocess.run(["jq", "-c", prog], stdin=open(nd_path, "rb"), capture_output=True, check=True)
            got = [json.loads(x) for x in out.stdout.decode().splitlines() if x]
            if rows_of(got, columns) != want:
                fail(f"jq: {table} {prog}: {len(got)} rows, the CSV {len(want)}")

    guard(f"jq: {table}", _jq)

    return ref


def check_joins(base, refs):
    """findings ⋈ exchanges on flow and frame range; events ⋈ streams on stream_id."""
    f, x = refs["findings"], refs["exchanges"]
    want_fx = sorted(
        (r["finding"], e["flow_id"], e["trans_depth"])
        for r in f
        for e in x
        if e["flow_id"] == r["flow_id"]
        and e["frame_first"] != ""
        and int(e["frame_first"]) <= int(r["frame"]) <= int(e["frame_last"] or e["frame_first"])
    )
    ev, st = refs["events"], refs["streams"]
    want_es = sorted(
        (e["flow_id"], e["trans_depth"], e["offset"], s["stream_id"], s["kind"])
        for e in ev
        for s in st
        if e["stream_id"] != "" and e["stream_id"] == s["stream_id"]
    )
    if not want_fx:
        fail("findings ⋈ exchanges: no rows in the CSV to compare (pick a capture with findings)")
    if not want_es:
        fail("events ⋈ streams: no rows in the CSV to compare")
    sql_fx = (
        "select f.finding, e.flow_id, e.trans_depth from {f} f join {x} e "
        "on f.flow_id = e.flow_id and f.frame between e.frame_first and coalesce(e.frame_last, e.frame_first)"
    )
    sql_es = (
        "select e.flow_id, e.trans_depth, e.\"offset\", s.stream_id, s.kind from {e} e "
        "join {s} s on e.stream_id = s.stream_id"
    )

    def compare(label, got_fx, got_es):
        got_fx = sorted(tuple(norm(v) for v in r) for r in got_fx)
        got_es = sorted(tuple(norm(v) for v in r) for r in got_es)
        if got_fx != [tuple(norm(v) for v in r) for r in want_fx]:
            fail(f"{label}: findings ⋈ exchanges gives {len(got_fx)} rows, the CSV {len(want_fx)}")
        if got_es != [tuple(norm(v) for v in r) for r in want_es]:
            fail(f"{label}: events ⋈ streams gives {len(got_es)} rows, the CSV {len(want_es)}")

    con = duckdb.connect()
    for label, fn in (
        ("duckdb parquet", lambda t: f"read_parquet('{base}/parquet/{t}.parquet')"),
        ("duckdb read_csv", lambda t: f"read_csv('{base}/csv/{t}.csv')"),
        ("duckdb read_json", lambda t: f"read_json('{base}/ndjson/{t}.ndjson')"),
    ):
        guard(label + " joins", lambda: compare(
            label,
            con.execute(sql_fx.format(f=fn("findings"), x=fn("exchanges"))).fetchall(),
            con.execute(sql_es.format(e=fn("events"), s=fn("streams"))).fetchall(),
        ))

    def _datafusion():
        ctx = datafusion.SessionContext()
        for t in ("findings", "exchanges", "events", "streams"):
            ctx.register_parquet(t, f"{base}/parquet/{t}.parquet")
        rows = lambda q: [tuple(r.values()) for r in ctx.sql(q).to_arrow_table().to_pylist()]  # noqa: E731
        compare(
            "datafusion",
            rows(sql_fx.format(f="findings", x="exchanges")),
            rows(sql_es.format(e="events", s="streams")),
        )

    def _polars():
        P = lambda t: pl.read_parquet(f"{base}/parquet/{t}.parquet")  # noqa: E731
        j = P("findings").join(P("exchanges"), on="flow_id", suffix="_x")
        last = pl.col("frame_last").fill_null(pl.col("frame_first"))
        j = j.filter((pl.col("frame") >= pl.col("frame_first")) & (pl.col("frame") <= last))
        k = P("events").join(P("streams"), on="stream_id", suffix="_s")
        compare(
            "polars",
            j.select("finding", "flow_id", "trans_depth").rows(),
            k.select("flow_id", "trans_depth", "offset", "stream_id", "kind").rows(),
        )

    def _pandas():
        D = lambda t: pd.read_parquet(f"{base}/parquet/{t}.parquet")  # noqa: E731
        j = D("findings").merge(D("exchanges"), on="flow_id", suffixes=("", "_x"))
        last = j["frame_last"].fillna(j["frame_first"])
        j = j[(j["frame"] >= j["frame_first"]) & (j["frame"] <= last)]
        k = D("events").merge(D("streams"), on="stream_id", suffixes=("", "_s"))
        compare(
            "pandas",
            j[["finding", "flow_id", "trans_depth"]].itertuples(index=False),
            k[["flow_id", "trans_depth", "offset", "stream_id", "kind"]].itertuples(index=False),
        )

    def _pyarrow():
        A = lambda t: pq.read_table(f"{base}/parquet/{t}.parquet")  # noqa: E731
        x = A("exchanges").select(["flow_id", "trans_depth", "frame_first", "frame_last"])
        j = A("findings").select(["finding", "flow_id", "frame"]).join(x, "flow_id", join_type="inner")
        j = [
            r
            for r in j.to_pylist()
            if r["frame_first"] <= r["frame"] <= (r["frame_last"] if r["frame_last"] is not None else r["frame_first"])
        ]
        k = A("events").select(["flow_id", "trans_depth", "offset", "stream_id"]).join(
            A("streams").select(["stream_id", "kind"]), "stream_id", join_type="inner"
        )
        compare(
            "pyarrow",
            [(r["finding"], r["flow_id"], r["trans_depth"]) for r in j],
            [(r["flow_id"], r["trans_depth"], r["offset"], r["stream_id"], r["kind"]) for r in k.to_pylist()],
        )

    for label, fn in (("datafusion", _datafusion), ("polars", _polars), ("pandas", _pandas), ("pyarrow", _pyarrow)):
        guard(label + " joins", fn)


def main():
    base, tables_md = sys.argv[1], sys.argv[2]
    docs = doc_types(tables_md)
    names = sorted(os.path.splitext(f)[0] for f in os.listdir(os.path.join(base, "csv")))
    if sorted(docs) != names:
        fail(f"docs/tables.md documents {sorted(docs)}, mcpcap wrote {names}")
    refs = {}
    for table in names:
        if table not in docs or table not in FILTERS:
            fail(f"{table}: not documented, or no filters chosen for it")
            continue
        refs[table] = check_table(base, table, docs[table])
    check_joins(base, refs)
    for f in failures:
        print(f)
    print(f"{base}: {len(names)} tables, {checks[0]} row sets and types compared, {len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
