#!/bin/bash
# rows_identity.sh OLD_BIN NEW_BIN [DIR] — compare every row-printing
# command's output between two ramtrace binaries on the same traces.
#
# CSV (stdout and the files -o / --mrc-out write, and export's binary
# oracleGeneral file) must be byte-identical; JSON must be identical as
# parsed JSON (python3); table output is only listed (its alignment may
# differ).  Used when the printers moved to the row writer (core/base/rn_rows.h):
# build the base revision's binary (git archive BASE | tar -x -C DIR; make),
# then run this from the repository root with both binaries.
set -u
OLD=$1; NEW=$2; D=${3:-$(mktemp -d)}
mkdir -p "$D/data"
"$OLD" init --config samples/configs/tiny.cfg --seed 3 -o "$D/data/tiny.bin" >/dev/null 2>&1 || exit 1
# commas, quotes, a newline, a tab, a backslash and a control byte in the pieces
printf 'He said, "Go, now!"\n\tAnd\\ they\001 went; 1,2,3 "quoted" text. In the beginning God created the heaven and the earth.' > "$D/data/in.txt"
rm -f "$D/data/t.db"
"$OLD" trace "$D/data/tiny.bin" "$D/data/in.txt" -o "$D/data/t.db" --name 'a,"b"' >/dev/null 2>&1 || exit 1
"$OLD" trace "$D/data/tiny.bin" "$D/data/in.txt" -o "$D/data/t.db" --layers 1 >/dev/null 2>&1 || exit 1

capture() {  # capture BIN OUT
    local B=$1 O=$2 T=$D/data/t.db i=0
    rm -rf "$O"; mkdir -p "$O"
    run() { i=$((i+1)); local n; n=$(printf '%02d' $i); echo "$*" > "$O/$n.cmd"; "$B" "$@" > "$O/$n.out" 2>/dev/null; echo $? > "$O/$n.rc"; }
    for f in table csv json; do
        run runs $T -F $f
        run sql $T "SELECT pos, token_id, piece, 1.5/3 AS r, NULL AS n, x'00ff' AS b, 0.1 AS p, 1e300*1e300 AS inf FROM tokens WHERE run_id = 1 ORDER BY pos" -F $f
        run sql $T "SELECT * FROM events WHERE run_id = 1 LIMIT 1200; SELECT count(*) AS n FROM reads" -F $f
        run sql $T "SELECT run_id, layer, head, pos, op, w0, w1, s0 FROM event_groups LIMIT 50" -F $f
        run stats $T -f $f
        run stats $T -f $f --layer 1 --window 8
        run stats $T -f $f --run 1
        run simulate $T -f $f --policy lru,opt,s3fifo --capacity 2,8,64 --mrc
        run simulate $T -f $f --sweep --scope head --ops r
        run simulate $T -f $f --run 1 --capacity 3 --scope layer --mrc
        run attribute $T -f $f --layer 0 --head 1 --pos 40 --run 1
        run attribute $T -f $f --layer 1 --head 0 --pos 50 --top 0
        run attribute $T -f $f --layer 0 --head 0 --pos 30 --detail --run 1
    done
    run attribute $T --layer 0 --head 2 --matrix --run 1
    run attribute $T --layer 1 --head 3 --matrix -o "$O/matrix.csv"
    run simulate $T --policy lru --capacity 4 --mrc-out "$O/mrc.csv"
    run export $T -f csv -o "$O/export.csv"
    run export $T -f csv --ops w --layer 1 -o "$O/export2.csv"
    run export $T -o "$O/export.og"
}
capture "$OLD" "$D/old"
capture "$NEW" "$D/new"

bad=0 same=0 tables=0
for c in "$D"/old/*.cmd; do
    n=$(basename "$c" .cmd)
    if ! cmp -s "$D/old/$n.rc" "$D/new/$n.rc"; then echo "exit status differs: $(head -1 "$c")"; bad=1; continue; fi
    kind=table
    if grep -q -- '--detail\|--matrix\|-[fF] csv' "$c"; then kind=csv    # --detail/--matrix: always CSV
    elif grep -q -- '-[fF] json' "$c"; then kind=json; fi
    if [ $kind = table ]; then
        cmp -s "$D/old/$n.out" "$D/new/$n.out" || { tables=$((tables+1)); echo "table differs (allowed): $(head -1 "$c")"; }
        continue
    fi
    if [ $kind = json ]; then
        python3 - "$D/old/$n.out" "$D/new/$n.out" <<'PY' || { echo "JSON differs: $(head -1 "$c")"; bad=1; continue; }
import json, sys
def docs(t):
    d, i, out = json.JSONDecoder(), 0, []
    while True:
        while i < len(t) and t[i].isspace(): i += 1
        if i >= len(t): return out
        o, i = d.raw_decode(t, i); out.append(o)
a, b = (docs(open(p).read()) for p in sys.argv[1:3])
sys.exit(0 if a == b and json.dumps(a) == json.dumps(b) else 1)
PY
    else
        cmp -s "$D/old/$n.out" "$D/new/$n.out" || { echo "CSV differs: $(head -1 "$c")"; bad=1; continue; }
    fi
    same=$((same+1))
done
for f in matrix.csv mrc.csv export.csv export2.csv export.og; do
    cmp -s "$D/old/$f" "$D/new/$f" && same=$((same+1)) || { echo "file differs: $f"; bad=1; }
done
echo "rows_identity: $same outputs identical (CSV bytes, JSON parsed), $tables tables re-aligned$([ $bad = 1 ] && echo '; FAILED')"
exit $bad
