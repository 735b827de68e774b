// pq_check.mjs — read one Parquet file written by ramtrace's writer
// (analysis/an_parquet.h) with two independent readers, DuckDB and
// hyparquet, and compare every value and every row group's statistics with
// what the writer was given.
//
//   node tests/js/pq_check.mjs FILE.parquet EXPECT.json
//
// EXPECT.json: {"group_rows": G, "columns": [{"name", "kind", "values"}]}
// with kind int32 | uint32 | int64 | float | double | string; int64 values
// as decimal strings, float/double as the hex of their IEEE bits (so NaN,
// infinities and -0 survive JSON), strings as the hex of their bytes.
// Prints one line; exit status 1 on the first difference.
import { readFileSync } from 'node:fs';
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { DuckDBInstance } from '@duckdb/node-api';

const [file, expectPath] = process.argv.slice(2);
const expect = JSON.parse(readFileSync(expectPath, 'utf8'));
const cols = expect.columns;
const n = cols.length ? cols[0].values.length : 0;

function fail(msg) {
  console.log(`pq_check ${file}: ${msg}`);
  process.exit(1);
}

// A read value as the expectation's text form.
const f32 = new Float32Array(1), u32 = new Uint32Array(f32.buffer);
const f64 = new Float64Array(1), u64 = new BigUint64Array(f64.buffer);
function canon(kind, v) {
  switch (kind) {
    case 'int32': case 'uint32': return Number(v);
    case 'int64': return BigInt(v).toString();
    case 'float': f32[0] = Number(v); return u32[0].toString(16).padStart(8, '0');
    case 'double': f64[0] = Number(v); return u64[0].toString(16).padStart(16, '0');
    case 'string': return Buffer.from(v, 'utf8').toString('hex');
  }
  throw new Error(kind);
}

// Whether a read value equals the expected one (any NaN matches any NaN:
// JavaScript numbers do not keep NaN payloads).
function same(kind, got, want) {
  if (kind === 'float' || kind === 'double') {
    const bits = kind === 'float' ? 8 : 16;
    const isNan = (h) => kind === 'float'
      ? ((parseInt(h, 16) >>> 23) & 0xff) === 0xff && (parseInt(h, 16) & 0x7fffff) !== 0
      : Number.isNaN(new Float64Array(new BigUint64Array([BigInt('0x' + h)]).buffer)[0]);
    if (isNan(want.padStart(bits, '0'))) return Number.isNaN(Number(got));
  }
  return canon(kind, got) === want;
}

// The expected value as a number/bigint/string for ordering.
function value(kind, want) {
  switch (kind) {
    case 'int32': case 'uint32': return want;
    case 'int64': return BigInt(want);
    case 'float': u32[0] = parseInt(want, 16); return f32[0];
    case 'double': u64[0] = BigInt('0x' + want); return f64[0];
    case 'string': return Buffer.from(want, 'hex');
  }
}
function less(kind, a, b) { return kind === 'string' ? Buffer.compare(a, b) < 0 : a < b; }

// --- hyparquet: every value, then the statistics of each row group ---
const buf = await asyncBufferFromFile(file);
const md = await parquetMetadataAsync(buf);
if (Number(md.num_rows) !== n) fail(`hyparquet: ${md.num_rows} rows, expected ${n}`);
const rows = n ? await parquetReadObjects({ file: buf, compressors, utf8: false }) : [];
if (rows.length !== n) fail(`hyparquet: read ${rows.length} rows, expected ${n}`);
for (const c of cols)
  for (let i = 0; i < n; i++) {
    let got = rows[i][c.name];
    if (c.kind === 'string' && got instanceof Uint8Array) got = Buffer.from(got).toString('utf8');
    if (c.kind === 'string' && !(typeof got === 'string')) fail(`hyparquet: ${c.name}[${i}] is not a string`);
    if (!same(c.kind, got, c.values[i])) fail(`hyparquet: ${c.name}[${i}] = ${got}, expected ${c.values[i]}`);
  }
const G = expect.group_rows;
let start = 0;
md.row_groups.forEach((rg, g) => {
  const m = Number(rg.num_rows);
  if (m !== Math.min(G, n - start)) fail(`row group ${g} has ${m} rows, expected ${Math.min(G, n - start)}`);
  rg.columns.forEach((cc, j) => {
    const c = cols[j], st = cc.meta_data.statistics || {};
    let lo, hi;
    for (let i = start; i < start + m; i++) {
      const v = value(c.kind, c.values[i]);
      if (typeof v === 'number' && Number.isNaN(v)) continue;
      if (lo === undefined || less(c.kind, v, lo)) lo = v;
      if (hi === undefined || less(c.kind, hi, v)) hi = v;
    }
    if (Number(st.null_count) !== 0) fail(`row group ${g} ${c.name}: null_count ${st.null_count}`);
    if (lo === undefined) {
      if (st.min_value !== undefined || st.max_value !== undefined) fail(`row group ${g} ${c.name}: a range over NaN only`);
      return;
    }
    const norm = (v) => c.kind === 'string' ? Buffer.from(typeof v === 'string' ? v : v).toString('hex')
      : c.kind === 'int64' ? BigInt(v) : Number(v);
    const eq = (a, b) => (typeof a === 'number' && a === 0 && b === 0) ? true : a === b;
    if (!eq(norm(st.min_value), norm(lo)) || !eq(norm(st.max_value), norm(hi)))
      fail(`row group ${g} ${c.name}: statistics [${st.min_value}, ${st.max_value}], values [${lo}, ${hi}]`);
    // a zero minimum is -0, a zero maximum +0 (the format's rule)
    if ((c.kind === 'float' || c.kind === 'double') && lo === 0 && !Object.is(Number(st.min_value), -0))
      fail(`row group ${g} ${c.name}: zero minimum not written as -0`);
    if ((c.kind === 'float' || c.kind === 'double') && hi === 0 && !Object.is(Number(st.max_value), 0))
      fail(`row group ${g} ${c.name}: zero maximum not written as +0`);
  });
  start += m;
});

// --- DuckDB: every value, and a filtered count that row-group skipping
// by the statistics must not change ---
const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
const lit = file.replaceAll("'", "''");
const res = await con.runAndReadAll(`SELECT * FROM read_parquet('${lit}')`);
const drows = res.getRows();
if (drows.length !== n) fail(`duckdb: read ${drows.length} rows, expected ${n}`);
cols.forEach((c, j) => {
  for (let i = 0; i < n; i++) {
    let got = drows[i][j];
    if (!same(c.kind, got, c.values[i])) fail(`duckdb: ${c.name}[${i}] = ${got}, expected ${c.values[i]}`);
  }
});
for (const [j, c] of cols.entries()) {
  if (!((c.kind === 'int32' || c.kind === 'uint32') && n)) continue;
  const probe = value(c.kind, c.values[Math.floor(n / 2)]);
  const want = c.values.filter((v) => v === probe).length;
  const r = await con.runAndReadAll(`SELECT count(*) FROM read_parquet('${lit}') WHERE "${c.name}" = ${probe}`);
  if (Number(r.getRows()[0][0]) !== want) fail(`duckdb: ${c.name} = ${probe} counts ${r.getRows()[0][0]}, expected ${want} (column ${j})`);
}
console.log(`pq_check ${file}: ${n} rows, ${cols.length} columns, ${md.row_groups.length} row groups equal in hyparquet and duckdb`);
