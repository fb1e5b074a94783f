#!/usr/bin/env bash
# Whole-binary benchmark: `mcpcap analyze --format parquet` on generated captures of
# several sizes, next to `tshark -r FILE -Y http -T fields -e frame.number` and `cat FILE` in the
# same run (ratios, since absolute times vary between machines). Prints a markdown table.
#
#   bash bench/run.sh                 # sizes 100M 500M 1G 2G
#   SIZES="100M" bash bench/run.sh    # a quick run
#   THREADS="1 2" ...                 # mcpcap --threads values to measure (default: 1 and all cores);
#                                     # --threads 1 runs pinned to one core (taskset), so that row is
#                                     # what one core does: reading and analysis share it
#   NO_TSHARK=1 ...                   # skip tshark (slow, and it holds about twice the file in memory)
#
# Captures are generated once into $DIR (default ~/.cache/mcpcap-bench) by `mcpcap synth`
# (deterministic from --seed). Peak RSS comes from GNU time (%M, KiB).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/mcpcap-target}
cargo build --release --quiet
BIN=$CARGO_TARGET_DIR/release/mcpcap
DIR=${DIR:-$HOME/.cache/mcpcap-bench}
SIZES=${SIZES:-"100M 500M 1G 2G"}
CORES=$(nproc)
THREADS=${THREADS:-"1 $CORES"}
mkdir -p "$DIR"
T=/usr/bin/time
one=()  # pins a command to one core where taskset exists
if command -v taskset >/dev/null; then one=(taskset -c 0); fi

measure() { # measure CMD... -> "seconds peak_kib"
  $T -f "%e %M" -o "$DIR/time.txt" "$@" >/dev/null 2>/dev/null || true
  tail -1 "$DIR/time.txt"
}

echo "| capture | frames | events | tool | cores | seconds | MB/s | frames/s | events/s | peak RSS MB | vs tshark | × cat's time |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for s in $SIZES; do
  f=$DIR/synth_$s.pcap
  if [ ! -s "$f" ] || [ ! -s "$f.summary" ]; then
    "$BIN" synth --bytes "$s" --seed 1 -o "$f" 2>"$f.summary"
  fi
  bytes=$(stat -c %s "$f")
  frames=$(sed -E 's/.* ([0-9]+) frames.*/\1/' "$f.summary")
  events=$(sed -E 's/.* ([0-9]+) events.*/\1/' "$f.summary")
  mb=$(awk -v b="$bytes" 'BEGIN{printf "%.0f", b/1048576}')
  cat "$f" >/dev/null  # warm the page cache for every tool alike
  read -r cat_s _ < <(measure cat "$f")
  tshark_s=""
  if [ -z "${NO_TSHARK:-}" ] && command -v tshark >/dev/null; then
    read -r tshark_s tshark_kib < <(measure "${one[@]}" tshark -r "$f" -Y http -T fields -e frame.number)
    awk -v s="$tshark_s" -v mb="$mb" -v fr="$frames" -v ev="$events" -v k="$tshark_kib" -v c="$cat_s" -v n="$s" \
      'BEGIN{printf "| %s | %d | %d | tshark | 1 | %.2f | %.0f | %.0f | %.0f | %.0f | 1.0 | %s |\n", n, fr, ev, s, mb/s, fr/s, ev/s, k/1024, (c>0? sprintf("%.1f", s/c) : "-")}'
  fi
  for t in $THREADS; do
    rm -rf "$DIR/out"
    pin=()
    if [ "$t" = 1 ]; then pin=("${one[@]}"); fi
    read -r sec kib < <(measure "${pin[@]}" "$BIN" analyze --format parquet --out "$DIR/out" --fail-on never --quiet --threads "$t" "$f")
    awk -v s="$sec" -v mb="$mb" -v fr="$frames" -v ev="$events" -v k="$kib" -v ts="$tshark_s" -v c="$cat_s" -v n="$s" -v t="$t" \
      'BEGIN{printf "| %s | %d | %d | mcpcap | %s | %.2f | %.0f | %.0f | %.0f | %.0f | %s | %s |\n", n, fr, ev, t, s, mb/s, fr/s, ev/s, k/1024, (ts!=""? sprintf("%.1fx faster", ts/s) : "-"), (c>0? sprintf("%.1f", s/c) : "-")}'
  done
  # (GNU time's 0.01 s resolution: a cat faster than that has no rate.)
  awk -v c="$cat_s" -v mb="$mb" -v n="$s" 'BEGIN{printf "| %s | | | cat | 1 | %.2f | %s | | | | | 1.0 |\n", n, c, (c>0? sprintf("%.0f", mb/c) : "-")}'
done
